"""SQuAD answers from model outputs (Google's n-best assembly) and the official scores, on hand-checked cases."""

import json
import re

import numpy as np
import pytest

from albert_tf.errors import DataError
from albert_tf.tasks.squad import predictions as squad_predictions
from albert_tf.tasks.squad import scoring as squad_scoring
from albert_tf.tasks.squad.examples import SquadExample
from albert_tf.tasks.squad.features import SquadFeature

QUERY_LENGTH = 2  # [CLS] q q [SEP]: the context starts at sequence position 4
CONTEXT = "Denver Broncos beat the Carolina Panthers in Santa Clara ."
WORDS = [(match.start(), match.end() - 1) for match in re.finditer(r"\S+", CONTEXT)]  # a token a word


def _example(qas_id, context_text=CONTEXT, gold_answers=()):
  return SquadExample(qas_id=qas_id, question_text="Who?", context_text=context_text,
                      answer_text=gold_answers[0] if gold_answers else "", answer_start=-1,
                      is_impossible=not gold_answers, gold_answers=tuple(gold_answers))


def _feature(unique_id, example_index, words, max_context=None, doc_span_index=0):
  """A window of `words` ((first, last) character of each) of a context."""
  max_context = [True] * len(words) if max_context is None else max_context
  return SquadFeature(
      unique_id=unique_id, example_index=example_index, doc_span_index=doc_span_index,
      input_ids=tuple(range(QUERY_LENGTH + len(words) + 3)), query_length=QUERY_LENGTH,
      token_start_to_char=tuple(first for first, _ in words), token_end_to_char=tuple(last for _, last in words),
      token_is_max_context=tuple(max_context), start_position=0, end_position=0, is_impossible=False)


def _logits(rows, seq_length=16, base=-5.0):
  """[len(rows), seq_length] logits: `base` except each row's {context token (or sequence position if a
  string "q<position>"): value}."""
  logits = np.full((len(rows), seq_length), base, np.float32)
  for row, values in enumerate(rows):
    for token, value in values.items():
      position = int(token[1:]) if isinstance(token, str) else QUERY_LENGTH + 2 + token
      logits[row, position] = value
  return logits


def _dataset(*questions):
  """A SQuAD "data" list of one paragraph with (qas_id, gold texts) questions."""
  qas = [{"id": qas_id, "question": "?", "answers": [{"text": text, "answer_start": 0} for text in golds]}
         for qas_id, golds in questions]
  return [{"title": "t", "paragraphs": [{"context": CONTEXT, "qas": qas}]}]


# The official scores.

def test_normalization():
  assert squad_scoring.normalize_answer("  The Quick,  brown-fox!  ") == "quick brownfox"
  assert squad_scoring.normalize_answer("An apple a day; theatre") == "apple day theatre"  # whole words only
  # Korean keeps its words (particles attached); only punctuation and spacing change.
  assert squad_scoring.normalize_answer("서울의  '한강'이다.") == "서울의 한강이다"


def test_v1_scores():
  dataset = _dataset(("q1", ["the Eiffel Tower", "Eiffel Tower in Paris"]),
                     ("q2", ["Paris, France", "the city of Paris"]),
                     ("q3", ["1889"]))
  answers = {"q1": "Eiffel tower.", "q2": "in Paris"}  # q3 unanswered
  scores = squad_scoring.squad_v1_scores(dataset, answers)
  # q1: exact (articles, case and punctuation dropped). q2: "in paris" against "paris france" shares 1 word,
  # P = R = 1/2, F1 1/2; against "city of paris" P 1/2, R 1/3, F1 2/5; the max is 1/2. q3: 0.
  assert scores["exact_match"] == pytest.approx(100 / 3)
  assert scores["f1"] == pytest.approx(100 * 1.5 / 3)


