"""KorQuAD 1.0 (`run_squad_v1 --task_name=korquad1`): Hangul contexts align and give features, the official
character-level evaluation, a tiny model learning real Korean spans, and KorQuAD files refused on bad answers.

The data are real Korean sentences in KorQuAD 1.0's layout (conftest's `write_korquad`); the scores are checked
against `official_korquad_scores`, written here from the rules of KorQuAD's evaluate-v1.0.py.
"""

import collections
import json
import re
import shutil
import string

import pytest

from albert_tf.tasks.squad import examples as squad_examples
from albert_tf.tasks.squad import features as squad_features
from albert_tf.tasks.squad import korean_scoring
from albert_tf.tasks.squad import predictions as squad_predictions
from albert_tf.tasks.squad import reading_tasks
from albert_tf.tasks.squad.alignment import align_context
from albert_tf.tasks.squad.particles import ParticleTrimmer
from albert_tf.text.tokenizer import SentencePieceTokenizer
from albert_tf.training import run_directory
from tests.conftest import SP8K_MODEL, corpus_lines, korean_reader_config, requires_shared, run_tool, tiny_config
from tests.tasks.squad.korean_reading_data import write_korquad

pytestmark = requires_shared(SP8K_MODEL)

SEQ = 96
READING_FLAGS = ["--max_seq_length=96", "--doc_stride=32", "--max_query_length=16", "--max_answer_length=12"]
KORQUAD = reading_tasks.reading_task("korquad1", 1)


def official_korquad_scores(dataset, predictions):
  """KorQuAD 1.0's evaluate-v1.0.py as its rules read: quotes, 《》〈〉<>, parentheses and ‘’ become spaces,
  then lower case, no ASCII punctuation, single spaces; EM on that, F1 on its characters without spaces; as
  fractions (the script prints them ×100)."""

  def normalize(text):
    for character in "'\"《》<>〈〉()‘’":
      text = text.replace(character, " ")
    text = "".join(character for character in text.lower() if character not in string.punctuation)
    return " ".join(text.split())

  def f1(prediction, gold):
    prediction_chars = [c for word in normalize(prediction).split() for c in word]
    gold_chars = [c for word in normalize(gold).split() for c in word]
    same = sum((collections.Counter(prediction_chars) & collections.Counter(gold_chars)).values())
    if same == 0:
      return 0.0
    precision, recall = same / len(prediction_chars), same / len(gold_chars)
    return 2 * precision * recall / (precision + recall)

  exact = total_f1 = total = 0
  for article in dataset:
    for paragraph in article["paragraphs"]:
      for qa in paragraph["qas"]:
        total += 1
        if qa["id"] not in predictions:
          continue
        golds = [answer["text"] for answer in qa["answers"]]
        exact += max(normalize(predictions[qa["id"]]) == normalize(gold) for gold in golds)
        total_f1 += max(f1(predictions[qa["id"]], gold) for gold in golds)
  return {"exact_match": exact / total, "f1": total_f1 / total}


def test_korquad_scores_are_the_official_character_level_ones():
  dataset = [{"title": "t", "paragraphs": [{"context": "c", "qas": [
      {"id": "1", "answers": [{"text": "《대한민국》", "answer_start": 0}], "question": "q"},  # brackets blanked
      {"id": "2", "answers": [{"text": "서울특별시", "answer_start": 0}], "question": "q"},  # characters shared
      {"id": "3", "answers": [{"text": "1948년 7월", "answer_start": 0}, {"text": "7월", "answer_start": 0}],
       "question": "q"},
      {"id": "4", "answers": [{"text": "ALBERT", "answer_start": 0}], "question": "q"},
      {"id": "5", "answers": [{"text": "국회", "answer_start": 0}], "question": "q"}]}]}]
  predictions = {"1": "대한민국", "2": "대한민국 서울", "3": "7 월", "4": "‘albert’!", "5": "정부"}
  scores = korean_scoring.korquad_v1_scores(dataset, predictions)
  assert scores == pytest.approx(official_korquad_scores(dataset, predictions), abs=1e-9)
  # Character F1 gives "대한민국 서울" against "서울특별시" 2 shared characters: P 2/6, R 2/5.
  assert scores["exact_match"] == pytest.approx(0.4)  # 1 and 4; "7 월" is not "7월" ...
  assert korean_scoring.character_f1("7 월", "7월") == 1.0  # ... but has all its characters
  assert korean_scoring.character_f1("대한민국 서울", "서울특별시") == pytest.approx(2 * (2 / 6) * (2 / 5) / (2 / 6 + 2 / 5))


