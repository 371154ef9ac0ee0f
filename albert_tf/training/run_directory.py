"""A training run's directory: what lets a rerun resume, and what records its evaluations.

- `albert_config.json` guards a resume against another config;
- `model.ckpt-<step>` checkpoints hold the whole run state (on multi-worker runs every worker saves, only the
  chief's copy stays), and TensorFlow's `checkpoint` file names the latest and those kept; a rerun resumes from
  the latest, or from the newest complete one when the latest is missing or damaged;
- `eval_results.txt` holds the last evaluation, and `model.ckpt-best` with `best_checkpoint.json` the best
  model so far by a metric.
"""

import contextlib
import json
import os
import re
import shutil
import sys
from typing import Callable, Dict, List, Optional, Sequence, Set

import tensorflow as tf

from google.protobuf import text_format
from tensorflow.python.training import checkpoint_state_pb2  # the `checkpoint` file's message; tf.train has none

from albert_tf.errors import DataError, InputFileError, OptionError, TrainingError
from albert_tf.files import check_destination
from albert_tf.modeling import checkpoints as checkpoint_lib
from albert_tf.modeling.config import CONFIG_FILE, AlbertConfig
from albert_tf.training import distribution

BEST_CHECKPOINT = "model.ckpt-best"
BEST_CHECKPOINT_INFO = "best_checkpoint.json"
EVAL_RESULTS = "eval_results.txt"
STATE_FILE = "checkpoint"  # TensorFlow's: the latest checkpoint of the directory, and those kept
_RUN_CHECKPOINT_INDEX = re.compile(rf"{re.escape(checkpoint_lib.CHECKPOINT_NAME)}-\d+\.index")


def format_metric(name: str, value) -> str:
  return f"{name} {value:.4f}" if isinstance(value, float) else f"{name} {value}"


def check_run_directory(output_dir: str, config: AlbertConfig):
  """An output_dir that cannot be a folder, written with another albert_config.json, or whose `checkpoint` file
  cannot be read, is refused before anything runs."""
  if os.path.exists(output_dir) and not os.path.isdir(output_dir):
    raise OptionError(f"--output_dir {output_dir} is a file, not a folder.")
  check_destination(output_dir, "--output_dir")
  _checkpoints_named(output_dir)
  existing = os.path.join(output_dir, CONFIG_FILE)
  if os.path.exists(existing):
    previous = AlbertConfig.from_json_file(existing).to_dict()
    current = config.to_dict()
    changed = sorted(key for key in set(previous) | set(current) if previous.get(key) != current.get(key))
    if changed:
      details = ", ".join(f"{key}: {previous.get(key)!r} there vs {current.get(key)!r} now" for key in changed)
      raise TrainingError(f"--output_dir {output_dir} holds a run of another config ({details}). Use a new "
                          "--output_dir, or the same --albert_config_file to resume.")


def write_config(output_dir: str, config: AlbertConfig):
  """Writes the run's albert_config.json (once; `check_run_directory` guards it afterwards)."""
  os.makedirs(output_dir, exist_ok=True)
  path = os.path.join(output_dir, CONFIG_FILE)
  if not os.path.exists(path):
    config.to_json_file(path)


def checkpoint_dir(strategy: tf.distribute.Strategy, output_dir: str) -> str:
  """Where this process writes checkpoints: every multi-worker process must save; only the chief's copy is kept."""
  if distribution.is_chief(strategy):
    return output_dir
  resolver = strategy.cluster_resolver
  return os.path.join(output_dir, f".worker_{resolver.task_type}_{resolver.task_id}")


