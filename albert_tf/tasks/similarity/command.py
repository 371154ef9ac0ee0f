"""The command lines of train_sentence_encoder and evaluate_sts (`run_train_sentence_encoder`,
`run_evaluate_sts`): their flags, usage texts and `main`s."""

from absl import flags

from albert_tf import cli
from albert_tf import files
from albert_tf.cli import finetuning_flags
from albert_tf.cli import output_flags
from albert_tf.cli import strategy_flags
from albert_tf.cli import tokenizer_flags
from albert_tf.errors import OptionError
from albert_tf.modeling.layers.pooling import POOLING_MODES
from albert_tf.tasks.classification import command as classification_command
from albert_tf.tasks.similarity import distillation
from albert_tf.tasks.similarity import objective as similarity_objective
from albert_tf.tasks.similarity import parallel_text
from albert_tf.tasks.similarity import sts_evaluation
from albert_tf.training import finetuning

FLAGS = flags.FLAGS

TRAIN_SENTENCE_ENCODER_USAGE = """Trains a sentence encoder (Sentence-BERT style) from ALBERT: on scored text pairs, or by distillation.

  # STS regression: the cosine of two embeddings fits the pair's score
  python tools/train_sentence_encoder.py --task_name=klue-sts --data_dir=klue --output_dir=runs/sbert \
      --albert_config_file=albert_base/albert_config.json --spm_model_file=albert_base/spiece.model \
      --init_checkpoint=albert_base --pooling=cls --do_train --do_eval --train_step=2000 --warmup_step=200 \
      --export_dir=serving/sentence_encoder

  # Cross-lingual distillation: English sentences and their translations onto an English teacher's embeddings
  python tools/train_sentence_encoder.py --parallel_file=en_ko.tsv --teacher=serving/english_encoder/1 \
      --projection_dim=768 --output_dir=runs/student --albert_config_file=... --spm_model_file=en_ko.model \
      --init_checkpoint=albert_en_ko --do_train --do_eval --task_name=korsts --data_dir=KorSTS ...

Each text is encoded alone; its embedding pools the token vectors (--pooling: mean, cls or max over real
tokens), optionally projects them (--projection_dim: Dense + tanh) and is L2-normalised. The exported
SavedModel's sentence_embedding signature computes the same; tools/export_hf.py writes it as a
sentence-transformers folder.

- STS (without --parallel_file): the cosine similarity of a pair is fitted to the pair's score scaled to
  [0, 1] (--score_range, default the train split's lowest and highest score). The task is a regression of
  pairs: sts-b, klue-sts, korsts, or tsv with --tsv_text_b_column and --tsv_is_regression. Each checkpoint is
  scored by the Spearman correlation of cosines and scores on the dev split; the best is kept.
- Distillation (--parallel_file, source<TAB>translation per line, and --teacher, a SavedModel with a
  sentence_embedding signature or a .npy of its embeddings of the sources in file order): the student's
  embeddings of the source and of the translation both regress the teacher's (unit-length) embedding of the
  source. --parallel_dev_size pairs, drawn by --random_seed, are held out; each checkpoint is scored by
  translation retrieval (top-1, both directions; their mean picks the best), the MSE, and with --task_name
  and --data_dir the STS dev split's Spearman correlation.

Flags as tools/run_classifier.py. --do_eval without --do_train scores the --init_checkpoint as it is.
Every path may be in a bucket (gs://...), as on a Cloud TPU.
"""

