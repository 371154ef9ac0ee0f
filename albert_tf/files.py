"""Files: the globs users pass, UTF-8 text read line by line with errors that name the line, and files
written whole or not at all."""

import glob
import gzip
import os
import socket
import uuid
import zlib
from typing import Iterator, List, Sequence, Tuple, Union

from albert_tf.errors import DataError, InputFileError, OptionError, OutputError


def expand_input_patterns(patterns: Union[str, Sequence[str]]) -> List[str]:
  """The files matching comma-separated globs, Google's `--input_file` convention (local or gs:// paths).

  Args:
    patterns: a string of comma-separated file names or globs, or a list of such strings.

  Returns:
    The matching files, sorted, each once.

  Raises:
    InputFileError: naming the first pattern that matches no file (a typo in one of several patterns
      would otherwise drop that data silently).
  """
  if isinstance(patterns, str):
    patterns = [patterns]
  pieces = [piece.strip() for pattern in patterns for piece in pattern.split(",") if piece.strip()]
  if not pieces:
    raise InputFileError("No input files given.")
  files = []
  for piece in pieces:
    matches = [path for path in sorted(_glob(piece)) if not _is_dir(path)]
    if not matches:
      raise InputFileError(f"No input file matches {piece}.")
    files.extend(matches)
  return sorted(set(files))


def _gfile():
  # gs:// and other remote file systems are TensorFlow's; local paths need no TensorFlow, so that the data
  # tool and its workers start without importing it.
  import tensorflow as tf  # pylint: disable=import-outside-toplevel
  return tf.io.gfile


def _glob(pattern: str) -> List[str]:
  return _gfile().glob(pattern) if "://" in pattern else glob.glob(pattern)


def _is_dir(path: str) -> bool:
  return _gfile().isdir(path) if "://" in path else os.path.isdir(path)


def file_exists(path: str) -> bool:
  """Whether a local or remote (gs://) path is an existing file."""
  return (_gfile().exists(path) and not _gfile().isdir(path)) if "://" in path else os.path.isfile(path)


def check_inputs_and_outputs(input_files: Sequence[str], output_files: Sequence[str]):
  """What every data tool checks first: inputs that exist, and outputs named once and none of them an input.

  Raises:
    InputFileError: no input file, or one that does not exist.
    OptionError: no output file, one named twice or that is also an input.
  """
  if not input_files:
    raise InputFileError("No input files.")
  for path in input_files:
    if not file_exists(path):
      raise InputFileError(f"Input file not found: {path}")
  if not output_files:
    raise OptionError("No output files.")
  if len(set(output_files)) < len(output_files) or set(output_files) & set(input_files):
    raise OptionError("Each output file must be named once, and be none of the input files.")


def read_bytes(path: str) -> bytes:
  """The bytes of a local or remote (gs://) file.

  Raises:
    InputFileError: the file does not exist or cannot be read.
  """
  try:
    if "://" in path:
      with _gfile().GFile(path, "rb") as reader:
        return reader.read()
    with open(path, "rb") as reader:
      return reader.read()
  except Exception as error:  # pylint: disable=broad-except; gfile raises TensorFlow's errors, not OSError
    raise InputFileError(f"{path}: cannot be read ({getattr(error, 'strerror', None) or error}).") from None


def make_directory(path: str):
  """Creates a local or remote (gs://) directory and its parents; one that exists is left as it is."""
  if "://" in path:
    _gfile().makedirs(path)
  else:
    os.makedirs(path, exist_ok=True)


def file_size(path: str) -> int:
  """The size in bytes of a local or remote (gs://) file."""
  return _gfile().stat(path).length if "://" in path else os.path.getsize(path)


def read_utf8_lines(path: str) -> Iterator[Tuple[int, str]]:
  """Yields (1-based line number, line with its line break) of a UTF-8 text file, gzip-compressed when its
  name ends in `.gz`; a byte-order mark is dropped.

  Raises:
    InputFileError: the file cannot be opened (missing, a broken link, no permission).
    DataError: a line that is not UTF-8, naming the file, the line and the byte; a `.gz` file that is not
      gzip or is cut short.
  """
  # Bytes, so that a decoding error can name its line.
  try:
    reader = _gfile().GFile(path, "rb") if "://" in path else open(path, "rb")
  except OSError as error:
    raise InputFileError(f"{path}: cannot be read ({error.strerror or error}).") from None
  with reader:
    lines = gzip.GzipFile(fileobj=reader, mode="rb") if path.endswith(".gz") else reader
    line_number = 0
    try:
      for line_number, raw in enumerate(lines, 1):
        try:
          line = raw.decode("utf-8")
        except UnicodeDecodeError as error:
          raise DataError(f"{path}, line {line_number}: not UTF-8 ({error.reason} "
                          f"{raw[error.start:error.end]!r} at byte {error.start} of the line).") from None
        yield line_number, line.removeprefix("\ufeff") if line_number == 1 else line
    except (gzip.BadGzipFile, EOFError, zlib.error) as error:
      raise DataError(f"{path}: not a complete gzip file after line {line_number} ({error}).") from None


def partial_path(path: str) -> str:
  """Where `path` (local or gs://) is written until it is complete: a hidden file beside it, unique to this
  host, process and call (`pretraining_corpus.remove_stale_work` recognises the name)."""
  directory, name = path.rsplit("/", 1) if "/" in path else (".", path)
  return f"{directory}/.{name}.partial-{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:12]}"


def write_atomically(path: str, content: Union[str, bytes]) -> str:
  """Writes `content` (text as UTF-8) to a local or remote (gs://) `path`, whole or not at all: to a partial
  file beside it, then renamed into place. Returns `path`.

  Raises:
    OutputError: the file cannot be written (no space, no permission); no partial file is left behind.
  """
  partial = partial_path(path)
  remote = "://" in path
  try:
    with (_gfile().GFile(partial, "wb") if remote else open(partial, "wb")) as writer:
      writer.write(content.encode("utf-8") if isinstance(content, str) else content)
    if remote:
      _gfile().rename(partial, path, overwrite=True)
    else:
      os.replace(partial, path)
  except BaseException as error:  # Ctrl-C too: leave nothing half-written behind
    if remote and _gfile().exists(partial):
      _gfile().remove(partial)
    elif not remote and os.path.exists(partial):
      os.remove(partial)
    # gfile raises TensorFlow's errors, not OSError.
    if isinstance(error, OSError) or (remote and isinstance(error, Exception)):
      raise OutputError(f"Could not write {path}: {getattr(error, 'strerror', None) or error}.") from None
    raise
  return path
