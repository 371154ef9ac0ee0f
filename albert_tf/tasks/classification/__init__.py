"""Classification and regression of texts and text pairs, Google's `run_classifier`: the task catalogue (GLUE,
the Korean benchmarks), a user's TSV, `AlbertClassifier`, its objective and its serving signatures."""

from albert_tf.tasks.classification import head  # noqa: F401 (registers the classifier head)
