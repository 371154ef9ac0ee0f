"""Sentence embeddings: Sentence-BERT's STS regression and cross-lingual distillation train an
`AlbertSentenceEncoder` (shared, in `albert_tf.modeling`: it has no task head of its own), and `sts_evaluation`
scores any model on an STS set."""
