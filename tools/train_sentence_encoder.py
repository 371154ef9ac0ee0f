"""Trains a sentence encoder (Sentence-BERT style) from ALBERT on text pairs with a similarity score.

  python tools/train_sentence_encoder.py --task_name=sts-b --data_dir=glue/STS-B --output_dir=runs/sbert \
      --albert_config_file=albert_base/albert_config.json --spm_model_file=albert_base/spiece.model \
      --init_checkpoint=albert_base --do_train --do_eval --train_step=2000 --warmup_step=200 \
      --export_dir=serving/sentence_encoder

Each text is encoded alone; its embedding is the mean of the token vectors (L2-normalised), and the
cosine similarity of a pair is fitted to the pair's score scaled to [0, 1] (--score_range, default the
train split's lowest and highest score). Evaluation is the Spearman correlation of cosines and scores on
dev.tsv; the best checkpoint by it is kept. The exported SavedModel's sentence_embedding signature gives
the embeddings. Flags as tools/run_classifier.py, for a regression task of pairs (sts-b, or tsv with
--tsv_text_b_column and --tsv_is_regression). --do_eval without --do_train scores the --init_checkpoint as it is.
"""

from absl import flags

from albert_tf import cli
from albert_tf.cli import finetuning_flags
from albert_tf.cli import strategy_flags
from albert_tf.errors import OptionError
from albert_tf.training import finetuning
from albert_tf.training import finetuning_objectives

FLAGS = flags.FLAGS


def main(argv):
  del argv
  score_range = None
  if FLAGS.score_range:
    try:
      low, high = (float(value) for value in FLAGS.score_range)
    except ValueError:
      raise OptionError(f"--score_range takes the lowest and highest score, e.g. 0,5; not "
                        f"{','.join(FLAGS.score_range)}.") from None
    score_range = (low, high)
  objective = finetuning_objectives.SentenceSimilarityObjective(finetuning_flags.task_from_flags(), score_range)
  finetuning.run(finetuning_flags.options_from_flags(), objective, strategy_flags.strategy_from_flags())


def run():
  """The `albert-train-sentence-encoder` command."""
  finetuning_flags.define_flags()
  flags.DEFINE_list("score_range", None, "The lowest and highest similarity score, e.g. 0,5 (default: the "
                    "train split's).")
  FLAGS.set_default("task_name", "sts-b")
  FLAGS.set_default("max_seq_length", 128)
  cli.run(main)


if __name__ == "__main__":
  run()