def test_v1_missing_predictions_are_told_once(capsys):
  dataset = _dataset(("q1", ["a"]), ("q2", ["b"]), ("q3", ["c"]))
  assert squad_scoring.squad_v1_scores(dataset, {"q1": "x"}) == {"exact_match": 0.0, "f1": 0.0}
  assert capsys.readouterr().err == "2 of 3 questions have no prediction; they score 0.\n"
  with pytest.raises(DataError, match="no gold answer"):
    squad_scoring.squad_v1_scores(_dataset(("q1", [])), {"q1": ""})
  with pytest.raises(DataError, match="no question"):
    squad_scoring.squad_v1_scores([], {})


V2_DATASET = _dataset(("a1", ["Denver Broncos"]), ("a2", ["1990"]), ("n1", []), ("n2", []))
V2_ANSWERS = {"a1": "Broncos", "a2": "1990", "n1": "", "n2": "a dog"}
V2_NULL_ODDS = {"a1": -2.0, "a2": -0.5, "n1": 3.0, "n2": 0.2}


def test_v2_scores():
  scores = squad_scoring.squad_v2_scores(V2_DATASET, V2_ANSWERS, V2_NULL_ODDS)
  # Raw: a1 exact 0, F1 2/3 (P 1, R 1/2); a2 1, 1; n1 "" is right: 1, 1; n2 "dog" against "": 0, 0. Only n1's
  # null odds exceed 1.0, and it already scores 1.
  expected = {"exact": 50.0, "f1": 100 * (2 / 3 + 2) / 4, "total": 4,
              "HasAns_exact": 50.0, "HasAns_f1": 100 * (5 / 3) / 2, "HasAns_total": 2,
              "NoAns_exact": 50.0, "NoAns_f1": 50.0, "NoAns_total": 2,
              # Thresholds: all "" scores the 2 NoAns questions; answering by rising odds a1 (-2), a2 (-0.5),
              # n2 (0.2), n1 (3.0) adds exact 0, +1, -1 (a text where "" is right), 0: best 3 after a2; F1 adds
              # 2/3, +1, -1, 0: best 2 + 5/3 after a2.
              "best_exact": 75.0, "best_exact_thresh": -0.5, "best_f1": 100 * (2 + 5 / 3) / 4, "best_f1_thresh": -0.5}
  assert scores.keys() == expected.keys()
  for name, value in expected.items():
    assert scores[name] == pytest.approx(value), name
  assert squad_scoring.best_null_threshold(V2_DATASET, V2_ANSWERS, V2_NULL_ODDS) == -0.5


def test_v2_no_answer_threshold_and_splits():
  # Above na_prob_thresh 0.0, n2 (0.2) and n1 (3.0) count as answered "": both right.
  scores = squad_scoring.squad_v2_scores(V2_DATASET, V2_ANSWERS, V2_NULL_ODDS, na_prob_thresh=0.0)
  assert scores["exact"] == 75.0 and scores["f1"] == pytest.approx(100 * (2 / 3 + 3) / 4)
  # Without null odds: no threshold search; a set of answerable questions only has no NoAns split.
  scores = squad_scoring.squad_v2_scores(_dataset(("a2", ["1990"])), {"a2": "in 1990"})
  assert scores == {"exact": 0.0, "f1": pytest.approx(100 * 2 / 3), "total": 1,
                    "HasAns_exact": 0.0, "HasAns_f1": pytest.approx(100 * 2 / 3), "HasAns_total": 1}


def test_v2_missing_predictions(capsys):
  answers = dict(V2_ANSWERS)
  del answers["a2"]
  scores = squad_scoring.squad_v2_scores(V2_DATASET, answers, V2_NULL_ODDS)
  assert scores["exact"] == 25.0 and scores["total"] == 4 and scores["HasAns_exact"] == 0.0
  # Without a2, answering a1 (+2/3) is the best F1 step: 2 + 2/3 of 4.
  assert scores["best_f1"] == pytest.approx(100 * (2 + 2 / 3) / 4) and scores["best_f1_thresh"] == -2.0
  assert "1 of 4 questions have no prediction" in capsys.readouterr().err
  with pytest.raises(DataError, match="null odds lack question n2"):
    squad_scoring.squad_v2_scores(V2_DATASET, V2_ANSWERS, {"a1": 0.0, "a2": 0.0, "n1": 0.0})


