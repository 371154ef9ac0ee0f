"""The metrics of the classification tasks: each task's set by name (its `metric_names`), and KLUE-STS's F1."""

from typing import Callable, Dict

import numpy as np

from albert_tf.tasks.classification.task_types import Task
from albert_tf.training import metrics

# KLUE-STS's binary-label is 1 where a pair's score (0 to 5) is at least 3.0, and KLUE's F1 for STS scores the
# predicted scores thresholded the same way against it.
KLUE_STS_BINARY_THRESHOLD = 3.0


def sts_binary_f1(predictions, labels) -> float:
  """KLUE-STS's F1: `metrics.thresholded_f1` at `KLUE_STS_BINARY_THRESHOLD`."""
  return metrics.thresholded_f1(predictions, labels, KLUE_STS_BINARY_THRESHOLD)


# The metrics a task's `metric_names` may name.
METRICS: Dict[str, Callable[..., float]] = {
    "accuracy": metrics.accuracy, "mcc": metrics.matthews_corrcoef, "f1": metrics.f1, "macro_f1": metrics.macro_f1,
    "binary_f1": sts_binary_f1, "pearson": metrics.pearson, "spearman": metrics.spearman, "mse": metrics.mse,
    "micro_f1": metrics.micro_f1, "auprc": metrics.mean_auprc}
# Metrics over all of a task's classes, present or not: they take its number of classes too.
PER_CLASS_METRICS = frozenset({"macro_f1"})
# Metrics over the task's classes but its negative one (its `negative_label`, KLUE-RE's no_relation): they take
# the ids of the others.
POSITIVE_CLASS_METRICS = frozenset({"micro_f1"})
# Metrics of the class probabilities (the softmax of the 2-D predictions), not of the predicted class.
PROBABILITY_METRICS = frozenset({"auprc"})


def compute_metrics(task: Task, predictions, labels) -> Dict[str, float]:
  """The metrics of `task` (its `metric_names`: Google's set for GLUE, the benchmark's own for the Korean tasks)
  on one evaluation.

  Args:
    task: the task, from `albert_tf.tasks.classification.catalogue.get_task`.
    predictions: class ids, or class logits [examples, classes] (their argmax is taken; the probability
      metrics take their softmax, and need them); for regression, the predicted values ([examples] or
      [examples, 1]).
    labels: label ids, or the true values for regression.

  Returns:
    {metric name: value}; `task.primary_metric` is among them.
  """
  predictions = np.asarray(predictions)
  probabilities = None
  if not task.is_regression and predictions.ndim == 2:
    probabilities = metrics.class_probabilities(predictions)
    predictions = predictions.argmax(axis=-1)
  values = {}
  for name in task.metric_names:
    if name in PROBABILITY_METRICS:
      if probabilities is None:
        raise ValueError(f"{name} takes class logits [examples, classes], not class ids.")
      values[name] = METRICS[name](probabilities, labels)
    elif name in PER_CLASS_METRICS:
      values[name] = METRICS[name](predictions, labels, len(task.label_list))
    elif name in POSITIVE_CLASS_METRICS:
      negative = getattr(task, "negative_label", None)
      values[name] = METRICS[name](predictions, labels, [index for index, label in enumerate(task.label_list)
                                                          if label != negative])
    else:
      values[name] = METRICS[name](predictions, labels)
  return values