def test_hangul_contexts_align_with_their_pieces_and_every_word_is_an_exact_span():
  """Google's per-character preprocessing leaves Hangul syllables as jamo and finds no feature in a Korean
  context; here every word of real Korean text maps to pieces that give back exactly its characters."""
  tokenizer = SentencePieceTokenizer(SP8K_MODEL, do_lower_case=True, keep_accents=False)
  # Laws (nearly all Hangul) and LibreOffice's help (Hangul with Latin names, digits, symbols); lines spaced out
  # letter by letter ("제  출  자") are Google's "MISMATCH" here too: their spaces collapse.
  lines = sorted({line for line in corpus_lines("ko_law.txt") + corpus_lines("ko_libreoffice_help.txt", 1500)
                  if 40 <= len(line) < 300 and "  " not in line})
  words = 0
  for line in lines:
    alignment = align_context(line, tokenizer)
    assert alignment is not None, line
    for word in re.finditer(r"\S+", line):
      start, end = alignment.answer_tokens(word.start(), word.end() - 1)
      text = line[alignment.token_start_to_char[start]:alignment.token_end_to_char[end] + 1].strip()
      assert text == word.group(), (line, word.group(), text)
      words += 1
  assert len(lines) > 800 and words > 10000, (len(lines), words)


def test_a_korquad_file_of_real_korean_text_gives_features_holding_each_exact_answer(tmp_path):
  dev = write_korquad(tmp_path / "dev.json", 120, seed=3, split="dev")
  examples, _, _ = squad_examples.read_squad_examples(dev, is_training=True, version_2_with_negative=False,
                                                      layout=KORQUAD.layout)
  tokenizer = SentencePieceTokenizer(SP8K_MODEL, do_lower_case=True, keep_accents=False)
  features = squad_features.convert_examples_to_features(examples, tokenizer, SEQ, 32, 16, is_training=True)
  answered = set()
  for feature in features:
    if feature.is_impossible:
      continue  # a window without the whole answer
    example = examples[feature.example_index]
    first = feature.token_start_to_char[feature.start_position - feature.context_offset]
    last = feature.token_end_to_char[feature.end_position - feature.context_offset]
    assert example.context_text[first:last + 1].strip() == example.answer_text
    answered.add(example.qas_id)
  assert answered == {example.qas_id for example in examples}


@pytest.fixture(scope="module")
def korquad_run(tmp_path_factory):
  """run_squad_v1 --task_name=korquad1 on 400 questions of real Korean text: 75 steps, scored once."""
  tmp_path = tmp_path_factory.mktemp("korquad")
  config = korean_reader_config(tmp_path, SEQ)
  result = run_tool("run_squad_v1", "--task_name=korquad1",
                    f"--train_file={write_korquad(tmp_path / 'train.json', 400, seed=1)}",
                    f"--predict_file={write_korquad(tmp_path / 'dev.json', 60, seed=2, with_variants=True, split='dev')}",
                    f"--albert_config_file={config}", f"--spm_model_file={SP8K_MODEL}",
                    f"--output_dir={tmp_path / 'run'}", "--do_train", "--do_predict", *READING_FLAGS,
                    "--train_batch_size=16", "--predict_batch_size=32", "--learning_rate=2e-3",
                    "--num_train_epochs=3", "--save_checkpoints_steps=75", "--iterations_per_loop=75")
  assert result.returncode == 0, result.stderr[-3000:]
  return tmp_path


def _first_sentence_baseline(dataset):
  """Always the context's first sentence (its first line of the corpus)."""
  return {qa["id"]: paragraph["context"].split(". ")[0] for article in dataset
          for paragraph in article["paragraphs"] for qa in paragraph["qas"]}


def test_korquad_tool_learns_korean_spans_and_scores_as_the_official_script(korquad_run):
  run = korquad_run / "run"
  dataset = json.loads((korquad_run / "dev.json").read_text(encoding="utf-8"))["data"]
  best = run_directory.read_best_info(str(run))
  predictions = json.loads((run / squad_predictions.PREDICTIONS_FILE).read_text(encoding="utf-8"))
  # The metrics of model.ckpt-best are the official ones of the predictions the tool wrote from it.
  official = official_korquad_scores(dataset, predictions)
  assert {name: best[name] for name in official} == pytest.approx(official, abs=1e-6)
  baseline = official_korquad_scores(dataset, _first_sentence_baseline(dataset))
  # Dev sentences are ones training never saw (conftest's split): 75 steps of a tiny model from scratch.
  assert best["f1"] > baseline["f1"] + 0.15 and best["exact_match"] > baseline["exact_match"] + 0.1, (best, baseline)
  contexts = {qa["id"]: paragraph["context"] for article in dataset for paragraph in article["paragraphs"]
              for qa in paragraph["qas"]}
  assert all(text in contexts[qas_id] for qas_id, text in predictions.items())  # spans cut from the context
  nbest = json.loads((run / squad_predictions.NBEST_FILE).read_text(encoding="utf-8"))
  assert list(nbest) == list(predictions) and all(entries[0]["text"] == predictions[qas_id]
                                                 for qas_id, entries in nbest.items())
  assert json.loads((run / "task.json").read_text())["task"] == "korquad1"


