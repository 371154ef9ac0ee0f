"""KLUE-RE (`run_classifier --task_name=klue-re`): KLUE's files read and checked record by record, the entities
marked in real Korean sentences, KLUE's two metrics against scikit-learn on the predictions the tool wrote, the
served text (marked, or raw with the entities' spans) and the Hugging Face export against those predictions.

The RE data is not on this machine: the files are built, in KLUE-RE's layout with every field, from KLUE-NER's
real dev sentences and their human entity spans (`benchmarks/benchmark_klue_re.py`); the relation labels are
derived from the two entities' types and distance, not human.
"""

import importlib.util
import json
import os
import re
import shutil
import warnings

import numpy as np
import pytest
import tensorflow as tf
from sklearn import metrics as sklearn_metrics

from albert_tf import files
from albert_tf.errors import TaskError
from albert_tf.tasks.classification import metrics as classification_metrics
from albert_tf.tasks.classification import relation_extraction
from albert_tf.tasks.classification import serving as classifier_serving
from albert_tf.tasks.classification.catalogue import KNOWN_TASKS, get_task
from albert_tf.tasks.classification.relation_extraction import Entity, mark_entities
from albert_tf.text.tokenizer import SentencePieceTokenizer
from albert_tf.training import finetuning_objectives, metrics, run_directory
from tests.conftest import REPO, SHARED, SP8K_MODEL, python_pack, requires_shared, run_tool, tiny_config
from tests.conftest import eval_results

NER_DEV = os.path.join(SHARED, "klue", "klue-ner-v1.1_dev.tsv")
RELATION_LIST = os.path.join(SHARED, "klue", "relation_list.json")
pytestmark = [requires_shared(SP8K_MODEL), requires_shared(NER_DEV), requires_shared(RELATION_LIST)]
SEQ = 64
TRAIN_FILE = "klue-re-v1.1/klue-re-v1.1_train.json"
DEV_FILE = "klue-re-v1.1/klue-re-v1.1_dev.json"


def _benchmark():
  spec = importlib.util.spec_from_file_location("benchmark_klue_re",
                                                os.path.join(REPO, "benchmarks", "benchmark_klue_re.py"))
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  return module


BENCHMARK = _benchmark()
RELATIONS = tuple(json.load(open(RELATION_LIST, encoding="utf-8"))["relations"])


def write_data(root, train_sentences, dev_sentences):
  """KLUE's download in miniature under `root`: klue-re-v1.1/ with its two files and relation_list.json; one
  no_relation pair in 4 kept, so that a tiny model sees enough relations in seconds."""
  return BENCHMARK.write_klue_re(str(root / "klue-re-v1.1"), train_sentences, dev_sentences, no_relation_every=4)


@pytest.fixture(scope="module")
def sentences():
  return BENCHMARK.ner_sentences(NER_DEV)


@pytest.fixture(scope="module")
def data(tmp_path_factory, sentences):
  """Train: the pairs of NER sentences 0-79; dev (and test): those of sentences 0-19, seen in training, so that a
  tiny model trained for seconds shows it learns the derived relations (the held-out figure is the benchmark's)."""
  root = tmp_path_factory.mktemp("klue")
  records = write_data(root, sentences[:80], sentences[:20])
  return root, records


def config_file(folder):
  path = folder / "albert_config.json"
  # One layer: half the graph to trace and run; it still learns the derived relations (micro F1 0.50 on dev).
  tiny_config(vocab_size=8000, hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64,
              max_position_embeddings=SEQ).to_json_file(str(path))
  return path


def classifier_flags(data_dir, output_dir, *extra):
  return ("--task_name=klue-re", f"--data_dir={data_dir}", f"--output_dir={output_dir}",
          f"--albert_config_file={config_file(output_dir.parent)}", f"--spm_model_file={SP8K_MODEL}",
          f"--max_seq_length={SEQ}", *extra)


