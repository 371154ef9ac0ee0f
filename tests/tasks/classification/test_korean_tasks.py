"""Korean benchmarks by name: KLUE's JSON files, KorSTS', KorNLI's and NSMC's TSV files in their official layouts,
read and checked before training, trained, and scored as scikit-learn and SciPy score them."""

import json
import os
import re
import shutil

import numpy as np
import pytest
from scipy import stats
from sklearn import metrics as sklearn_metrics

import albert_tf
from albert_tf import files
from albert_tf.data import task_readers
from albert_tf.data.task_readers import Example
from albert_tf.errors import TaskError
from albert_tf.tasks.classification import metrics as classification_metrics
from albert_tf.tasks.classification.catalogue import KNOWN_TASKS, KOREAN_NLI, YNAT_TOPICS, get_task
from albert_tf.tasks.classification.objective import ClassifierObjective
from albert_tf.tasks.similarity import objective as similarity_objective
from albert_tf.training import distribution, finetuning, metrics, run_directory
from albert_tf.training import finetuning_objectives
from tests.conftest import SHARED, SP8K_MODEL, corpus_lines, requires_shared, run_tool
from tests.conftest import read_tsv, eval_results

MESSAGES = os.path.join(SHARED, "parallel", "en_ko_messages.tsv")
pytestmark = [requires_shared(SP8K_MODEL), requires_shared(MESSAGES),
              requires_shared(os.path.join(SHARED, "corpus", "ko_law.txt")),
              requires_shared(os.path.join(SHARED, "corpus", "ko_libreoffice_help.txt"))]
ONE_DEVICE = distribution.get_strategy("one_device")
SEQ = 32
CONFIG = dict(vocab_size=8000, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
              embedding_size=16, max_position_embeddings=SEQ)
KOREAN_TASKS = ("klue-ynat", "klue-nli", "klue-sts", "korsts", "kornli", "nsmc")
# Where each task's data_dir points: KLUE's and KorNLUDatasets' downloads hold a folder per task (the parent is
# given, as Google's --data_dir for GLUE); NSMC's files lie in its folder.
DATA_DIRS = {"klue-ynat": "klue", "klue-nli": "klue", "klue-sts": "klue", "korsts": "KorNLUDatasets",
             "kornli": "KorNLUDatasets", "nsmc": "nsmc"}


def korean_sentences():
  """Real Korean sentences without tabs: LibreOffice's help, Korea's laws, and Debian's Korean messages."""
  with open(MESSAGES, encoding="utf-8") as reader:
    messages = [line.rstrip("\n").split("\t")[1] for line in reader]
  texts = corpus_lines("ko_libreoffice_help.txt", 60) + corpus_lines("ko_law.txt", 60) + [
      text for text in messages if len(text) > 15][:60]
  assert len(set(texts)) > 150 and not any("\t" in text for text in texts)
  return texts


def write_json(path, records):
  """A KLUE file: one JSON array of records, indented as KLUE's are."""
  path.parent.mkdir(parents=True, exist_ok=True)
  path.write_text(json.dumps(records, ensure_ascii=False, indent=4), encoding="utf-8")


def write_tsv(path, header, rows):
  path.parent.mkdir(parents=True, exist_ok=True)
  path.write_text("".join("\t".join(str(field) for field in row) + "\n" for row in [header] + rows),
                  encoding="utf-8")


