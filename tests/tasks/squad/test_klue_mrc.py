"""KLUE-MRC (`run_squad_v2 --task_name=klue-mrc`): KLUE's files read strictly (plausible answers are never gold),
KLUE's exact match and character ROUGE-W, a tiny model learning real Korean spans and unanswerable questions, and
the SavedModel's `answer_question` answering Korean as the predictions do.

The data are real Korean sentences in klue-mrc-v1.1's layout (conftest's `write_klue_mrc`); the scores are
checked against `official_klue_mrc_scores`, written here from the rules of the KLUE baseline's evaluation.
"""

import json
import string

import numpy as np
import pytest
import tensorflow as tf

from albert_tf.errors import TaskError
from albert_tf.tasks.squad import examples as squad_examples
from albert_tf.tasks.squad import korean_scoring
from albert_tf.tasks.squad import predictions as squad_predictions
from albert_tf.tasks.squad import reading_tasks
from albert_tf.tasks.squad.objective import TFLITE_FILE, SquadObjective, SquadSettings
from albert_tf.tasks.squad.serving import QuestionAnswerer
from albert_tf.text.tokenizer import SentencePieceTokenizer
from albert_tf.training import run_directory
from tests.conftest import SP8K_MODEL, korean_reader_config, requires_shared, run_tool, tiny_config
from tests.tasks.squad.korean_reading_data import write_klue_mrc

pytestmark = requires_shared(SP8K_MODEL)

SEQ = 96
KLUE_MRC = reading_tasks.reading_task("klue-mrc", 2)


def _longest_common_run(first, second):
  """The length of the longest common substring, by dynamic programming."""
  best, previous = 0, [0] * (len(second) + 1)
  for a in first:
    current = [0] * (len(second) + 1)
    for j, b in enumerate(second):
      if a == b:
        current[j + 1] = previous[j] + 1
        best = max(best, current[j + 1])
    previous = current
  return best


def official_klue_mrc_scores(dataset, predictions):
  """The KLUE baseline's EM and ROUGE-W as its rules read: lower case, no ASCII punctuation, single spaces; the
  gold of an unanswerable question is ""; ROUGE-W is the F1 of the longest common substring of characters (1 or
  0 against ""); both the best over the golds, averaged over the questions, also per question type; as fractions
  (the baseline prints them ×100)."""

  def normalize(text):
    return " ".join("".join(c for c in text.lower() if c not in string.punctuation).split())

  def rouge_w(prediction, gold):
    if gold == "":
      return float(prediction == gold)
    length = _longest_common_run(prediction, gold)
    if length == 0:
      return 0.0
    precision, recall = length / len(prediction), length / len(gold)
    return 2 * precision * recall / (precision + recall)

  per_type = {1: [], 2: [], 3: []}
  for article in dataset:
    for paragraph in article["paragraphs"]:
      for qa in paragraph["qas"]:
        prediction = normalize(predictions[qa["guid"]])
        golds = [normalize(answer["text"]) for answer in qa["answers"]] or [""]
        per_type[qa["question_type"]].append((max(float(prediction == gold) for gold in golds),
                                              max(rouge_w(prediction, gold) for gold in golds)))
  every = [scores for of_type in per_type.values() for scores in of_type]
  results = {"exact_match": sum(em for em, _ in every) / len(every),
             "rouge_w": sum(rouge for _, rouge in every) / len(every)}
  for number, name in ((1, "paraphrase"), (2, "multi_sentence"), (3, "unanswerable")):
    if per_type[number]:
      results[f"exact_match_{name}"] = sum(em for em, _ in per_type[number]) / len(per_type[number])
      results[f"rouge_w_{name}"] = sum(rouge for _, rouge in per_type[number]) / len(per_type[number])
  return results


