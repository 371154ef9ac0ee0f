"""The training machinery that pretraining and fine-tuning share.

- `replica_train_step`: one step on `tf.distribute` whose loss is a share of the *global*-batch loss;
  gradients are summed across replicas, then clipped to global norm 1.0 (Google's clip), then applied.
- `host_loop` and `run_training`: many steps inside one `tf.function` (the TPU host loop), ending at
  every checkpoint and progress line, with a readable line per loop (step, losses, accuracy, learning
  rate, examples/s, ETA), TensorBoard scalars, and a stop with a clear error on a non-finite loss.
- The run directory: its `albert_config.json` guards a resume against another config, and
  `eval_results.txt` with `model.ckpt-best` record the evaluations.
"""

import dataclasses
import json
import os
import shutil
import sys
import time
from typing import Callable, Dict, Optional, Sequence

import numpy as np
import tensorflow as tf
import tf_keras

from albert_tf import checkpoint as checkpoint_lib
from albert_tf import distribution
from albert_tf import optimization
from albert_tf.config import AlbertConfig

MIXED_PRECISION = {"float32": "float32", "bfloat16": "mixed_bfloat16", "float16": "mixed_float16"}
CONFIG_FILE = "albert_config.json"
CHECKPOINT_NAME = "model.ckpt"
BEST_CHECKPOINT = "model.ckpt-best"
BEST_CHECKPOINT_INFO = "best_checkpoint.json"
EVAL_RESULTS = "eval_results.txt"


class TrainingError(RuntimeError):
  """Training cannot go on (non-finite loss, a run directory that does not fit): nothing more is written."""


def set_mixed_precision(mixed_precision: str):
  """Sets the global Keras policy of `--mixed_precision` (float32, bfloat16 or float16)."""
  if mixed_precision not in MIXED_PRECISION:
    raise ValueError(f"--mixed_precision must be one of {', '.join(MIXED_PRECISION)}, not {mixed_precision!r}.")
  tf_keras.mixed_precision.set_global_policy(MIXED_PRECISION[mixed_precision])


def create_optimizer(model, mixed_precision: str, init_lr: float, num_train_steps: int, num_warmup_steps: int,
                     optimizer_type: str, poly_power: float = 1.0, start_warmup_step: int = 0):
  """Google's optimizer (`optimization.create_optimizer`) for a built model, in the strategy's scope.

  With float16 it is wrapped for dynamic loss scaling. Its slots are created here, not in the first
  step: a train loop whose first call creates variables is traced twice.
  """
  optimizer = optimization.create_optimizer(init_lr, num_train_steps, num_warmup_steps, optimizer_type, poly_power,
                                            start_warmup_step)
  if mixed_precision == "float16":
    optimizer = tf_keras.mixed_precision.LossScaleOptimizer(optimizer)
  optimizer._create_all_weights(model.trainable_variables)  # pylint: disable=protected-access
  return optimizer


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


def replica_train_step(model, optimizer, replica_loss: Callable, loss_scaling: bool, jit_compile: bool = False):
  """The per-replica training step: forward, loss, backward, all-reduce, clip to global norm 1.0, update.

  Args:
    model: the built model (called once), whose trainable variables are updated.
    optimizer: its optimizer (a `LossScaleOptimizer` when `loss_scaling`).
    replica_loss: batch -> (loss, sums). `loss` is this replica's share of the global-batch loss (its sum
      over the replicas is the loss of the whole batch); `sums` is a float32 vector of statistics to report.
    loss_scaling: scale the loss for float16.
    jit_compile: compile the whole step with XLA, as on a TPU.

  Returns:
    A function of one per-replica batch that returns that replica's `sums`; run it with `strategy.run`.
  """

  def step(batch):
    context = tf.distribute.get_replica_context()
    variables = model.trainable_variables
    with tf.GradientTape() as tape:
      loss, sums = replica_loss(batch)
      scaled_loss = optimizer.get_scaled_loss(loss) if loss_scaling else loss
    gradients = tape.gradient(scaled_loss, variables)
    if loss_scaling:
      gradients = optimizer.get_unscaled_gradients(gradients)
    gradients = [tf.convert_to_tensor(g) for g in gradients]  # embedding slices → dense, for all-reduce/XLA
    gradients = context.all_reduce(tf.distribute.ReduceOp.SUM, gradients)
    # Google clipped each TPU shard's gradient before the cross-shard sum; this clips the true global one.
    gradients, _ = tf.clip_by_global_norm(gradients, 1.0)
    optimizer.apply_gradients(zip(gradients, variables), experimental_aggregate_gradients=False)
    return sums

  return tf.function(step, jit_compile=True) if jit_compile else step


def host_loop(strategy: tf.distribute.Strategy, step_fn, num_sums: int, after_step: Callable[[], None]):
  """`loop(iterator, num_steps)`: runs `step_fn` on every replica `num_steps` times in one `tf.function`.

  `after_step` runs inside the function after each step (counter updates). Returns the sums over the
  steps and the global batch.
  """

  @tf.function
  def loop(iterator, num_steps):
    totals = tf.zeros([num_sums], tf.float32)
    for _ in tf.range(num_steps):
      per_replica = strategy.run(step_fn, args=(next(iterator),))
      totals += strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=None)
      after_step()
    return totals

  return loop


