"""Generic evaluation metrics, in NumPy (no scikit-learn or SciPy needed); a task's own metrics, and which it
reports, live in its package under `albert_tf.tasks`.

Each metric takes (predictions, labels) of the same length; all are symmetric in the two. Classification
metrics take class ids; the binary ones (MCC, F1) take ids 0 and 1 with 1 the positive class; macro F1 takes
the number of classes too, since a class may be absent from both. Where a correlation is undefined (a side
without variance) it is 0, as scikit-learn's MCC (SciPy's Pearson and Spearman give NaN), and so is an F1 of
no positives at all, so the best checkpoint can always be picked by comparison.
"""

from typing import Optional, Sequence

import numpy as np



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


def thresholded_f1(predictions, labels, threshold: float) -> float:
  """`f1` of (predicted score >= threshold) against (true score >= threshold): a regression scored as a binary
  class (KLUE-STS's F1, at 3.0)."""
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


def micro_f1(predictions, labels, classes: Sequence[int]) -> float:
  """Micro-averaged F1 over `classes` only (KLUE-RE's, over every relation but no_relation): the true positives,
  predictions and labels of those classes pooled, 2 tp / (predicted + labelled), as scikit-learn's
  `f1_score(labels, predictions, average="micro", labels=classes)`; 0 where none is predicted or labelled."""
  predictions, labels = _pair(predictions, labels)
  predicted, labelled = np.isin(predictions, classes), np.isin(labels, classes)
  true_positives = float(np.sum(predicted & (predictions == labels)))
  denominator = float(np.sum(predicted) + np.sum(labelled))
  return 2 * true_positives / denominator if denominator else 0.0


def precision_recall_auc(scores, positives) -> float:
  """The area under one class's precision-recall curve, as scikit-learn's `auc(recall, precision)` of
  `precision_recall_curve(positives, scores)`: a point for each distinct score (taken as the threshold), plus
  (recall 0, precision 1), joined by straight lines. Without positives every recall is 1 (the area is 0.5)."""
  scores, positives = _pair(scores, positives, np.float64)
  order = np.argsort(-scores, kind="stable")
  scores, positives = scores[order], positives[order]
  last_of_each_score = np.r_[np.flatnonzero(np.diff(scores)), len(scores) - 1]
  true_positives = np.cumsum(positives)[last_of_each_score]
  predicted = last_of_each_score + 1.0
  precision = true_positives / predicted
  recall = true_positives / true_positives[-1] if true_positives[-1] else np.ones_like(true_positives)
  precision, recall = np.r_[1.0, precision], np.r_[0.0, recall]
  return float(np.sum(np.diff(recall) * (precision[1:] + precision[:-1]) / 2))


def mean_auprc(probabilities, labels) -> float:
  """KLUE-RE's AUPRC: the mean over every class of the one-vs-rest `precision_recall_auc` of its probabilities
  (`probabilities` [examples, classes], `labels` class ids)."""
  probabilities = np.asarray(probabilities, np.float64)
  labels = np.asarray(labels).reshape(-1)
  if probabilities.ndim != 2 or probabilities.shape[0] != labels.size:
    raise ValueError(f"AUPRC takes class probabilities [examples, classes] and a label each: {probabilities.shape} "
                     f"and {labels.size} labels.")
  return float(np.mean([precision_recall_auc(probabilities[:, c], labels == c)
                        for c in range(probabilities.shape[1])]))


def class_probabilities(logits) -> np.ndarray:
  """The softmax of class logits [examples, classes], float32: what the probability metrics score and what
  prediction files write, the same numbers (a tie in one is a tie in the other)."""
  logits = np.asarray(logits, np.float32)
  exponentials = np.exp(logits - logits.max(axis=-1, keepdims=True))
  return exponentials / exponentials.sum(axis=-1, keepdims=True)