def klue_records(task, split, texts, rng, count):
  """`count` records of a KLUE task in its v1.1 layout, labels drawn from `rng`."""
  prefix = {"klue-ynat": "ynat-v1", "klue-nli": "klue-nli-v1", "klue-sts": "klue-sts-v1"}[task]
  records = []
  for index in range(count):
    record = {"guid": f"{prefix}_{split}_{index:05d}"}
    if task == "klue-ynat":
      # Mostly 경제 (economy), which a few steps learn to predict; the dev file holds 4 of the 7 topics, so that
      # macro F1 averages over classes in neither the labels nor the predictions.
      topic = YNAT_TOPICS[1] if index % 3 else rng.choice(YNAT_TOPICS if split == "train" else YNAT_TOPICS[:4])
      record.update(title=texts.pop(), label=str(topic),
                    url=f"https://news.naver.com/main/read.nhn?mode=LS2D&oid=001&aid=00085{index:05d}",
                    date="2016.06.30. 오전 10:36")
    elif task == "klue-nli":
      record.update(source="policy", premise=texts.pop(), hypothesis=texts.pop(),
                    gold_label=str(rng.choice(KOREAN_NLI)), author="neutral")
    else:
      real = float(rng.uniform(0.0, 5.0))
      label = round(real, 1)
      record.update(source="airbnb-rtt", sentence1=texts.pop(), sentence2=texts.pop(),
                    labels={"label": label, "real-label": real, "binary-label": int(label >= 3.0)})
    records.append(record)
  return records


def write_korean_benchmarks(root):
  """Every Korean task's files under their official names and folders, from real Korean sentences; dev and test
  hold the same rows (KLUE's and NSMC's are one file). Returns {task: data_dir}."""
  texts = korean_sentences()
  rng = np.random.default_rng(2021)
  for task, folder in (("klue-ynat", "ynat-v1.1"), ("klue-nli", "klue-nli-v1.1"), ("klue-sts", "klue-sts-v1.1")):
    for split, count in (("train", 10), ("dev", 8)):
      write_json(root / "klue" / folder / f"{folder}_{split}.json", klue_records(task, split, texts, rng, count))

  sts_header = ["genre", "filename", "year", "id", "score", "sentence1", "sentence2"]
  sts_rows = {split: [["main-captions", "MSRvid", "2012test", f"{index:04d}", f"{rng.uniform(0, 5):.3f}",
                       texts.pop(), texts.pop()] for index in range(count)]
              for split, count in (("train", 8), ("dev", 6))}
  for name, split in (("sts-train.tsv", "train"), ("sts-dev.tsv", "dev"), ("sts-test.tsv", "dev")):
    write_tsv(root / "KorNLUDatasets" / "KorSTS" / name, sts_header, sts_rows[split])

  def nli_rows(count):
    return [[texts.pop(), texts.pop(), str(rng.choice(KOREAN_NLI))] for _ in range(count)]

  nli_header = ["sentence1", "sentence2", "gold_label"]
  write_tsv(root / "KorNLUDatasets" / "KorNLI" / "multinli.train.ko.tsv", nli_header, nli_rows(5))
  write_tsv(root / "KorNLUDatasets" / "KorNLI" / "snli_1.0_train.ko.tsv", nli_header, nli_rows(4))
  dev = nli_rows(6)
  write_tsv(root / "KorNLUDatasets" / "KorNLI" / "xnli.dev.ko.tsv", nli_header, dev)
  write_tsv(root / "KorNLUDatasets" / "KorNLI" / "xnli.test.ko.tsv", nli_header, dev)

  for name, count in (("ratings_train.txt", 10), ("ratings_test.txt", 6)):
    # Real NSMC has a few reviews without text: the second row of each file is one.
    rows = [[str(rng.integers(1_000_000, 10_000_000)), "" if index == 1 else texts.pop(), int(rng.integers(0, 2))]
            for index in range(count)]
    write_tsv(root / "nsmc" / name, ["id", "document", "label"], rows)
  return {task: root / folder for task, folder in DATA_DIRS.items()}


@pytest.fixture
def korean_dirs(tmp_path):
  return write_korean_benchmarks(tmp_path / "data")


def options(data_dir, output_dir, **changes):
  values = dict(data_dir=str(data_dir), output_dir=str(output_dir), albert_config=albert_tf.AlbertConfig(**CONFIG),
                spm_model_file=SP8K_MODEL, max_seq_length=SEQ, do_train=True, do_eval=True, do_predict=True,
                train_batch_size=2, eval_batch_size=2, predict_batch_size=2, learning_rate=5e-2, dropout_prob=0.0,
                train_step=3, save_checkpoints_steps=3, iterations_per_loop=3)
  values.update(changes)
  return finetuning.FineTuningOptions(**values)


