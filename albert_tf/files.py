"""Files: the one module that touches them. Every path a user gives may be local or a bucket.

A path with a scheme (`gs://bucket/...`, and any file system TensorFlow has a plugin for, `ram://` in the tests)
goes through `tf.io.gfile`, as Google's tools go through `tf.gfile`; a local path through the OS, so that the data
tool and its workers start without importing TensorFlow. What the rest of the package does with files is here:
reading text, bytes and JSON (UTF-8 errors name the line), finding (exists, is a folder, list, glob), writing a
file whole or not at all, making and removing folders, and publishing a folder of files whole or not at all
(`staged_folder`). Errors of a bucket (one that does not exist, cannot be reached, or refuses the credentials)
become our errors, one line naming the path and what to do.

An object store is not a file system: it has no folders (a "folder" is the objects under a name and `/`), renames
an object by copying it, and cannot rename a folder at all. So on a bucket a file is written to a partial name and
copied into place (an object appears whole when its upload ends), and a folder is published file by file with
the file that marks it complete written last; on local disk both are renamed into place.
"""

import contextlib
import glob as glob_lib
import gzip
import io
import json
import os
import shutil
import socket
import tempfile
import uuid
import zlib
from typing import Any, IO, Iterator, List, Optional, Sequence, Set, Tuple, Union

from albert_tf.errors import DataError, InputFileError, OptionError, OutputError, json_error_text

# What a user does about a bucket that refuses or cannot be reached (TensorFlow's GCS client reads these).
_AUTHENTICATION_HINT = ("authenticate with `gcloud auth application-default login` (or set "
                        "GOOGLE_APPLICATION_CREDENTIALS to a service account's key file) with an account that may "
                        "use the bucket")


def is_remote(path: str) -> bool:
  """Whether `path` names a file system by its scheme (`gs://...`): read and written through TensorFlow."""
  return "://" in path


def _gfile():
  # gs:// and other remote file systems are TensorFlow's; local paths need no TensorFlow, so that the data
  # tool and its workers start without importing it.
  import tensorflow as tf  # pylint: disable=import-outside-toplevel
  return tf.io.gfile


def bucket_of(path: str) -> str:
  """The root of a remote path: `gs://bucket` of `gs://bucket/a/b`."""
  scheme, _, rest = path.partition("://")
  return f"{scheme}://{rest.split('/', 1)[0]}"


def parent(path: str) -> str:
  """The folder that holds `path` (a local path's absolute folder)."""
  if is_remote(path):
    return path.rstrip("/").rsplit("/", 1)[0]
  return os.path.dirname(os.path.abspath(path))


def _remote_error_text(error: Exception, path: str, flag: str = "") -> str:
  """What went wrong with a remote `path` (given as `flag`), told with what to do: TensorFlow raises its own errors,
  whose first line is enough (the rest repeats the request)."""
  import tensorflow as tf  # pylint: disable=import-outside-toplevel
  reason = (getattr(error, "message", None) or str(error)).strip().splitlines()
  reason = reason[0] if reason else type(error).__name__
  named = f"{flag} {path}" if flag else path
  if isinstance(error, (tf.errors.PermissionDeniedError, tf.errors.UnauthenticatedError)):
    return f"{named}: access refused ({reason}); {_AUTHENTICATION_HINT}."
  if isinstance(error, tf.errors.NotFoundError):
    return f"{named}: not found ({reason})."
  return (f"{named}: {bucket_of(path)} cannot be reached ({reason}); check the network and the bucket's name, "
          f"and {_AUTHENTICATION_HINT}.")


@contextlib.contextmanager
def _remote(path: str, error_type=InputFileError, flag: str = ""):
  """Inside the block, an error TensorFlow raises on the remote `path` is an `error_type` naming it (and the `flag`
  that gave it) and the fix."""
  try:
    yield
  except Exception as error:  # pylint: disable=broad-except; only TensorFlow's OpErrors are translated
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    if not isinstance(error, tf.errors.OpError):
      raise
    raise error_type(_remote_error_text(error, path, flag)) from None


