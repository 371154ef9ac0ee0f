"""Creates ALBERT pretraining TFRecords (sentence-order pairs, n-gram masking) from text, globally shuffled.

  python tools/create_pretraining_data.py --input_file=corpus/*.txt \
      --output_file=data/train-0.tfrecord,data/train-1.tfrecord --spm_model_file=spm.model \
      --max_seq_length=128 --max_predictions_per_seq=20 --dupe_factor=10 --num_workers=8 \
      --eval_output_file=data/eval.tfrecord --eval_fraction=0.01

Every path may be in a bucket (gs://...), on this machine too: the shards appear there when the whole run has
succeeded, and the spill files (token stores, shuffle buckets) stay in a local temporary folder meanwhile.

Beyond one machine, the same tool runs as an Apache Beam pipeline (pip install "albert-tf[beam]"); Beam's
pipeline options follow ours:

  python tools/create_pretraining_data.py ... --runner=DataflowRunner --project=my-project \
      --region=us-central1 --temp_location=gs://my-bucket/tmp --setup_file=./setup.py

With --dynamic_masking the records are written unmasked, by default in one pass (--dupe_factor=1), and
run_pretraining masks them afresh every epoch with this run's masking flags, which the records carry:

  python tools/create_pretraining_data.py ... --dynamic_masking

Whole-word and n-gram masking take Google's word starts by default, under which every Hangul piece is a word;
--word_boundaries=sentencepiece makes eojeols the words (and --word_boundaries=morpheme eojeols split at
morphemes, for a vocabulary trained with --pretokenizer):

  python tools/create_pretraining_data.py ... --word_boundaries=sentencepiece

Flags and defaults are those of Google's create_pretraining_data.py, and so are the features of the
records; --num_workers, --single_segment_policy, --keep_accents, --eval_output_file, --eval_fraction,
--dynamic_masking, --word_boundaries, --shuffle_memory_mb and --runner are ours. --do_lower_case and
--keep_accents default to what train_sentencepiece recorded beside the SentencePiece model.
"""

import os
import time

from absl import flags
from absl import logging

from albert_tf import cli
from albert_tf.cli import data_flags
from albert_tf.cli import output_flags
from albert_tf.cli import tokenizer_flags
from albert_tf.data import pretraining_corpus
from albert_tf.data import pretraining_writer
from albert_tf.data import word_boundaries
from albert_tf.data.instances import SINGLE_SEGMENT_POLICIES, InstanceOptions
from albert_tf.files import expand_input_patterns, require_file

FLAGS = flags.FLAGS

flags.DEFINE_string("input_file", None, "Input text files or globs (comma-separated): one sentence per line, "
                    "a blank line between documents.")
flags.DEFINE_string("output_file", None, "Output TFRecord file, or a comma-separated list of shards.")
output_flags.define_overwrite_flag("the files of --output_file and --eval_output_file")
flags.DEFINE_string("spm_model_file", None, "The SentencePiece model.")
flags.DEFINE_string("vocab_file", None, "Accepted for compatibility with Google's commands; the vocabulary "
                    "is read from --spm_model_file.")
tokenizer_flags.define_tokenizer_flags()
flags.DEFINE_bool("do_whole_word_mask", True, "Mask whole words rather than single pieces.")
flags.DEFINE_enum("word_boundaries", word_boundaries.GOOGLE, word_boundaries.RULES,
                  "What a word is for whole-word and n-gram masking. google: Google's rule, under which every piece "
                  "with a character other than lower-case Latin letters (every Hangul piece) is a word of its "
                  "own; sentencepiece: only a piece after a space (\u2581) starts a word, so words are eojeols in "
                  "every script; morpheme: eojeols split where a morpheme starts, found with the Korean analyzer "
                  "the vocabulary was learned with (train_sentencepiece --pretokenizer; the korean extra).")
flags.DEFINE_bool("do_permutation", False, "Also permute a second set of n-grams (Google's experimental option).")
flags.DEFINE_bool("favor_shorter_ngram", True, "N-gram sizes with probabilities proportional to 1/n.")
flags.DEFINE_bool("random_next_sentence", False, "NSP-style negatives (B from a random document) instead of "
                  "sentence-order swaps.")
flags.DEFINE_bool("sentence_order_prediction", True, "Swap half of the segment pairs for the sentence-order "
                  "task; --nosentence_order_prediction keeps every pair in its text's order, for MLM-only "
                  "pretraining.")
flags.DEFINE_enum("single_segment_policy", "random_document", SINGLE_SEGMENT_POLICIES,
                  "A chunk of one sentence: B from a random other document, labelled 1 (Google's behaviour); "
                  "split_sentence: split the sentence and swap with p=0.5; skip.")
