"""KorQuAD 2.x (`run_squad_v1 --task_name=korquad2`): HTML pages become text with a map back to the HTML, every
answer (a phrase, a whole table cell, a run of list items) maps exactly, a folder of shards is one set (one feature
cache keyed on every shard, one predictions.json), predictions are written as HTML and scored as KorQuAD 2.0's
evaluation script scores them, and bad files are one error naming the file and the question.

The pages are real Korean sentences in KorQuAD 2.x's layout (conftest's `write_korquad2`); the scores are checked
against `official_korquad2_scores`, written here from the rules of KorQuAD 2.0's evaluation script (BeautifulSoup
is not installed here, so its `get_text()` is `text_of` below, written from the standard library's parser).
"""

import collections
import html.parser
import json
import re
import shutil
import string

import pytest

from albert_tf import files
from albert_tf.tasks.squad import examples as squad_examples
from albert_tf.tasks.squad import feature_cache
from albert_tf.tasks.squad import korean_scoring
from albert_tf.tasks.squad import predictions as squad_predictions
from albert_tf.tasks.squad import reading_tasks
from albert_tf.tasks.squad.html_text import HtmlText, plain_text
from albert_tf.text.tokenizer import SentencePieceTokenizer
from albert_tf.training import run_directory
from tests.conftest import SP8K_MODEL, korean_reader_config, requires_shared, run_tool, tiny_config
from tests.tasks.squad.korean_reading_data import write_korquad2

pytestmark = requires_shared(SP8K_MODEL)

SEQ = 96
READING_FLAGS = ["--max_seq_length=96", "--doc_stride=32", "--max_query_length=16", "--max_answer_length=24"]
KORQUAD2 = reading_tasks.reading_task("korquad2", 1)


class _TextNodes(html.parser.HTMLParser):
  """BeautifulSoup's `get_text()`: every text node, entities decoded, in order; no comments, scripts or styles."""

  def __init__(self):
    super().__init__(convert_charrefs=True)
    self.nodes, self.hidden = [], 0

  def handle_starttag(self, tag, attrs):
    self.hidden += tag in ("script", "style", "template")

  def handle_endtag(self, tag):
    if tag in ("script", "style", "template") and self.hidden:
      self.hidden -= 1

  def handle_data(self, data):
    if not self.hidden:
      self.nodes.append(data)


def text_of(markup):
  parser = _TextNodes()
  parser.feed(markup)
  parser.close()
  return "".join(parser.nodes)


def official_korquad2_scores(pages, predictions):
  """KorQuAD 2.0's evaluation script as its rules read: tags stripped (get_text), quotes, 《》〈〉<>, parentheses and
  ‘’ become spaces, lower case, no ASCII punctuation, then no whitespace at all; EM on that, F1 on its characters;
  as fractions (the script prints them ×100)."""

  def normalize(text):
    text = text_of(text)
    for character in "'\"《》<>〈〉()‘’":
      text = text.replace(character, " ")
    text = "".join(character for character in text.lower() if character not in string.punctuation)
    return "".join(text.split())

  def f1(prediction, gold):
    prediction_chars, gold_chars = list(normalize(prediction)), list(normalize(gold))
    same = sum((collections.Counter(prediction_chars) & collections.Counter(gold_chars)).values())
    if same == 0:
      return 0.0
    precision, recall = same / len(prediction_chars), same / len(gold_chars)
    return 2 * precision * recall / (precision + recall)

  exact = total_f1 = total = 0
  for page in pages:
    for qa in page["qas"]:
      total += 1
      if qa["id"] in predictions:
        exact += normalize(predictions[qa["id"]]) == normalize(qa["answer"]["text"])
        total_f1 += f1(predictions[qa["id"]], qa["answer"]["text"])
  return {"exact_match": exact / total, "f1": total_f1 / total}


def shard_pages(folder):
  """The pages of a folder's shards, in the order the tool reads them."""
  return [page for path in sorted(folder.glob("*.json")) for page in json.loads(path.read_text("utf-8"))["data"]]


# The HTML reader.

PAGE = ('<h2>개요</h2>\n<p>대한민국의 <a href="/wiki/수도">수도</a>는 서울&amp;세종이다.<br/>둘째   줄</p>'
        "<table><tr><th>연도</th><td>1948년</td></tr></table>\n<ul><li>하나</li><li>둘</li></ul>"
        "<!-- 주석 --><script>var x = '<b>';</script>끝&nbsp;")