def _checkpoints_named(output_dir: str) -> List[str]:
  """The checkpoints the directory's `checkpoint` file names, its latest first (none without the file).

  Raises:
    TrainingError: the file cannot be read (empty or garbage), which TensorFlow's CheckpointManager does not bear.
  """
  path = os.path.join(output_dir, STATE_FILE)
  if not os.path.exists(path):
    return []
  state = checkpoint_state_pb2.CheckpointState()
  try:
    with open(path, encoding="utf-8") as reader:
      text_format.Merge(reader.read(), state)  # as TensorFlow reads it
  except (UnicodeDecodeError, text_format.ParseError):
    state.Clear()
  if not state.model_checkpoint_path:
    raise TrainingError(f"{path} cannot be read: it is not TensorFlow's list of the run's checkpoints. Remove it to "
                        f"resume from the newest complete {checkpoint_lib.CHECKPOINT_NAME}-<step> in {output_dir}.")
  # Relative paths are relative to the directory, as TensorFlow takes them.
  return [named if os.path.isabs(named) else os.path.join(output_dir, named)
          for named in (state.model_checkpoint_path, *state.all_model_checkpoint_paths)]


def _run_checkpoints(output_dir: str) -> List[str]:
  """The run's checkpoints in the order to resume from them, complete or not: the one the `checkpoint` file names
  latest, then the others it lists and every `model.ckpt-<step>` whose index is there, newest first."""
  listed = _checkpoints_named(output_dir)
  present = [os.path.join(output_dir, name[:-len(".index")]) for name in
             (os.listdir(output_dir) if os.path.isdir(output_dir) else []) if _RUN_CHECKPOINT_INDEX.fullmatch(name)]
  older = set(listed[1:] + present) - set(listed[:1])
  return listed[:1] + sorted(older, key=lambda prefix: checkpoint_lib.checkpoint_number(prefix + ".index"),
                             reverse=True)


def has_checkpoints(output_dir: str) -> bool:
  """Whether `output_dir` holds a run to resume: checkpoints named by its `checkpoint` file or present, complete
  or not (`restore_latest` tells)."""
  return bool(_run_checkpoints(output_dir))


def restore_latest(output_dir: str, model, checkpoint: tf.train.Checkpoint) -> Optional[str]:
  """Restores the run state of the latest complete checkpoint in `output_dir`; returns its prefix (None if the
  directory holds no checkpoint).

  The latest is the one the `checkpoint` file names (without one, the highest-numbered); when its files are
  missing, truncated or corrupt, the newest complete checkpoint of the directory is restored instead, and one line
  on stderr names both. The model is matched first, so a config that does not fit is reported whole; then the rest
  of the state (optimizer, step, input position) loads.

  Raises:
    TrainingError: the directory has checkpoints but none complete, or a `checkpoint` file that cannot be read.
    CheckpointMismatchError: the checkpoint does not fit the model.
  """
  problems = []
  for prefix in _run_checkpoints(output_dir):
    try:
      checkpoint_lib.restore_checkpoint(model, prefix)
      with checkpoint_lib.reading_checkpoint(prefix):
        checkpoint.read(prefix).assert_existing_objects_matched()
    except (InputFileError, DataError) as problem:  # missing, truncated or corrupt: try the one before
      problems.append(problem)
      continue
    if problems:
      print(f"{problems[0]} Resuming from {prefix} instead, the newest complete checkpoint in {output_dir}.",
            file=sys.stderr)
    return prefix
  if not problems:
    return None
  older = f" The {len(problems) - 1} older one(s) cannot be read either." if problems[1:] else ""
  raise TrainingError(f"--output_dir {output_dir} holds no complete checkpoint to resume from: {problems[0]}{older} "
                      f"Remove its checkpoint files and its '{STATE_FILE}' file to start again from step 0, or use a "
                      "new --output_dir.")


def save_run_checkpoint(manager: tf.train.CheckpointManager, step: int, is_chief: bool) -> str:
  """Saves the run state at `step`; returns its prefix. Other workers save too, as TensorFlow requires, and their
  copy is removed."""
  path = manager.save(checkpoint_number=step)
  if is_chief:
    print(f"Saved {path}", file=sys.stderr, flush=True)
  else:
    shutil.rmtree(manager.directory, ignore_errors=True)
  return path


def _paths_under(directory: str) -> Set[str]:
  return {os.path.join(root, name) for root, folders, files in os.walk(directory) for name in folders + files}


