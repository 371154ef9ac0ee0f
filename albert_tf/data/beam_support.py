"""What the Apache Beam engines of the data tools (`create_pretraining_data`, `prepare_corpus`) share: output
shards assembled from parts written by many workers, the pipeline's counters, and our errors raised in a
worker brought back as themselves."""

import collections
import contextlib
import re
from typing import Dict, Hashable, Iterator, Optional, Sequence

import apache_beam as beam
from apache_beam.metrics.metric import MetricsFilter

from albert_tf import files
from albert_tf.data import pretraining_corpus
from albert_tf.errors import AlbertError, DataError, InputFileError, OptionError

NAMESPACE = "albert_tf"
# How one of our errors raised in a worker appears in the pipeline's failure.
_WORKER_ERROR = re.compile(r"albert_tf\.[\w.]+\.(\w*Error): (.+)")
_COPY_CHUNK = 16 << 20


class ConcatenateParts(beam.DoFn):
  """(output key, [(order, part file)]) → the part files concatenated in order into the output's partial file,
  the parts removed; emits the key. TFRecord and text files both concatenate.

  Args:
    partials: the partial file of each output key.
  """

  def __init__(self, partials: Dict[Hashable, str]):
    self._partials = partials

  def process(self, element):
    key, parts = element
    with files.open_file(self._partials[key], "wb") as writer:
      for _, path in sorted(parts):
        with files.open_file(path, "rb") as reader:
          while chunk := reader.read(_COPY_CHUNK):
            writer.write(chunk)
    for _, path in parts:
      files.remove(path)
    yield key


def count(name: str, value: int = 1):
  """Adds `value` to the pipeline counter `name` (read back with `counter_totals`)."""
  beam.metrics.Metrics.counter(NAMESPACE, name).inc(value)


def counter_totals(pipeline_result) -> Dict[str, int]:
  """Every counter of ours in a finished pipeline, summed over the steps that count it."""
  totals = collections.Counter()
  for result in pipeline_result.metrics().query(MetricsFilter().with_namespace(NAMESPACE))["counters"]:
    totals[result.key.metric.name] += result.committed if result.committed is not None else result.attempted
  return totals


def worker_error(error: Exception, error_types: Sequence[type] = ()) -> Optional[AlbertError]:
  """Our error raised in a worker, from the pipeline's failure, without the runner's additions; None when the
  failure is not one of ours.

  An in-process runner re-raises the error itself, a multi-process or remote one only its text, within the
  worker's traceback; there, the type is found by its name among InputFileError, OptionError and
  `error_types`, and is DataError otherwise.
  """
  if isinstance(error, AlbertError):
    error_type, message = type(error), str(error)
  else:
    match = _WORKER_ERROR.search(str(error))
    if not match:
      return None
    known = {known_type.__name__: known_type for known_type in (InputFileError, OptionError) + tuple(error_types)}
    error_type = known.get(match.group(1), DataError)
    message = match.group(2)
  return error_type(re.sub(r"\s*\[while running '[^']*'\]$", "", message.strip()))


@contextlib.contextmanager
def pipeline_run(output_files: Sequence[str], partials: Sequence[str],
                 error_types: Sequence[type] = ()) -> Iterator[str]:
  """Around a pipeline and the launcher's work after it. Creates the outputs' folders (local or gs://) and
  yields a work directory made beside the first output, after removing what killed runs on this host left in
  local ones. Our error raised in a worker is raised as itself (see `worker_error`); on the way out, error or
  not, the partial files left and the work directory go, and after an error the folders it created too."""
  with pretraining_corpus.output_dirs(output_files) as directories:
    work_dir = pretraining_corpus.work_dir_path(directories[0])
    files.make_folders(work_dir)
    try:
      yield work_dir
    except Exception as error:  # pylint: disable=broad-except
      ours = worker_error(error, error_types)
      if ours is None:
        raise
      raise ours from None
    finally:
      for path in partials:
        files.remove_tree(path)
      files.remove_tree(work_dir)
