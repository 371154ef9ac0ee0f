"""The `tsv` task: a user's classification or regression data in TSV files, laid out as a `TsvFormat` says."""

import dataclasses
from typing import List, Optional, Tuple

from albert_tf.data.task_readers import (BINARY, REGRESSION_METRICS, SPLIT_FILES, Columns, Example, LabelParser,
                                         Task, label_in, parse_number, read_examples_from_file, split_files)
from albert_tf.errors import TaskError


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
      self.label_list = _sorted_labels({example.label for example in examples})
    return examples
