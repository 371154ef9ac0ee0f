"""Benchmarks the full pretraining step (MLM [+ SOP] + LAMB) on synthetic batches, or finds what fits.

  python tools/benchmark_pretraining.py --albert_config_file=configs/albert_base.json \
      --train_batch_size=32 --max_seq_length=128 --mixed_precision=bfloat16

prints the configuration, peak memory and, as its last line, `examples_per_second: X`. Peak memory is the
device's on a GPU (TensorFlow's allocator peak) and the process's peak resident set elsewhere.

  python tools/benchmark_pretraining.py --albert_config_file=configs/albert_large.json --max_seq_length=512 \
      --find_max_micro_batch --memory_limit_mb=24000 --recompute_grad --mixed_precision=float16

finds the largest micro-batch (examples of one forward pass on one replica) whose step fits: each size is
measured on one device in a fresh process (a clean peak), doubling from --train_batch_size and then
bisecting. A size fits when its step runs (no out-of-memory error) and its peak stays within
--memory_limit_mb (on a GPU, default: what the GPU has). Then `--train_batch_size=B
--gradient_accumulation_steps=B/(replicas × micro-batch)` trains with Google's batch B on that memory.
"""

import re
import resource
import subprocess
import sys
from typing import Optional

from absl import flags

# Before TensorFlow: it sets TensorFlow's log level, which TensorFlow reads once, on import.
from albert_tf import cli  # pylint: disable=g-bad-import-order
import tensorflow as tf

from albert_tf.cli import memory_flags
from albert_tf.cli import strategy_flags
from albert_tf.errors import OptionError
from albert_tf.modeling.config import AlbertConfig
from albert_tf.modeling.pretrainer import AlbertPretrainer
from albert_tf.training import capacity
from albert_tf.training import loop
from albert_tf.training.pretraining_objective import PretrainingObjective

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
flags.DEFINE_integer("memory_limit_mb", None, "--find_max_micro_batch: the memory a step may use, in MB (on a "
                     "GPU, default: the GPU's own; elsewhere required: the resident set grows into swap).")
flags.DEFINE_integer("micro_batch_ceiling", 4096, "--find_max_micro_batch: the largest size tried.")

_PEAK_LINE = re.compile(r"^peak_memory_mb: (\d+)$", re.MULTILINE)
_OUT_OF_MEMORY_EXIT = 3  # a measuring process whose step ran out of memory


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


def peak_memory_mb() -> int:
  """The GPU allocator's peak where there is a GPU, else the process's peak resident set."""
  if tf.config.list_logical_devices("GPU"):
    return round(tf.config.experimental.get_memory_info("GPU:0")["peak"] / 2**20)
  return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)


def time_steps(config: AlbertConfig, strategy: tf.distribute.Strategy):
  """Times --timed_steps steps of --train_batch_size and prints the figures."""
  objective = PretrainingObjective(FLAGS.sentence_order_prediction)
  with loop.run_settings(FLAGS.mixed_precision, seed=0), strategy.scope():
    model = AlbertPretrainer(config, FLAGS.sentence_order_prediction, recompute_grad=FLAGS.recompute_grad)
    model(model.dummy_inputs(), training=False)  # the step differentiates the built variables
    optimizer = loop.create_optimizer(model, FLAGS.mixed_precision, loop.OptimizerSettings("lamb", 1e-4, 10000, 100))
  micro_batch = loop.micro_batch_size(FLAGS.train_batch_size, strategy.num_replicas_in_sync,
                                      FLAGS.gradient_accumulation_steps)
  batch = synthetic_batch(config, FLAGS.train_batch_size // strategy.num_replicas_in_sync, FLAGS.max_seq_length,
                          FLAGS.max_predictions_per_seq)
  dataset = strategy.experimental_distribute_dataset(
      tf.data.Dataset.from_tensors(batch).repeat(),
      tf.distribute.InputOptions(experimental_fetch_to_device=True))
  step = loop.replica_train_step(model, optimizer, objective, FLAGS.mixed_precision == "float16", FLAGS.jit_compile,
                                 FLAGS.gradient_accumulation_steps)
  seconds = capacity.train_step_timer(strategy, step)(iter(dataset), FLAGS.warmup_steps, FLAGS.timed_steps)
  examples_per_second = FLAGS.timed_steps * FLAGS.train_batch_size / seconds
  print(f"config: {FLAGS.albert_config_file} ({model.count_params():,} parameters), batch "
        f"{FLAGS.train_batch_size} ({FLAGS.gradient_accumulation_steps} x micro-batch {micro_batch} per replica), "
        f"seq {FLAGS.max_seq_length}, {FLAGS.mixed_precision}, {strategy.num_replicas_in_sync} replica(s), "
        f"sentence_order_prediction={FLAGS.sentence_order_prediction}, recompute_grad={FLAGS.recompute_grad}, "
        f"jit_compile={FLAGS.jit_compile}")
  print(f"seconds_per_step: {seconds / FLAGS.timed_steps:.4f}")
  print(f"peak_memory_mb: {peak_memory_mb()}")
  print(f"examples_per_second: {examples_per_second:.1f}")


