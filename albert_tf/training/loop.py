"""The training machinery that pretraining and fine-tuning share.

- `run_settings`: the Keras precision policy and the random seeds of a run, restored when it ends.
- `RunState`: the model, optimizer, step and checkpoints of a run, restored from its directory.
- `replica_train_step`: one step on `tf.distribute` whose loss is a share of the *global*-batch loss;
  gradients are summed over micro-batches (gradient accumulation) and across replicas, then clipped to
  global norm 1.0 (Google's clip), then applied once.
- `Trainer`: runs an objective's steps, many inside one `tf.function` (the TPU host loop), ending at every
  checkpoint and progress line, with a readable line per loop (step, losses, accuracy, learning rate,
  examples/s, ETA), TensorBoard scalars, and a stop with a clear error on a non-finite loss. It takes the
  objective as one object (orbit's `StandardTrainer` shape), a `TrainingObjective`.
- `TrainingObjective`: what the loop (and each driver) needs of an objective, pretraining's and every
  fine-tuning one (`finetuning.FineTuningObjective` adds what the fine-tuning driver needs).
"""

import contextlib
import dataclasses
import math
import random
import sys
import time
from typing import Callable, Dict, Optional, Protocol, Sequence, Tuple

import numpy as np
import tensorflow as tf
import tf_keras
from tf_keras.src import backend as keras_backend

from albert_tf.errors import OptionError, TrainingError
from albert_tf.modeling import checkpoints as checkpoint_lib
from albert_tf.training import optimization
from albert_tf.training import run_directory

MIXED_PRECISION = {"float32": "float32", "bfloat16": "mixed_bfloat16", "float16": "mixed_float16"}


class TrainingObjective(Protocol):
  """The loss and metrics of a run, as `Trainer` (and each driver's evaluation) uses them.

  A step returns per-replica sums of statistics, not metrics: metrics are ratios of sums over the global batch
  and the steps of a host loop, so they do not depend on how the batch is split over replicas and micro-batches.
  """

  sum_names: Sequence[str]  # the statistics a step sums, in the order of `replica_loss`'s sums
  progress_groups: Sequence[Sequence[str]]  # the metrics of a progress line, group by group
  primary_metric: str  # the metric `model.ckpt-best` is chosen by (higher is better)

  def loss_normalizers(self, batch) -> tf.Tensor:
    """float32 `[N]`: what the loss divides by (masked positions, examples), from the batch's inputs alone."""

  def replica_loss(self, model) -> Callable[[Dict, tf.Tensor], Tuple[tf.Tensor, tf.Tensor]]:
    """A function of (batch, `loss_normalizers` summed over the global batch) that returns this batch's share
    of the global-batch loss (the shares of every micro-batch and replica add up to it) and its sums, float32
    `[len(sum_names)]`."""

  def metrics_from_sums(self, sums) -> Dict[str, float]:
    """The metrics, `loss` among them, of sums over steps and the global batch."""


@contextlib.contextmanager
def run_settings(mixed_precision: str, seed: int):
  """Sets the Keras policy of `--mixed_precision` and every random seed (as `tf_keras.utils.set_random_seed`)
  for what runs inside, and restores both afterwards: a bfloat16 run leaves later models float32.

  Layers take the policy when they are built, so a model built inside keeps it outside.
  """
  if mixed_precision not in MIXED_PRECISION:
    raise OptionError(f"--mixed_precision must be one of {', '.join(MIXED_PRECISION)}, not {mixed_precision!r}.")
  policy = tf_keras.mixed_precision.global_policy()
  python_state, numpy_state = random.getstate(), np.random.get_state()
  tf_seed = tf.compat.v1.get_seed(None)[0]
  keras_generator = getattr(keras_backend._SEED_GENERATOR, "generator", None)  # pylint: disable=protected-access
  tf_keras.mixed_precision.set_global_policy(MIXED_PRECISION[mixed_precision])
  tf_keras.utils.set_random_seed(seed)
  try:
    yield
  finally:
    tf_keras.mixed_precision.set_global_policy(policy)
    random.setstate(python_state)
    np.random.set_state(numpy_state)
    tf.random.set_seed(tf_seed)
    keras_backend._SEED_GENERATOR.generator = keras_generator  # pylint: disable=protected-access


@dataclasses.dataclass(frozen=True)
class OptimizerSettings:
  """The arguments of `optimization.create_optimizer` (Google's LAMB or AdamW, warmup + polynomial decay)."""

  optimizer_type: str
  learning_rate: float
  num_train_steps: int
  num_warmup_steps: int
  poly_power: float = 1.0
  start_warmup_step: int = 0


