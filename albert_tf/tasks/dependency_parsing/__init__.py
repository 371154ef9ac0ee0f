"""Dependency parsing: KLUE-DP's and CoNLL-U files, Dozat and Manning's biaffine parser on ALBERT
(`AlbertDependencyParser`), its objective, KLUE's scores and serving."""

from albert_tf.tasks.dependency_parsing import head  # noqa: F401 (registers the dependency parser head)