EVALUATE_STS_USAGE = """Scores a sentence encoder on semantic textual similarity, as sentence-transformers'
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


def _score_range():
  if not FLAGS.score_range:
    return None
  try:
    low, high = (float(value) for value in FLAGS.score_range)
  except ValueError:
    raise OptionError(f"--score_range takes the lowest and highest score, e.g. 0,5; not "
                      f"{','.join(FLAGS.score_range)}.") from None
  return low, high


def _distillation_objective(options) -> distillation.DistillationObjective:
  if not (FLAGS.parallel_file and FLAGS.teacher):
    raise OptionError("Distillation needs both --parallel_file (source<TAB>translation) and --teacher.")
  if FLAGS.score_range:
    raise OptionError("--score_range scales STS scores for STS training; distillation learns from --teacher.")
  if FLAGS.projection_dim is not None and FLAGS.projection_dim <= 0:
    raise OptionError(f"--projection_dim={FLAGS.projection_dim} must be positive.")
  pairs = parallel_text.read_parallel_file(FLAGS.parallel_file)
  parallel_text.check_dev_size(len(pairs), FLAGS.parallel_dev_size)
  sts_task = classification_command.task_from_flags() if FLAGS.data_dir else None
  student_size = FLAGS.projection_dim or options.albert_config.hidden_size
  teacher = distillation.teacher_embeddings(FLAGS.teacher, [pair.source for pair in pairs], student_size,
                                            FLAGS.projection_dim)
  return distillation.DistillationObjective(pairs, teacher, FLAGS.parallel_dev_size, FLAGS.random_seed, sts_task,
                                            FLAGS.pooling, FLAGS.projection_dim)


def train_sentence_encoder(argv):
  del argv
  options = finetuning_flags.options_from_flags()
  if FLAGS.parallel_file or FLAGS.teacher:
    objective = _distillation_objective(options)
  elif not FLAGS.data_dir:
    raise OptionError("Nothing to learn from: give an STS task's --data_dir, or --parallel_file and --teacher.")
  else:
    objective = similarity_objective.SentenceSimilarityObjective(
        classification_command.task_from_flags(), _score_range(), FLAGS.pooling, FLAGS.projection_dim)
  finetuning.run(options, objective, strategy_flags.strategy_from_flags())


def define_train_sentence_encoder_flags():
  """The flags of train_sentence_encoder: run_classifier's, the embedding's and distillation's."""
  classification_command.define_flags(data_dir_required=False)
  flags.DEFINE_list("score_range", None, "STS: the lowest and highest similarity score, e.g. 0,5 (default: the "
                    "train split's).")
  flags.DEFINE_enum("pooling", "mean", list(POOLING_MODES), "How token vectors become one embedding: their mean, "
                    "the [CLS] token's vector, or their element-wise maximum (real tokens only).")
  flags.DEFINE_integer("projection_dim", None, "Project the pooled vector to this size (Dense + tanh) before "
                       "normalising; e.g. a distillation teacher's embedding size.")
  flags.DEFINE_string("parallel_file", None, "Distillation: a UTF-8 file of source<TAB>translation lines (further "
                      "columns ignored); local or gs://...")
  flags.DEFINE_string("teacher", None, "Distillation: a SavedModel with a sentence_embedding signature (ours or "
                      "another), or a .npy of its embeddings of the parallel file's sources, in file order; local "
                      "or gs://...")
  flags.DEFINE_integer("parallel_dev_size", 1000, "Distillation: pairs held out (drawn by --random_seed) to score "
                       "checkpoints with --do_eval.")
  FLAGS.set_default("task_name", "sts-b")
  FLAGS.set_default("max_seq_length", 128)


def run_train_sentence_encoder():
  """The `albert-train-sentence-encoder` command."""
  define_train_sentence_encoder_flags()
  cli.run(train_sentence_encoder, TRAIN_SENTENCE_ENCODER_USAGE)


def define_evaluate_sts_flags():
  """The flags of evaluate_sts: the model's, the task's data (as run_classifier's) and the output file."""
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
  classification_command.define_task_flags()
  flags.DEFINE_enum("split", "dev", ["dev", "test"], "The split to score (its pairs must have scores).")
  flags.DEFINE_string("output_file", None, "Also write the correlations here as CSV (similarity,pearson,spearman); "
                      "local or gs://...")
  output_flags.define_overwrite_flag("--output_file")


def evaluate_sts(argv):
  del argv
  source = sts_evaluation.ModelSource(
      saved_model=FLAGS.saved_model, checkpoint=FLAGS.checkpoint, hf_folder=FLAGS.hf_folder,
      albert_config_file=FLAGS.albert_config_file, spm_model_file=FLAGS.spm_model_file,
      max_seq_length=FLAGS.max_seq_length, do_lower_case=FLAGS.do_lower_case, keep_accents=FLAGS.keep_accents)
  source.check()  # before the data is read
  if FLAGS.output_file:
    files.check_output_files([FLAGS.output_file], FLAGS.overwrite)
  task = classification_command.task_from_flags()
  similarity_objective.check_similarity_task(task)
  examples = task.read_examples(FLAGS.data_dir, FLAGS.split)
  evaluation = sts_evaluation.evaluate(examples, source.embedder(FLAGS.batch_size))
  print(f"{task.name} {FLAGS.split}: {evaluation.num_pairs:,} pairs ({evaluation.num_texts:,} distinct texts), "
        f"{source.describe()}:")
  print("\n".join(evaluation.lines()))
  if FLAGS.output_file:
    files.write_output_file(FLAGS.output_file, evaluation.to_csv())
    print(f"Wrote {FLAGS.output_file}")


def run_evaluate_sts():
  """The `albert-evaluate-sts` command."""
  define_evaluate_sts_flags()
  flags.mark_flags_as_required(["task_name", "data_dir"])
  cli.run(evaluate_sts, EVALUATE_STS_USAGE)
