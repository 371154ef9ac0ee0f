"""Fine-tuning on `tf.distribute`: train, keep the best checkpoint by the task's metric, predict, export.

One driver, `FineTuning`, runs both fine-tuning jobs; what differs lives in an objective:

- `ClassifierObjective` (Google's `run_classifier.py`): one packed `[CLS] a [SEP] b [SEP]` sequence per
  example, Google's head on `pooled_output`, cross-entropy or (regression) squared error, the task's
  metrics (accuracy, MCC, F1, Pearson/Spearman/MSE).
- `SentenceSimilarityObjective` (Sentence-BERT): each text encoded alone, mean-pooled and L2-normalised;
  the cosine of a pair regresses its score scaled to [0, 1]; evaluated by Spearman correlation.

A run reads and checks every split it needs before building anything, so bad data fails before training.
Training resumes from the last checkpoint of `output_dir` (model, optimizer, step, input position); every
checkpoint is evaluated on the dev split when `do_eval`, `eval_results.txt` holds every metric and
`model.ckpt-best` the best weights by the objective's metric (a checkpoint written just before a crash is
scored on resume). Prediction, export and an evaluation without training use those best weights (the last
ones when nothing was evaluated).
"""

import dataclasses
import json
import os
import sys
from typing import Dict, List, Optional, Tuple

import numpy as np
import tensorflow as tf
import tf_keras

from albert_tf import checkpoint as checkpoint_lib
from albert_tf import distribution
from albert_tf import metrics as metrics_lib
from albert_tf import serving
from albert_tf import training
from albert_tf.classifier import AlbertClassifier
from albert_tf.config import AlbertConfig
from albert_tf.finetuning_data import (EncodedSplit, evaluation_dataset, evaluation_steps, pack_texts,
                                      training_dataset)
from albert_tf.graph_tokenization import GraphTokenizer, tokenizer_for_model
from albert_tf.sentence_encoder import AlbertSentenceEncoder
from albert_tf.tasks import Example, Task, TaskError
from albert_tf.training import TrainingError

RUN_INFO_FILE = checkpoint_lib.TASK_INFO_FILE
TEST_RESULTS = "test_results.tsv"
SUBMIT_RESULTS = "submit_results.tsv"


@dataclasses.dataclass
class FineTuningOptions:
  """A run's settings: Google's `run_classifier.py` flags and defaults, plus ours."""

  data_dir: str
  output_dir: str
  albert_config: AlbertConfig
  spm_model_file: str
  init_checkpoint: Optional[str] = None
  do_lower_case: bool = True
  keep_accents: bool = False
  max_seq_length: int = 512
  do_train: bool = False
  do_eval: bool = False
  do_predict: bool = False
  train_batch_size: int = 32
  eval_batch_size: int = 8
  predict_batch_size: int = 8
  optimizer: str = "adamw"
  learning_rate: float = 5e-5
  train_step: int = 1000
  warmup_step: int = 0
  save_checkpoints_steps: int = 1000
  keep_checkpoint_max: int = 5
  iterations_per_loop: int = 1000
  dropout_prob: float = 0.1  # on the pooled output, before the classifier (Google's fixed 0.1)
  mixed_precision: str = "float32"
  random_seed: int = 12345
  jit_compile: bool = False
  log_steps: Optional[int] = None  # progress line every this many steps (default: every host loop)
  export_dir: Optional[str] = None


def _safe_ratio(numerator: float, denominator: float) -> float:
  return float(numerator / denominator) if denominator else 0.0


