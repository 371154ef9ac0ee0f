"""KLUE in one command (`run_klue`): the eight tasks and KorQuAD 1.0 with their recipes (`recipes`), each run with
several seeds by its own task package's tool, resumably (`benchmark`), into one table (`results`). It has no
model or head of its own."""
