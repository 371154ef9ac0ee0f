"""SQuAD answers from the model's outputs: Google's n-best assembly (`write_predictions_v1` and `_v2`).

A feature is one window of an example's context, `[CLS] question [SEP] window [SEP]`; a long context has several,
which overlap. The candidates of all the windows of an example are pooled. A (start, end) pair of sequence
positions is a candidate when both lie in its window's context tokens, its window is the max-context window of
its start token, it does not end before it starts and it is at most `max_answer_length` tokens long. Its text is
the context from its start token's first character to its end token's last, stripped (for a context read from
markup, KorQuAD 2.x's HTML, the markup holding that text: `SquadExample.answer_of_span`). Candidates are ranked by
the sum of their start and end scores; one whose text a better one already has is dropped, and the best
`n_best_size` are kept. Their probabilities are the softmax of those sums over the kept list. With `answer_end`
(`--trim_particles`: `particles.ParticleTrimmer.answer_end`), the best candidate's span ends before its trailing
particles; the others are the model's spans, so that a run analyses one span a question, not `n_best_size`.

SQuAD v1.1 scores every position of a window (start and end logits) and tries the `n_best_size` best starts with
the `n_best_size` best ends; an example without any candidate gets Google's placeholder answer "empty". SQuAD v2.0
(the beam-search head) gives each window its top starts, the top ends of each, their log-probabilities, and
`cls_logits`, how unanswerable the window looks. The null odds of an example are the least `cls_logits` of its
windows (Google's `score_diff`); it is predicted unanswerable ("") unless they are below a threshold.

Where this differs from Google's code:
  - Google's v1 code would turn a candidate starting before the context (in the question) into a "null" answer
    "". Here such a candidate is dropped, as BERT's reference code and Hugging Face's do. The predictions are the
    same: Google's max-context check already rejects every start outside the context, so that branch never runs.
  - An example without any feature (one that feature creation skipped) is answered "" with one placeholder in
    its n-best list, in v1 too; in v2 its null odds are 1e6 (Google's starting value), surely unanswerable.
  - The features of an example may come in any order; they are taken in window order.
"""

import dataclasses
import json
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np


PREDICTIONS_FILE = "predictions.json"
NBEST_FILE = "nbest_predictions.json"
NULL_ODDS_FILE = "null_odds.json"

_EMPTY_V1_TEXT = "empty"  # Google's v1 answer when no span qualifies
_V2_PLACEHOLDER_LOG_PROB = -1e6  # Google's v2 placeholder scores: below any real candidate
_NO_FEATURE_NULL_ODDS = 1e6  # Google's starting null score: without a window, nothing can be answered

# (sequence start, sequence end, start score, end score) of one window.
_Span = Tuple[int, int, float, float]
# (context, span start, span end) -> the span's new end (exclusive): the end that `--trim_particles` cuts to.
AnswerEnd = Callable[[str, int, int], int]


@dataclasses.dataclass
class SquadPredictions:
  """The answers to the questions of a SQuAD set, as Google's prediction files hold them.

  Attributes:
    answers: qas_id -> the predicted answer text ("" = no answer, v2), `predictions.json`.
    nbest: qas_id -> the ranked candidates, each {"text", "probability", "start_log_prob", "end_log_prob"},
      `nbest_predictions.json`.
    null_odds: v2: qas_id -> the example's null odds (Google's `score_diff`), `null_odds.json`; None for v1.
  """
  answers: Dict[str, str]
  nbest: Dict[str, List[Dict[str, Any]]]
  null_odds: Optional[Dict[str, float]] = None


