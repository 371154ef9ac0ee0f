"""Benchmarks fine-tuning on real human ratings against a constant predictor and a bag-of-words model.

  # 1. Held-out splits of ../shared/finetune, and the unlabeled text of their train splits
  python benchmarks/benchmark_finetuning.py --finetune_dir=../shared/finetune --output_dir=bench --prepare_only
  # 2. Pretrain with the package's own tools (see docs/pretraining.md), then fine-tune and compare:
  python benchmarks/benchmark_finetuning.py --finetune_dir=../shared/finetune --output_dir=bench \
      --albert_config_file=bench/pretraining/albert_config.json --init_checkpoint=bench/pretraining \
      --spm_model_file=bench/spm/en8k.model

Each file of --finetune_dir (id, mean sentiment rating of ~20 people on -4..+4, sentence) is split by id:
id % 10 == 0 is the test split, id % 10 == 1 the dev split, the rest train. Two tasks are run on each: the
rating as a regression (Pearson) and its sign as binary classification (score > 0; accuracy). Baselines
are the constant predictor (the train mean; the majority class) and ridge regression on binary
bag-of-words features, its regularisation chosen on dev. Fine-tuning keeps the checkpoint that is best on
dev and is scored once on test. Prints one table; the figures are in docs/benchmarks.md.
"""

import collections
import csv
import json
import math
import os
import re
import time
from typing import Dict, List, Tuple

from absl import flags
import numpy as np

from albert_tf import cli
from albert_tf.errors import DataError, InputFileError, OptionError
from albert_tf.modeling.config import AlbertConfig
from albert_tf.tasks.classification import objective as classification_objective
from albert_tf.tasks.classification.catalogue import get_task
from albert_tf.tasks.classification.user_tsv import TsvFormat
from albert_tf.training import distribution
from albert_tf.training import finetuning
from albert_tf.training import finetuning_objectives
from albert_tf.training import metrics

FLAGS = flags.FLAGS

flags.DEFINE_string("finetune_dir", None, "Folder of <name>_GroundTruth.tsv files (id, rating, sentence).")
flags.DEFINE_string("output_dir", None, "Splits, runs and results go here.")
flags.DEFINE_bool("prepare_only", False, "Write the splits and the pretraining text, then stop.")
flags.DEFINE_string("albert_config_file", None, "The pretrained model's albert_config.json.")
flags.DEFINE_string("init_checkpoint", None, "The pretrained model; without it, fine-tuning starts from random "
                    "weights (the no-pretraining ablation).")
flags.DEFINE_string("spm_model_file", None, "The pretrained model's SentencePiece model.")
flags.DEFINE_string("run_name", "pretrained", "Name of this model's runs under --output_dir/runs.")
flags.DEFINE_list("datasets", None, "Datasets to run (default: every file of --finetune_dir).")
flags.DEFINE_list("tasks", ["regression", "classification"], "regression (Pearson) and/or classification "
                  "(score > 0, accuracy).")
flags.DEFINE_integer("max_seq_length", 64, "Packed length (the sentences are short).")
flags.DEFINE_integer("train_batch_size", 32, "Batch size.")
flags.DEFINE_list("learning_rates", ["1e-4"], "Learning rates tried; the best on dev is reported.")
flags.DEFINE_float("epochs", 4.0, "Passes over the train split; every epoch is a checkpoint scored on dev.")
flags.DEFINE_float("warmup_proportion", 0.1, "Warmup steps as a share of training.")
flags.DEFINE_float("dropout_prob", 0.1, "Dropout before the classifier.")

SPLIT_OF_ID_REMAINDER = {0: "test", 1: "dev"}  # every other remainder of id % 10 is train
SENTENCES_PER_DOCUMENT = 10


def split_of(row_id: int) -> str:
  return SPLIT_OF_ID_REMAINDER.get(row_id % 10, "train")


def read_ratings(path: str) -> List[Tuple[int, float, str]]:
  """The (id, rating, sentence) rows of a ground-truth file."""
  rows = []
  with open(path, encoding="utf-8") as reader:
    for line_number, row in enumerate(csv.reader(reader, delimiter="\t", quoting=csv.QUOTE_NONE), 1):
      if len(row) != 3:
        raise DataError(f"{path}, line {line_number}: {len(row)} columns; expected id, rating, sentence.")
      rows.append((int(row[0]), float(row[1]), row[2]))
  return rows