# Names, labels, metrics.


def test_korean_tasks_are_known_by_name_with_their_labels_and_metrics():
  assert set(KOREAN_TASKS) <= set(KNOWN_TASKS) and KNOWN_TASKS[-1] == "tsv"
  for name in KOREAN_TASKS:
    assert get_task(name.upper()) is get_task(name)  # case-insensitive, as the GLUE names
    task = get_task(name)
    assert task.primary_metric in task.metric_names and set(task.metric_names) <= set(classification_metrics.METRICS)
  expected = {  # metric names, primary, labels, pair
      "klue-ynat": (("macro_f1", "accuracy"), "macro_f1", YNAT_TOPICS, False),
      "klue-nli": (("accuracy",), "accuracy", ("entailment", "neutral", "contradiction"), True),
      "klue-sts": (("pearson", "spearman", "binary_f1"), "pearson", None, True),
      "korsts": (("pearson", "spearman"), "spearman", None, True),
      "kornli": (("accuracy",), "accuracy", ("entailment", "neutral", "contradiction"), True),
      "nsmc": (("accuracy",), "accuracy", ("0", "1"), False),
  }
  for name, values in expected.items():
    task = get_task(name)
    assert (task.metric_names, task.primary_metric, task.label_list, task.is_pair) == values, name
    assert task.is_regression == (task.label_list is None)
  assert YNAT_TOPICS == ("IT과학", "경제", "사회", "생활문화", "세계", "스포츠", "정치")
  assert get_task("mrpc").folder == "MRPC"


def test_macro_f1_is_sklearns_over_all_the_tasks_classes():
  rng = np.random.default_rng(3)
  for _ in range(20):
    labels, predictions = rng.integers(0, 5, 40), rng.integers(0, 5, 40)  # classes 5 and 6 of 7 in neither
    predictions[:20] = labels[:20]
    assert metrics.macro_f1(predictions, labels, 7) == pytest.approx(
        sklearn_metrics.f1_score(labels, predictions, average="macro", labels=range(7), zero_division=0), abs=1e-12)
    assert metrics.macro_f1(predictions, labels) == pytest.approx(  # without the count: the classes present
        sklearn_metrics.f1_score(labels, predictions, average="macro", zero_division=0), abs=1e-12)
  # Class 0: F1 2/3; class 1: 2/3; class 2 absent from both: 0.
  assert metrics.macro_f1([0, 1, 1], [0, 0, 1], 3) == pytest.approx((2 / 3 + 2 / 3 + 0) / 3)
  with pytest.raises(ValueError, match="over 3 classes takes class ids 0 .. 2; the labels hold"):
    metrics.macro_f1([0, 1], [0, 3], 3)
  scores = np.eye(7)[[0, 1, 1, 3]] + 0.1  # argmax 0, 1, 1, 3
  assert classification_metrics.compute_metrics(get_task("klue-ynat"), scores, [0, 1, 2, 3]) == pytest.approx(
      {"macro_f1": (1 + 2 / 3 + 0 + 1) / 7, "accuracy": 0.75})