def test_html_becomes_text_with_words_apart_and_entities_decoded_and_maps_back():
  page = HtmlText(PAGE)
  # Block tags (headings, paragraphs, line breaks, cells, items) part words; inline ones (a link) do not.
  assert page.text == "개요 대한민국의 수도는 서울&세종이다. 둘째 줄 연도 1948년 하나 둘 끝"

  def text_range_of(markup):
    start = PAGE.index(markup)
    first, end = page.text_range(start, start + len(markup))
    return page.text[first:end]

  assert text_range_of("<td>1948년</td>") == "1948년"
  assert text_range_of("<li>하나</li><li>둘</li>") == "하나 둘"  # an answer spanning tags: the text of its range
  assert text_range_of("&amp;") == "&"
  assert text_range_of("amp;세종") == "세종"  # half an entity is not its character
  assert text_range_of("<!-- 주석 --><script>var x = '<b>';</script>") == ""

  def markup_of(text):
    first = page.text.index(text)
    return page.markup_span(first, first + len(text) - 1)

  assert markup_of("수도는") == "수도</a>는"
  assert markup_of("서울&세종") == "서울&amp;세종"
  assert markup_of("1948년 하나") == "1948년</td></tr></table>\n<ul><li>하나"
  for index, character in enumerate(page.text):
    if not character.isspace():
      assert text_of(page.markup_span(index, index)) == character, index


def test_the_text_of_html_is_get_texts_up_to_whitespace():
  for markup, text in [("<td>1948년&nbsp;7월</td>", "1948년 7월"), ("&lt;b&gt;굵게&lt;/b&gt;", "<b>굵게</b>"),
                       ("가<!-- 나 -->다", "가다"), ("<p>a < b</p>", "a < b"), ("x&#44032;&#xB098;", "x가나")]:
    assert plain_text(markup) == text
    assert "".join(plain_text(markup).split()) == "".join(text_of(markup).split())


@pytest.mark.parametrize("where", ["local", "bucket"])
def test_a_folder_of_shards_is_one_set_whose_answers_all_map_exactly(tmp_path, where, bucket):
  folder = tmp_path / "dev"
  write_korquad2(folder, 10, seed=5, split="dev")
  assert len(list(folder.glob("*.json"))) == 2
  predict_file = str(folder)
  if where == "bucket":  # --predict_file=gs://.../dev
    predict_file = f"{bucket}/dev"
    with files.staged_folder(predict_file) as staging:
      shutil.copytree(folder, staging, dirs_exist_ok=True)
  examples, dataset, skipped = squad_examples.read_squad_examples(
      predict_file, is_training=False, version_2_with_negative=False, layout=KORQUAD2.layout, reader=KORQUAD2.reader)
  pages = shard_pages(folder)
  assert skipped == 0 and len(examples) == 30
  assert [example.qas_id for example in examples] == [qa["id"] for page in pages for qa in page["qas"]]
  assert dataset == [{field: value for field, value in page.items() if field not in ("context", "raw_html")}
                     for page in pages]
  questions = iter(examples)
  for page in pages:
    for qa in page["qas"]:
      example, gold, start = next(questions), qa["answer"]["text"], qa["answer"]["answer_start"]
      assert page["raw_html"][qa["answer"]["html_answer_start"]:][:len(gold)] == gold  # the fixture's layout
      # The example's answer is the text of the gold HTML (tags and entities its own way: a regex and unescape).
      expected = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", gold)).split())
      assert example.answer_text == expected
      assert example.context_text[example.answer_start:].startswith(expected)
      end = example.answer_start + len(example.answer_text)
      assert example.context_source.text_range(start, start + len(gold)) == (example.answer_start, end)
      # Predicting exactly that text writes HTML inside the gold answer with the same text.
      written = example.answer_of_span(example.answer_start, end - 1)
      assert written in gold and "".join(text_of(written).split()) == "".join(text_of(gold).split())
  kinds = collections.Counter(qa["answer"]["text"][:4] for page in pages for qa in page["qas"])
  assert kinds["<td>"] == kinds["<li>"] == 10
  training, _, _ = squad_examples.read_squad_examples(predict_file, True, False, KORQUAD2.layout, KORQUAD2.reader)
  assert training == examples and all(example.context_source is None for example in training)