def v1_predictions(examples: Sequence, features: Sequence, start_logits: np.ndarray, end_logits: np.ndarray,
                   n_best_size: int, max_answer_length: int, answer_end: Optional[AnswerEnd] = None
                   ) -> SquadPredictions:
  """The SQuAD v1.1 answers of `examples` from the start and end logits of their features.

  Args:
    examples: the `examples.SquadExample`s, in the order `SquadFeature.example_index` counts.
    features: their `SquadFeature`s, any order; row i of the logits is `features[i]`'s.
    start_logits: [features, sequence] float start logits (padding positions may follow the sequence).
    end_logits: [features, sequence] float end logits.
    n_best_size: how many best starts and ends to pair up, and how many candidates to keep.
    max_answer_length: the most tokens an answer may span.
    answer_end: where the best candidate's span ends instead (without its trailing particles); None: the model's.

  Returns:
    The answers and n-best lists; no null odds.

  Raises:
    ValueError: the logits do not have one row per feature, or a feature names no example.
  """
  start_logits = _feature_rows(features, start_logits, "start_logits")
  end_logits = _feature_rows(features, end_logits, "end_logits")

  def row_spans(row: int) -> Iterable[_Span]:
    best_ends = _best_positions(end_logits[row], n_best_size)
    for start in _best_positions(start_logits[row], n_best_size):
      for end in best_ends:
        yield int(start), int(end), float(start_logits[row, start]), float(end_logits[row, end])

  rows_by_example = _rows_by_example(examples, features)
  answers, nbest = {}, {}
  for example, rows in zip(examples, rows_by_example):
    if rows:
      ranked = _ranked_candidates(example, features, rows, row_spans, n_best_size, max_answer_length, answer_end)
      nbest[example.qas_id] = _nbest_entries(ranked or [(_EMPTY_V1_TEXT, 0.0, 0.0)])
    else:
      nbest[example.qas_id] = _nbest_entries([("", 0.0, 0.0)])
    answers[example.qas_id] = nbest[example.qas_id][0]["text"]
  return SquadPredictions(answers, nbest)


def v2_predictions(examples: Sequence, features: Sequence, start_top_log_probs: np.ndarray,
                   start_top_index: np.ndarray, end_top_log_probs: np.ndarray, end_top_index: np.ndarray,
                   cls_logits: np.ndarray, n_best_size: int, max_answer_length: int,
                   null_score_diff_threshold: Optional[float], answer_end: Optional[AnswerEnd] = None
                   ) -> SquadPredictions:
  """The SQuAD v2.0 answers of `examples` from the beam-search outputs of their features.

  Args:
    examples: the `examples.SquadExample`s, in the order `SquadFeature.example_index` counts.
    features: their `SquadFeature`s, any order; row i of the outputs is `features[i]`'s.
    start_top_log_probs: [features, start_n_top] log-probabilities of the best starts.
    start_top_index: [features, start_n_top] their sequence positions.
    end_top_log_probs: [features, start_n_top * end_n_top] log-probabilities of the best ends of each start,
      start-major (or [features, start_n_top, end_n_top]).
    end_top_index: the same shape: their sequence positions.
    cls_logits: [features] how unanswerable each window looks.
    n_best_size: how many candidates to keep.
    max_answer_length: the most tokens an answer may span.
    null_score_diff_threshold: an example is answered only when its null odds are below this; None answers
      every example with its best text.
    answer_end: as `v1_predictions`'.

  Returns:
    The answers, n-best lists and null odds.

  Raises:
    ValueError: the outputs do not have one row per feature, or a feature names no example.
  """
  start_top_log_probs = _feature_rows(features, start_top_log_probs, "start_top_log_probs")
  start_top_index = _feature_rows(features, start_top_index, "start_top_index")
  start_n_top = start_top_index.shape[1]
  end_top_log_probs = _feature_rows(features, end_top_log_probs, "end_top_log_probs").reshape(
      len(features), start_n_top, -1)
  end_top_index = _feature_rows(features, end_top_index, "end_top_index").reshape(len(features), start_n_top, -1)
  cls_logits = _feature_rows(features, cls_logits, "cls_logits").reshape(-1)

  def row_spans(row: int) -> Iterable[_Span]:
    for i, start in enumerate(start_top_index[row]):
      for end, end_log_prob in zip(end_top_index[row, i], end_top_log_probs[row, i]):
        yield int(start), int(end), float(start_top_log_probs[row, i]), float(end_log_prob)

  rows_by_example = _rows_by_example(examples, features)
  nbest, null_odds = {}, {}
  for example, rows in zip(examples, rows_by_example):
    ranked = _ranked_candidates(example, features, rows, row_spans, n_best_size, max_answer_length, answer_end)
    nbest[example.qas_id] = _nbest_entries(ranked or [("", _V2_PLACEHOLDER_LOG_PROB, _V2_PLACEHOLDER_LOG_PROB)])
    null_odds[example.qas_id] = min((float(cls_logits[row]) for row in rows), default=_NO_FEATURE_NULL_ODDS)
  return apply_null_threshold(SquadPredictions({}, nbest, null_odds), null_score_diff_threshold)


