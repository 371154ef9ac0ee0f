"""Running the absl tools: bad input ends with one clear line on stderr, not a traceback."""

import logging
import os
import sys

from absl import app
from absl import flags
from absl import logging as absl_logging
import tensorflow as tf
import tf_keras

from albert_tf import distribution
from albert_tf.checkpoint import CheckpointMismatchError
from albert_tf.config import AlbertConfigError
from albert_tf.training import TrainingError

# Errors that describe the user's input or a run that cannot go on; anything else is a bug and keeps its traceback.
USER_ERRORS = (FileNotFoundError, AlbertConfigError, CheckpointMismatchError, ValueError, TrainingError)
_FRAMEWORK_DIRS = tuple(os.path.dirname(module.__file__) + os.sep for module in (tf, tf_keras))


class _FrameworkInfoFilter(logging.Filter):
  """Drops INFO lines that TensorFlow and tf_keras log through absl (SavedModel tracing, saver internals)."""

  def filter(self, record):
    return record.levelno > logging.INFO or not record.pathname.startswith(_FRAMEWORK_DIRS)


def define_strategy_flags():
  """--strategy_type and Google's TPU flags (--tpu_name, --tpu_zone, --gcp_project)."""
  flags.DEFINE_enum("strategy_type", "one_device", distribution.STRATEGY_TYPES, "Distribution strategy.")
  flags.DEFINE_string("tpu_name", None, "Cloud TPU name or grpc:// address (--strategy_type=tpu).")
  flags.DEFINE_string("tpu_zone", None, "Cloud TPU zone.")
  flags.DEFINE_string("gcp_project", None, "Cloud project of the TPU.")


def strategy_from_flags():
  """The `tf.distribute.Strategy` of the flags of `define_strategy_flags`."""
  values = flags.FLAGS
  return distribution.get_strategy(values.strategy_type, values.tpu_name, values.tpu_zone, values.gcp_project)


def run(main):
  """`absl.app.run(main)`, printing `error: <message>` and exiting with status 2 on bad input."""

  def guarded_main(argv):
    # TensorFlow's own INFO lines would bury the progress lines.
    logging.getLogger("tensorflow").setLevel(logging.WARNING)
    absl_logging.get_absl_handler().addFilter(_FrameworkInfoFilter())
    try:
      return main(argv)
    except USER_ERRORS as error:
      print(f"error: {error}", file=sys.stderr)
      sys.exit(2)

  app.run(guarded_main)
