"""KLUE-DP's scores, as KLUE-baseline computes them (`klue_baseline/metrics/functional.py`), and the usual
attachment scores.

KLUE reports two macro F1 scores over every word of every sentence, flattened into one list:
- UAS macro F1: the head index (0 for the root, else the 1-based word index) is a class; the score is the
  mean over the classes in the gold or predicted heads of each class's F1 (scikit-learn's
  `f1_score(gold, predicted, average="macro")`). Frequent head positions and rare long-sentence ones weigh the
  same.
- LAS macro F1: the same over relation ids (indices in `data.KLUE_DP_LABELS`), after two changes to the ids,
  in this order. (a) Every id from 15 on ("VP_CMP" and the rarer relations after it), gold or predicted,
  becomes one class, "others" (the baseline writes -3 for it; any id that is not another class's does).
  (b) A word whose predicted head is wrong gets a predicted class that no gold word has (the baseline's -2):
  its relation counts as wrong whatever it is. That class then counts in the mean with an F1 of 0, as it does
  in the baseline's macro average.
Both are fractions here; KLUE's tables give them times 100.

The attachment scores are the fractions of words with the right head (UAS) and with the right head and the
right relation (LAS), relation ids compared as they are.
"""

from typing import Dict, Optional, Sequence, Tuple

import numpy as np

from albert_tf.training.metrics import macro_f1

# Per sentence, a value per word: heads or relation ids.
PerWord = Sequence[Sequence[int]]

KLUE_OTHERS_FROM = 15
_OTHERS = -3
_WRONG_HEAD = -2


def _flat(predictions: PerWord, labels: PerWord, what: str) -> Tuple[np.ndarray, np.ndarray]:
  """The per-sentence values of both sides, each flattened into one int64 array, once each sentence is checked
  to have as many of each."""
  if len(predictions) != len(labels):
    raise ValueError(f"{len(predictions)} sentences of predicted {what}, {len(labels)} of gold {what}.")
  for index, (predicted, gold) in enumerate(zip(predictions, labels)):
    if len(predicted) != len(gold):
      raise ValueError(f"Sentence {index}: {len(predicted)} predicted {what}, {len(gold)} gold {what}.")
  return tuple(np.array([value for sentence in side for value in sentence], np.int64)
               for side in (predictions, labels))


def _flat_parses(predicted_heads: PerWord, predicted_labels: PerWord, gold_heads: PerWord,
                 gold_labels: PerWord) -> Tuple[np.ndarray, ...]:
  """Heads and relation ids flattened, predicted then gold, once checked to pair up and to hold a word."""
  predicted_heads, gold_heads = _flat(predicted_heads, gold_heads, "heads")
  predicted_labels, gold_labels = _flat(predicted_labels, gold_labels, "relations")
  if not gold_heads.size or predicted_heads.size != predicted_labels.size:
    raise ValueError(f"Dependency metrics need a relation for each head, and a word: {predicted_heads.size} "
                     f"heads, {predicted_labels.size} relations.")
  return predicted_heads, predicted_labels, gold_heads, gold_labels


def uas_macro_f1(predicted_heads: PerWord, gold_heads: PerWord) -> float:
  """KLUE's UAS: macro F1 of the head indices of all words, a head index a class (a fraction, not times 100).

  Args:
    predicted_heads: per sentence, each word's predicted head (0 for the root).
    gold_heads: per sentence, each word's gold head.

  Raises:
    ValueError: sentences or words that do not pair up, or no word at all.
  """
  return macro_f1(*_flat(predicted_heads, gold_heads, "heads"))


def las_macro_f1(predicted_heads: PerWord, predicted_labels: PerWord, gold_heads: PerWord,
                 gold_labels: PerWord, others_from: Optional[int] = KLUE_OTHERS_FROM) -> float:
  """KLUE's LAS: macro F1 of the relation ids of all words, with the ids from `others_from` on merged into one
  class and the relation of a word with a wrong head counted wrong (see the module's docstring).

  Args:
    predicted_heads, gold_heads: per sentence, each word's head.
    predicted_labels, gold_labels: per sentence, each word's relation id (>= 0).
    others_from: the first id merged into "others": KLUE's 15 for ids of `data.KLUE_DP_LABELS`; None merges
      none (a label list of another order, such as a CoNLL-U treebank's).

  Raises:
    ValueError: sentences or words that do not pair up, no word at all, or a negative relation id.
  """
  predicted_heads, predicted_labels, gold_heads, gold_labels = _flat_parses(
      predicted_heads, predicted_labels, gold_heads, gold_labels)
  if (predicted_labels < 0).any() or (gold_labels < 0).any():
    raise ValueError("Relation ids are indices in the label list, from 0.")
  if others_from is not None:
    predicted_labels = np.where(predicted_labels >= others_from, _OTHERS, predicted_labels)
    gold_labels = np.where(gold_labels >= others_from, _OTHERS, gold_labels)
  predicted_labels = np.where(predicted_heads == gold_heads, predicted_labels, _WRONG_HEAD)
  return macro_f1(predicted_labels, gold_labels)


def attachment_scores(predicted_heads: PerWord, predicted_labels: PerWord, gold_heads: PerWord,
                      gold_labels: PerWord) -> Dict[str, float]:
  """The usual unlabelled and labelled attachment scores over all words, fractions: `uas` (right head) and
  `las` (right head and relation id).

  Raises:
    ValueError: sentences or words that do not pair up, or no word at all.
  """
  predicted_heads, predicted_labels, gold_heads, gold_labels = _flat_parses(
      predicted_heads, predicted_labels, gold_heads, gold_labels)
  right_head = predicted_heads == gold_heads
  return {"uas": float(np.mean(right_head)),
          "las": float(np.mean(right_head & (predicted_labels == gold_labels)))}


def dependency_metrics(predicted_heads: PerWord, predicted_labels: PerWord, gold_heads: PerWord,
                       gold_labels: PerWord,
                       others_from: Optional[int] = KLUE_OTHERS_FROM) -> Dict[str, float]:
  """All four figures, fractions: `uas_macro_f1` and `las_macro_f1` (KLUE's; `las_macro_f1` says what
  `others_from` is), `uas` and `las` (the attachment scores)."""
  return {"uas_macro_f1": uas_macro_f1(predicted_heads, gold_heads),
          "las_macro_f1": las_macro_f1(predicted_heads, predicted_labels, gold_heads, gold_labels,
                                       others_from),
          **attachment_scores(predicted_heads, predicted_labels, gold_heads, gold_labels)}