def create_optimizer(model, mixed_precision: str, settings: OptimizerSettings):
  """Google's optimizer for a built model, in the strategy's scope.

  With float16 it is wrapped for dynamic loss scaling. Its slots are created here, not in the first
  step: a train loop whose first call creates variables is traced twice.
  """
  optimizer = optimization.create_optimizer(settings.learning_rate, settings.num_train_steps,
                                            settings.num_warmup_steps, settings.optimizer_type, settings.poly_power,
                                            settings.start_warmup_step)
  if mixed_precision == "float16":
    optimizer = tf_keras.mixed_precision.LossScaleOptimizer(optimizer)
  optimizer._create_all_weights(model.trainable_variables)  # pylint: disable=protected-access
  return optimizer


class RunState:
  """A run's model, optimizer, step and checkpoints, restored from the latest checkpoint of its directory.

  Args:
    strategy: the `tf.distribute` strategy; everything is built in its scope.
    output_dir: the run directory.
    build_model: () -> an unbuilt model with `dummy_inputs()`; built under the run's policy and seed.
    mixed_precision: float32, bfloat16 or float16 (with dynamic loss scaling).
    random_seed: the seed of the initial weights.
    optimizer: the optimizer's settings.
    keep_checkpoint_max: checkpoints kept.
    extra_state: more variables the checkpoints hold (built by the caller in the strategy's scope).
  """

  def __init__(self, strategy: tf.distribute.Strategy, output_dir: str, build_model: Callable[[], tf_keras.Model],
               mixed_precision: str, random_seed: int, optimizer: OptimizerSettings, keep_checkpoint_max: int,
               extra_state: Optional[Dict[str, tf.Variable]] = None):
    self.mixed_precision = mixed_precision
    self.random_seed = random_seed
    with run_settings(mixed_precision, random_seed), strategy.scope():
      self.model = build_model()
      self.model(self.model.dummy_inputs(), training=False)
      self.optimizer = create_optimizer(self.model, mixed_precision, optimizer)
      self.step = tf.Variable(0, dtype=tf.int64, trainable=False, name="global_step")
    self.checkpoint = tf.train.Checkpoint(**{checkpoint_lib.MODEL_KEY: self.model}, optimizer=self.optimizer,
                                          step=self.step, **(extra_state or {}))
    self.manager = tf.train.CheckpointManager(
        self.checkpoint, run_directory.checkpoint_dir(strategy, output_dir), max_to_keep=keep_checkpoint_max,
        checkpoint_name=checkpoint_lib.CHECKPOINT_NAME)
    self.restored_from = run_directory.restore_latest(output_dir, self.model, self.checkpoint)
    if self.restored_from:
      print(f"Resuming from {self.restored_from} at step {self.current_step}.", file=sys.stderr)
    self.last_saved: Optional[str] = None  # by this run

  @property
  def current_step(self) -> int:
    return int(self.step.numpy())

  @property
  def latest_checkpoint(self) -> Optional[str]:
    """The run's newest complete checkpoint: the last this run saved, else the one it resumed from (the manager's
    latest may be a damaged one that the resume passed over)."""
    return self.last_saved or self.restored_from

  def save(self, step: int, is_chief: bool):
    """Saves the run state at `step` (see `run_directory.save_run_checkpoint`)."""
    self.last_saved = run_directory.save_run_checkpoint(self.manager, step, is_chief)

  @contextlib.contextmanager
  def nothing_left_unless_checkpointed(self, output_dir: str, is_chief: bool):
    """Inside the block, a failure before this run saves its first checkpoint removes what the block created in
    `output_dir` (`run_directory.removed_on_failure_before_checkpoint`); only the chief's directory, which other
    workers leave alone."""
    if not is_chief:
      yield
      return
    with run_directory.removed_on_failure_before_checkpoint(output_dir, lambda: self.last_saved is not None):
      yield

  def settings(self):
    """`run_settings` of this run, for its training."""
    return run_settings(self.mixed_precision, self.random_seed)


def micro_batch_size(global_batch_size: int, num_replicas: int, gradient_accumulation_steps: int = 1) -> int:
  """The examples of one forward pass on one replica: `--train_batch_size` (the examples of one optimizer
  step, Google's meaning) over the replicas and the micro-batches of `--gradient_accumulation_steps`.

  Raises:
    OptionError: the batch does not split evenly, with the numbers.
  """
  if gradient_accumulation_steps < 1:
    raise OptionError(f"--gradient_accumulation_steps must be at least 1, not {gradient_accumulation_steps}.")
  parts = num_replicas * gradient_accumulation_steps
  if global_batch_size <= 0 or global_batch_size % parts:
    raise OptionError(
        f"--train_batch_size={global_batch_size} does not split into {num_replicas} replica(s) x "
        f"{gradient_accumulation_steps} micro-batch(es) (--gradient_accumulation_steps): it must be a positive "
        f"multiple of {parts}.")
  return global_batch_size // parts


