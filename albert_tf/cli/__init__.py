"""Running the absl tools: our own progress lines, and bad input ending with one clear line on stderr.

Importing this package quiets the C++ logs of TensorFlow for the process (and the processes it starts),
unless the command line asks for absl's debug verbosity; see `SHOW_LIBRARY_LOGS`.
"""

import importlib.util
import logging
import os
import sys

from absl import app
from absl import logging as absl_logging

from albert_tf.errors import AlbertError


def _debug_verbosity(argv) -> bool:
  """Whether `argv` passes absl's `--verbosity` (or `-v`, `--v`) at 1 (debug) or more; the last one counts.

  Read from the raw command line because absl parses it only later, in `app.run`; a --verbosity inside a
  --flagfile is not seen here.
  """
  verbosity = 0
  args = iter(argv[1:])
  for arg in args:
    if arg == "--":  # absl reads no flags after it
      break
    name, has_value, value = arg.lstrip("-").partition("=")
    if not arg.startswith("-") or name not in ("verbosity", "v"):
      continue
    if not has_value:
      value = next(args, "")
    try:
      verbosity = int(value)
    except ValueError:
      pass  # absl rejects it with a usage error
  return verbosity >= 1


def _has_nvidia_driver() -> bool:
  """Whether the machine has an NVIDIA driver (/dev/dxg: WSL2's), without loading CUDA."""
  return any(os.path.exists(path) for path in ("/proc/driver/nvidia", "/dev/nvidiactl", "/dev/dxg"))


# Whether this command shows TensorFlow's and SentencePiece's own logs: with --verbosity=1 (or -v 1) or more.
# By default the tools print our progress lines and results, not the libraries' INFO and WARNING lines
# (TensorFlow's "Local rendezvous is aborting with status: OUT_OF_RANGE" at the end of every dataset, CPU
# feature and oneDNN notices, SentencePiece's option listing).
SHOW_LIBRARY_LOGS = _debug_verbosity(sys.argv)

# TensorFlow reads TF_CPP_MIN_LOG_LEVEL once, when it first logs, which it does while it is imported; and the
# tools import it before absl parses the flags. So the level is set here, as every tool and the demo import
# this package before TensorFlow, and it is in the environment that worker processes (the data tool's
# forkserver) inherit. This package is the command's own: the library modules leave the environment alone.
# A TF_CPP_MIN_LOG_LEVEL the user set is kept. 2 keeps TensorFlow's C++ errors; 3 hides them too, and is
# used only where the machine has no NVIDIA driver: there the one error TensorFlow prints in every run is
# "failed call to cuInit" (it found no GPU, which such a machine does not have), while on a GPU machine that
# line means a broken CUDA setup, and training silently on the CPU, so it must show there. Errors that
# stop a run reach Python as exceptions either way, and --verbosity=1 shows every line.
if not SHOW_LIBRARY_LOGS:
  os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2" if _has_nvidia_driver() else "3")

# Found without importing them: the data tool runs without TensorFlow.
_FRAMEWORK_DIRS = tuple(os.path.dirname(importlib.util.find_spec(name).origin) + os.sep
                        for name in ("tensorflow", "tf_keras"))


class _FrameworkInfoFilter(logging.Filter):
  """Drops INFO lines that TensorFlow and tf_keras log through absl (SavedModel tracing, saver internals)."""

  def filter(self, record):
    return record.levelno > logging.INFO or not record.pathname.startswith(_FRAMEWORK_DIRS)


def run(main, flags_parser=app.parse_flags_with_usage):
  """`absl.app.run(main, flags_parser=flags_parser)`, printing `error: <message>` and exiting with status 2 on
  bad input."""

  def guarded_main(argv):
    if not SHOW_LIBRARY_LOGS:
      # TensorFlow's own INFO lines would bury the progress lines.
      logging.getLogger("tensorflow").setLevel(logging.WARNING)
      absl_logging.get_absl_handler().addFilter(_FrameworkInfoFilter())
      # Apache Beam's runners log every worker's start and options as warnings.
      logging.getLogger("apache_beam").setLevel(logging.ERROR)
    try:
      return main(argv)
    # Only our errors describe the user's input or a run that cannot go on; any other is a bug: its traceback stays.
    except AlbertError as error:
      print(f"error: {error}", file=sys.stderr)
      sys.exit(2)
    except KeyboardInterrupt:
      # Ctrl-C: what the run was writing has been removed on the way out; no traceback to read.
      print("interrupted", file=sys.stderr)
      sys.exit(130)

  app.run(guarded_main, flags_parser=flags_parser)
