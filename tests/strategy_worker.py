"""Runs one training job in its own process, for tests that need a fresh TensorFlow runtime.

  python strategy_worker.py JOB OPTIONS_JSON RESULT_NPZ [--logical_cpus=N] [--strategy_type=...]

JOB is `pretraining` (OPTIONS_JSON holds `PretrainingOptions` fields) or `classifier` (`FineTuningOptions`
fields plus `task_name`, trained with do_eval and do_predict); albert_config is a dict. The final
trainable weights, the last loss and, for the classifier, the dev metrics and test outputs are saved to
RESULT_NPZ.
"""

import json
import sys

import tensorflow as tf


def main(job, options_file, result_file, logical_cpus=1, strategy_type="one_device"):
  if logical_cpus > 1:
    # Two CPU devices let MirroredStrategy run two replicas on a machine without GPUs.
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * logical_cpus)
  import numpy as np
  from albert_tf import distribution, finetuning, pretraining, tasks
  from albert_tf.config import AlbertConfig
  with open(options_file) as reader:
    values = json.load(reader)
  values["albert_config"] = AlbertConfig.from_dict(values["albert_config"])
  strategy = distribution.get_strategy(strategy_type)
  results = {"replicas": strategy.num_replicas_in_sync}
  if job == "pretraining":
    run = pretraining.Pretraining(pretraining.PretrainingOptions(**values), strategy)
    results["loss"] = run.train()["loss"]
  else:
    objective = finetuning.ClassifierObjective(tasks.get_task(values.pop("task_name")))
    run = finetuning.FineTuning(finetuning.FineTuningOptions(**values), objective, strategy)
    results["loss"] = run.train()["loss"]
    results.update({f"eval_{name}": value for name, value in run.last_eval.items()})
    results["test_outputs"] = run._outputs(run.splits["test"], values["predict_batch_size"])
  np.savez(result_file, **results, **{f"w{i}": v.numpy() for i, v in enumerate(run.model.trainable_variables)})


if __name__ == "__main__":
  flags = dict(arg[2:].split("=", 1) for arg in sys.argv[4:])
  main(sys.argv[1], sys.argv[2], sys.argv[3], int(flags.get("logical_cpus", 1)),
       flags.get("strategy_type", "one_device"))
