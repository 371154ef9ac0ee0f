"""SQuAD's official evaluation scripts (v1.1 and v2.0) and Google's two-pass v2.0 evaluation.

`squad_v1_scores` is evaluate-v1.1.py and `squad_v2_scores` evaluate-v2.0.py, as Google's `squad_utils` carries
them. A predicted answer is compared with each gold answer of its question after normalisation (lower case, no
ASCII punctuation, no English articles a/an/the, single spaces), by exact match and by the F1 of the two bags of
words, and takes its best score over the gold answers. The scripts are English's: Korean text is normalised only
in case, punctuation and spacing, and its words are what spaces separate (eojeol, particles attached), so its
scores are not comparable with English ones.

`evaluate_v2` is Google's SQuAD v2.0 evaluation: predict, pick the null threshold that maximises F1 on the set,
predict again with it and score that.

Where this differs from the official scripts: a question without a prediction scores 0 and counts in every total
(v1.1's script does so; v2.0's would leave it out of the total and fail on its HasAns/NoAns split), and one line
on stderr gives their number instead of a line for each.
"""

import collections
import re
import string
import sys
from typing import Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

import numpy as np

from albert_tf.errors import DataError
from albert_tf.tasks.squad.predictions import AnswerEnd, SquadPredictions, apply_null_threshold, v2_predictions

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = frozenset(string.punctuation)


def normalize_answer(text: str) -> str:
  """The official scripts' normal form: lower case, without punctuation and articles, words single-spaced."""
  text = "".join(character for character in text.lower() if character not in _PUNCTUATION)
  return " ".join(_ARTICLES.sub(" ", text).split())


def squad_v1_scores(dataset: list, answers: Dict[str, str]) -> Dict[str, float]:
  """SQuAD v1.1's official scores of `answers`.

  Args:
    dataset: the "data" list of a SQuAD JSON file.
    answers: qas_id -> predicted answer text.

  Returns:
    {"exact_match", "f1"}, in percent of all the questions of `dataset`.

  Raises:
    DataError: `dataset` has no question, or a question without a gold answer (a v2.0 set).
  """
  fractions = answerable_set_scores(dataset, answers, normalize_answer,
                                    {"exact_match": _equal, "f1": lambda prediction, gold: _overlap_f1(
                                        prediction.split(), gold.split())}, "SQuAD v1.1", " (is this a v2.0 set?)")
  return {name: 100.0 * value for name, value in fractions.items()}  # percent, as evaluate-v1.1.py prints them


def answerable_set_scores(dataset: list, answers: Dict[str, str], normalize: Callable[[str], str],
                          pair_scores: Dict[str, Callable[[str, str], float]], scores_name: str,
                          no_gold_hint: str = "", id_field: str = "id") -> Dict[str, float]:
  """The scores of evaluate-v1.1.py's frame, which benchmarks of answerable questions share: each prediction and
  gold answer normalised, each metric the best over the question's gold answers, averaged over all questions, a
  fraction (a question without a prediction scores 0; SQuAD's official script prints it in percent).

  Args:
    dataset: the "data" list of a SQuAD-layout file.
    answers: qas_id -> predicted answer text.
    normalize: the benchmark's normal form of an answer.
    pair_scores: metric name -> (normalised prediction, normalised gold) -> score in [0, 1].
    scores_name, no_gold_hint: what the scores are and a hint, for the error of a question without a gold answer.
    id_field: the question's field holding its id.

  Raises:
    DataError: `dataset` has no question, or a question without a gold answer.
  """
  return answerable_question_scores(_questions(dataset, id_field), answers, normalize, pair_scores, scores_name,
                                    no_gold_hint)


