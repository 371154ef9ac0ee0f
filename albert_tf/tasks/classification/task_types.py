"""What a classification (or regression) task is: `Task`, read and scored as its own, and `FileTask`, a task of
fixed files and layouts (GLUE's as Google's `classifier_utils.py` reads them, the Korean benchmarks' official
files)."""

import dataclasses
import os
from typing import Dict, List, Optional, Tuple, Union

from albert_tf import files
from albert_tf.data.task_readers import (SPLITS, Columns, Example, JsonFields, SplitFiles, label_in, parse_number,
                                         split_files)

SPLIT_FILES = {split: f"{split}.tsv" for split in SPLITS}
REGRESSION_METRICS = ("pearson", "spearman", "mse")
BINARY = ("0", "1")  # a binary task's labels (GLUE's, and a thresholded score's)


class Task:
  """A fine-tuning task: how its examples are read and how it is scored.

  Attributes:
    name: the task's name (lower case, as in `KNOWN_TASKS`).
    is_regression: the label is a score (one output) rather than a class.
    label_list: the class labels in id order; None for regression.
    metric_names: the metrics `albert_tf.tasks.classification.metrics.compute_metrics` reports for the task.
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
    if self.folder is not None and files.is_folder(os.path.join(data_path, self.folder)):
      data_path = os.path.join(data_path, self.folder)
    paths = split_files(data_path, split, self.file_names)
    parse_label = parse_number if self.is_regression else label_in(self.label_list)
    examples = []
    for path in paths:
      # Numbered guids name the file where a split reads several, so that they stay unique.
      guid_prefix = f"{split}-{os.path.basename(path)}" if len(paths) > 1 else split
      examples.extend(self.layouts[split].read(path, guid_prefix, parse_label))
    return examples
