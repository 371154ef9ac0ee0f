"""Files: the globs users pass, UTF-8 text read line by line with errors that name the line, and files
written whole or not at all."""

import contextlib
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
    matches = [path for path in sorted(_glob(piece)) if not is_folder(path)]
    if not matches and is_folder(piece):
      raise InputFileError(f"{piece} is a folder; name the files in it, e.g. {piece.rstrip('/')}/*.txt.")
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


def is_folder(path: str) -> bool:
  """Whether a local or remote (gs://) path is an existing folder."""
  return _gfile().isdir(path) if "://" in path else os.path.isdir(path)


def folder_files(folder: str, pattern: str) -> List[str]:
  """The files directly in a local or remote (gs://) folder whose names match a glob `pattern` ("*.json"),
  sorted; not its subfolders."""
  return sorted(path for path in _glob(os.path.join(folder, pattern)) if not is_folder(path))


def file_exists(path: str) -> bool:
  """Whether a local or remote (gs://) path is an existing file."""
  return (_gfile().exists(path) and not _gfile().isdir(path)) if "://" in path else os.path.isfile(path)


def check_inputs_and_outputs(input_files: Sequence[str], output_files: Sequence[str], overwrite: bool = False):
  """What every data tool checks first: inputs that exist, and outputs named once, none of them an input, each one
  a file that can be written (see `check_output_files`).

  Raises:
    InputFileError: no input file, or one that does not exist.
    OptionError: no output file, one named twice or that is also an input, or one `check_output_files` refuses.
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
  check_output_files(output_files, overwrite)


def _existing_ancestor(path: str) -> Tuple[str, List[str]]:
  """The nearest of a local absolute `path` and its parents that exists, and the parts below it that do not,
  outermost first."""
  existing, missing = path, []
  while not os.path.lexists(existing):
    missing.append(existing)
    existing = os.path.dirname(existing)
  return existing, missing[::-1]


def check_destination(path: str, flag: str):
  """Checks, before any work, that a local `path` can be written: no regular file on the way to it, and
  permission to write in the folder that holds it or its first missing folder (gs:// paths are not checked).

  Raises:
    OptionError: naming `flag`, the path and what is in the way.
  """
  if "://" in path:
    return
  path = os.path.abspath(path)
  existing, _ = _existing_ancestor(path)
  if existing != path and not os.path.isdir(existing):
    raise OptionError(f"{flag} {path} cannot be written: {existing} is a file, not a folder.")
  folder = existing if os.path.isdir(existing) else os.path.dirname(existing)
  if not os.access(folder, os.W_OK | os.X_OK):
    raise OptionError(f"{flag} {path} cannot be written: no permission to write in {folder}.")


def check_output_files(paths: Sequence[str], overwrite: bool = False, flag: str = "--output_file"):
  """Checks, before any work, that each of `paths` (local or gs://) can be written as a file: no regular file
  on the way to it, not a folder, and not there yet unless `overwrite`.

  Raises:
    OptionError: naming the path, `flag` and the fix.
  """
  for path in paths:
    check_destination(path, flag)
    if is_folder(path):
      raise OptionError(f"{flag} {path} is a folder; name a file (in it, or elsewhere).")
    if (file_exists(path) or os.path.islink(path)) and not overwrite:  # a dangling link is in the way too
      raise OptionError(f"{path} already exists; pass --overwrite to replace it, or choose another {flag} "
                        "(nothing was written).")


def check_output_folder(folder: str, names: Sequence[str], overwrite: bool = False, flag: str = "--output_dir"):
  """Checks, before any work, that the files `names` can be written in the local `folder`: it is a folder or
  can be made one, and holds none of them unless `overwrite`.

  Raises:
    OptionError: naming the folder, the first file it already holds and the fix.
  """
  if os.path.exists(folder) and not os.path.isdir(folder):
    raise OptionError(f"{flag} {folder} is a file, not a folder.")
  check_destination(folder, flag)
  held = [name for name in names if os.path.lexists(os.path.join(folder, name))]
  if held and not overwrite:
    raise OptionError(f"{folder} already holds {held[0]}; pass --overwrite to replace what it holds, or choose "
                      f"another {flag} (nothing was written).")


@contextlib.contextmanager
def output_folders(paths: Sequence[str]) -> Iterator[List[str]]:
  """Creates the folders `paths` (local or gs://) and their parents; yields them. If the block fails (Ctrl-C
  too), the local folders it created are removed again when the run's cleanup has left them empty, so that a
  failed run leaves no empty folder behind."""
  created = []
  for path in paths:
    if "://" in path:
      _gfile().makedirs(path)
      continue
    _, missing = _existing_ancestor(os.path.abspath(path))
    os.makedirs(path, exist_ok=True)
    created.extend(missing)
  try:
    yield list(paths)
  except BaseException:
    for folder in reversed(created):
      with contextlib.suppress(OSError):  # not empty: something else was written there meanwhile
        os.rmdir(folder)
    raise


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


def write_output_file(path: str, content: Union[str, bytes]) -> str:
  """Writes a result file the user named (checked by `check_output_files` before the work), whole or not at all
  (`write_atomically`), its folder made first if needed. Returns `path`."""
  folder = path.rsplit("/", 1)[0] if "://" in path else os.path.dirname(os.path.abspath(path))
  with output_folders([folder]):
    return write_atomically(path, content)


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
      if not line_number:
        raise DataError(f"{path}: not a gzip file ({error}); only names ending in .gz are read as gzip.") from None
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