def measure_micro_batch(micro_batch: int) -> Optional[int]:
  """The peak memory (MB) of a one-device step of `micro_batch`, in a fresh process; None if it ran out."""
  command = [sys.executable, __file__, *sys.argv[1:], "--nofind_max_micro_batch", "--gradient_accumulation_steps=1",
             "--strategy_type=one_device", f"--train_batch_size={micro_batch}", "--warmup_steps=1", "--timed_steps=1"]
  result = subprocess.run(command, capture_output=True, text=True, check=False)
  if result.returncode == _OUT_OF_MEMORY_EXIT:
    return None
  peak = _PEAK_LINE.search(result.stdout)
  if result.returncode or not peak:
    raise RuntimeError(f"Measuring micro-batch {micro_batch} failed (exit {result.returncode}):\n"
                       f"{result.stderr[-3000:]}")
  return int(peak.group(1))


def find_max_micro_batch():
  """Prints the largest micro-batch whose step fits, with each size measured on the way.

  This process only directs: it never places anything on a device, whose memory the measuring processes need.
  """
  limit = FLAGS.memory_limit_mb  # None on a GPU: what fits is what does not run out of memory
  if limit is None and not tf.config.list_physical_devices("GPU"):
    raise OptionError("--find_max_micro_batch without a GPU needs --memory_limit_mb: on the CPU nothing runs out "
                      "of memory before the machine swaps.")
  limit_text = "the GPU's memory" if limit is None else f"{limit} MB"

  def fits(micro_batch: int) -> bool:
    peak = measure_micro_batch(micro_batch)
    verdict = "out of memory" if peak is None else f"peak {peak} MB"
    print(f"micro-batch {micro_batch}: {verdict}", file=sys.stderr, flush=True)
    return peak is not None and (limit is None or peak <= limit)

  largest = capacity.largest_fitting_size(FLAGS.train_batch_size, FLAGS.micro_batch_ceiling, fits)
  if not largest:
    raise OptionError(f"Not even a micro-batch of 1 fits in {limit_text} at --max_seq_length={FLAGS.max_seq_length}.")
  print(f"config: {FLAGS.albert_config_file}, seq {FLAGS.max_seq_length}, {FLAGS.mixed_precision}, "
        f"recompute_grad={FLAGS.recompute_grad}, limit {limit_text}")
  print(f"max_micro_batch: {largest}")


def main(argv):
  del argv
  config = AlbertConfig.from_json_file(FLAGS.albert_config_file)
  if FLAGS.find_max_micro_batch:
    find_max_micro_batch()
    return
  try:
    time_steps(config, strategy_flags.strategy_from_flags())
  except tf.errors.ResourceExhaustedError:
    print(f"out of memory at micro-batch {FLAGS.train_batch_size // FLAGS.gradient_accumulation_steps}",
          file=sys.stderr)
    sys.exit(_OUT_OF_MEMORY_EXIT)


def run():
  """The `albert-benchmark-pretraining` command."""
  flags.mark_flags_as_required(["albert_config_file"])
  cli.run(main)


if __name__ == "__main__":
  run()
