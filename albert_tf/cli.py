"""Running the absl tools: bad input ends with one clear line on stderr, not a traceback."""

import logging
import sys

from absl import app

from albert_tf.checkpoint import CheckpointMismatchError
from albert_tf.config import AlbertConfigError

# Errors that describe the user's input; anything else is a bug and keeps its traceback.
USER_ERRORS = (FileNotFoundError, AlbertConfigError, CheckpointMismatchError, ValueError)


def run(main):
  """`absl.app.run(main)`, printing `error: <message>` and exiting with status 2 on bad input."""

  def guarded_main(argv):
    # TensorFlow's own INFO lines (saver internals) would bury the progress lines.
    logging.getLogger("tensorflow").setLevel(logging.WARNING)
    try:
      return main(argv)
    except USER_ERRORS as error:
      print(f"error: {error}", file=sys.stderr)
      sys.exit(2)

  app.run(guarded_main)
