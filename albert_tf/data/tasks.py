"""Fine-tuning tasks: Google's GLUE processors, Korean benchmarks and a generic TSV task, read and checked
before training.

Each task knows where its examples lie in its files, its labels, and how it is scored. The GLUE tasks read
GLUE's own TSV files with Google's `classifier_utils.py` column layouts (`train.tsv`, `dev.tsv`, `test.tsv`;
MNLI's `dev_matched.tsv` / `dev_mismatched.tsv`); the `tsv` task reads a user's file with a `TsvFormat`.

The Korean tasks read their benchmarks' official files, each under its official name, in the data folder or
in the task's folder of the download (as GLUE's): `klue-ynat`, `klue-nli`, `klue-sts` (KLUE v1.1's JSON
arrays of records; the folders `ynat-v1.1`, `klue-nli-v1.1`, `klue-sts-v1.1`), `korsts` and `kornli` (Kakao
Brain's KorNLUDatasets TSV files; `KorSTS`, `KorNLI`) and `nsmc` (the Naver sentiment movie corpus'
`ratings_*.txt`). Their test splits are labeled; KLUE's test labels are not public, so a KLUE task's test split
is its dev file, and NSMC has no dev file, so its dev split is its test file.

TSV files are read as Google's `_read_tsv` reads them (tab-separated, no quoting), but strictly: a short row,
an unknown label, a score that is not a number, an empty or non-UTF-8 file is a `TaskError` naming the file and
line, raised while reading, before any training. (Google's processors crash on an `IndexError` or skip the
row, and an unknown label fails only when features are written.) Blank lines are skipped. KLUE's JSON files
are checked as strictly: a file that is not a JSON array of objects, a record without one of the task's fields
(a dotted path such as `labels.label`), a bad label or score is a `TaskError` naming the file and the record,
counted from 0 as the array's index ("record 17" is the array's 18th).
"""

import csv
import dataclasses
import json
import math
import os
from typing import Callable, Dict, Iterator, List, Optional, Sequence, Tuple, Union

from albert_tf.errors import DataError, InputFileError, TaskError
from albert_tf.files import read_utf8_lines

SPLITS = ("train", "dev", "test")
SPLIT_FILES = {split: f"{split}.tsv" for split in SPLITS}
REGRESSION_METRICS = ("pearson", "spearman", "mse")

Label = Union[str, float, None]
# A split's file, or its files, read in order and their examples concatenated (KorNLI's train split).
SplitFiles = Union[str, Tuple[str, ...]]
# (label as written: text in a TSV file, a JSON value in a JSON one; "<file>, line <n>" or ", record <i>")
# -> the label; raises `TaskError` for a bad one.
LabelParser = Callable[[object, str], Label]


@dataclasses.dataclass(frozen=True)
class Example:
  """One example: one text or a pair, and its label.

  Attributes:
    guid: the file's own id where it has one (what a GLUE submission needs), else "<split>-<line number>"
      ("<split>-<file name>-<line number>" where a split reads several files).
    text_a: the first (or only) text.
    text_b: the second text of a pair task.
    label: the label as written (str) for classification, a float for regression, None for unlabeled rows.
  """

  guid: str
  text_a: str
  text_b: Optional[str] = None
  label: Label = None


@dataclasses.dataclass(frozen=True)
class Columns:
  """Where the fields of one split's rows lie (0-based columns).

  Attributes:
    text_a: the first text.
    text_b: the second text, for pair tasks.
    label: the label; None where the split is unlabeled (GLUE's test files).
    guid: the row's id; None to use "<split>-<line number>".
    has_header: the first row names the columns and is skipped.
  """

  text_a: int
  text_b: Optional[int] = None
  label: Optional[int] = None
  guid: Optional[int] = None
  has_header: bool = True

  @property
  def count(self) -> int:
    """How many columns a row needs."""
    used = (self.text_a, self.text_b, self.label, self.guid)
    return 1 + max(column for column in used if column is not None)

  def read(self, path: str, guid_prefix: str, parse_label: LabelParser) -> List[Example]:
    """The examples of a TSV file laid out so (see `_read_examples_from_file`)."""
    return _read_examples_from_file(path, guid_prefix, self, parse_label)


