"""Sentence embeddings: Sentence-BERT's STS regression and cross-lingual distillation train an
`AlbertSentenceEncoder` (`model`, its head in the registry in `head`), its `embedders` embed texts with any
sentence encoder (a SavedModel, a checkpoint, a Hugging Face or sentence-transformers folder), and
`sts_evaluation` scores one on an STS set."""

from albert_tf.tasks.similarity import head  # noqa: F401 (registers the sentence embedding head)