@pytest.fixture(scope="module")
def trained(data, tmp_path_factory):
  """One run of the tool: trained, its one checkpoint scored on dev, predictions, a SavedModel, an HF folder (the
  model alone: the test packs the texts with our tokenizer, so the HF tokenizer files and export_hf's measure of
  their parity over the 8000 pieces, which no assertion reads, are left out)."""
  root, _ = data
  folder = tmp_path_factory.mktemp("re_run")
  output_dir = folder / "run"
  result = run_tool("run_classifier", *classifier_flags(
      root, output_dir, "--do_train", "--do_eval", "--do_predict", "--train_batch_size=16", "--eval_batch_size=16",
      "--predict_batch_size=16", "--train_step=300", "--save_checkpoints_steps=300", "--iterations_per_loop=300",
      "--learning_rate=1e-3", "--warmup_step=10", "--dropout_prob=0", f"--export_dir={folder / 'serving'}"))
  assert result.returncode == 0, result.stderr[-3000:]
  result = run_tool("export_hf", f"--albert_config_file={output_dir / 'albert_config.json'}",
                    f"--checkpoint={output_dir / run_directory.BEST_CHECKPOINT}", f"--output_dir={folder / 'hf'}")
  assert result.returncode == 0, result.stderr[-3000:]
  return folder


def written_predictions(output_dir):
  """(guids, predicted relations, probabilities) of the tool's submit_results.tsv and test_results.tsv."""
  with open(output_dir / finetuning_objectives.SUBMIT_RESULTS, encoding="utf-8") as reader:
    rows = [line.rstrip("\n").split("\t") for line in reader][1:]
  probabilities = np.loadtxt(output_dir / finetuning_objectives.TEST_RESULTS, delimiter="\t", ndmin=2)
  return [row[0] for row in rows], [row[1] for row in rows], probabilities


def sklearn_scores(probabilities, labels):
  """KLUE's two figures as its baseline computes them, divided by 100: micro F1 of the argmax over the relations
  other than no_relation, and the mean over all relations of auc(recall, precision) of precision_recall_curve."""
  positive = [index for index, name in enumerate(RELATIONS) if name != "no_relation"]
  micro_f1 = sklearn_metrics.f1_score(labels, probabilities.argmax(1), average="micro", labels=positive)
  one_hot = np.eye(len(RELATIONS))[labels]
  areas = []
  with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # relations absent from the labels: "No positive class found in y_true"
    for index in range(len(RELATIONS)):
      precision, recall, _ = sklearn_metrics.precision_recall_curve(one_hot[:, index], probabilities[:, index])
      areas.append(sklearn_metrics.auc(recall, precision))
  return {"micro_f1": micro_f1, "auprc": float(np.mean(areas))}


# Names, files, markers.


def test_klue_re_is_known_and_scored_by_klues_metrics():
  task = get_task("KLUE-RE")
  assert "klue-re" in KNOWN_TASKS and task.metric_names == ("micro_f1", "auprc") and task.primary_metric == "micro_f1"
  assert not task.is_pair and not task.is_regression and task.markers == "typed_punct"
  assert get_task("klue-re") is not task  # the labels are read with the data: a task a run
  with pytest.raises(TaskError, match="entity_markers .* is for klue-re, not 'klue-nli'"):
    get_task("klue-nli", entity_markers="typed_punct")
  with pytest.raises(TaskError, match="Unknown entity markers 'tags'"):
    get_task("klue-re", entity_markers="tags")