@dataclasses.dataclass(frozen=True)
class JsonFields:
  """Where the fields of one split's records lie in a JSON array of objects (KLUE's files).

  Each field is a dotted path into a record: "labels.label" is `record["labels"]["label"]`.

  Attributes:
    text_a: the first text.
    text_b: the second text, for pair tasks.
    label: the label (a string), or the score of a regression (a number); None where the split is unlabeled.
    guid: the record's id; None to use "<split>-<record index>".
    checked: fields that are not read but must hold one of the given values (KLUE-STS's
      `labels.binary-label`, 0 or 1): a file without them is not the layout the task was written for.
  """

  text_a: str
  text_b: Optional[str] = None
  label: Optional[str] = None
  guid: Optional[str] = None
  checked: Dict[str, Tuple] = dataclasses.field(default_factory=dict)

  def read(self, path: str, guid_prefix: str, parse_label: LabelParser) -> List[Example]:
    """The examples of a JSON file laid out so (see `_read_json_examples`)."""
    return _read_json_examples(path, guid_prefix, self, parse_label)


def _read_lines(path: str) -> Iterator[Tuple[int, str]]:
  """`read_utf8_lines`, a line that is not UTF-8 raised as the `TaskError` of every bad task file."""
  try:
    yield from read_utf8_lines(path)
  except DataError as error:
    raise TaskError(str(error)) from None


def _read_tsv_rows(path: str, has_header: bool) -> Iterator[Tuple[int, List[str]]]:
  """Yields (1-based line number, fields) of the non-blank rows of a tab-separated UTF-8 file.

  Raises:
    FileNotFoundError: no such file.
    TaskError: a line that is not UTF-8 or cannot be parsed, naming the file and line.
  """
  if not os.path.isfile(path):
    raise InputFileError(f"Task data file not found: {path}")
  # No quoting, as Google's `_read_tsv` (quotechar=None): GLUE's texts hold unbalanced quotes.
  rows = csv.reader((line for _, line in _read_lines(path)), delimiter="\t", quoting=csv.QUOTE_NONE)
  header_pending = has_header
  while True:
    try:
      row = next(rows)
    except StopIteration:
      return
    except csv.Error as error:
      raise TaskError(f"{path}, line {rows.line_num}: {error}") from None
    if not row:
      continue
    if header_pending:
      header_pending = False
      continue
    yield rows.line_num, row


def _read_examples_from_file(path: str, guid_prefix: str, columns: Columns,
                            parse_label: LabelParser) -> List[Example]:
  """The examples of one TSV file.

  Args:
    path: the TSV file.
    guid_prefix: the prefix of line-numbered guids: the split ("train", "dev" or "test"), and the file's name
      where the split has several.
    columns: where the fields lie.
    parse_label: (label text, "<file>, line <n>") -> label; raises `TaskError` for a bad label.

  Raises:
    FileNotFoundError: no such file.
    TaskError: a bad row, label or file, naming the file and line.
  """
  examples = []
  for line_number, row in _read_tsv_rows(path, columns.has_header):
    where = f"{path}, line {line_number}"
    if len(row) < columns.count:
      raise TaskError(f"{where}: {len(row)} tab-separated column(s); the task needs at least "
                      f"{columns.count}.")
    examples.append(Example(
        guid=row[columns.guid] if columns.guid is not None else f"{guid_prefix}-{line_number}",
        text_a=row[columns.text_a],
        text_b=row[columns.text_b] if columns.text_b is not None else None,
        label=parse_label(row[columns.label].strip(), where) if columns.label is not None else None))
  if not examples:
    header = " or holds only its header" if columns.has_header else ""
    raise TaskError(f"{path}: no examples: the file is empty{header}.")
  return examples


_JSON_TYPES = {dict: "object", list: "array", str: "string", int: "number", float: "number", bool: "boolean",
               type(None): "null"}


def _json_field(record: dict, field: str, where: str):
  """The value at the dotted path `field` of `record` ("labels.label": `record["labels"]["label"]`)."""
  value = record
  for key in field.split("."):
    if not isinstance(value, dict) or key not in value:
      raise TaskError(f"{where}: no field {field!r}.")
    value = value[key]
  return value


