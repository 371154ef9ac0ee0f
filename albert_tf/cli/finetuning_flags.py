"""The absl flags of the fine-tuning tools (`run_classifier`, `train_sentence_encoder`), defined once.

Names and defaults are those of Google's `run_classifier.py` where it has the flag; the `--tsv_*` flags
describe a user's own TSV files for `--task_name=tsv`.
"""

import dataclasses

from absl import flags

from albert_tf.cli import memory_flags
from albert_tf.cli import strategy_flags
from albert_tf.cli import tokenizer_flags
from albert_tf.data import tasks
from albert_tf.modeling.config import AlbertConfig
from albert_tf.training import finetuning
from albert_tf.training import loop
from albert_tf.training import optimization

FLAGS = flags.FLAGS

_TSV_FLAGS = ("tsv_text_a_column", "tsv_text_b_column", "tsv_label_column", "tsv_has_header", "tsv_is_regression",
              "tsv_label_list", "tsv_label_threshold", "tsv_test_has_labels")


def define_flags():
  """Defines the fine-tuning flags, the strategy flags among them (--task_name has no default)."""
  flags.DEFINE_string("data_dir", None, "The task's data: a folder of train.tsv, dev.tsv, test.tsv (GLUE's "
                      "layout; Google's --data_dir, the task's folder or its parent).")
  flags.DEFINE_string("task_name", None, f"The task: {', '.join(tasks.KNOWN_TASKS)}.")
  flags.DEFINE_string("output_dir", None, "Checkpoints, summaries, eval results and predictions go here.")
  flags.DEFINE_string("albert_config_file", None, "The albert_config.json of the pretrained model.")
  flags.DEFINE_string("spm_model_file", None, "The SentencePiece model of the pretrained model.")
  flags.DEFINE_string("init_checkpoint", None, "The pretrained model to start from (its encoder): an albert-tf "
                      "checkpoint or directory, or one converted from Google or Hugging Face.")
  tokenizer_flags.define_tokenizer_flags()
  flags.DEFINE_integer("max_seq_length", 512, "Packed sequence length; longer texts are cut.")
  flags.DEFINE_bool("do_train", False, "Fine-tune on the train split.")
  flags.DEFINE_bool("do_eval", False, "Evaluate every checkpoint on the dev split and keep the best.")
  flags.DEFINE_bool("do_predict", False, "Write predictions for the test split.")
  flags.DEFINE_integer("train_batch_size", 32, "Global training batch size.")
  flags.DEFINE_integer("eval_batch_size", 8, "Global eval batch size.")
  flags.DEFINE_integer("predict_batch_size", 8, "Global prediction batch size.")
  flags.DEFINE_enum("optimizer", "adamw", optimization.OPTIMIZER_TYPES, "Google's AdamW or LAMB.")
  flags.DEFINE_float("learning_rate", 5e-5, "Peak learning rate.")
  flags.DEFINE_integer("train_step", 1000, "Training steps.")
  flags.DEFINE_integer("warmup_step", 0, "Linear warmup steps.")
  flags.DEFINE_integer("save_checkpoints_steps", 1000, "Steps between checkpoints (each is evaluated with "
                       "--do_eval).")
  flags.DEFINE_integer("keep_checkpoint_max", 5, "Checkpoints kept, besides model.ckpt-best.")
  flags.DEFINE_integer("iterations_per_loop", 1000, "Steps inside one tf.function call (the host loop).")
  flags.DEFINE_float("dropout_prob", 0.1, "Dropout on the pooled output before the classifier.")
  flags.DEFINE_string("export_dir", None, "Also export the best (else the last) weights as a SavedModel to "
                      "<export_dir>/<version>.")
  flags.DEFINE_enum("mixed_precision", "float32", list(loop.MIXED_PRECISION),
                    "Compute dtype: bfloat16 (TPU, recent GPUs) or float16 with dynamic loss scaling.")
  flags.DEFINE_integer("random_seed", 12345, "Seed of the input order, dropout and the head's initialisation.")
  flags.DEFINE_bool("jit_compile", False, "Compile the training step with XLA (TPUs always do).")
  flags.DEFINE_integer("log_steps", None, "Steps between progress lines (default: --iterations_per_loop).")
  strategy_flags.define_strategy_flags()
  memory_flags.define_memory_flags()
  flags.DEFINE_integer("tsv_text_a_column", 0, "tsv task: the column (0-based) of the first text.")
  flags.DEFINE_integer("tsv_text_b_column", None, "tsv task: the column of the second text, for pairs.")
  flags.DEFINE_integer("tsv_label_column", 1, "tsv task: the column of the label or score.")
  flags.DEFINE_bool("tsv_has_header", False, "tsv task: the first row of each file is a header.")
  flags.DEFINE_bool("tsv_is_regression", False, "tsv task: the label is a number to predict.")
  flags.DEFINE_list("tsv_label_list", None, "tsv task: the class labels in id order (default: the train "
                    "split's labels, sorted).")
  flags.DEFINE_float("tsv_label_threshold", None, "tsv task: binary classes from a numeric score: 1 if "
                     "score > threshold, else 0.")
  flags.DEFINE_bool("tsv_test_has_labels", True, "tsv task: test.tsv has the label column too.")
  flags.mark_flags_as_required(["data_dir", "output_dir", "albert_config_file", "spm_model_file"])


