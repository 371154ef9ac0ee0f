"""What fits: the largest size for which a measurement succeeds (micro-batches that fit in memory)."""

from typing import Callable


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
