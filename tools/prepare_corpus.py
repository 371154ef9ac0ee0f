"""Turns raw text into the input of create_pretraining_data: one sentence a line, a blank line between
documents, in Unicode NFC, exact duplicates and short documents dropped.

  python tools/prepare_corpus.py --input_file='crawl/*.jsonl.gz' --input_format=jsonl --text_field=text \
      --language=ko --output_file=corpus/ko.txt --num_shards=16 --num_workers=8 --min_sentences=2

Korean sentences are split by Kiwi (pip install "albert-tf[korean]"), other languages by sentencex
(--language=en, de, ja, ...); --language=auto chooses per document. The output does not depend on
--num_workers. Every path may be in a bucket (gs://...), on this machine too: the shards appear there when the
whole run has succeeded. Beyond one machine, the same tool runs as an Apache Beam pipeline, with Beam's pipeline
options after ours (pip install "albert-tf[beam]"):

  python tools/prepare_corpus.py ... --runner=DataflowRunner --project=my-project --region=us-central1 \
      --temp_location=gs://my-bucket/tmp --setup_file=./setup.py
"""

import os
import time

from absl import flags

from albert_tf import cli
from albert_tf.cli import data_flags
from albert_tf.cli import output_flags
from albert_tf.data import corpus_preparation
from albert_tf.errors import OptionError
from albert_tf.files import expand_input_patterns

FLAGS = flags.FLAGS

flags.DEFINE_string("input_file", None, "Raw text files or globs (comma-separated), plain or .gz.")
flags.DEFINE_enum("input_format", "paragraphs", corpus_preparation.INPUT_FORMATS,
                  "paragraphs: a blank line between documents (a document's lines are one wrapped paragraph); "
                  "lines: a document a line; jsonl: a JSON object a line, the text in --text_field (its line "
                  "breaks separate paragraphs).")
flags.DEFINE_string("text_field", "text", "The field of a jsonl object that holds the document's text.")
flags.DEFINE_string("language", "auto", "ko (Kiwi), auto (Korean or not, per document), or an ISO 639 code for "
                    "sentencex: en, de, ja, ...")
flags.DEFINE_string("output_file", None, "Output text file, or a comma-separated list of shards; with "
                    "--num_shards, the name the shards are numbered from (ko.txt → ko-00000-of-00016.txt, ...).")
output_flags.define_overwrite_flag("the files of --output_file")
flags.DEFINE_integer("num_shards", None, "Number of output shards named after --output_file.", lower_bound=1)
flags.DEFINE_integer("min_sentences", 1, "Documents with fewer sentences are dropped (and counted).", lower_bound=1)
flags.DEFINE_integer("min_chars", 0, "Documents with fewer characters are dropped (and counted).", lower_bound=0)
flags.DEFINE_integer("num_workers", os.cpu_count() or 1, "Worker processes of the local run; the output does "
                     "not depend on it.", lower_bound=1)
data_flags.define_runner_flag()


def output_files():
  names = [path for path in FLAGS.output_file.split(",") if path]
  if FLAGS.num_shards is None:
    return names
  if len(names) != 1:
    raise OptionError("--num_shards numbers the shards after one --output_file; give one name, or list the "
                      "shards without --num_shards.")
  return corpus_preparation.shard_file_names(names[0], FLAGS.num_shards)


def main(argv):
  pipeline_args = data_flags.pipeline_args(argv)
  options = corpus_preparation.PreparationOptions(
      input_format=FLAGS.input_format, text_field=FLAGS.text_field, language=FLAGS.language,
      min_sentences=FLAGS.min_sentences, min_chars=FLAGS.min_chars)
  arguments = dict(input_files=expand_input_patterns(FLAGS.input_file), output_files=output_files(),
                   options=options, overwrite=FLAGS.overwrite)
  with cli.sigterm_as_interrupt():
    start = time.time()
    if pipeline_args:
      engine = data_flags.beam_engine("corpus_preparation_beam")
      summary = engine.prepare_corpus_beam(**arguments, pipeline_args=pipeline_args)
    else:
      summary = corpus_preparation.prepare_corpus(**arguments, num_workers=FLAGS.num_workers)
    seconds = time.time() - start
    print("\n".join(summary.lines() + [f"done in {seconds:.1f} s"]))


def run():
  """The `albert-prepare-corpus` command."""
  flags.mark_flags_as_required(["input_file", "output_file"])
  cli.run(main, flags_parser=data_flags.parse_flags_leaving_pipeline_options)


if __name__ == "__main__":
  run()
