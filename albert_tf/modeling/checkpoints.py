"""The package's TF2 checkpoint layout: one function writes it, one restores it with a full diff on mismatch.

Every checkpoint this package writes is a `tf.train.Checkpoint` whose root child `model` is an
`AlbertPretrainer` (with or without its sentence-order head), an `AlbertEncoder` or a fine-tuned model (a
registered task head, `task_heads`); training adds `optimizer`, `step` and the input state
beside it. `build_model_for_checkpoint` builds whichever it holds.
Variable keys are object paths such as `model/encoder/groups/0/0/query/kernel/.ATTRIBUTES/VARIABLE_VALUE`.

Restoring first matches the model against the checkpoint's object graph exactly as TensorFlow does (child
names from the root), and refuses to touch a single variable unless every one of them matches: a config
that does not fit a checkpoint is reported whole, never half-restored or silently left random.
"""

import contextlib
import os
import re
from typing import Dict, List, Optional, Sequence, Set, Tuple

import tensorflow as tf

from google.protobuf import text_format
from tensorflow.core.protobuf import trackable_object_graph_pb2
from tensorflow.python.training import checkpoint_state_pb2  # the `checkpoint` file's message; tf.train has none

from albert_tf import files
from albert_tf.errors import CheckpointMismatchError, DataError, InputFileError
from albert_tf.modeling import task_heads
from albert_tf.modeling.config import AlbertConfig
from albert_tf.modeling.encoder import AlbertEncoder
from albert_tf.modeling.pretrainer import AlbertPretrainer

MODEL_KEY = "model"
# The prefix of checkpoints in a run or conversion directory (Google's): model.ckpt-<step>, model.ckpt.
CHECKPOINT_NAME = "model.ckpt"
STATE_FILE = "checkpoint"  # TensorFlow's: the latest checkpoint of a directory, and those kept
OBJECT_GRAPH_KEY = "_CHECKPOINTABLE_OBJECT_GRAPH"
# The heads of `AlbertPretrainer` (attribute = checkpoint child names), as messages call them.
HEADS = {"masked_lm_head": "masked-LM head", "sentence_order_head": "sentence-order head"}
# Written by fine-tuning beside its checkpoints: the task and what rebuilds its model (a classifier's labels in
# head order, ...).
TASK_INFO_FILE = "task.json"
_VARIABLE_ATTRIBUTE = "VARIABLE_VALUE"
_MAX_LISTED = 25


def resolve_checkpoint_path(path: str) -> str:
  """A checkpoint prefix from a prefix or a directory (meaning the latest checkpoint in it), local or remote."""
  if files.is_folder(path):
    latest = tf.train.latest_checkpoint(path)
    if latest is None:
      indexes = sorted(files.folder_files(path, "*.index"), key=checkpoint_number)
      if not indexes:
        raise InputFileError(f"No checkpoint found in directory {path} (no 'checkpoint' file, no *.index).")
      latest = indexes[-1][:-len(".index")]
    return latest
  if not files.file_exists(path + ".index"):
    raise InputFileError(f"Checkpoint not found: {path} (expected {path}.index).")
  return path


@contextlib.contextmanager
def reading_checkpoint(prefix: str):
  """Inside the block, what TensorFlow raises on reading a damaged checkpoint (an `OpError`: an index that is not
  one, a data file missing or failing its checksum; an `IndexError`: a data file cut short) is a DataError naming
  it. Wrap reads of a checkpoint only, so that no other error is taken for damage."""
  try:
    yield
  except (tf.errors.OpError, IndexError) as error:
    reason = (error.message if isinstance(error, tf.errors.OpError) else str(error)).strip() or type(error).__name__
    raise DataError(f"Checkpoint {prefix} cannot be read: its files are truncated or corrupt "
                    f"({reason.splitlines()[0]}).") from None


