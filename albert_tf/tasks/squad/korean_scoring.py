"""The official evaluations of the Korean reading-comprehension benchmarks, on SQuAD-layout sets.

KorQuAD 1.0 (its `evaluate-v1.0.py`, SQuAD v1.1's script changed for Korean): an answer is normalised by
turning the quotes ' " ‘ ’, the brackets 《 》 〈 〉 < > and the parentheses into spaces, lower-casing, removing
ASCII punctuation and single-spacing the words; exact match compares the normal forms, and F1 is over the
characters of the words (a bag of characters, spaces left out), the best over the gold answers, averaged over
all questions.

KorQuAD 2.x (its evaluation script, KorQuAD 1.0's for HTML answers): an answer, predicted or gold, is HTML; its
tags are stripped (the script's BeautifulSoup `get_text()`; here `html_text`, the standard library's
`html.parser`), then it is normalised as KorQuAD 1.0 normalises, then every whitespace is removed. Exact match
compares those strings, F1 is over their characters (KorQuAD 1.0's character F1); the gold is a question's one
`answer.text`, the questions those of every page of every file of the set.

KLUE-MRC (the KLUE baseline's `klue_mrc_em` and `klue_mrc_rouge_w`): an answer is lower-cased, stripped of
ASCII punctuation and single-spaced (KLUE's code also means to blank the quotes and brackets, but its pattern
only matches one of them followed by "()‘’", which is what is done here); the gold of an unanswerable question
is "" alone. Exact match compares the normal forms; "ROUGE-W" is the F1 of the longest common substring of
characters (difflib's `SequenceMatcher`, as KLUE's code), 1 or 0 against an empty gold; both the best over the
gold answers, averaged over all questions, and also per question type (1 paraphrase, 2 multi-sentence,
3 unanswerable). `plausible_answers` are never gold.

A question without a prediction scores 0 and counts, as in `scoring`.
"""

import collections
import difflib
import re
import string
from typing import Dict, List, Tuple

from albert_tf.errors import DataError
from albert_tf.tasks.squad import scoring
from albert_tf.tasks.squad.html_text import plain_text
from albert_tf.tasks.squad.predictions import SquadPredictions

_PUNCTUATION = frozenset(string.punctuation)
_KORQUAD_BLANKED = re.compile("['\"《》<>〈〉()‘’]")
# What KLUE's normalisation pattern matches in fact: its character class closes after 〉.
_KLUE_BLANKED = re.compile("['\"《》<>〈〉]\\(\\)‘’")
KLUE_MRC_QUESTION_TYPES = {1: "paraphrase", 2: "multi_sentence", 3: "unanswerable"}


def _without_punctuation(text: str) -> str:
  return " ".join("".join(character for character in text if character not in _PUNCTUATION).split())


def korquad_normalize(text: str) -> str:
  """KorQuAD 1.0's normal form of an answer."""
  return _without_punctuation(_KORQUAD_BLANKED.sub(" ", text).lower())


def character_f1(prediction: str, gold: str) -> float:
  """KorQuAD's F1 of two normalised answers: over their characters as bags, spaces left out."""
  prediction_chars, gold_chars = list(prediction.replace(" ", "")), list(gold.replace(" ", ""))
  shared = sum((collections.Counter(prediction_chars) & collections.Counter(gold_chars)).values())
  if not shared:
    return 0.0
  precision, recall = shared / len(prediction_chars), shared / len(gold_chars)
  return 2 * precision * recall / (precision + recall)


# KorQuAD's metrics of a normalised prediction against a normalised gold answer (1.0's and 2.x's alike).
_KORQUAD_PAIR_SCORES = {"exact_match": lambda prediction, gold: float(prediction == gold), "f1": character_f1}


def korquad_v1_scores(dataset: list, answers: Dict[str, str]) -> Dict[str, float]:
  """KorQuAD 1.0's official "exact_match" and "f1" (fractions; its script prints percent) of `answers`
  (qas_id -> text) on `dataset`.

  Raises:
    DataError: `dataset` has no question, or a question without a gold answer.
  """
  return scoring.answerable_set_scores(dataset, answers, korquad_normalize, _KORQUAD_PAIR_SCORES, "KorQuAD 1.0")


def korquad2_normalize(answer: str) -> str:
  """KorQuAD 2.x's normal form of an answer (HTML): its text, KorQuAD 1.0's normal form, without any whitespace."""
  return "".join(korquad_normalize(plain_text(answer)).split())


