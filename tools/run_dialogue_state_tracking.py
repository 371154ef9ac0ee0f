"""Fine-tunes ALBERT as a dialogue state tracker on WoS (KLUE's Wizard of Seoul), picking every slot's value
among the ontology's.

  python tools/run_dialogue_state_tracking.py --task_name=wos --data_dir=wos-v1.1 \\
      --output_dir=runs/wos --albert_config_file=albert_base/albert_config.json \\
      --spm_model_file=albert_base/spiece.model --init_checkpoint=albert_base --max_seq_length=512 \\
      --train_batch_size=32 --learning_rate=5e-5 --train_step=10000 --warmup_step=1000 \\
      --save_checkpoints_steps=1000 --do_predict --export_dir=serving/wos

Google has no dialogue script: every flag beyond the shared fine-tuning ones is ours (--task_name, --data_dir,
--ontology_file, --do_eval, --eval_batch_size). --data_dir holds wos-v1.1_{train,dev}.json and ontology.json
(KLUE's test labels are not public, so --do_predict reads wos-v1.1_test.json when there is one, else the dev
file). A state value, slot or turn the ontology and the layout do not allow is one error naming the file, the
dialogue and the turn, before anything is written.

Each user turn is one example, its turns newest first: [CLS] the user's turn and the system's before it [SEP] the
earlier turns [SEP], the oldest text cut first past --max_seq_length. Every slot has a gate, TRADE's ("none",
"dontcare", "yes", "no" where its ontology lists them, or another value), and where the gate says another value,
that value among the ontology's. Every checkpoint is scored on dev with KLUE's joint goal accuracy
(which picks model.ckpt-best) and slot F1. --do_predict writes state_predictions.json (per user turn, the
predicted and the file's state). --export_dir writes a SavedModel whose track_state takes each dialogue so far as
one string, a turn a line, and returns the state. Rerunning the same command resumes.
Every path may be in a bucket (gs://...), as on a Cloud TPU.
"""

from albert_tf import cli
from albert_tf.cli import reading_flags
from albert_tf.cli import strategy_flags
from albert_tf.training import finetuning


def main(argv):
  del argv
  options, objective = reading_flags.dialogue_state_tracking_run_from_flags()
  finetuning.run(options, objective, strategy_flags.strategy_from_flags())


def run():
  """The `albert-run-dialogue-state-tracking` command."""
  reading_flags.define_dialogue_state_tracking_flags()
  cli.run(main)


if __name__ == "__main__":
  run()
