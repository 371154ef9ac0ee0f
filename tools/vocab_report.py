"""Compares SentencePiece vocabularies on held-out text, before pretraining with one of them.

  python tools/vocab_report.py --spm_model_file=vocab/plain/spiece.model,vocab/kiwi/spiece.model \
      --input_file=held_out_ko.txt

prints, a column a vocabulary: pieces per word and the share of words with an `<unk>` piece, for the words
(whitespace-separated) of each script; for the Hangul words, how their piece boundaries agree with the morphemes
of Kiwi's analysis (the korean extra): the recall and precision of the morpheme boundaries inside words, and the
share of words whose stem is exactly one piece (see `albert_tf.text.vocab_report`). The text is one sentence a
line; blank lines are skipped. --do_lower_case and --keep_accents are each vocabulary's recorded options.
Every path may be in a bucket (gs://...).
"""

import json

from absl import flags

from albert_tf import cli
from albert_tf.cli import output_flags
from albert_tf.cli import tokenizer_flags
from albert_tf.files import check_output_files, write_output_file
from albert_tf.text import vocab_report
from albert_tf.text.tokenizer import SentencePieceTokenizer

FLAGS = flags.FLAGS

flags.DEFINE_list("spm_model_file", None, "SentencePiece models to compare, comma-separated.")
flags.DEFINE_list("input_file", None, "Held-out text files or globs, comma-separated: a sentence a line.")
flags.DEFINE_integer("max_lines", 20_000, "Lines of the text read at most (Kiwi analyses about a thousand a "
                     "second); 0 reads them all.")
flags.DEFINE_string("output_json", None, "Also writes the counts and figures of each vocabulary to this JSON file.")
output_flags.define_overwrite_flag("--output_json")
tokenizer_flags.define_tokenizer_flags()


def main(argv):
  del argv
  if FLAGS.output_json:
    check_output_files([FLAGS.output_json], FLAGS.overwrite, flag="--output_json")
  tokenizers = []
  for spm_model_file in FLAGS.spm_model_file:
    options = tokenizer_flags.options_from_flags(spm_model_file)
    tokenizers.append(SentencePieceTokenizer(spm_model_file, options.do_lower_case, options.keep_accents))
  lines = vocab_report.read_lines(FLAGS.input_file, FLAGS.max_lines)
  words = vocab_report.analyse_lines(lines)
  names = vocab_report.model_names(FLAGS.spm_model_file)
  reports = [vocab_report.vocab_report(tokenizer, words, name) for tokenizer, name in zip(tokenizers, names)]
  print(f"{len(lines):,} lines, {len(words):,} words of {', '.join(FLAGS.input_file)}:")
  print(vocab_report.table(reports))
  if FLAGS.output_json:
    write_output_file(FLAGS.output_json, json.dumps([report.as_dict() for report in reports], indent=2) + "\n")
    print(f"Wrote {FLAGS.output_json}")


def run():
  """The `albert-vocab-report` command."""
  flags.mark_flags_as_required(["spm_model_file", "input_file"])
  cli.run(main)


if __name__ == "__main__":
  run()
