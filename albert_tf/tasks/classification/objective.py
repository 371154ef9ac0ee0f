"""Google's `run_classifier.py` as an objective: one packed `[CLS] a [SEP] b [SEP]` sequence per example,
Google's head on `pooled_output`, cross-entropy or (regression) squared error, the task's metrics (accuracy,
MCC, F1, Pearson/Spearman/MSE)."""

from typing import Dict, List, Optional

import numpy as np
import tensorflow as tf

from albert_tf.data.finetuning_dataset import EncodedSplit, pack_texts
from albert_tf.data.task_readers import Example
from albert_tf.errors import TaskError
from albert_tf.modeling.config import AlbertConfig
from albert_tf.tasks.classification import metrics as classification_metrics
from albert_tf.tasks.classification.model import AlbertClassifier
from albert_tf.tasks.classification.serving import ClassifierServingOptions
from albert_tf.tasks.classification.task_types import Task
from albert_tf.text.graph_tokenizer import GraphTokenizer
from albert_tf.training import metrics as metrics_lib
from albert_tf.training.finetuning_objectives import (FineTuningDefaults, prediction_tables,
                                                      refuse_run_of_another_task, safe_ratio,
                                                      with_google_names)


class ClassifierObjective(FineTuningDefaults):
  """Google's `run_classifier`: the task's classes (cross-entropy) or its score (squared error).

  Args:
    task: from `catalogue.get_task`.
  """

  sum_names = ("loss", "correct", "examples")

  def __init__(self, task: Task):
    self.task = task
    self.primary_metric = task.primary_metric
    self.progress_groups = (("loss",),) if task.is_regression else (("loss", "accuracy"),)

  def run_info(self) -> Dict:
    info = {"task": self.task.name, "label_list": None if self.task.is_regression else list(self.task.label_list)}
    info.update(getattr(self.task, "settings", {}))  # what else its texts depend on (KLUE-RE's entity markers)
    return info

  def adopt_run_info(self, info: Dict, output_dir: str):
    """Takes the labels of an earlier run of `output_dir` (their order is the head's); refuses other labels."""
    refuse_run_of_another_task(info, self.task.name, output_dir)
    for name, value in getattr(self.task, "settings", {}).items():
      if info.get(name, value) != value:
        raise TaskError(f"--output_dir {output_dir} was trained with --{name}={info[name]}; this run's is "
                        f"--{name}={value}. Use the same, or a new --output_dir.")
    if self.task.is_regression:
      return
    if self.task.label_list is None:  # a tsv task that has not read its train split
      self.task.label_list = tuple(info["label_list"])
    elif list(self.task.label_list) != info["label_list"]:
      raise TaskError(f"--output_dir {output_dir} was trained with labels {info['label_list']}; this run's labels "
                      f"are {list(self.task.label_list)}. Use a new --output_dir.")

  def serving_options(self, output_dir: str) -> Optional[ClassifierServingOptions]:
    """A relation classifier's entity markers, for its `classify_relation` signature; None for others."""
    del output_dir
    markers = getattr(self.task, "settings", {}).get("entity_markers")
    return ClassifierServingOptions(markers) if markers else None

  def encode(self, examples: List[Example], tokenizer: GraphTokenizer, max_seq_length: int,
             description: str) -> EncodedSplit:
    check_vocabulary = getattr(self.task, "check_vocabulary", None)
    if check_vocabulary:  # texts that need pieces of their own (KLUE-RE's added entity markers)
      check_vocabulary([piece.decode("utf-8") for piece in tokenizer.vocabulary.numpy()])
    texts_b = [example.text_b or "" for example in examples] if self.task.is_pair else None
    packed = pack_texts(tokenizer, [example.text_a for example in examples], texts_b, max_seq_length, description)
    if self.task.is_regression:
      labels = np.array([example.label or 0.0 for example in examples], np.float32)
    else:
      label_ids = {label: index for index, label in enumerate(self.task.label_list)}
      labels = np.array([label_ids.get(example.label, 0) for example in examples], np.int32)
    return EncodedSplit({"inputs": packed}, labels, [example.guid for example in examples], max_seq_length)

  def build_model(self, config: AlbertConfig, dropout_prob: float, recompute_grad: bool = False) -> AlbertClassifier:
    return AlbertClassifier(config, None if self.task.is_regression else self.task.label_list, dropout_prob,
                            recompute_grad)

  def _per_example(self, logits, labels):
    """Google's per-example loss and correct predictions (0 for regression)."""
    if self.task.is_regression:
      return tf.square(logits[:, 0] - labels), tf.zeros_like(labels)
    loss = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    return loss, tf.cast(tf.equal(tf.argmax(logits, -1, output_type=tf.int32), labels), tf.float32)

  def replica_loss(self, model):
    """(batch, global examples) -> (this batch's share of the global-batch mean loss, its sums)."""

    def loss_and_sums(batch, normalizers):
      logits = model(batch["inputs"], training=True)["logits"]
      loss, correct = self._per_example(logits, batch["labels"])
      sums = tf.stack([tf.reduce_sum(loss), tf.reduce_sum(correct), tf.cast(tf.size(loss), tf.float32)])
      return sums[0] / normalizers[0], sums

    return loss_and_sums

  def metrics_from_sums(self, sums) -> Dict[str, float]:
    values = dict(zip(self.sum_names, np.asarray(sums, np.float64)))
    metrics = {"loss": safe_ratio(values["loss"], values["examples"])}
    if not self.task.is_regression:
      metrics["accuracy"] = safe_ratio(values["correct"], values["examples"])
    return metrics

  def predict(self, model, batch) -> tf.Tensor:
    """float32 logits `[batch, classes]` (`[batch, 1]` for regression)."""
    return model(batch["inputs"], training=False)["logits"]

  def evaluation_metrics(self, outputs: np.ndarray, split: EncodedSplit) -> Dict[str, float]:
    """The task's metrics and the loss, under our names and Google's (`eval_accuracy`, `eval_loss`, ...)."""
    loss, _ = self._per_example(tf.constant(outputs), tf.constant(split.labels))
    values = classification_metrics.compute_metrics(self.task, outputs[:, 0] if self.task.is_regression else outputs,
                                         split.labels)
    return with_google_names(dict(values, loss=float(np.mean(loss.numpy()))))

  def prediction_files(self, outputs: np.ndarray, split: EncodedSplit, output_dir: str) -> Dict[str, str]:
    """Per example: the prediction (label or value) and Google's raw outputs (class probabilities or value)."""
    del output_dir
    if self.task.is_regression:
      return prediction_tables(split.guids, [repr(float(value)) for value in outputs[:, 0]], outputs.tolist())
    probabilities = metrics_lib.class_probabilities(outputs)
    return prediction_tables(split.guids, [self.task.label_list[index] for index in probabilities.argmax(-1)],
                             probabilities.tolist())