# Prediction assembly. Context tokens: 0 Denver, 1 Broncos, 2 beat, 3 the, 4 Carolina, 5 Panthers, 6 in, 7 Santa,
# 8 Clara, 9 ".".


def test_v1_never_answers_from_the_question():
  # The best start (10) and end (9) are question positions; the best span inside the context is tokens 1..2.
  features = [_feature(0, 0, WORDS)]
  start = _logits([{"q1": 10.0, 1: 4.0}])
  end = _logits([{"q2": 9.0, 2: 3.0}])
  predictions = squad_predictions.v1_predictions([_example("q")], features, start, end, n_best_size=3,
                                                 max_answer_length=30)
  assert predictions.answers == {"q": "Broncos beat"}
  assert predictions.null_odds is None
  assert all(entry["text"] for entry in predictions.nbest["q"])


def test_v1_max_answer_length_and_dedupe():
  context = "Paris is big . Paris is old ."
  words = [(match.start(), match.end() - 1) for match in re.finditer(r"\S+", context)]
  start = _logits([{0: 4.0, 4: 3.5}])
  end = _logits([{2: 6.0, 4: 3.5, 0: 3.0, 1: 2.0}])

  def nbest(max_answer_length):
    predictions = squad_predictions.v1_predictions([_example("q", context)], [_feature(0, 0, words)], start, end,
                                                   n_best_size=4, max_answer_length=max_answer_length)
    assert predictions.answers["q"] == predictions.nbest["q"][0]["text"]
    return predictions.nbest["q"]

  # The best pair, tokens 0..2 (4 + 6), is 3 tokens long.
  assert nbest(3)[0]["text"] == "Paris is big"
  # At most 2: "Paris" (tokens 0..0, 4 + 3), "Paris" again (4..4, 3.5 + 3.5; dropped), "Paris is" (0..1, 4 + 2).
  entries = nbest(2)
  assert [entry["text"] for entry in entries] == ["Paris", "Paris is"]
  assert (entries[0]["start_log_prob"], entries[0]["end_log_prob"]) == (4.0, 3.0)
  assert sum(entry["probability"] for entry in entries) == pytest.approx(1.0)
  assert entries[0]["probability"] / entries[1]["probability"] == pytest.approx(np.e)  # softmax of 7 and 6


def _two_windows():
  # Window 0 holds tokens 0-5, window 1 tokens 4-9; the max-context window of token 4 is 0, of token 5 is 1.
  return [_feature(1, 0, WORDS[4:], [False] + [True] * 5, doc_span_index=1),  # out of order on purpose
          _feature(0, 0, WORDS[:6], [True] * 5 + [False], doc_span_index=0)]


def test_v1_example_over_two_windows():
  features = _two_windows()
  # Window 0: "Denver Broncos" 3 + 3. Window 1: "Santa Clara" (its tokens 3..4) 4 + 4; its highest start, on
  # Carolina (its token 0), is not its max-context token, so "Carolina Panthers" comes only from window 0.
  start = _logits([{0: 9.0, 3: 4.0}, {0: 3.0, 4: 1.0}])
  end = _logits([{1: 1.0, 4: 4.0}, {1: 3.0, 5: 1.0}])
  predictions = squad_predictions.v1_predictions([_example("q")], features, start, end, n_best_size=20,
                                                 max_answer_length=30)
  assert predictions.answers["q"] == "Santa Clara"
  texts = [entry["text"] for entry in predictions.nbest["q"]]
  assert texts[:2] == ["Santa Clara", "Denver Broncos"] and "Carolina Panthers" in texts
  carolina = predictions.nbest["q"][texts.index("Carolina Panthers")]
  assert (carolina["start_log_prob"], carolina["end_log_prob"]) == (1.0, 1.0)
  assert sum(entry["probability"] for entry in predictions.nbest["q"]) == pytest.approx(1.0)


