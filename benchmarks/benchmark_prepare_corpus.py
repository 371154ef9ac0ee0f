"""Measures prepare_corpus's throughput: MB of raw text a second, with 1 and N worker processes, for Korean
(Kiwi) and English (sentencex), on the shared corpora's documents joined back into paragraphs.

  python benchmarks/benchmark_prepare_corpus.py --korean_file=../shared/corpus/ko_libreoffice_help.txt \
      --english_file=../shared/corpus/en_wiki.txt --num_workers=1,2 --repeat=2

Each corpus is written as raw paragraphs --repeat times (every copy but the first then counts as duplicates,
which costs the splitting but not the writing), and prepared once per worker count in this one run, so the
ratios compare like with like. MB/s per core is the rate divided by the workers.
"""

import os
import tempfile
import time

from absl import flags

from albert_tf import cli
from albert_tf.data.corpus_preparation import PreparationOptions, prepare_corpus
from albert_tf.data.pretraining_corpus import read_documents

FLAGS = flags.FLAGS

flags.DEFINE_string("korean_file", None, "Korean text in Google's format (a sentence a line).")
flags.DEFINE_string("english_file", None, "English text in Google's format.")
flags.DEFINE_list("num_workers", ["1", "2"], "Worker counts to measure.")
flags.DEFINE_integer("repeat", 1, "Copies of each corpus in the raw input.", lower_bound=1)


def main(argv):
  del argv
  corpora = [(language, path) for language, path in (("ko", FLAGS.korean_file), ("en", FLAGS.english_file))
             if path]
  print("| language | workers | MB | seconds | MB/s | MB/s per core | documents written |")
  print("|---|---|---|---|---|---|---|")
  with tempfile.TemporaryDirectory() as work:
    for language, path in corpora:
      raw = os.path.join(work, f"raw-{language}.txt")
      with open(raw, "w", encoding="utf-8") as writer:
        for _ in range(FLAGS.repeat):
          writer.writelines(" ".join(sentences) + "\n\n" for sentences in read_documents(path))
      megabytes = os.path.getsize(raw) / 1e6
      for workers in map(int, FLAGS.num_workers):
        start = time.time()
        summary = prepare_corpus([raw], [os.path.join(work, f"out-{language}-{workers}.txt")],
                                 PreparationOptions(language=language), num_workers=workers, progress=False)
        seconds = time.time() - start
        print(f"| {language} | {workers} | {megabytes:.2f} | {seconds:.1f} | {megabytes / seconds:.3f} | "
              f"{megabytes / seconds / workers:.3f} | {summary.documents_written:,} |", flush=True)


def run():
  """The benchmark's command line, `python benchmarks/benchmark_prepare_corpus.py`."""
  cli.run(main)


if __name__ == "__main__":
  run()