def test_the_feature_cache_of_a_folder_keys_on_every_shard(tmp_path, capsys):
  folder = tmp_path / "train"
  write_korquad2(folder, 4, seed=6)
  tokenizer = SentencePieceTokenizer(SP8K_MODEL, do_lower_case=True, keep_accents=False)
  arguments = dict(input_file=str(folder), tokenizer=tokenizer, max_seq_length=SEQ, doc_stride=32,
                   max_query_length=16, is_training=True, version_2_with_negative=False,
                   feature_file=str(tmp_path / "features.tfrecord"), layout=KORQUAD2.layout, reader=KORQUAD2.reader)
  made = feature_cache.load_or_create_features(**arguments)
  assert "Wrote" in capsys.readouterr().err
  answered = set()
  for feature in made.features:
    if not feature.is_impossible:  # a window holding the whole answer
      example = made.examples[feature.example_index]
      first = feature.token_start_to_char[feature.start_position - feature.context_offset]
      last = feature.token_end_to_char[feature.end_position - feature.context_offset]
      assert example.context_text[first:last + 1].strip() == example.answer_text
      answered.add(example.qas_id)
  assert answered == {example.qas_id for example in made.examples}
  feature_cache.load_or_create_features(**arguments)
  assert "made with the same settings" in capsys.readouterr().err
  # One character of the second shard's question changed (same size): the features are made again.
  second = sorted(folder.glob("*.json"))[1]
  second.write_text(second.read_text("utf-8").replace("무엇입니까", "무엇일까요", 1), encoding="utf-8")
  feature_cache.load_or_create_features(**arguments)
  err = capsys.readouterr().err
  assert "input_file_sha256 changed" in err and "input_file_size" not in err and "Wrote" in err


# Scoring.


def test_korquad2_scores_are_the_official_ones():
  pages = [{"title": "t", "url": "u", "qas": [
      {"id": "1", "question": "q", "answer": {"text": "<td>1948년 7월</td>", "answer_start": 0}},
      {"id": "2", "question": "q", "answer": {"text": "<ul><li>서울&amp;부산</li></ul>", "answer_start": 0}},
      {"id": "3", "question": "q", "answer": {"text": "《대한민국》", "answer_start": 0}},
      {"id": "4", "question": "q", "answer": {"text": "<p>ALBERT (모델)</p>", "answer_start": 0}},
      {"id": "5", "question": "q", "answer": {"text": "<b>국회</b>", "answer_start": 0}},
      {"id": "6", "question": "q", "answer": {"text": "정부", "answer_start": 0}}]}]
  predictions = {"1": "1948년</td><td>7월", "2": "서울 & 부산", "3": "대한민국", "4": "albert", "5": "국회의사당"}
  scores = korean_scoring.korquad2_scores(pages, predictions)
  assert scores == pytest.approx(official_korquad2_scores(pages, predictions), abs=1e-9)
  assert scores["exact_match"] == pytest.approx(0.5)  # 1, 2 and 3; 6 has no prediction
  assert korean_scoring.korquad2_normalize("<td>1948년&nbsp;7월</td>") == "1948년7월"
  assert korean_scoring.korquad2_normalize("<p>ALBERT (모델)</p>") == "albert모델"
  assert korean_scoring.character_f1("albert", "albert모델") == pytest.approx(2 * 1 * (6 / 8) / (1 + 6 / 8))


# The tool.


@pytest.fixture(scope="module")
def korquad2_run(tmp_path_factory):
  """run_squad_v1 --task_name=korquad2 on folders of two shards: 48 training questions, 3 steps, 18 to predict."""
  tmp_path = tmp_path_factory.mktemp("korquad2")
  config = korean_reader_config(tmp_path, SEQ)
  result = run_tool("run_squad_v1", "--task_name=korquad2",
                    f"--train_file={write_korquad2(tmp_path / 'train', 16, seed=1)}",
                    f"--predict_file={write_korquad2(tmp_path / 'dev', 6, seed=2, split='dev')}",
                    f"--albert_config_file={config}", f"--spm_model_file={SP8K_MODEL}",
                    f"--output_dir={tmp_path / 'run'}", "--do_train", "--do_predict", *READING_FLAGS,
                    "--train_batch_size=16", "--predict_batch_size=32", "--learning_rate=2e-3",
                    "--num_train_epochs=1", "--save_checkpoints_steps=3", "--iterations_per_loop=3")
  assert result.returncode == 0, result.stderr[-3000:]
  return tmp_path


