"""Measuring the training step: the seconds it takes, and what fits (the largest micro-batch that fits in
memory).

`find_max_micro_batch` is run_pretraining's --find_max_micro_batch (and benchmarks/benchmark_pretraining.py's): it
measures each micro-batch's pretraining step in a fresh process, `python -m albert_tf.training.step_peak_memory`.
"""

import dataclasses
import json
import re
import resource
import subprocess
import sys
import time
from typing import Callable, Dict, Iterator, Optional, Tuple

import tensorflow as tf

from albert_tf.errors import OptionError
from albert_tf.modeling.config import AlbertConfig
from albert_tf.modeling.pretrainer import AlbertPretrainer
from albert_tf.training import loop
from albert_tf.training.pretraining_objective import PretrainingObjective

# The exit status of a measuring process whose step ran out of memory, and the line it prints otherwise.
OUT_OF_MEMORY_EXIT = 3
_PEAK_LINE = re.compile(r"^peak_memory_mb: (\d+)$", re.MULTILINE)


@dataclasses.dataclass
class PretrainingStepSettings:
  """What a pretraining step's memory and seconds depend on besides its batch: run_pretraining's flags of the same
  names, and the model of its --albert_config_file.

  Raises:
    OptionError: a --max_seq_length beyond the model's positions, or --max_predictions_per_seq not in
      [1, --max_seq_length].
  """

  albert_config: AlbertConfig
  max_seq_length: int
  max_predictions_per_seq: int
  mixed_precision: str = "float32"
  sentence_order_prediction: bool = True
  recompute_grad: bool = False
  optimizer: str = "lamb"
  jit_compile: bool = False

  def __post_init__(self):
    # Checked here, in the process that directs: in a measuring process they would end in a traceback.
    self.albert_config.check_max_seq_length(self.max_seq_length)
    if not 1 <= self.max_predictions_per_seq <= self.max_seq_length:
      raise OptionError(f"--max_predictions_per_seq={self.max_predictions_per_seq} must be between 1 and "
                        f"--max_seq_length={self.max_seq_length}.")

  def to_json(self) -> str:
    return json.dumps(dict(dataclasses.asdict(self), albert_config=self.albert_config.to_dict()))

  @classmethod
  def from_json(cls, text: str) -> "PretrainingStepSettings":
    values = json.loads(text)
    return cls(**dict(values, albert_config=AlbertConfig.from_dict(values["albert_config"])))

  def build(self, strategy: tf.distribute.Strategy, gradient_accumulation_steps: int = 1
            ) -> Tuple[AlbertPretrainer, Callable]:
    """The model, with its optimizer's slots, and its per-replica training step (`loop.replica_train_step`), as
    run_pretraining builds them."""
    with loop.run_settings(self.mixed_precision, seed=0), strategy.scope():
      model = AlbertPretrainer(self.albert_config, self.sentence_order_prediction, recompute_grad=self.recompute_grad)
      model(model.dummy_inputs(), training=False)  # the step differentiates the built variables
      # The learning-rate schedule changes neither memory nor seconds: any will do.
      optimizer = loop.create_optimizer(model, self.mixed_precision,
                                        loop.OptimizerSettings(self.optimizer, 1e-4, 10000, 100))
    step = loop.replica_train_step(model, optimizer, PretrainingObjective(self.sentence_order_prediction),
                                   self.mixed_precision == "float16", self.jit_compile, gradient_accumulation_steps)
    return model, step

  def synthetic_batch(self, batch_size: int) -> Dict[str, tf.Tensor]:
    """A fixed batch of valid ids, full masks, two segments and masked positions."""
    rng = tf.random.Generator.from_seed(0)
    seq_length, predictions = self.max_seq_length, self.max_predictions_per_seq
    ids = rng.uniform([batch_size, seq_length], 5, self.albert_config.vocab_size, tf.int32)
    return {
        "input_word_ids": ids,
        "input_mask": tf.ones_like(ids),
        "input_type_ids": tf.concat([tf.zeros([batch_size, seq_length // 2], tf.int32),
                                     tf.ones([batch_size, seq_length - seq_length // 2], tf.int32)], axis=1),
        "masked_lm_positions": tf.tile(tf.range(predictions)[tf.newaxis], [batch_size, 1]),
        "masked_lm_ids": rng.uniform([batch_size, predictions], 5, self.albert_config.vocab_size, tf.int32),
        "masked_lm_weights": tf.ones([batch_size, predictions], tf.float32),
        "sentence_order_labels": rng.uniform([batch_size], 0, 2, tf.int32),
    }


def peak_memory_mb() -> int:
  """This process's peak so far: the GPU allocator's where there is a GPU, else the peak resident set."""
  if tf.config.list_logical_devices("GPU"):
    return round(tf.config.experimental.get_memory_info("GPU:0")["peak"] / 2**20)
  return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)


def train_step_timer(strategy: tf.distribute.Strategy, step: Callable) -> Callable[[Iterator, int, int], float]:
  """A function (batches, warmup_steps, timed_steps) -> the seconds `timed_steps` steps take, in one
  `tf.function` call, after `warmup_steps` (tracing included).

  The steps are traced once for every iterator of the same element spec, so that inputs compared with one
  timer (a benchmark's rounds and kinds of records) pay for one tracing.

  Args:
    strategy: the strategy `step` runs under.
    step: the per-replica step (`loop.replica_train_step`): a batch -> its sums.
  """

  @tf.function
  def run_steps(batches, num_steps):
    total = tf.constant(0.0)
    for _ in tf.range(num_steps):
      sums = strategy.reduce(tf.distribute.ReduceOp.SUM, strategy.run(step, args=(next(batches),)), axis=None)
      total += sums[0]
    return total

  def seconds(batches: Iterator, warmup_steps: int, timed_steps: int) -> float:
    """`batches`: an iterator of a distributed dataset."""
    run_steps(batches, tf.constant(warmup_steps)).numpy()
    start = time.time()
    run_steps(batches, tf.constant(timed_steps)).numpy()
    return time.time() - start

  return seconds


def largest_fitting_size(start: int, ceiling: int, fits: Callable[[int], bool]) -> int:
  """The largest size in [1, ceiling] that `fits`, found by doubling from `start`, then bisecting.

  Assumes that fitting is monotone (a size that fits means every smaller one does): `fits` is called
  about 2·log2(answer / start) times, and never above `ceiling`.

  Returns:
    The size; 0 when not even the smallest tried fits (sizes below `start` are tried by bisection).
  """
  low, high = 0, max(1, min(start, ceiling))  # low fits (0: none yet); high is the next size to try
  while high <= ceiling and fits(high):
    low, high = high, high * 2
  high = min(high, ceiling + 1)
  while high - low > 1:
    middle = (low + high) // 2
    low, high = (middle, high) if fits(middle) else (low, middle)
  return low


def measure_peak_memory_mb(settings: PretrainingStepSettings, micro_batch: int) -> Optional[int]:
  """The peak memory (MB) of one pretraining step of `micro_batch` on one device, measured in a fresh process
  (the peak of this one would hold every earlier size's); None when the step runs out of memory."""
  command = [sys.executable, "-m", "albert_tf.training.step_peak_memory", settings.to_json(), str(micro_batch)]
  result = subprocess.run(command, capture_output=True, text=True, check=False)
  if result.returncode == OUT_OF_MEMORY_EXIT:
    return None
  peak = _PEAK_LINE.search(result.stdout)
  if result.returncode or not peak:
    raise RuntimeError(f"Measuring micro-batch {micro_batch} failed (exit {result.returncode}):\n"
                       f"{result.stderr[-3000:]}")
  return int(peak.group(1))


def find_max_micro_batch(settings: PretrainingStepSettings, memory_limit_mb: Optional[int], start: int,
                         ceiling: int) -> int:
  """The largest micro-batch (examples of one forward pass on one replica) in [1, `ceiling`] whose pretraining step
  fits, found by doubling from `start`, then bisecting (`largest_fitting_size`); each size is measured by
  `measure_peak_memory_mb`, and its peak printed on stderr.

  A size fits when its step runs (no out-of-memory error) and its peak stays within `memory_limit_mb`. This process
  only directs: it places nothing on a device, whose memory the measuring processes need.

  Args:
    settings: the step.
    memory_limit_mb: the memory a step may use, in MB; None on a GPU: what the GPU has.
    start: the first size tried. From a start at or below the answer no size tried is above twice the answer:
      on the CPU a size that does not fit still runs, in swap.
    ceiling: the largest size tried.

  Raises:
    OptionError: no `memory_limit_mb` without a GPU, a limit below 1 MB, or not even a micro-batch of 1 fits.
  """
  if memory_limit_mb is None and not tf.config.list_physical_devices("GPU"):
    raise OptionError("--find_max_micro_batch without a GPU needs --memory_limit_mb: on the CPU nothing runs out "
                      "of memory before the machine swaps.")
  if memory_limit_mb is not None and memory_limit_mb < 1:
    raise OptionError(f"--memory_limit_mb must be at least 1, not {memory_limit_mb}.")

  def fits(micro_batch: int) -> bool:
    peak = measure_peak_memory_mb(settings, micro_batch)
    print(f"micro-batch {micro_batch}: {'out of memory' if peak is None else f'peak {peak} MB'}", file=sys.stderr,
          flush=True)
    return peak is not None and (memory_limit_mb is None or peak <= memory_limit_mb)

  largest = largest_fitting_size(start, ceiling, fits)
  if not largest:
    limit = "the GPU's memory" if memory_limit_mb is None else f"{memory_limit_mb} MB"
    raise OptionError(f"Not even a micro-batch of 1 fits in {limit} at --max_seq_length={settings.max_seq_length}.")
  return largest


def local_replicas(strategy_type: str) -> int:
  """The replicas of a --strategy_type that trains on this machine's devices alone, counted without initialising a
  device (that would take memory the measuring processes of `find_max_micro_batch` need).

  Raises:
    OptionError: `multi_worker_mirrored` or `tpu`, whose replicas are not (all) on this machine.
  """
  if strategy_type == "one_device":
    return 1
  if strategy_type == "mirrored":  # every GPU, else the CPU (`distribution.get_strategy`)
    return len(tf.config.list_physical_devices("GPU")) or 1
  if strategy_type == "tpu":
    raise OptionError("--find_max_micro_batch measures the step on this machine's GPU or CPU, not on a TPU.")
  raise OptionError(f"--find_max_micro_batch measures the step on this machine's devices, not with "
                    f"--strategy_type={strategy_type}: run it with --strategy_type=mirrored on one host with the "
                    "same GPUs (the micro-batch is per replica), then set --gradient_accumulation_steps to "
                    "--train_batch_size / (the replicas of every host x that micro-batch).")


def fewest_accumulation_steps(per_replica_batch: int, max_micro_batch: int) -> int:
  """The fewest micro-batches (--gradient_accumulation_steps) that split `per_replica_batch` into equal ones of at
  most `max_micro_batch` (at least 1)."""
  return next(steps for steps in range(1, per_replica_batch + 1)
              if per_replica_batch % steps == 0 and per_replica_batch // steps <= max_micro_batch)
