"""A training run's directory: what lets a rerun resume, and what records its evaluations.

- `albert_config.json` guards a resume against another config;
- `model.ckpt-<step>` checkpoints hold the whole run state (on multi-worker runs every worker saves, only the
  chief's copy stays);
- `eval_results.txt` holds the last evaluation, and `model.ckpt-best` with `best_checkpoint.json` the best
  model so far by a metric.
"""

import json
import os
import shutil
import sys
from typing import Dict, Optional, Sequence

import tensorflow as tf

from albert_tf.errors import TrainingError
from albert_tf.modeling import checkpoints as checkpoint_lib
from albert_tf.modeling.config import CONFIG_FILE, AlbertConfig
from albert_tf.training import distribution

BEST_CHECKPOINT = "model.ckpt-best"
BEST_CHECKPOINT_INFO = "best_checkpoint.json"
EVAL_RESULTS = "eval_results.txt"


def format_metric(name: str, value) -> str:
  return f"{name} {value:.4f}" if isinstance(value, float) else f"{name} {value}"


def check_run_directory(output_dir: str, config: AlbertConfig):
  """An output_dir written with another albert_config.json is refused before anything runs."""
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


def restore_latest(output_dir: str, model, checkpoint: tf.train.Checkpoint) -> Optional[str]:
  """Restores the run state of the latest checkpoint in `output_dir`; returns its prefix (None if there is none).

  The model is matched first, so a config that does not fit is reported whole; then the rest of the
  state (optimizer, step, input position) loads.
  """
  latest = tf.train.latest_checkpoint(output_dir)
  if latest:
    checkpoint_lib.restore_checkpoint(model, latest)
    checkpoint.read(latest).assert_existing_objects_matched()
  return latest


def save_run_checkpoint(manager: tf.train.CheckpointManager, step: int, is_chief: bool):
  """Saves the run state at `step`. Other workers save too, as TensorFlow requires, and their copy is removed."""
  path = manager.save(checkpoint_number=step)
  if is_chief:
    print(f"Saved {path}", file=sys.stderr, flush=True)
  else:
    shutil.rmtree(manager.directory, ignore_errors=True)


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

