"""Fine-tunes ALBERT on RACE (multiple-choice reading comprehension), Google's run_race.py in TF2.

  python tools/run_race.py --data_dir=race_data --output_dir=runs/race \
      --albert_config_file=albert_base/albert_config.json --spm_model_file=albert_base/spiece.model \
      --init_checkpoint=albert_base --max_seq_length=512 --max_qa_length=128 --train_batch_size=32 \
      --learning_rate=1e-5 --train_step=12000 --warmup_step=1000 --save_checkpoints_steps=100 \
      --dropout_prob=0 --export_dir=serving/race

--data_dir holds RACE/{train,dev,test}/{middle,high}/ as the download unpacks it (or each level's all.txt,
a JSON article a line, as Google's reader expects). Each option becomes [CLS] article [SEP] question+option
[SEP] (the option fills the question's "_" blanks), scored by one linear layer on the pooled output, with a
softmax over the options. Every checkpoint is scored on dev (accuracy, accuracy_middle, accuracy_high and
Google's eval_accuracy, eval_loss); --do_predict writes submit_results.tsv (question id, answer letter) and
test_results.tsv. Google's README: ALBERT v2 needs --learning_rate=1e-5 and --dropout_prob=0 on RACE.
Rerunning the same command resumes. Every path may be in a bucket (gs://...), as on a Cloud TPU.
"""

from absl import flags

from albert_tf import cli
from albert_tf.cli import finetuning_flags
from albert_tf.cli import reading_flags
from albert_tf.tasks.race import objective as race_objective

FLAGS = flags.FLAGS


def define_flags():
  """The flags of Google's run_race.py (and the shared fine-tuning flags)."""
  reading_flags.define_reading_flags(
      "The folder holding RACE/ (or RACE/ itself): {train,dev,test}/{middle,high}/, each all.txt (a JSON article a "
      "line, Google's) or the download's *.txt; local or gs://...", eval_batch_size=8, max_seq_length=512,
      learning_rate=1e-5, train_step=12000, warmup_step=1000, save_checkpoints_steps=100)
  flags.DEFINE_integer("max_qa_length", 128, "Question+option tokens kept (the last ones).")
  flags.DEFINE_bool("high_only", False, "Only RACE-H (high-school exams).")
  flags.DEFINE_bool("middle_only", False, "Only RACE-M (middle-school exams).")


def main(argv):
  del argv
  objective = race_objective.MultipleChoiceObjective(reading_flags.model_tokenizer(), FLAGS.max_qa_length,
                                                     FLAGS.high_only, FLAGS.middle_only)
  finetuning_flags.fine_tune(objective)


def run():
  """The `albert-run-race` command."""
  define_flags()
  cli.run(main)
