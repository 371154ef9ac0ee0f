"""SQuAD v1.1, SQuAD v2.0 and RACE end to end: a tiny model learns them, predicts, resumes and exports.

The data are real sentences of `../shared/corpus` (English Wikipedia, Korean LibreOffice help) in the
official layouts. The question asks what a sentence writes in parentheses, so the answer is a real span
whose place a tiny model can learn in a few hundred steps; unanswerable questions (v2) are about sentences
without parentheses. RACE's right option is the article's parenthesised words, the wrong ones those of
sentences in the other language (matching the option to the article's words takes a tiny model from
scratch far longer than a test may run).
"""

import json
import os
import random
import re
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

import albert_tf
from albert_tf.data import squad
from albert_tf.modeling.checkpoints import build_model_for_checkpoint
from albert_tf.serving import saved_model
from albert_tf.serving.answer_spans import QuestionAnsweringOptions
from albert_tf.text.graph_tokenizer import GraphTokenizer
from albert_tf.text.tokenizer import SentencePieceTokenizer
from albert_tf.training import run_directory, squad_predictions, squad_scoring
from albert_tf.training.finetuning_objectives import SUBMIT_RESULTS
from albert_tf.training import reading_objectives
from albert_tf.training.reading_objectives import TFLITE_FILE
from conftest import REPO, SP8K_MODEL, corpus_lines, requires_shared

pytestmark = requires_shared(SP8K_MODEL)
SEQ = 96
CONFIG = dict(vocab_size=8000, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
              embedding_size=32, max_position_embeddings=SEQ)
PARENTHESES = re.compile(r"\(([^()]{2,40})\)")
QUESTION = {"en": "What is written in parentheses?", "ko": "괄호 안에 무엇이 쓰여 있습니까?"}


def sentence_pools():
  """Per language: short real sentences with exactly one parenthesised group, and sentences without any."""
  pools = {}
  for language, name in (("en", "en_wiki.txt"), ("ko", "ko_libreoffice_help.txt")):
    lines = [line for line in corpus_lines(name, 4000) if len(line) < 160]
    with_group = [line for line in lines if line.count("(") == line.count(")") == 1 and PARENTHESES.search(line)]
    without = [line for line in lines if "(" not in line and ")" not in line]
    pools[language] = (with_group, without)
  return pools


POOLS = sentence_pools()


def write_squad(path, version, num_questions, seed):
  """A SQuAD file in the official layout (v2 with `is_impossible` and about 30% unanswerable)."""
  rng = random.Random(seed)
  articles = []
  for index in range(num_questions):
    language = ("en", "ko")[index % 2]
    with_group, without = POOLS[language]
    impossible = version == 2 and rng.random() < 0.3
    context = (rng.choice(without) + " " if rng.random() < 0.5 else "") + rng.choice(without if impossible
                                                                                     else with_group)
    qa = {"id": f"{seed}-{index}", "question": QUESTION[language], "answers": []}
    if not impossible:
      match = PARENTHESES.search(context)
      qa["answers"] = [{"text": match.group(1), "answer_start": match.start(1)}]
    if version == 2:
      qa["is_impossible"] = impossible
    articles.append({"title": f"article {index}", "paragraphs": [{"context": context, "qas": [qa]}]})
  path.parent.mkdir(parents=True, exist_ok=True)
  path.write_text(json.dumps({"version": "1.1" if version == 1 else "v2.0", "data": articles}, ensure_ascii=False),
                  encoding="utf-8")
  return str(path)


def first_span_baseline(dataset, version):
  """The official scores of always answering the context's first words (as many as the first gold answer)."""
  answers = {}
  for article in dataset:
    for paragraph in article["paragraphs"]:
      for qa in paragraph["qas"]:
        length = len(qa["answers"][0]["text"].split()) if qa["answers"] else 2
        answers[qa["id"]] = " ".join(paragraph["context"].split()[:length])
  if version == 1:
    return squad_scoring.squad_v1_scores(dataset, answers)
  return squad_scoring.squad_v2_scores(dataset, answers)