def test_klue_mrc_scores_are_klues_exact_match_and_character_rouge_w():
  def question(guid, question_type, answers, plausible=()):
    return {"question": "q", "guid": guid, "question_type": question_type, "is_impossible": question_type == 3,
            "answers": [{"text": text, "answer_start": 0} for text in answers],
            "plausible_answers": [{"text": text, "answer_start": 0} for text in plausible]}

  dataset = [{"title": "t", "news_category": None, "source": "wikipedia", "paragraphs": [{"context": "c", "qas": [
      question("a", 1, ["대한민국의 수도"]),  # ROUGE-W: the run "대한민국" of both
      question("b", 2, ["1948년 7월 12일", "7월 12일"]),
      question("c", 3, [], plausible=["서울"]),  # the plausible answer is no gold: "" is right
      question("d", 3, [], plausible=["국회"]),
      question("e", 1, ["《헌법》"])]}]}]  # KLUE keeps 《》: "헌법" is not exact
  predictions = {"a": "대한민국", "b": "7월 12일.", "c": "", "d": "국회", "e": "헌법"}
  scores = korean_scoring.klue_mrc_scores(dataset, predictions)
  assert scores == pytest.approx(official_klue_mrc_scores(dataset, predictions), abs=1e-9)
  assert scores["exact_match_unanswerable"] == 0.5 and scores["exact_match_multi_sentence"] == 1.0
  # P 4/4, R 4/8 (the space is a character)
  assert korean_scoring.longest_common_substring_f1("대한민국", "대한민국의 수도") == pytest.approx(2 / 3)


def test_klue_mrc_scores_are_never_from_plausible_answers():
  # A lone unanswerable question: its gold is "", whatever its plausible answer (never gold) says.
  dataset = [{"title": "t", "paragraphs": [{"context": "서울은 수도이다.", "qas": [
      {"guid": "u", "question": "q", "question_type": 3, "is_impossible": True, "answers": [],
       "plausible_answers": [{"text": "서울", "answer_start": 0}]}]}]}]
  for answer, expected in (("", 1.0), ("서울", 0.0)):
    scores = korean_scoring.klue_mrc_scores(dataset, {"u": answer})
    assert (scores["exact_match"], scores["rouge_w"]) == (expected, expected), answer


def test_klue_mrc_reader_keeps_plausible_answers_out_of_the_gold_and_trains_on_the_first_answer(tmp_path):
  train = write_klue_mrc(tmp_path / "klue-mrc-v1.1_train.json", "train", 60, seed=3)
  examples, dataset, skipped = squad_examples.read_squad_examples(train, is_training=True,
                                                                  version_2_with_negative=True, layout=KLUE_MRC.layout)
  questions = {qa["guid"]: qa for article in dataset for paragraph in article["paragraphs"] for qa in paragraph["qas"]}
  assert skipped == 0 and [example.qas_id for example in examples] == list(questions)
  impossible = [example for example in examples if example.is_impossible]
  several = [example for example in examples if len(questions[example.qas_id]["answers"]) > 1]
  assert impossible and several
  for example in impossible:
    assert questions[example.qas_id]["plausible_answers"] and example.gold_answers == () and example.answer_text == ""
  for example in several:
    first = questions[example.qas_id]["answers"][0]
    assert (example.answer_text, example.answer_start) == (first["text"], first["answer_start"])
  assert squad_examples.count_questions(train, layout=KLUE_MRC.layout) == 60


def _break(document, problem):
  """The file's question made wrong as `problem` says; returns its guid."""
  qas = [qa for article in document["data"] for paragraph in article["paragraphs"] for qa in paragraph["qas"]]
  impossible = next(qa for qa in qas if qa["is_impossible"])
  answerable = next(qa for qa in qas if not qa["is_impossible"])
  if problem == "question_type":
    answerable["question_type"] = 4
  elif problem == "impossible_with_answers":
    impossible["answers"] = [dict(impossible["plausible_answers"][0])]
  elif problem == "possible_without_answers":
    answerable["answers"] = []
  elif problem == "answer_start":
    answerable["answers"][0]["answer_start"] += 2
  elif problem == "plausible_answer_start":
    impossible["plausible_answers"][0]["answer_start"] += 1
  elif problem == "no_is_impossible":
    del answerable["is_impossible"]
  elif problem == "no_guid":
    del answerable["guid"]
    return "qas[0]"
  elif problem == "duplicate_guid":  # one prediction would answer both
    answerable["guid"] = impossible["guid"]
  return (impossible if problem in ("impossible_with_answers", "plausible_answer_start") else answerable)["guid"]


