"""Flags the data tools share: the shuffle's memory budget, and `--runner`, after which Apache Beam's own
pipeline options follow ours on the command line:

  python tools/create_pretraining_data.py ... --runner=DataflowRunner --project=p --region=r \
      --temp_location=gs://b/tmp

absl would refuse flags it does not know, so these tools parse only their own and pass the rest to Beam.
"""

import importlib
import sys
from typing import List

from absl import flags

from albert_tf.errors import OptionError

FLAGS = flags.FLAGS


def define_data_flags():
  flags.DEFINE_integer("shuffle_memory_mb", 1024, "Memory budget of the global shuffle: the most records (in MB) "
                       "held at once, by this process or, with --runner, by one Beam worker. The output does not "
                       "depend on it.", lower_bound=1)
  define_runner_flag()


def define_runner_flag():
  flags.DEFINE_string("runner", None, "Run as an Apache Beam pipeline on this runner (DirectRunner, "
                      "DataflowRunner, FlinkRunner, SparkRunner, PortableRunner); Beam's pipeline options "
                      "(--project, --region, --temp_location, --direct_num_workers, ...) follow ours.")


def parse_flags_leaving_pipeline_options(argv: List[str]) -> List[str]:
  """A `flags_parser` for `cli.run`: our flags are parsed, the others are left in the argv `main` receives."""
  try:
    return FLAGS(argv, known_only=True)
  except flags.Error as error:
    # As absl's own parser reports a bad flag.
    print(f"FATAL Flags parsing error: {error}\nPass --helpshort or --helpfull to see help on flags.",
          file=sys.stderr)
    sys.exit(1)


def pipeline_args(argv: List[str]) -> List[str]:
  """Beam's pipeline options: `--runner` and the flags left in `argv`.

  Raises:
    OptionError: flags that are not ours without `--runner`: a typo, not a pipeline option.
  """
  if argv[1:] and not FLAGS.runner:
    raise OptionError(f"Unknown flag(s): {' '.join(argv[1:])} (Beam's pipeline options need --runner).")
  return [f"--runner={FLAGS.runner}"] + argv[1:] if FLAGS.runner else []


def beam_engine(module: str = "pretraining_beam"):
  """The Beam engine `albert_tf.data.<module>`, or one clear error when Apache Beam (the `beam` extra) is not
  installed."""
  try:
    return importlib.import_module(f"albert_tf.data.{module}")
  except ImportError as error:
    raise OptionError(f"--runner needs Apache Beam ({error}): pip install 'albert-tf[beam]', or "
                      "pip install -e '.[beam]' in a checkout.") from None
