"""Scores a sentence encoder on semantic textual similarity, as sentence-transformers'
EmbeddingSimilarityEvaluator does.

  python tools/evaluate_sts.py --saved_model=serving/sentence_encoder/1 --task_name=sts-b --data_dir=glue_data
  python tools/evaluate_sts.py --checkpoint=runs/sbert --albert_config_file=runs/sbert/albert_config.json \
      --spm_model_file=albert_base/spiece.model --task_name=klue-sts --data_dir=klue --output_file=sts.csv
  python tools/evaluate_sts.py --hf_folder=albert_sbert_hf --task_name=tsv --data_dir=pairs.tsv \
      --tsv_text_a_column=0 --tsv_text_b_column=1 --tsv_label_column=2 --tsv_is_regression

The model is one of --saved_model (its sentence_embedding signature), --checkpoint (a sentence encoder's own
pooling and projection; any other model's mean token vector) or --hf_folder (a folder of tools/export_hf.py or
of sentence-transformers, computed as its modules.json says; without one, the mean token vector). The data is
the --split of a task whose examples are scored text pairs (sts-b, klue-sts, korsts, or tsv laid out by the
--tsv_* flags), read as tools/run_classifier.py reads it.

Each distinct text is embedded alone; the Pearson and Spearman correlations of the gold scores with four
similarities of each pair's embeddings (cosine, negative Manhattan distance, negative Euclidean distance, dot
product) are printed and, with --output_file, written as CSV: a header `similarity,pearson,spearman` and a row
per similarity. Every path may be in a bucket (gs://...).
"""

from absl import flags

from albert_tf import cli
from albert_tf import files
from albert_tf.cli import finetuning_flags
from albert_tf.cli import output_flags
from albert_tf.cli import tokenizer_flags
from albert_tf.tasks.similarity import objective as similarity_objective
from albert_tf.tasks.similarity import sts_evaluation

FLAGS = flags.FLAGS

flags.DEFINE_string("saved_model", None, "A SavedModel with a sentence_embedding signature (a version folder, "
                    "<export_dir>/<version>).")
flags.DEFINE_string("checkpoint", None, "An albert-tf checkpoint prefix, or a directory meaning its latest "
                    "checkpoint; with --albert_config_file and --spm_model_file.")
flags.DEFINE_string("hf_folder", None, "A Hugging Face ALBERT folder (tools/export_hf.py's, or one "
                    "sentence-transformers saved).")
flags.DEFINE_string("albert_config_file", None, "--checkpoint: the albert_config.json it was written with.")
flags.DEFINE_string("spm_model_file", None, "--checkpoint: its SentencePiece model; --hf_folder: the "
                    "SentencePiece model of a folder without spiece.model.")
tokenizer_flags.define_tokenizer_flags()
flags.DEFINE_integer("max_seq_length", None, "Texts are cut to this many tokens, [CLS] and [SEP] included. "
                     "Default: 128 for --checkpoint (at most its max_position_embeddings); for --hf_folder, "
                     "what sentence-transformers takes (sentence_bert_config.json, else the tokenizer's "
                     "model_max_length); a SavedModel packs to the length it was exported with.")
flags.DEFINE_integer("batch_size", 64, "Texts embedded together.")
finetuning_flags.define_task_flags()
flags.DEFINE_enum("split", "dev", ["dev", "test"], "The split to score (its pairs must have scores).")
flags.DEFINE_string("output_file", None, "Also write the correlations here as CSV (similarity,pearson,spearman); "
                    "local or gs://...")
output_flags.define_overwrite_flag("--output_file")


def main(argv):
  del argv
  source = sts_evaluation.ModelSource(
      saved_model=FLAGS.saved_model, checkpoint=FLAGS.checkpoint, hf_folder=FLAGS.hf_folder,
      albert_config_file=FLAGS.albert_config_file, spm_model_file=FLAGS.spm_model_file,
      max_seq_length=FLAGS.max_seq_length, do_lower_case=FLAGS.do_lower_case, keep_accents=FLAGS.keep_accents)
  source.check()  # before the data is read
  if FLAGS.output_file:
    files.check_output_files([FLAGS.output_file], FLAGS.overwrite)
  task = finetuning_flags.task_from_flags()
  similarity_objective.check_similarity_task(task)
  examples = task.read_examples(FLAGS.data_dir, FLAGS.split)
  evaluation = sts_evaluation.evaluate(examples, source.embedder(FLAGS.batch_size))
  print(f"{task.name} {FLAGS.split}: {evaluation.num_pairs:,} pairs ({evaluation.num_texts:,} distinct texts), "
        f"{source.describe()}:")
  print("\n".join(evaluation.lines()))
  if FLAGS.output_file:
    files.write_output_file(FLAGS.output_file, evaluation.to_csv())
    print(f"Wrote {FLAGS.output_file}")


def run():
  """The `albert-evaluate-sts` command."""
  flags.mark_flags_as_required(["task_name", "data_dir"])
  cli.run(main)


if __name__ == "__main__":
  run()
