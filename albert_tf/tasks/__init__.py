"""The tasks, a package per family: each holds what only it uses (reading its files, its model and head, its
objective, metrics and prediction files, its serving signatures), over the shared stages before it.

- `classification`: Google's `run_classifier` (GLUE, the Korean benchmarks, a user's TSV).
- `similarity`: sentence embeddings (Sentence-BERT STS regression, cross-lingual distillation, STS evaluation).
- `squad`: SQuAD v1.1 and v2.0 (Google's `run_squad_v1`, `run_squad_v2`).
- `race`: multiple choice (Google's `run_race`).
- `token_classification`: a tag per character or word (KLUE-NER, CoNLL-style NER, tagged words).
- `dependency_parsing`: dependency trees (KLUE-DP, CoNLL-U), a biaffine parser.
- `dialogue_state_tracking`: a dialogue's state as slot values (KLUE-WoS).
- `klue`: KLUE's eight tasks (and KorQuAD 1.0) in one job, through the packages above (`run_klue`).

A package with a task head registers it in `albert_tf.modeling.task_heads` when imported; the registry imports
every package here on its first lookup. docs/adding-a-task.md says how to add one (tests/test_adding_a_task.py
checks that this list, the page's and the README's name every package).
"""
