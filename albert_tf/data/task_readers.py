"""Fine-tuning examples read from TSV and JSON files, strictly, before training.

TSV files are read as Google's `_read_tsv` reads them (tab-separated, no quoting), but strictly: a short row,
an unknown label, a score that is not a number, an empty or non-UTF-8 file is a `TaskError` naming the file and
line, raised while reading, before any training. (Google's processors crash on an `IndexError` or skip the
row, and an unknown label fails only when features are written.) Blank lines are skipped. JSON files (KLUE's)
are checked as strictly: a file that is not a JSON array of objects, a record without one of the task's fields
(a dotted path such as `labels.label`), a bad label or score is a `TaskError` naming the file and the record,
counted from 0 as the array's index ("record 17" is the array's 18th).

The tasks that read them are their packages' (`albert_tf.tasks.classification.task_types` for the text and
text-pair tasks).
"""

import csv
import dataclasses
import json
import math
import os
from typing import Callable, Dict, Iterator, List, Optional, Sequence, Tuple, Union

from albert_tf import files
from albert_tf.errors import DataError, InputFileError, TaskError, json_error_text

SPLITS = ("train", "dev", "test")

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
    """The examples of a TSV file laid out so (see `read_examples_from_file`)."""
    return read_examples_from_file(path, guid_prefix, self, parse_label)


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
    yield from files.read_utf8_lines(path)
  except DataError as error:
    raise TaskError(str(error)) from None


def _read_tsv_rows(path: str, has_header: bool) -> Iterator[Tuple[int, List[str]]]:
  """Yields (1-based line number, fields) of the non-blank rows of a tab-separated UTF-8 file.

  Raises:
    InputFileError: no such file, or a folder.
    TaskError: a line that is not UTF-8 or cannot be parsed, naming the file and line.
  """
  files.require_file(path, "Task data file")
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


def read_examples_from_file(path: str, guid_prefix: str, columns: Columns,
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



def read_json_records(path: str) -> List[Tuple[str, dict]]:
  """The records of a JSON file that holds an array of objects, one a record (KLUE's layout), each with where it
  is ("<file>, record <i>", from 0) for error messages.

  Raises:
    InputFileError: no such file, or a folder.
    TaskError: a file that is empty, not UTF-8, not JSON, not an array, an empty array, or a record that is not
      an object, naming the file and the line or record.
  """
  files.require_file(path, "Task data file")
  text = "".join(line for _, line in _read_lines(path))
  if not text.strip():
    raise TaskError(f"{path}: no examples: the file is empty.")
  try:
    records = json.loads(text)
  except json.JSONDecodeError as error:
    raise TaskError(f"{path}, line {error.lineno}: not valid JSON ({json_error_text(error, with_line=False)}); the "
                    "task reads one JSON array of records, an object each.") from None
  if not isinstance(records, list):
    raise TaskError(f"{path}: a JSON {_JSON_TYPES[type(records)]}; the task reads a JSON array of records, "
                    "an object each.")
  if not records:
    raise TaskError(f"{path}: no examples: the file is an empty JSON array.")
  located = []
  for index, record in enumerate(records):
    where = f"{path}, record {index}"
    if not isinstance(record, dict):
      raise TaskError(f"{where}: a JSON {_JSON_TYPES[type(record)]}, not an object.")
    located.append((where, record))
  return located


def read_json_file(path: str, what: str) -> object:
  """The JSON value of a UTF-8 file that a task reads beside its examples (WoS's ontology, KLUE-RE's relations).

  Raises:
    InputFileError: no such file, or a folder, named as `what` ("Ontology file").
    TaskError: a file that is not UTF-8 or not JSON, naming the file and the line.
  """
  files.require_file(path, what)
  text = "".join(line for _, line in _read_lines(path))
  try:
    return json.loads(text)
  except json.JSONDecodeError as error:
    raise TaskError(f"{path}: not valid JSON ({json_error_text(error)}).") from None


def _read_json_examples(path: str, guid_prefix: str, fields: JsonFields,
                        parse_label: LabelParser) -> List[Example]:
  """The examples of one JSON file: an array of objects, one a record, as KLUE's files are.

  Args:
    path: the JSON file (UTF-8).
    guid_prefix: the prefix of guids numbered by record where `fields.guid` is None (see
      `read_examples_from_file`).
    fields: where the fields lie in a record.
    parse_label: (label value, "<file>, record <i>") -> label; raises `TaskError` for a bad label.

  Raises:
    FileNotFoundError: no such file.
    TaskError: a file that is empty, not UTF-8, not JSON or not an array of objects, a record without one of the
      fields, or a bad text, label or checked field, naming the file and the line or record (from 0).
  """
  examples = []
  for index, (where, record) in enumerate(read_json_records(path)):
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


def parse_number(text, where: str) -> float:
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


def label_in(label_list: Sequence[str]) -> LabelParser:
  """A label parser that accepts the labels of `label_list` only."""

  def parse(text, where: str) -> str:
    if text not in label_list:
      raise TaskError(f"{where}: label {text!r} is not one of the task's labels {list(label_list)}.")
    return text

  return parse


def split_files(data_path: str, split: str, file_names: Dict[str, SplitFiles]) -> List[str]:
  """The files of `split`, in reading order: `data_path` itself if it is a file, else its file(s) of that split."""
  if split not in SPLITS:
    raise TaskError(f"Unknown split {split!r}; the splits are {', '.join(SPLITS)}.")
  if not files.is_folder(data_path):
    return [files.require_file(data_path, "Task data")]
  names = file_names[split]
  return [os.path.join(data_path, name) for name in ((names,) if isinstance(names, str) else names)]


def find_split_file(data_dir: str, split: str, patterns: Sequence[str], task_name: str,
                    folder_holds: str = "") -> str:
  """The file of `split` in `data_dir`: the match of the first of `patterns` (file names relative to
  `data_dir`, glob patterns allowed) that matches one; `data_dir` itself when it is a file, unless `folder_holds`
  says what the folder must hold (a task whose files are several: one file would be read as every split).

  Raises:
    InputFileError: `data_dir` is missing, or no pattern matches a file, or it is a file and `folder_holds` is set.
    TaskError: a pattern matches several files (which one to read is the user's choice).
  """
  if folder_holds and files.file_exists(data_dir):
    raise InputFileError(f"--data_dir {data_dir} is a file; --task_name={task_name} reads a folder: the one that "
                         f"holds {folder_holds}.")
  if not files.is_folder(data_dir):
    return files.require_file(data_dir, "--data_dir")
  for pattern in patterns:
    found = files.folder_files(data_dir, pattern)
    if len(found) > 1:
      names = ", ".join(os.path.relpath(path, data_dir) for path in found)
      raise TaskError(f"--data_dir {data_dir} holds several {split} files ({names}): keep one.")
    if found:
      return found[0]
  raise InputFileError(f"--data_dir {data_dir} has no {split} file of --task_name={task_name}: it reads "
                       f"{' or '.join(patterns)}.")
