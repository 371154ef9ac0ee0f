"""Fine-tunes ALBERT as a dependency parser (Dozat and Manning's biaffine parser, KLUE-DP's baseline) on
KLUE-DP or a CoNLL-U treebank.

  python tools/run_dependency_parsing.py --task_name=klue-dp --data_dir=klue-dp-v1.1 \
      --output_dir=runs/klue-dp --albert_config_file=albert_base/albert_config.json \
      --spm_model_file=albert_base/spiece.model --init_checkpoint=albert_base --max_seq_length=128 \
      --max_words=64 --train_batch_size=32 --learning_rate=5e-5 --train_step=3000 --warmup_step=300 \
      --save_checkpoints_steps=500 --do_predict --export_dir=serving/klue-dp

Google has no parser script: every flag beyond the shared fine-tuning ones is ours (--task_name, --data_dir,
--max_words, --pos_embedding_size, --do_eval, --eval_batch_size). --data_dir holds klue-dp-v1.1_{train,dev}.tsv (or their
klue-dp-v1.1/ folder; KLUE's test labels are not public, so --do_predict parses the dev file), or a treebank's
<treebank>-ud-{train,dev,test}.conllu (or {train,dev,test}.conllu).

Each sentence is [CLS] pieces of its words [SEP]; a word is the vectors of its first and last pieces and the
embeddings of its first and last morpheme tags (the train split's tags, recorded in task.json;
--pos_embedding_size=0 leaves the tags out, for a parser of raw text). Words past --max_words, or past
--max_seq_length pieces, are cut (how many, on stderr and in eval_results.txt) and not scored. Every checkpoint
is scored on dev with the best single-root trees (projective ones for KLUE-DP, whose trees all are; any for
CoNLL-U): KLUE's uas_macro_f1 and las_macro_f1 (which picks model.ckpt-best), the plain uas and las.
--do_predict writes dependency_predictions.tsv (or .conllu), the test file with the predicted HEAD and DEPREL
columns, and dependency_predictions.json. --export_dir writes a SavedModel whose parse_text parses raw text
(and its words' tags when the parser reads them). Rerunning the same command resumes.
Every path may be in a bucket (gs://...), as on a Cloud TPU.
"""

from absl import flags

from albert_tf import cli
from albert_tf.cli import finetuning_flags
from albert_tf.cli import reading_flags
from albert_tf.tasks.dependency_parsing import data as parsing_data
from albert_tf.tasks.dependency_parsing import objective as parsing_objective

FLAGS = flags.FLAGS


def define_flags():
  """The flags of run_dependency_parsing (and the shared fine-tuning flags)."""
  reading_flags.define_reading_flags(
      "The folder of the split files (klue-dp: klue-dp-v1.1_{train,dev}.tsv, here or in its klue-dp-v1.1/ folder, "
      "the test split reading the dev file; conllu: <treebank>-ud-{train,dev,test}.conllu or "
      "{train,dev,test}.conllu); local or gs://...", eval_batch_size=32, formats=list(parsing_data.FORMATS),
      task_name_help="The treebank's format: klue-dp (KLUE-DP's TSV, an eojeol a line) or conllu (Universal "
      "Dependencies' CoNLL-U).",
      max_seq_length=128, train_step=3000, warmup_step=300, save_checkpoints_steps=500, predict_batch_size=32)
  flags.DEFINE_integer("max_words", 64, "Words of a sentence the parser reads (a static shape); the words "
                       "of longer sentences after it, and after --max_seq_length pieces, are cut and not "
                       "scored.")
  flags.DEFINE_integer("pos_embedding_size", 64, "Size of the embedding of a word's first and of its last "
                       "morpheme tag (KLUE-DP's POS column, CoNLL-U's XPOS), beside its pieces' vectors; 0 leaves "
                       "the tags out, for a parser of raw text (the SavedModel's parse_text then needs no tags).")


def main(argv):
  del argv
  objective = parsing_objective.DependencyParsingObjective(reading_flags.model_tokenizer(), FLAGS.task_name,
                                                          FLAGS.max_words, FLAGS.pos_embedding_size)
  finetuning_flags.fine_tune(objective)


def run():
  """The `albert-run-dependency-parsing` command."""
  define_flags()
  cli.run(main)
