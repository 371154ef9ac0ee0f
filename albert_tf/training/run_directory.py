"""A training run's directory: what lets a rerun resume, and what records its evaluations.

- `albert_config.json` guards a resume against another config;
- `model.ckpt-<step>` checkpoints hold the whole run state (on multi-worker runs every worker saves, only the
  chief's copy stays), and TensorFlow's `checkpoint` file names the latest and those kept; a rerun resumes from
  the latest, or from the newest complete one when the latest is missing or damaged;
- `eval_results.txt` holds the last evaluation, and `model.ckpt-best` with `best_checkpoint.json` the best
  model so far by a metric.

The directory may be in a bucket (gs://...): its files are read and written through `albert_tf.files`, each small
one whole or not at all, and TensorFlow writes the checkpoints and the `checkpoint` file.
"""

import contextlib
import os
import re
import sys
from typing import Callable, Dict, List, Optional, Sequence

import tensorflow as tf

from google.protobuf import text_format
from tensorflow.python.training import checkpoint_state_pb2  # the `checkpoint` file's message; tf.train has none

from albert_tf import files
from albert_tf.errors import DataError, InputFileError, TrainingError
from albert_tf.modeling import checkpoints as checkpoint_lib
from albert_tf.modeling.config import CONFIG_FILE, AlbertConfig
from albert_tf.training import distribution

BEST_CHECKPOINT = "model.ckpt-best"
BEST_CHECKPOINT_INFO = "best_checkpoint.json"
EVAL_RESULTS = "eval_results.txt"
STATE_FILE = checkpoint_lib.STATE_FILE
_RUN_CHECKPOINT_INDEX = re.compile(rf"{re.escape(checkpoint_lib.CHECKPOINT_NAME)}-\d+\.index")


def format_metric(name: str, value) -> str:
  return f"{name} {value:.4f}" if isinstance(value, float) else f"{name} {value}"


def check_run_directory(output_dir: str, config: AlbertConfig):
  """An output_dir (local or in a bucket) that cannot be a folder, written with another albert_config.json, or
  whose `checkpoint` file cannot be read, is refused before anything runs."""
  files.check_output_folder(output_dir, [])  # a rerun resumes: the files a run writes may be there
  _checkpoints_named(output_dir)
  existing = os.path.join(output_dir, CONFIG_FILE)
  if files.exists(existing):
    previous = AlbertConfig.from_json_file(existing).to_dict()
    current = config.to_dict()
    changed = sorted(key for key in set(previous) | set(current) if previous.get(key) != current.get(key))
    if changed:
      details = ", ".join(f"{key}: {previous.get(key)!r} there vs {current.get(key)!r} now" for key in changed)
      raise TrainingError(f"--output_dir {output_dir} holds a run of another config ({details}). Use a new "
                          "--output_dir, or the same --albert_config_file to resume.")


def write_config(output_dir: str, config: AlbertConfig):
  """Writes the run's albert_config.json (once; `check_run_directory` guards it afterwards)."""
  files.make_folders(output_dir)
  path = os.path.join(output_dir, CONFIG_FILE)
  if not files.exists(path):
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
  if not files.exists(path):
    return []
  state = checkpoint_state_pb2.CheckpointState()
  try:
    text_format.Merge(files.read_bytes(path).decode("utf-8"), state)  # as TensorFlow reads it
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
  present = [os.path.join(output_dir, name[:-len(".index")]) for name in files.list_folder(output_dir)
             if _RUN_CHECKPOINT_INDEX.fullmatch(name)]
  older = set(listed[1:] + present) - set(listed[:1])
  return listed[:1] + sorted(older, key=lambda prefix: checkpoint_lib.checkpoint_number(prefix + ".index"),
                             reverse=True)


def has_checkpoints(output_dir: str) -> bool:
  """Whether `output_dir` holds a run to resume: checkpoints named by its `checkpoint` file or present, complete
  or not (`restore_latest` tells)."""
  return bool(_run_checkpoints(output_dir))