def _json_text(record: dict, field: str, where: str) -> str:
  value = _json_field(record, field, where)
  if not isinstance(value, str):
    raise TaskError(f"{where}: field {field!r} is {value!r}, not a string.")
  return value


def _read_json_examples(path: str, guid_prefix: str, fields: JsonFields,
                        parse_label: LabelParser) -> List[Example]:
  """The examples of one JSON file: an array of objects, one a record, as KLUE's files are.

  Args:
    path: the JSON file (UTF-8).
    guid_prefix: the prefix of guids numbered by record where `fields.guid` is None (see
      `_read_examples_from_file`).
    fields: where the fields lie in a record.
    parse_label: (label value, "<file>, record <i>") -> label; raises `TaskError` for a bad label.

  Raises:
    FileNotFoundError: no such file.
    TaskError: a file that is empty, not UTF-8, not JSON or not an array of objects, a record without one of the
      fields, or a bad text, label or checked field, naming the file and the line or record (from 0).
  """
  if not os.path.isfile(path):
    raise InputFileError(f"Task data file not found: {path}")
  text = "".join(line for _, line in _read_lines(path))
  if not text.strip():
    raise TaskError(f"{path}: no examples: the file is empty.")
  try:
    records = json.loads(text)
  except json.JSONDecodeError as error:
    raise TaskError(f"{path}, line {error.lineno}: not valid JSON ({error.msg} at column {error.colno}); the "
                    "task reads one JSON array of records, as KLUE's files are.") from None
  if not isinstance(records, list):
    raise TaskError(f"{path}: a JSON {_JSON_TYPES[type(records)]}; the task reads a JSON array of records, as "
                    "KLUE's files are.")
  if not records:
    raise TaskError(f"{path}: no examples: the file is an empty JSON array.")
  examples = []
  for index, record in enumerate(records):
    where = f"{path}, record {index}"
    if not isinstance(record, dict):
      raise TaskError(f"{where}: a JSON {_JSON_TYPES[type(record)]}, not an object.")
    guid = _json_text(record, fields.guid, where) if fields.guid is not None else f"{guid_prefix}-{index}"
    text_a = _json_text(record, fields.text_a, where)
    text_b = _json_text(record, fields.text_b, where) if fields.text_b is not None else None
    label = None
    if fields.label is not None:
      label = _json_field(record, fields.label, where)
      label = parse_label(label.strip() if isinstance(label, str) else label, where)
    for field, allowed in fields.checked.items():
      value = _json_field(record, field, where)
      if isinstance(value, bool) or value not in allowed:
        raise TaskError(f"{where}: field {field!r} is {value!r}, not one of {list(allowed)}.")
    examples.append(Example(guid, text_a, text_b, label))
  return examples


def _parse_number(text, where: str) -> float:
  """A regression score: a finite number, written as text (TSV) or a JSON number."""
  value = math.nan
  if isinstance(text, (str, int, float)) and not isinstance(text, bool):
    try:
      value = float(text)
    except ValueError:
      pass
  if not math.isfinite(value):
    raise TaskError(f"{where}: label {text!r} is not a number (the task is a regression).")
  return value


def _label_in(label_list: Sequence[str]) -> LabelParser:
  """A label parser that accepts the labels of `label_list` only."""

  def parse(text, where: str) -> str:
    if text not in label_list:
      raise TaskError(f"{where}: label {text!r} is not one of the task's labels {list(label_list)}.")
    return text

  return parse


def _split_files(data_path: str, split: str, file_names: Dict[str, SplitFiles]) -> List[str]:
  """The files of `split`, in reading order: `data_path` itself if it is a file, else its file(s) of that split."""
  if split not in SPLITS:
    raise TaskError(f"Unknown split {split!r}; the splits are {', '.join(SPLITS)}.")
  if not os.path.exists(data_path):
    raise InputFileError(f"Task data not found: {data_path}")
  if os.path.isfile(data_path):
    return [data_path]
  names = file_names[split]
  return [os.path.join(data_path, name) for name in ((names,) if isinstance(names, str) else names)]


