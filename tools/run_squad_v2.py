"""Fine-tunes ALBERT on SQuAD v2.0, Google's run_squad_v2.py in TF2.

  python tools/run_squad_v2.py --train_file=squad/train-v2.0.json --predict_file=squad/dev-v2.0.json \
      --albert_config_file=albert_base/albert_config.json --spm_model_file=albert_base/spiece.model \
      --init_checkpoint=albert_base --output_dir=runs/squad2 --do_train --do_predict \
      --train_batch_size=48 --learning_rate=5e-5 --num_train_epochs=2.0 --max_seq_length=384 \
      --doc_stride=128 --export_dir=serving/squad2

Features are Google's (SentencePiece pieces aligned to the context's characters, doc-stride windows,
p_mask, answer positions, is_impossible), cached as TFRecords (--train_feature_file,
--predict_feature_file) and rebuilt when the JSON or a setting changes. --do_predict scores every checkpoint
on --predict_file with the official SQuAD v2.0 metrics when it has answers (eval_results.txt, the
best by F1 kept as model.ckpt-best) and writes predictions.json and nbest_predictions.json and null_odds.json from the
best weights. --export_dir writes a SavedModel whose answer_question signature takes the raw question and
context. Flags as Google's, plus the strategy,
mixed-precision and memory flags of run_classifier; rerunning the same command resumes.

--task_name (ours) picks the benchmark: squad (the default) or klue-mrc (klue-mrc-v1.1_{train,dev}.json: guid,
question_type, is_impossible and plausible_answers checked; KLUE's exact_match and rouge_w, the best checkpoint
and the no-answer threshold by rouge_w).

Every path may be in a bucket (gs://...), as on a Cloud TPU: --train_file, --predict_file and the feature caches
(written beside, each whole or not at all), --output_dir, --export_dir and the model's files.
"""

from albert_tf import cli
from albert_tf.cli import reading_flags
from albert_tf.cli import strategy_flags
from albert_tf.training import finetuning


def main(argv):
  del argv
  options, objective = reading_flags.squad_run_from_flags(2)
  finetuning.run(options, objective, strategy_flags.strategy_from_flags())


def run():
  """The `albert-run-squad-v2` command."""
  reading_flags.define_squad_flags(2)
  cli.run(main)


if __name__ == "__main__":
  run()
