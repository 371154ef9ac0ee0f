"""RACE's metric: accuracy overall and per school level."""

from typing import Dict, Sequence

import numpy as np


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