flags.DEFINE_bool("dynamic_masking", False, "Write unmasked records (token ids, word starts and this run's masking "
                  "flags); run_pretraining masks them afresh every epoch, so one pass (--dupe_factor=1) is enough "
                  "and run_pretraining's --max_predictions_per_seq sets the most masked positions.")
flags.DEFINE_integer("max_seq_length", 512, "Maximum sequence length.")
flags.DEFINE_integer("ngram", 3, "Longest n-gram to mask.")
flags.DEFINE_integer("max_predictions_per_seq", 20, "Most masked positions per sequence.")
flags.DEFINE_integer("random_seed", 12345, "Seed of every random choice: same seed, same bytes.")
flags.DEFINE_integer("dupe_factor", 40, "Passes over the corpus, each with different masks (and pairs); with "
                     "--dynamic_masking the default is 1, since training draws new masks every epoch.")
flags.DEFINE_float("masked_lm_prob", 0.15, "Masked LM probability.")
flags.DEFINE_float("short_seq_prob", 0.1, "Probability of a shorter target length for a document.")
flags.DEFINE_string("eval_output_file", None, "TFRecord file(s) for the held-out documents' records "
                    "(comma-separated shards), with --eval_fraction.")
flags.DEFINE_float("eval_fraction", 0.0, "Share of documents held out for evaluation (a seeded choice per "
                   "document), written to --eval_output_file.")
flags.DEFINE_integer("num_workers", os.cpu_count() or 1, "Worker processes of the local run; the output does "
                     "not depend on it.")
data_flags.define_data_flags()


def _paths(value):
  return [path for path in (value or "").split(",") if path]


def main(argv):
  options = InstanceOptions(
      max_seq_length=FLAGS.max_seq_length, max_predictions_per_seq=FLAGS.max_predictions_per_seq,
      masked_lm_prob=FLAGS.masked_lm_prob, short_seq_prob=FLAGS.short_seq_prob, ngram=FLAGS.ngram,
      favor_shorter_ngram=FLAGS.favor_shorter_ngram, do_whole_word_mask=FLAGS.do_whole_word_mask,
      do_permutation=FLAGS.do_permutation, random_next_sentence=FLAGS.random_next_sentence,
      single_segment_policy=FLAGS.single_segment_policy,
      sentence_order_prediction=FLAGS.sentence_order_prediction, dynamic_masking=FLAGS.dynamic_masking,
      word_boundaries=FLAGS.word_boundaries)
  pipeline_args = data_flags.pipeline_args(argv)
  expected_predictions = int(round(FLAGS.masked_lm_prob * FLAGS.max_seq_length))
  if FLAGS.max_predictions_per_seq < expected_predictions and not FLAGS.dynamic_masking:
    logging.warning(
        "--max_predictions_per_seq=%d is below masked_lm_prob × max_seq_length = %d: full-length sequences "
        "will have only %.1f%% of their tokens masked, not %.0f%%. Use --max_predictions_per_seq=%d.",
        FLAGS.max_predictions_per_seq, expected_predictions,
        100.0 * FLAGS.max_predictions_per_seq / FLAGS.max_seq_length, 100 * FLAGS.masked_lm_prob,
        expected_predictions)
  if FLAGS.vocab_file:
    require_file(FLAGS.vocab_file, "--vocab_file")
  dupe_factor = FLAGS.dupe_factor
  if FLAGS.dynamic_masking and not FLAGS["dupe_factor"].present:
    dupe_factor = 1
  text_options = tokenizer_flags.options_from_flags(FLAGS.spm_model_file)
  arguments = dict(
      input_files=expand_input_patterns(FLAGS.input_file), output_files=_paths(FLAGS.output_file),
      tokenizer_spec=pretraining_writer.TokenizerSpec(FLAGS.spm_model_file, text_options.do_lower_case,
                                                      text_options.keep_accents, text_options.pretokenizer),
      options=options, dupe_factor=dupe_factor, random_seed=FLAGS.random_seed,
      eval_output_files=_paths(FLAGS.eval_output_file), eval_fraction=FLAGS.eval_fraction,
      memory_bytes=FLAGS.shuffle_memory_mb << 20, overwrite=FLAGS.overwrite)
  with cli.sigterm_as_interrupt():
    start = time.time()
    if pipeline_args:
      summaries = data_flags.beam_engine().create_pretraining_data_beam(**arguments, pipeline_args=pipeline_args)
    else:
      summaries = pretraining_writer.create_pretraining_data(**arguments, num_workers=FLAGS.num_workers)
    print("\n".join(pretraining_corpus.summary_lines(summaries, time.time() - start)))


def run():
  """The `albert-create-pretraining-data` command."""
  flags.mark_flags_as_required(["input_file", "output_file", "spm_model_file"])
  cli.run(main, flags_parser=data_flags.parse_flags_leaving_pipeline_options)


if __name__ == "__main__":
  run()
