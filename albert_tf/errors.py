"""The errors that describe a user's input or a run that cannot go on.

Tools print their message on one line and exit with status 2 (`albert_tf.cli.run`); any other exception is
a bug and keeps its traceback. Each also derives from the built-in type callers would catch without us
(`ValueError`, `FileNotFoundError`, `RuntimeError`). `json_error_text` is how a message quotes a JSON syntax error.
"""

import json


class AlbertError(Exception):
  """Bad input or a run that cannot go on, told in a message that names the problem."""


class InputFileError(AlbertError, FileNotFoundError):
  """A file or directory the user named does not exist (or a glob matches nothing)."""


class OptionError(AlbertError, ValueError):
  """An option (a flag) out of its range or inconsistent with the others."""


class DataError(AlbertError, ValueError):
  """An input file that exists but cannot be used: not UTF-8, empty, corrupt, of another layout."""


class TrainingError(AlbertError, RuntimeError):
  """Training cannot go on (non-finite loss, a run directory that does not fit): nothing more is written."""


class OutputError(AlbertError, OSError):
  """An output that cannot be written (no space left, no permission); nothing partial is left behind."""


class CorpusError(DataError):
  """Input text that cannot be used: missing, empty, or not UTF-8."""


class TaskError(DataError):
  """A task name, format or data file that cannot be used."""


class AlbertConfigError(AlbertError, ValueError):
  """A config file or dict that does not describe a valid ALBERT model."""


class CheckpointMismatchError(AlbertError, ValueError):
  """A checkpoint whose variables do not fit the model; the message lists every difference."""


def json_error_text(error: json.JSONDecodeError, with_line: bool = True) -> str:
  """json's reason for `error` and where it is, to quote in a message: "Expecting ',' delimiter at line 3, column 5";
  "... at column 5" with `with_line` False, where the message names the line (a file of one JSON value a line)."""
  # Some of json's reasons end with "at" ("Unterminated string starting at"): say it once.
  place = f"line {error.lineno}, column {error.colno}" if with_line else f"column {error.colno}"
  return f"{error.msg.removesuffix(' at')} at {place}"