def korquad2_scores(pages: list, answers: Dict[str, str]) -> Dict[str, float]:
  """KorQuAD 2.x's official "exact_match" and "f1" (fractions; its script prints percent) of `answers`
  (qas_id -> HTML or text) on the pages of a set (each {"qas": [{"id", "answer": {"text", ...}}, ...]}, as its
  files hold them).

  Raises:
    DataError: the pages hold no question.
  """
  questions = ((question["id"], [question["answer"]["text"]]) for page in pages for question in page["qas"])
  return scoring.answerable_question_scores(questions, answers, korquad2_normalize, _KORQUAD_PAIR_SCORES,
                                            "KorQuAD 2.x")


def klue_mrc_normalize(text: str) -> str:
  """KLUE-MRC's normal form of an answer."""
  return _without_punctuation(_KLUE_BLANKED.sub(" ", text.lower()))


def longest_common_substring_f1(prediction: str, gold: str) -> float:
  """KLUE-MRC's "ROUGE-W" of two normalised answers: the F1 of their longest common run of characters."""
  if not gold:
    return float(prediction == gold)
  length = difflib.SequenceMatcher(None, prediction, gold).find_longest_match(0, len(prediction), 0, len(gold)).size
  if not length:
    return 0.0
  precision, recall = length / len(prediction), length / len(gold)
  return 2 * precision * recall / (precision + recall)


def _klue_mrc_question_scores(dataset: list, answers: Dict[str, str]) -> Tuple[Dict[str, int], Dict[str, bool],
                                                                              Dict[str, Dict[str, float]]]:
  """Each question's type, answerability, and exact match and ROUGE-W (0 without a prediction)."""
  types, has_answer = {}, {}
  scores = {"exact_match": {}, "rouge_w": {}}
  missing = 0
  for qas_id, question in scoring.dataset_questions(dataset, "guid"):
    types[qas_id] = question["question_type"]
    gold_texts = [answer["text"] for answer in question["answers"]]
    has_answer[qas_id] = bool(gold_texts)
    if qas_id not in answers:
      missing += 1
      scores["exact_match"][qas_id] = scores["rouge_w"][qas_id] = 0.0
      continue
    prediction = klue_mrc_normalize(answers[qas_id])
    golds = [klue_mrc_normalize(text) for text in gold_texts] or [""]
    scores["exact_match"][qas_id] = max(float(prediction == gold) for gold in golds)
    scores["rouge_w"][qas_id] = max(longest_common_substring_f1(prediction, gold) for gold in golds)
  scoring.check_questions(len(types), missing)
  return types, has_answer, scores


def klue_mrc_rouge_w_per_question(dataset: list, answers: Dict[str, str]) -> Tuple[Dict[str, bool],
                                                                                  Dict[str, float]]:
  """Each question's answerability and ROUGE-W (a `scoring.QuestionScores`: the null threshold maximises it)."""
  _, has_answer, scores = _klue_mrc_question_scores(dataset, answers)
  return has_answer, scores["rouge_w"]


def klue_mrc_scores(dataset: list, answers: Dict[str, str]) -> Dict[str, float]:
  """KLUE-MRC's "exact_match" and "rouge_w" (fractions; KLUE prints percent) of `answers` (qas_id -> text, ""
  for no answer), and each per question type present ("exact_match_paraphrase", "rouge_w_unanswerable", ...).

  Raises:
    DataError: `dataset` has no question, or a question type outside 1-3.
  """
  types, _, scores = _klue_mrc_question_scores(dataset, answers)
  unknown = sorted({value for value in types.values() if value not in KLUE_MRC_QUESTION_TYPES}, key=str)
  if unknown:
    raise DataError(f"KLUE-MRC question types are 1, 2 and 3, not {unknown}.")
  metrics = {}
  for name, per_question in scores.items():
    metrics[name] = sum(per_question.values()) / len(per_question)
    for number, type_name in KLUE_MRC_QUESTION_TYPES.items():
      of_type: List[float] = [score for qas_id, score in per_question.items() if types[qas_id] == number]
      if of_type:
        metrics[f"{name}_{type_name}"] = sum(of_type) / len(of_type)
  return metrics


def klue_mrc_set_scores(dataset: list, predictions: SquadPredictions) -> Dict[str, float]:
  """`klue_mrc_scores` of thresholded predictions (a `scoring.SetScores`)."""
  return klue_mrc_scores(dataset, predictions.answers)
