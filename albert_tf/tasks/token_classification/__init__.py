"""Token classification (named-entity recognition, tagging): `AlbertTokenClassifier`, a label per position,
its head in the registry and its serving signatures."""

from albert_tf.tasks.token_classification import head  # noqa: F401 (registers the token classifier head)