class Task:
  """A fine-tuning task: how its examples are read and how it is scored.

  Attributes:
    name: the task's name (lower case, as in `KNOWN_TASKS`).
    is_regression: the label is a score (one output) rather than a class.
    label_list: the class labels in id order; None for regression.
    metric_names: the metrics `albert_tf.training.metrics.compute_metrics` reports for the task.
    primary_metric: the metric (one of `metric_names`, higher is better) that picks the best checkpoint.
    is_pair: the examples have a second text (`text_b`).
  """

  name: str
  is_regression: bool
  is_pair: bool
  label_list: Optional[Tuple[str, ...]]
  metric_names: Tuple[str, ...]
  primary_metric: str

  def read_examples(self, data_path: str, split: str) -> List[Example]:
    """The examples of `split` ("train", "dev" or "test").

    Args:
      data_path: a directory holding the split files (`train.tsv`, ... or the task's official names; or the
        folder holding the task's folder of its download), or one file read as `split`.
      split: which split, hence which file(s) and layout.

    Raises:
      FileNotFoundError: the data or the split's file is missing.
      TaskError: an unknown split, or a bad file, row, record or label (naming the file and line or record).
    """
    raise NotImplementedError


@dataclasses.dataclass(frozen=True)
class FileTask(Task):
  """A task of fixed files and layouts: a GLUE task as Google's `classifier_utils.py` processor reads it, or
  a Korean benchmark's official files.

  Attributes:
    folder: the task's folder in its download (GLUE's `MRPC`, KLUE's `ynat-v1.1`); the data path may be it
      or its parent (Google's `--data_dir` for GLUE), and either works. None: the files lie in the data path.
    layouts: the layout of each split: `Columns` (a TSV file) or `JsonFields` (a JSON array of records).
    file_names: the file of each split, or its files, read in order.
  """

  name: str
  folder: Optional[str]
  layouts: Dict[str, Union[Columns, JsonFields]]
  label_list: Optional[Tuple[str, ...]]
  metric_names: Tuple[str, ...]
  primary_metric: str
  file_names: Dict[str, SplitFiles] = dataclasses.field(default_factory=lambda: SPLIT_FILES)

  @property
  def is_regression(self) -> bool:
    return self.label_list is None

  @property
  def is_pair(self) -> bool:
    return self.layouts["train"].text_b is not None

  def read_examples(self, data_path: str, split: str) -> List[Example]:
    if self.folder is not None and os.path.isdir(os.path.join(data_path, self.folder)):
      data_path = os.path.join(data_path, self.folder)
    paths = _split_files(data_path, split, self.file_names)
    parse_label = _parse_number if self.is_regression else _label_in(self.label_list)
    examples = []
    for path in paths:
      # Numbered guids name the file where a split reads several, so that they stay unique.
      guid_prefix = f"{split}-{os.path.basename(path)}" if len(paths) > 1 else split
      examples.extend(self.layouts[split].read(path, guid_prefix, parse_label))
    return examples


def _classification(name: str, glue_dir: str, train_and_dev: Columns, test: Columns,
                    label_list: Sequence[str], extra_metric: Optional[str] = None) -> FileTask:
  # The extra metric, where a task has one, is GLUE's headline score for it and picks the best checkpoint
  # (Google's run_classifier.py picks MRPC's and QQP's by accuracy).
  metric_names = ("accuracy", extra_metric) if extra_metric else ("accuracy",)
  return FileTask(name, glue_dir, {"train": train_and_dev, "dev": train_and_dev, "test": test},
                  tuple(label_list), metric_names, primary_metric=metric_names[-1])


BINARY = ("0", "1")
NLI = ("contradiction", "entailment", "neutral")
ENTAILMENT = ("entailment", "not_entailment")