def task_from_flags() -> tasks.Task:
  """The task of --task_name; for `tsv`, laid out as the --tsv_* flags say.

  Raises:
    TaskError: an unknown task, a bad layout, or --tsv_* flags given for another task.
  """
  if FLAGS.task_name.lower() != "tsv":
    given = [f"--{name}" for name in _TSV_FLAGS if FLAGS[name].present]
    if given:
      raise tasks.TaskError(f"{', '.join(given)} describe a tsv task's files; --task_name={FLAGS.task_name} "
                            "has its own layout.")
    return tasks.get_task(FLAGS.task_name)
  tsv_format = tasks.TsvFormat(
      text_a_column=FLAGS.tsv_text_a_column, label_column=FLAGS.tsv_label_column,
      text_b_column=FLAGS.tsv_text_b_column, has_header=FLAGS.tsv_has_header,
      is_regression=FLAGS.tsv_is_regression,
      label_list=tuple(FLAGS.tsv_label_list) if FLAGS.tsv_label_list else None,
      label_threshold=FLAGS.tsv_label_threshold, test_has_labels=FLAGS.tsv_test_has_labels)
  return tasks.get_task("tsv", tsv_format)


def options_from_flags() -> finetuning.FineTuningOptions:
  """The run's `FineTuningOptions` from the flags."""
  return finetuning.FineTuningOptions(
      data_dir=FLAGS.data_dir, output_dir=FLAGS.output_dir,
      albert_config=AlbertConfig.from_json_file(FLAGS.albert_config_file), spm_model_file=FLAGS.spm_model_file,
      init_checkpoint=FLAGS.init_checkpoint, **dataclasses.asdict(tokenizer_flags.options_from_flags(
          FLAGS.spm_model_file)),
      max_seq_length=FLAGS.max_seq_length, do_train=FLAGS.do_train, do_eval=FLAGS.do_eval,
      do_predict=FLAGS.do_predict, train_batch_size=FLAGS.train_batch_size, eval_batch_size=FLAGS.eval_batch_size,
      predict_batch_size=FLAGS.predict_batch_size, optimizer=FLAGS.optimizer, learning_rate=FLAGS.learning_rate,
      train_step=FLAGS.train_step, warmup_step=FLAGS.warmup_step,
      save_checkpoints_steps=FLAGS.save_checkpoints_steps, keep_checkpoint_max=FLAGS.keep_checkpoint_max,
      iterations_per_loop=FLAGS.iterations_per_loop, dropout_prob=FLAGS.dropout_prob,
      mixed_precision=FLAGS.mixed_precision, random_seed=FLAGS.random_seed, jit_compile=FLAGS.jit_compile,
      log_steps=FLAGS.log_steps, export_dir=FLAGS.export_dir,
      gradient_accumulation_steps=FLAGS.gradient_accumulation_steps, recompute_grad=FLAGS.recompute_grad)
