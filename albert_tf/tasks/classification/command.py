"""Fine-tunes ALBERT for classification or regression: Google's GLUE tasks, Korean benchmarks, or your own
TSV files.

  python tools/run_classifier.py --task_name=mrpc --data_dir=glue/MRPC --output_dir=runs/mrpc \
      --albert_config_file=albert_base/albert_config.json --spm_model_file=albert_base/spiece.model \
      --init_checkpoint=albert_base --max_seq_length=128 --do_train --do_eval --do_predict \
      --train_batch_size=32 --learning_rate=2e-5 --train_step=800 --warmup_step=200 \
      --save_checkpoints_steps=100 --export_dir=serving/mrpc

  # KLUE's topic classification from KLUE's own files (klue/ynat-v1.1/ynat-v1.1_train.json, ..._dev.json)
  python tools/run_classifier.py --task_name=klue-ynat --data_dir=klue --output_dir=runs/ynat \
      --albert_config_file=albert_ko/albert_config.json --spm_model_file=albert_ko/spiece.model \
      --init_checkpoint=albert_ko --max_seq_length=128 --do_train --do_eval --do_predict ...

  # Your own file: sentence in column 2, a score in column 1, binary classes at score > 0
  python tools/run_classifier.py --task_name=tsv --tsv_text_a_column=2 --tsv_label_column=1 \
      --tsv_label_threshold=0 --data_dir=my_data ...

The Korean tasks read their benchmarks' official files, under their official names, in --data_dir or in
the task's folder below it (each task's first metric picks the best checkpoint):
  klue-ynat  KLUE v1.1 YNAT (ynat-v1.1/ynat-v1.1_{train,dev}.json): news title -> 7 topics; macro_f1, accuracy
  klue-nli   KLUE v1.1 NLI (klue-nli-v1.1/...): premise, hypothesis -> entailment, neutral, contradiction;
             accuracy
  klue-sts   KLUE v1.1 STS (klue-sts-v1.1/...): sentence pair -> score 0-5; pearson, spearman, binary_f1 (KLUE's F1
             of score >= 3.0)
  klue-re    KLUE v1.1 RE (klue-re-v1.1/klue-re-v1.1_{train,dev}.json, relation_list.json): a sentence with its
             subject and object marked (--entity_markers) -> one of the listed relations; micro_f1 (without
             no_relation), auprc
  korsts     KorSTS (KorSTS/sts-{train,dev,test}.tsv): sentence pair -> score 0-5; spearman (the KorSTS paper's),
             pearson
  kornli     KorNLI (KorNLI/multinli.train.ko.tsv then snli_1.0_train.ko.tsv, xnli.{dev,test}.ko.tsv): accuracy
  nsmc       NSMC (ratings_train.txt, ratings_test.txt): movie review -> 0 negative, 1 positive; accuracy
KLUE's test labels are not public: a KLUE task's test split is its dev file, so --do_predict writes the dev
split's predictions. NSMC has no dev file: its test file is its dev split and its test split.

Flags and defaults are Google's run_classifier.py's; --task_name=tsv with the --tsv_* flags, --entity_markers,
--keep_accents, --dropout_prob, the strategy flags (as run_pretraining's), --mixed_precision, --random_seed,
--jit_compile and --log_steps are ours. Every checkpoint is evaluated on the dev split with --do_eval (eval_results.txt, and the
best by the task's metric kept as model.ckpt-best); --do_predict writes test_results.tsv and
submit_results.tsv from the best weights; --export_dir writes a SavedModel whose classify_text signature
takes raw text. Rerunning the same command resumes from the last checkpoint.
Every path may be in a bucket (gs://...), as on a Cloud TPU: --data_dir, --output_dir, --export_dir and the
model's files.
"""

from absl import flags

from albert_tf import cli
from albert_tf.cli import finetuning_flags
from albert_tf.errors import TaskError
from albert_tf.tasks.classification import catalogue
from albert_tf.tasks.classification import objective as classification_objective
from albert_tf.tasks.classification import relation_extraction
from albert_tf.tasks.classification import task_types
from albert_tf.tasks.classification import user_tsv

FLAGS = flags.FLAGS

# The flags that describe a user's own TSV files, for --task_name=tsv.
_TSV_FLAGS = ("tsv_text_a_column", "tsv_text_b_column", "tsv_label_column", "tsv_has_header", "tsv_is_regression",
              "tsv_label_list", "tsv_label_threshold", "tsv_test_has_labels")


