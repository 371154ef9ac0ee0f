"""Metrics: hand-computed values, agreement with scikit-learn and SciPy (the `test` extra), task metric sets."""

import numpy as np
import pytest
from scipy import stats
from sklearn import metrics as sklearn_metrics

from albert_tf.tasks.classification.catalogue import get_task
from albert_tf.tasks.classification.user_tsv import TsvFormat
from albert_tf.training import metrics


def test_hand_computed_values():
  # tp 2, fp 1, tn 2, fn 0: MCC (2 * 2 - 1 * 0) / sqrt(3 * 2 * 3 * 2), F1 2 * 2 / (2 * 2 + 1 + 0).
  predictions, labels = [1, 1, 0, 0, 1], [1, 0, 0, 0, 1]
  assert metrics.accuracy(predictions, labels) == 0.8
  assert metrics.matthews_corrcoef(predictions, labels) == pytest.approx(4 / 6)
  assert metrics.f1(predictions, labels) == pytest.approx(0.8)
  assert metrics.pearson([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(0.8)
  assert metrics.pearson([1, 2, 3], [6, 4, 2]) == pytest.approx(-1.0)
  # Ranks [1, 2.5, 2.5, 4] against [1, 2, 3, 4]: 4.5 / sqrt(4.5 * 5).
  assert metrics.spearman([10, 20, 20, 30], [0.1, 0.2, 0.3, 0.4]) == pytest.approx(3 / np.sqrt(10))
  assert metrics.spearman([1, 5, 2], [10, 300, 20]) == pytest.approx(1.0)
  assert metrics.mse([1, 2], [2, 4]) == 2.5


def test_average_ranks_share_ties():
  np.testing.assert_array_equal(metrics._average_ranks(np.array([3.0, 1.0, 3.0, 2.0, 3.0])), [4, 1, 4, 2, 4])
  np.testing.assert_array_equal(metrics._average_ranks(np.array([5.0])), [1])


def test_undefined_values_are_zero():
  assert metrics.matthews_corrcoef([1, 1, 1], [0, 1, 1]) == 0.0  # no predicted negatives
  assert metrics.f1([0, 0], [0, 0]) == 0.0  # no positives at all
  assert metrics.pearson([1, 1, 1], [1, 2, 3]) == 0.0
  # A constant whose mean does not round back to it exactly (centring leaves ±1e-16) is still constant.
  assert metrics.pearson(np.full(420, 0.5054166361228571), np.arange(420.0)) == 0.0
  assert metrics.spearman([1, 2, 3], [7, 7, 7]) == 0.0


def test_bad_inputs():
  with pytest.raises(ValueError, match="as many predictions as labels"):
    metrics.accuracy([1, 0], [1])
  with pytest.raises(ValueError, match="at least one"):
    metrics.pearson([], [])
  with pytest.raises(ValueError, match="Binary metrics take class ids 0 and 1; the labels hold"):
    metrics.matthews_corrcoef([0, 1, 1], [0, 1, 2])


@pytest.mark.parametrize("seed", range(3))
def test_agrees_with_sklearn(seed):
  rng = np.random.default_rng(seed)
  labels, predictions = rng.integers(0, 2, 200), rng.integers(0, 2, 200)
  predictions[:120] = labels[:120]
  assert metrics.accuracy(predictions, labels) == pytest.approx(
      sklearn_metrics.accuracy_score(labels, predictions))
  assert metrics.matthews_corrcoef(predictions, labels) == pytest.approx(
      sklearn_metrics.matthews_corrcoef(labels, predictions))
  assert metrics.f1(predictions, labels) == pytest.approx(sklearn_metrics.f1_score(labels, predictions))
  assert metrics.mse(predictions * 0.5, labels) == pytest.approx(
      sklearn_metrics.mean_squared_error(labels, predictions * 0.5))


@pytest.mark.parametrize("seed", range(3))
def test_agrees_with_scipy(seed):
  rng = np.random.default_rng(seed)
  labels = rng.integers(0, 26, 300) / 5.0  # STS-B-like scores with many ties
  predictions = labels + rng.normal(0, 1.5, 300)
  predictions[:50] = np.round(predictions[:50])
  assert metrics.pearson(predictions, labels) == pytest.approx(stats.pearsonr(predictions, labels)[0])
  assert metrics.spearman(predictions, labels) == pytest.approx(stats.spearmanr(predictions, labels)[0])
  np.testing.assert_array_equal(metrics._average_ranks(labels), stats.rankdata(labels))


def test_compute_metrics_gives_each_task_its_set():
  scores = np.array([[2.0, -1.0], [0.1, 0.3], [-1.0, 1.0], [0.5, 0.4]])  # argmax 0, 1, 1, 0
  labels = np.array([0, 1, 0, 0])
  assert metrics.compute_metrics(get_task("cola"), scores, labels) == pytest.approx(
      {"accuracy": 0.75, "mcc": 1 / np.sqrt(3)})
  assert metrics.compute_metrics(get_task("mrpc"), [0, 1, 1, 0], labels) == pytest.approx(
      {"accuracy": 0.75, "f1": 2 / 3})
  assert set(metrics.compute_metrics(get_task("qqp"), scores, labels)) == {"accuracy", "f1"}
  assert metrics.compute_metrics(get_task("mnli"), np.eye(3)[[0, 2, 1]], [0, 2, 2]) == pytest.approx(
      {"accuracy": 2 / 3})
  stsb = metrics.compute_metrics(get_task("sts-b"), [[1.0], [2.0], [3.0], [4.0]], [1.0, 3.0, 2.0, 4.0])
  assert stsb == pytest.approx({"pearson": 0.8, "spearman": 0.8, "mse": 0.5})
  regression = get_task("tsv", TsvFormat(text_a_column=2, label_column=1, is_regression=True))
  assert set(metrics.compute_metrics(regression, [0.5, -1.0], [1.0, -2.0])) == {"pearson", "spearman", "mse"}
  for name in ("cola", "sst-2", "mrpc", "sts-b", "qqp", "mnli", "qnli", "rte", "wnli"):
    assert get_task(name).primary_metric in get_task(name).metric_names
    assert set(get_task(name).metric_names) <= set(metrics.METRICS)


def test_race_accuracy():
  scores = metrics.race_accuracy([0, 1, 2, 3, 0], [0, 1, 0, 3, 1], ["middle", "high", "high", "middle", "high"])
  assert scores == {"accuracy": 0.6, "examples": 5, "accuracy_high": pytest.approx(1 / 3), "examples_high": 3,
                    "accuracy_middle": 1.0, "examples_middle": 2}
  assert metrics.race_accuracy([1], [1], ["high"]) == {"accuracy": 1.0, "examples": 1, "accuracy_high": 1.0,
                                                       "examples_high": 1}
  with pytest.raises(ValueError):
    metrics.race_accuracy([1, 2], [1], ["high"])