@contextlib.contextmanager
def removed_on_failure_before_checkpoint(output_dir: str, checkpoint_written: Callable[[], bool]):
  """Inside the block, a failure (an error, Ctrl-C) while `checkpoint_written()` is false removes what the block
  created in `output_dir`: the folder, if it created it, else the files and folders it added (files it changed
  stay). A run that stops before its first checkpoint leaves nothing a rerun would resume from or refuse."""
  created = not os.path.isdir(output_dir)
  before = set() if created else _paths_under(output_dir)
  try:
    yield
  except BaseException:
    if not checkpoint_written():
      if created:
        shutil.rmtree(output_dir, ignore_errors=True)
      else:
        for path in sorted(_paths_under(output_dir) - before, reverse=True):  # a folder's files before it
          if os.path.isdir(path):
            shutil.rmtree(path, ignore_errors=True)
          else:
            with contextlib.suppress(OSError):  # the run's own error is the one to report
              os.remove(path)
    raise


def write_eval_results(output_dir: str, metrics: Dict[str, float], summary_names: Sequence[str]):
  """Writes `eval_results.txt` (every metric, `name = value`), TensorBoard scalars under `eval/`, a line on stderr."""
  os.makedirs(output_dir, exist_ok=True)
  with open(os.path.join(output_dir, EVAL_RESULTS), "w", encoding="utf-8") as writer:
    for key in sorted(metrics):
      writer.write(f"{key} = {metrics[key]}\n")
  writer = tf.summary.create_file_writer(os.path.join(output_dir, "eval"))
  with writer.as_default(step=metrics["global_step"]):
    for name in summary_names:
      tf.summary.scalar(name, metrics[name])
  writer.close()
  print("eval: " + ", ".join(format_metric(key, metrics[key]) for key in sorted(metrics)), file=sys.stderr,
        flush=True)


def last_evaluated_step(output_dir: str) -> Optional[int]:
  """The `global_step` of `eval_results.txt`: the last checkpoint scored (None before any evaluation)."""
  path = os.path.join(output_dir, EVAL_RESULTS)
  if not os.path.exists(path):
    return None
  with open(path, encoding="utf-8") as reader:
    for line in reader:
      name, _, value = line.partition(" = ")
      if name == "global_step":
        return int(value)
  return None


def awaits_evaluation(output_dir: str, restored_from: Optional[str], step: int) -> bool:
  """Whether a resumed run's checkpoint was written but never scored (the run stopped in between)."""
  return bool(restored_from) and last_evaluated_step(output_dir) != step


def read_best_info(output_dir: str) -> Optional[Dict[str, float]]:
  """`best_checkpoint.json`: the step and metrics of `model.ckpt-best` (None before one is kept)."""
  info_file = os.path.join(output_dir, BEST_CHECKPOINT_INFO)
  if not os.path.exists(info_file):
    return None
  with open(info_file, encoding="utf-8") as reader:
    return json.load(reader)


def keep_if_best(output_dir: str, model, metrics: Dict[str, float], metric: str, higher_is_better: bool = True) -> bool:
  """Writes the model to `model.ckpt-best` when `metrics[metric]` beats the best so far; returns whether it did.

  Model weights only, as Google's `model.ckpt-best`: what export and fine-tuning read. The best so far
  is in `best_checkpoint.json` (its step and every metric of its evaluation: SQuAD v2's export reads its
  no-answer threshold there); a tie keeps the earlier checkpoint.
  """
  best = read_best_info(output_dir)
  if best is not None:
    if (metrics[metric] <= best[metric]) if higher_is_better else (metrics[metric] >= best[metric]):
      return False
  tf.train.Checkpoint(**{checkpoint_lib.MODEL_KEY: model}).write(os.path.join(output_dir, BEST_CHECKPOINT))
  with open(os.path.join(output_dir, BEST_CHECKPOINT_INFO), "w", encoding="utf-8") as writer:
    json.dump({name: value for name, value in metrics.items() if isinstance(value, (int, float))}, writer)
  return True