@pytest.mark.parametrize("where", ["local", "bucket"])
def test_records_read_as_marked_sentences_with_the_real_relation_list(data, where, bucket):
  local, records = data
  root = str(local)
  if where == "bucket":  # --data_dir=gs://...
    root = f"{bucket}/klue"
    with files.staged_folder(root) as staging:
      shutil.copytree(local, staging, dirs_exist_ok=True)
  for markers in relation_extraction.ENTITY_MARKERS:
    task = get_task("klue-re", entity_markers=markers)
    for split, file_split in (("train", "train"), ("dev", "dev"), ("test", "dev")):
      examples = task.read_examples(root, split)
      assert task.label_list == RELATIONS and len(RELATIONS) == 30
      expected = []
      for record in records[file_split]:
        subject, obj = (Entity(**{"word": e["word"], "start": e["start_idx"], "end": e["end_idx"], "type": e["type"]})
                        for e in (record["subject_entity"], record["object_entity"]))
        expected.append((record["guid"], mark_entities(record["sentence"], subject, obj, markers), record["label"]))
      assert [(e.guid, e.text_a, e.label) for e in examples] == expected
      assert all(e.text_b is None for e in examples)
    # The folder itself, and one file read as the split (relation_list.json beside it), read the same.
    assert get_task("klue-re", entity_markers=markers).read_examples(f"{root}/klue-re-v1.1", "dev") == examples
    assert get_task("klue-re", entity_markers=markers).read_examples(f"{root}/{DEV_FILE}", "train") == examples
  record = json.loads((local / TRAIN_FILE).read_text(encoding="utf-8"))[0]
  assert set(record) == {"guid", "sentence", "subject_entity", "object_entity", "label", "source"}
  assert set(record["subject_entity"]) == {"word", "start_idx", "end_idx", "type"}
  assert {r["label"] for r in records["train"]} > {"no_relation", "per:colleagues"}


def test_markers_on_a_real_sentence_nested_and_in_either_order(sentences):
  guid, sentence, _ = sentences[0]
  assert sentence.startswith("경찰은 또 성매매 알선 자금을 관리한 박씨의 딸(32)과")
  police, park = Entity("경찰", 0, 1, "ORG"), Entity("박", 21, 21, "PER")
  assert mark_entities(sentence, park, police).startswith(
      "# ^ ORG ^ 경찰 #은 또 성매매 알선 자금을 관리한 & * PER * 박 &씨의 딸")
  assert mark_entities(sentence, police, park, "added_pieces").startswith("⟦경찰⟧은 또 성매매 알선 자금을 관리한 ⟪박⟫씨의")
  # A subject inside the object (KLUE-RE has such pairs): the subject's markers inside the object's.
  text = "서울대학교 병원에서"
  assert mark_entities(text, Entity("서울대학교", 0, 4, "ORG"), Entity("서울대학교 병원", 0, 7, "ORG"),
                       "added_pieces") == "⟪⟦서울대학교⟧ 병원⟫에서"
  assert mark_entities(text, Entity("병원", 6, 7, "ORG"), Entity("서울대학교 병원", 0, 7, "ORG"),
                       "added_pieces") == "⟪서울대학교 ⟦병원⟧⟫에서"


def entity_inputs(records):
  """`classify_relation`'s inputs for KLUE-RE records."""
  inputs = {"sentence": tf.constant([record["sentence"] for record in records])}
  for role in ("subject", "object"):
    entities = [record[f"{role}_entity"] for record in records]
    inputs[f"{role}_start"] = tf.constant([entity["start_idx"] for entity in entities], tf.int32)
    inputs[f"{role}_end"] = tf.constant([entity["end_idx"] for entity in entities], tf.int32)
    inputs[f"{role}_type"] = tf.constant([entity["type"] for entity in entities])
  return inputs


def test_the_graph_marks_entities_as_the_python_marking(data):
  _, records = data
  # Nested spans (a subject inside the object, at its start or end), and adjacent ones (one ends where the
  # other starts: the first's closing marker comes before the second's opening one).
  nested = [{"sentence": "서울대학교 병원에서", "subject_entity": {"start_idx": s, "end_idx": e, "type": "ORG"},
             "object_entity": {"start_idx": 0, "end_idx": 7, "type": "ORG"}} for s, e in ((0, 4), (6, 7))]
  nested.append({"sentence": "서울대학교병원에서", "subject_entity": {"start_idx": 0, "end_idx": 4, "type": "ORG"},
                 "object_entity": {"start_idx": 5, "end_idx": 6, "type": "ORG"}})
  nested += [dict(record, subject_entity=record["object_entity"], object_entity=record["subject_entity"])
             for record in nested]
  checked = records["train"] + records["dev"] + nested
  for markers in relation_extraction.ENTITY_MARKERS:
    marked = classifier_serving.mark_entities(*entity_inputs(checked).values(), markers)
    expected = [mark_entities(record["sentence"],
                              *(Entity(record["sentence"][e["start_idx"]:e["end_idx"] + 1], e["start_idx"],
                                       e["end_idx"], e["type"])
                                for e in (record["subject_entity"], record["object_entity"])), markers)
                for record in checked]
    assert [text.decode("utf-8") for text in marked.numpy()] == expected
  for subject_span, message in (((3, 2), "each subject span must lie in its sentence"),
                                ((0, 10), "each subject span must lie in its sentence"),
                                ((0, 7), "the subject and the object must be different spans")):
    inputs = entity_inputs(nested[:1])
    inputs["subject_start"], inputs["subject_end"] = (tf.constant([value]) for value in subject_span)
    with pytest.raises(tf.errors.InvalidArgumentError, match=message):
      classifier_serving.mark_entities(*inputs.values(), "typed_punct")