# Column layouts of GLUE's files. Each file's first row is a header, except in CoLA's train and dev.
# QNLI, RTE, WNLI: index, text a, text b, label; QQP: id, qid1, qid2, question1, question2, is_duplicate.
# Test files of all three and QQP's: index (or id), text a, text b.
_INDEXED_PAIR = Columns(text_a=1, text_b=2, label=3, guid=0)
_INDEXED_PAIR_TEST = Columns(text_a=1, text_b=2, guid=0)
# index, genre, filename, year, old_index, source1, source2, sentence1, sentence2, score (not in test).
_STSB_LAYOUTS = {"train": Columns(text_a=7, text_b=8, label=9, guid=0),
                 "dev": Columns(text_a=7, text_b=8, label=9, guid=0),
                 "test": Columns(text_a=7, text_b=8, guid=0)}
# index, promptID, pairID, genre, 4 parse columns, sentence1, sentence2, then the annotators' labels and
# gold_label last: 12 columns in train, 16 in dev, 10 (no labels) in test.
_MNLI_LAYOUTS = {"train": Columns(text_a=8, text_b=9, label=11, guid=0),
                 "dev": Columns(text_a=8, text_b=9, label=15, guid=0),
                 "test": Columns(text_a=8, text_b=9, guid=0)}
_GLUE_TASKS = (
    # source, label, original judgement, sentence; test: index, sentence.
    _classification("cola", "CoLA", Columns(text_a=3, label=1, has_header=False), Columns(text_a=1, guid=0),
                    BINARY, extra_metric="mcc"),
    # sentence, label; test: index, sentence.
    _classification("sst-2", "SST-2", Columns(text_a=0, label=1), Columns(text_a=1, guid=0), BINARY),
    # Quality, #1 ID, #2 ID, #1 String, #2 String; test: index, #1 ID, #2 ID, #1 String, #2 String.
    _classification("mrpc", "MRPC", Columns(text_a=3, text_b=4, label=0), Columns(text_a=3, text_b=4, guid=0),
                    BINARY, extra_metric="f1"),
    FileTask("sts-b", "STS-B", _STSB_LAYOUTS, None, REGRESSION_METRICS, primary_metric="pearson"),
    _classification("qqp", "QQP", Columns(text_a=3, text_b=4, label=5, guid=0), _INDEXED_PAIR_TEST, BINARY,
                    extra_metric="f1"),
    FileTask("mnli", "MNLI", _MNLI_LAYOUTS, NLI, ("accuracy",), "accuracy",
             {"train": "train.tsv", "dev": "dev_matched.tsv", "test": "test_matched.tsv"}),
    FileTask("mnli-mm", "MNLI", _MNLI_LAYOUTS, NLI, ("accuracy",), "accuracy",
             {"train": "train.tsv", "dev": "dev_mismatched.tsv", "test": "test_mismatched.tsv"}),
    _classification("qnli", "QNLI", _INDEXED_PAIR, _INDEXED_PAIR_TEST, ENTAILMENT),
    _classification("rte", "RTE", _INDEXED_PAIR, _INDEXED_PAIR_TEST, ENTAILMENT),
    _classification("wnli", "WNLI", _INDEXED_PAIR, _INDEXED_PAIR_TEST, BINARY),
)

# KLUE-YNAT's 7 news topics, in KLUE's id order; KLUE's and KorNLI's NLI labels, in theirs.
YNAT_TOPICS = ("IT과학", "경제", "사회", "생활문화", "세계", "스포츠", "정치")
KOREAN_NLI = ("entailment", "neutral", "contradiction")


def _korean(name: str, folder: Optional[str], layout: Union[Columns, JsonFields], file_names: Dict[str, SplitFiles],
            label_list: Optional[Sequence[str]], metric_names: Tuple[str, ...],
            primary_metric: Optional[str] = None) -> FileTask:
  """A Korean benchmark: one layout for its three splits, all labeled; by default the first metric is primary."""
  return FileTask(name, folder, {split: layout for split in SPLITS}, tuple(label_list) if label_list else None,
                  metric_names, primary_metric or metric_names[0], file_names)


def _klue_files(prefix: str) -> Dict[str, str]:
  # KLUE's test labels are not public: the test split reads the dev file (--do_predict writes dev's predictions).
  return {"train": f"{prefix}_train.json", "dev": f"{prefix}_dev.json", "test": f"{prefix}_dev.json"}