def test_korquad2_tool_writes_one_html_prediction_file_scored_as_the_official_script(korquad2_run):
  run = korquad2_run / "run"
  pages = shard_pages(korquad2_run / "dev")
  predictions = json.loads((run / squad_predictions.PREDICTIONS_FILE).read_text(encoding="utf-8"))
  # One file for the folder's two shards, every question of both in it.
  assert sorted(predictions) == sorted(qa["id"] for page in pages for qa in page["qas"])
  assert sorted(path.name for path in run.glob("*predictions*.json")) == [squad_predictions.NBEST_FILE,
                                                                         squad_predictions.PREDICTIONS_FILE]
  # Each answer is HTML cut from its page's context, as the official answers are.
  contexts = {qa["id"]: page["context"] for page in pages for qa in page["qas"]}
  assert all(text in contexts[qas_id] and text_of(text).strip() for qas_id, text in predictions.items())
  # The metrics that chose model.ckpt-best are the official ones of the predictions written from it.
  best = run_directory.read_best_info(str(run))
  official = official_korquad2_scores(pages, predictions)
  assert {name: best[name] for name in official} == pytest.approx(official, abs=1e-6)
  assert json.loads((run / "task.json").read_text())["task"] == "korquad2"


BAD_INPUT = ["missing_answer", "answers_list", "answer_start_not_int", "answer_not_at_offset", "no_qas",
             "duplicate_id", "invalid_json", "not_utf8", "empty_folder", "missing_path"]


@pytest.mark.parametrize("problem", BAD_INPUT)
def test_korquad2_bad_input_is_one_error_naming_the_file_and_question(tmp_path, problem):
  folder = tmp_path / "train"
  write_korquad2(folder, 4, seed=4)
  first, second = sorted(folder.glob("*.json"))
  document = json.loads(second.read_text(encoding="utf-8"))
  page = document["data"][0]
  qa = page["qas"][1]  # a whole table cell
  train, named = str(folder), str(second)
  expected = f"question {qa['id']}"
  if problem == "missing_answer":
    del qa["answer"]
  elif problem == "answers_list":
    qa["answers"] = [qa.pop("answer")]
  elif problem == "answer_start_not_int":
    qa["answer"]["answer_start"] = str(qa["answer"]["answer_start"])
  elif problem == "answer_not_at_offset":
    qa["answer"]["answer_start"] += 1
  elif problem == "no_qas":
    del page["qas"]
    expected = 'data[0] has no "qas" list'
  elif problem == "duplicate_id":
    qa["id"] = json.loads(first.read_text(encoding="utf-8"))["data"][0]["qas"][0]["id"]
    expected = f"question {qa['id']} is also in {first}"
  second.write_text(json.dumps(document, ensure_ascii=False), encoding="utf-8")
  if problem == "invalid_json":
    second.write_text(second.read_text(encoding="utf-8")[:-3], encoding="utf-8")
    expected = "not valid JSON"
  elif problem == "not_utf8":
    second.write_bytes(b'{"data": "caf\xe9"}')
    expected = "not UTF-8"
  elif problem == "empty_folder":
    first.unlink()
    second.rename(folder / "KorQuAD_2.1_train_00.txt")
    named, expected = train, "a folder without *.json files"
  elif problem == "missing_path":
    train = named = str(tmp_path / "nowhere")
    expected = "not found"
  config = tmp_path / "albert_config.json"
  tiny_config(vocab_size=8000).to_json_file(str(config))
  result = run_tool("run_squad_v1", "--task_name=korquad2", f"--train_file={train}", f"--albert_config_file={config}",
                    f"--spm_model_file={SP8K_MODEL}", f"--output_dir={tmp_path / 'run'}", "--do_train",
                    "--max_seq_length=64", "--max_query_length=16", "--train_batch_size=2")
  assert result.returncode == 2, result.stderr[-2000:]
  errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
  assert len(errors) == 1 and errors[0] == result.stderr.strip().splitlines()[-1], result.stderr[-2000:]
  assert named in errors[0] and expected in errors[0], errors[0]
  hint = {"missing_answer": '"answer" object', "answers_list": "--task_name=korquad1",
          "answer_start_not_int": 'integer "answer_start"', "answer_not_at_offset": "answer_start"}.get(problem, "")
  assert hint in errors[0], errors[0]
  assert not (tmp_path / "run").exists()
