"""Trains a SentencePiece vocabulary laid out like Google's ALBERT `spiece.model`.

  python tools/train_sentencepiece.py --input='corpus/ko_*.txt' --model_prefix=vocab/spiece \
      --vocab_size=30000 --character_coverage=0.9995

writes vocab/spiece.model and vocab/spiece.vocab with ids 0-4 `<pad> <unk> [CLS] [SEP] [MASK]`. The input
is Google's pretraining text (one sentence per line, a blank line between documents), lower-cased and
accent-stripped here exactly as the tokenizer will. --do_lower_case and --keep_accents are recorded in
vocab/spiece.tokenizer_options.json, where every later tool reads them. --verbosity=1 also shows
SentencePiece's own log (its options, its progress).

For Korean, --pretokenizer=kiwi (or mecab; the korean extra) learns pieces that do not cross the morpheme
boundaries inside words: the --input_sentence_size lines trained on are sampled and analysed first, by
--num_threads processes (about a millisecond a line with Kiwi), which the tool reports beside the training time.
The model tokenizes raw text as any other; tools/vocab_report.py compares it with a plain one on held-out text.

Every path may be in a bucket (gs://...): SentencePiece trains on local disk, and the files appear at
--model_prefix whole, the .model last.
"""

import os

from absl import flags

from albert_tf import cli
from albert_tf.cli import output_flags
from albert_tf.text import korean_analyzers
from albert_tf.text import sentencepiece_training
from albert_tf.text import tokenizer_options

FLAGS = flags.FLAGS

flags.DEFINE_list("input", None, "Text files or globs, comma-separated, in Google's pretraining format.")
flags.DEFINE_string("model_prefix", None, "Output path without extension: writes <prefix>.model and .vocab.")
output_flags.define_overwrite_flag("the model files of --model_prefix")
flags.DEFINE_integer("vocab_size", 30000, "Number of pieces, the 5 special tokens included.")
flags.DEFINE_float("character_coverage", 0.9995,
                   "Fraction of characters to cover: 0.9995 for Korean, Japanese, Chinese; 1.0 for small "
                   "alphabets.")
flags.DEFINE_enum("model_type", "unigram", sentencepiece_training.MODEL_TYPES,
                  "SentencePiece model type (Google's: unigram).")
flags.DEFINE_bool("do_lower_case", True, "Whether to lower-case the text (Google's default: True).")
flags.DEFINE_bool("keep_accents", False, "Whether to keep accents (Google strips them).")
flags.DEFINE_integer("input_sentence_size", 10_000_000,
                     "Lines sampled from the corpus for training; 0 means all of them.")
flags.DEFINE_list("user_defined_symbols", [], "Pieces always kept whole, comma-separated; ids 5, 6, ...")
flags.DEFINE_integer("num_threads", os.cpu_count(), "Training threads, and analyzer processes with --pretokenizer.")
flags.DEFINE_enum("pretokenizer", None, korean_analyzers.ANALYZERS,
                  "A Korean analyzer (the korean extra) whose morpheme boundaries inside words no piece crosses; "
                  "recorded in the tokenizer options. Default: none.")


def main(argv):
  del argv
  trained = sentencepiece_training.train_vocabulary(
      FLAGS.input, FLAGS.model_prefix, vocab_size=FLAGS.vocab_size,
      character_coverage=FLAGS.character_coverage, model_type=FLAGS.model_type,
      do_lower_case=FLAGS.do_lower_case, keep_accents=FLAGS.keep_accents,
      input_sentence_size=FLAGS.input_sentence_size, user_defined_symbols=FLAGS.user_defined_symbols,
      num_threads=FLAGS.num_threads, verbose=cli.SHOW_LIBRARY_LOGS, pretokenizer=FLAGS.pretokenizer,
      overwrite=FLAGS.overwrite)
  stem = os.path.splitext(trained.model_file)[0]
  print(f"Wrote {trained.model_file}, {stem}.vocab and {tokenizer_options.options_file(trained.model_file)}")
  analysis = (f", {trained.analysis_seconds:.1f} s of it analysing the morphemes of {trained.analysed_lines:,} "
              f"lines with {FLAGS.pretokenizer} ({FLAGS.num_threads} processes)" if FLAGS.pretokenizer else "")
  print(f"{trained.num_pieces:,} pieces, covering {100 * trained.coverage:.3f}% of the corpus's characters; "
        f"trained in {trained.seconds:.1f} s{analysis}.")


def run():
  """The `albert-train-sentencepiece` command."""
  flags.mark_flags_as_required(["input", "model_prefix"])
  cli.run(main)


if __name__ == "__main__":
  run()