def test_v1_ties_keep_window_order():
  # "Denver" (window 0) and "Santa" (window 1) tie at 2 + 2; window 0's comes first though listed second.
  start = _logits([{3: 2.0}, {0: 2.0}])
  end = _logits([{3: 2.0}, {0: 2.0}])
  predictions = squad_predictions.v1_predictions([_example("q")], _two_windows(), start, end, n_best_size=2,
                                                 max_answer_length=1)
  assert [entry["text"] for entry in predictions.nbest["q"]] == ["Denver", "Santa"]


def test_v1_without_candidates_or_features():
  examples = [_example("q"), _example("skipped")]
  # Every end before every start: Google's placeholder "empty". The second example has no feature: "".
  start = _logits([{9: 5.0}], base=0.0)
  end = _logits([{0: 5.0}], base=-np.inf)
  predictions = squad_predictions.v1_predictions(examples, [_feature(0, 0, WORDS)], start, end, n_best_size=1,
                                                 max_answer_length=30)
  assert predictions.answers == {"q": "empty", "skipped": ""}
  assert predictions.nbest["q"] == [{"text": "empty", "probability": 1.0, "start_log_prob": 0.0,
                                     "end_log_prob": 0.0}]
  with pytest.raises(ValueError, match="one row per feature"):
    squad_predictions.v1_predictions(examples, [_feature(0, 0, WORDS)], start[:0], end, 1, 30)


def _v2_outputs(rows, start_n_top=2, end_n_top=2):
  """The beam-search outputs of `rows`, each ([(start token, log prob)], [[(end token, log prob)] per start],
  cls_logit), context tokens turned into sequence positions."""
  offset = QUERY_LENGTH + 2
  start_log_probs = np.array([[p for _, p in starts] for starts, _, _ in rows], np.float32)
  start_index = np.array([[t + offset for t, _ in starts] for starts, _, _ in rows], np.int32)
  end_log_probs = np.array([[p for ends_of in ends for _, p in ends_of] for _, ends, _ in rows], np.float32)
  end_index = np.array([[t + offset for ends_of in ends for t, _ in ends_of] for _, ends, _ in rows], np.int32)
  assert start_index.shape[1] == start_n_top and end_index.shape[1] == start_n_top * end_n_top
  return start_log_probs, start_index, end_log_probs, end_index, np.array([cls for _, _, cls in rows], np.float32)