def test_sts_binary_f1_is_klues_at_a_score_of_3():
  assert classification_metrics.KLUE_STS_BINARY_THRESHOLD == 3.0
  rng = np.random.default_rng(4)
  labels = np.round(rng.uniform(0, 5, 200), 1)
  predictions = labels + rng.normal(0, 1.0, 200)
  predictions[:10], labels[10:20] = 3.0, 3.0  # exactly at the threshold: positive
  expected = sklearn_metrics.f1_score(labels >= 3.0, predictions >= 3.0)
  assert 0.5 < expected < 1
  assert classification_metrics.sts_binary_f1(predictions, labels) == pytest.approx(expected, abs=1e-12)
  assert classification_metrics.sts_binary_f1([2.99, 3.0], [3.0, 3.0]) == pytest.approx(2 / 3)
  assert classification_metrics.sts_binary_f1([1.0, 2.0], [0.5, 2.5]) == 0.0  # no positives at all
  scored = classification_metrics.compute_metrics(get_task("klue-sts"), predictions[:, None], labels)
  assert scored == pytest.approx({"pearson": stats.pearsonr(predictions, labels)[0],
                                  "spearman": stats.spearmanr(predictions, labels)[0], "binary_f1": expected})


# The official layouts, read.


@pytest.mark.parametrize("where", ["local", "bucket"])
def test_klue_json_files_are_read_by_guid_with_test_reading_dev(korean_dirs, where, bucket):
  local = korean_dirs["klue-ynat"]
  root = str(local)
  if where == "bucket":  # --data_dir=gs://...
    root = f"{bucket}/klue"
    with files.staged_folder(root) as staging:
      shutil.copytree(local, staging, dirs_exist_ok=True)
  for name, folder, fields in (("klue-ynat", "ynat-v1.1", ("title", None, "label")),
                               ("klue-nli", "klue-nli-v1.1", ("premise", "hypothesis", "gold_label")),
                               ("klue-sts", "klue-sts-v1.1", ("sentence1", "sentence2", "labels"))):
    task = get_task(name)
    splits = {split: task.read_examples(root, split) for split in task_readers.SPLITS}
    for split, file_split in (("train", "train"), ("dev", "dev"), ("test", "dev")):
      records = json.loads((local / folder / f"{folder}_{file_split}.json").read_text(encoding="utf-8"))
      text_a, text_b, label = fields
      assert splits[split] == [Example(record["guid"], record[text_a], record[text_b] if text_b else None,
                                       record[label]["label"] if name == "klue-sts" else record[label])
                               for record in records], (name, split)
      # The task's own folder, and one file read as the split, give the same examples.
      assert task.read_examples(f"{root}/{folder}", split) == splits[split]
      assert task.read_examples(f"{root}/{folder}/{folder}_{file_split}.json", split) == splits[split]
    assert splits["test"] == splits["dev"] and len(splits["train"]) == 10 and len(splits["dev"]) == 8
  sts = get_task("klue-sts").read_examples(root, "train")
  assert all(isinstance(example.label, float) and 0 <= example.label <= 5 for example in sts)
  assert sts[0].guid == "klue-sts-v1_train_00000"


def test_korsts_kornli_and_nsmc_tsv_files(korean_dirs):
  korsts_dir = korean_dirs["korsts"] / "KorSTS"
  rows = read_tsv(korsts_dir / "sts-train.tsv")
  assert rows[0] == ["genre", "filename", "year", "id", "score", "sentence1", "sentence2"]
  korsts = get_task("korsts")
  assert korsts.read_examples(str(korean_dirs["korsts"]), "train") == [
      Example(f"train-{line}", row[5], row[6], float(row[4])) for line, row in enumerate(rows[1:], 2)]
  assert korsts.read_examples(str(korsts_dir), "test")[0].label == float(read_tsv(korsts_dir / "sts-test.tsv")[1][4])

  kornli_dir = korean_dirs["kornli"] / "KorNLI"
  train = get_task("KorNLI").read_examples(str(korean_dirs["kornli"]), "train")
  expected = [Example(f"train-{name}-{line}", *row) for name in ("multinli.train.ko.tsv", "snli_1.0_train.ko.tsv")
              for line, row in enumerate(read_tsv(kornli_dir / name)[1:], 2)]
  assert train == expected and len(train) == 9  # both files, MultiNLI's first
  dev = get_task("kornli").read_examples(str(kornli_dir), "dev")
  rows = read_tsv(kornli_dir / "xnli.dev.ko.tsv")
  assert rows[0] == ["sentence1", "sentence2", "gold_label"]
  assert dev == [Example(f"dev-{line}", *row) for line, row in enumerate(rows[1:], 2)]
  assert get_task("kornli").read_examples(str(kornli_dir / "snli_1.0_train.ko.tsv"), "train")[0].guid == "train-2"

  nsmc = get_task("nsmc")
  rows = read_tsv(korean_dirs["nsmc"] / "ratings_train.txt")
  assert rows[0] == ["id", "document", "label"]
  train = nsmc.read_examples(str(korean_dirs["nsmc"]), "train")
  assert train == [Example(row[0], row[1], None, row[2]) for row in rows[1:]]
  assert train[1].text_a == ""  # an empty review is kept, as an empty text
  assert nsmc.read_examples(str(korean_dirs["nsmc"]), "dev") == nsmc.read_examples(str(korean_dirs["nsmc"]), "test")
  assert len(nsmc.read_examples(str(korean_dirs["nsmc"]), "test")) == 6