def test_the_typed_markers_need_no_new_piece_and_the_added_ones_are_refused_without_them(data, tmp_path):
  tokenizer = SentencePieceTokenizer(SP8K_MODEL)
  pieces = tokenizer.tokenize("& * PER * 이순신 &은 # ^ LOC ^ 서울 #에")
  assert tokenizer.unk_id not in tokenizer.convert_tokens_to_ids(pieces)
  assert tokenizer.unk_id in tokenizer.encode("@")  # the paper's subject marker, not in this vocabulary
  vocabulary = tokenizer.convert_ids_to_tokens(range(tokenizer.vocab_size))
  get_task("klue-re").check_vocabulary(vocabulary)
  with pytest.raises(TaskError, match="no piece &, which --entity_markers=typed_punct writes around the entities"):
    get_task("klue-re").check_vocabulary([piece for piece in vocabulary if piece.strip("\u2581") != "&"])
  get_task("klue-re", entity_markers="added_pieces").check_vocabulary(vocabulary + ["⟦", "⟧", "⟪", "⟫"])
  root, _ = data
  result = run_tool("run_classifier", *classifier_flags(root, tmp_path / "run", "--entity_markers=added_pieces",
                                                        "--do_train", "--train_step=1"))
  assert result.returncode == 2 and "Traceback" not in result.stderr
  assert result.stderr.splitlines()[-1].startswith(
      "error: The vocabulary has no piece ⟦ ⟧ ⟪ ⟫, which --entity_markers=added_pieces needs: add ⟦ ⟧ ⟪ ⟫ with "
      "tools/extend_vocab.py --new_pieces_file")
  assert not (tmp_path / "run").exists()


# The metrics.


def test_micro_f1_and_auprc_are_sklearns_with_ties_and_absent_classes():
  task = get_task("klue-re")
  task.label_list = relation_extraction.read_relation_list(RELATION_LIST)  # as reading a split sets them
  rng = np.random.default_rng(5)
  for case in range(40):
    labels = rng.integers(0, 12, 60)  # relations 12-29 absent: their area is sklearn's 0.5
    labels[:30] = 0  # mostly no_relation, as KLUE-RE
    logits = rng.normal(0, 2, (60, 30)).round(1 if case % 2 else 6)  # rounded: tied probabilities
    logits[:20, :] = logits[0]  # the same outputs for 20 examples
    probabilities = metrics.class_probabilities(logits)
    expected = sklearn_scores(probabilities, labels)
    assert classification_metrics.compute_metrics(task, logits, labels) == pytest.approx(expected, abs=1e-12)
  assert metrics.micro_f1([0, 0], [0, 0], range(1, 30)) == 0.0  # only no_relation: nothing to score
  # One class: scores 0.9 (positive), 0.5 (negative), 0.5 (positive): points (0, 1), (1/2, 1), (1, 2/3).
  assert metrics.precision_recall_auc([0.9, 0.5, 0.5], [1, 0, 1]) == pytest.approx(0.5 + 0.5 * (1 + 2 / 3) / 2)
  with pytest.raises(ValueError, match="auprc takes class logits"):
    classification_metrics.compute_metrics(task, np.zeros(3, int), [0, 1, 2])


# The tool, end to end.


