"""The absl flags shared by the fine-tuning tools that read a task's files from --data_dir and score every checkpoint
on its dev split (run_race, run_token_classification, ...), defined once (`define_reading_flags`), and the Python
tokenizer these tools read text with (`model_tokenizer`). Each task's package defines the rest in its `command`
module.
"""

from typing import Sequence

from absl import flags

from albert_tf.cli import finetuning_flags
from albert_tf.text.tokenizer import SentencePieceTokenizer

FLAGS = flags.FLAGS


def model_tokenizer() -> SentencePieceTokenizer:
  """The Python tokenizer of --spm_model_file, with the options of its record or flags."""
  text_options = finetuning_flags.tokenizer_flags.options_from_flags(FLAGS.spm_model_file)
  return SentencePieceTokenizer(FLAGS.spm_model_file, text_options.do_lower_case, text_options.keep_accents)


def define_reading_flags(data_dir_help: str, eval_batch_size: int, formats: Sequence[str] = (),
                         task_name_help: str = "", **defaults):
  """The shared fine-tuning and schedule flags, --data_dir (required), --do_eval and --eval_batch_size, and, where
  the task reads several file `formats`, a required --task_name that picks one.

  `defaults` are the task's own defaults of shared flags (Google's run_race.py values for RACE, ...); every such
  tool trains by default.
  """
  finetuning_flags.define_run_flags()
  finetuning_flags.define_schedule_flags()
  required = ["data_dir"]
  if formats:
    flags.DEFINE_enum("task_name", None, list(formats), task_name_help)
    required.insert(0, "task_name")
  flags.DEFINE_string("data_dir", None, data_dir_help)
  flags.DEFINE_bool("do_eval", True, "Evaluate every checkpoint on the dev split and keep the best.")
  flags.DEFINE_integer("eval_batch_size", eval_batch_size, "Global eval batch size.")
  flags.mark_flags_as_required(required)
  for name, default in {"do_train": True, **defaults}.items():
    FLAGS.set_default(name, default)
