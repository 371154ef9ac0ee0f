"""Fine-tunes ALBERT for classification or regression: Google's GLUE tasks, Korean benchmarks, or your own
TSV files.

  python tools/run_classifier.py --task_name=mrpc --data_dir=glue/MRPC --output_dir=runs/mrpc \
      --albert_config_file=albert_base/albert_config.json --spm_model_file=albert_base/spiece.model \
      --init_checkpoint=albert_base --max_seq_length=128 --do_train --do_eval --do_predict \
      --train_batch_size=32 --learning_rate=2e-5 --train_step=800 --warmup_step=200 \
      --save_checkpoints_steps=100 --export_dir=serving/mrpc

  # KLUE's topic classification from KLUE's own files (klue/ynat-v1.1/ynat-v1.1_train.json, ..._dev.json)
  python tools/run_classifier.py --task_name=klue-ynat --data_dir=klue --output_dir=runs/ynat \
      --albert_config_file=albert_ko/albert_config.json --spm_model_file=albert_ko/spiece.model \
      --init_checkpoint=albert_ko --max_seq_length=128 --do_train --do_eval --do_predict ...

  # Your own file: sentence in column 2, a score in column 1, binary classes at score > 0
  python tools/run_classifier.py --task_name=tsv --tsv_text_a_column=2 --tsv_label_column=1 \
      --tsv_label_threshold=0 --data_dir=my_data ...

The Korean tasks read their benchmarks' official files, under their official names, in --data_dir or in
the task's folder below it (each task's first metric picks the best checkpoint):
  klue-ynat  KLUE v1.1 YNAT (ynat-v1.1/ynat-v1.1_{train,dev}.json): news title -> 7 topics; macro_f1, accuracy
  klue-nli   KLUE v1.1 NLI (klue-nli-v1.1/...): premise, hypothesis -> entailment, neutral, contradiction;
             accuracy
  klue-sts   KLUE v1.1 STS (klue-sts-v1.1/...): sentence pair -> score 0-5; pearson, spearman, binary_f1 (KLUE's F1
             of score >= 3.0)
  klue-re    KLUE v1.1 RE (klue-re-v1.1/klue-re-v1.1_{train,dev}.json, relation_list.json): a sentence with its
             subject and object marked (--entity_markers) -> one of the listed relations; micro_f1 (without
             no_relation), auprc
  korsts     KorSTS (KorSTS/sts-{train,dev,test}.tsv): sentence pair -> score 0-5; spearman (the KorSTS paper's),
             pearson
  kornli     KorNLI (KorNLI/multinli.train.ko.tsv then snli_1.0_train.ko.tsv, xnli.{dev,test}.ko.tsv): accuracy
  nsmc       NSMC (ratings_train.txt, ratings_test.txt): movie review -> 0 negative, 1 positive; accuracy
KLUE's test labels are not public: a KLUE task's test split is its dev file, so --do_predict writes the dev
split's predictions. NSMC has no dev file: its test file is its dev split and its test split.

Flags and defaults are Google's run_classifier.py's; --task_name=tsv with the --tsv_* flags, --entity_markers,
--keep_accents, --dropout_prob, the strategy flags (as run_pretraining's), --mixed_precision, --random_seed,
--jit_compile and --log_steps are ours. Every checkpoint is evaluated on the dev split with --do_eval (eval_results.txt, and the
best by the task's metric kept as model.ckpt-best); --do_predict writes test_results.tsv and
submit_results.tsv from the best weights; --export_dir writes a SavedModel whose classify_text signature
takes raw text. Rerunning the same command resumes from the last checkpoint.
Every path may be in a bucket (gs://...), as on a Cloud TPU: --data_dir, --output_dir, --export_dir and the
model's files.
"""

from absl import flags

from albert_tf import cli
from albert_tf.cli import finetuning_flags
from albert_tf.cli import strategy_flags
from albert_tf.tasks.classification import objective as classification_objective
from albert_tf.training import finetuning

FLAGS = flags.FLAGS


def main(argv):
  del argv
  objective = classification_objective.ClassifierObjective(finetuning_flags.task_from_flags())
  finetuning.run(finetuning_flags.options_from_flags(), objective, strategy_flags.strategy_from_flags())


def run():
  """The `albert-run-classifier` command."""
  finetuning_flags.define_flags()
  flags.mark_flag_as_required("task_name")
  cli.run(main)


if __name__ == "__main__":
  run()
