"""Evaluation metrics of the fine-tuning tasks, in NumPy (no scikit-learn or SciPy needed).

Each metric takes (predictions, labels) of the same length; all are symmetric in the two. Classification
metrics take class ids; the binary ones (MCC, F1) take ids 0 and 1 with 1 the positive class; macro F1 takes
the number of classes too, since a class may be absent from both. Where a correlation is undefined (a side
without variance) it is 0, as scikit-learn's MCC (SciPy's Pearson and Spearman give NaN), and so is an F1 of
no positives at all, so the best checkpoint can always be picked by comparison.
"""

from typing import Callable, Dict, Optional, Sequence

import numpy as np

from albert_tf.data.task_readers import Task


def _pair(predictions, labels, dtype=None):
  predictions = np.asarray(predictions, dtype).reshape(-1)
  labels = np.asarray(labels, dtype).reshape(-1)
  if predictions.shape != labels.shape or not predictions.size:
    raise ValueError(f"Metrics need as many predictions as labels, at least one: {predictions.size} "
                     f"predictions, {labels.size} labels.")
  return predictions, labels


def _binary_counts(predictions, labels):
  """(true positives, true negatives, false positives, false negatives) as floats (no overflow)."""
  predictions, labels = _pair(predictions, labels)
  for name, values in (("predictions", predictions), ("labels", labels)):
    if not np.isin(values, (0, 1)).all():
      raise ValueError(f"Binary metrics take class ids 0 and 1; the {name} hold {np.unique(values)}.")
  positive, predicted_positive = labels == 1, predictions == 1
  return (float(np.sum(positive & predicted_positive)), float(np.sum(~positive & ~predicted_positive)),
          float(np.sum(~positive & predicted_positive)), float(np.sum(positive & ~predicted_positive)))


def accuracy(predictions, labels) -> float:
  """The fraction of predictions equal to their label."""
  predictions, labels = _pair(predictions, labels)
  return float(np.mean(predictions == labels))


def matthews_corrcoef(predictions, labels) -> float:
  """Matthews correlation of binary ids (CoLA's metric): 0 where a row or column of the confusion is empty."""
  tp, tn, fp, fn = _binary_counts(predictions, labels)
  denominator = np.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))
  return float((tp * tn - fp * fn) / denominator) if denominator else 0.0


def f1(predictions, labels) -> float:
  """F1 of the positive class 1 (MRPC's and QQP's metric): 0 where there are no positives at all."""
  tp, _, fp, fn = _binary_counts(predictions, labels)
  return 2 * tp / (2 * tp + fp + fn) if tp else 0.0


def macro_f1(predictions, labels, num_classes: Optional[int] = None) -> float:
  """Macro-averaged F1 (KLUE-YNAT's metric): the mean over the classes of each class's F1 against the rest.

  A class's F1 is 2 tp / (2 tp + fp + fn). A class in neither the predictions nor the labels has no positives
  at all: it scores 0 and still counts in the mean, as in scikit-learn's `f1_score(labels, predictions,
  average="macro", labels=range(num_classes), zero_division=0)`. (So a dev set that lacks one of the task's
  classes scores lower than over the classes it holds.)

  Args:
    predictions: class ids.
    labels: class ids.
    num_classes: the classes are 0 .. num_classes - 1; None: those in the predictions or the labels
      (scikit-learn's default).

  Raises:
    ValueError: with `num_classes`, an id that is not one of its classes.
  """
  predictions, labels = _pair(predictions, labels)
  classes = np.union1d(predictions, labels) if num_classes is None else np.arange(num_classes)
  for name, values in (("predictions", predictions), ("labels", labels)):
    if not np.isin(values, classes).all():
      raise ValueError(f"Macro F1 over {num_classes} classes takes class ids 0 .. {num_classes - 1}; the {name} "
                       f"hold {np.unique(values)}.")
  true_positives = np.array([np.sum((predictions == c) & (labels == c)) for c in classes], np.float64)
  # 2 tp + fp + fn is the class's predictions plus its labels: 0 only for a class absent from both.
  denominators = np.array([np.sum(predictions == c) + np.sum(labels == c) for c in classes], np.float64)
  scores = np.divide(2 * true_positives, denominators, out=np.zeros_like(denominators), where=denominators > 0)
  return float(np.mean(scores))


# KLUE-STS's binary-label is 1 where a pair's score (0 to 5) is at least 3.0, and KLUE's F1 for STS scores the
# predicted scores thresholded the same way against it.
KLUE_STS_BINARY_THRESHOLD = 3.0


