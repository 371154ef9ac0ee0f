"""Running the absl tools: bad input ends with one clear line on stderr, not a traceback."""

import logging
import os
import sys

from absl import app
from absl import logging as absl_logging
import tensorflow as tf
import tf_keras

from albert_tf.checkpoint import CheckpointMismatchError
from albert_tf.config import AlbertConfigError

# Errors that describe the user's input; anything else is a bug and keeps its traceback.
USER_ERRORS = (FileNotFoundError, AlbertConfigError, CheckpointMismatchError, ValueError)
_FRAMEWORK_DIRS = tuple(os.path.dirname(module.__file__) + os.sep for module in (tf, tf_keras))


class _FrameworkInfoFilter(logging.Filter):
  """Drops INFO lines that TensorFlow and tf_keras log through absl (SavedModel tracing, saver internals)."""

  def filter(self, record):
    return record.levelno > logging.INFO or not record.pathname.startswith(_FRAMEWORK_DIRS)


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