# Each task end to end: trained, evaluated on dev, predicted on test (the same rows), rescored with sklearn.


def check_scored_as_sklearn(name, data_dir, output_dir):
  """The run's dev figures, predictions and best checkpoint, against the data rescored with sklearn and SciPy."""
  task = get_task(name)
  dev, test = task.read_examples(str(data_dir), "dev"), task.read_examples(str(data_dir), "test")
  assert [(e.text_a, e.text_b, e.label) for e in dev] == [(e.text_a, e.text_b, e.label) for e in test]
  figures = eval_results(output_dir)
  assert figures["eval_examples"] == len(dev)

  raw = np.array(read_tsv(output_dir / finetuning_objectives.TEST_RESULTS), np.float64)
  submitted = read_tsv(output_dir / finetuning_objectives.SUBMIT_RESULTS)
  assert [row[0] for row in submitted[1:]] == [example.guid for example in test]
  if task.is_regression:
    predictions, labels = raw[:, 0], np.array([example.label for example in test])
    expected = {"pearson": stats.pearsonr(predictions, labels)[0], "spearman": stats.spearmanr(predictions, labels)[0]}
    if name == "klue-sts":
      expected["binary_f1"] = sklearn_metrics.f1_score(labels >= 3.0, predictions >= 3.0, zero_division=0)
  else:
    predictions = raw.argmax(axis=1)
    labels = np.array([task.label_list.index(example.label) for example in test])
    assert [row[1] for row in submitted[1:]] == [task.label_list[index] for index in predictions]
    expected = {"accuracy": sklearn_metrics.accuracy_score(labels, predictions)}
    if name == "klue-ynat":
      expected["macro_f1"] = sklearn_metrics.f1_score(labels, predictions, average="macro",
                                                      labels=range(len(YNAT_TOPICS)), zero_division=0)
      assert len(set(labels)) < len(YNAT_TOPICS)  # topics in no dev label count, as 0
  assert set(expected) == set(task.metric_names)
  for metric, value in expected.items():
    assert figures[metric] == pytest.approx(value, abs=1e-6), metric
  best = run_directory.read_best_info(str(output_dir))
  assert best[task.primary_metric] == pytest.approx(figures[task.primary_metric], abs=1e-6)


# klue-ynat's run is run_classifier's, in the tool's test below.
@pytest.mark.parametrize("name", [name for name in KOREAN_TASKS if name != "klue-ynat"])
def test_each_korean_task_trains_evaluates_predicts_and_scores_as_sklearn(korean_dirs, tmp_path, name):
  results = finetuning.run(options(korean_dirs[name], tmp_path / "run"), ClassifierObjective(get_task(name)),
                           ONE_DEVICE)
  assert results["eval"]["global_step"] == 3
  check_scored_as_sklearn(name, korean_dirs[name], tmp_path / "run")


# Bad input: each is a TaskError naming the file and the record or line, raised while reading, before training.