class CheckpointReader:
  """A reader of the checkpoint `prefix` (`tf.train.load_checkpoint`'s), whose reads raise a DataError naming the
  checkpoint when it is damaged."""

  def __init__(self, prefix: str):
    self.prefix = prefix
    with reading_checkpoint(prefix):
      # Not load_checkpoint, which reads a prefix as a folder where a file system calls it one (TensorFlow's
      # ram://, beside the prefix's files): the prefix is resolved already.
      self._reader = tf.compat.v1.train.NewCheckpointReader(prefix)

  def get_variable_to_shape_map(self) -> Dict[str, List[int]]:
    return self._reader.get_variable_to_shape_map()

  def has_tensor(self, key: str) -> bool:
    return self._reader.has_tensor(key)

  def get_tensor(self, key: str):
    with reading_checkpoint(self.prefix):
      return self._reader.get_tensor(key)


def checkpoint_number(index_path: str) -> int:
  """The step of a `<name>-<step>.index` file (-1 for an index without one)."""
  match = re.search(r"-(\d+)\.index$", index_path)
  return int(match.group(1)) if match else -1


def save_checkpoint(model: tf.Module, prefix: str) -> str:
  """Writes the model's variables to `prefix` and marks it the latest checkpoint of its directory.

  The `checkpoint` file names it relative to the directory, as `tf.train.CheckpointManager` does, so that the
  folder can be moved or published elsewhere (`files.staged_folder`). Returns the prefix written;
  `restore_checkpoint` accepts it, or its directory.
  """
  directory = os.path.dirname(prefix) or "."
  files.make_folders(directory)
  written = tf.train.Checkpoint(**{MODEL_KEY: model}).write(prefix)
  # Written here: TensorFlow's update_checkpoint_state keeps an absolute local path absolute, and mangles a
  # relative name in a bucket (it takes gs://... for a path relative to the working directory).
  name = os.path.basename(written)
  state = checkpoint_state_pb2.CheckpointState(model_checkpoint_path=name, all_model_checkpoint_paths=[name])
  files.write_atomically(os.path.join(directory, STATE_FILE), text_format.MessageToString(state))
  return written


def _model_variables(model: tf.Module) -> Dict[str, tf.Variable]:
  """The model's variables keyed by object path, found the way a checkpoint records them."""
  found, queue, seen = {}, [("", model)], {id(model)}
  while queue:
    path, obj = queue.pop(0)
    for name, child in tf.train.TrackableView(obj).children(obj).items():
      if id(child) in seen:
        continue
      seen.add(id(child))
      child_path = f"{path}/{name}" if path else name
      if isinstance(child, tf.Variable):
        found[child_path] = child
      else:
        queue.append((child_path, child))
  return found


def _checkpoint_variables(reader, graph, model_node: int) -> Dict[str, Tuple[str, List[int]]]:
  """The checkpoint's variables under `model_node`, keyed by object path: (checkpoint key, shape)."""
  shapes = reader.get_variable_to_shape_map()
  found, queue, seen = {}, [("", model_node)], {model_node}
  while queue:
    path, node_id = queue.pop(0)
    for child in graph.nodes[node_id].children:
      if child.node_id in seen:
        continue
      seen.add(child.node_id)
      child_path = f"{path}/{child.local_name}" if path else child.local_name
      node = graph.nodes[child.node_id]
      keys = [a.checkpoint_key for a in node.attributes if a.name == _VARIABLE_ATTRIBUTE]
      if keys:
        found[child_path] = (keys[0], shapes.get(keys[0]))
      queue.append((child_path, child.node_id))
  return found


def mismatch_error(summary: str, sections: Sequence[Tuple[str, Sequence[str]]],
                   hint: Optional[str] = None) -> CheckpointMismatchError:
  """One error listing every problem: the summary, each non-empty section (its first items), the hint."""
  parts = [summary]
  for title, items in sections:
    if items:
      shown = list(items[:_MAX_LISTED])
      more = f"\n    ... and {len(items) - len(shown)} more" if len(items) > len(shown) else ""
      parts.append(f"  {title} ({len(items)}):\n" + "\n".join(f"    {item}" for item in shown) + more)
  if hint:
    parts.append(hint)
  return CheckpointMismatchError("\n".join(parts))