def _remote_kind(path: str) -> Optional[str]:
  """"file", "folder" or None for a remote path, as the bucket answers. The tests' stand-in for gs:// replaces this
  with GCS's answer (`ram://` calls a path a folder when any file name starts with it)."""
  if not _gfile().exists(path):
    return None
  return "folder" if _gfile().isdir(path) else "file"


def _kind(path: str) -> Optional[str]:
  if is_remote(path):
    with _remote(path):
      return _remote_kind(path)
  if os.path.isdir(path):
    return "folder"
  return "file" if os.path.lexists(path) else None


def exists(path: str) -> bool:
  """Whether a local or remote path is an existing file or folder (a dangling local link counts: it is in the
  way)."""
  return _kind(path) is not None


def is_folder(path: str) -> bool:
  """Whether a local or remote path is an existing folder."""
  return _kind(path) == "folder"


def file_exists(path: str) -> bool:
  """Whether a local or remote path is an existing file (not a folder, not a dangling link)."""
  return _kind(path) == "file" and (is_remote(path) or os.path.exists(path))


def glob(pattern: str) -> List[str]:
  """The paths (files and folders) matching a glob, local or remote, sorted."""
  if is_remote(pattern):
    with _remote(pattern):
      return sorted(_gfile().glob(pattern))
  return sorted(glob_lib.glob(pattern))


def _remote_children(folder: str) -> List[str]:
  """The names directly in a remote folder, sorted. The tests' stand-in for gs:// replaces this with GCS's answer
  (`ram://` lists every name that starts with the folder's: `eval/` lists "_results.txt" of `eval_results.txt`)."""
  return sorted({name.rstrip("/") for name in _gfile().listdir(folder)})


def list_folder(folder: str) -> List[str]:
  """The names of the files and folders directly in `folder`, sorted ([] when it does not exist)."""
  if not is_folder(folder):
    return []
  if is_remote(folder):
    with _remote(folder):
      return _remote_children(folder)
  return sorted(os.listdir(folder))


def folder_files(folder: str, pattern: str) -> List[str]:
  """The files directly in a local or remote folder whose names match a glob `pattern` ("*.json"), sorted; not
  its subfolders."""
  return sorted(path for path in glob(os.path.join(glob_lib.escape(folder), pattern)) if not is_folder(path))


def paths_under(folder: str) -> Set[str]:
  """Every file and folder below `folder` (local or remote), at any depth."""
  if not is_folder(folder):
    return set()
  if is_remote(folder):
    below = {os.path.join(folder, name) for name in list_folder(folder)}
    return below.union(*(paths_under(path) for path in below if is_folder(path)))
  return {os.path.join(root, name) for root, folders, names in os.walk(folder) for name in folders + names}


def file_size(path: str) -> int:
  """The size in bytes of a local or remote file."""
  if is_remote(path):
    with _remote(path):
      return _gfile().stat(path).length
  return os.path.getsize(path)