@dataclasses.dataclass(frozen=True)
class LoopSchedule:
  """When a training run stops its host loops: to log, to checkpoint, at the end."""

  num_train_steps: int
  iterations_per_loop: int
  save_checkpoints_steps: int
  log_steps: Optional[int] = None  # default: every host loop

  def steps_to_next_stop(self, step: int) -> int:
    log_steps = self.log_steps or self.iterations_per_loop
    return min(self.iterations_per_loop, self.num_train_steps - step,
               self.save_checkpoints_steps - step % self.save_checkpoints_steps, log_steps - step % log_steps)

  def is_checkpoint_step(self, step: int) -> bool:
    return step % self.save_checkpoints_steps == 0 or step == self.num_train_steps


def _format_metric(name: str, value) -> str:
  return f"{name} {value:.4f}" if isinstance(value, float) else f"{name} {value}"


def run_training(loop, iterator, step: tf.Variable, schedule: LoopSchedule, global_batch_size: int,
                 metrics_from_sums: Callable[[np.ndarray], Dict[str, float]],
                 progress_groups: Sequence[Sequence[str]], learning_rate: Callable[[int], float],
                 summary_dir: Optional[str], save: Callable[[int], None],
                 manager: tf.train.CheckpointManager) -> Dict[str, float]:
  """Runs host loops from `step` to `schedule.num_train_steps`; returns the metrics of the last loop.

  Args:
    loop: from `host_loop`.
    iterator: the distributed training input.
    step: the step variable, which `loop` advances.
    schedule: the run's steps.
    global_batch_size: examples per step.
    metrics_from_sums: the loop's summed statistics -> named metrics.
    progress_groups: metric names of the progress line, grouped between bars.
    learning_rate: step -> the optimizer's learning rate.
    summary_dir: where TensorBoard scalars go (None: no summaries, as on non-chief workers).
    save: called with the step at each checkpoint step.
    manager: the run's checkpoints; the last one is named in the error on a non-finite loss.

  Raises:
    TrainingError: the loss became non-finite; nothing is saved after the last good checkpoint.
  """
  writer = tf.summary.create_file_writer(summary_dir) if summary_dir else None
  current = int(step.numpy())
  start_time, start_step = time.time(), current
  metrics = {}
  while current < schedule.num_train_steps:
    num_steps = schedule.steps_to_next_stop(current)
    loop_start = time.time()
    totals = loop(iterator, tf.constant(num_steps)).numpy()
    current = int(step.numpy())
    metrics = metrics_from_sums(totals)
    if not all(np.isfinite(list(metrics.values()))):
      last_good = manager.latest_checkpoint or "none (no checkpoint was written yet)"
      raise TrainingError(
          f"The loss became non-finite between steps {current - num_steps} and {current} ({metrics}). Training "
          f"stopped; the last good checkpoint stays: {last_good}. Try a lower --learning_rate, more warmup "
          "steps or --mixed_precision=bfloat16.")
    metrics["learning_rate"] = float(learning_rate(current))
    metrics["examples_per_second"] = num_steps * global_batch_size / max(time.time() - loop_start, 1e-9)
    eta = (time.time() - start_time) / max(current - start_step, 1) * (schedule.num_train_steps - current)
    groups = [" ".join(_format_metric(name, metrics[name]) for name in group) for group in progress_groups]
    print(" | ".join([f"step {current}/{schedule.num_train_steps}", *groups,
                      f"lr {metrics['learning_rate']:.3e}", f"{metrics['examples_per_second']:.1f} examples/s",
                      f"ETA {time.strftime('%H:%M:%S', time.gmtime(eta))}"]), file=sys.stderr, flush=True)
    if writer:
      with writer.as_default(step=current):
        for name, value in metrics.items():
          tf.summary.scalar(name, value)
    if schedule.is_checkpoint_step(current):
      save(current)
  if writer:
    writer.close()
  return metrics


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
  print("eval: " + ", ".join(_format_metric(key, metrics[key]) for key in sorted(metrics)), file=sys.stderr,
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
  """`best_checkpoint.json`: the step and metric of `model.ckpt-best` (None before one is kept)."""
  info_file = os.path.join(output_dir, BEST_CHECKPOINT_INFO)
  if not os.path.exists(info_file):
    return None
  with open(info_file, encoding="utf-8") as reader:
    return json.load(reader)


def keep_if_best(output_dir: str, model, metrics: Dict[str, float], metric: str, higher_is_better: bool = True) -> bool:
  """Writes the model to `model.ckpt-best` when `metrics[metric]` beats the best so far; returns whether it did.

  Model weights only, as Google's `model.ckpt-best`: what export and fine-tuning read. The best so far
  is in `best_checkpoint.json` (its step and metric); a tie keeps the earlier checkpoint.
  """
  best = read_best_info(output_dir)
  if best is not None:
    if (metrics[metric] <= best[metric]) if higher_is_better else (metrics[metric] >= best[metric]):
      return False
  tf.train.Checkpoint(**{checkpoint_lib.MODEL_KEY: model}).write(os.path.join(output_dir, BEST_CHECKPOINT))
  with open(os.path.join(output_dir, BEST_CHECKPOINT_INFO), "w", encoding="utf-8") as writer:
    json.dump({"global_step": metrics["global_step"], metric: metrics[metric]}, writer)
  return True