def apply_null_threshold(predictions: SquadPredictions,
                         null_score_diff_threshold: Optional[float]) -> SquadPredictions:
  """v2 predictions answered anew: the best text where the null odds are below the threshold, else "".

  Args:
    predictions: v2 predictions (with null odds); their answers are not read.
    null_score_diff_threshold: the threshold; None answers every example with its best text.

  Returns:
    New predictions sharing `predictions`' n-best lists and null odds.

  Raises:
    ValueError: `predictions` have no null odds (v1's).
  """
  if predictions.null_odds is None:
    raise ValueError("Only SQuAD v2.0 predictions (with null odds) take a null threshold.")
  answers = {}
  for qas_id, odds in predictions.null_odds.items():
    answerable = null_score_diff_threshold is None or odds < null_score_diff_threshold
    answers[qas_id] = predictions.nbest[qas_id][0]["text"] if answerable else ""
  return SquadPredictions(answers, predictions.nbest, predictions.null_odds)


def prediction_file_texts(predictions: SquadPredictions) -> Dict[str, str]:
  """Google's prediction files as file name -> text (JSON, indent 4): `predictions.json`,
  `nbest_predictions.json` and, for v2, `null_odds.json`."""
  contents = {PREDICTIONS_FILE: predictions.answers, NBEST_FILE: predictions.nbest}
  if predictions.null_odds is not None:
    contents[NULL_ODDS_FILE] = predictions.null_odds
  return {name: json.dumps(content, indent=4) + "\n" for name, content in contents.items()}


def _feature_rows(features: Sequence, outputs: np.ndarray, name: str) -> np.ndarray:
  outputs = np.asarray(outputs)
  if outputs.shape[:1] != (len(features),):
    raise ValueError(f"{name} needs one row per feature: {len(features)} features, shape {outputs.shape}.")
  return outputs


def _rows_by_example(examples: Sequence, features: Sequence) -> List[List[int]]:
  """The feature rows of each example, in window order."""
  rows_by_example = [[] for _ in examples]
  for row, feature in enumerate(features):
    if not 0 <= feature.example_index < len(examples):
      raise ValueError(f"Feature {feature.unique_id} names example {feature.example_index}; there are "
                       f"{len(examples)}.")
    rows_by_example[feature.example_index].append(row)
  for rows in rows_by_example:
    rows.sort(key=lambda row: features[row].doc_span_index)
  return rows_by_example


def _best_positions(scores: np.ndarray, count: int) -> np.ndarray:
  """The positions of the `count` highest scores, best first; ties in position order, as Google's sort."""
  return np.argsort(-scores, kind="stable")[:count]


def _context_tokens(feature, start: int, end: int, max_answer_length: int) -> Optional[Tuple[int, int]]:
  """The (start, end) context tokens of a candidate at sequence positions (start, end), or None if invalid."""
  start_token, end_token = start - feature.context_offset, end - feature.context_offset
  if not 0 <= start_token <= end_token < len(feature.token_is_max_context):
    return None
  if not feature.token_is_max_context[start_token] or end_token - start_token + 1 > max_answer_length:
    return None
  return start_token, end_token


def _ranked_candidates(example, features: Sequence, rows: Sequence[int], row_spans: Callable[[int], Iterable[_Span]],
                       n_best_size: int, max_answer_length: int,
                       answer_end: Optional[AnswerEnd]) -> List[Tuple[str, float, float]]:
  """The best `n_best_size` (text, start score, end score) of an example's windows, each text once; the best
  one's span ends at `answer_end` when given."""
  candidates = []
  for row in rows:
    feature = features[row]
    for start, end, start_score, end_score in row_spans(row):
      tokens = _context_tokens(feature, start, end, max_answer_length)
      if tokens is not None:
        candidates.append((start_score + end_score, start_score, end_score, feature, tokens))
  candidates.sort(key=lambda candidate: candidate[0], reverse=True)  # stable: ties keep window order
  ranked, seen_texts = [], set()
  for _, start_score, end_score, feature, (start_token, end_token) in candidates:
    if len(ranked) >= n_best_size:
      break
    first_char, last_char = feature.token_start_to_char[start_token], feature.token_end_to_char[end_token]
    if answer_end is not None and not ranked:
      last_char = answer_end(example.context_text, first_char, last_char + 1) - 1
    text = example.answer_of_span(first_char, last_char)
    if text not in seen_texts:
      seen_texts.add(text)
      ranked.append((text, start_score, end_score))
  return ranked


def _nbest_entries(ranked: Sequence[Tuple[str, float, float]]) -> List[Dict[str, Any]]:
  totals = np.array([start_score + end_score for _, start_score, end_score in ranked], np.float64)
  probabilities = np.exp(totals - totals.max())
  probabilities /= probabilities.sum()
  return [dict(text=text, probability=float(probability), start_log_prob=start_score, end_log_prob=end_score)
          for (text, start_score, end_score), probability in zip(ranked, probabilities)]
