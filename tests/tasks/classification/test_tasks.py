"""Fine-tuning tasks: GLUE's real column layouts, the generic TSV task, every bad input before training."""

import os
import pathlib
import re

import numpy as np
import pytest

from albert_tf import files
from albert_tf.data import task_readers
from albert_tf.data.task_readers import Example
from albert_tf.errors import DataError, TaskError
from albert_tf.tasks.classification import metrics as classification_metrics
from albert_tf.tasks.classification.catalogue import KNOWN_TASKS, get_task
from albert_tf.tasks.classification.user_tsv import TsvFormat
from tests.conftest import SHARED, requires_shared, write
from tests.tasks.classification.glue_data import GLUE_FILES, glue_dir, write_glue_data  # noqa: F401 (a fixture)

TWEETS = os.path.join(SHARED, "finetune", "tweets_GroundTruth.tsv")

# task: (GLUE folder, examples in train, dev, test, first train example, first test example).
EXPECTED = {
    "cola": ("CoLA", (2, 1, 2), Example("train-1", "Our friends won't buy this analysis.", None, "1"),
             Example("0", "Bill whistled past the house.")),
    "sst-2": ("SST-2", (2, 1, 1), Example("train-2", "hide new secretions from the parents ", None, "0"),
              Example("0", "uneasy mishmash of styles .")),
    "mrpc": ("MRPC", (2, 1, 1), Example("train-2", 'He called " the witness " .', "He did .", "1"),
             Example("0", "PCCW 's chief .", "CEO .")),
    "sts-b": ("STS-B", (2, 1, 1), Example("0", "A jet flies.", "A jet.", 5.0),
              Example("0", "A girl sings.", "A girl talks.")),
    "qqp": ("QQP", (2, 1, 1), Example("133273", "How is the life of a math student?",
                                      "Which level is enough?", "0"),
            Example("0", "Why am I lonely?", "How can I stop being lonely?")),
    "mnli": ("MNLI", (2, 1, 1), Example("0", "Cream skimming has two dimensions.", "Product makes it work. ",
                                        "neutral"), Example("0", "Hi Tom.", "Tom is here.")),
    "mnli-mm": ("MNLI", (2, 2, 1), Example("0", "Cream skimming has two dimensions.",
                                           "Product makes it work. ", "neutral"),
                Example("0", "Hello.", "A greeting.")),
    "qnli": ("QNLI", (1, 1, 1), Example("0", "When did the third series begin?", "Unlike the two before it.",
                                        "not_entailment"),
             Example("0", "Who is devoted to it?", "For decades.")),
    "rte": ("RTE", (2, 1, 1), Example("0", "No Weapons Yet.", "Weapons.", "not_entailment"),
            Example("0", "Mexico City has a population.", "Mexico is big.")),
    "wnli": ("WNLI", (1, 1, 1), Example("0", "I stuck a pin in it.", "It had a hole.", "1"),
             Example("0", "Maude had seen trains.", "The trains roared.")),
}


def at(path, line):
  """A `match` pattern for an error naming `path` and the 1-based `line`."""
  return re.escape(f"{path}, line {line}:")


def glue_data(where, bucket, tmp_path) -> str:
  """`write_glue_data`'s folder on local disk, or in the `bucket` stand-in for gs:// (Google's --data_dir there)."""
  root = bucket if where == "bucket" else str(tmp_path)
  with files.staged_folder(f"{root}/data") as staging:
    write_glue_data(pathlib.Path(staging))
  return f"{root}/data/glue_data"


@pytest.mark.parametrize("where", ["local", "bucket"])
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_glue_processors_read_the_real_layouts(where, bucket, tmp_path, name):
  glue_dir = glue_data(where, bucket, tmp_path)
  folder, counts, first_train, first_test = EXPECTED[name]
  task = get_task(name)
  splits = {split: task.read_examples(f"{glue_dir}/{folder}", split) for split in task_readers.SPLITS}
  assert tuple(len(splits[split]) for split in task_readers.SPLITS) == counts
  assert splits["train"][0] == first_train
  assert splits["test"][0] == first_test
  for split in ("train", "dev"):
    for example in splits[split]:
      if task.is_regression:
        assert isinstance(example.label, float)
      else:
        assert example.label in task.label_list
      assert (example.text_b is None) == (name in ("cola", "sst-2"))
  assert task.is_pair == (name not in ("cola", "sst-2"))
  assert all(example.label is None for example in splits["test"])
  # Google's --data_dir (the parent of the task folders) and a single file work too.
  assert task.read_examples(glue_dir, "train") == splits["train"]
  assert task.read_examples(f"{glue_dir}/{folder}/train.tsv", "train") == splits["train"]