class ClassifierObjective:
  """Google's `run_classifier`: the task's classes (cross-entropy) or its score (squared error).

  Args:
    task: from `albert_tf.tasks.get_task`.
  """

  has_head = True
  sum_names = ("loss", "correct", "examples")

  def __init__(self, task: Task):
    self.task = task
    self.primary_metric = task.primary_metric
    self.progress_groups = (("loss",),) if task.is_regression else (("loss", "accuracy"),)

  def run_info(self) -> Dict:
    return {"task": self.task.name, "label_list": None if self.task.is_regression else list(self.task.label_list)}

  def adopt_run_info(self, info: Dict, output_dir: str):
    """Takes the labels of an earlier run of `output_dir` (their order is the head's); refuses other labels."""
    if info.get("task") != self.task.name:
      raise TaskError(f"--output_dir {output_dir} holds a run of task {info.get('task')!r}, not {self.task.name!r}.")
    if self.task.is_regression:
      return
    if self.task.label_list is None:  # a tsv task that has not read its train split
      self.task.label_list = tuple(info["label_list"])
    elif list(self.task.label_list) != info["label_list"]:
      raise TaskError(f"--output_dir {output_dir} was trained with labels {info['label_list']}; this run's labels "
                      f"are {list(self.task.label_list)}. Use a new --output_dir.")

  def learn_from_train(self, examples: List[Example]):
    """Nothing to learn: the task's label list (a tsv task's comes from its train split) is the head's."""
    del examples

  def encode(self, examples: List[Example], tokenizer: GraphTokenizer, max_seq_length: int,
             description: str) -> EncodedSplit:
    texts_b = [example.text_b or "" for example in examples] if self.task.is_pair else None
    packed = pack_texts(tokenizer, [example.text_a for example in examples], texts_b, max_seq_length, description)
    if self.task.is_regression:
      labels = np.array([example.label or 0.0 for example in examples], np.float32)
    else:
      label_ids = {label: index for index, label in enumerate(self.task.label_list)}
      labels = np.array([label_ids.get(example.label, 0) for example in examples], np.int32)
    return EncodedSplit({"inputs": packed}, labels, [example.guid for example in examples], max_seq_length)

  def build_model(self, config: AlbertConfig, dropout_prob: float) -> AlbertClassifier:
    return AlbertClassifier(config, None if self.task.is_regression else self.task.label_list, dropout_prob)

  def _per_example(self, logits, labels):
    """Google's per-example loss and correct predictions (0 for regression)."""
    if self.task.is_regression:
      return tf.square(logits[:, 0] - labels), tf.zeros_like(labels)
    loss = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    return loss, tf.cast(tf.equal(tf.argmax(logits, -1, output_type=tf.int32), labels), tf.float32)

  def replica_loss(self, model, global_batch_size: int):
    """batch -> (this replica's share of the global-batch mean loss, its sums)."""

    def loss_and_sums(batch):
      logits = model(batch["inputs"], training=True)["logits"]
      loss, correct = self._per_example(logits, batch["labels"])
      sums = tf.stack([tf.reduce_sum(loss), tf.reduce_sum(correct), tf.cast(tf.size(loss), tf.float32)])
      return sums[0] / float(global_batch_size), sums

    return loss_and_sums

  def metrics_from_sums(self, sums) -> Dict[str, float]:
    values = dict(zip(self.sum_names, np.asarray(sums, np.float64)))
    metrics = {"loss": _safe_ratio(values["loss"], values["examples"])}
    if not self.task.is_regression:
      metrics["accuracy"] = _safe_ratio(values["correct"], values["examples"])
    return metrics

  def predict(self, model, batch) -> tf.Tensor:
    """float32 logits `[batch, classes]` (`[batch, 1]` for regression)."""
    return model(batch["inputs"], training=False)["logits"]

  def evaluation_metrics(self, outputs: np.ndarray, labels: np.ndarray) -> Dict[str, float]:
    loss, _ = self._per_example(tf.constant(outputs), tf.constant(labels))
    values = metrics_lib.compute_metrics(self.task, outputs[:, 0] if self.task.is_regression else outputs, labels)
    return dict(values, loss=float(np.mean(loss.numpy())))

  def prediction_rows(self, outputs: np.ndarray) -> Tuple[List[str], List[List[float]]]:
    """Per example: the prediction (label or value) and Google's raw outputs (class probabilities or value)."""
    if self.task.is_regression:
      return [repr(float(value)) for value in outputs[:, 0]], outputs.tolist()
    probabilities = tf.nn.softmax(outputs).numpy()
    return [self.task.label_list[index] for index in probabilities.argmax(-1)], probabilities.tolist()

  def export(self, model, export_dir: str, options: FineTuningOptions) -> str:
    return serving.export_saved_model(model, export_dir, options.spm_model_file, options.max_seq_length,
                                      options.do_lower_case, options.keep_accents)


