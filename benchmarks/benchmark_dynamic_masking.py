"""Benchmarks dynamic masking against pre-masked records: disk, data-tool time, input and training speed.

  python benchmarks/benchmark_dynamic_masking.py \
      --input_file=../shared/corpus/en_wiki.txt,../shared/corpus/ko_libreoffice_help.txt \
      --spm_model_file=../shared/reference/sp8k_en_ko.model --albert_config_file=configs/albert_tiny.json

runs create_pretraining_data twice on the corpus, writing masked records of --dupe_factor passes (Google's
way) and unmasked ones of one pass (--dynamic_masking), and prints for each the tool's seconds (start-up
included) and the bytes on disk. Then it reads both as run_pretraining does (`pretraining_dataset`, the
unmasked records masked in the pipeline) and prints the examples/s of the input alone and of the
pretraining step (MLM + SOP, LAMB, one device) fed by it. The training runs alternate between the two
kinds --rounds times, on the same model, so that the machine's drift hits both; the last line is the
median ratio of the dynamic runs' examples/s to the pre-masked ones'.
"""

import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from absl import flags

# Before TensorFlow: it sets TensorFlow's log level, which TensorFlow reads once, on import.
from albert_tf import cli  # pylint: disable=g-bad-import-order

from albert_tf.data.pretraining_dataset import pretraining_dataset
from albert_tf.data.record_files import check_pretraining_records, count_records
from albert_tf.errors import AlbertError
from albert_tf.files import expand_input_patterns
from albert_tf.modeling.config import AlbertConfig
from albert_tf.text.tokenizer import SentencePieceTokenizer
from albert_tf.training import capacity
from albert_tf.training import distribution
from albert_tf.training import pretraining

FLAGS = flags.FLAGS

flags.DEFINE_string("input_file", None, "Corpus text files or globs (comma-separated).")
flags.DEFINE_string("spm_model_file", None, "The SentencePiece model.")
flags.DEFINE_string("albert_config_file", None, "The albert_config.json of the model trained.")
flags.DEFINE_integer("max_seq_length", 128, "Sequence length.")
flags.DEFINE_integer("max_predictions_per_seq", 20, "Masked positions per sequence.")
flags.DEFINE_integer("dupe_factor", 10, "Masked passes written for the pre-masked records.")
flags.DEFINE_integer("num_workers", os.cpu_count() or 1, "--num_workers of the data tool.")
flags.DEFINE_integer("train_batch_size", 32, "Batch size of the training step.")
flags.DEFINE_integer("warmup_steps", 5, "Steps run before each timing (tracing, the input's first window).")
flags.DEFINE_integer("timed_steps", 40, "Steps timed per run.")
flags.DEFINE_integer("rounds", 3, "Training runs of each kind, alternated.")
flags.DEFINE_integer("input_batches", 300, "Batches read to time the input alone.")

KINDS = ("pre-masked", "dynamic")
# The data tool as a user runs it, start-up included: benchmarks/ is run from a checkout, beside tools/.
CREATE_PRETRAINING_DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tools",
                                       "create_pretraining_data.py")


def write_records(inputs, directory, dynamic):
  """Runs create_pretraining_data for one kind; returns (its files, seconds, bytes, instances)."""
  os.makedirs(directory)
  outputs = [os.path.join(directory, f"train-{index}.tfrecord") for index in range(4)]
  command = [sys.executable, CREATE_PRETRAINING_DATA, f"--input_file={','.join(inputs)}",
             f"--output_file={','.join(outputs)}", f"--spm_model_file={FLAGS.spm_model_file}", "--nodo_lower_case",
             f"--max_seq_length={FLAGS.max_seq_length}",
             f"--max_predictions_per_seq={FLAGS.max_predictions_per_seq}", f"--num_workers={FLAGS.num_workers}",
             "--dynamic_masking" if dynamic else f"--dupe_factor={FLAGS.dupe_factor}"]
  print(f"create_pretraining_data: writing {'unmasked' if dynamic else 'masked'} records", flush=True)
  start = time.time()
  result = subprocess.run(command, capture_output=True, text=True, check=False)
  seconds = time.time() - start
  if result.returncode:
    # The data tool's own one-line error, when it stopped on bad input; else its traceback's end.
    errors = re.findall(r"^error: (.*)$", result.stderr, re.MULTILINE)
    raise AlbertError(f"create_pretraining_data failed: {errors[-1] if errors else result.stderr[-3000:]}")
  instances = int(re.search(r"^instances: ([\d,]+)", result.stdout, re.MULTILINE).group(1).replace(",", ""))
  return outputs, seconds, sum(os.path.getsize(path) for path in outputs), instances