@pytest.mark.parametrize("problem", ["question_type", "impossible_with_answers", "possible_without_answers",
                                     "answer_start", "plausible_answer_start", "no_is_impossible", "no_guid",
                                     "duplicate_guid"])
@pytest.mark.parametrize("split", ["train", "dev"])
def test_klue_mrc_bad_input_is_one_error_naming_the_file_and_question(tmp_path, problem, split):
  train = tmp_path / "klue-mrc-v1.1_train.json"
  dev = tmp_path / "klue-mrc-v1.1_dev.json"
  write_klue_mrc(train, "train", 10, seed=5, unanswerable_share=0.5)
  write_klue_mrc(dev, "dev", 10, seed=6, unanswerable_share=0.5)
  broken = train if split == "train" else dev
  document = json.loads(broken.read_text(encoding="utf-8"))
  record = _break(document, problem)
  broken.write_text(json.dumps(document, ensure_ascii=False), encoding="utf-8")
  config = tmp_path / "albert_config.json"
  tiny_config(vocab_size=8000).to_json_file(str(config))
  result = run_tool("run_squad_v2", "--task_name=klue-mrc", f"--train_file={train}", f"--predict_file={dev}",
                    f"--albert_config_file={config}", f"--spm_model_file={SP8K_MODEL}",
                    f"--output_dir={tmp_path / 'run'}", "--do_train", "--do_predict", "--max_seq_length=64",
                    "--max_query_length=16", "--train_batch_size=2")
  assert result.returncode == 2, result.stderr[-2000:]
  lines = result.stderr.strip().splitlines()
  assert lines[-1].startswith(f"error: {broken}: ") and record in lines[-1], lines[-1]
  expected = {"question_type": '"question_type": 4', "impossible_with_answers": '"is_impossible": true and 1 answers',
              "possible_without_answers": '"is_impossible": false and 0 answers',
              "answer_start": "the answers text", "plausible_answer_start": "the plausible_answers text",
              "no_is_impossible": 'no "is_impossible"', "no_guid": 'no "guid" string',
              "duplicate_guid": "is there twice"}[problem]
  assert expected in lines[-1], lines[-1]
  assert not (tmp_path / "run").exists()


def test_a_run_whose_best_scores_are_in_percent_is_refused_for_fractions_could_never_beat_them(tmp_path):
  objective = SquadObjective(SquadSettings(version=2, task=KLUE_MRC), SentencePieceTokenizer(SP8K_MODEL), SEQ)
  info = objective.run_info()
  (tmp_path / run_directory.BEST_CHECKPOINT_INFO).write_text(json.dumps({"step": 10, "rouge_w": 0.56}))
  objective.adopt_run_info(info, str(tmp_path))  # fractions, as written now
  (tmp_path / run_directory.BEST_CHECKPOINT_INFO).write_text(json.dumps({"step": 10, "rouge_w": 56.0}))
  with pytest.raises(TaskError, match=r"holds rouge_w = 56.0, in percent .* Divide its scores by 100"):
    objective.adopt_run_info(info, str(tmp_path))


@pytest.fixture(scope="module")
def klue_mrc_run(tmp_path_factory):
  """run_squad_v2 --task_name=klue-mrc on 400 questions of real Korean text (30% unanswerable): 150 steps, scored
  once, exported."""
  tmp_path = tmp_path_factory.mktemp("klue_mrc")
  config = korean_reader_config(tmp_path, SEQ)
  result = run_tool("run_squad_v2", "--task_name=klue-mrc",
                    f"--train_file={write_klue_mrc(tmp_path / 'klue-mrc-v1.1_train.json', 'train', 400, seed=1)}",
                    f"--predict_file={write_klue_mrc(tmp_path / 'klue-mrc-v1.1_dev.json', 'dev', 60, seed=2)}",
                    f"--albert_config_file={config}", f"--spm_model_file={SP8K_MODEL}",
                    f"--output_dir={tmp_path / 'run'}", "--do_train", "--do_predict", f"--max_seq_length={SEQ}",
                    "--doc_stride=32", "--max_query_length=16", "--max_answer_length=12", "--dropout_prob=0",
                    "--train_batch_size=16", "--predict_batch_size=32", "--learning_rate=2e-3",
                    "--num_train_epochs=6", "--save_checkpoints_steps=150", "--iterations_per_loop=150",
                    f"--export_dir={tmp_path / 'export'}")
  assert result.returncode == 0, result.stderr[-3000:]
  return tmp_path