def run_tool(name, *flags):
  return subprocess.run([sys.executable, os.path.join(REPO, "tools", name), *flags], capture_output=True, text=True,
                        timeout=900)


def write_config(tmp_path, **config):
  path = tmp_path / "albert_config.json"
  albert_tf.AlbertConfig(**config).to_json_file(str(path))
  return str(path)


def train_resume_and_export(tool, tmp_path, flags, first, second):
  """Runs `tool` to the `first` schedule, then again to the `second` (which resumes), predicting and exporting."""
  common = [f"--spm_model_file={SP8K_MODEL}", f"--output_dir={tmp_path / 'run'}", *flags]
  result = run_tool(tool, *common, *first)
  assert result.returncode == 0, result.stderr[-3000:]
  resumed = run_tool(tool, *common, *second, f"--export_dir={tmp_path / 'export'}")
  assert resumed.returncode == 0, resumed.stderr[-3000:]
  return result.stderr, resumed.stderr


def squad_tool_run(tmp_path, version):
  """run_squad_v<version>.py on 400 training questions: 80 steps, then resumed to 160 with --do_predict and export."""
  flags = [f"--train_file={write_squad(tmp_path / 'train.json', version, 400, seed=1)}",
           f"--predict_file={write_squad(tmp_path / 'dev.json', version, 60, seed=2)}",
           f"--albert_config_file={write_config(tmp_path, **CONFIG)}", "--do_train", "--do_predict",
           f"--max_seq_length={SEQ}", "--doc_stride=32", "--max_query_length=16", "--max_answer_length=12",
           "--train_batch_size=16", "--predict_batch_size=16", "--learning_rate=2e-3",
           "--save_checkpoints_steps=40", "--iterations_per_loop=40"] + (["--dropout_prob=0"] if version == 2 else [])
  return train_resume_and_export(f"run_squad_v{version}.py", tmp_path, flags, ["--num_train_epochs=3.2"],
                                 ["--num_train_epochs=6.4"])  # 400 / 16 × 3.2 = 80 steps


def dev_questions(dev_file):
  examples, _, _ = squad.read_squad_examples(dev_file, is_training=False, version_2_with_negative=True)
  return examples


