"""The registry of task heads: what the generic code needs to know of each fine-tuned model.

A fine-tuned model is the encoder plus one task head, held as one attribute of the model (its checkpoint child
name, e.g. a classifier's). Everything that treats fine-tuned models alike (checkpoints, weight names, Google's
and Hugging Face's formats, vocabulary resizing, SavedModel export, the fine-tuning driver) asks this registry
about the head instead of naming a task, so that a task is defined in one place: its package under
`albert_tf.tasks`, which registers its `TaskHead` when imported.

The registry finds the task packages itself (every sub-package of `albert_tf.tasks`, imported on the first
lookup), so a library user who builds or restores a fine-tuned model never has to import them first. That is
the one place where an earlier stage reaches a later one, and only by that package name: a plugin lookup, as
Keras finds registered layers by name.
"""

import dataclasses
import functools
import importlib
import pkgutil
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple

TASKS_PACKAGE = "albert_tf.tasks"


def built_model(model_class: type, config, shapes: Dict[str, List[int]], task_info: Dict):
  """`TaskHead.rebuild`'s default: the model of `model_class` with nothing but the config, built by a call on its
  `dummy_inputs` (a head whose sizes do not vary between runs)."""
  del shapes, task_info
  model = model_class(config)
  model(model.dummy_inputs(), training=False)
  return model


@dataclasses.dataclass(frozen=True)
class TaskHead:
  """One task head and what the generic code does with it.

  A task must say `attribute` and `model_class`; every other field has a default that fits a head of its own
  (no counterpart in Google's or Hugging Face's models, sizes fixed by the config).

  Attributes:
    attribute: the model's attribute holding the head, which is also its checkpoint child name.
    model_class: the fine-tuned Keras model that holds it; it has a `dummy_inputs()` method.
    description: the head as messages call it ("classifier head"); default: `attribute` in words.
    weight_names: the head layer -> its variables with their names in Google's TF1 checkpoints and Hugging
      Face's state dicts (`weight_names.WeightNames`, whose `hf` is None where transformers has no place);
      None: each variable under `attribute`/its path inside the head, with no Hugging Face name.
    rebuild: (config, the checkpoint's head variables' shapes by object path below the model, e.g.
      "<attribute>/output_weights", the run's task.json or {}) -> the built model, ready to restore; default
      `built_model` of `model_class`.
    serving_module: (model, tokenizer, packing, asset_files, task_options) -> the SavedModel's module
      (a `saved_model.AlbertServingModule`) with the task's signatures; None: the model's outputs on ids
      (`saved_model.ModelOutputsServingModule`).
    hf_config: the model -> its transformers class and settings for `config.json` (`architectures`, labels,
      ...); None when transformers has no ALBERT class for the head (export refuses it).
    hf_dropped_prefixes: encoder weights that the transformers class does not have (e.g. a pooler).
    hf_architecture: the transformers class whose folders (their config.json's `architectures`) convert into
      this head's model; None when conversion refuses such folders (their head has no place in the model).
    hf_rebuild: (config, the folder's config.json values) -> the built model, ready to fill, for a folder of
      `hf_architecture` (its labels...).
    google_scope: the TF1 scope that marks the head in one of Google's fine-tuned checkpoints, which conversion
      looks for; None when Google's checkpoints cannot tell it from another head's.
    serving_options_of_run: a checkpoint prefix -> the `task_options` its run's files record for serving (a
      SQuAD run's reading settings), or None; None when the task has none.
    run_info: the model -> what a run's task.json records of it for `rebuild` (a token classifier's labels),
      written beside a converted checkpoint, whose source has no run; None when `rebuild` needs nothing of it.
    sentence_transformers_modules: (model, max_seq_length or None) -> the sentence-transformers modules
      (`sentence_transformers_folders.SentenceTransformersHead`) that compute the model's embedding from its
      transformer, written beside its Hugging Face weights so that the folder is a sentence-transformers model
      too; None when the model computes no sentence embedding.
    onnx_refusal_signature: a signature of the head's SavedModels, by which `export_onnx` refuses them before
      converting, their `serving_default` being one that tf2onnx cannot convert; None: they convert.
  """

  attribute: str
  model_class: type
  description: str = ""
  weight_names: Optional[Callable[[Any], List[Tuple[Any, Any]]]] = None
  rebuild: Optional[Callable[[Any, Dict[str, List[int]], Dict], Any]] = None
  serving_module: Optional[Callable[..., Any]] = None
  hf_config: Optional[Callable[[Any], Dict]] = None
  hf_dropped_prefixes: Tuple[str, ...] = ()
  hf_architecture: Optional[str] = None
  hf_rebuild: Optional[Callable[[Any, Dict], Any]] = None
  google_scope: Optional[str] = None
  serving_options_of_run: Optional[Callable[[str], Any]] = None
  run_info: Optional[Callable[[Any], Dict]] = None
  sentence_transformers_modules: Optional[Callable[[Any, Optional[int]], Any]] = None
  onnx_refusal_signature: Optional[str] = None

  def __post_init__(self):
    # Frozen: the defaults that need the other fields are set once, here.
    if not self.description:
      object.__setattr__(self, "description", self.attribute.replace("_", " "))
    if self.rebuild is None:
      object.__setattr__(self, "rebuild", functools.partial(built_model, self.model_class))


_HEADS: Dict[str, TaskHead] = {}


def register(head: TaskHead) -> TaskHead:
  """Adds `head` to the registry (a task package does, on import); returns it."""
  if (head.hf_architecture is None) != (head.hf_rebuild is None):
    raise ValueError(f"{head.model_class.__name__}'s head: hf_architecture and hf_rebuild go together.")
  registered = _HEADS.setdefault(head.attribute, head)
  if registered is not head:
    raise ValueError(f"Two task heads are called {head.attribute!r}: {registered.model_class.__name__}'s and "
                     f"{head.model_class.__name__}'s.")
  return head


@functools.cache
def _find_task_packages() -> None:
  package = importlib.import_module(TASKS_PACKAGE)
  for module in pkgutil.iter_modules(package.__path__):
    if module.ispkg:
      importlib.import_module(f"{TASKS_PACKAGE}.{module.name}")


def registered_heads() -> Tuple[TaskHead, ...]:
  """Every task head, in the order their packages registered them."""
  _find_task_packages()
  return tuple(_HEADS.values())


def head_of(model) -> Optional[TaskHead]:
  """The task head `model` holds; None for a model without one (an encoder, a pretrainer)."""
  return next((head for head in registered_heads() if getattr(model, head.attribute, None) is not None), None)


def head_among(parts: Iterable[str]) -> Optional[TaskHead]:
  """The task head among a checkpoint's model parts (its child names); None when there is none."""
  parts = set(parts)
  return next((head for head in registered_heads() if head.attribute in parts), None)
