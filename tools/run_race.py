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

from albert_tf import cli
from albert_tf.cli import reading_flags
from albert_tf.cli import strategy_flags
from albert_tf.training import finetuning


def main(argv):
  del argv
  options, objective = reading_flags.race_run_from_flags()
  finetuning.run(options, objective, strategy_flags.strategy_from_flags())


def run():
  """The `albert-run-race` command."""
  reading_flags.define_race_flags()
  cli.run(main)


if __name__ == "__main__":
  run()
