"""The absl flags every fine-tuning tool shares, defined once: the run's (`define_run_flags`), the schedule in
steps (`define_schedule_flags`), the run's options from them (`options_from_flags`), and the run itself
(`fine_tune`). Each task's package adds its own flags in its `command` module; `reading_flags` holds those of
the tools that read a task's files.

Names and defaults are those of Google's `run_classifier.py` where it has the flag.
"""

import dataclasses

from absl import flags

from albert_tf.cli import memory_flags
from albert_tf.cli import strategy_flags
from albert_tf.cli import tokenizer_flags
from albert_tf.modeling.config import AlbertConfig
from albert_tf.training import finetuning
from albert_tf.training import loop
from albert_tf.training import optimization

FLAGS = flags.FLAGS


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


def fine_tune(objective: finetuning.FineTuningObjective, **values):
  """Fine-tunes `objective` with the run's options (`options_from_flags(**values)`) and distribution strategy."""
  finetuning.run(options_from_flags(**values), objective, strategy_flags.strategy_from_flags())