def define_task_flags():
  """--task_name, --data_dir and the --tsv_* flags: which task's data is read, and how (`task_from_flags`)."""
  flags.DEFINE_string("data_dir", None, "The task's data: its files under their official names (GLUE's "
                      "train.tsv, dev.tsv, test.tsv; KLUE's ynat-v1.1_train.json, ...; KorSTS', KorNLI's, NSMC's), "
                      "in the task's folder of its download or the folder above it (Google's --data_dir); or one "
                      "file, read as each split.")
  flags.DEFINE_string("task_name", None, f"The task (any case): {', '.join(catalogue.KNOWN_TASKS)}. The Korean tasks' "
                      "test splits are labeled: KLUE's is its dev file (its test labels are not public), NSMC's "
                      "dev split is its test file.")
  flags.DEFINE_integer("tsv_text_a_column", 0, "tsv task: the column (0-based) of the first text.")
  flags.DEFINE_integer("tsv_text_b_column", None, "tsv task: the column of the second text, for pairs.")
  flags.DEFINE_integer("tsv_label_column", 1, "tsv task: the column of the label or score.")
  flags.DEFINE_bool("tsv_has_header", False, "tsv task: the first row of each file is a header.")
  flags.DEFINE_bool("tsv_is_regression", False, "tsv task: the label is a number to predict.")
  flags.DEFINE_list("tsv_label_list", None, "tsv task: the class labels in id order (default: the train "
                    "split's labels, sorted; numbers that look like a score's values, not classes, are refused "
                    "then).")
  flags.DEFINE_float("tsv_label_threshold", None, "tsv task: binary classes from a numeric score: 1 if "
                     "score > threshold, else 0.")
  flags.DEFINE_bool("tsv_test_has_labels", True, "tsv task: test.tsv has the label column too.")
  flags.DEFINE_enum("entity_markers", None, list(relation_extraction.ENTITY_MARKERS), "klue-re: how the subject "
                    "and object are marked in the text: typed_punct (default; '& * PER * 이순신 &', "
                    "'# ^ LOC ^ 서울 #', no new pieces) or added_pieces (⟦subject⟧, ⟪object⟫: pieces added by "
                    "tools/extend_vocab.py).")


def define_flags(data_dir_required: bool = True):
  """The flags of run_classifier and train_sentence_encoder (--task_name has no default; --data_dir is
  optional where a tool reads other data, as train_sentence_encoder's --parallel_file)."""
  finetuning_flags.define_run_flags()
  finetuning_flags.define_schedule_flags()
  define_task_flags()
  flags.DEFINE_bool("do_eval", False, "Evaluate every checkpoint on the dev split and keep the best.")
  flags.DEFINE_integer("eval_batch_size", 8, "Global eval batch size.")
  if data_dir_required:
    flags.mark_flag_as_required("data_dir")


def task_from_flags() -> task_types.Task:
  """The task of --task_name; for `tsv`, laid out as the --tsv_* flags say.

  Raises:
    TaskError: an unknown task, a bad layout, or --tsv_* flags given for another task.
  """
  if FLAGS.task_name.lower() != "tsv":
    given = [f"--{name}" for name in _TSV_FLAGS if FLAGS[name].present]
    if given:
      raise TaskError(f"{', '.join(given)} describe a tsv task's files; --task_name={FLAGS.task_name} "
                            "has its own layout.")
    return catalogue.get_task(FLAGS.task_name, entity_markers=FLAGS.entity_markers)
  tsv_format = user_tsv.TsvFormat(
      text_a_column=FLAGS.tsv_text_a_column, label_column=FLAGS.tsv_label_column,
      text_b_column=FLAGS.tsv_text_b_column, has_header=FLAGS.tsv_has_header,
      is_regression=FLAGS.tsv_is_regression,
      label_list=tuple(FLAGS.tsv_label_list) if FLAGS.tsv_label_list else None,
      label_threshold=FLAGS.tsv_label_threshold, test_has_labels=FLAGS.tsv_test_has_labels)
  return catalogue.get_task("tsv", tsv_format)


def main(argv):
  del argv
  finetuning_flags.fine_tune(classification_objective.ClassifierObjective(task_from_flags()))


def run():
  """The `albert-run-classifier` command."""
  define_flags()
  flags.mark_flag_as_required("task_name")
  cli.run(main)