def answerable_question_scores(questions: Iterable[Tuple[str, List[str]]], answers: Dict[str, str],
                               normalize: Callable[[str], str], pair_scores: Dict[str, Callable[[str, str], float]],
                               scores_name: str, no_gold_hint: str = "") -> Dict[str, float]:
  """`answerable_set_scores` of the (qas_id, gold answer texts) of a set of another layout than SQuAD's.

  Raises:
    DataError: no question, or a question without a gold answer.
  """
  sums = dict.fromkeys(pair_scores, 0.0)
  questions_seen = missing = 0
  for qas_id, gold_texts in questions:
    questions_seen += 1
    if not gold_texts:
      raise DataError(f"Question {qas_id} has no gold answer; {scores_name} scores need one{no_gold_hint}.")
    if qas_id not in answers:
      missing += 1
      continue
    prediction = normalize(answers[qas_id])
    golds = [normalize(text) for text in gold_texts]
    for name, score in pair_scores.items():
      sums[name] += max(score(prediction, gold) for gold in golds)
  check_questions(questions_seen, missing)
  return {name: total / questions_seen for name, total in sums.items()}


def _equal(prediction: str, gold: str) -> float:
  return float(prediction == gold)


def squad_v2_scores(dataset: list, answers: Dict[str, str], null_odds: Optional[Dict[str, float]] = None,
                    na_prob_thresh: float = 1.0) -> Dict[str, float]:
  """SQuAD v2.0's official scores of `answers`.

  Args:
    dataset: the "data" list of a SQuAD JSON file; a question without answers is unanswerable, and only "" is
      its right answer.
    answers: qas_id -> predicted answer text, "" for no answer.
    null_odds: qas_id -> how unanswerable a question looks (the script's "na_prob"), or None (the script run
      without them: all 0).
    na_prob_thresh: a question whose null odds exceed this is scored as answered "" whatever its answer.

  Returns:
    "exact", "f1" (percent) and "total" (questions); the same over the answerable questions as "HasAns_*" and
    over the others as "NoAns_*" where there are any; with `null_odds`, the best exact and F1 that a threshold
    on the null odds gives, and those thresholds ("best_exact", "best_exact_thresh", "best_f1",
    "best_f1_thresh").

  Raises:
    DataError: `dataset` has no question, or `null_odds` lacks a question that `answers` answers.
  """
  has_answer, exact_raw, f1_raw = _v2_raw_scores(dataset, answers)
  odds = _answered_null_odds(has_answer, answers, null_odds)

  def thresholded(raw_scores: Dict[str, float]) -> Dict[str, float]:
    # Above the threshold a question counts as answered "": right exactly when it is unanswerable.
    return {qas_id: float(not has_answer[qas_id]) if qas_id in odds and odds[qas_id] > na_prob_thresh else score
            for qas_id, score in raw_scores.items()}

  exact, f1 = thresholded(exact_raw), thresholded(f1_raw)
  scores = _percentages(exact, f1, list(has_answer))
  for prefix, wanted in (("HasAns", True), ("NoAns", False)):
    qas_ids = [qas_id for qas_id, answerable in has_answer.items() if answerable == wanted]
    if qas_ids:
      scores.update({f"{prefix}_{name}": value for name, value in _percentages(exact, f1, qas_ids).items()})
  if null_odds is not None:
    scores["best_exact"], scores["best_exact_thresh"] = _best_threshold(exact_raw, answers, has_answer, null_odds)
    scores["best_f1"], scores["best_f1_thresh"] = _best_threshold(f1_raw, answers, has_answer, null_odds)
  return scores


def best_null_threshold(dataset: list, answers: Dict[str, str], null_odds: Dict[str, float]) -> float:
  """The null-odds threshold with the best F1 (the official "best_f1_thresh"), which Google's evaluation uses.

  Args:
    dataset: the "data" list of a SQuAD v2.0 JSON file.
    answers: qas_id -> the best text of each question (predicted without a threshold).
    null_odds: qas_id -> the null odds of each question.

  Returns:
    The threshold: questions whose null odds exceed it are best answered "".

  Raises:
    DataError: `dataset` has no question, or `null_odds` lacks a question that `answers` answers.
  """
  return best_threshold_of(squad_v2_f1_per_question, dataset, answers, null_odds)


