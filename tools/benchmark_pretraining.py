"""Benchmarks the full pretraining step (MLM + SOP + LAMB) on synthetic batches; no data files needed.

  python tools/benchmark_pretraining.py --albert_config_file=configs/albert_base.json \
      --train_batch_size=32 --max_seq_length=128 --mixed_precision=bfloat16

Prints the configuration, peak memory and, as its last line, `examples_per_second: X`.
"""

import resource
import time

from absl import flags

# Before TensorFlow: it sets TensorFlow's log level, which TensorFlow reads once, on import.
from albert_tf import cli  # pylint: disable=g-bad-import-order
import tensorflow as tf

from albert_tf.cli import strategy_flags
from albert_tf.modeling.config import AlbertConfig
from albert_tf.modeling.pretrainer import AlbertPretrainer
from albert_tf.training import loop
from albert_tf.training.pretraining_objective import PretrainingObjective

FLAGS = flags.FLAGS

flags.DEFINE_string("albert_config_file", None, "The albert_config.json of the model.")
flags.DEFINE_integer("train_batch_size", 32, "Global batch size.")
flags.DEFINE_integer("max_seq_length", 128, "Sequence length.")
flags.DEFINE_integer("max_predictions_per_seq", 20, "Masked positions per sequence.")
flags.DEFINE_enum("mixed_precision", "float32", list(loop.MIXED_PRECISION), "Compute dtype.")
strategy_flags.define_strategy_flags()
flags.DEFINE_bool("jit_compile", False, "Compile the step with XLA.")
flags.DEFINE_integer("warmup_steps", 3, "Steps run before timing (tracing, compilation).")
flags.DEFINE_integer("timed_steps", 20, "Steps timed, inside one tf.function call.")


def synthetic_batch(config: AlbertConfig, batch_size: int, seq_length: int, predictions: int):
  """A fixed batch of valid ids, full masks, two segments and masked positions."""
  rng = tf.random.Generator.from_seed(0)
  ids = rng.uniform([batch_size, seq_length], 5, config.vocab_size, tf.int32)
  return {
      "input_word_ids": ids,
      "input_mask": tf.ones_like(ids),
      "input_type_ids": tf.concat([tf.zeros([batch_size, seq_length // 2], tf.int32),
                                   tf.ones([batch_size, seq_length - seq_length // 2], tf.int32)], axis=1),
      "masked_lm_positions": tf.tile(tf.range(1, predictions + 1)[tf.newaxis], [batch_size, 1]),
      "masked_lm_ids": rng.uniform([batch_size, predictions], 5, config.vocab_size, tf.int32),
      "masked_lm_weights": tf.ones([batch_size, predictions], tf.float32),
      "sentence_order_labels": rng.uniform([batch_size], 0, 2, tf.int32),
  }


def main(argv):
  del argv
  config = AlbertConfig.from_json_file(FLAGS.albert_config_file)
  strategy = strategy_flags.strategy_from_flags()
  with loop.run_settings(FLAGS.mixed_precision, seed=0), strategy.scope():
    model = AlbertPretrainer(config)
    model(model.dummy_inputs(), training=False)  # the step differentiates the built variables
    optimizer = loop.create_optimizer(model, FLAGS.mixed_precision, loop.OptimizerSettings("lamb", 1e-4, 10000, 100))
  batch = synthetic_batch(config, FLAGS.train_batch_size // strategy.num_replicas_in_sync, FLAGS.max_seq_length,
                          FLAGS.max_predictions_per_seq)
  dataset = strategy.experimental_distribute_dataset(
      tf.data.Dataset.from_tensors(batch).repeat(),
      tf.distribute.InputOptions(experimental_fetch_to_device=True))
  iterator = iter(dataset)
  step = loop.replica_train_step(model, optimizer, PretrainingObjective().replica_loss(model, FLAGS.train_batch_size),
                                 FLAGS.mixed_precision == "float16", FLAGS.jit_compile)

  @tf.function
  def run_steps(num_steps):
    total = tf.constant(0.0)
    for _ in tf.range(num_steps):
      sums = strategy.reduce(tf.distribute.ReduceOp.SUM, strategy.run(step, args=(next(iterator),)), axis=None)
      total += sums[0]
    return total

  run_steps(tf.constant(FLAGS.warmup_steps)).numpy()
  start = time.time()
  run_steps(tf.constant(FLAGS.timed_steps)).numpy()
  seconds = time.time() - start
  examples_per_second = FLAGS.timed_steps * FLAGS.train_batch_size / seconds
  gpus = tf.config.list_logical_devices("GPU")
  print(f"config: {FLAGS.albert_config_file} ({model.count_params():,} parameters), batch "
        f"{FLAGS.train_batch_size}, seq {FLAGS.max_seq_length}, {FLAGS.mixed_precision}, "
        f"{strategy.num_replicas_in_sync} replica(s), jit_compile={FLAGS.jit_compile}")
  print(f"seconds_per_step: {seconds / FLAGS.timed_steps:.4f}")
  if gpus:
    print(f"peak_gpu_memory_mb: {tf.config.experimental.get_memory_info('GPU:0')['peak'] / 2**20:.0f}")
  print(f"peak_host_rss_mb: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f}")
  print(f"examples_per_second: {examples_per_second:.1f}")


def run():
  """The `albert-benchmark-pretraining` command."""
  flags.mark_flags_as_required(["albert_config_file"])
  cli.run(main)


if __name__ == "__main__":
  run()
