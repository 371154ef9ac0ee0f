"""albert-tf: ALBERT (A Lite BERT) in TensorFlow 2 / tf_keras.

The package is laid out by stage of the data path, each sub-package using only those before it:
`modeling` (config, layers, models, their checkpoints) → `text` (tokenizers, vocabulary training) →
`data` (pretraining records, the readers of fine-tuning files, tf.data input) → `interop` (Google's and Hugging
Face's files) → `serving` (SavedModel export) → `training` (optimizer, loop, pretraining and fine-tuning
drivers, which export at their end) → `cli` (what the commands share: their errors as one line, the shared
flags) → `tasks` (a package per task family: its files, model and head, objective, metrics, serving and
command line).

The models are importable from here: the stages' own by the list below, and every task package's fine-tuned
models by the registry of task heads, so that a new task package adds its model here without a change to this
file. They load on first use, so that `import albert_tf.data...` (the data tool and its worker processes) does
not import TensorFlow; listing them (`dir`, `__all__`, `from albert_tf import *`) loads the task packages.
"""

import importlib
import importlib.util

_PUBLIC = {
    "AlbertConfig": "albert_tf.modeling.config",
    "AlbertConfigError": "albert_tf.errors",
    "AlbertEncoder": "albert_tf.modeling.encoder",
    "AlbertPretrainer": "albert_tf.modeling.pretrainer",
}
__version__ = "0.1.0"


def _task_models():
  """The fine-tuned model classes of the registered task heads, by class name."""
  task_heads = importlib.import_module("albert_tf.modeling.task_heads")
  return {head.model_class.__name__: head.model_class for head in task_heads.registered_heads()}


def __getattr__(name):
  if name == "__all__":
    return sorted(set(_PUBLIC) | set(_task_models()))
  if name in _PUBLIC:
    return getattr(importlib.import_module(_PUBLIC[name]), name)
  # `from albert_tf import files` asks for a submodule by this route before importing it.
  if not name.startswith("_") and importlib.util.find_spec(f"{__name__}.{name}") is None:
    task_models = _task_models()
    if name in task_models:
      return task_models[name]
  raise AttributeError(f"module 'albert_tf' has no attribute {name!r}")


def __dir__():
  return sorted(set(globals()) | set(__getattr__("__all__")))