# (dataset, answers) -> (whether each question is answerable, the score of each answer before any threshold).
QuestionScores = Callable[[list, Dict[str, str]], Tuple[Dict[str, bool], Dict[str, float]]]
# (dataset, predictions) -> the benchmark's metrics.
SetScores = Callable[[list, SquadPredictions], Dict[str, float]]


def squad_v2_f1_per_question(dataset: list, answers: Dict[str, str]) -> Tuple[Dict[str, bool], Dict[str, float]]:
  """SQuAD v2.0's answerability and F1 of each question (a `QuestionScores`), which pick its null threshold."""
  has_answer, _, f1_raw = _v2_raw_scores(dataset, answers)
  return has_answer, f1_raw


def squad_v2_set_scores(dataset: list, predictions: SquadPredictions) -> Dict[str, float]:
  """`squad_v2_scores` of v2 predictions with their null odds (a `SetScores`)."""
  return squad_v2_scores(dataset, predictions.answers, predictions.null_odds)


def best_threshold_of(question_scores: QuestionScores, dataset: list, answers: Dict[str, str],
                      null_odds: Dict[str, float]) -> float:
  """The null-odds threshold that maximises the total of `question_scores` (answering "" above it).

  Raises:
    DataError: `dataset` has no question, or `null_odds` lacks a question that `answers` answers.
  """
  has_answer, raw_scores = question_scores(dataset, answers)
  _answered_null_odds(has_answer, answers, null_odds)  # every answered question needs its odds
  return _best_threshold(raw_scores, answers, has_answer, null_odds)[1]


def evaluate_v2(examples: Sequence, features: Sequence, start_top_log_probs: np.ndarray,
                start_top_index: np.ndarray, end_top_log_probs: np.ndarray, end_top_index: np.ndarray,
                cls_logits: np.ndarray, dataset: list, n_best_size: int, max_answer_length: int,
                question_scores: QuestionScores = squad_v2_f1_per_question,
                set_scores: SetScores = squad_v2_set_scores,
                answer_end: Optional[AnswerEnd] = None) -> Tuple[SquadPredictions, Dict[str, float]]:
  """Google's SQuAD v2.0 evaluation: the null threshold best on `dataset`, the answers with it, and their scores.

  As Google's, the second pass answers only questions whose null odds are below the threshold, while the search
  counts those at the threshold as answered; so the final scores can fall short of the first pass's "best_f1" by
  the questions at the threshold.

  Args:
    examples, features, start_top_log_probs, start_top_index, end_top_log_probs, end_top_index, cls_logits,
      n_best_size, max_answer_length, answer_end: as `squad_predictions.v2_predictions` takes them.
    dataset: the "data" list of the SQuAD v2.0 JSON file the examples come from.
    question_scores: the per-question scores whose total the threshold maximises (default SQuAD v2.0's F1).
    set_scores: the metrics of the thresholded predictions (default `squad_v2_scores`).

  Returns:
    The predictions made with the threshold, and `set_scores` of them (SQuAD's: Google's "na_prob_thresh" of
    1.0) with the threshold as "null_score_diff_threshold".

  Raises:
    ValueError: the outputs do not have one row per feature.
    DataError: `dataset` has no question.
  """
  unthresholded = v2_predictions(examples, features, start_top_log_probs, start_top_index, end_top_log_probs,
                                 end_top_index, cls_logits, n_best_size, max_answer_length, None, answer_end)
  threshold = best_threshold_of(question_scores, dataset, unthresholded.answers, unthresholded.null_odds)
  predictions = apply_null_threshold(unthresholded, threshold)
  scores = set_scores(dataset, predictions)
  scores["null_score_diff_threshold"] = threshold
  return predictions, scores


def dataset_questions(dataset: list, id_field: str = "id") -> Iterator[Tuple[str, dict]]:
  """(qas_id, the question's JSON object) of each question of a SQuAD-layout "data" list, in file order."""
  for article in dataset:
    for paragraph in article["paragraphs"]:
      for question in paragraph["qas"]:
        yield question[id_field], question


def _questions(dataset: list, id_field: str = "id") -> Iterator[Tuple[str, List[str]]]:
  """(qas_id, gold answer texts) of each question of a SQuAD "data" list, in file order."""
  for qas_id, question in dataset_questions(dataset, id_field):
    yield qas_id, [answer["text"] for answer in question["answers"]]