def _read_model_graph(prefix: str):
  """The reader, the object graph and the `model` node of one of our checkpoints."""
  reader = CheckpointReader(prefix)
  if not reader.has_tensor(OBJECT_GRAPH_KEY):
    raise CheckpointMismatchError(
        f"{prefix} is a name-based (TF1) checkpoint, not an albert-tf checkpoint. Convert a Google "
        "checkpoint with tools/convert_checkpoint.py --source_format=google.")
  graph = trackable_object_graph_pb2.TrackableObjectGraph()
  graph.ParseFromString(reader.get_tensor(OBJECT_GRAPH_KEY))
  roots = _children(graph, 0)
  if MODEL_KEY not in roots:
    raise CheckpointMismatchError(
        f"{prefix} holds no '{MODEL_KEY}' object (it has: {', '.join(sorted(roots)) or 'nothing'}); "
        "it was not written by albert-tf.")
  return reader, graph, roots[MODEL_KEY]


def _children(graph, node_id: int) -> Dict[str, int]:
  return {child.local_name: child.node_id for child in graph.nodes[node_id].children}


def _model_parts(prefix: str) -> Set[str]:
  """The child names of the checkpoint's model: `encoder` and the heads for a pretrainer."""
  _, graph, model_node = _read_model_graph(prefix)
  return set(_children(graph, model_node))


def restore_checkpoint(model: tf.Module, path: str) -> str:
  """Restores every model variable from a checkpoint of this package's layout.

  Args:
    model: a built `AlbertPretrainer` or `AlbertEncoder` (built here with dummy inputs if needed). An
      encoder restores from a pretrainer checkpoint's `model/encoder` subtree too.
    path: a checkpoint prefix, or a directory meaning its latest checkpoint.

  Returns:
    The checkpoint prefix restored.

  Raises:
    FileNotFoundError: no checkpoint at `path`.
    DataError: its files are truncated or corrupt.
    CheckpointMismatchError: listing missing, unexpected and shape-mismatched variables; nothing is
      restored in that case.
  """
  prefix = resolve_checkpoint_path(path)
  _restore(model, prefix, heads_optional=False)
  return prefix


def restore_available_parts(pretrainer: AlbertPretrainer, path: str) -> Tuple[str, List[str], List[str]]:
  """Restores a pretrainer's encoder and whichever of its heads the checkpoint holds.

  Google's `--init_checkpoint` semantics, made explicit: an encoder-only or masked-LM-only checkpoint
  initialises what it has, a head the pretrainer does not have (the sentence-order head of an MLM-only
  run) is left in the checkpoint, and the caller learns both. Inside the parts restored the match is as
  strict as `restore_checkpoint`'s.

  Args:
    pretrainer: a built `AlbertPretrainer`.
    path: a checkpoint prefix, or a directory meaning its latest checkpoint.

  Returns:
    The checkpoint prefix; the names (keys of `HEADS`) of the pretrainer's heads the checkpoint does not
    hold; and those of the checkpoint's heads the pretrainer does not have.

  Raises:
    FileNotFoundError: no checkpoint at `path`.
    DataError: its files are truncated or corrupt.
    CheckpointMismatchError: as `restore_checkpoint`, for the parts the checkpoint holds.
  """
  prefix = resolve_checkpoint_path(path)
  if "encoder" not in _model_parts(prefix):  # an `AlbertEncoder` checkpoint
    _restore(pretrainer.encoder, prefix, heads_optional=False)
    return prefix, [head for head in HEADS if getattr(pretrainer, head) is not None], []
  return (prefix,) + _restore(pretrainer, prefix, heads_optional=True)


def build_model_for_checkpoint(config: AlbertConfig, path: str) -> Tuple[tf.Module, str]:
  """Builds the model a checkpoint holds and restores it.

  An `AlbertEncoder` for an encoder checkpoint, an `AlbertPretrainer` without the sentence-order head when
  only the masked-LM head is there (as converted from Hugging Face's `AlbertForMaskedLM`), the full
  `AlbertPretrainer` for both heads. A fine-tuned checkpoint gives the model of its task head (`task_heads`),
  rebuilt from the head's variables and the `task.json` beside it (a classifier's labels, else the class ids;
  SQuAD v2's beam, else Google's 5 × 5; a sentence encoder's pooling and projection).

  Args:
    config: the config the checkpoint was written with.
    path: a checkpoint prefix, or a directory meaning its latest checkpoint.

  Returns:
    The restored model and the checkpoint prefix.

  Raises:
    FileNotFoundError: no checkpoint at `path`.
    DataError: its files are truncated or corrupt.
    CheckpointMismatchError: the checkpoint does not fit `config` (see `restore_checkpoint`), or its task head
      needs a task.json that is missing.
  """
  prefix = resolve_checkpoint_path(path)
  reader, graph, model_node = _read_model_graph(prefix)
  parts = set(_children(graph, model_node))
  task_head = task_heads.head_among(parts)
  if task_head is not None:
    shapes = {path: shape for path, (_, shape) in _checkpoint_variables(reader, graph, model_node).items()
              if path.startswith(f"{task_head.attribute}/")}
    model = task_head.rebuild(config, shapes, read_task_info(prefix))
  else:
    model = model_with_heads(config, parts & set(HEADS))
  restore_checkpoint(model, prefix)
  return model, prefix