def prepare(finetune_dir: str, output_dir: str) -> Dict[str, Dict[str, List[Tuple[int, float, str]]]]:
  """Writes <output_dir>/data/<dataset>/{train,dev,test}.tsv and data/pretraining_text.txt.

  The pretraining text holds the sentences of the train splits only, SENTENCES_PER_DOCUMENT to a document,
  so a model pretrained on it has never seen a dev or test sentence.

  Returns:
    {dataset: {split: rows}}.
  """
  datasets = {}
  names = sorted(name for name in os.listdir(finetune_dir) if name.endswith("_GroundTruth.tsv"))
  if not names:
    raise InputFileError(f"No *_GroundTruth.tsv file in {finetune_dir}.")
  # Every file is read and checked before anything is written.
  ratings = {name[:-len("_GroundTruth.tsv")]: read_ratings(os.path.join(finetune_dir, name)) for name in names}
  documents = []
  for dataset, rows in ratings.items():
    splits = collections.defaultdict(list)
    for row in rows:
      splits[split_of(row[0])].append(row)
    directory = os.path.join(output_dir, "data", dataset)
    os.makedirs(directory, exist_ok=True)
    for split, rows in splits.items():
      with open(os.path.join(directory, f"{split}.tsv"), "w", encoding="utf-8") as writer:
        writer.writelines(f"{row_id}\t{rating!r}\t{sentence}\n" for row_id, rating, sentence in rows)
    train_sentences = [sentence for _, _, sentence in splits["train"]]
    documents += ["\n".join(train_sentences[start:start + SENTENCES_PER_DOCUMENT])
                  for start in range(0, len(train_sentences), SENTENCES_PER_DOCUMENT)]
    datasets[dataset] = dict(splits)
    print(f"{dataset}: " + ", ".join(f"{split} {len(rows)}" for split, rows in sorted(splits.items())))
  text_path = os.path.join(output_dir, "data", "pretraining_text.txt")
  with open(text_path, "w", encoding="utf-8") as writer:
    writer.write("\n\n".join(documents) + "\n")
  print(f"Pretraining text of the train splits: {text_path} ({len(documents)} documents)")
  return datasets



# --- baselines -------------------------------------------------------------------------------------------

RIDGE_PENALTIES = (0.3, 1.0, 3.0, 10.0, 30.0, 100.0)


def words(sentence: str) -> List[str]:
  return re.findall(r"[a-z0-9']+|[^\sa-z0-9']", sentence.lower())


def bag_of_words(splits: Dict[str, List[Tuple[int, float, str]]]) -> Dict[str, np.ndarray]:
  """Binary word features (words seen in >= 2 train sentences) plus a bias column, per split."""
  counts = collections.Counter(word for _, _, sentence in splits["train"] for word in set(words(sentence)))
  vocabulary = {word: index for index, word in enumerate(sorted(w for w, c in counts.items() if c >= 2))}
  features = {}
  for split, rows in splits.items():
    matrix = np.zeros((len(rows), len(vocabulary) + 1), np.float32)
    matrix[:, -1] = 1.0
    for row, (_, _, sentence) in enumerate(rows):
      matrix[row, [vocabulary[w] for w in words(sentence) if w in vocabulary]] = 1.0
    features[split] = matrix
  return features


def ridge_predictions(features: Dict[str, np.ndarray], targets: np.ndarray) -> Dict[float, Dict[str, np.ndarray]]:
  """Ridge regression (dual form, one eigendecomposition for every penalty): {penalty: {split: predictions}}."""
  train = features["train"].astype(np.float64)
  eigenvalues, eigenvectors = np.linalg.eigh(train @ train.T)
  projected = eigenvectors.T @ (targets - targets.mean())
  results = {}
  for penalty in RIDGE_PENALTIES:
    weights = train.T @ (eigenvectors @ (projected / (eigenvalues + penalty)))
    results[penalty] = {split: matrix @ weights + targets.mean() for split, matrix in features.items()}
  return results


def baselines(splits) -> Dict[str, Dict[str, float]]:
  """Test-split scores of the constant predictors and of bag-of-words ridge (penalty chosen on dev)."""
  scores = {split: np.array([score for _, score, _ in rows]) for split, rows in splits.items()}
  positive = {split: (values > 0).astype(int) for split, values in scores.items()}
  features = bag_of_words(splits)
  regression = ridge_predictions(features, scores["train"])
  best = max(RIDGE_PENALTIES, key=lambda p: metrics.pearson(regression[p]["dev"], scores["dev"]))
  # Binary: ridge on ±1 targets, thresholded at 0 (a linear least-squares classifier).
  classification = ridge_predictions(features, 2.0 * positive["train"] - 1.0)
  best_binary = max(RIDGE_PENALTIES, key=lambda p: metrics.accuracy(classification[p]["dev"] > 0, positive["dev"]))
  majority = int(positive["train"].mean() > 0.5)
  return {
      "regression": {"constant": metrics.pearson(np.full(len(scores["test"]), scores["train"].mean()),
                                                  scores["test"]),
                     "bag_of_words": metrics.pearson(regression[best]["test"], scores["test"]),
                     "bag_of_words_penalty": best},
      "classification": {"constant": metrics.accuracy(np.full(len(scores["test"]), majority), positive["test"]),
                         "bag_of_words": metrics.accuracy(classification[best_binary]["test"] > 0, positive["test"]),
                         "bag_of_words_penalty": best_binary},
  }


# --- fine-tuning ---------------------------------------------------------------------------------------------

TASK_FORMATS = {
    "regression": TsvFormat(text_a_column=2, label_column=1, is_regression=True),
    "classification": TsvFormat(text_a_column=2, label_column=1, label_threshold=0.0),
}


