"""Running the absl tools: our own progress lines, and bad input ending with one clear line on stderr; and running
a tool inside a Python process (a notebook, a test) as its command would run (`run_in_process`).

Importing this package quiets the C++ logs of TensorFlow for the process (and the processes it starts),
unless the command line asks for absl's debug verbosity (see `SHOW_LIBRARY_LOGS`), and makes `tf.keras` the
project's tf_keras rather than Keras 3 (`TF_USE_LEGACY_KERAS`), unless the environment says otherwise.
"""

import contextlib
import importlib.util
import logging
import os
import signal
import sys
import tempfile
from typing import Callable, Sequence

from absl import app
from absl import flags
from absl import logging as absl_logging

from albert_tf.errors import AlbertError, OptionError


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
# Where the user's level keeps errors on a machine without a driver, `run` drops that one line
# (`_without_cuinit_line`): TensorFlow calls cuInit whatever CUDA_VISIBLE_DEVICES says ("" and -1 included), and
# the level, read once, cannot be raised for that call alone.
if not SHOW_LIBRARY_LOGS:
  os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2" if _has_nvidia_driver() else "3")

# The project's Keras is tf_keras; TensorFlow 2.20's import loads Keras 3's optimizers as well unless
# TF_USE_LEGACY_KERAS is set then (2.4 s of every command here, measured with `python -c "import ..."`). So the
# commands set it, as they set the log level; a value the user set is kept, and the library does not set it.
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")

_CUINIT_FAILURE = b"failed call to cuInit"

# Found without importing them: the data tool runs without TensorFlow.
_FRAMEWORK_DIRS = tuple(os.path.dirname(importlib.util.find_spec(name).origin) + os.sep
                        for name in ("tensorflow", "tf_keras"))


class _FrameworkInfoFilter(logging.Filter):
  """Drops INFO lines that TensorFlow and tf_keras log through absl (SavedModel tracing, saver internals)."""

  def filter(self, record):
    return record.levelno > logging.INFO or not record.pathname.startswith(_FRAMEWORK_DIRS)


def _without_cuinit_line(call):
  """`call()`; what is written to stderr meanwhile (C++ code writes to file descriptor 2) is written after it, but
  for the "failed call to cuInit" line."""
  sys.stderr.flush()
  with tempfile.TemporaryFile() as captured:
    stderr = os.dup(2)
    os.dup2(captured.fileno(), 2)
    try:
      call()
    finally:
      os.dup2(stderr, 2)
      os.close(stderr)
      captured.seek(0)
      with open(2, "wb", closefd=False) as restored:
        restored.writelines(line for line in captured if _CUINIT_FAILURE not in line)


def run(main, usage: str | None = None, flags_parser=app.parse_flags_with_usage):
  """`absl.app.run(main, flags_parser=flags_parser)`, printing `error: <message>` and exiting with status 2 on
  bad input.

  `usage` is the text --help and --helpfull print above the flags (default: the docstring of `main`'s module), and
  the flags `main`'s module defines are the ones --help lists.
  """

  if not SHOW_LIBRARY_LOGS and "tensorflow" in sys.modules and not _has_nvidia_driver():
    # TensorFlow calls cuInit when it first lists its devices, once a process (absl's app.run has it list them,
    # after parsing the flags): list them here first, without that line.
    _without_cuinit_line(sys.modules["tensorflow"].config.list_physical_devices)

  def guarded_main(argv):
    with contextlib.ExitStack() as quieted:
      if not SHOW_LIBRARY_LOGS:
        # TensorFlow's own INFO lines would bury the progress lines; Apache Beam's runners log every worker's
        # start and options as warnings. Put back afterwards, for a run inside a process that goes on.
        for name, level in (("tensorflow", logging.WARNING), ("apache_beam", logging.ERROR)):
          logger = logging.getLogger(name)
          quieted.callback(logger.setLevel, logger.level)
          logger.setLevel(level)
        handler, framework_filter = absl_logging.get_absl_handler(), _FrameworkInfoFilter()
        handler.addFilter(framework_filter)
        quieted.callback(handler.removeFilter, framework_filter)
      return _main_reporting_bad_input(main, argv)

  # absl prints __main__'s docstring and the key flags of the module named sys.argv[0]; an installed command's
  # __main__ is pip's wrapper script, which has neither, and a tool's main may live in its task's package.
  main_module = sys.modules["__main__"]
  main_doc = main_module.__doc__
  main_module.__doc__ = usage or main.__globals__["__doc__"]
  for flag in flags.FLAGS.get_flags_for_module(main.__module__):
    flags.FLAGS.register_key_flag_for_module(sys.argv[0], flag)
  try:
    app.run(guarded_main, flags_parser=flags_parser)
  finally:
    main_module.__doc__ = main_doc  # a run inside a process that goes on


