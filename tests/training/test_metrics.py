"""The generic metrics: hand-computed values, agreement with scikit-learn and SciPy (the `test` extra)."""

import numpy as np
import pytest
from scipy import stats
from sklearn import metrics as sklearn_metrics

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