def test_tool_scores_its_own_predictions_as_sklearn_and_beats_a_constant_predictor(data, trained):
  root, records = data
  output_dir = trained / "run"
  guids, predicted, probabilities = written_predictions(output_dir)
  assert guids == [record["guid"] for record in records["dev"]]  # the test split is the dev file
  assert predicted == [RELATIONS[index] for index in probabilities.argmax(1)]
  labels = np.array([RELATIONS.index(record["label"]) for record in records["dev"]])
  figures, expected = eval_results(output_dir), sklearn_scores(probabilities, labels)
  assert figures["eval_examples"] == len(labels) and figures["global_step"] == 300
  for name in ("micro_f1", "auprc"):
    assert figures[name] == pytest.approx(expected[name], abs=1e-6), name
  assert run_directory.read_best_info(str(output_dir))["micro_f1"] == pytest.approx(figures["micro_f1"], abs=1e-9)
  # Always no_relation scores a micro F1 of 0 (it predicts no relation to score). (Its AUPRC, the train priors
  # tied across examples, is 0.5 + 1 / 60 whatever the data: sklearn's straight line from (0, 1) to the one point
  # (1, prevalence) gives a constant (1 + prevalence) / 2 per class; the benchmark reports it beside the model's.)
  constant = BENCHMARK.trivial_figures(records, list(RELATIONS))["always no_relation"]
  assert constant["micro_f1"] == 0.0 and figures["micro_f1"] > 0.3
  assert constant["auprc"] == pytest.approx(0.5 + 1 / 60)
  info = json.loads((output_dir / "task.json").read_text(encoding="utf-8"))
  assert info["task"] == "klue-re" and tuple(info["label_list"]) == RELATIONS


def test_served_marked_text_and_the_hugging_face_export_give_the_tools_predictions(data, trained):
  import torch
  import transformers
  root, records = data
  _, _, probabilities = written_predictions(trained / "run")
  texts = [example.text_a for example in get_task("klue-re").read_examples(str(root), "test")]
  [version] = os.listdir(trained / "serving")
  served = tf.saved_model.load(str(trained / "serving" / version)).signatures["classify_text"](
      text_a=tf.constant(texts))
  np.testing.assert_allclose(served["probabilities"].numpy(), probabilities, atol=1e-5)
  assert [label.decode() for label in served["labels"].numpy()] == [RELATIONS[i] for i in probabilities.argmax(1)]
  # The raw sentence and the entities' spans, marked in the graph.
  related = tf.saved_model.load(str(trained / "serving" / version)).signatures["classify_relation"](
      **entity_inputs(records["dev"]))
  np.testing.assert_allclose(related["probabilities"].numpy(), probabilities, atol=1e-5)

  hf_model = transformers.AlbertForSequenceClassification.from_pretrained(str(trained / "hf")).eval()
  assert [hf_model.config.id2label[index] for index in range(30)] == list(RELATIONS)
  tokenizer = SentencePieceTokenizer(SP8K_MODEL)
  ids, mask, types = (torch.tensor(column) for column in zip(*(python_pack(tokenizer, text, None, SEQ)
                                                                 for text in texts)))
  with torch.no_grad():
    logits = hf_model(input_ids=ids, attention_mask=mask, token_type_ids=types).logits
  np.testing.assert_allclose(torch.softmax(logits, -1).numpy(), probabilities, atol=1e-5)


# Bad input: one error line naming the file and the record, status 2, nothing written.


def edit(record_index, change):
  def spoil(records):
    change(records[record_index])
  return spoil