def check_learning_rate(learning_rate: float):
  """Refuses a negative (or not finite) `--learning_rate`; announces 0, which a user may mean (steps that
  change no weight, to time them or to check a run end to end).

  Raises:
    OptionError: the rate is negative, NaN or infinite.
  """
  if not math.isfinite(learning_rate) or learning_rate < 0:
    raise OptionError(f"--learning_rate={learning_rate} must be a finite number, 0 or more: a negative rate would "
                      "climb the loss.")
  if learning_rate == 0:
    print("--learning_rate=0: the training steps will not change the weights.", file=sys.stderr, flush=True)


def _split_into_micro_batches(tensor, num_micro_batches: int):
  """`[batch, ...]` -> `[num_micro_batches, batch / num_micro_batches, ...]`, keeping the static inner shape."""
  inner = tensor.shape[1:]
  if inner.is_fully_defined():
    return tf.reshape(tensor, [num_micro_batches, -1] + inner.as_list())
  return tf.reshape(tensor, tf.concat([[num_micro_batches, -1], tf.shape(tensor)[1:]], 0))


def replica_train_step(model, optimizer, objective: TrainingObjective, loss_scaling: bool, jit_compile: bool = False,
                       gradient_accumulation_steps: int = 1):
  """The per-replica training step: forward, loss, backward (per micro-batch), all-reduce, clip to global
  norm 1.0, one update.

  Args:
    model: the built model (called once), whose trainable variables are updated.
    optimizer: its optimizer (a `LossScaleOptimizer` when `loss_scaling`).
    objective: the `TrainingObjective` (its `loss_normalizers`, `replica_loss` and `sum_names`).
    loss_scaling: scale the loss for float16.
    jit_compile: compile the whole step with XLA, as on a TPU.
    gradient_accumulation_steps: micro-batches this replica's batch is split into; their gradients are summed
      in float32 before the single all-reduce, clip and update, so that N micro-batches of b/N reach the
      weights of one batch of b.

  Returns:
    A function of one per-replica batch that returns that replica's `sums` over the whole batch; run it
    with `strategy.run`.
  """
  replica_loss = objective.replica_loss(model)
  variables = model.trainable_variables

  def micro_batch_gradients(batch, normalizers):
    with tf.GradientTape() as tape:
      loss, sums = replica_loss(batch, normalizers)
      scaled_loss = optimizer.get_scaled_loss(loss) if loss_scaling else loss
    gradients = tape.gradient(scaled_loss, variables)
    if loss_scaling:
      gradients = optimizer.get_unscaled_gradients(gradients)
    # Embedding slices → dense, for accumulation, all-reduce and XLA. The variables are float32 under
    # every precision policy, so are their gradients and the sums of them.
    return [tf.convert_to_tensor(g) for g in gradients], sums

  def accumulated_gradients(batch, normalizers):
    micro_batches = tf.nest.map_structure(
        lambda t: _split_into_micro_batches(t, gradient_accumulation_steps), batch)

    def accumulate(index, gradient_sums, sums):
      micro_batch = tf.nest.map_structure(lambda t: t[index], micro_batches)
      gradients, micro_sums = micro_batch_gradients(micro_batch, normalizers)
      return index + 1, [total + g for total, g in zip(gradient_sums, gradients)], sums + micro_sums

    initial = (tf.constant(0), [tf.zeros(v.shape, tf.float32) for v in variables],
               tf.zeros([len(objective.sum_names)], tf.float32))
    # One micro-batch at a time (parallel_iterations=1): running several at once would hold their
    # activations together, which is what accumulation is there to avoid.
    _, gradients, sums = tf.while_loop(lambda index, *_: index < gradient_accumulation_steps, accumulate, initial,
                                       parallel_iterations=1, maximum_iterations=gradient_accumulation_steps)
    return gradients, sums

  def step(batch):
    context = tf.distribute.get_replica_context()
    normalizers = context.all_reduce(tf.distribute.ReduceOp.SUM, objective.loss_normalizers(batch))
    if gradient_accumulation_steps == 1:
      gradients, sums = micro_batch_gradients(batch, normalizers)
    else:
      gradients, sums = accumulated_gradients(batch, normalizers)
    gradients = context.all_reduce(tf.distribute.ReduceOp.SUM, gradients)
    # Google clipped each TPU shard's gradient before the cross-shard sum; this clips the true global one.
    gradients, _ = tf.clip_by_global_norm(gradients, 1.0)
    optimizer.apply_gradients(zip(gradients, variables), experimental_aggregate_gradients=False)
    return sums

  return tf.function(step, jit_compile=True) if jit_compile else step


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