_KOREAN_TASKS = (
    # Records: guid, title, label, url, date (and KLUE's annotations, not read).
    _korean("klue-ynat", "ynat-v1.1", JsonFields(text_a="title", label="label", guid="guid"),
            _klue_files("ynat-v1.1"), YNAT_TOPICS, ("macro_f1", "accuracy")),
    # Records: guid, source, premise, hypothesis, gold_label, and the annotators' labels.
    _korean("klue-nli", "klue-nli-v1.1",
            JsonFields(text_a="premise", text_b="hypothesis", label="gold_label", guid="guid"),
            _klue_files("klue-nli-v1.1"), KOREAN_NLI, ("accuracy",)),
    # Records: guid, source, sentence1, sentence2, labels {label (0-5, one decimal), real-label, binary-label}.
    # binary-label is label >= 3.0; KLUE's F1 ("binary_f1") thresholds the predicted score the same way.
    _korean("klue-sts", "klue-sts-v1.1",
            JsonFields(text_a="sentence1", text_b="sentence2", label="labels.label", guid="guid",
                       checked={"labels.binary-label": (0, 1)}),
            _klue_files("klue-sts-v1.1"), None, ("pearson", "spearman", "binary_f1")),
    # genre, filename, year, id, score, sentence1, sentence2 (sts-test.tsv has scores too). The KorSTS paper
    # reports Spearman.
    _korean("korsts", "KorSTS", Columns(text_a=5, text_b=6, label=4),
            {"train": "sts-train.tsv", "dev": "sts-dev.tsv", "test": "sts-test.tsv"}, None,
            ("pearson", "spearman"), primary_metric="spearman"),
    # sentence1, sentence2, gold_label; KorNLI's train split is both translated train sets, MultiNLI's first.
    _korean("kornli", "KorNLI", Columns(text_a=0, text_b=1, label=2),
            {"train": ("multinli.train.ko.tsv", "snli_1.0_train.ko.tsv"), "dev": "xnli.dev.ko.tsv",
             "test": "xnli.test.ko.tsv"}, KOREAN_NLI, ("accuracy",)),
    # id, document, label (0 negative, 1 positive). NSMC has a train and a test file: the test file is the dev
    # split too. A handful of its documents are empty: they are kept, as empty texts.
    _korean("nsmc", None, Columns(text_a=1, label=2, guid=0),
            {"train": "ratings_train.txt", "dev": "ratings_test.txt", "test": "ratings_test.txt"}, BINARY,
            ("accuracy",)),
)


@dataclasses.dataclass(frozen=True)
class TsvFormat:
  """The layout of a user's TSV file(s) for the `tsv` task (0-based columns).

  Attributes:
    text_a_column: the first (or only) text.
    label_column: the label, or the score of regression and of `label_threshold`.
    text_b_column: the second text, for pair tasks.
    has_header: the first row of each file names the columns and is skipped.
    is_regression: the label is a number to predict.
    label_list: the class labels in id order; by default the labels of the train split, sorted (numerically
      where all are numbers).
    label_threshold: turn a numeric score into a binary class: "1" if score > threshold else "0".
    test_has_labels: whether the test split carries labels (GLUE's test files do not).
  """

  text_a_column: int
  label_column: int
  text_b_column: Optional[int] = None
  has_header: bool = False
  is_regression: bool = False
  label_list: Optional[Tuple[str, ...]] = None
  label_threshold: Optional[float] = None
  test_has_labels: bool = True

  def __post_init__(self):
    columns = {"text_a_column": self.text_a_column, "label_column": self.label_column,
               "text_b_column": self.text_b_column}
    for field, column in columns.items():
      if column is not None and (not isinstance(column, int) or column < 0):
        raise TaskError(f"TsvFormat.{field} must be a column index >= 0, not {column!r}.")
    if self.label_list is not None:
      # Labels are compared as the file's text: [0, 1] means ("0", "1").
      labels = () if isinstance(self.label_list, str) else tuple(str(label) for label in self.label_list)
      if not labels or len(set(labels)) != len(labels):
        raise TaskError(f"TsvFormat.label_list must be distinct labels, not {self.label_list!r}.")
      object.__setattr__(self, "label_list", labels)
    if self.is_regression and (self.label_list is not None or self.label_threshold is not None):
      raise TaskError("TsvFormat: a regression takes no label_list or label_threshold.")
    if self.label_threshold is not None and self.label_list not in (None, BINARY):
      raise TaskError(f"TsvFormat: label_threshold makes the labels {list(BINARY)}; "
                      f"label_list {self.label_list!r} contradicts it.")