def batches(files, recipe, counts, batch_size):
  return pretraining_dataset(files, FLAGS.max_seq_length, FLAGS.max_predictions_per_seq, batch_size, seed=1,
                             record_counts=counts, masking_recipe=recipe)


def input_examples_per_second(files, recipe, counts):
  dataset = batches(files, recipe, counts, FLAGS.train_batch_size).take(FLAGS.input_batches)
  start = time.time()
  dataset.reduce(0, lambda count, _: count + 1).numpy()
  return FLAGS.input_batches * FLAGS.train_batch_size / (time.time() - start)


def main(argv):
  del argv
  # Bad input is refused before the minutes of data runs.
  inputs = expand_input_patterns(FLAGS.input_file)
  SentencePieceTokenizer(FLAGS.spm_model_file)
  step_settings = capacity.PretrainingStepSettings(AlbertConfig.from_json_file(FLAGS.albert_config_file),
                                                   FLAGS.max_seq_length, FLAGS.max_predictions_per_seq)
  work = tempfile.mkdtemp(prefix="albert_dynamic_masking_benchmark-")
  try:
    written = {kind: write_records(inputs, os.path.join(work, kind), kind == "dynamic") for kind in KINDS}
    for kind, (_, seconds, size, instances) in written.items():
      passes = 1 if kind == "dynamic" else FLAGS.dupe_factor
      print(f"{kind}: {passes} pass(es), {instances:,} instances, {seconds:.1f} s, {size / 1e6:.1f} MB")
    files = {kind: written[kind][0] for kind in KINDS}
    recipes = {kind: check_pretraining_records(files[kind], FLAGS.max_seq_length,
                                            FLAGS.max_predictions_per_seq).masking_recipe for kind in KINDS}
    pretraining.check_masking_recipe(recipes["dynamic"], step_settings.albert_config, FLAGS.max_seq_length,
                                     FLAGS.max_predictions_per_seq)
    dynamic_size, masked_size = written["dynamic"][2], written["pre-masked"][2]
    print(f"disk_ratio_dynamic_to_premasked: {dynamic_size / masked_size:.3f} (one masked pass: "
          f"{masked_size / FLAGS.dupe_factor / 1e6:.1f} MB)")
    counts = {kind: count_records(files[kind]) for kind in KINDS}
    for kind in KINDS:
      rate = input_examples_per_second(files[kind], recipes[kind], counts[kind])
      print(f"input_examples_per_second {kind}: {rate:.0f}")

    strategy = distribution.get_strategy("one_device")
    _, step = step_settings.build(strategy)
    time_steps = capacity.train_step_timer(strategy, step)  # one tracing for both kinds and every round

    def examples_per_second(kind):
      iterator = iter(strategy.experimental_distribute_dataset(
          batches(files[kind], recipes[kind], counts[kind], FLAGS.train_batch_size)))
      seconds = time_steps(iterator, FLAGS.warmup_steps, FLAGS.timed_steps)
      return FLAGS.timed_steps * FLAGS.train_batch_size / seconds

    rates = {kind: [] for kind in KINDS}
    for round_index in range(FLAGS.rounds):
      for kind in KINDS:
        rates[kind].append(examples_per_second(kind))
      print(f"training round {round_index + 1}/{FLAGS.rounds}: "
            + ", ".join(f"{kind} {rates[kind][-1]:.1f} examples/s" for kind in KINDS), flush=True)
    for kind in KINDS:
      print(f"train_examples_per_second {kind}: {' '.join(f'{rate:.1f}' for rate in rates[kind])} (median "
            f"{statistics.median(rates[kind]):.1f})")
    ratios = [dynamic / masked for dynamic, masked in zip(rates["dynamic"], rates["pre-masked"])]
    print(f"config: {FLAGS.albert_config_file}, batch {FLAGS.train_batch_size}, seq {FLAGS.max_seq_length}, "
          f"{FLAGS.max_predictions_per_seq} predictions, {FLAGS.timed_steps} steps per run")
    print(f"train_speed_ratio_dynamic_to_premasked: {statistics.median(ratios):.3f} "
          f"(per round: {' '.join(f'{ratio:.3f}' for ratio in ratios)})")
  finally:
    shutil.rmtree(work, ignore_errors=True)


def run():
  """The benchmark's command line, `python benchmarks/benchmark_dynamic_masking.py`."""
  flags.mark_flags_as_required(["input_file", "spm_model_file", "albert_config_file"])
  cli.run(main)


if __name__ == "__main__":
  run()
