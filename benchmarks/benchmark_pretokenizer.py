"""Measures what a morpheme pretokenizer does to a Korean vocabulary: trains a plain, a Kiwi and a MeCab-ko
vocabulary of the same size on the same documents and compares them on held-out ones.

  python benchmarks/benchmark_pretokenizer.py --output_dir=bench/pretokenizer

splits --input_file by document (every --held_out_every-th held out; default: the shared Korean corpora), trains
the three with `train_sentencepiece` (--pretokenizer none, kiwi, mecab; the korean extra), and prints the vocab
report of each on the held-out text (tools/vocab_report.py: pieces per word and <unk> by script, and against Kiwi's
morphemes the boundary recall and precision and the stems in one piece) with its training time and the part of it
spent analysing morphemes. --output_dir keeps the split text and the three vocabularies.
"""

import os
import time

from absl import flags

from albert_tf import cli
from albert_tf.errors import OptionError
from albert_tf.files import write_atomically
from albert_tf.text import korean_analyzers
from albert_tf.text import sentencepiece_training
from albert_tf.text import vocab_report
from albert_tf.text.tokenizer import SentencePieceTokenizer

FLAGS = flags.FLAGS

flags.DEFINE_list("input_file", ["../shared/corpus/ko_law.txt", "../shared/corpus/ko_libreoffice_help.txt"],
                  "Korean text files or globs, comma-separated, in Google's pretraining format (a blank line "
                  "between documents).")
flags.DEFINE_string("output_dir", None, "New directory for the split text and the vocabularies.")
flags.DEFINE_integer("held_out_every", 10, "Every n-th document is held out.")
flags.DEFINE_integer("vocab_size", 6000, "Pieces of each vocabulary (the shared Korean corpora, less their held-out "
                     "documents, support at most 6,603 plain pieces).")
flags.DEFINE_integer("input_sentence_size", 10_000_000, "Lines sampled to train on; 0 means all of them.")
flags.DEFINE_integer("num_threads", os.cpu_count(), "Training threads and analyzer processes.")


def main(argv):
  del argv
  if os.path.exists(FLAGS.output_dir) and os.listdir(FLAGS.output_dir):
    raise OptionError(f"{FLAGS.output_dir} is not empty; choose a new --output_dir.")
  kept, held_out = vocab_report.hold_out_documents(FLAGS.input_file, FLAGS.held_out_every)
  os.makedirs(FLAGS.output_dir, exist_ok=True)
  train_file = write_atomically(os.path.join(FLAGS.output_dir, "train.txt"), "\n".join(kept) + "\n")
  write_atomically(os.path.join(FLAGS.output_dir, "held_out.txt"), "\n".join(held_out) + "\n")
  print(f"{sum(map(bool, kept)):,} lines to train on, {len(held_out):,} held out (every {FLAGS.held_out_every}th "
        f"document of {', '.join(FLAGS.input_file)}).")
  trained = {}
  for pretokenizer in (None,) + korean_analyzers.ANALYZERS:
    name = pretokenizer or "plain"
    trained[name] = sentencepiece_training.train_vocabulary(
        train_file, os.path.join(FLAGS.output_dir, name, "spiece"), vocab_size=FLAGS.vocab_size,
        input_sentence_size=FLAGS.input_sentence_size, num_threads=FLAGS.num_threads, pretokenizer=pretokenizer)
  started = time.perf_counter()
  words = vocab_report.analyse_lines(held_out)
  print(f"Kiwi analysed the {len(held_out):,} held-out lines ({len(words):,} words) in "
        f"{time.perf_counter() - started:.1f} s.")
  reports = [vocab_report.vocab_report(SentencePieceTokenizer(result.model_file), words, name)
             for name, result in trained.items()]
  print(vocab_report.table(reports, [
      ("training time, s", [f"{result.seconds:.1f}" for result in trained.values()]),
      (f"of it morpheme analysis, s ({FLAGS.num_threads} processes)",
       [f"{result.analysis_seconds:.1f}" for result in trained.values()]),
  ]))


def run():
  """The benchmark's command line, `python benchmarks/benchmark_pretokenizer.py`."""
  flags.mark_flags_as_required(["output_dir"])
  cli.run(main)


if __name__ == "__main__":
  run()