def check_questions(questions: int, missing: int):
  """Raises DataError for a set without questions; one stderr line counts the questions without a prediction."""
  if not questions:
    raise DataError("The SQuAD set has no question to score.")
  if missing:
    print(f"{missing} of {questions} questions have no prediction; they score 0.", file=sys.stderr)


def _overlap_f1(prediction_words: List[str], gold_words: List[str]) -> float:
  """The F1 of the words two answers share (as bags); 0 when they share none."""
  shared = sum((collections.Counter(prediction_words) & collections.Counter(gold_words)).values())
  if not shared:
    return 0.0
  precision, recall = shared / len(prediction_words), shared / len(gold_words)
  return 2 * precision * recall / (precision + recall)


def _v2_raw_scores(dataset: list, answers: Dict[str, str]) -> Tuple[Dict[str, bool], Dict[str, float],
                                                                     Dict[str, float]]:
  """Whether each question is answerable, and its exact and F1 scores before any threshold (0 if unanswered)."""
  has_answer, exact, f1 = {}, {}, {}
  missing = 0
  for qas_id, gold_texts in _questions(dataset):
    has_answer[qas_id] = bool(gold_texts)
    golds = [gold for gold in map(normalize_answer, gold_texts) if gold] or [""]
    if qas_id not in answers:
      missing += 1
      exact[qas_id] = f1[qas_id] = 0.0
      continue
    prediction = normalize_answer(answers[qas_id])
    exact[qas_id] = float(max(prediction == gold for gold in golds))
    f1[qas_id] = max(_v2_f1(prediction.split(), gold.split()) for gold in golds)
  check_questions(len(has_answer), missing)
  return has_answer, exact, f1


def _v2_f1(prediction_words: List[str], gold_words: List[str]) -> float:
  if not prediction_words or not gold_words:
    return float(prediction_words == gold_words)  # no answer: right only against no answer
  return _overlap_f1(prediction_words, gold_words)


def _answered_null_odds(has_answer: Dict[str, bool], answers: Dict[str, str],
                        null_odds: Optional[Dict[str, float]]) -> Dict[str, float]:
  """The null odds of each question with a prediction; all 0 without null odds (the official default)."""
  odds = {}
  for qas_id in has_answer:
    if qas_id in answers:
      if null_odds is not None and qas_id not in null_odds:
        raise DataError(f"The null odds lack question {qas_id}, which has a prediction.")
      odds[qas_id] = 0.0 if null_odds is None else null_odds[qas_id]
  return odds


def _percentages(exact: Dict[str, float], f1: Dict[str, float], qas_ids: List[str]) -> Dict[str, float]:
  return {"exact": 100.0 * sum(exact[qas_id] for qas_id in qas_ids) / len(qas_ids),
          "f1": 100.0 * sum(f1[qas_id] for qas_id in qas_ids) / len(qas_ids), "total": len(qas_ids)}


def _best_threshold(raw_scores: Dict[str, float], answers: Dict[str, str], has_answer: Dict[str, bool],
                    null_odds: Dict[str, float]) -> Tuple[float, float]:
  """The best score (percent) that answering "" above a null-odds threshold gives, and that threshold.

  As the official script: starting from every question answered "", questions are answered in increasing order of
  their null odds, and the threshold is the odds of the last question of the best prefix (0 if none helps).
  """
  score = sum(1 for qas_id, answerable in has_answer.items() if not answerable and qas_id in answers)
  best_score, best_threshold = score, 0.0
  for qas_id in sorted(null_odds, key=null_odds.get):
    if qas_id not in has_answer or qas_id not in answers:
      continue
    if has_answer[qas_id]:
      score += raw_scores[qas_id]
    elif answers[qas_id]:
      score -= 1  # a text where "" was right
    if score > best_score:
      best_score, best_threshold = score, null_odds[qas_id]
  return 100.0 * best_score / len(raw_scores), best_threshold
