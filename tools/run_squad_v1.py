"""Fine-tunes ALBERT on SQuAD v1.1, Google's run_squad_v1.py in TF2.

  python tools/run_squad_v1.py --train_file=squad/train-v1.1.json --predict_file=squad/dev-v1.1.json \
      --albert_config_file=albert_base/albert_config.json --spm_model_file=albert_base/spiece.model \
      --init_checkpoint=albert_base --output_dir=runs/squad1 --do_train --do_predict \
      --train_batch_size=48 --learning_rate=5e-5 --num_train_epochs=2.0 --max_seq_length=384 \
      --doc_stride=128 --export_dir=serving/squad1

Features are Google's (SentencePiece pieces aligned to the context's characters, doc-stride windows,
p_mask, answer positions), cached as TFRecords (--train_feature_file,
--predict_feature_file) and rebuilt when the JSON or a setting changes. --do_predict scores every checkpoint
on --predict_file with the official SQuAD v1.1 metrics when it has answers (eval_results.txt, the
best by F1 kept as model.ckpt-best) and writes predictions.json and nbest_predictions.json from the
best weights. --export_dir writes a SavedModel whose answer_question signature takes the raw question and
context, and albert_model.tflite beside it (checked to give the same logits). Flags as Google's, plus the strategy,
mixed-precision and memory flags of run_classifier; rerunning the same command resumes.

--task_name (ours) picks the benchmark: squad (the default), korquad1 (KorQuAD 1.0: its files checked
strictly, its official character-level EM and F1) or korquad2 (KorQuAD 2.0 and 2.1: --train_file and
--predict_file are a shard or a folder of shards; the HTML pages are read as text, answers written back as HTML
in one predictions.json and scored as its evaluation script scores them).

Every path may be in a bucket (gs://...), as on a Cloud TPU: --train_file, --predict_file and the feature caches
(written beside, each whole or not at all), --output_dir, --export_dir and the model's files.
"""

from albert_tf import cli
from albert_tf.cli import reading_flags
from albert_tf.cli import strategy_flags
from albert_tf.training import finetuning


def main(argv):
  del argv
  options, objective = reading_flags.squad_run_from_flags(1)
  finetuning.run(options, objective, strategy_flags.strategy_from_flags())


def run():
  """The `albert-run-squad-v1` command."""
  reading_flags.define_squad_flags(1)
  cli.run(main)


if __name__ == "__main__":
  run()
