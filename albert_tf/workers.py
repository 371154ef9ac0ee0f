"""Work spread over local processes, as the data tools (`create_pretraining_data`, `prepare_corpus`) and the
vocabulary's morpheme analysis (`train_sentencepiece --pretokenizer`) do it: a pool of worker processes whose
results come back in task order, and progress lines.

Results in task order make a run's output independent of the number of workers: the main process consumes
them exactly as it would have computed them itself.
"""

import collections
import contextlib
import multiprocessing
import signal
import sys
import time
from typing import Callable, Iterator, Optional, Sequence


class OrderedTasks:
  """Runs tasks on a pool (or inline) with a bounded number in flight, yielding results in task order."""

  def __init__(self, pool, max_in_flight: int):
    self._pool = pool
    self._max_in_flight = max_in_flight
    self._in_flight = collections.deque()

  def submit(self, function: Callable, task) -> Iterator:
    """Queues `function(task)`; yields the results that had to finish first to make room."""
    if self._pool is None:
      yield function(task)
      return
    while len(self._in_flight) >= self._max_in_flight:
      yield self._in_flight.popleft().get()
    self._in_flight.append(self._pool.apply_async(_run_task, (function, task)))

  def drain(self) -> Iterator:
    while self._in_flight:
      yield self._in_flight.popleft().get()


# The error of this worker process's initializer, if it failed. A pool replaces a worker whose initializer
# raises, again and again, and the caller would wait forever: kept instead, it is raised by every task, so it
# reaches the caller through the first result.
_initializer_error = None


def _start_worker(initializer: Callable, initargs: Sequence):
  global _initializer_error
  # Ctrl-C reaches the whole process group: the main process stops the pool and cleans up; workers stay quiet.
  signal.signal(signal.SIGINT, signal.SIG_IGN)
  try:
    initializer(*initargs)
  except Exception as error:  # pylint: disable=broad-except; raised again by the tasks
    _initializer_error = error


def _run_task(function: Callable, task):
  if _initializer_error is not None:
    raise _initializer_error
  return function(task)


@contextlib.contextmanager
def ordered_workers(num_workers: int, initializer: Callable, initargs: Sequence) -> Iterator[OrderedTasks]:
  """`OrderedTasks` on `num_workers` processes, each set up by `initializer(*initargs)`; with one worker, the
  tasks run in this process, set up the same way. The pool is stopped on the way out, error or not.

  Workers come from a fork server, never from this process: whatever TensorFlow state the caller holds
  (threads, a GPU context) is not inherited. The data and text paths import no TensorFlow, so they start fast.
  An initializer that keeps state in its module's globals leaves it in this process with one worker: the
  caller clears it afterwards.
  """
  pool = None
  try:
    if num_workers > 1:
      pool = multiprocessing.get_context("forkserver").Pool(num_workers, _start_worker, (initializer, initargs))
    else:
      initializer(*initargs)
    yield OrderedTasks(pool, max_in_flight=2 * num_workers)
  finally:
    if pool is not None:
      pool.terminate()
      pool.join()


class Progress:
  """A line on stderr every few seconds: the phase, its counts, the rate and the ETA.

  Args:
    tool: the name the lines start with, in brackets.
    enabled: False prints nothing.
    interval: the fewest seconds between two lines (a final line is always printed).
  """

  def __init__(self, tool: str, enabled: bool, interval: float = 2.0):
    self._tool = tool
    self._enabled = enabled
    self._interval = interval
    self.start = time.time()
    self._phase_start = self._last = self.start

  @property
  def elapsed(self) -> float:
    return time.time() - self.start

  def phase(self):
    self._phase_start = time.time()

  def update(self, message: str, done: Optional[float] = None, total: Optional[float] = None,
             final: bool = False):
    now = time.time()
    if not self._enabled or (now - self._last < self._interval and not final):
      return
    self._last = now
    eta = ""
    if done and total:
      eta = f" | ETA {(total - done) * (now - self._phase_start) / done:.0f} s"
    print(f"[{self._tool}] {message} | elapsed {now - self.start:.0f} s{eta}", file=sys.stderr, flush=True)