def checkpointed_step(output_dir: str) -> int:
  """The step of the run's newest checkpoint, where a resume starts (0 without one)."""
  prefixes = _run_checkpoints(output_dir) if files.is_folder(output_dir) else []
  return max((checkpoint_lib.checkpoint_number(prefix + ".index") for prefix in prefixes), default=0)


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
    files.remove_tree(manager.directory)
  return path


@contextlib.contextmanager
def removed_on_failure_before_checkpoint(output_dir: str, checkpoint_written: Callable[[], bool]):
  """Inside the block, a failure (an error, Ctrl-C) while `checkpoint_written()` is false removes what the block
  created in `output_dir`: the folder, if it created it, else the files and folders it added (files it changed
  stay). A run that stops before its first checkpoint leaves nothing a rerun would resume from or refuse, in a
  bucket as on disk."""
  created = not files.is_folder(output_dir)
  before = set() if created else files.paths_under(output_dir)
  try:
    yield
  except BaseException:
    if not checkpoint_written():
      # remove_tree raises nothing: the run's own error is the one to report.
      if created:
        files.remove_tree(output_dir)
      else:
        for path in sorted(files.paths_under(output_dir) - before, reverse=True):  # a folder's files before it
          files.remove_tree(path)
    raise


def write_eval_results(output_dir: str, metrics: Dict[str, float], summary_names: Sequence[str]):
  """Writes TensorBoard scalars under `eval/`, `eval_results.txt` (every metric, `name = value`), a line on stderr."""
  files.make_folders(output_dir)
  writer = tf.summary.create_file_writer(os.path.join(output_dir, "eval"))
  with writer.as_default(step=metrics["global_step"]):
    for name in summary_names:
      tf.summary.scalar(name, metrics[name])
  writer.close()
  # Last: it records that the checkpoint was scored (`awaits_evaluation`).
  files.write_atomically(os.path.join(output_dir, EVAL_RESULTS),
                         "".join(f"{key} = {metrics[key]}\n" for key in sorted(metrics)))
  print("eval: " + ", ".join(format_metric(key, metrics[key]) for key in sorted(metrics)), file=sys.stderr,
        flush=True)


def read_eval_results(output_dir: str) -> Dict[str, float]:
  """Every `name = value` of `eval_results.txt` (the last evaluation written), numbers as written; {} before any
  evaluation. Lines that are not numbers (an earlier version's text) are left out."""
  path = os.path.join(output_dir, EVAL_RESULTS)
  if not files.exists(path):
    return {}
  results = {}
  for _, line in files.read_utf8_lines(path):
    name, _, value = line.strip().partition(" = ")
    try:
      results[name] = int(value) if value.lstrip("-").isdigit() else float(value)
    except ValueError:
      continue
  return results


def last_evaluated_step(output_dir: str) -> Optional[int]:
  """The `global_step` of `eval_results.txt`: the last checkpoint scored (None before any evaluation)."""
  return read_eval_results(output_dir).get("global_step")


def awaits_evaluation(output_dir: str, restored_from: Optional[str], step: int) -> bool:
  """Whether a resumed run's checkpoint was written but never scored (the run stopped in between)."""
  return bool(restored_from) and last_evaluated_step(output_dir) != step


def read_best_info(output_dir: str) -> Optional[Dict[str, float]]:
  """`best_checkpoint.json`: the step and metrics of `model.ckpt-best` (None before one is kept)."""
  info_file = os.path.join(output_dir, BEST_CHECKPOINT_INFO)
  if not files.exists(info_file):
    return None
  return files.read_json(info_file, f"the {BEST_CHECKPOINT_INFO} of a run")


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
  files.write_json(os.path.join(output_dir, BEST_CHECKPOINT_INFO),
                   {name: value for name, value in metrics.items() if isinstance(value, (int, float))})
  return True