def test_glue_details(glue_dir):
  assert get_task("mnli").read_examples(str(glue_dir), "dev")[0].label == "neutral"  # dev_matched.tsv
  assert [e.label for e in get_task("mnli-mm").read_examples(str(glue_dir), "dev")] == ["contradiction"] * 2
  assert get_task("mnli").read_examples(str(glue_dir), "train")[1].text_a == 'you know "during the season'
  assert get_task("sts-b").read_examples(str(glue_dir), "dev")[0].label == 0.5
  assert get_task("cola").read_examples(str(glue_dir), "test")[1].text_a == 'The car honked "down.'


def test_task_names_labels_and_metrics():
  assert KNOWN_TASKS == ("cola", "sst-2", "mrpc", "sts-b", "qqp", "mnli", "mnli-mm", "qnli", "rte", "wnli",
                         "klue-ynat", "klue-nli", "klue-sts", "korsts", "kornli", "nsmc", "klue-re", "tsv")
  for alias, name in (("SST2", "sst-2"), ("stsb", "sts-b"), ("MisMNLI", "mnli-mm"), ("CoLA", "cola"),
                      ("STS-B", "sts-b")):
    assert get_task(alias).name == name
  primary = {name: get_task(name).primary_metric for name in KNOWN_TASKS[:-1]}
  assert primary == {"cola": "mcc", "sst-2": "accuracy", "mrpc": "f1", "sts-b": "pearson", "qqp": "f1",
                     "mnli": "accuracy", "mnli-mm": "accuracy", "qnli": "accuracy", "rte": "accuracy",
                     "wnli": "accuracy", "klue-ynat": "macro_f1", "klue-nli": "accuracy", "klue-sts": "pearson",
                     "korsts": "spearman", "kornli": "accuracy", "nsmc": "accuracy", "klue-re": "micro_f1"}
  assert get_task("cola").metric_names == ("accuracy", "mcc")
  assert get_task("sts-b").metric_names == ("pearson", "spearman", "mse")
  assert get_task("sts-b").is_regression and get_task("sts-b").label_list is None
  assert get_task("mnli").label_list == ("contradiction", "entailment", "neutral")
  assert get_task("qnli").label_list == get_task("rte").label_list == ("entailment", "not_entailment")
  assert not get_task("wnli").is_regression and get_task("wnli").label_list == ("0", "1")


@requires_shared(TWEETS)
def test_tsv_task_on_the_shared_sentiment_scores(tmp_path):
  with open(TWEETS, encoding="utf-8") as reader:
    lines = [next(reader).rstrip("\n") for _ in range(40)]
  path = write(tmp_path / "tweets.tsv", lines)
  rows = [line.split("\t") for line in lines]

  regression = get_task("tsv", TsvFormat(text_a_column=2, label_column=1, is_regression=True))
  examples = regression.read_examples(path, "train")
  assert regression.is_regression and regression.label_list is None and regression.primary_metric == "pearson"
  assert not regression.is_pair
  assert [(e.text_a, e.text_b, e.label) for e in examples] == [(r[2], None, float(r[1])) for r in rows]
  assert examples[0].guid == "train-1"

  binary = get_task("tsv", TsvFormat(text_a_column=2, label_column=1, label_threshold=0.0))
  examples = binary.read_examples(path, "dev")
  assert binary.label_list == ("0", "1") and binary.primary_metric == "accuracy" and not binary.is_regression
  assert [e.label for e in examples] == ["1" if float(r[1]) > 0 else "0" for r in rows]
  assert {e.label for e in examples} == {"0", "1"}


