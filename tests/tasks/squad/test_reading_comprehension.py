"""SQuAD v1.1 and RACE end to end: a tiny model learns them, predicts and exports (SQuAD v1.1's run also resumes).

SQuAD v2.0's runs are test_squad_v2.py's; the data, real sentences in the official layouts, are
reading_comprehension_data.py's.
"""

import json
import random
import re

import numpy as np
import pytest
import tensorflow as tf

import albert_tf
from albert_tf.modeling.checkpoints import build_model_for_checkpoint
from albert_tf.tasks.squad import examples as squad_examples
from albert_tf.tasks.squad import features as squad_features
from albert_tf.tasks.squad import predictions as squad_predictions
from albert_tf.tasks.squad import scoring as squad_scoring
from albert_tf.tasks.squad import serving as squad_serving
from albert_tf.tasks.squad.answer_spans import QuestionAnsweringOptions
from albert_tf.tasks.squad.objective import TFLITE_FILE
from albert_tf.text.tokenizer import SentencePieceTokenizer
from albert_tf.training import run_directory
from albert_tf.training.finetuning_objectives import SUBMIT_RESULTS
from tests.conftest import SP8K_MODEL, requires_shared, run_tool, write_config
from tests.tasks.squad.reading_comprehension_data import (CONFIG, DOC_STRIDE, MAX_ANSWER_LENGTH, MAX_QUERY_LENGTH,
                                                          PARENTHESES, POOLS, QUESTION, SEQ, dev_questions,
                                                          first_span_baseline, read_json, run_and_export, squad_flags,
                                                          train_resume_and_export, write_squad)

pytestmark = requires_shared(SP8K_MODEL)


@pytest.fixture(scope="module")
def squad_v1(tmp_path_factory):
  tmp_path = tmp_path_factory.mktemp("squad_v1")
  # 40 steps, then resumed to 80: by then the tiny model finds v1's answers far better than the baseline.
  return tmp_path, train_resume_and_export("run_squad_v1", tmp_path, squad_flags(tmp_path, 1, checkpoint_steps=40),
                                           ["--num_train_epochs=1.6"], ["--num_train_epochs=3.2"])


@pytest.fixture(scope="module")
def squad_v1_export(squad_v1):
  """The tool's SavedModel loaded once: the tests only call its signatures."""
  return tf.saved_model.load(str(squad_v1[0] / "export" / "1"))


def test_squad_v1_tool_learns_resumes_and_writes_googles_files(squad_v1):
  tmp_path, (first, resumed) = squad_v1
  assert "Wrote" in first and "features" in first  # the feature caches were built ...
  assert "Resuming from" in resumed and "at step 40" in resumed
  assert "Read" in resumed and "features" in resumed  # ... and read back
  run = tmp_path / "run"
  dataset = read_json(tmp_path / "dev.json")["data"]
  baseline = first_span_baseline(dataset, version=1)
  best = run_directory.read_best_info(str(run))
  assert best["exact_match"] > baseline["exact_match"] + 30, (best, baseline)
  assert best["f1"] > baseline["f1"] + 30, (best, baseline)
  assert "global_step = 80" in (run / run_directory.EVAL_RESULTS).read_text()
  predictions = read_json(run / squad_predictions.PREDICTIONS_FILE)
  nbest = read_json(run / squad_predictions.NBEST_FILE)
  ids = [example.qas_id for example in dev_questions(str(tmp_path / "dev.json"))]
  assert list(predictions) == ids and list(nbest) == ids
  assert all(abs(sum(entry["probability"] for entry in nbest[qas_id]) - 1) < 1e-6 for qas_id in ids)
  assert all(predictions[qas_id] == nbest[qas_id][0]["text"] for qas_id in ids)
  # The official script on the written predictions gives what the run reported for the best checkpoint.
  assert squad_scoring.squad_v1_scores(dataset, predictions)["f1"] == pytest.approx(best["f1"])