def read_json(path):
  return json.loads(path.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def squad_v1(tmp_path_factory):
  tmp_path = tmp_path_factory.mktemp("squad_v1")
  return tmp_path, squad_tool_run(tmp_path, version=1)


def test_squad_v1_tool_learns_resumes_and_writes_googles_files(squad_v1):
  tmp_path, (first, resumed) = squad_v1
  assert "Wrote" in first and "features" in first  # the feature caches were built ...
  assert "Resuming from" in resumed and "at step 80" in resumed
  assert "Read" in resumed and "features" in resumed  # ... and read back
  run = tmp_path / "run"
  dataset = read_json(tmp_path / "dev.json")["data"]
  baseline = first_span_baseline(dataset, version=1)
  best = run_directory.read_best_info(str(run))
  assert best["exact_match"] > baseline["exact_match"] + 30, (best, baseline)
  assert best["f1"] > baseline["f1"] + 30, (best, baseline)
  assert "global_step = 160" in (run / run_directory.EVAL_RESULTS).read_text()
  predictions = read_json(run / squad_predictions.PREDICTIONS_FILE)
  nbest = read_json(run / squad_predictions.NBEST_FILE)
  ids = [example.qas_id for example in dev_questions(str(tmp_path / "dev.json"))]
  assert list(predictions) == ids and list(nbest) == ids
  assert all(abs(sum(entry["probability"] for entry in nbest[qas_id]) - 1) < 1e-6 for qas_id in ids)
  assert all(predictions[qas_id] == nbest[qas_id][0]["text"] for qas_id in ids)
  # The official script on the written predictions gives what the run reported for the best checkpoint.
  assert squad_scoring.squad_v1_scores(dataset, predictions)["f1"] == pytest.approx(best["f1"])


def test_exported_v1_model_answers_raw_text_as_the_evaluation_does_and_tflite_agrees(squad_v1):
  tmp_path, _ = squad_v1
  export = tmp_path / "export" / "1"
  predictions = read_json(tmp_path / "run" / squad_predictions.PREDICTIONS_FILE)
  examples = dev_questions(str(tmp_path / "dev.json"))
  loaded = tf.saved_model.load(str(export))
  served = loaded.signatures["answer_question"](question=tf.constant([e.question_text for e in examples]),
                                                context=tf.constant([e.context_text for e in examples]))
  assert [text.decode("utf-8") for text in served["answer"].numpy()] == [predictions[e.qas_id] for e in examples]

  features = squad.convert_examples_to_features(examples[:3], SentencePieceTokenizer(SP8K_MODEL), SEQ, 32, 16,
                                                is_training=False)
  runner = tf.lite.Interpreter(model_path=str(export / TFLITE_FILE)).get_signature_runner()
  for feature in features:
    ids = np.array([feature.padded_input_ids(SEQ)], np.int32)
    mask = np.array([feature.input_mask(SEQ)], np.int32)
    types = np.array([feature.segment_ids(SEQ)], np.int32)
    lite = runner(input_ids=ids, input_mask=mask, segment_ids=types)
    saved = loaded.signatures["serving_default"](input_word_ids=tf.constant(ids), input_mask=tf.constant(mask),
                                                 input_type_ids=tf.constant(types))
    for name in ("start_logits", "end_logits"):
      np.testing.assert_allclose(lite[name], saved[name].numpy(), atol=1e-4, rtol=0)


def test_in_graph_windows_and_spans_are_the_python_features_and_predictions(squad_v1):
  """Long contexts read in many doc-stride windows: `answer_question`'s answers are the evaluation's."""
  run_dir, _ = squad_v1
  model, _ = build_model_for_checkpoint(albert_tf.AlbertConfig(**CONFIG), str(run_dir / "run" / "model.ckpt-best"))
  examples = dev_questions(str(run_dir / "dev.json"))[:24]
  # Each context after two unrelated sentences, so the answer sits in a later window or across two.
  rng = random.Random(5)
  filler = POOLS["en"][1] + POOLS["ko"][1]
  examples = [squad.SquadExample(e.qas_id, e.question_text, f"{rng.choice(filler)} {rng.choice(filler)} "
                                 f"{e.context_text}", "", -1, False, e.gold_answers) for e in examples]
  seq, stride, max_answer = 48, 12, 12
  features = squad.convert_examples_to_features(examples, SentencePieceTokenizer(SP8K_MODEL), seq, stride, 16,
                                                is_training=False)
  assert len(features) > 3 * len(examples)  # many windows per question
  inputs = {"input_word_ids": tf.constant([f.padded_input_ids(seq) for f in features]),
            "input_mask": tf.constant([f.input_mask(seq) for f in features]),
            "input_type_ids": tf.constant([f.segment_ids(seq) for f in features])}
  logits = model(inputs)
  expected = squad_predictions.v1_predictions(examples, features, logits["start_logits"].numpy(),
                                              logits["end_logits"].numpy(), 20, max_answer).answers
  module = saved_model.AlbertQuestionAnsweringServingModule(model, GraphTokenizer(SP8K_MODEL), seq,
                                                            QuestionAnsweringOptions(16, stride, max_answer))
  served = module.answer_question(tf.constant([e.question_text for e in examples]),
                                  tf.constant([e.context_text for e in examples]))
  assert [text.decode("utf-8") for text in served["answer"].numpy()] == [expected[e.qas_id] for e in examples]


def test_squad_v2_tool_learns_to_tell_unanswerable_questions_and_exports_its_threshold(tmp_path):
  first, resumed = squad_tool_run(tmp_path, version=2)
  assert "Resuming from" in resumed and "at step 80" in resumed
  run = tmp_path / "run"
  dataset = read_json(tmp_path / "dev.json")["data"]
  baseline = first_span_baseline(dataset, version=2)
  best = run_directory.read_best_info(str(run))
  assert best["f1"] > baseline["f1"] + 30, (best, baseline)
  assert best["NoAns_total"] > 0 and best["HasAns_total"] > 0
  assert best["NoAns_exact"] > 50 and best["HasAns_f1"] > baseline["HasAns_f1"] + 20, (best, baseline)
  assert {"best_f1", "best_f1_thresh", "best_exact", "null_score_diff_threshold"} <= set(best)
  predictions = read_json(run / squad_predictions.PREDICTIONS_FILE)
  null_odds = read_json(run / squad_predictions.NULL_ODDS_FILE)
  examples = dev_questions(str(tmp_path / "dev.json"))
  assert list(null_odds) == [e.qas_id for e in examples]
  # The SavedModel answers with the threshold of the best evaluation: "" exactly where predictions.json has "".
  served = tf.saved_model.load(str(tmp_path / "export" / "1")).signatures["answer_question"](
      question=tf.constant([e.question_text for e in examples]), context=tf.constant([e.context_text for e in examples]))
  assert [text.decode("utf-8") for text in served["answer"].numpy()] == [predictions[e.qas_id] for e in examples]
  np.testing.assert_allclose(served["no_answer_score"].numpy(), [null_odds[e.qas_id] for e in examples], atol=1e-4)
  assert served["has_answer"].numpy().tolist() == [bool(predictions[e.qas_id]) for e in examples]
  assert not (tmp_path / "export" / "1" / TFLITE_FILE).exists()  # Google's v2 exports no TFLite model


# Sentences whose parenthesised words are of their own language only: Hangul in Korean, ASCII in English.
RACE_GROUPS = {
    "ko": [line for line in POOLS["ko"][0] if re.search("[가-힣]", PARENTHESES.search(line).group(1))],
    "en": [line for line in POOLS["en"][0] if re.fullmatch(r"[A-Za-z ,.'-]+", PARENTHESES.search(line).group(1))],
}


def write_race(root, num_articles, seed, layout):
  """RACE/<split>/<level>/ for `layout` = (split, "files" | "all.txt"): per-article files (the download's
  layout) or all.txt (Google's reader's); one question an article, about its parenthesised words."""
  rng = random.Random(seed)
  records = {"middle": [], "high": []}
  for index in range(num_articles):
    language = ("en", "ko")[index % 2]
    without = POOLS[language][1]
    sentences = [rng.choice(without), rng.choice(RACE_GROUPS[language]), rng.choice(without)]
    rng.shuffle(sentences)
    right = PARENTHESES.search(" ".join(sentences)).group(1)
    # The wrong options are parenthesised words of the other language: a cue a tiny model learns fast.
    other_language = RACE_GROUPS["ko" if language == "en" else "en"]
    options = [right] + [PARENTHESES.search(rng.choice(other_language)).group(1) for _ in range(3)]
    rng.shuffle(options)
    records[("middle", "high")[index % 3 == 0]].append({
        "id": f"{seed}{index}.txt", "article": " ".join(sentences), "questions": [QUESTION[language]],
        "options": [options], "answers": ["ABCD"[options.index(right)]]})
  for level, level_records in records.items():
    folder = root / "RACE" / layout[0] / level
    folder.mkdir(parents=True, exist_ok=True)
    if layout[1] == "files":
      for number, record in enumerate(level_records):
        (folder / f"{number}.txt").write_text(json.dumps(record, ensure_ascii=False), encoding="utf-8")
    else:
      (folder / "all.txt").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in level_records),
                                      encoding="utf-8")


