"""Running the absl tools: bad input ends with one clear line on stderr, not a traceback."""

import importlib.util
import logging
import os
import sys

from absl import app
from absl import logging as absl_logging

from albert_tf.errors import AlbertError

# Found without importing them: the data tool runs without TensorFlow.
_FRAMEWORK_DIRS = tuple(os.path.dirname(importlib.util.find_spec(name).origin) + os.sep
                        for name in ("tensorflow", "tf_keras"))


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
    # Only our errors describe the user's input or a run that cannot go on; any other is a bug: its traceback stays.
    except AlbertError as error:
      print(f"error: {error}", file=sys.stderr)
      sys.exit(2)

  app.run(guarded_main)