def test_tsv_task_directory_header_pairs_and_labels_from_train(tmp_path):
  write(tmp_path / "train.tsv", ["label\tfirst\tsecond", "10\ta\tb", "2\tc\td", "", "9\te\tf"])
  write(tmp_path / "dev.tsv", ["label\tfirst\tsecond", "9\tg\th"])
  write(tmp_path / "test.tsv", ["label\tfirst\tsecond", "x\ti\tj"])
  tsv_format = TsvFormat(text_a_column=1, text_b_column=2, label_column=0, has_header=True)
  task = get_task("tsv", tsv_format)
  assert task.is_pair
  with pytest.raises(TaskError, match="train split: read it first"):
    task.read_examples(str(tmp_path), "dev")
  train = task.read_examples(str(tmp_path), "train")
  assert [(e.guid, e.text_a, e.text_b, e.label) for e in train] == [
      ("train-2", "a", "b", "10"), ("train-3", "c", "d", "2"), ("train-5", "e", "f", "9")]  # blank line 4
  assert task.label_list == ("2", "9", "10")  # numeric labels sort as numbers
  assert task.read_examples(str(tmp_path), "dev")[0].label == "9"
  with pytest.raises(TaskError, match=at(tmp_path / "test.tsv", 2) + ".*'x' is not one of"):
    task.read_examples(str(tmp_path), "test")
  unlabeled = get_task("tsv", TsvFormat(text_a_column=1, label_column=0, text_b_column=2, has_header=True,
                                        label_list=["x", 2, 9, 10], test_has_labels=False))
  assert unlabeled.label_list == ("x", "2", "9", "10")
  assert unlabeled.read_examples(str(tmp_path), "test") == [Example("test-2", "i", "j")]


# Train labels of a tsv task without a label list: classes, or a score's values (refused).
STS_SCORES = [f"{0.125 * step:.3f}" for step in range(41) if step != 20]  # 0.000 to 5.000, 40 distinct
CLASSES = {"binary": ["1", "0"], "ratings": ["1", "2", "3", "4", "5"], "signs": ["-1", "1"],
           "class_ids": [str(index) for index in range(150)], "whole_floats": ["1.0", "2.0", "3.0"],
           "names": ["neg", "pos", "3.5"]}
SCORES = {"sts": (STS_SCORES, "all 40 distinct labels are numbers, 34 of them not whole (such as 0.125)"),
          "one_fraction": (["1", "2", "3.8"], "all 3 distinct labels are numbers, 1 of them not whole (such as 3.8)"),
          "percent": ([str(value) for value in range(0, 100, 3)], "all 34 distinct labels are whole numbers, more "
                                                                   "than 20 and not the class ids 0 to 33")}


@pytest.mark.parametrize("name", CLASSES)
def test_tsv_labels_that_are_classes(tmp_path, name):
  labels = CLASSES[name]
  path = write(tmp_path / "train.tsv", [f"{label}\ttext {index}" for index, label in enumerate(labels)])
  task = get_task("tsv", TsvFormat(text_a_column=1, label_column=0))
  task.read_examples(path, "train")
  assert sorted(task.label_list) == sorted(labels)


@pytest.mark.parametrize("name", SCORES)
def test_tsv_labels_that_are_scores_are_refused_before_training(tmp_path, name):
  labels, why = SCORES[name]
  path = write(tmp_path / "train.tsv", [f"{label}\ttext {index}" for index, label in enumerate(labels * 2)])
  task = get_task("tsv", TsvFormat(text_a_column=1, label_column=0))
  with pytest.raises(TaskError, match=re.escape(f"{path}: the labels of column 0 (--tsv_label_column) look like "
                                                "scores, not classes: ") + ".*" + re.escape(why) + ".*"
                                      "--tsv_is_regression.*--tsv_label_threshold.*--tsv_label_list"):
    task.read_examples(path, "train")
  # What the message offers: a regression, or the labels listed as classes.
  regression = get_task("tsv", TsvFormat(text_a_column=1, label_column=0, is_regression=True))
  assert len(regression.read_examples(path, "train")) == 2 * len(labels)
  listed = get_task("tsv", TsvFormat(text_a_column=1, label_column=0, label_list=labels))
  listed.read_examples(path, "train")
  assert listed.label_list == tuple(labels)


def test_byte_order_mark_and_windows_line_ends(tmp_path):
  path = tmp_path / "bom.tsv"
  path.write_bytes("\ufeff1\tfirst\r\n0\tsecond\r\n".encode("utf-8"))
  examples = get_task("tsv", TsvFormat(text_a_column=1, label_column=0)).read_examples(str(path), "train")
  assert [(e.text_a, e.label) for e in examples] == [("first", "1"), ("second", "0")]


# Bad inputs: each fails while reading, naming the file and the line.


def test_short_row(glue_dir):
  path = glue_dir / "RTE" / "train.tsv"
  write(path, GLUE_FILES["RTE/train.tsv"] + ["2\tonly one sentence"])
  with pytest.raises(TaskError, match=at(path, 4) + " 2 tab-separated column.*at least 4"):
    get_task("rte").read_examples(str(glue_dir), "train")
  path = glue_dir / "MNLI" / "dev_matched.tsv"
  write(path, GLUE_FILES["MNLI/dev_matched.tsv"] + ["1\t2\t3\tslate\ta\tb\tc\td\tno\tlabels"])
  with pytest.raises(TaskError, match=at(path, 3) + " 10 tab-separated column.*at least 16"):
    get_task("mnli").read_examples(str(glue_dir), "dev")