def test_v2_null_odds_and_threshold():
  features = _two_windows() + [_feature(2, 1, WORDS)]
  outputs = _v2_outputs([
      ([(3, -0.5), (0, -1.0)], [[(4, -0.2), (2, -1.0)], [(1, -0.1), (0, -3.0)]], 1.5),  # "Santa Clara" -0.7
      ([(0, -0.1), (4, -2.0)], [[(1, -0.3), (4, -0.4)], [(3, -1.0), (5, -0.1)]], -1.0),  # "Denver Broncos" -0.4
      ([(2, -0.3), (-3, -0.1)], [[(2, -0.2), (3, -0.3)], [(0, -0.1), (1, -0.1)]], 0.5),  # a question start: dropped
  ])
  examples = [_example("q", gold_answers=["Denver Broncos"]), _example("r"), _example("skipped")]
  predictions = squad_predictions.v2_predictions(examples, features, *outputs, n_best_size=3, max_answer_length=30,
                                                 null_score_diff_threshold=None)
  # q: window 0's "Denver Broncos" (-0.4) beats its "Denver Broncos beat the Carolina" (-0.5), window 1's "Santa
  # Clara" (-0.7) and window 0's "Carolina Panthers" (-2.1, cut by n_best_size); window 1's Carolina start (its
  # token 0) is not its max-context token. Null odds: the least cls_logits, -1.0. r: "beat" (-0.5), "beat the"
  # (-0.6), nothing from the question start; odds 0.5. No feature: Google's placeholder, odds 1e6.
  assert predictions.answers == {"q": "Denver Broncos", "r": "beat", "skipped": ""}
  assert [entry["text"] for entry in predictions.nbest["q"]] == [
      "Denver Broncos", "Denver Broncos beat the Carolina", "Santa Clara"]
  assert [entry["text"] for entry in predictions.nbest["r"]] == ["beat", "beat the"]
  assert predictions.nbest["skipped"] == [{"text": "", "probability": 1.0, "start_log_prob": -1e6,
                                           "end_log_prob": -1e6}]
  assert predictions.null_odds == {"q": -1.0, "r": 0.5, "skipped": 1e6}
  # Answered only below the threshold, as Google's (odds equal to it give "").
  thresholded = squad_predictions.v2_predictions(examples, features, *outputs, n_best_size=3, max_answer_length=30,
                                                 null_score_diff_threshold=0.5)
  assert thresholded.answers == {"q": "Denver Broncos", "r": "", "skipped": ""}
  assert thresholded.nbest == predictions.nbest


def test_evaluate_v2_two_passes():
  examples = [_example("a"), _example("c"), _example("n")]
  features = [_feature(0, 0, WORDS), _feature(1, 1, WORDS), _feature(2, 2, WORDS)]
  starts, ends = [(1, -0.1), (7, -2.0)], [[(1, -0.1), (2, -1.0)], [(8, -0.1), (9, -2.0)]]  # best: "Broncos"
  outputs = _v2_outputs([(starts, ends, -3.0), (starts, ends, -1.0), (starts, ends, 2.0)])
  dataset = _dataset(("a", ["Broncos"]), ("c", ["the Broncos"]), ("n", []))
  predictions, scores = squad_scoring.evaluate_v2(examples, features, *outputs, dataset, n_best_size=5,
                                                  max_answer_length=30)
  # Pass 1 answers "Broncos" everywhere; all "" scores 1 (n), answering a (odds -3) 2, c (-1) 3, n (2) 2: the
  # threshold is -1.0. Pass 2 answers only odds below it (Google's strict comparison), so c gets "" too.
  assert scores["null_score_diff_threshold"] == -1.0
  assert predictions.answers == {"a": "Broncos", "c": "", "n": ""}
  assert scores["exact"] == pytest.approx(200 / 3) and scores["total"] == 3
  assert scores["HasAns_exact"] == 50.0 and scores["NoAns_exact"] == 100.0


def test_prediction_files():
  v2 = squad_predictions.SquadPredictions(
      answers={"q": "Santa Clara", "r": ""},
      nbest={"q": [{"text": "Santa Clara", "probability": 1.0, "start_log_prob": -0.1, "end_log_prob": -0.2}],
             "r": [{"text": "", "probability": 1.0, "start_log_prob": -1e6, "end_log_prob": -1e6}]},
      null_odds={"q": -1.5, "r": 3.0})
  texts = squad_predictions.prediction_file_texts(v2)
  assert sorted(texts) == ["nbest_predictions.json", "null_odds.json", "predictions.json"]
  assert texts["predictions.json"] == json.dumps(v2.answers, indent=4) + "\n"
  for name, content in (("nbest_predictions.json", v2.nbest), ("null_odds.json", v2.null_odds)):
    assert json.loads(texts[name]) == content
  v1 = squad_predictions.SquadPredictions(answers={"q": "Santa Clara"}, nbest={"q": v2.nbest["q"]})
  assert set(squad_predictions.prediction_file_texts(v1)) == {"predictions.json", "nbest_predictions.json"}
