"""Extends a SentencePiece vocabulary (and a model's embeddings) with pieces for new text, e.g. Korean for an
English model, keeping every old id and the old text's segmentation.

  python tools/extend_vocab.py --spm_model_file=albert_base/spiece.model --input_file='corpus/ko_*.txt' \
      --num_new_pieces=10000 --init_checkpoint=albert_base/ --output_dir=albert_base_ko \
      --parity_text=corpus/ko_sample.txt,corpus/en_sample.txt

learns pieces from the corpus with a SentencePiece model of the old model's type and normalisation, appends
those holding characters the old model lacks (ids after the old ones), and writes the merged spiece.model,
spiece.vocab and the tokenizer options to --output_dir. With --init_checkpoint (albert-tf, Google's TF1 or a
Hugging Face folder) it also writes model.ckpt and albert_config.json with the new vocab_size: old embedding
rows and MLM output-bias entries are kept bit for bit, each new one is the mean over the old pieces that
spelled the new piece. Continue pretraining with run_pretraining --init_checkpoint=<output_dir>.
--new_pieces_file takes a word (or a piece with ▁) a line instead of a corpus. Every path may be in a bucket
(gs://...).
"""

import os

from absl import flags

from albert_tf import cli
from albert_tf.cli import output_flags
from albert_tf.cli import tokenizer_flags
from albert_tf.interop import vocab_resizing

FLAGS = flags.FLAGS

flags.DEFINE_string("spm_model_file", None, "The SentencePiece model to extend.")
flags.DEFINE_list("input_file", None, "A corpus to learn the new pieces from: text files or globs, comma-separated, "
                  "in Google's pretraining format.")
flags.DEFINE_string("new_pieces_file", None, "Instead of --input_file: a word a line (added as ▁word, word and its "
                    "new characters), or a piece holding ▁ (added as it is).")
flags.DEFINE_integer("num_new_pieces", 10000, "The most pieces to learn from --input_file.")
flags.DEFINE_string("output_dir", None, "New directory for spiece.model, spiece.vocab, the tokenizer options and, "
                    "with --init_checkpoint, model.ckpt and albert_config.json.")
output_flags.define_overwrite_flag("the vocabulary and checkpoint in --output_dir")
flags.DEFINE_string("init_checkpoint", None, "A model to extend: an albert-tf checkpoint, one of Google's TF1 "
                    "checkpoints or a Hugging Face folder.")
flags.DEFINE_string("albert_config_file", None, "The config of --init_checkpoint (default: the albert_config.json "
                    "beside it; a Hugging Face folder has its config.json).")
flags.DEFINE_list("parity_text", [], "Text files (a line a text) to measure <unk> rate, pieces per word and "
                  "changed ids on, before and after.")
flags.DEFINE_float("character_coverage", 0.9995, "Fraction of the corpus's characters the learned pieces cover.")
flags.DEFINE_integer("input_sentence_size", 10_000_000, "Lines of the corpus sampled to learn from; 0: all.")
flags.DEFINE_integer("num_threads", os.cpu_count(), "Threads to learn the pieces with.")
tokenizer_flags.define_tokenizer_flags()


def main(argv):
  del argv
  result = vocab_resizing.extend_vocabulary(
      FLAGS.spm_model_file, FLAGS.output_dir, input_patterns=FLAGS.input_file, new_pieces_file=FLAGS.new_pieces_file,
      num_new_pieces=FLAGS.num_new_pieces, do_lower_case=FLAGS.do_lower_case, keep_accents=FLAGS.keep_accents,
      init_checkpoint=FLAGS.init_checkpoint, albert_config_file=FLAGS.albert_config_file,
      parity_text_files=FLAGS.parity_text, character_coverage=FLAGS.character_coverage,
      input_sentence_size=FLAGS.input_sentence_size, num_threads=FLAGS.num_threads, overwrite=FLAGS.overwrite)
  print(result.summary())


def run():
  """The `albert-extend-vocab` command."""
  flags.mark_flags_as_required(["spm_model_file", "output_dir"])
  cli.run(main)


if __name__ == "__main__":
  run()