class Trainer:
  """Trains a run's model for an objective: the host loop, progress, summaries, checkpoints.

  Args:
    strategy: the `tf.distribute` strategy the run was built in.
    run: the run's `RunState`.
    objective: the loss and metrics.
    global_batch_size: examples per step (per optimizer update).
    jit_compile: compile the step with XLA.
    gradient_accumulation_steps: micro-batches per replica and step (see `replica_train_step`); the driver
      checks the batch splits (`micro_batch_size`) before anything is written.
    after_step: runs inside the host loop after each step, beside the step counter (input positions).
  """

  def __init__(self, strategy: tf.distribute.Strategy, run: RunState, objective: TrainingObjective,
               global_batch_size: int, jit_compile: bool = False, after_step: Optional[Callable[[], None]] = None,
               gradient_accumulation_steps: int = 1):
    self.strategy = strategy
    self.run = run
    self.objective = objective
    self.global_batch_size = global_batch_size
    step_fn = replica_train_step(run.model, run.optimizer, objective, run.mixed_precision == "float16", jit_compile,
                                 gradient_accumulation_steps)
    num_sums = len(objective.sum_names)

    @tf.function
    def host_loop(iterator, num_steps):
      totals = tf.zeros([num_sums], tf.float32)
      for _ in tf.range(num_steps):
        per_replica = strategy.run(step_fn, args=(next(iterator),))
        totals += strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=None)
        run.step.assign_add(1)
        if after_step is not None:
          after_step()
      return totals

    self.host_loop = host_loop

  def train(self, iterator, schedule: LoopSchedule, summary_dir: Optional[str],
            on_checkpoint: Callable[[int], None]) -> Dict[str, float]:
    """Runs host loops from the run's step to `schedule.num_train_steps`; returns the metrics of the last loop.

    Args:
      iterator: the distributed training input, positioned at the run's step.
      schedule: the run's steps.
      summary_dir: where TensorBoard scalars go (None: no summaries, as on non-chief workers).
      on_checkpoint: called with the step at each checkpoint step (it saves, and may evaluate).

    Raises:
      TrainingError: the loss became non-finite; nothing is saved after the last good checkpoint.
    """
    with self.run.settings():
      return self._train(iterator, schedule, summary_dir, on_checkpoint)

  def _train(self, iterator, schedule: LoopSchedule, summary_dir: Optional[str],
             on_checkpoint: Callable[[int], None]) -> Dict[str, float]:
    writer = tf.summary.create_file_writer(summary_dir) if summary_dir else None
    current = self.run.current_step
    start_time, start_step = time.time(), current
    metrics = {}
    while current < schedule.num_train_steps:
      num_steps = schedule.steps_to_next_stop(current)
      loop_start = time.time()
      totals = self.host_loop(iterator, tf.constant(num_steps)).numpy()
      current = self.run.current_step
      metrics = self.objective.metrics_from_sums(totals)
      if not all(np.isfinite(list(metrics.values()))):
        last_good = self.run.latest_checkpoint or "none (no checkpoint was written yet)"
        raise TrainingError(
            f"The loss became non-finite between steps {current - num_steps} and {current} ({metrics}). Training "
            f"stopped; the last good checkpoint stays: {last_good}. Try a lower --learning_rate, more warmup "
            "steps or --mixed_precision=bfloat16.")
      metrics["learning_rate"] = float(self.run.optimizer.learning_rate(current))
      metrics["examples_per_second"] = num_steps * self.global_batch_size / max(time.time() - loop_start, 1e-9)
      self._print_progress(metrics, current, schedule.num_train_steps, start_time, start_step)
      if writer:
        with writer.as_default(step=current):
          for name, value in metrics.items():
            tf.summary.scalar(name, value)
      if schedule.is_checkpoint_step(current):
        on_checkpoint(current)
    if writer:
      writer.close()
    return metrics

  def _print_progress(self, metrics: Dict[str, float], current: int, total: int, start_time: float,
                      start_step: int):
    eta = (time.time() - start_time) / max(current - start_step, 1) * (total - current)
    groups = [" ".join(run_directory.format_metric(name, metrics[name]) for name in group)
              for group in self.objective.progress_groups]
    print(" | ".join([f"step {current}/{total}", *groups, f"lr {metrics['learning_rate']:.3e}",
                      f"{metrics['examples_per_second']:.1f} examples/s",
                      f"ETA {time.strftime('%H:%M:%S', time.gmtime(eta))}"]), file=sys.stderr, flush=True)