def edit_records(edit):
  """Spoils a KLUE file by `edit`ing its records in place."""

  def spoil(path):
    records = json.loads(path.read_text(encoding="utf-8"))
    edit(records)
    write_json(path, records)

  return spoil


def rewrite(transform, encoding="utf-8"):
  """Spoils a file by rewriting its text, in `encoding`."""

  def spoil(path):
    path.write_bytes(transform(path.read_text(encoding="utf-8")).encode(encoding))

  return spoil


def set_field(line, column, value=None):
  """Spoils a TSV file: field `column` of its (1-based) `line` set to `value`, or, without one, cut off there."""

  def spoil(path):
    lines = path.read_text(encoding="utf-8").split("\n")
    fields = lines[line - 1].split("\t")
    lines[line - 1] = "\t".join(fields[:column] + ([] if value is None else [value] + fields[column + 1:]))
    path.write_text("\n".join(lines), encoding="utf-8")

  return spoil


def first_line_not_utf8(path):
  for number, line in enumerate(path.read_bytes().split(b"\n"), 1):
    try:
      line.decode("utf-8")
    except UnicodeDecodeError:
      return number
  raise AssertionError(f"{path} is UTF-8")


YNAT_TRAIN, YNAT_DEV = "klue/ynat-v1.1/ynat-v1.1_train.json", "klue/ynat-v1.1/ynat-v1.1_dev.json"
NLI_TRAIN, NLI_DEV = "klue/klue-nli-v1.1/klue-nli-v1.1_train.json", "klue/klue-nli-v1.1/klue-nli-v1.1_dev.json"
STS_TRAIN, STS_DEV = "klue/klue-sts-v1.1/klue-sts-v1.1_train.json", "klue/klue-sts-v1.1/klue-sts-v1.1_dev.json"
# case: (task, the file spoiled, how, what the error says after the file's name; {line}: the first line that is
# not UTF-8).
BAD_INPUTS = {
    "json-object": ("klue-ynat", YNAT_TRAIN, rewrite(lambda text: '{"data": ' + text + "}"),
                    ": a JSON object; the task reads a JSON array of records, an object each."),
    "json-lines": ("klue-ynat", YNAT_DEV,
                   rewrite(lambda text: "\n".join(json.dumps(record) for record in json.loads(text))),
                   ", line 2: not valid JSON (Extra data at column 1)"),
    "record-not-object": ("klue-ynat", YNAT_TRAIN, edit_records(lambda r: r.__setitem__(3, r[3]["title"])),
                          ", record 3: a JSON string, not an object."),
    "missing-title": ("klue-ynat", YNAT_TRAIN, edit_records(lambda r: r[5].pop("title")),
                      ", record 5: no field 'title'."),
    "title-null": ("klue-ynat", YNAT_DEV, edit_records(lambda r: r[0].update(title=None)),
                   ", record 0: field 'title' is None, not a string."),
    "unknown-topic": ("klue-ynat", YNAT_DEV, edit_records(lambda r: r[2].update(label="연예")),
                      ", record 2: label '연예' is not one of the task's labels"),
    "nli-label": ("klue-nli", NLI_DEV, edit_records(lambda r: r[4].update(gold_label="-")),
                  ", record 4: label '-' is not one of the task's labels"),
    "json-empty": ("klue-nli", NLI_TRAIN, rewrite(lambda text: ""), ": no examples: the file is empty."),
    "json-empty-array": ("klue-nli", NLI_DEV, rewrite(lambda text: "[]\n"),
                         ": no examples: the file is an empty JSON array."),
    "sts-no-binary-label": ("klue-sts", STS_TRAIN, edit_records(lambda r: r[7]["labels"].pop("binary-label")),
                            ", record 7: no field 'labels.binary-label'."),
    "sts-binary-label-2": ("klue-sts", STS_DEV, edit_records(lambda r: r[1]["labels"].update({"binary-label": 2})),
                           ", record 1: field 'labels.binary-label' is 2, not one of [0, 1]."),
    "sts-score-text": ("klue-sts", STS_TRAIN, edit_records(lambda r: r[4]["labels"].update(label="높음")),
                       ", record 4: label '높음' is not a number (the task is a regression)."),
    "json-cp949": ("klue-sts", STS_DEV, rewrite(lambda text: text, "cp949"), ", line {line}: not UTF-8"),
    "korsts-score": ("korsts", "KorNLUDatasets/KorSTS/sts-dev.tsv", set_field(3, 4, "높음"),
                     ", line 3: label '높음' is not a number"),
    "korsts-short-row": ("korsts", "KorNLUDatasets/KorSTS/sts-train.tsv", set_field(2, 6),
                         ", line 2: 6 tab-separated column(s); the task needs at least 7."),
    "kornli-test-label": ("kornli", "KorNLUDatasets/KorNLI/xnli.test.ko.tsv", set_field(4, 2, "모순"),
                          ", line 4: label '모순' is not one of the task's labels"),
    "kornli-second-train-file": ("kornli", "KorNLUDatasets/KorNLI/snli_1.0_train.ko.tsv", set_field(3, 2),
                                 ", line 3: 2 tab-separated column(s); the task needs at least 3."),
    "nsmc-label": ("nsmc", "nsmc/ratings_train.txt", set_field(3, 2, "2"),
                   ", line 3: label '2' is not one of the task's labels"),
    "nsmc-header-only": ("nsmc", "nsmc/ratings_test.txt", rewrite(lambda text: text.split("\n")[0] + "\n"),
                         ": no examples: the file is empty or holds only its header."),
    "tsv-cp949": ("nsmc", "nsmc/ratings_train.txt", rewrite(lambda text: text, "cp949"), ", line {line}: not UTF-8"),
}


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_input_fails_before_training_naming_file_and_record_or_line(korean_dirs, tmp_path, case):
  name, relative_path, spoil, message = BAD_INPUTS[case]
  path = tmp_path / "data" / relative_path
  spoil(path)
  if "{line}" in message:
    message = message.format(line=first_line_not_utf8(path))
  output_dir = tmp_path / "run"
  with pytest.raises(TaskError, match=re.escape(f"{path}{message}")):
    finetuning.run(options(korean_dirs[name], output_dir), ClassifierObjective(get_task(name)), ONE_DEVICE)
  assert not output_dir.exists()