def test_exported_v1_model_answers_raw_text_as_the_evaluation_does_and_tflite_agrees(squad_v1, squad_v1_export):
  tmp_path, _ = squad_v1
  export = tmp_path / "export" / "1"
  predictions = read_json(tmp_path / "run" / squad_predictions.PREDICTIONS_FILE)
  examples = dev_questions(str(tmp_path / "dev.json"))
  loaded = squad_v1_export
  served = loaded.signatures["answer_question"](question=tf.constant([e.question_text for e in examples]),
                                                context=tf.constant([e.context_text for e in examples]))
  assert [text.decode("utf-8") for text in served["answer"].numpy()] == [predictions[e.qas_id] for e in examples]

  features = squad_features.convert_examples_to_features(examples[:3], SentencePieceTokenizer(SP8K_MODEL), SEQ,
                                                         DOC_STRIDE, MAX_QUERY_LENGTH, is_training=False)
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


def test_in_graph_windows_and_spans_are_the_python_features_and_predictions(squad_v1, squad_v1_export):
  """Long contexts read in many doc-stride windows: the export's `answer_question` answers as the evaluation."""
  run_dir, _ = squad_v1
  model, _ = build_model_for_checkpoint(albert_tf.AlbertConfig(**CONFIG), str(run_dir / "run" / "model.ckpt-best"))
  examples = dev_questions(str(run_dir / "dev.json"))[:24]
  # Each context after four unrelated sentences, so the answer sits in a later window or across two.
  rng = random.Random(5)
  filler = POOLS["en"][1] + POOLS["ko"][1]
  examples = [squad_examples.SquadExample(e.qas_id, e.question_text, " ".join(rng.choice(filler) for _ in range(4)) +
                                          f" {e.context_text}", "", -1, False, e.gold_answers) for e in examples]
  # The run's reading settings, which the export reads as the run did.
  features = squad_features.convert_examples_to_features(examples, SentencePieceTokenizer(SP8K_MODEL), SEQ, DOC_STRIDE,
                                                         MAX_QUERY_LENGTH, is_training=False)
  assert len(features) > 3 * len(examples)  # many windows per question
  inputs = {"input_word_ids": tf.constant([f.padded_input_ids(SEQ) for f in features]),
            "input_mask": tf.constant([f.input_mask(SEQ) for f in features]),
            "input_type_ids": tf.constant([f.segment_ids(SEQ) for f in features])}
  logits = model(inputs)
  expected = squad_predictions.v1_predictions(examples, features, logits["start_logits"].numpy(),
                                              logits["end_logits"].numpy(), 20, MAX_ANSWER_LENGTH).answers
  served = squad_v1_export.signatures["answer_question"](question=tf.constant([e.question_text for e in examples]),
                                                         context=tf.constant([e.context_text for e in examples]))
  assert [text.decode("utf-8") for text in served["answer"].numpy()] == [expected[e.qas_id] for e in examples]


# The articles' sentences with Hangul in parentheses (the right options), and English ones with Latin letters only
# in parentheses (the wrong options).
RACE_ANSWER_LINES = [line for line in POOLS["ko"][0] if re.search("[가-힣]", PARENTHESES.search(line).group(1))]
RACE_WRONG_OPTION_LINES = [line for line in POOLS["en"][0]
                           if re.fullmatch(r"[A-Za-z ,.'-]+", PARENTHESES.search(line).group(1))]