BAD_RECORDS = {
    "span-outside": (TRAIN_FILE, edit(3, lambda r: r["object_entity"].update(end_idx=len(r["sentence"]))),
                     ", record 3: object_entity spans characters"),
    "start-after-end": (DEV_FILE, edit(2, lambda r: r["subject_entity"].update(
        start_idx=r["subject_entity"]["end_idx"] + 1)), ", record 2: subject_entity spans characters"),
    "word-not-sentence": (TRAIN_FILE, edit(5, lambda r: r["subject_entity"].update(word="이순신")),
                          ", record 5: subject_entity.word is '이순신' but the sentence holds"),
    "unknown-label": (DEV_FILE, edit(1, lambda r: r.update(label="per:hobby")),
                      ", record 1: label 'per:hobby' is not one of the 30 relations of relation_list.json."),
    "same-span": (TRAIN_FILE, edit(0, lambda r: r.update(object_entity=dict(r["subject_entity"]))),
                  ", record 0: the subject and the object are the same span"),
    "index-text": (DEV_FILE, edit(4, lambda r: r["object_entity"].update(start_idx="3")),
                   ", record 4: object_entity.start_idx is '3', not an integer."),
    "no-entity": (TRAIN_FILE, edit(7, lambda r: r.pop("subject_entity")),
                  ", record 7: no field 'subject_entity'"),
    "entity-string": (DEV_FILE, edit(6, lambda r: r.update(guid="klue-re-x", object_entity="서울")),
                      ", record 6 (klue-re-x): object_entity is '서울', not an object: it must be one with word, "
                      "start_idx, end_idx and type."),
}


@pytest.mark.parametrize("case", sorted(BAD_RECORDS))
def test_bad_record_is_one_error_naming_file_and_record(data, tmp_path, case):
  relative, spoil, message = BAD_RECORDS[case]
  shutil.copytree(data[0], tmp_path / "data")
  path = tmp_path / "data" / relative
  records = json.loads(path.read_text(encoding="utf-8"))
  spoil(records)
  path.write_text(json.dumps(records, ensure_ascii=False), encoding="utf-8")
  result = run_tool("run_classifier", *classifier_flags(tmp_path / "data", tmp_path / "run", "--do_train",
                                                        "--do_eval", "--train_step=1"))
  assert result.returncode == 2 and "Traceback" not in result.stderr
  last = result.stderr.splitlines()[-1]
  assert re.match(re.escape(f"error: {path}{message}"), last), last
  assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("text, message", [
    ('[{"guid": "a"}, 3]', ", record 1: a JSON number, not an object."),
    ('[{"guid": "a"},\n', ", line 2: not valid JSON"),
    ('{"guid": "a"}', ": a JSON object; the task reads a JSON array of records"),
])
def test_a_file_that_is_not_an_array_of_records_is_one_error_naming_it(tmp_path, text, message):
  path = tmp_path / "klue-re-v1.1_train.json"
  path.write_text(text, encoding="utf-8")
  with pytest.raises(TaskError, match=re.escape(f"{path}{message}")):
    relation_extraction.read_relation_file(str(path), ("no_relation",), "typed_punct")


@pytest.mark.parametrize("listing, message", [
    (None, " not found: KLUE-RE reads its labels from relation_list.json beside its data files"),
    ({"relation": list(RELATIONS)}, ": not KLUE's layout"),
    ({"relations": list(RELATIONS[1:])}, ": no 'no_relation' among the relations"),
    ({"relations": list(RELATIONS) + ["per:title"]}, ": relations listed twice: ['per:title']."),
])
def test_bad_relation_list_is_one_error_naming_it(data, tmp_path, listing, message):
  shutil.copytree(data[0], tmp_path / "data")
  path = tmp_path / "data" / "klue-re-v1.1" / "relation_list.json"
  if listing is None:
    path.unlink()
  else:
    path.write_text(json.dumps(listing), encoding="utf-8")
  result = run_tool("run_classifier", *classifier_flags(tmp_path / "data", tmp_path / "run", "--do_train",
                                                        "--train_step=1"))
  assert result.returncode == 2 and result.stderr.splitlines()[-1].startswith(f"error: {path}{message}")
  assert not (tmp_path / "run").exists()


def test_a_later_run_of_the_directory_must_mark_entities_as_training_did(data, trained):
  info = json.loads((trained / "run" / "task.json").read_text(encoding="utf-8"))
  assert info["entity_markers"] == "typed_punct"
  result = run_tool("run_classifier", *classifier_flags(data[0], trained / "run", "--do_eval",
                                                        "--entity_markers=added_pieces"))
  assert result.returncode == 2 and result.stderr.splitlines()[-1] == (
      f"error: --output_dir {trained / 'run'} was trained with --entity_markers=typed_punct; this run's is "
      "--entity_markers=added_pieces. Use the same, or a new --output_dir.")