def test_run_classifier_tool_trains_evaluates_and_predicts_klue_ynat(korean_dirs, tmp_path):
  albert_tf.AlbertConfig(**CONFIG).to_json_file(str(tmp_path / "config.json"))
  result = run_tool(
      "run_classifier", "--task_name=KLUE-YNAT", f"--data_dir={korean_dirs['klue-ynat']}",
      f"--output_dir={tmp_path / 'run'}", f"--albert_config_file={tmp_path / 'config.json'}",
      f"--spm_model_file={SP8K_MODEL}", f"--max_seq_length={SEQ}", "--do_train", "--do_eval", "--do_predict",
      "--train_batch_size=2", "--eval_batch_size=2", "--predict_batch_size=2", "--train_step=3",
      "--save_checkpoints_steps=3", "--iterations_per_loop=3", "--learning_rate=5e-2", "--dropout_prob=0")
  assert result.returncode == 0, result.stderr[-3000:]
  figures = eval_results(tmp_path / "run")
  assert {"macro_f1", "accuracy", "eval_accuracy", "loss"} <= set(figures) and figures["global_step"] == 3
  dev = json.loads((korean_dirs["klue-ynat"] / "ynat-v1.1" / "ynat-v1.1_dev.json").read_text(encoding="utf-8"))
  submitted = read_tsv(tmp_path / "run" / finetuning_objectives.SUBMIT_RESULTS)
  assert submitted[0] == ["index", "prediction"]
  assert [row[0] for row in submitted[1:]] == [record["guid"] for record in dev]  # the test split is dev's file
  predicted = [YNAT_TOPICS.index(row[1]) for row in submitted[1:]]
  labels = [YNAT_TOPICS.index(record["label"]) for record in dev]
  assert figures["macro_f1"] == pytest.approx(sklearn_metrics.f1_score(
      labels, predicted, average="macro", labels=range(len(YNAT_TOPICS)), zero_division=0), abs=1e-6)
  assert figures["accuracy"] == pytest.approx(sklearn_metrics.accuracy_score(labels, predicted), abs=1e-6)
  run_info = json.loads((tmp_path / "run" / finetuning.RUN_INFO_FILE).read_text(encoding="utf-8"))
  assert run_info["task"] == "klue-ynat" and run_info["label_list"] == list(YNAT_TOPICS)
  check_scored_as_sklearn("klue-ynat", korean_dirs["klue-ynat"], tmp_path / "run")


