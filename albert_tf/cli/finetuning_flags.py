"""The absl flags of the fine-tuning tools, defined once: those all share (`define_run_flags`), and those of
`run_classifier` and `train_sentence_encoder` (`define_flags`); `reading_flags` adds SQuAD's and RACE's.

Names and defaults are those of Google's `run_classifier.py` where it has the flag; the `--tsv_*` flags
describe a user's own TSV files for `--task_name=tsv`.
"""

import dataclasses

from absl import flags

from albert_tf.cli import memory_flags
from albert_tf.cli import strategy_flags
from albert_tf.cli import tokenizer_flags
from albert_tf.errors import TaskError
from albert_tf.modeling.config import AlbertConfig
from albert_tf.tasks.classification import catalogue
from albert_tf.tasks.classification import relation_extraction
from albert_tf.tasks.classification import task_types
from albert_tf.tasks.classification import user_tsv
from albert_tf.training import finetuning
from albert_tf.training import loop
from albert_tf.training import optimization

FLAGS = flags.FLAGS

_TSV_FLAGS = ("tsv_text_a_column", "tsv_text_b_column", "tsv_label_column", "tsv_has_header", "tsv_is_regression",
              "tsv_label_list", "tsv_label_threshold", "tsv_test_has_labels")


def define_run_flags():
  """The flags every fine-tuning tool shares (Google's names and defaults where Google has the flag)."""
  flags.DEFINE_string("output_dir", None, "Checkpoints, summaries, eval results and predictions go here (a local "
                      "folder or one in a bucket, gs://...).")
  flags.DEFINE_string("albert_config_file", None, "The albert_config.json of the pretrained model (local or "
                      "gs://...).")
  flags.DEFINE_string("spm_model_file", None, "The SentencePiece model of the pretrained model.")
  flags.DEFINE_string("init_checkpoint", None, "The pretrained model to start from (its encoder): an albert-tf "
                      "checkpoint or directory, or one converted from Google or Hugging Face (local or gs://...).")
  tokenizer_flags.define_tokenizer_flags()
  flags.DEFINE_integer("max_seq_length", 512, "Packed sequence length; longer texts are cut.")
  flags.DEFINE_bool("do_train", False, "Fine-tune on the train split.")
  flags.DEFINE_bool("do_predict", False, "Write predictions for the test split.")
  flags.DEFINE_integer("train_batch_size", 32, "Global training batch size.")
  flags.DEFINE_integer("predict_batch_size", 8, "Global prediction batch size.")
  flags.DEFINE_enum("optimizer", "adamw", optimization.OPTIMIZER_TYPES, "Google's AdamW or LAMB.")
  flags.DEFINE_float("learning_rate", 5e-5, "Peak learning rate.")
  flags.DEFINE_integer("save_checkpoints_steps", 1000, "Steps between checkpoints (each is evaluated with "
                       "--do_eval).")
  flags.DEFINE_integer("keep_checkpoint_max", 5, "Checkpoints kept, besides model.ckpt-best.")
  flags.DEFINE_integer("iterations_per_loop", 1000, "Steps inside one tf.function call (the host loop).")
  flags.DEFINE_float("dropout_prob", 0.1, "Dropout in the task head while training.")
  flags.DEFINE_string("export_dir", None, "Also export the best (else the last) weights as a SavedModel to "
                      "<export_dir>/<version> (local or gs://...).")
  flags.DEFINE_enum("mixed_precision", "float32", list(loop.MIXED_PRECISION),
                    "Compute dtype: bfloat16 (TPU, recent GPUs) or float16 with dynamic loss scaling.")
  flags.DEFINE_integer("random_seed", 12345, "Seed of the input order, dropout and the head's initialisation.")
  flags.DEFINE_bool("jit_compile", False, "Compile the training step with XLA (TPUs always do).")
  flags.DEFINE_integer("log_steps", None, "Steps between progress lines (default: --iterations_per_loop).")
  strategy_flags.define_strategy_flags()
  memory_flags.define_memory_flags()
  flags.mark_flags_as_required(["output_dir", "albert_config_file", "spm_model_file"])


def define_schedule_flags():
  """Google's run_classifier.py and run_race.py schedule: steps rather than epochs."""
  flags.DEFINE_integer("train_step", 1000, "Training steps.")
  flags.DEFINE_integer("warmup_step", 0, "Linear warmup steps.")


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
  define_run_flags()
  define_schedule_flags()
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


def options_from_flags(**values) -> finetuning.FineTuningOptions:
  """The run's `FineTuningOptions`: each field from the flag of its name where the tool defines one, else
  from `values` (what a tool computes, e.g. SQuAD's steps from its epochs), else the field's default."""
  text_options = tokenizer_flags.options_from_flags(FLAGS.spm_model_file)
  # The options that change ids; the pretokenizer is a record of how the vocabulary was learned.
  derived = dict(albert_config=AlbertConfig.from_json_file(FLAGS.albert_config_file),
                 do_lower_case=text_options.do_lower_case, keep_accents=text_options.keep_accents)
  derived.update(values)
  fields = {field.name for field in dataclasses.fields(finetuning.FineTuningOptions)}
  from_flags = {name: FLAGS[name].value for name in fields if name in FLAGS and name not in derived}
  return finetuning.FineTuningOptions(**from_flags, **derived)
