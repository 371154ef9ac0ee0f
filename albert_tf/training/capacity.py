"""Measuring the training step: the seconds it takes, and what fits (the largest micro-batch that fits in
memory)."""

import time
from typing import Callable, Iterator

import tensorflow as tf


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