def test_korquad_answers_lose_their_trailing_particles_by_default_and_keep_them_with_notrim(korquad_run, tmp_path):
  """korquad1 trims by default with Kiwi (the 8k vocabulary records no analyzer) and task.json says so; the same
  checkpoint's predictions with --notrim_particles are the model's spans, which the run's answers are, trimmed."""
  run = korquad_run / "run"
  assert json.loads((run / "task.json").read_text())["trim_particles"] == "kiwi"
  shutil.copytree(run, tmp_path / "run")
  result = run_tool("run_squad_v1", "--task_name=korquad1", f"--predict_file={korquad_run / 'dev.json'}",
                    f"--albert_config_file={korquad_run / 'albert_config.json'}", f"--spm_model_file={SP8K_MODEL}",
                    f"--output_dir={tmp_path / 'run'}", "--do_predict", "--notrim_particles", *READING_FLAGS,
                    "--predict_batch_size=32")
  assert result.returncode == 0, result.stderr[-3000:]
  trimmed = json.loads((run / squad_predictions.PREDICTIONS_FILE).read_text(encoding="utf-8"))
  spans = json.loads((tmp_path / "run" / squad_predictions.PREDICTIONS_FILE).read_text(encoding="utf-8"))
  dataset = json.loads((korquad_run / "dev.json").read_text(encoding="utf-8"))["data"]
  contexts = {qa["id"]: paragraph["context"] for article in dataset for paragraph in article["paragraphs"]
              for qa in paragraph["qas"]}
  trimmer = ParticleTrimmer("kiwi")
  assert trimmed == {qas_id: trimmer.trim(contexts[qas_id], contexts[qas_id].index(span),
                                          contexts[qas_id].index(span) + len(span)) for qas_id, span in spans.items()}
  assert sum(trimmed[qas_id] != span for qas_id, span in spans.items()) >= 1


@pytest.mark.parametrize("problem", ["answer_start", "several_training_answers", "klue_task_for_v1"])
def test_korquad_bad_input_is_one_error_naming_the_file_and_question(tmp_path, problem):
  train = tmp_path / "train.json"
  write_korquad(train, 6, seed=4, with_variants=problem == "several_training_answers")
  document = json.loads(train.read_text(encoding="utf-8"))
  qa = document["data"][1]["paragraphs"][0]["qas"][0]
  if problem == "answer_start":
    qa["answers"][0]["answer_start"] += 1
  elif problem == "several_training_answers":
    qa = next(qa for article in document["data"] for paragraph in article["paragraphs"]
              for qa in paragraph["qas"] if len(qa["answers"]) > 1)
  train.write_text(json.dumps(document, ensure_ascii=False), encoding="utf-8")
  config = tmp_path / "albert_config.json"
  tiny_config(vocab_size=8000).to_json_file(str(config))
  task = "klue-mrc" if problem == "klue_task_for_v1" else "korquad1"
  result = run_tool("run_squad_v1", f"--task_name={task}", f"--train_file={train}", f"--albert_config_file={config}",
                    f"--spm_model_file={SP8K_MODEL}", f"--output_dir={tmp_path / 'run'}", "--do_train",
                    "--max_seq_length=64", "--max_query_length=16", "--train_batch_size=2")
  assert result.returncode == (1 if problem == "klue_task_for_v1" else 2), result.stderr[-2000:]
  # absl refuses a --task_name of the other tool in its own words, over several lines.
  message = result.stderr if problem == "klue_task_for_v1" else result.stderr.strip().splitlines()[-1]
  expected = {"answer_start": [f"error: {train}: question {qa['id']}: the answers text", "answer_start"],
              "several_training_answers": [f"error: {train}: question {qa['id']} has 2 answers", "exactly one"],
              "klue_task_for_v1": ["--task_name=klue-mrc", "squad", "korquad1"]}[problem]
  assert all(part in message for part in expected), message
  assert not (tmp_path / "run").exists()