def expand_input_patterns(patterns: Union[str, Sequence[str]]) -> List[str]:
  """The files matching comma-separated globs, Google's `--input_file` convention (local or remote paths).

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
  found = []
  for piece in pieces:
    matches = [path for path in glob(piece) if not is_folder(path)]
    if not matches and is_folder(piece):
      raise InputFileError(f"{piece} is a folder; name the files in it, e.g. {piece.rstrip('/')}/*.txt.")
    if not matches:
      raise InputFileError(f"No input file matches {piece}.")
    found.extend(matches)
  return sorted(set(found))


def require_file(path: str, what: str, fix: str = "") -> str:
  """Returns `path` if it is an existing file (local or remote).

  Raises:
    InputFileError: "<what> not found: <path>", or that it is a folder; `fix` (e.g. "pass --spm_model_file")
      is added in brackets.
  """
  if file_exists(path):
    return path
  problem = f"{path} is a folder, not a file" if is_folder(path) else f"not found: {path}"
  raise InputFileError(f"{what} {problem}{f' ({fix})' if fix else ''}.")


def _not_a_file(path: str) -> str:
  """Why a path that is no file cannot be read: a folder where a file is expected is told as one, not as missing."""
  return "a folder, not a file" if is_folder(path) else "not found"


# --- Reading ---------------------------------------------------------------------------------------------------

def open_file(path: str, mode: str = "rb") -> IO:
  """An open file of a local or remote path, `mode` as `open`'s ("rb", "wb", "r", "w", "a"; text is UTF-8). For
  streams too long to hold whole; a written file is not whole until it is closed (see `write_atomically`).

  Raises:
    InputFileError: a file to read that does not exist or cannot be read.
    OutputError: a file to write that cannot be written.
  """
  error_type = InputFileError if mode.startswith("r") else OutputError
  if is_remote(path):
    with _remote(path, error_type):
      if mode.startswith("r") and _remote_kind(path) != "file":
        raise error_type(f"{path}: cannot be read ({_not_a_file(path)}).")
      # Binary, wrapped in Python's buffers: GFile's own lines drop a "\r" before "\n"; these keep the bytes.
      stream = _gfile().GFile(path, mode.replace("t", "").replace("b", "") + "b")
      if not mode.startswith("r"):
        stream.write(b"")  # creates the file now, as `open` does: a GFile that writes nothing creates nothing
      raw = _GFileRaw(stream, path, error_type)
      buffered = io.BufferedReader(raw) if mode.startswith("r") else io.BufferedWriter(raw)
      return buffered if "b" in mode else io.TextIOWrapper(buffered, encoding="utf-8")
  try:
    return open(path, mode, **({} if "b" in mode else {"encoding": "utf-8"}))  # pylint: disable=consider-using-with
  except OSError as error:
    raise error_type(f"{path}: cannot be {'read' if mode.startswith('r') else 'written'} "
                     f"({error.strerror or error}).") from None


class _GFileRaw(io.RawIOBase):
  """A binary `GFile` as a raw stream, under Python's buffers and text layer as a local `open`'s file is; what
  TensorFlow raises while reading or writing (a bucket gone, a write refused at close) is an `error_type` naming
  the path."""

  def __init__(self, stream, path: str, error_type):
    super().__init__()
    self._stream, self._path, self._error_type = stream, path, error_type

  def readable(self):
    return self._stream.mode.startswith("r")

  def writable(self):
    return not self.readable()

  def readinto(self, buffer):
    with _remote(self._path, self._error_type):
      data = self._stream.read(len(buffer))
    buffer[:len(data)] = data
    return len(data)

  def write(self, data):
    with _remote(self._path, self._error_type):
      self._stream.write(bytes(data))
    return len(data)

  def close(self):
    if not self.closed:
      try:
        with _remote(self._path, self._error_type):
          self._stream.close()
      finally:
        super().close()


def read_bytes(path: str) -> bytes:
  """The bytes of a local or remote file.

  Raises:
    InputFileError: the file does not exist or cannot be read.
  """
  if is_remote(path):
    with _remote(path):
      if _remote_kind(path) != "file":
        raise InputFileError(f"{path}: cannot be read ({_not_a_file(path)}).")
      with _gfile().GFile(path, "rb") as reader:
        return reader.read()
  try:
    with open(path, "rb") as reader:
      return reader.read()
  except OSError as error:
    raise InputFileError(f"{path}: cannot be read ({error.strerror or error}).") from None


def read_text(path: str) -> str:
  """A UTF-8 text file's text (a byte-order mark dropped).

  Raises:
    InputFileError: it cannot be read. DataError: it is not UTF-8, naming the line and the byte.
  """
  return "".join(line for _, line in read_utf8_lines(path))


def read_json(path: str, what: str = "") -> Any:
  """The JSON value of a UTF-8 file.

  Raises:
    InputFileError: it cannot be read. DataError: it is not UTF-8 or not JSON, naming the place; `what` ("the
      task.json of a run") says what the file should have been.
  """
  text = read_text(path)
  try:
    return json.loads(text)
  except json.JSONDecodeError as error:
    raise DataError(f"{path}: {f'{what} must be JSON, but ' if what else ''}{json_error_text(error)}.") from None


def read_utf8_lines(path: str) -> Iterator[Tuple[int, str]]:
  """Yields (1-based line number, line with its line break) of a UTF-8 text file, gzip-compressed when its
  name ends in `.gz`; a byte-order mark is dropped.

  Raises:
    InputFileError: the file cannot be opened (missing, a broken link, no permission).
    DataError: a line that is not UTF-8, naming the file, the line and the byte; a `.gz` file that is not
      gzip or is cut short.
  """
  # Bytes, so that a decoding error can name its line.
  reader = open_file(path, "rb")
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


# --- Checking outputs before any work ------------------------------------------------------------------------

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
    require_file(path, "Input file")
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


def _check_bucket(path: str, flag: str):
  """Checks, before any work, that the bucket of a remote `path` exists and can be reached with the credentials
  at hand.

  Raises:
    OptionError: naming `flag`, the path and what to do.
  """
  bucket = bucket_of(path)
  with _remote(path, OptionError, flag):
    if _gfile().exists(bucket) and _gfile().isdir(bucket):  # exists raises what isdir would swallow
      return
  raise OptionError(f"{flag} {path}: the bucket {bucket} does not exist (or this account cannot see it); create "
                    f"it, or correct the path, or {_AUTHENTICATION_HINT}.")


def check_destination(path: str, flag: str):
  """Checks, before any work, that `path` can be written: on local disk no regular file on the way to it and
  permission to write in the folder that holds it or its first missing folder; on a bucket, that the bucket is
  there and can be reached (`_check_bucket`).

  Raises:
    OptionError: naming `flag`, the path and what is in the way.
  """
  if is_remote(path):
    _check_bucket(path, flag)
    return
  path = os.path.abspath(path)
  existing, _ = _existing_ancestor(path)
  if existing != path and not os.path.isdir(existing):
    raise OptionError(f"{flag} {path} cannot be written: {existing} is a file, not a folder.")
  folder = existing if os.path.isdir(existing) else os.path.dirname(existing)
  if not os.access(folder, os.W_OK | os.X_OK):
    raise OptionError(f"{flag} {path} cannot be written: no permission to write in {folder}.")


def check_output_files(paths: Sequence[str], overwrite: bool = False, flag: str = "--output_file"):
  """Checks, before any work, that each of `paths` (local or remote) can be written as a file: no regular file
  on the way to it, not a folder, and not there yet unless `overwrite`.

  Raises:
    OptionError: naming the path, `flag` and the fix.
  """
  for path in paths:
    check_destination(path, flag)
    kind = _kind(path)
    if kind == "folder":
      raise OptionError(f"{flag} {path} is a folder; name a file (in it, or elsewhere).")
    if kind == "file" and not overwrite:  # a dangling link is in the way too
      raise OptionError(f"{path} already exists; pass --overwrite to replace it, or choose another {flag} "
                        "(nothing was written).")


def check_output_folder(folder: str, names: Sequence[str], overwrite: bool = False, flag: str = "--output_dir"):
  """Checks, before any work, that the files `names` can be written in `folder` (local or remote): it is a
  folder or can be made one, and holds none of them unless `overwrite`.

  Raises:
    OptionError: naming the folder, the first file it already holds and the fix.
  """
  check_destination(folder, flag)
  if _kind(folder) == "file":
    raise OptionError(f"{flag} {folder} is a file, not a folder.")
  held = [name for name in names if exists(os.path.join(folder, name))]
  if held and not overwrite:
    raise OptionError(f"{folder} already holds {held[0]}; pass --overwrite to replace what it holds, or choose "
                      f"another {flag} (nothing was written).")


# --- Writing ---------------------------------------------------------------------------------------------------

def make_folders(path: str):
  """Creates the folder `path` and its parents (local or remote; nothing happens when it exists)."""
  if is_remote(path):
    with _remote(path, OutputError):
      _gfile().makedirs(path)
    return
  try:
    os.makedirs(path, exist_ok=True)
  except OSError as error:
    raise OutputError(f"Could not make the folder {path}: {error.strerror or error}.") from None


@contextlib.contextmanager
def output_folders(paths: Sequence[str]) -> Iterator[List[str]]:
  """Creates the folders `paths` (local or remote) and their parents; yields them. If the block fails (Ctrl-C
  too), the folders it created are removed again when the run's cleanup has left them empty, so that a failed
  run leaves no empty folder behind."""
  created = []
  for path in paths:
    if is_remote(path):
      missing = [] if is_folder(path) else [path]
    else:
      _, missing = _existing_ancestor(os.path.abspath(path))
    make_folders(path)
    created.extend(missing)
  try:
    yield list(paths)
  except BaseException:
    for folder in reversed(created):
      _remove_empty_folder(folder)
    raise


def _remove_empty_folder(folder: str):
  """Removes `folder` if it is empty (nothing happens otherwise: something else was written there meanwhile)."""
  if is_remote(folder):
    with contextlib.suppress(Exception):  # the run's own error is the one to report
      if not list_folder(folder):
        _gfile().rmtree(folder)
    return
  with contextlib.suppress(OSError):
    os.rmdir(folder)


def remove(path: str):
  """Removes the file `path` (local or remote) if it is there."""
  if is_remote(path):
    with _remote(path, OutputError):
      if _remote_kind(path) == "file":
        _gfile().remove(path)
    return
  with contextlib.suppress(FileNotFoundError):
    os.remove(path)


def remove_tree(path: str):
  """Removes the folder `path` (local or remote) and everything in it, or the file `path`; nothing when it is not
  there. Errors are not raised: this cleans up after a run whose own error is the one to report."""
  kind = _kind(path) if not is_remote(path) else _quiet_remote_kind(path)
  if kind is None:
    return
  if kind == "file":
    with contextlib.suppress(Exception):
      remove(path)
  elif is_remote(path):
    for child in sorted(paths_under(path), reverse=True):  # files before their folders
      with contextlib.suppress(Exception):
        if _remote_kind(child) == "file":
          _gfile().remove(child)
    with contextlib.suppress(Exception):
      _gfile().rmtree(path)  # the folders' own objects
  else:
    shutil.rmtree(path, ignore_errors=True)


def _quiet_remote_kind(path: str) -> Optional[str]:
  try:
    return _remote_kind(path)
  except Exception:  # pylint: disable=broad-except; an unreachable bucket has nothing to clean up here
    return None


def rename(source: str, destination: str, overwrite: bool = True):
  """Renames the file `source` to `destination` (on one file system; on a bucket, a copy then a delete)."""
  if is_remote(source) or is_remote(destination):
    with _remote(destination, OutputError):
      _gfile().rename(source, destination, overwrite=overwrite)
    return
  if not overwrite and os.path.lexists(destination):
    raise OutputError(f"Could not write {destination}: it already exists.")
  try:
    os.replace(source, destination)
  except OSError as error:
    raise OutputError(f"Could not write {destination}: {error.strerror or error}.") from None


def copy_file(source: str, destination: str):
  """Copies the file `source` to `destination`, each local or remote, whole or not at all."""
  if not (is_remote(source) or is_remote(destination)):
    partial = partial_path(destination)
    try:
      shutil.copyfile(source, partial)
      os.replace(partial, destination)
    except BaseException as error:
      remove(partial)
      if isinstance(error, OSError):
        raise OutputError(f"Could not copy {source} to {destination}: {error.strerror or error}.") from None
      raise
    return
  write_atomically(destination, read_bytes(source))


def partial_path(path: str) -> str:
  """Where `path` (local or remote) is written until it is complete: a hidden file beside it, unique to this
  host, process and call (`pretraining_corpus.remove_stale_work` recognises the name)."""
  directory, name = path.rsplit("/", 1) if "/" in path else (".", path)
  return f"{directory}/.{name}.partial-{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:12]}"


def write_atomically(path: str, content: Union[str, bytes]) -> str:
  """Writes `content` (text as UTF-8) to a local or remote `path`, whole or not at all: to a partial file beside
  it, then renamed into place. Returns `path`.

  Raises:
    OutputError: the file cannot be written (no space, no permission); no partial file is left behind.
  """
  partial = partial_path(path)
  try:
    with open_file(partial, "wb") as writer:
      writer.write(content.encode("utf-8") if isinstance(content, str) else content)
    rename(partial, path)
  except BaseException as error:  # Ctrl-C too: leave nothing half-written behind
    with contextlib.suppress(Exception):
      remove(partial)
    if isinstance(error, OSError) and not isinstance(error, OutputError):
      raise OutputError(f"Could not write {path}: {error.strerror or error}.") from None
    raise
  return path


def write_json(path: str, value: Any, **json_options) -> str:
  """Writes `value` as a JSON file (UTF-8, a line break at the end), whole or not at all; `json_options` as
  `json.dumps`'s (default: indented by 2, non-ASCII kept). Returns `path`."""
  options = {"indent": 2, "ensure_ascii": False, **json_options}
  return write_atomically(path, json.dumps(value, **options) + "\n")


def write_output_file(path: str, content: Union[str, bytes]) -> str:
  """Writes a result file the user named (checked by `check_output_files` before the work), whole or not at all
  (`write_atomically`), its folder made first if needed. Returns `path`."""
  with output_folders([parent(path)]):
    return write_atomically(path, content)


@contextlib.contextmanager
def local_temp_folder(prefix: str = "albert_tf.") -> Iterator[str]:
  """A new local temporary folder, removed with all it holds when the block ends: for spill files and for what a
  library writes only to local disk (SentencePiece's trainer, tf2onnx) before it is published."""
  folder = tempfile.mkdtemp(prefix=prefix)
  try:
    yield folder
  finally:
    shutil.rmtree(folder, ignore_errors=True)


@contextlib.contextmanager
def local_copy(path: str) -> Iterator[str]:
  """A local path holding what the file or folder `path` holds, for libraries that read local files only: `path`
  itself when local, else a copy in a temporary folder, removed when the block ends."""
  if not is_remote(path):
    yield path
    return
  with local_temp_folder() as folder:
    local = os.path.join(folder, os.path.basename(path.rstrip("/")))
    if is_folder(path):
      for remote_path in sorted(paths_under(path)):
        target = os.path.join(local, os.path.relpath(remote_path, path))
        if is_folder(remote_path):
          os.makedirs(target, exist_ok=True)
        else:
          os.makedirs(os.path.dirname(target), exist_ok=True)
          with open(target, "wb") as writer:
            writer.write(read_bytes(remote_path))
      os.makedirs(local, exist_ok=True)
    else:
      with open(local, "wb") as writer:
        writer.write(read_bytes(path))
    yield local


@contextlib.contextmanager
def staged_folder(destination: str, *complete_markers: str) -> Iterator[str]:
  """Yields a new local folder to write a folder's files into; when the block succeeds they are published at
  `destination` whole or not at all, and nothing is left anywhere when it fails (Ctrl-C too).

  On local disk a new folder is staged beside `destination` and renamed into place; when `destination` exists
  (files added to a folder, `--overwrite`), it is staged inside it, where the user may write (its parent perhaps
  not), and each file is renamed into it with the `complete_markers` last. On a
  bucket, where nothing is renamed, the files are staged in a local temporary folder and uploaded one by one, the
  `complete_markers` (paths relative to the folder: "saved_model.pb", "config.json") last and in their order, so
  that a reader never takes a half-written folder for a whole one; an upload that fails removes what it had
  uploaded.
  """
  if is_remote(destination):
    with local_temp_folder(prefix=".staged.") as staging:
      yield staging
      _upload_folder(staging, destination, complete_markers)
    return
  destination = os.path.abspath(destination)
  if os.path.isdir(destination):
    staging = os.path.join(destination, os.path.basename(partial_path(destination)))
  else:
    make_folders(os.path.dirname(destination))
    staging = partial_path(destination)
  # Named as `partial_path` names files; made with the umask's mode (mkdtemp's would be 0700 once renamed).
  staging = staging.replace(".partial-", ".incomplete-", 1)
  os.mkdir(staging)
  try:
    yield staging
    if not os.path.lexists(destination):
      os.replace(staging, destination)
      return
    _move_files_into(staging, destination, complete_markers)
  finally:
    shutil.rmtree(staging, ignore_errors=True)


def _files_markers_last(folder: str, complete_markers: Sequence[str]) -> List[str]:
  """The files below the local `folder`, relative to it, sorted, then the `complete_markers` in their order."""
  names = sorted(os.path.relpath(os.path.join(root, name), folder) for root, _, names in os.walk(folder)
                 for name in names)
  rank = {marker: rank for rank, marker in enumerate(complete_markers, 1)}
  return sorted(names, key=lambda name: rank.get(name, 0))


def _move_files_into(staging: str, destination: str, complete_markers: Sequence[str]):
  for name in _files_markers_last(staging, complete_markers):
    target = os.path.join(destination, name)
    os.makedirs(os.path.dirname(target), exist_ok=True)
    if os.path.isdir(target):
      raise OutputError(f"Could not write {target}: it is a folder.")
    os.replace(os.path.join(staging, name), target)


def _upload_folder(staging: str, destination: str, complete_markers: Sequence[str]):
  uploaded = []
  created = [] if is_folder(destination) else [destination]
  # Empty folders too (a sentence-transformers module folder may hold nothing): a bucket keeps them as objects.
  empty = [os.path.relpath(root, staging) for root, folders, names in os.walk(staging) if not folders + names]
  try:
    for name in empty:
      folder = f"{destination.rstrip('/')}/{name}"
      if not is_folder(folder):
        created.append(folder)
        make_folders(folder)
    for name in _files_markers_last(staging, complete_markers):
      target = f"{destination.rstrip('/')}/{name}"
      folder = parent(target)
      if not is_folder(folder):
        created.append(folder)
        make_folders(folder)
      with open(os.path.join(staging, name), "rb") as reader:
        write_atomically(target, reader.read())
      uploaded.append(target)
  except BaseException:
    for target in reversed(uploaded):
      with contextlib.suppress(Exception):
        remove(target)
    for folder in sorted(set(created), key=len, reverse=True):
      _remove_empty_folder(folder)
    raise


def modification_time_ns(path: str) -> int:
  """When the local or remote file `path` was last written, in nanoseconds since the epoch (to the file system's
  resolution): with its size, what tells a file rewritten since it was last read.

  Raises:
    InputFileError: the file does not exist or cannot be reached.
  """
  if is_remote(path):
    with _remote(path):
      return _gfile().stat(path).mtime_nsec
  try:
    return os.stat(path).st_mtime_ns
  except OSError as error:
    raise InputFileError(f"{path}: cannot be read ({error.strerror or error}).") from None