def sts_binary_f1(predictions, labels, threshold: float = KLUE_STS_BINARY_THRESHOLD) -> float:
  """KLUE-STS's F1: `f1` of (predicted score >= threshold) against (true score >= threshold)."""
  predictions, labels = _pair(predictions, labels, np.float64)
  return f1((predictions >= threshold).astype(np.int32), (labels >= threshold).astype(np.int32))


def pearson(predictions, labels) -> float:
  """Pearson correlation (STS-B's metric); 0 where either side is constant."""
  predictions, labels = _pair(predictions, labels, np.float64)
  if np.ptp(predictions) == 0 or np.ptp(labels) == 0:
    return 0.0  # checked before centring, whose rounding would leave a constant side tiny, nonzero residuals
  predictions, labels = predictions - predictions.mean(), labels - labels.mean()
  denominator = np.sqrt(np.dot(predictions, predictions) * np.dot(labels, labels))
  return float(np.clip(np.dot(predictions, labels) / denominator, -1.0, 1.0)) if denominator else 0.0


def _average_ranks(values: np.ndarray) -> np.ndarray:
  """1-based ranks, tied values sharing the mean of their ranks (SciPy's `rankdata(method="average")`)."""
  order = np.argsort(values, kind="stable")
  sorted_values = values[order]
  run_starts = np.flatnonzero(np.r_[True, sorted_values[1:] != sorted_values[:-1]])
  run_ends = np.r_[run_starts[1:], len(values)]
  run_of_sorted = np.repeat(np.arange(len(run_starts)), run_ends - run_starts)
  ranks = np.empty(len(values))
  # Positions start..end-1 hold ranks start+1..end, whose mean is (start + end + 1) / 2.
  ranks[order] = ((run_starts + run_ends + 1) / 2.0)[run_of_sorted]
  return ranks


def spearman(predictions, labels) -> float:
  """Spearman rank correlation: Pearson of the average ranks; 0 where either side is constant."""
  predictions, labels = _pair(predictions, labels, np.float64)
  return pearson(_average_ranks(predictions), _average_ranks(labels))


def mse(predictions, labels) -> float:
  """Mean squared error."""
  predictions, labels = _pair(predictions, labels, np.float64)
  return float(np.mean(np.square(predictions - labels)))


def race_accuracy(predictions: Sequence[int], labels: Sequence[int], levels: Sequence[str]) -> Dict[str, float]:
  """RACE's accuracy, overall and per school level.

  Args:
    predictions: the chosen option of each question.
    labels: the right option of each question.
    levels: the level of each question's passage ("middle" or "high").

  Returns:
    "accuracy" and "examples" (a count), and "accuracy_<level>" and "examples_<level>" for each level present.

  Raises:
    ValueError: the three do not have the same, nonzero length.
  """
  if not len(predictions) == len(labels) == len(levels) or not len(labels):
    raise ValueError(f"RACE accuracy needs a level and a label for each prediction, at least one: "
                     f"{len(predictions)} predictions, {len(labels)} labels, {len(levels)} levels.")
  correct = np.asarray(predictions).reshape(-1) == np.asarray(labels).reshape(-1)
  levels = np.asarray(levels)
  scores = {"accuracy": float(correct.mean()), "examples": len(correct)}
  for level in sorted(set(levels.tolist())):
    of_level = levels == level
    scores[f"accuracy_{level}"] = float(correct[of_level].mean())
    scores[f"examples_{level}"] = int(of_level.sum())
  return scores



METRICS: Dict[str, Callable[..., float]] = {
    "accuracy": accuracy, "mcc": matthews_corrcoef, "f1": f1, "macro_f1": macro_f1, "binary_f1": sts_binary_f1,
    "pearson": pearson, "spearman": spearman, "mse": mse}
# Metrics over all of a task's classes, present or not: they take its number of classes too.
PER_CLASS_METRICS = frozenset({"macro_f1"})


def compute_metrics(task: Task, predictions, labels) -> Dict[str, float]:
  """The metrics of `task` (its `metric_names`: Google's set for GLUE, the benchmark's own for the Korean tasks)
  on one evaluation.

  Args:
    task: the task, from `albert_tf.tasks.classification.catalogue.get_task`.
    predictions: class ids, or class scores [examples, classes] (their argmax is taken); for regression,
      the predicted values ([examples] or [examples, 1]).
    labels: label ids, or the true values for regression.

  Returns:
    {metric name: value}; `task.primary_metric` is among them.
  """
  predictions = np.asarray(predictions)
  if not task.is_regression and predictions.ndim == 2:
    predictions = predictions.argmax(axis=-1)
  return {name: METRICS[name](predictions, labels, len(task.label_list)) if name in PER_CLASS_METRICS
          else METRICS[name](predictions, labels) for name in task.metric_names}