def write_race(root, num_articles, seed, layout):
  """RACE/<split>/<level>/ for `layout` = (split, "files" | "all.txt"): per-article files (the download's
  layout) or all.txt (Google's reader's); one question a Korean article, about its parenthesised words."""
  rng = random.Random(seed)
  records = {"middle": [], "high": []}
  for index in range(num_articles):
    without = POOLS["ko"][1]
    sentences = [rng.choice(without), rng.choice(RACE_ANSWER_LINES), rng.choice(without)]
    rng.shuffle(sentences)
    right = PARENTHESES.search(" ".join(sentences)).group(1)
    # The wrong options are English words: Hangul against Latin is a cue a tiny model learns in a few dozen steps.
    options = [right] + [PARENTHESES.search(rng.choice(RACE_WRONG_OPTION_LINES)).group(1) for _ in range(3)]
    rng.shuffle(options)
    records[("middle", "high")[index % 3 == 0]].append({
        "id": f"{seed}{index}.txt", "article": " ".join(sentences), "questions": [QUESTION["ko"]],
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


def test_race_tool_learns_to_choose_and_exports(tmp_path):
  """One run of 40 steps (the fine-tuning driver's resume is test_finetuning.py's and the SQuAD v1 fixture's)."""
  data = tmp_path / "data"
  write_race(data, 240, seed=1, layout=("train", "files"))
  write_race(data, 60, seed=2, layout=("dev", "all.txt"))
  write_race(data, 60, seed=2, layout=("test", "files"))
  flags = [f"--data_dir={data}", f"--albert_config_file={write_config(tmp_path, **CONFIG)}", "--do_predict",
           f"--max_seq_length={SEQ}", "--max_qa_length=24", "--train_batch_size=8", "--eval_batch_size=8",
           "--predict_batch_size=8", "--learning_rate=1e-3", "--warmup_step=10", "--dropout_prob=0",
           "--train_step=40", "--save_checkpoints_steps=40", "--iterations_per_loop=40"]
  run_and_export("run_race", tmp_path, flags)
  best = run_directory.read_best_info(str(tmp_path / "run"))
  assert best["accuracy"] > 0.8, best  # chance is 0.25
  evaluation = (tmp_path / "run" / run_directory.EVAL_RESULTS).read_text()
  assert "global_step = 40" in evaluation
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


@pytest.mark.parametrize("problem", ["malformed", "empty", "v1_dropout", "v2_file"])
def test_squad_tool_refuses_bad_input_before_training(tmp_path, problem):
  config_file = write_config(tmp_path, **CONFIG)
  train = tmp_path / "train.json"
  contents = {"malformed": '{"data": [{"paragraphs": [}', "empty": ""}
  if problem in contents:
    train.write_text(contents[problem], encoding="utf-8")
  elif problem == "v2_file":
    write_squad(train, 2, 8, seed=5)  # SQuAD v2.0's layout; question 5-6 is unanswerable
  else:
    write_squad(train, 1, 4, seed=5)
  result = run_tool("run_squad_v1", f"--train_file={train}", f"--albert_config_file={config_file}",
                    f"--spm_model_file={SP8K_MODEL}", f"--output_dir={tmp_path / 'run'}", "--do_train",
                    "--max_seq_length=64", "--max_query_length=16", "--train_batch_size=2",
                    *(["--dropout_prob=0.2"] if problem == "v1_dropout" else []))
  assert result.returncode == 2
  message = result.stderr.strip().splitlines()[-1]
  expected = {"malformed": [str(train), "line 1"], "empty": [str(train), "empty"],
              "v1_dropout": ["--dropout_prob", "SQuAD v1's span head has no dropout"],
              "v2_file": [f"error: {train}: question 5-6 has 0 answers", "SQuAD v2.0",
                          "run_squad_v2 (albert-run-squad-v2"]}[problem]
  assert all(part in message for part in expected), message
  assert not (tmp_path / "run").exists()


def test_export_of_a_squad_run_reads_as_the_run_did(tmp_path):
  """tools/export_saved_model.py on a run directory: the run's reading settings and v2 threshold."""
  (tmp_path / "task.json").write_text(json.dumps({"task": "squad_v2", "max_query_length": 10, "doc_stride": 7,
                                                  "max_answer_length": 5, "n_best_size": 3}))
  (tmp_path / run_directory.BEST_CHECKPOINT_INFO).write_text(json.dumps({"global_step": 4, "f1": 50.0,
                                                                         "null_score_diff_threshold": -1.5}))
  prefix = str(tmp_path / run_directory.BEST_CHECKPOINT)
  assert squad_serving.run_serving_options(prefix) == QuestionAnsweringOptions(10, 7, 5, 3, -1.5)
  (tmp_path / "task.json").write_text(json.dumps({"task": "mrpc", "label_list": ["0", "1"]}))
  assert squad_serving.run_serving_options(prefix) is None
