"""Parallel text for cross-lingual distillation: `source<TAB>translation` pairs, read strictly, split by seed.

A line holds a source sentence (the teacher's language), a tab, and its translation; further columns (e.g. the
message catalog of `../shared/parallel/en_ko_messages.tsv`) are ignored. Blank lines are skipped; a line with
no tab, or with an empty side, is an error naming the file and line, raised before any training.
"""

import dataclasses
from typing import List, Tuple

import numpy as np

from albert_tf.errors import DataError, OptionError
from albert_tf.files import read_utf8_lines


@dataclasses.dataclass(frozen=True)
class ParallelPair:
  """One pair of a parallel file.

  Attributes:
    line_number: the pair's 1-based line in the file.
    source: the sentence the teacher embeds.
    translation: its translation.
  """

  line_number: int
  source: str
  translation: str


def read_parallel_file(path: str) -> List[ParallelPair]:
  """The pairs of a tab-separated UTF-8 file (plain or .gz), in file order.

  Raises:
    InputFileError: the file cannot be opened (missing, no permission).
    DataError: a line without a tab, an empty source or translation, a line that is not UTF-8, or no pair.
  """
  pairs = []
  for line_number, line in read_utf8_lines(path):
    line = line.rstrip("\r\n")
    if not line.strip():
      continue
    fields = line.split("\t")
    if len(fields) < 2:
      raise DataError(f"{path}, line {line_number}: no tab; a parallel file holds source<TAB>translation "
                      "on each line.")
    source, translation = fields[0].strip(), fields[1].strip()
    if not source or not translation:
      side = "source" if not source else "translation"
      raise DataError(f"{path}, line {line_number}: the {side} is empty.")
    pairs.append(ParallelPair(line_number, source, translation))
  if not pairs:
    raise DataError(f"{path}: no pairs: the file is empty.")
  return pairs


def check_dev_size(num_pairs: int, dev_size: int):
  """Raises `OptionError` unless `dev_size` (--parallel_dev_size) pairs can be held out of `num_pairs`, at least one
  left to train on: called as soon as the pairs are read, before their teacher embeddings are computed."""
  if not 0 <= dev_size < num_pairs:
    raise OptionError(f"--parallel_dev_size={dev_size} pairs cannot be held out of the parallel file's {num_pairs}: "
                      f"set it from 0 to {num_pairs - 1}, so that at least one pair is left to train on.")


def split_pairs(num_pairs: int, dev_size: int, seed: int) -> Tuple[np.ndarray, np.ndarray]:
  """Indices of the train and dev pairs: `dev_size` pairs drawn by `seed`, each part in file order.

  Raises:
    OptionError: `dev_size` negative, or leaving no pair to train on (`check_dev_size`).
  """
  check_dev_size(num_pairs, dev_size)
  order = np.random.default_rng(seed).permutation(num_pairs)
  return np.sort(order[dev_size:]), np.sort(order[:dev_size])
