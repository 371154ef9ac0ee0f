"""Benchmarks create_pretraining_data: instances/s, peak memory and extra disk for a corpus and flags.

  python benchmarks/benchmark_pretraining_data.py --input_file=../shared/corpus/en_wiki.txt \
      --spm_model_file=../shared/reference/sp8k_en_ko.model --max_seq_length=128 --dupe_factor=5

--corpus_repeat=10 concatenates the corpus ten times first, to show that memory does not grow with it.
--runner=DirectRunner (with Beam's options after it, e.g. --direct_num_workers=2
--direct_running_mode=multi_processing) measures the Apache Beam engine instead of the local one.
Throughput is measured over the data work itself (TensorFlow, which the writing phase needs, is imported
before the clock starts, as in the ~750 instances/s steady-state figure of Google's tool in
../shared/reference/google-data-stats.md). Extra disk
is the peak size of the run's work directory (token stores and shuffle buckets), sampled every 0.2 s.
"""

import os
import resource
import shutil
import tempfile
import threading
import time

from absl import flags

from albert_tf import cli
from albert_tf.cli import data_flags
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
flags.DEFINE_integer("num_workers", os.cpu_count() or 1, "Worker processes of the local engine.")
flags.DEFINE_integer("corpus_repeat", 1, "Concatenate the corpus this many times first.")
data_flags.define_data_flags()

GOOGLE_INSTANCES_PER_SECOND = 750  # Google's single process on a 2-core machine, en_wiki.txt, seq 128


def _directory_bytes(directory: str) -> int:
  total = 0
  for root, _, names in os.walk(directory):
    for name in names:
      try:
        total += os.path.getsize(os.path.join(root, name))
      except OSError:
        pass  # removed while we looked
  return total


class _PeakDisk(threading.Thread):
  """The peak bytes under `directory` other than the finished outputs, sampled in the background."""

  def __init__(self, directory: str, outputs_bytes):
    super().__init__(daemon=True)
    self._directory = directory
    self._outputs_bytes = outputs_bytes
    self.peak = 0
    self.stop = threading.Event()

  def run(self):
    while not self.stop.wait(0.2):
      self.peak = max(self.peak, _directory_bytes(self._directory) - self._outputs_bytes())


def main(argv):
  # The writing phase imports TensorFlow: before the clock starts, as Google's figure leaves it out. Here, not
  # at the top: the worker processes' fork server imports this module, and they need no TensorFlow.
  import tensorflow  # noqa: F401 pylint: disable=import-outside-toplevel,unused-import
  pipeline_args = data_flags.pipeline_args(argv)
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
    output_dir = os.path.join(work, "out")
    os.makedirs(output_dir)
    outputs = [os.path.join(output_dir, f"train-{index}.tfrecord") for index in range(4)]
    disk = _PeakDisk(output_dir, lambda: sum(os.path.getsize(path) for path in outputs if os.path.exists(path)))
    disk.start()
    arguments = dict(
        input_files=inputs, output_files=outputs,
        tokenizer_spec=pretraining_writer.TokenizerSpec(FLAGS.spm_model_file, FLAGS.do_lower_case),
        options=InstanceOptions(max_seq_length=FLAGS.max_seq_length,
                                max_predictions_per_seq=FLAGS.max_predictions_per_seq),
        dupe_factor=FLAGS.dupe_factor, memory_bytes=FLAGS.shuffle_memory_mb << 20)
    start = time.time()
    if pipeline_args:
      summary = data_flags.beam_engine().create_pretraining_data_beam(
          **arguments, pipeline_args=pipeline_args)["train"]
    else:
      summary = pretraining_writer.create_pretraining_data(**arguments, num_workers=FLAGS.num_workers,
                                                           progress=False)["train"]
    seconds = time.time() - start
    disk.stop.set()
    disk.join()
    output_bytes = sum(os.path.getsize(path) for path in outputs)
  finally:
    shutil.rmtree(work, ignore_errors=True)
  main_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
  worker_rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
  rate = summary.instances / seconds
  engine = f"Beam {' '.join(pipeline_args)}" if pipeline_args else f"local, {FLAGS.num_workers} worker(s)"
  print(f"corpus: {corpus_bytes / 1e6:.1f} MB, dupe_factor {FLAGS.dupe_factor}, "
        f"max_seq_length {FLAGS.max_seq_length}, {engine}")
  print(f"instances: {summary.instances}")
  print(f"seconds: {seconds:.2f}")
  print(f"peak_rss_main_mb: {main_rss:.0f}")
  print(f"peak_rss_worker_mb: {worker_rss:.0f}")
  print(f"output_mb: {output_bytes / 1e6:.1f}")
  print(f"peak_extra_disk_mb: {disk.peak / 1e6:.1f}")
  print(f"speedup_vs_google_750: {rate / GOOGLE_INSTANCES_PER_SECOND:.1f}")
  print(f"instances_per_second: {rate:.0f}")


def run():
  """The benchmark's command line, `python benchmarks/benchmark_pretraining_data.py`."""
  flags.mark_flags_as_required(["input_file", "spm_model_file"])
  cli.run(main, flags_parser=data_flags.parse_flags_leaving_pipeline_options)


if __name__ == "__main__":
  run()
