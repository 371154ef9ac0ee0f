"""Training jobs, run by a test in its own process or in a worker process of a multi-worker run.

  python strategy_worker.py JOB OPTIONS_JSON RESULT_NPZ [JOB OPTIONS_JSON RESULT_NPZ ...] [--strategy_type=...]
      [--input_pipelines=N]

A process runs its jobs one after the other on one strategy: a pair of workers pays its TensorFlow import and
its cluster's setup once for all of them. JOB is `pretraining` (OPTIONS_JSON holds `PretrainingOptions` fields)
or `classifier` (`FineTuningOptions` fields plus `task_name`, trained with do_eval and do_predict); albert_config
is a dict. The final trainable weights, the last loss, what this process's input pipeline reads of the first epoch
(records, or example indices) and, for the classifier, the dev metrics and test outputs are saved to RESULT_NPZ.
`--input_pipelines=N` (pretraining on one device) feeds each step the global batch that N input pipelines
(hosts) would deliver together: the one-device twin of an N-worker run. In a test's process (conftest gives it
two logical CPUs), `strategy_type="mirrored"` runs two replicas.
"""

import dataclasses
import json
import os
import sys

if __name__ == "__main__":
  # A worker process: `tf.keras` as tf_keras, the Keras the library uses (it never uses `tf.keras`), so that
  # `import tensorflow` does not also import Keras 3, about 1.4 s of each worker's start. Tests that import
  # this module have imported TensorFlow already, and their environment stays as it is.
  os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")

import tensorflow as tf  # pylint: disable=wrong-import-position


def global_batches_of_pipelines(run, num_pipelines):
  """The training input of `run`, one step = the per-host batches of `num_pipelines` hosts, concatenated."""
  from albert_tf.data import pretraining_dataset, record_files
  o = run.options
  counts = record_files.count_records(run.train_files)
  per_pipeline = tuple(
      pretraining_dataset.pretraining_dataset(
          run.train_files, o.max_seq_length, o.max_predictions_per_seq, o.train_batch_size // num_pipelines,
          input_context=tf.distribute.InputContext(num_pipelines, index, num_pipelines), seed=o.random_seed,
          record_counts=counts)
      for index in range(num_pipelines))
  batches = tf.data.Dataset.zip(per_pipeline).map(
      lambda *parts: tf.nest.map_structure(lambda *tensors: tf.concat(tensors, 0), *parts))
  return run.strategy.experimental_distribute_dataset(batches)


def input_context_of(run_strategy) -> tf.distribute.InputContext:
  """The input context `distribute_datasets_from_function` gives this process (host) under `run_strategy`."""
  contexts = []
  run_strategy.distribute_datasets_from_function(lambda context: contexts.append(context) or tf.data.Dataset.range(1))
  return contexts[0]


def pretraining_epoch_of_this_host(run):
  """(input ids, masked positions) of every record this host's input pipeline reads in the first epoch of the
  training stream (which evaluation reads once), as the run's strategy shares the files among hosts."""
  from albert_tf.data import pretraining_dataset
  o = run.options
  epoch = pretraining_dataset.pretraining_dataset(
      run.train_files, o.max_seq_length, o.max_predictions_per_seq, 1, is_training=False,
      input_context=input_context_of(run.strategy), seed=o.random_seed)
  batches = list(epoch)
  return (tf.concat([batch["input_word_ids"] for batch in batches], 0).numpy(),
          tf.concat([batch["masked_lm_positions"] for batch in batches], 0).numpy())


def finetuning_epoch_of_this_host(run):
  """The example indices this host's input pipeline reads of the first epoch of the training stream."""
  from albert_tf.data import finetuning_dataset
  context = input_context_of(run.strategy)
  split = run.splits["train"]
  share = len(range(context.input_pipeline_id, split.num_examples, context.num_input_pipelines))
  stream = finetuning_dataset.training_dataset(split, 1, run.options.random_seed, input_context=context)
  return [int(batch["example_index"][0]) for batch in stream.take(share)]


def strategy(strategy_type):
  """`distribution.get_strategy(strategy_type)`; a `mirrored` one gets collective keys of its own."""
  from albert_tf.training import distribution
  if strategy_type == "mirrored":
    # The runtime keeps what each collective key was first used for, and every strategy numbers its keys from
    # the same start: a second strategy of this process would reuse a key for a tensor of another shape.
    # A new base per strategy, as TensorFlow's own tests do ("only set this in tests").
    tf.distribute.MirroredStrategy._collective_key_base += 10000  # pylint: disable=protected-access
  return distribution.get_strategy(strategy_type)


def write_options(path, run_options, **extra) -> str:
  """Writes `run_options` (and `extra` fields, such as a classifier's `task_name`) as `main` reads them."""
  values = dataclasses.asdict(run_options)
  values.update(albert_config=run_options.albert_config.to_dict(), **extra)
  with open(path, "w") as writer:
    json.dump(values, writer)
  return str(path)


def main(job, options_file, result_file, strategy_type="one_device", input_pipelines=1):
  run_job(job, options_file, result_file, strategy(strategy_type), input_pipelines)


def run_job(job, options_file, result_file, run_strategy, input_pipelines=1):
  import numpy as np
  from albert_tf.tasks.classification import catalogue
  from albert_tf.tasks.classification import objective as classification_objective
  from albert_tf.modeling.config import AlbertConfig
  from albert_tf.training import finetuning, pretraining
  with open(options_file) as reader:
    values = json.load(reader)
  values["albert_config"] = AlbertConfig.from_dict(values["albert_config"])
  results = {"replicas": run_strategy.num_replicas_in_sync}
  if job == "pretraining":
    run = pretraining.Pretraining(pretraining.PretrainingOptions(**values), run_strategy)
    if input_pipelines > 1:
      run._train_dataset = lambda: global_batches_of_pipelines(run, input_pipelines)
    results["loss"] = run.train()["loss"]
    results["epoch_input_ids"], results["epoch_masked_positions"] = pretraining_epoch_of_this_host(run)
  else:
    objective = classification_objective.ClassifierObjective(catalogue.get_task(values.pop("task_name")))
    run = finetuning.FineTuning(finetuning.FineTuningOptions(**values), objective, run_strategy)
    results["loss"] = run.train()["loss"]
    results.update({f"eval_{name}": value for name, value in run.last_eval.items()})
    results["test_outputs"] = run._outputs(run.splits["test"], values["predict_batch_size"])
    results["epoch_examples"] = finetuning_epoch_of_this_host(run)
  np.savez(result_file, **results, **{f"w{i}": v.numpy() for i, v in enumerate(run.model.trainable_variables)})


if __name__ == "__main__":
  jobs = [arg for arg in sys.argv[1:] if not arg.startswith("--")]
  flags = dict(arg[2:].split("=", 1) for arg in sys.argv[1:] if arg.startswith("--"))
  # One strategy for every job: a second MultiWorkerMirroredStrategy would set up the cluster again.
  worker_strategy = strategy(flags.get("strategy_type", "one_device"))
  for start in range(0, len(jobs), 3):
    run_job(*jobs[start:start + 3], worker_strategy, int(flags.get("input_pipelines", 1)))