@pytest.mark.parametrize("name, pooling, projection_dim", [("klue-sts", "cls", None), ("korsts", "max", 24)])
def test_sentence_encoder_learns_korean_sts_and_scores_as_scipy(korean_dirs, tmp_path, name, pooling,
                                                                projection_dim):
  """train_sentence_encoder's objective reads KLUE-STS and KorSTS by name; Spearman and Pearson of its cosines
  are SciPy's."""
  objective = similarity_objective.SentenceSimilarityObjective(get_task(name), pooling=pooling,
                                                               projection_dim=projection_dim)
  output_dir = tmp_path / "run"
  finetuning.run(options(korean_dirs[name], output_dir, learning_rate=1e-3), objective, ONE_DEVICE)
  assert objective.score_range[0] >= 0.0 and objective.score_range[1] <= 5.0  # the train split's scores
  cosines = np.array([float(row[0]) for row in read_tsv(output_dir / finetuning_objectives.TEST_RESULTS)])
  scores = [example.label for example in get_task(name).read_examples(str(korean_dirs[name]), "test")]
  figures = eval_results(output_dir)
  assert figures["spearman"] == pytest.approx(stats.spearmanr(cosines, scores)[0], abs=1e-6)
  assert figures["pearson"] == pytest.approx(stats.pearsonr(cosines, scores)[0], abs=1e-6)
  info = json.loads((output_dir / finetuning.RUN_INFO_FILE).read_text())
  assert info["task"] == name and info["sentence_embedding"] == {"pooling": pooling, "projection_dim": projection_dim}


KLUE_DEV_FILES = {"klue-nli": os.path.join(SHARED, "klue", "klue-nli-v1.1_dev.json"),
                  "klue-sts": os.path.join(SHARED, "klue", "klue-sts-v1.1_dev.json")}


@pytest.mark.parametrize("task_name", sorted(KLUE_DEV_FILES))
def test_the_real_klue_dev_files_read_as_their_json_says(task_name):
  """KLUE v1.1's real NLI and STS dev files (../shared/klue): every record becomes its example, and KLUE-STS's
  binary-label is the threshold rule that our binary_f1 applies to scores."""
  path = KLUE_DEV_FILES[task_name]
  with open(path, encoding="utf-8") as reader:
    records = json.load(reader)
  examples = get_task(task_name).read_examples(path, "dev")
  assert len(examples) == len(records) > 100
  for example, record in zip(examples, records):
    assert example.guid == record["guid"]
    if task_name == "klue-nli":
      assert (example.text_a, example.text_b, example.label) == (record["premise"], record["hypothesis"],
                                                                   record["gold_label"])
    else:
      assert (example.text_a, example.text_b, example.label) == (record["sentence1"], record["sentence2"],
                                                                   record["labels"]["label"])
      assert record["labels"]["binary-label"] == int(example.label >= classification_metrics.KLUE_STS_BINARY_THRESHOLD)
  if task_name == "klue-nli":
    assert {example.label for example in examples} == set(get_task(task_name).label_list)
