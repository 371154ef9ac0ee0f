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

from absl import flags

from albert_tf import cli
from albert_tf.cli import finetuning_flags
from albert_tf.cli import reading_flags
from albert_tf.tasks.dialogue_state_tracking import data as tracking_data
from albert_tf.tasks.dialogue_state_tracking import objective as tracking_objective

FLAGS = flags.FLAGS


def define_flags():
  """The flags of run_dialogue_state_tracking (and the shared fine-tuning flags)."""
  reading_flags.define_reading_flags(
      "The folder of wos-v1.1_{train,dev}.json (the test split reads wos-v1.1_test.json, else the dev file) and "
      "ontology.json; local or gs://...", eval_batch_size=32, formats=[tracking_data.TASK_NAME],
      task_name_help="The dialogues' layout: wos (KLUE's Wizard of Seoul: a JSON array of dialogues, a state on "
      "each user turn).",
      max_seq_length=512, train_step=10000, warmup_step=1000, save_checkpoints_steps=1000, predict_batch_size=32)
  flags.DEFINE_string("ontology_file", None, "The ontology, \"domain-slot\" -> its values (default: "
                      "ontology.json beside the dialogue files; local or gs://...).")


def main(argv):
  del argv
  objective = tracking_objective.DialogueStateTrackingObjective(reading_flags.model_tokenizer(),
                                                                FLAGS.ontology_file)
  finetuning_flags.fine_tune(objective)


def run():
  """The `albert-run-dialogue-state-tracking` command."""
  define_flags()
  cli.run(main)
