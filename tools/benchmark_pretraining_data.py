"""Benchmarks create_pretraining_data: instances/s and peak memory for a corpus and flags.

  python tools/benchmark_pretraining_data.py --input_file=../shared/corpus/en_wiki.txt \
      --spm_model_file=../shared/reference/sp8k_en_ko.model --max_seq_length=128 --dupe_factor=5

--corpus_repeat=10 concatenates the corpus ten times first, to show that memory does not grow with it.
Throughput is measured over the data work itself (TensorFlow's import, ~5 s, is not counted, as in the
~750 instances/s steady-state figure of Google's tool in ../shared/reference/google-data-stats.md).
"""

import os
import resource
import shutil
import tempfile

from absl import flags

from albert_tf import cli
from albert_tf.data import pretraining_writer
from albert_tf.data.instances import InstanceOptions
from albert_tf.files import expand_input_patterns

FLAGS = flags.FLAGS

flags.DEFINE_string("input_file", None, "Corpus files or globs (comma-separated).")
flags.DEFINE_string("spm_model_file", None, "The SentencePiece model.")
flags.DEFINE_integer("max_seq_length", 128, "Maximum sequence length.")
flags.DEFINE_integer("max_predictions_per_seq", 20, "Most masked positions per sequence.")
flags.DEFINE_integer("dupe_factor", 5, "Passes over the corpus.")
flags.DEFINE_bool("do_lower_case", False, "Lower-case the text.")
flags.DEFINE_integer("num_workers", os.cpu_count() or 1, "Worker processes.")
flags.DEFINE_integer("corpus_repeat", 1, "Concatenate the corpus this many times first.")
flags.DEFINE_integer("shuffle_window", 20000, "Records held for shuffling.")

GOOGLE_INSTANCES_PER_SECOND = 750  # Google's single process on a 2-core machine, en_wiki.txt, seq 128


def main(argv):
  del argv
  inputs = expand_input_patterns(FLAGS.input_file)
  work = tempfile.mkdtemp(prefix="albert_data_benchmark-")
  try:
    if FLAGS.corpus_repeat > 1:
      repeated = os.path.join(work, "corpus.txt")
      with open(repeated, "wb") as writer:
        for _ in range(FLAGS.corpus_repeat):
          for path in inputs:
            with open(path, "rb") as reader:
              shutil.copyfileobj(reader, writer)
            writer.write(b"\n\n")
      inputs = [repeated]
    corpus_bytes = sum(os.path.getsize(path) for path in inputs)
    summary = pretraining_writer.create_pretraining_data(
        inputs, [os.path.join(work, "out.tfrecord")],
        pretraining_writer.TokenizerOptions(FLAGS.spm_model_file, FLAGS.do_lower_case),
        InstanceOptions(max_seq_length=FLAGS.max_seq_length,
                        max_predictions_per_seq=FLAGS.max_predictions_per_seq),
        dupe_factor=FLAGS.dupe_factor, num_workers=FLAGS.num_workers, shuffle_window=FLAGS.shuffle_window,
        progress=False)
  finally:
    shutil.rmtree(work, ignore_errors=True)
  main_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
  worker_rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
  rate = summary.instances / summary.seconds
  print(f"corpus: {corpus_bytes / 1e6:.1f} MB, dupe_factor {FLAGS.dupe_factor}, "
        f"max_seq_length {FLAGS.max_seq_length}, {FLAGS.num_workers} worker(s)")
  print(f"instances: {summary.instances}")
  print(f"seconds: {summary.seconds:.2f}")
  print(f"peak_rss_main_mb: {main_rss:.0f}")
  print(f"peak_rss_worker_mb: {worker_rss:.0f}")
  print(f"speedup_vs_google_750: {rate / GOOGLE_INSTANCES_PER_SECOND:.1f}")
  print(f"instances_per_second: {rate:.0f}")


def run():
  """The `albert-benchmark-pretraining-data` command."""
  flags.mark_flags_as_required(["input_file", "spm_model_file"])
  cli.run(main)


if __name__ == "__main__":
  run()