def test_race_tool_learns_to_choose_resumes_and_exports(tmp_path):
  data = tmp_path / "data"
  write_race(data, 240, seed=1, layout=("train", "files"))
  write_race(data, 60, seed=2, layout=("dev", "all.txt"))
  write_race(data, 60, seed=2, layout=("test", "files"))
  flags = [f"--data_dir={data}", f"--albert_config_file={write_config(tmp_path, **CONFIG)}", "--do_predict",
           f"--max_seq_length={SEQ}", "--max_qa_length=24", "--train_batch_size=8", "--eval_batch_size=8",
           "--predict_batch_size=8", "--learning_rate=1e-3", "--warmup_step=20", "--dropout_prob=0",
           "--save_checkpoints_steps=100", "--iterations_per_loop=100"]
  _, resumed = train_resume_and_export("run_race.py", tmp_path, flags, ["--train_step=100"], ["--train_step=200"])
  assert "Resuming from" in resumed and "at step 100" in resumed
  best = run_directory.read_best_info(str(tmp_path / "run"))
  assert best["accuracy"] > 0.5, best  # chance is 0.25
  evaluation = (tmp_path / "run" / run_directory.EVAL_RESULTS).read_text()
  assert "global_step = 200" in evaluation
  for name in ("accuracy", "accuracy_middle", "accuracy_high", "eval_accuracy", "eval_loss"):
    assert re.search(rf"^{name} = [0-9.]+$", evaluation, re.MULTILINE), name
  submitted = (tmp_path / "run" / SUBMIT_RESULTS).read_text(encoding="utf-8").splitlines()
  assert submitted[0] == "index\tprediction" and len(submitted) == 61
  assert all(line.split("\t")[1] in "ABCD" for line in submitted[1:])
  loaded = tf.saved_model.load(str(tmp_path / "export" / "1"))
  ids = tf.zeros([2, 4, SEQ], tf.int32)
  outputs = loaded.signatures["serving_default"](input_word_ids=ids, input_mask=tf.ones_like(ids),
                                                 input_type_ids=ids)
  assert outputs["probabilities"].shape == (2, 4)


