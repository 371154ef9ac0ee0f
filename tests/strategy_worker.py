"""Runs one pretraining job in its own process, for tests that need a fresh TensorFlow runtime.

  python pretraining_worker.py OPTIONS_JSON RESULT_NPZ [--logical_cpus=N] [--strategy_type=...]

OPTIONS_JSON holds `PretrainingOptions` fields (albert_config as a dict); the final trainable weights and
the last metrics are saved to RESULT_NPZ.
"""

import json
import sys

import tensorflow as tf


def main(options_file, result_file, logical_cpus=1, strategy_type="one_device"):
  if logical_cpus > 1:
    # Two CPU devices let MirroredStrategy run two replicas on a machine without GPUs.
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * logical_cpus)
  import numpy as np
  from albert_tf import distribution, pretraining
  from albert_tf.config import AlbertConfig
  with open(options_file) as reader:
    values = json.load(reader)
  values["albert_config"] = AlbertConfig.from_dict(values["albert_config"])
  options = pretraining.PretrainingOptions(**values)
  strategy = distribution.get_strategy(strategy_type)
  run = pretraining.Pretraining(options, strategy)
  metrics = run.train()
  np.savez(result_file, loss=metrics["loss"], replicas=strategy.num_replicas_in_sync,
           **{f"w{i}": v.numpy() for i, v in enumerate(run.model.trainable_variables)})


if __name__ == "__main__":
  flags = dict(arg[2:].split("=", 1) for arg in sys.argv[3:])
  main(sys.argv[1], sys.argv[2], int(flags.get("logical_cpus", 1)), flags.get("strategy_type", "one_device"))
