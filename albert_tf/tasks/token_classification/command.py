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

from absl import flags

from albert_tf import cli
from albert_tf.cli import finetuning_flags
from albert_tf.cli import reading_flags
from albert_tf.tasks.token_classification import data as tagging_data
from albert_tf.tasks.token_classification import objective as tagging_objective

FLAGS = flags.FLAGS


def define_flags():
  """The flags of run_token_classification (and the shared fine-tuning flags)."""
  reading_flags.define_reading_flags(
      "The folder of the split files (klue-ner: klue-ner-v1.1_{train,dev}.tsv; conll: train.txt, dev.txt or "
      "valid.txt, test.txt, or CoNLL-2003's eng.train, eng.testa, eng.testb; tsv: train.tsv, dev.tsv, test.tsv), or "
      "one file, read as each split; local or gs://...", eval_batch_size=32, formats=list(tagging_data.FORMATS),
      task_name_help="The files' layout: klue-ner (KLUE's character TSV), conll (a word a line, its tag in the "
      "last column, blank lines between sentences) or tsv (a word and its tag a line, tab-separated, blank lines "
      "between sentences).",
      max_seq_length=128, train_step=2000, warmup_step=200, save_checkpoints_steps=500, predict_batch_size=32)
  flags.DEFINE_list("label_list", None, "The tags in id order (default: KLUE's for klue-ner, else O and the "
                    "train split's B-/I- tags, sorted by type).")
  flags.DEFINE_integer("doc_stride", 64, "Pieces between the starts of a long sentence's windows; each piece is "
                       "predicted from the window where it has the most context.")


def main(argv):
  del argv
  objective = tagging_objective.TokenClassificationObjective(FLAGS.task_name, reading_flags.model_tokenizer(),
                                                             FLAGS.doc_stride, FLAGS.label_list)
  finetuning_flags.fine_tune(objective)


def run():
  """The `albert-run-token-classification` command."""
  define_flags()
  cli.run(main)
