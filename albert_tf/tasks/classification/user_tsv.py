"""The `tsv` task: a user's classification or regression data in TSV files, laid out as a `TsvFormat` says."""

import dataclasses
import math
from typing import List, Optional, Set, Tuple

from albert_tf.data.task_readers import (Columns, Example, LabelParser, label_in, parse_number, read_examples_from_file,
                                         split_files)
from albert_tf.errors import TaskError
from albert_tf.tasks.classification.task_types import BINARY, REGRESSION_METRICS, SPLIT_FILES, Task

# More distinct whole-number labels than this, unless they are the class ids 0..K-1, are a score's values.
MAX_NUMBERED_CLASSES = 20


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
    for field in ("text_a_column", "text_b_column"):
      if columns[field] == self.label_column:
        raise TaskError(f"TsvFormat.label_column and TsvFormat.{field} (--tsv_label_column, --tsv_{field}) are "
                        f"both column {self.label_column}: the label must be a column of its own.")
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


def _why_scores_not_classes(labels: Set[str]) -> Optional[str]:
  """Why a train split's labels look like the values of a score rather than classes, or None.

  They do when every label is a number and one is not a whole number (3.8; "2.0" is whole), or when there are more
  than `MAX_NUMBERED_CLASSES` whole numbers other than the class ids 0..K-1 (ratings out of 100, counts, years).
  Labels "0" and "1", ratings "1" to "5", "-1" and "1", and class ids 0..K-1 (however many) are classes.
  """
  values = {}
  for label in labels:
    try:
      values[label] = float(label)
    except ValueError:
      return None
    if not math.isfinite(values[label]):
      return None
  fractions = sorted((label for label, value in values.items() if not value.is_integer()), key=values.get)
  if fractions:
    return f"all {len(values)} distinct labels are numbers, {len(fractions)} of them not whole (such as {fractions[0]})"
  if len(values) > MAX_NUMBERED_CLASSES and set(values.values()) != set(range(len(values))):
    return (f"all {len(values)} distinct labels are whole numbers, more than {MAX_NUMBERED_CLASSES} and not the "
            f"class ids 0 to {len(values) - 1}")
  return None


def _sorted_labels(labels) -> Tuple[str, ...]:
  try:
    return tuple(sorted(labels, key=float))
  except ValueError:
    return tuple(sorted(labels))


class TsvTask(Task):
  """A user's classification or regression data in TSV files laid out as `tsv_format` says.

  Without `TsvFormat.label_list` (and no threshold), the labels are those of the train split: read it
  before dev or test. Train labels that look like a score's values (`_why_scores_not_classes`: all numbers, and
  one not whole or many not the ids 0..K-1) are refused then, rather than each value made a class.
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
      return parse_number
    if threshold is not None:
      return lambda text, where: "1" if parse_number(text, where) > threshold else "0"
    if self.label_list is not None:
      return label_in(self.label_list)
    if split != "train":
      raise TaskError("The tsv task takes its labels from the train split: read it first, or give "
                      "TsvFormat.label_list (--tsv_label_list).")
    return lambda text, where: text

  def read_examples(self, data_path: str, split: str) -> List[Example]:
    [path] = split_files(data_path, split, SPLIT_FILES)
    tsv_format = self.tsv_format
    labeled = split != "test" or tsv_format.test_has_labels
    columns = Columns(text_a=tsv_format.text_a_column, text_b=tsv_format.text_b_column,
                      label=tsv_format.label_column if labeled else None, has_header=tsv_format.has_header)
    examples = read_examples_from_file(path, split, columns, self._parse_label(split))
    if self.label_list is None and not self.is_regression:
      labels = {example.label for example in examples}
      why = _why_scores_not_classes(labels)
      if why:
        raise TaskError(f"{path}: the labels of column {tsv_format.label_column} (--tsv_label_column) look like "
                        f"scores, not classes: {why}. Give --tsv_is_regression to predict the score, "
                        "--tsv_label_threshold for two classes of it, or --tsv_label_column for the column of "
                        "the classes; or --tsv_label_list with every label to take them as classes.")
      self.label_list = _sorted_labels(labels)
    return examples
