"""The flags of the tools that train: `--strategy_type` and Google's TPU flags."""

from absl import flags

from albert_tf.training import distribution


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