def _main_reporting_bad_input(main, argv):
  """`main(argv)`; bad input (our errors) ends it with one `error:` line and status 2, Ctrl-C with status 130."""
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


def _raise_keyboard_interrupt(signum, frame):
  raise KeyboardInterrupt(f"signal {signum}")


@contextlib.contextmanager
def sigterm_as_interrupt():
  """Inside the block SIGTERM stops the run as Ctrl-C does (what it was writing is removed on the way out, no
  partial output stays); the previous handler is put back after."""
  previous = signal.signal(signal.SIGTERM, _raise_keyboard_interrupt)
  try:
    yield
  finally:
    signal.signal(signal.SIGTERM, previous)


@contextlib.contextmanager
def _fresh_flag_registry():
  """absl's global `FLAGS` holds a new, empty registry inside the block, plus absl's own flags (logging, app); the
  process's registry is put back after. A tool's flags, defined in it and parsed there, then clash with no flag of
  the process or of another tool, and leave nothing behind."""
  registry = flags.FLAGS
  absl_own = [(module, flag) for module, module_flags in registry.flags_by_module_dict().items()
              if module.startswith("absl.") for flag in module_flags]
  saved = dict(registry.__dict__)
  registry.__dict__.clear()
  registry.__dict__.update(flags.FlagValues().__dict__)
  try:
    for module, flag in absl_own:
      flags.DEFINE_flag(flag, registry, module_name=module)
    yield
  finally:
    for _, flag in absl_own:
      flag.unparse()
    registry.__dict__.clear()
    registry.__dict__.update(saved)


def run_in_process(module_spec, argv: Sequence[str]) -> int:
  """Runs a tool in this process as the command line `argv` would, and returns its exit status.

  The tool's module (`module_spec`, an `importlib` spec of a script of `tools/`, `benchmarks/` or of
  `albert_tf.cli.demo`) is executed afresh and its `run()` called, with absl's flags defined and parsed in a
  registry of their own (see `_fresh_flag_registry`): tools that share flag names run one after another, as the
  same tool twice does. Bad input gives our `error:` line and status 2, a usage error absl's message and 1, as in a
  new process; any other exception (a bug) propagates with its traceback.
  """

  def load_and_run():
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    module.run()

  return _exit_status_in_process(module_spec.origin, argv, load_and_run)


def run_command_in_process(define_flags: Callable[[], None], main: Callable, argv: Sequence[str],
                           usage: str | None = None) -> int:
  """Runs the command of `define_flags` and `main` (as a task package's `command` module has them) in this
  process, as `run_in_process` runs a tool: its flags in a registry of their own, its exit status returned."""

  def define_and_run():
    define_flags()
    run(main, usage)

  return _exit_status_in_process(argv[0], argv, define_and_run)


def check_command_line(define_flags: Callable[[], None], argv: Sequence[str],
                       preflight: Callable[[], None] | None = None) -> None:
  """Parses `argv` with the flags of `define_flags` (in a registry of their own) and raises an OptionError with
  absl's message if it would not parse: an unknown flag, a bad value, a required flag missing. Then
  `preflight()`, with those flags parsed, checks what the command would refuse before any work (its own errors
  propagate). Nothing runs."""
  with _fresh_flag_registry():
    define_flags()
    try:
      flags.FLAGS(list(argv))
      flags.FLAGS.validate_all_flags()
    except flags.Error as error:
      raise OptionError(str(error)) from None
    if preflight:
      preflight()


def _exit_status_in_process(program: str, argv: Sequence[str], call: Callable[[], None]) -> int:
  """`call()` with `sys.argv` set to `program` and `argv[1:]`, in a flag registry of its own; its exit status."""
  app.define_help_flags()  # once per process, in its own registry (as app.run does), so every run has --helpfull
  saved_argv = sys.argv
  sys.argv = [program, *argv[1:]]
  try:
    with _fresh_flag_registry():
      call()
  except SystemExit as exit_:
    if isinstance(exit_.code, str):  # sys.exit("message"): Python prints it and exits with 1
      print(exit_.code, file=sys.stderr)
      return 1
    return exit_.code or 0
  finally:
    sys.argv = saved_argv
  return 0
