"""Fine-tunes ALBERT to tag every character or word: KLUE-NER, CoNLL-style NER, a user's tagged words.

  python tools/run_token_classification.py --task_name=klue-ner --data_dir=klue_data --output_dir=runs/ner \
      --albert_config_file=albert_base/albert_config.json --spm_model_file=albert_base/spiece.model \
      --init_checkpoint=albert_base --max_seq_length=128 --train_batch_size=32 --learning_rate=5e-5 \
      --train_step=2000 --warmup_step=200 --export_dir=serving/ner

Each sentence's tags go onto the first piece of each character (KLUE) or word (CoNLL, tsv); the other pieces
are left out of the loss. A sentence longer than --max_seq_length is read in windows every --doc_stride pieces,
each piece predicted from the window where it has the most context, so every character is scored.
Every checkpoint is scored on dev: KLUE's entity macro F1 (strict IOB2, seqeval's rules) and character macro
F1, as KLUE's baseline computes them, and both again under the baseline's truncation (only the first
--max_seq_length pieces of a sentence read), written to eval_results.txt; the best by entity F1 is kept.
--do_predict writes the test split in its own format with the predicted tags, and predictions.json (each
sentence's entities with their character offsets). KLUE-NER's train split (21,008 sentences) is about 660
steps an epoch at batch 32. Rerunning the same command resumes.
Every path may be in a bucket (gs://...), as on a Cloud TPU.
"""

from albert_tf import cli
from albert_tf.cli import reading_flags
from albert_tf.cli import strategy_flags
from albert_tf.training import finetuning


def main(argv):
  del argv
  options, objective = reading_flags.token_classification_run_from_flags()
  finetuning.run(options, objective, strategy_flags.strategy_from_flags())


def run():
  """The `albert-run-token-classification` command."""
  reading_flags.define_token_classification_flags()
  cli.run(main)


if __name__ == "__main__":
  run()