def _sorted_labels(labels) -> Tuple[str, ...]:
  try:
    return tuple(sorted(labels, key=float))
  except ValueError:
    return tuple(sorted(labels))


class TsvTask(Task):
  """A user's classification or regression data in TSV files laid out as `tsv_format` says.

  Without `TsvFormat.label_list` (and no threshold), the labels are those of the train split: read it
  before dev or test.
  """

  name = "tsv"

  def __init__(self, tsv_format: TsvFormat):
    self.tsv_format = tsv_format
    self.is_regression = tsv_format.is_regression
    self.is_pair = tsv_format.text_b_column is not None
    self.label_list = None if self.is_regression else (
        BINARY if tsv_format.label_threshold is not None else tsv_format.label_list)
    self.metric_names = REGRESSION_METRICS if self.is_regression else ("accuracy",)
    self.primary_metric = self.metric_names[0]

  def _parse_label(self, split: str) -> LabelParser:
    threshold = self.tsv_format.label_threshold
    if self.is_regression:
      return _parse_number
    if threshold is not None:
      return lambda text, where: "1" if _parse_number(text, where) > threshold else "0"
    if self.label_list is not None:
      return _label_in(self.label_list)
    if split != "train":
      raise TaskError("The tsv task takes its labels from the train split: read it first, or give "
                      "TsvFormat.label_list (--tsv_label_list).")
    return lambda text, where: text

  def read_examples(self, data_path: str, split: str) -> List[Example]:
    [path] = _split_files(data_path, split, SPLIT_FILES)
    tsv_format = self.tsv_format
    labeled = split != "test" or tsv_format.test_has_labels
    columns = Columns(text_a=tsv_format.text_a_column, text_b=tsv_format.text_b_column,
                      label=tsv_format.label_column if labeled else None, has_header=tsv_format.has_header)
    examples = _read_examples_from_file(path, split, columns, self._parse_label(split))
    if self.label_list is None and not self.is_regression:
      self.label_list = _sorted_labels({example.label for example in examples})
    return examples


_TASKS_BY_NAME = {task.name: task for task in _GLUE_TASKS + _KOREAN_TASKS}
# Google's spellings are "sst-2", "sts-b" and "mismnli"; the GLUE benchmark's own are without hyphens.
_ALIASES = {"sst2": "sst-2", "stsb": "sts-b", "mismnli": "mnli-mm"}
KNOWN_TASKS = tuple(_TASKS_BY_NAME) + ("tsv",)


def get_task(name: str, tsv_format: Optional[TsvFormat] = None) -> Task:
  """The task called `name` (case-insensitive; see `KNOWN_TASKS`).

  Args:
    name: a GLUE task name as Google's `run_classifier.py` spells it (or its alias), a Korean benchmark's
      (klue-ynat, klue-nli, klue-sts, korsts, kornli, nsmc), or "tsv".
    tsv_format: the file layout of the "tsv" task; only for it.

  Raises:
    TaskError: an unknown name, or `tsv_format` missing for "tsv" or given for another task.
  """
  key = _ALIASES.get(name.lower(), name.lower())
  if key == "tsv":
    if tsv_format is None:
      raise TaskError("The tsv task needs a TsvFormat (which columns hold the texts and the label).")
    return TsvTask(tsv_format)
  if key not in _TASKS_BY_NAME:
    raise TaskError(f"Unknown task {name!r}; the known tasks are {', '.join(KNOWN_TASKS)} "
                    f"(aliases: {', '.join(_ALIASES)}).")
  if tsv_format is not None:
    raise TaskError(f"tsv_format is only for the tsv task, not {key!r}.")
  return _TASKS_BY_NAME[key]