class SentenceSimilarityObjective:
  """Sentence-BERT's siamese regression: the cosine of two embeddings fits the pair's scaled score.

  Args:
    task: a regression task of text pairs (`sts-b`, or `tsv` with a second text column and a score).
    score_range: the (lowest, highest) score, mapped to cosines 0 and 1; default the extremes of the train
      split (STS-B's are 0 and 5), or of an earlier run of the same output_dir.

  Raises:
    TaskError: a task that is not a regression of pairs, or an empty score range.
  """

  has_head = False
  sum_names = ("loss", "examples")
  primary_metric = "spearman"
  progress_groups = (("loss",),)

  def __init__(self, task: Task, score_range: Optional[Tuple[float, float]] = None):
    if not (task.is_regression and task.is_pair):
      raise TaskError(f"A sentence encoder learns from pairs of texts with a similarity score; task {task.name!r} "
                      "is not a regression of pairs (use sts-b, or tsv with --tsv_text_b_column and "
                      "--tsv_is_regression).")
    self.task = task
    self.score_range = None
    if score_range is not None:
      self._set_score_range(*score_range)

  def _set_score_range(self, low: float, high: float):
    if not high > low:
      raise TaskError(f"The score range must go from a lower to a higher score, not ({low}, {high}).")
    self.score_range = (float(low), float(high))

  def run_info(self) -> Dict:
    return {"task": self.task.name, "score_range": list(self.score_range) if self.score_range else None}

  def adopt_run_info(self, info: Dict, output_dir: str):
    if info.get("task") != self.task.name:
      raise TaskError(f"--output_dir {output_dir} holds a run of task {info.get('task')!r}, not {self.task.name!r}.")
    if info["score_range"] is None:
      return
    if self.score_range is None:
      self._set_score_range(*info["score_range"])
    elif list(self.score_range) != info["score_range"]:
      raise TaskError(f"--output_dir {output_dir} was trained with score range {info['score_range']}; this run's "
                      f"is {list(self.score_range)}. Use a new --output_dir.")

  def learn_from_train(self, examples: List[Example]):
    """Without a given (or an earlier run's) score range, takes the train split's lowest and highest score."""
    if self.score_range is None:
      scores = [example.label for example in examples]
      self._set_score_range(min(scores), max(scores))

  def encode(self, examples: List[Example], tokenizer: GraphTokenizer, max_seq_length: int,
             description: str) -> EncodedSplit:
    labels = np.array([example.label or 0.0 for example in examples], np.float32)
    sequences = {
        "inputs_a": pack_texts(tokenizer, [e.text_a for e in examples], None, max_seq_length, f"{description} (a)"),
        "inputs_b": pack_texts(tokenizer, [e.text_b or "" for e in examples], None, max_seq_length,
                               f"{description} (b)"),
    }
    return EncodedSplit(sequences, labels, [example.guid for example in examples], max_seq_length)

  def build_model(self, config: AlbertConfig, dropout_prob: float) -> AlbertSentenceEncoder:
    del dropout_prob  # no head: only the encoder's own dropout applies
    return AlbertSentenceEncoder(config)

  def _cosine(self, model, batch, training: bool):
    embedding_a = model(batch["inputs_a"], training=training)["embedding"]
    embedding_b = model(batch["inputs_b"], training=training)["embedding"]
    return tf.reduce_sum(embedding_a * embedding_b, axis=-1)

  def _target(self, scores):
    low, high = self.score_range
    return (scores - low) / (high - low)

  def replica_loss(self, model, global_batch_size: int):
    """batch -> (this replica's share of the global-batch mean squared error, its sums)."""

    def loss_and_sums(batch):
      squared_error = tf.square(self._cosine(model, batch, training=True) - self._target(batch["labels"]))
      sums = tf.stack([tf.reduce_sum(squared_error), tf.cast(tf.size(squared_error), tf.float32)])
      return sums[0] / float(global_batch_size), sums

    return loss_and_sums

  def metrics_from_sums(self, sums) -> Dict[str, float]:
    values = dict(zip(self.sum_names, np.asarray(sums, np.float64)))
    return {"loss": _safe_ratio(values["loss"], values["examples"])}

  def predict(self, model, batch) -> tf.Tensor:
    """The cosine similarity of each pair, float32 `[batch]`."""
    return self._cosine(model, batch, training=False)

  def evaluation_metrics(self, outputs: np.ndarray, labels: np.ndarray) -> Dict[str, float]:
    values = {"spearman": metrics_lib.spearman(outputs, labels), "pearson": metrics_lib.pearson(outputs, labels)}
    if self.score_range is not None:  # the training loss; a model never trained here has no score range
      values["loss"] = metrics_lib.mse(outputs, self._target(labels))
    return values

  def prediction_rows(self, outputs: np.ndarray) -> Tuple[List[str], List[List[float]]]:
    return [repr(float(value)) for value in outputs], [[float(value)] for value in outputs]

  def export(self, model, export_dir: str, options: FineTuningOptions) -> str:
    return serving.export_saved_model(model.encoder, export_dir, options.spm_model_file, options.max_seq_length,
                                      options.do_lower_case, options.keep_accents)