def read_task_info(prefix: str) -> Dict:
  """The task.json that fine-tuning wrote beside a checkpoint ({} when there is none)."""
  info_file = os.path.join(os.path.dirname(prefix), TASK_INFO_FILE)
  if not files.exists(info_file):
    return {}
  return files.read_json(info_file, f"the {TASK_INFO_FILE} of a checkpoint")


def write_task_info(directory: str, info: Dict) -> str:
  """Writes `info` as the task.json of the checkpoints in `directory` (what `read_task_info` reads); returns its
  path."""
  return files.write_json(os.path.join(directory, TASK_INFO_FILE), info)


def model_with_heads(config: AlbertConfig, heads: Set[str]) -> tf.Module:
  """A built model with the given heads (keys of `HEADS`): an `AlbertEncoder` for none, else a pretrainer.

  The masked-LM head comes with any head: a pretrainer without it does not exist.
  """
  if not heads:
    model = AlbertEncoder(config)
  else:
    model = AlbertPretrainer(config, with_sentence_order_head="sentence_order_head" in heads)
  model(model.dummy_inputs(), training=False)
  return model


def _restore(model: tf.Module, prefix: str, heads_optional: bool) -> Tuple[List[str], List[str]]:
  """Restores `model` all or nothing; with `heads_optional`, heads that only one side has are left alone.

  Returns:
    The model's heads (keys of `HEADS`) the checkpoint lacks, and the checkpoint's heads the model lacks.
  """
  if not model.built and hasattr(model, "dummy_inputs"):
    model(model.dummy_inputs(), training=False)
  reader, graph, model_node = _read_model_graph(prefix)
  ours = _model_variables(model)
  theirs = _checkpoint_variables(reader, graph, model_node)
  is_encoder_only = not hasattr(model, "encoder")
  if is_encoder_only and not any(p.startswith("embeddings/") for p in theirs):
    # An encoder reads the encoder part of a pretrainer checkpoint.
    encoder_node = _children(graph, model_node).get("encoder")
    if encoder_node is not None:
      model_node = encoder_node
      theirs = _checkpoint_variables(reader, graph, model_node)
  absent_heads, unused_heads = [], []
  if heads_optional:
    present = _children(graph, model_node)
    absent_heads = [head for head in HEADS if getattr(model, head, None) is not None and head not in present]
    unused_heads = [head for head in HEADS if getattr(model, head, None) is None and head in present]
    ours = {p: v for p, v in ours.items() if p.split("/")[0] not in absent_heads}
    theirs = {p: v for p, v in theirs.items() if p.split("/")[0] not in unused_heads}

  missing = sorted(p for p in ours if p not in theirs)
  unexpected = sorted(p for p in theirs if p not in ours)
  mismatched = sorted(
      f"{p}: model {ours[p].shape.as_list()} vs checkpoint {theirs[p][1]}"
      for p in ours if p in theirs and ours[p].shape.as_list() != list(theirs[p][1]))
  if missing or unexpected or mismatched:
    raise mismatch_error(
        f"Checkpoint {prefix} does not fit model '{model.name}' (was it written with another "
        "albert_config.json?). Nothing was restored.",
        [("missing from the checkpoint", missing), ("in the checkpoint but not in the model", unexpected),
         ("shape mismatches", mismatched)])

  for object_path, variable in ours.items():
    variable.assign(reader.get_tensor(theirs[object_path][0]))
  return absent_heads, unused_heads