@pytest.mark.parametrize("problem", ["malformed", "empty", "v1_dropout"])
def test_squad_tool_refuses_bad_input_before_training(tmp_path, problem):
  config_file = write_config(tmp_path, **CONFIG)
  train = tmp_path / "train.json"
  contents = {"malformed": '{"data": [{"paragraphs": [}', "empty": ""}
  if problem in contents:
    train.write_text(contents[problem], encoding="utf-8")
  else:
    write_squad(train, 1, 4, seed=5)
  result = run_tool("run_squad_v1.py", f"--train_file={train}", f"--albert_config_file={config_file}",
                    f"--spm_model_file={SP8K_MODEL}", f"--output_dir={tmp_path / 'run'}", "--do_train",
                    "--max_seq_length=64", "--max_query_length=16", *(["--dropout_prob=0.2"] if problem ==
                                                                       "v1_dropout" else []))
  assert result.returncode == 2
  message = result.stderr.strip().splitlines()[-1]
  expected = {"malformed": [str(train), "line 1"], "empty": [str(train), "empty"],
              "v1_dropout": ["--dropout_prob", "SQuAD v1's span head has no dropout"]}[problem]
  assert all(part in message for part in expected), message
  assert not (tmp_path / "run").exists()


def test_export_of_a_squad_run_reads_as_the_run_did(tmp_path):
  """tools/export_saved_model.py on a run directory: the run's reading settings and v2 threshold."""
  (tmp_path / "task.json").write_text(json.dumps({"task": "squad_v2", "max_query_length": 10, "doc_stride": 7,
                                                  "max_answer_length": 5, "n_best_size": 3}))
  (tmp_path / run_directory.BEST_CHECKPOINT_INFO).write_text(json.dumps({"global_step": 4, "f1": 50.0,
                                                                         "null_score_diff_threshold": -1.5}))
  prefix = str(tmp_path / run_directory.BEST_CHECKPOINT)
  assert reading_objectives.run_serving_options(prefix) == QuestionAnsweringOptions(10, 7, 5, 3, -1.5)
  (tmp_path / "task.json").write_text(json.dumps({"task": "mrpc", "label_list": ["0", "1"]}))
  assert reading_objectives.run_serving_options(prefix) is None
