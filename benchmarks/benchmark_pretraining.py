"""Benchmarks the full pretraining step (MLM [+ SOP] + LAMB) on synthetic batches, or finds what fits.

  python benchmarks/benchmark_pretraining.py --albert_config_file=configs/albert_base.json \
      --train_batch_size=32 --max_seq_length=128 --mixed_precision=bfloat16

prints the configuration, peak memory and, as its last line, `examples_per_second: X`. Peak memory is the
device's on a GPU (TensorFlow's allocator peak) and the process's peak resident set elsewhere.

  python benchmarks/benchmark_pretraining.py --albert_config_file=configs/albert_large.json --max_seq_length=512 \
      --find_max_micro_batch --memory_limit_mb=24000 --recompute_grad --mixed_precision=float16

finds the largest micro-batch (examples of one forward pass on one replica) up to --micro_batch_ceiling whose step
fits, doubling from --train_batch_size and then bisecting, each size measured on one device in a fresh process (a
clean peak): `capacity.find_max_micro_batch`, which `run_pretraining --find_max_micro_batch` runs for a training
command, printing the --gradient_accumulation_steps too. A size fits when its step runs (no out-of-memory error) and
its peak stays within --memory_limit_mb (on a GPU, default: what the GPU has).
"""

from absl import flags

# Before TensorFlow: it sets TensorFlow's log level, which TensorFlow reads once, on import.
from albert_tf import cli  # pylint: disable=g-bad-import-order
import tensorflow as tf

from albert_tf.cli import memory_flags
from albert_tf.cli import strategy_flags
from albert_tf.errors import TrainingError
from albert_tf.modeling.config import AlbertConfig
from albert_tf.training import capacity
from albert_tf.training import loop

FLAGS = flags.FLAGS

flags.DEFINE_string("albert_config_file", None, "The albert_config.json of the model.")
flags.DEFINE_integer("train_batch_size", 32, "Global batch size (examples per optimizer step).")
flags.DEFINE_integer("max_seq_length", 128, "Sequence length.")
flags.DEFINE_integer("max_predictions_per_seq", 20, "Masked positions per sequence.")
flags.DEFINE_enum("mixed_precision", "float32", list(loop.MIXED_PRECISION), "Compute dtype.")
flags.DEFINE_bool("sentence_order_prediction", True, "Include the sentence-order head and loss.")
strategy_flags.define_strategy_flags()
memory_flags.define_memory_flags()
flags.DEFINE_bool("jit_compile", False, "Compile the step with XLA.")
flags.DEFINE_integer("warmup_steps", 3, "Steps run before timing (tracing, compilation).")
flags.DEFINE_integer("timed_steps", 20, "Steps timed, inside one tf.function call.")
flags.DEFINE_bool("find_max_micro_batch", False, "Find the largest micro-batch whose step fits in memory "
                  "instead of timing --train_batch_size.")
memory_flags.define_memory_limit_flag()
flags.DEFINE_integer("micro_batch_ceiling", 4096, "--find_max_micro_batch: the largest size tried.")


def time_steps(settings: capacity.PretrainingStepSettings, strategy: tf.distribute.Strategy):
  """Times --timed_steps steps of --train_batch_size and prints the figures."""
  model, step = settings.build(strategy, FLAGS.gradient_accumulation_steps)
  micro_batch = loop.micro_batch_size(FLAGS.train_batch_size, strategy.num_replicas_in_sync,
                                      FLAGS.gradient_accumulation_steps)
  # The dataset's batch is the global one: the strategy gives each replica its share.
  dataset = strategy.experimental_distribute_dataset(
      tf.data.Dataset.from_tensors(settings.synthetic_batch(FLAGS.train_batch_size)).repeat(),
      tf.distribute.InputOptions(experimental_fetch_to_device=True))
  try:
    seconds = capacity.train_step_timer(strategy, step)(iter(dataset), FLAGS.warmup_steps, FLAGS.timed_steps)
  except tf.errors.ResourceExhaustedError:
    raise TrainingError(f"Out of memory at micro-batch {micro_batch}: --find_max_micro_batch finds what "
                        "fits.") from None
  examples_per_second = FLAGS.timed_steps * FLAGS.train_batch_size / seconds
  print(f"config: {FLAGS.albert_config_file} ({model.count_params():,} parameters), batch "
        f"{FLAGS.train_batch_size} ({FLAGS.gradient_accumulation_steps} x micro-batch {micro_batch} per replica), "
        f"seq {FLAGS.max_seq_length}, {FLAGS.mixed_precision}, {strategy.num_replicas_in_sync} replica(s), "
        f"sentence_order_prediction={FLAGS.sentence_order_prediction}, recompute_grad={FLAGS.recompute_grad}, "
        f"jit_compile={FLAGS.jit_compile}")
  print(f"seconds_per_step: {seconds / FLAGS.timed_steps:.4f}")
  print(f"peak_memory_mb: {capacity.peak_memory_mb()}")
  print(f"examples_per_second: {examples_per_second:.1f}")


def main(argv):
  del argv
  settings = capacity.PretrainingStepSettings(
      AlbertConfig.from_json_file(FLAGS.albert_config_file), FLAGS.max_seq_length, FLAGS.max_predictions_per_seq,
      FLAGS.mixed_precision, FLAGS.sentence_order_prediction, FLAGS.recompute_grad, jit_compile=FLAGS.jit_compile)
  if not FLAGS.find_max_micro_batch:
    time_steps(settings, strategy_flags.strategy_from_flags())
    return
  largest = capacity.find_max_micro_batch(settings, FLAGS.memory_limit_mb, FLAGS.train_batch_size,
                                          FLAGS.micro_batch_ceiling)
  print(f"config: {FLAGS.albert_config_file}, seq {FLAGS.max_seq_length}, {FLAGS.mixed_precision}, "
        f"sentence_order_prediction={FLAGS.sentence_order_prediction}, recompute_grad={FLAGS.recompute_grad}, "
        f"jit_compile={FLAGS.jit_compile}, memory_limit_mb={FLAGS.memory_limit_mb}")
  print(f"max_micro_batch: {largest}")


def run():
  """The benchmark's command line, `python benchmarks/benchmark_pretraining.py`."""
  flags.mark_flags_as_required(["albert_config_file"])
  cli.run(main)


if __name__ == "__main__":
  run()
