"""albert-tf: ALBERT (A Lite BERT) in TensorFlow 2 / tf_keras.

The package is laid out by stage of the data path, each sub-package using only those before it:
`modeling` (config, layers, models, their checkpoints) → `text` (tokenizers, vocabulary training) →
`data` (pretraining records, the readers of fine-tuning files, tf.data input) → `interop` (Google's and Hugging
Face's files) → `serving` (SavedModel export) → `training` (optimizer, loop, pretraining and fine-tuning
drivers, which export at their end) → `tasks` (a package per task family: its files, model and head, objective,
metrics and serving) → `cli` (what the tools share).

The models are importable from here. They load on first use, so that `import albert_tf.data...` (the data
tool and its worker processes) does not import TensorFlow.
"""

import importlib

_PUBLIC = {
    "AlbertClassifier": "albert_tf.tasks.classification.model",
    "AlbertConfig": "albert_tf.modeling.config",
    "AlbertConfigError": "albert_tf.errors",
    "AlbertDependencyParser": "albert_tf.tasks.dependency_parsing.model",
    "AlbertEncoder": "albert_tf.modeling.encoder",
    "AlbertMultipleChoice": "albert_tf.tasks.race.model",
    "AlbertPretrainer": "albert_tf.modeling.pretrainer",
    "AlbertQuestionAnswerer": "albert_tf.tasks.squad.model",
    "AlbertQuestionAnswererV2": "albert_tf.tasks.squad.model",
    "AlbertSentenceEncoder": "albert_tf.tasks.similarity.model",
    "AlbertTokenClassifier": "albert_tf.tasks.token_classification.model",
}
__all__ = sorted(_PUBLIC)
__version__ = "0.1.0"


def __getattr__(name):
  if name not in _PUBLIC:
    raise AttributeError(f"module 'albert_tf' has no attribute {name!r}")
  return getattr(importlib.import_module(_PUBLIC[name]), name)


def __dir__():
  return sorted(list(globals()) + __all__)
