"""Measuring the training step: the seconds it takes, and what fits (the largest micro-batch that fits in
memory)."""

import time
from typing import Callable, Iterator

import tensorflow as tf


def time_train_steps(strategy: tf.distribute.Strategy, step: Callable, batches: Iterator, warmup_steps: int,
                     timed_steps: int) -> float:
  """The seconds `timed_steps` steps take, in one `tf.function` call, after `warmup_steps` (tracing included).

  Args:
    strategy: the strategy `step` runs under.
    step: the per-replica step (`loop.replica_train_step`): a batch -> its sums.
    batches: an iterator of a distributed dataset.
  """

  @tf.function
  def run_steps(num_steps):
    total = tf.constant(0.0)
    for _ in tf.range(num_steps):
      sums = strategy.reduce(tf.distribute.ReduceOp.SUM, strategy.run(step, args=(next(batches),)), axis=None)
      total += sums[0]
    return total

  run_steps(tf.constant(warmup_steps)).numpy()
  start = time.time()
  run_steps(tf.constant(timed_steps)).numpy()
  return time.time() - start


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