def fine_tune(dataset: str, task_kind: str, num_train: int, output_dir: str) -> Dict[str, float]:
  """Fine-tunes at each learning rate, keeps the run best on dev, and scores its best checkpoint on test."""
  data_dir = os.path.join(output_dir, "data", dataset)
  steps_per_epoch = math.ceil(num_train / FLAGS.train_batch_size)
  train_step = int(FLAGS.epochs * steps_per_epoch)
  gold = np.array([score for _, score, _ in read_ratings(os.path.join(data_dir, "test.tsv"))])
  task = get_task("tsv", TASK_FORMATS[task_kind])
  metric = task.primary_metric
  results = []
  for learning_rate in FLAGS.learning_rates:
    run_dir = os.path.join(output_dir, "runs", FLAGS.run_name, f"{dataset}-{task_kind}-lr{learning_rate}")
    options = finetuning.FineTuningOptions(
        data_dir=data_dir, output_dir=run_dir, albert_config=AlbertConfig.from_json_file(FLAGS.albert_config_file),
        spm_model_file=FLAGS.spm_model_file, init_checkpoint=FLAGS.init_checkpoint,
        max_seq_length=FLAGS.max_seq_length, do_train=True, do_eval=True, do_predict=True,
        train_batch_size=FLAGS.train_batch_size, eval_batch_size=64, predict_batch_size=64,
        learning_rate=float(learning_rate), train_step=train_step,
        warmup_step=int(FLAGS.warmup_proportion * train_step), save_checkpoints_steps=steps_per_epoch,
        keep_checkpoint_max=1, iterations_per_loop=steps_per_epoch, log_steps=max(steps_per_epoch // 4, 1),
        dropout_prob=FLAGS.dropout_prob)
    start = time.time()
    finetuning.run(options, classification_objective.ClassifierObjective(task), distribution.get_strategy("one_device"))
    with open(os.path.join(run_dir, "best_checkpoint.json"), encoding="utf-8") as reader:
      best = json.load(reader)
    with open(os.path.join(run_dir, finetuning_objectives.SUBMIT_RESULTS), encoding="utf-8") as reader:
      predicted = [row[1] for row in csv.reader(reader, delimiter="\t")][1:]
    if task_kind == "regression":
      test = metrics.pearson(np.array(predicted, np.float64), gold)
    else:
      test = metrics.accuracy(np.array(predicted, int), (gold > 0).astype(int))
    # The rate as the flag spelled it ("2e-4"), for the table.
    results.append({"learning_rate": learning_rate, f"dev_{metric}": best[metric], "test": test,
                    "best_step": best["global_step"], "seconds": time.time() - start})
    print(f"{dataset} {task_kind} lr {learning_rate}: dev {metric} {best[metric]:.4f} (step "
          f"{best['global_step']}/{train_step}), test {test:.4f}", flush=True)
  return max(results, key=lambda result: result[f"dev_{metric}"])

def main(argv):
  del argv
  datasets = prepare(FLAGS.finetune_dir, FLAGS.output_dir)
  if FLAGS.prepare_only:
    return
  if not (FLAGS.albert_config_file and FLAGS.spm_model_file):
    raise OptionError("Fine-tuning needs --albert_config_file and --spm_model_file (and --init_checkpoint).")
  rows = []
  for dataset in FLAGS.datasets or sorted(datasets):
    if dataset not in datasets:
      raise OptionError(f"Unknown dataset {dataset!r}; --finetune_dir has {', '.join(sorted(datasets))}.")
    reference = baselines(datasets[dataset])
    for task_kind in FLAGS.tasks:
      if task_kind not in TASK_FORMATS:
        raise OptionError(f"Unknown task {task_kind!r}; the tasks are {', '.join(TASK_FORMATS)}.")
      tuned = fine_tune(dataset, task_kind, len(datasets[dataset]["train"]), FLAGS.output_dir)
      rows.append((dataset, task_kind, reference[task_kind], tuned))
  metric = {"regression": "Pearson", "classification": "accuracy"}
  print(f"\nHeld-out test split; model: {FLAGS.run_name} ({FLAGS.init_checkpoint or 'no pretraining'})")
  print("| dataset | task | metric | constant | bag-of-words ridge | ALBERT fine-tuned | lr | best step | s |")
  print("|---|---|---|---|---|---|---|---|---|")
  for dataset, task_kind, reference, tuned in rows:
    print(f"| {dataset} | {task_kind} | {metric[task_kind]} | {reference['constant']:.4f} | "
          f"{reference['bag_of_words']:.4f} | {tuned['test']:.4f} | {tuned['learning_rate']} | "
          f"{tuned['best_step']} | {tuned['seconds']:.0f} |")


def run():
  """The benchmark's command line, `python benchmarks/benchmark_finetuning.py`."""
  flags.mark_flags_as_required(["finetune_dir", "output_dir"])
  cli.run(main)


if __name__ == "__main__":
  run()