class FineTuning:
  """One fine-tuning run of `FineTuningOptions` with an objective.

  Construction reads, checks and tokenizes every split the run needs, checks the run directory and the
  checkpoints, and restores (or initialises) the model: every problem is raised before anything is written.

  Args:
    options: the run's settings.
    objective: `ClassifierObjective` or `SentenceSimilarityObjective`.
    strategy: the `tf.distribute` strategy.
  """

  def __init__(self, options: FineTuningOptions, objective, strategy: tf.distribute.Strategy):
    self.options = options
    self.objective = objective
    self.strategy = strategy
    self.is_chief = distribution.is_chief(strategy)
    o = options
    self._check_options()
    self._check_checkpoints()
    self.tokenizer = tokenizer_for_model(o.albert_config, o.spm_model_file, o.do_lower_case, o.keep_accents)
    self.splits = self._read_splits()
    training.check_run_directory(o.output_dir, o.albert_config)

    training.set_mixed_precision(o.mixed_precision)
    tf_keras.utils.set_random_seed(o.random_seed)  # the same initial head for the same seed
    with strategy.scope():
      self.model = objective.build_model(o.albert_config, o.dropout_prob)
      self.model(self.model.dummy_inputs(), training=False)
      self.optimizer = training.create_optimizer(self.model, o.mixed_precision, o.learning_rate, o.train_step,
                                                 o.warmup_step, o.optimizer)
      self.step = tf.Variable(0, dtype=tf.int64, trainable=False, name="global_step")
    self.checkpoint = tf.train.Checkpoint(**{checkpoint_lib.MODEL_KEY: self.model}, optimizer=self.optimizer,
                                          step=self.step)
    self.manager = tf.train.CheckpointManager(
        self.checkpoint, training.checkpoint_dir(strategy, o.output_dir), max_to_keep=o.keep_checkpoint_max,
        checkpoint_name=training.CHECKPOINT_NAME)
    self.last_eval = None
    self.weights_step = None  # the step of the weights the model holds, when they are model.ckpt-best's
    self._predict_step = tf.function(self._gathered_outputs)
    self._restore_or_initialize()

  # --- setup -------------------------------------------------------------------------------------------

  def _check_options(self):
    o = self.options
    if not (o.do_train or o.do_eval or o.do_predict or o.export_dir):
      raise ValueError("Nothing to do: set at least one of --do_train, --do_eval, --do_predict, --export_dir.")
    if not 3 <= o.max_seq_length <= o.albert_config.max_position_embeddings:
      raise ValueError(f"--max_seq_length={o.max_seq_length} must be between 3 and the model's "
                       f"max_position_embeddings={o.albert_config.max_position_embeddings}.")
    replicas = self.strategy.num_replicas_in_sync
    for flag, size in (("train_batch_size", o.train_batch_size), ("eval_batch_size", o.eval_batch_size),
                       ("predict_batch_size", o.predict_batch_size)):
      if size <= 0 or size % replicas:
        raise ValueError(f"--{flag}={size} must be a positive multiple of the {replicas} replica(s).")
    if o.do_train and o.train_step <= 0:
      raise ValueError(f"--train_step={o.train_step} must be positive.")

  def _read_splits(self) -> Dict[str, EncodedSplit]:
    """Reads (the train split first: it fixes a tsv task's labels), checks against the run directory, encodes."""
    o = self.options
    needed = [split for split, wanted in (("train", o.do_train), ("dev", o.do_eval), ("test", o.do_predict))
              if wanted]
    examples = {}
    if "train" in needed:
      examples["train"] = self.objective.task.read_examples(o.data_dir, "train")
    info_file = os.path.join(o.output_dir, RUN_INFO_FILE)
    if os.path.exists(info_file):
      with open(info_file, encoding="utf-8") as reader:
        self.objective.adopt_run_info(json.load(reader), o.output_dir)
    for split in needed[len(examples):]:
      examples[split] = self.objective.task.read_examples(o.data_dir, split)
    if "train" in examples:
      self.objective.learn_from_train(examples["train"])
    return {split: self.objective.encode(rows, self.tokenizer, o.max_seq_length, f"{split} examples")
            for split, rows in examples.items()}

  def _check_checkpoints(self):
    """Something to start from: a run to resume or evaluate, or an --init_checkpoint that exists."""
    o = self.options
    if tf.train.latest_checkpoint(o.output_dir):
      return
    if not o.do_train and self.objective.has_head:
      raise TrainingError(f"Evaluating, predicting or exporting without --do_train needs a fine-tuned checkpoint "
                          f"in --output_dir={o.output_dir}; there is none.")
    if o.init_checkpoint:
      checkpoint_lib.resolve_checkpoint_path(o.init_checkpoint)  # FileNotFoundError now, not after tokenizing
    elif not o.do_train:
      raise TrainingError("Evaluating, predicting or exporting without --do_train needs a checkpoint: one in "
                          f"--output_dir={o.output_dir}, or an --init_checkpoint.")

  def _restore_or_initialize(self):
    o = self.options
    self.restored_from = training.restore_latest(o.output_dir, self.model, self.checkpoint)
    if self.restored_from:
      print(f"Resuming from {self.restored_from} at step {int(self.step.numpy())}.", file=sys.stderr)
    elif o.init_checkpoint:
      prefix = checkpoint_lib.restore_checkpoint(self.model.encoder, o.init_checkpoint)
      fresh = " The classifier head starts from fresh initialisation." if self.objective.has_head else ""
      print(f"Initialised the encoder from {prefix}.{fresh}", file=sys.stderr)
    else:
      print("No --init_checkpoint: fine-tuning starts from random weights (no pretraining).", file=sys.stderr)

  # --- training ------------------------------------------------------------------------------------------

  def train(self) -> Dict[str, float]:
    """Fine-tunes to `train_step`, resuming where the run directory left off. Returns the last metrics."""
    o = self.options
    if self.is_chief:
      training.write_config(o.output_dir, o.albert_config)
      with open(os.path.join(o.output_dir, RUN_INFO_FILE), "w", encoding="utf-8") as writer:
        json.dump(self.objective.run_info(), writer, indent=2)
    if o.do_eval and training.awaits_evaluation(o.output_dir, self.restored_from, int(self.step.numpy())):
      self.evaluate(keep_best=True)  # score it now, so that model.ckpt-best misses no checkpoint
    train_split = self.splits["train"]
    start_example = int(self.step.numpy()) * o.train_batch_size

    def dataset_fn(context: tf.distribute.InputContext):
      return training_dataset(train_split, context.get_per_replica_batch_size(o.train_batch_size), o.random_seed,
                              start_example, context)

    step_fn = training.replica_train_step(self.model, self.optimizer,
                                          self.objective.replica_loss(self.model, o.train_batch_size),
                                          o.mixed_precision == "float16", o.jit_compile)
    loop = training.host_loop(self.strategy, step_fn, len(self.objective.sum_names), lambda: self.step.assign_add(1))
    schedule = training.LoopSchedule(o.train_step, o.iterations_per_loop, o.save_checkpoints_steps, o.log_steps)
    return training.run_training(
        loop, iter(self.strategy.distribute_datasets_from_function(dataset_fn)), self.step, schedule,
        o.train_batch_size, self.objective.metrics_from_sums, self.objective.progress_groups,
        self.optimizer.learning_rate, os.path.join(o.output_dir, "train") if self.is_chief else None, self._save,
        self.manager)

  def _save(self, step: int):
    training.save_run_checkpoint(self.manager, step, self.is_chief)
    if self.options.do_eval:
      self.evaluate(keep_best=True)  # every worker takes part: gathering the predictions spans them all

  # --- evaluation, prediction, export --------------------------------------------------------------------

  def _gathered_outputs(self, batch):
    """The objective's outputs of a distributed batch, with weights and example indices, from every replica."""

    def replica_outputs(batch):
      return {"outputs": self.objective.predict(self.model, batch), "weights": batch["weights"],
              "example_index": batch["example_index"]}

    per_replica = self.strategy.run(replica_outputs, args=(batch,))
    return tf.nest.map_structure(lambda value: self.strategy.gather(value, axis=0), per_replica)

  def _outputs(self, split: EncodedSplit, global_batch_size: int) -> np.ndarray:
    """The objective's outputs for every example of `split`, in order, on every replica."""

    def dataset_fn(context: tf.distribute.InputContext):
      return evaluation_dataset(split, context.get_per_replica_batch_size(global_batch_size), global_batch_size,
                                context)

    # Exactly the padded batches, never past the end: every worker knows the count, and an exhausted
    # distributed iterator logs an error-looking line.
    batches = iter(self.strategy.distribute_datasets_from_function(dataset_fn))
    num_batches = evaluation_steps(split.num_examples, global_batch_size)
    gathered = [self._predict_step(next(batches)) for _ in range(num_batches)]
    values = {key: np.concatenate([batch[key].numpy() for batch in gathered]) for key in gathered[0]}
    real = values["weights"] > 0
    order = np.argsort(values["example_index"][real], kind="stable")
    return values["outputs"][real][order]

  def evaluate(self, keep_best: bool = False) -> Dict[str, float]:
    """Scores the dev split and writes eval_results.txt; with `keep_best` (the checkpoints of training), the
    weights go to `model.ckpt-best` when they are the best so far by the objective's metric."""
    o = self.options
    split = self.splits["dev"]
    metrics = self.objective.evaluation_metrics(self._outputs(split, o.eval_batch_size), split.labels)
    metrics["global_step"] = int(self.step.numpy()) if self.weights_step is None else self.weights_step
    metrics["eval_examples"] = split.num_examples
    if self.is_chief:
      names = sorted(name for name, value in metrics.items() if isinstance(value, float))
      training.write_eval_results(o.output_dir, metrics, names)
      if keep_best and training.keep_if_best(o.output_dir, self.model, metrics, self.objective.primary_metric):
        print(f"New best {self.objective.primary_metric} {metrics[self.objective.primary_metric]:.4f} at step "
              f"{metrics['global_step']}: {os.path.join(o.output_dir, training.BEST_CHECKPOINT)}", file=sys.stderr)
    self.last_eval = metrics
    return metrics

  def use_best_weights(self) -> str:
    """Loads `model.ckpt-best` when evaluation kept one; returns what the model now holds."""
    best = os.path.join(self.options.output_dir, training.BEST_CHECKPOINT)
    if tf.io.gfile.exists(best + ".index"):
      checkpoint_lib.restore_checkpoint(self.model, best)
      self.weights_step = training.read_best_info(self.options.output_dir)["global_step"]
      return best
    return self.manager.latest_checkpoint or self.restored_from or self.options.init_checkpoint

  def predict(self) -> str:
    """Writes `test_results.tsv` (Google's: class probabilities or the value per line) and
    `submit_results.tsv` (GLUE's `index  prediction`) for the test split; returns the directory."""
    o = self.options
    split = self.splits["test"]
    predictions, raw = self.objective.prediction_rows(self._outputs(split, o.predict_batch_size))
    if self.is_chief:
      os.makedirs(o.output_dir, exist_ok=True)
      with open(os.path.join(o.output_dir, TEST_RESULTS), "w", encoding="utf-8") as writer:
        writer.writelines("\t".join(repr(value) for value in row) + "\n" for row in raw)
      with open(os.path.join(o.output_dir, SUBMIT_RESULTS), "w", encoding="utf-8") as writer:
        writer.write("index\tprediction\n")
        writer.writelines(f"{guid}\t{prediction}\n" for guid, prediction in zip(split.guids, predictions))
    return o.output_dir

  def export(self) -> str:
    """Writes a SavedModel of the model (as it is now) to `<export_dir>/<version>`; returns its path."""
    return self.objective.export(self.model, self.options.export_dir, self.options)


def run(options: FineTuningOptions, objective, strategy: tf.distribute.Strategy) -> Dict[str, object]:
  """Trains, evaluates, predicts and exports as `options` say; returns what each step produced."""
  run_state = FineTuning(options, objective, strategy)
  results = {}
  if options.do_train:
    results["train"] = run_state.train()
  if options.do_eval and run_state.last_eval is not None:
    results["eval"] = run_state.last_eval  # training scored every checkpoint it wrote
  if (options.do_eval and "eval" not in results) or options.do_predict or options.export_dir:
    # The weights that score, predict and export: the best by the dev metric (without one, the last ones).
    weights = run_state.use_best_weights()
    results["weights"] = weights
    if options.do_eval and "eval" not in results:
      results["eval"] = run_state.evaluate()
    if options.do_predict:
      results["predict"] = run_state.predict()
      print(f"Predictions of {weights} on the test split: {os.path.join(results['predict'], SUBMIT_RESULTS)}",
            file=sys.stderr)
    if options.export_dir and run_state.is_chief:
      results["export"] = run_state.export()
      print(f"Exported {weights} to {results['export']}", file=sys.stderr)
  return results