def test_label_not_in_the_task(glue_dir):
  path = glue_dir / "CoLA" / "dev.tsv"
  write(path, GLUE_FILES["CoLA/dev.tsv"] + ["gj04\t*\t\tA sentence."])
  with pytest.raises(TaskError, match=at(path, 2) + r" label '\*' is not one of the task's labels"):
    get_task("cola").read_examples(str(glue_dir), "dev")
  path = glue_dir / "MNLI" / "train.tsv"
  write(path, GLUE_FILES["MNLI/train.tsv"] + [GLUE_FILES["MNLI/train.tsv"][1].replace("\tneutral\tneutral",
                                                                                        "\tneutral\t-")])
  with pytest.raises(TaskError, match=at(path, 4) + " label '-'"):
    get_task("mnli").read_examples(str(glue_dir), "train")


@pytest.mark.parametrize("score", ["high", "nan", ""])
def test_regression_label_that_is_not_a_number(glue_dir, score):
  path = glue_dir / "STS-B" / "dev.tsv"
  write(path, GLUE_FILES["STS-B/dev.tsv"] + [GLUE_FILES["STS-B/dev.tsv"][1].replace("\t0.5", f"\t{score}")])
  with pytest.raises(TaskError, match=at(path, 3) + f" label '{score}' is not a number"):
    get_task("sts-b").read_examples(str(glue_dir), "dev")
  tsv = get_task("tsv", TsvFormat(text_a_column=7, label_column=9, has_header=True, label_threshold=2.5))
  with pytest.raises(TaskError, match=at(path, 3) + f" label '{score}' is not a number"):
    tsv.read_examples(str(path), "train")


@pytest.mark.parametrize("lines, header", [([], False), ([], True), (["", ""], False),
                                           (["sentence\tlabel"], True)])
def test_empty_file(tmp_path, lines, header):
  path = write(tmp_path / "train.tsv", lines)
  with pytest.raises(TaskError, match=re.escape(f"{path}: no examples: the file is empty")):
    task = get_task("tsv", TsvFormat(text_a_column=0, label_column=1, has_header=header))
    task.read_examples(path, "train")


def test_not_utf8(tmp_path):
  path = write(tmp_path / "train.tsv", ["1\tplain", "0\tcaf\xe9 latin-1"], encoding="latin-1")
  with pytest.raises(DataError, match=at(path, 2) + " not UTF-8"):
    get_task("tsv", TsvFormat(text_a_column=1, label_column=0)).read_examples(path, "train")


def test_unknown_task_name():
  with pytest.raises(TaskError, match="Unknown task 'glue'.*cola, sst-2, mrpc, sts-b, qqp, mnli, mnli-mm, "
                                      "qnli, rte, wnli, klue-ynat, klue-nli, klue-sts, korsts, kornli, nsmc, klue-re, tsv"):
    get_task("glue")


def test_missing_files(glue_dir, tmp_path):
  with pytest.raises(FileNotFoundError, match=re.escape(str(tmp_path / "nowhere"))):
    get_task("sst-2").read_examples(str(tmp_path / "nowhere"), "train")
  os.remove(glue_dir / "QQP" / "dev.tsv")
  with pytest.raises(FileNotFoundError, match=re.escape(str(glue_dir / "QQP" / "dev.tsv"))):
    get_task("qqp").read_examples(str(glue_dir), "dev")
  os.mkdir(glue_dir / "QQP" / "dev.tsv")
  with pytest.raises(FileNotFoundError, match=re.escape(f"{glue_dir / 'QQP' / 'dev.tsv'} is a folder, not a file")):
    get_task("qqp").read_examples(str(glue_dir), "dev")
  os.remove(glue_dir / "MNLI" / "test_mismatched.tsv")
  with pytest.raises(FileNotFoundError, match=re.escape(str(glue_dir / "MNLI" / "test_mismatched.tsv"))):
    get_task("mnli-mm").read_examples(str(glue_dir / "MNLI"), "test")