def test_klue_mrc_tool_learns_and_scores_as_klues_evaluation(klue_mrc_run):
  run = klue_mrc_run / "run"
  dataset = json.loads((klue_mrc_run / "klue-mrc-v1.1_dev.json").read_text(encoding="utf-8"))["data"]
  best = run_directory.read_best_info(str(run))
  predictions = json.loads((run / squad_predictions.PREDICTIONS_FILE).read_text(encoding="utf-8"))
  official = official_klue_mrc_scores(dataset, predictions)
  assert {name: best[name] for name in official} == pytest.approx(official, abs=1e-6)
  assert "null_score_diff_threshold" in best and "HasAns_f1" not in best  # KLUE's metrics, not SQuAD's
  # Always answering "" is right on the unanswerable questions only.
  baseline = official_klue_mrc_scores(dataset, dict.fromkeys(predictions, ""))
  assert best["rouge_w"] > baseline["rouge_w"] + 0.15, (best, baseline)
  assert best["exact_match_paraphrase"] > baseline["exact_match_paraphrase"] + 0.1, (best, baseline)
  assert best["exact_match_unanswerable"] > 0.5, best
  assert json.loads((run / "task.json").read_text())["task"] == "klue-mrc"
  assert set(json.loads((run / squad_predictions.NULL_ODDS_FILE).read_text())) == set(predictions)


def test_exported_klue_mrc_model_answers_korean_with_the_runs_threshold_as_the_predictions_do(klue_mrc_run):
  dataset = json.loads((klue_mrc_run / "klue-mrc-v1.1_dev.json").read_text(encoding="utf-8"))["data"]
  predictions = json.loads((klue_mrc_run / "run" / squad_predictions.PREDICTIONS_FILE).read_text(encoding="utf-8"))
  pairs = [(qa["guid"], qa["question"], paragraph["context"]) for article in dataset
           for paragraph in article["paragraphs"] for qa in paragraph["qas"]]
  null_odds = json.loads((klue_mrc_run / "run" / squad_predictions.NULL_ODDS_FILE).read_text(encoding="utf-8"))
  loaded = tf.saved_model.load(str(klue_mrc_run / "export" / "1"))
  # The run trimmed particles (klue-mrc's default): the SavedModel records the analyzer, the signature gives the
  # model's span and where it is, and QuestionAnswerer cuts it as the predictions were cut.
  assert json.loads((klue_mrc_run / "run" / "task.json").read_text())["trim_particles"] == "kiwi"
  assert loaded.trim_particles.numpy() == b"kiwi"
  questions, contexts = [question for _, question, _ in pairs], [context for _, _, context in pairs]
  spans = loaded.signatures["answer_question"](question=tf.constant(questions), context=tf.constant(contexts))
  assert [text.decode("utf-8") for text in spans["answer"].numpy()] == [
      context[start:end] for context, start, end in zip(contexts, spans["answer_start"].numpy(),
                                                         spans["answer_end"].numpy())]
  served = QuestionAnswerer(loaded)(questions, contexts)
  # The threshold of the best evaluation: "" exactly where predictions.json has "".
  assert [text.decode("utf-8") for text in served["answer"]] == [predictions[guid] for guid, _, _ in pairs]
  np.testing.assert_allclose(served["no_answer_score"], [null_odds[guid] for guid, _, _ in pairs], atol=1e-4)
  assert served["has_answer"].tolist() == [bool(predictions[guid]) for guid, _, _ in pairs]
  assert (served["answer"] != spans["answer"].numpy()).any()  # some answers did lose a particle
  assert not (klue_mrc_run / "export" / "1" / TFLITE_FILE).exists()  # Google's v2 exports no TFLite model