def test_bad_arguments(glue_dir):
  with pytest.raises(TaskError, match="Unknown split 'validation'"):
    get_task("rte").read_examples(str(glue_dir), "validation")
  with pytest.raises(TaskError, match="needs a TsvFormat"):
    get_task("tsv")
  with pytest.raises(TaskError, match="only for the tsv task"):
    get_task("rte", TsvFormat(text_a_column=0, label_column=1))
  with pytest.raises(TaskError, match="label_column must be a column index"):
    TsvFormat(text_a_column=0, label_column=-1)
  with pytest.raises(TaskError, match=re.escape("TsvFormat.label_column and TsvFormat.text_b_column "
                                                "(--tsv_label_column, --tsv_text_b_column) are both column 2")):
    TsvFormat(text_a_column=1, text_b_column=2, label_column=2)
  with pytest.raises(TaskError, match="regression takes no label_list"):
    TsvFormat(text_a_column=0, label_column=1, is_regression=True, label_threshold=0.0)
  with pytest.raises(TaskError, match="contradicts"):
    TsvFormat(text_a_column=0, label_column=1, label_threshold=0.0, label_list=("neg", "pos"))
  with pytest.raises(TaskError, match="distinct labels"):
    TsvFormat(text_a_column=0, label_column=1, label_list=("0", "0"))
  binary = TsvFormat(text_a_column=0, label_column=1, label_threshold=0.0, label_list=[0, 1])
  assert binary.label_list == ("0", "1")


@pytest.mark.parametrize("where", ["local", "bucket"])
def test_a_split_file_is_the_first_pattern_that_matches_and_never_a_guess(where, bucket, tmp_path):
  root = bucket if where == "bucket" else str(tmp_path)
  patterns = ["*-ud-train.conllu", "train.conllu"]
  files.write_atomically(f"{root}/train.conllu", "x\n")
  assert task_readers.find_split_file(root, "train", patterns, "conllu") == f"{root}/train.conllu"
  files.write_atomically(f"{root}/ko_gsd-ud-train.conllu", "x\n")  # the first pattern comes first
  assert task_readers.find_split_file(root, "train", patterns, "conllu") == f"{root}/ko_gsd-ud-train.conllu"
  files.write_atomically(f"{root}/ko_kaist-ud-train.conllu", "x\n")
  with pytest.raises(TaskError, match=r"several train files \(ko_gsd-ud-train.conllu, ko_kaist-ud-train.conllu\)"):
    task_readers.find_split_file(root, "train", patterns, "conllu")
  # A file is read as any split; a folder without the split's file, or no folder, is named.
  assert task_readers.find_split_file(f"{root}/train.conllu", "dev", patterns, "conllu") == f"{root}/train.conllu"
  with pytest.raises(FileNotFoundError, match=r"has no dev file of --task_name=conllu: it reads \*-ud-dev.conllu "
                                              r"or dev.conllu"):
    task_readers.find_split_file(root, "dev", ["*-ud-dev.conllu", "dev.conllu"], "conllu")
  with pytest.raises(FileNotFoundError, match="--data_dir not found: .*missing"):
    task_readers.find_split_file(f"{root}/missing", "dev", patterns, "conllu")


def test_compute_metrics_gives_each_task_its_set():
  scores = np.array([[2.0, -1.0], [0.1, 0.3], [-1.0, 1.0], [0.5, 0.4]])  # argmax 0, 1, 1, 0
  labels = np.array([0, 1, 0, 0])
  assert classification_metrics.compute_metrics(get_task("cola"), scores, labels) == pytest.approx(
      {"accuracy": 0.75, "mcc": 1 / np.sqrt(3)})
  assert classification_metrics.compute_metrics(get_task("mrpc"), [0, 1, 1, 0], labels) == pytest.approx(
      {"accuracy": 0.75, "f1": 2 / 3})
  assert set(classification_metrics.compute_metrics(get_task("qqp"), scores, labels)) == {"accuracy", "f1"}
  assert classification_metrics.compute_metrics(get_task("mnli"), np.eye(3)[[0, 2, 1]], [0, 2, 2]) == pytest.approx(
      {"accuracy": 2 / 3})
  stsb = classification_metrics.compute_metrics(get_task("sts-b"), [[1.0], [2.0], [3.0], [4.0]], [1.0, 3.0, 2.0, 4.0])
  assert stsb == pytest.approx({"pearson": 0.8, "spearman": 0.8, "mse": 0.5})
  regression = get_task("tsv", TsvFormat(text_a_column=2, label_column=1, is_regression=True))
  assert set(classification_metrics.compute_metrics(regression, [0.5, -1.0], [1.0, -2.0])) == {"pearson", "spearman", "mse"}
  for name in ("cola", "sst-2", "mrpc", "sts-b", "qqp", "mnli", "qnli", "rte", "wnli"):
    assert get_task(name).primary_metric in get_task(name).metric_names
    assert set(get_task(name).metric_names) <= set(classification_metrics.METRICS)
