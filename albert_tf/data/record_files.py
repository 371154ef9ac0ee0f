"""Pretraining record files: checking that they fit the model's lengths, and reading them whole for their record
counts and largest token ids.

Masked records have the layout of Google's `create_pretraining_data.py`, which our own data tool writes too:
`input_ids`, `input_mask`, `segment_ids` (and, optionally, `token_boundary`) of `max_seq_length` values,
`masked_lm_positions`, `masked_lm_ids`, `masked_lm_weights` of `max_predictions_per_seq` values, and one
`next_sentence_labels` value, the sentence-order label (1 = swapped or from another document). Unmasked
records (`--dynamic_masking`) have the token features with `token_boundary`, the label, and the
`masking_recipe` that training masks them with, instead of `masked_lm_*`. Records of either kind whose words
follow another rule than Google's carry it (`word_boundaries`).
"""

import concurrent.futures
import dataclasses
import json
import re
from typing import Dict, NamedTuple, Optional, Sequence

from absl import logging
import numpy as np
import tensorflow as tf

from google.protobuf import message

from albert_tf.data import word_boundaries
from albert_tf.data.instances import MASKING_RECIPE_FEATURE, MASKING_RECIPE_VALUES, MaskingRecipe
from albert_tf.errors import DataError
from albert_tf.files import file_exists, file_size, modification_time_ns, read_json, write_atomically

# Feature name -> (the `tf.train.Feature` kind it is stored as, the flag its length must equal, or the length).
# `token_boundary` is left out of masked records' features: training never reads it and older files lack it.
MASKED_FEATURES = {
    "input_ids": ("int64_list", "max_seq_length"),
    "input_mask": ("int64_list", "max_seq_length"),
    "segment_ids": ("int64_list", "max_seq_length"),
    "masked_lm_positions": ("int64_list", "max_predictions_per_seq"),
    "masked_lm_ids": ("int64_list", "max_predictions_per_seq"),
    "masked_lm_weights": ("float_list", "max_predictions_per_seq"),
    "next_sentence_labels": ("int64_list", 1),
}
# Unmasked records (`--dynamic_masking`): training masks them, with the recipe they carry.
UNMASKED_FEATURES = {
    "input_ids": ("int64_list", "max_seq_length"),
    "input_mask": ("int64_list", "max_seq_length"),
    "segment_ids": ("int64_list", "max_seq_length"),
    "token_boundary": ("int64_list", "max_seq_length"),
    "next_sentence_labels": ("int64_list", 1),
    MASKING_RECIPE_FEATURE: ("int64_list", MASKING_RECIPE_VALUES),
}

# Files `count_records` reads at once: it waits on I/O, on gs:// especially.
_COUNTING_THREADS = 16


def feature_lengths(max_seq_length: int, max_predictions_per_seq: int, masked: bool = True) -> Dict[str, int]:
  """The length of each feature of masked (Google's) or unmasked records."""
  flag_values = {"max_seq_length": max_seq_length, "max_predictions_per_seq": max_predictions_per_seq}
  features = MASKED_FEATURES if masked else UNMASKED_FEATURES
  return {name: flag_values.get(length, length) for name, (_, length) in features.items()}


def _tensorflow_reason(error: tf.errors.OpError) -> str:
  # TF's message is wrapped in op details such as "{{function_node ...}} ... [Op:IteratorGetNext]".
  return re.sub(r"\{\{.*?\}\}\s*|\s*\[Op:.*$", "", error.message)


def _corrupt_file_error(path: str, error: tf.errors.DataLossError) -> DataError:
  return DataError(f"{path}: corrupt record, damaged or not a TFRecord file ({_tensorflow_reason(error)}).")


def _first_record_features(path: str):
  try:
    records = list(tf.data.TFRecordDataset(path).take(1).as_numpy_iterator())
  except tf.errors.DataLossError as error:
    raise _corrupt_file_error(path, error) from None
  if not records:
    raise DataError(f"{path}: the file holds no records (it is empty or cut short).")
  try:
    return tf.train.Example.FromString(records[0]).features.feature
  except message.DecodeError as error:
    raise DataError(f"{path}: the first record is not a tf.train.Example ({error}).") from None


def _masking_recipe(path: str, features) -> Optional[MaskingRecipe]:
  """The recipe unmasked records carry; None for masked records."""
  if MASKING_RECIPE_FEATURE not in features:
    return None
  try:
    return MaskingRecipe.from_values(features[MASKING_RECIPE_FEATURE].int64_list.value)
  except ValueError as error:
    raise DataError(f"{path}: feature '{MASKING_RECIPE_FEATURE}' is not a masking recipe ({error}).") from None


def _word_boundaries(path: str, features) -> str:
  """The rule of the records' word starts: Google's unless they say otherwise."""
  if word_boundaries.FEATURE not in features:
    return word_boundaries.GOOGLE
  try:
    return word_boundaries.rule_of_feature(features[word_boundaries.FEATURE].int64_list.value)
  except ValueError as error:
    raise DataError(f"{path}: feature '{word_boundaries.FEATURE}' is not a word-boundary rule ({error}).") from None


class RecordKind(NamedTuple):
  """What pretraining records are: masked (`masking_recipe` None) or to be masked with a recipe, and the rule of
  their words (`word_boundaries.RULES`)."""

  masking_recipe: Optional[MaskingRecipe]
  word_boundaries: str


def check_pretraining_records(files: Sequence[str], max_seq_length: int, max_predictions_per_seq: int) -> RecordKind:
  """Checks that the first record of every file has the features and lengths training expects.

  Files hold either masked records (Google's layout) or unmasked ones (`--dynamic_masking`), which carry
  their `MaskingRecipe`; all the files must be of one kind, of one recipe and of one word-boundary rule. Reading
  one record per file is cheap, and a mismatch found here is reported by name rather than as a shape error in the
  middle of the first training step.

  Args:
    files: TFRecord files, e.g. from `expand_input_patterns`.
    max_seq_length: the length `input_ids`, `input_mask` and `segment_ids` must have.
    max_predictions_per_seq: the length of `masked_lm_positions`, `masked_lm_ids`, `masked_lm_weights` in
      masked records.

  Returns:
    The files' `RecordKind` (of Google's masked records when there are no files: a run that reads none).

  Raises:
    DataError: naming the file (and the feature, its length and the length expected) for a missing
      feature, a feature of the wrong length or type, an empty file or a corrupt record; naming two files
      of different kinds, recipes or word-boundary rules.
  """
  first = RecordKind(None, word_boundaries.GOOGLE)
  for index, path in enumerate(files):
    features = _first_record_features(path)
    kind = RecordKind(_masking_recipe(path, features), _word_boundaries(path, features))
    recipe = kind.masking_recipe
    if index == 0:
      first = kind
    elif recipe != first.masking_recipe:
      describe = lambda r: f"unmasked, to be masked with {r}" if r else "masked"
      raise DataError(f"{path} holds {describe(recipe)} records, but {files[0]} "
                      f"{describe(first.masking_recipe)} ones: the input files must be of one kind (from "
                      "--dynamic_masking runs of the same masking flags, or masked ones).")
    elif kind.word_boundaries != first.word_boundaries:
      raise DataError(f"{path} holds records whose words follow --word_boundaries={kind.word_boundaries}, but "
                      f"{files[0]} --word_boundaries={first.word_boundaries}: one run learns from one rule of what "
                      "a word is. Write the files again with one rule, or train on them in separate runs.")
    lengths = feature_lengths(max_seq_length, max_predictions_per_seq, masked=recipe is None)
    for name, (kind, flag) in (MASKED_FEATURES if recipe is None else UNMASKED_FEATURES).items():
      expected = f"--{flag}={lengths[name]}" if isinstance(flag, str) else str(lengths[name])
      if name not in features:
        raise DataError(f"{path}: feature '{name}' is missing (expected {expected} values).")
      found_kind = features[name].WhichOneof("kind")
      if found_kind != kind:
        raise DataError(f"{path}: feature '{name}' is stored as {found_kind}, expected {kind}.")
      found_length = len(getattr(features[name], kind).value)
      if found_length != lengths[name]:
        raise DataError(f"{path}: feature '{name}' has {found_length} values, expected {expected}.")
  return first


# The features that hold token ids: each must be an id of the model's vocabulary.
_TOKEN_ID_FEATURES = ("input_ids", "masked_lm_ids")
# Records parsed at once when a file is read whole.
_READ_BATCH = 1024


@dataclasses.dataclass(frozen=True)
class RecordFileStats:
  """What reading a record file whole finds, and the size and modification time (in ns) of the file then: a
  cached entry holds for the file while both are unchanged (a file rewritten with the same size within the file
  system's mtime resolution, a second on some, would not be read again)."""

  records: int
  largest_token_id: int  # in `input_ids` and `masked_lm_ids`; -1 in a file without records
  size: int
  mtime_nsec: int


_STATS_FIELDS = {field.name for field in dataclasses.fields(RecordFileStats)}


def _fingerprint(path: str) -> Dict[str, int]:
  return {"size": file_size(path), "mtime_nsec": modification_time_ns(path)}


def _read_file_stats(path: str, fingerprint: Dict[str, int]) -> RecordFileStats:
  token_ids = {name: tf.io.VarLenFeature(tf.int64) for name in _TOKEN_ID_FEATURES}

  def batch_stats(serialized):
    features = tf.io.parse_example(serialized, token_ids)
    largest = tf.reduce_max(tf.concat([features[name].values for name in _TOKEN_ID_FEATURES], 0))
    return tf.size(serialized, tf.int64), largest

  try:
    records, largest = tf.data.TFRecordDataset(path).batch(_READ_BATCH).map(batch_stats).reduce(
        (np.int64(0), np.int64(-1)), lambda total, batch: (total[0] + batch[0], tf.maximum(total[1], batch[1])))
  except tf.errors.DataLossError as error:
    raise _corrupt_file_error(path, error) from None
  except (tf.errors.InvalidArgumentError, UnicodeDecodeError) as error:  # TF's message quotes the record's bytes
    reason = f" ({_tensorflow_reason(error)})" if isinstance(error, tf.errors.OpError) else ""
    raise DataError(f"{path}: a record is not a tf.train.Example of integer token ids{reason}.") from None
  return RecordFileStats(int(records), int(largest), **fingerprint)


def _read_count_cache(cache_file: str) -> Dict[str, dict]:
  if not file_exists(cache_file):
    return {}
  try:
    return read_json(cache_file)
  except DataError:
    logging.warning("Ignoring the unreadable record count cache %s; counting again.", cache_file)
    return {}


def read_record_stats(files: Sequence[str], cache_file: Optional[str] = None) -> Dict[str, RecordFileStats]:
  """The records of each TFRecord file and the largest token id they hold, found by reading the files whole, in
  parallel; it writes nothing (`write_record_stats` caches what it found).

  Args:
    files: TFRecord files, local or gs:// paths.
    cache_file: optional JSON file of earlier stats, by path (see `RecordFileStats`): an unchanged file is not
      read again.

  Returns:
    The stats of each file, by path.

  Raises:
    DataError: naming a file that holds a corrupt record, or one that is not a `tf.train.Example`.
  """
  cache = _read_count_cache(cache_file) if cache_file else {}
  with concurrent.futures.ThreadPoolExecutor(_COUNTING_THREADS) as pool:
    fingerprints = dict(zip(files, pool.map(_fingerprint, files)))
    stats = {}
    for path in files:
      cached = cache.get(path, {})
      if cached.keys() == _STATS_FIELDS and all(cached[key] == value for key, value in fingerprints[path].items()):
        stats[path] = RecordFileStats(**cached)
    to_read = [path for path in files if path not in stats]
    if to_read:
      logging.info("Counting the records of %d file(s).", len(to_read))
      stats.update(zip(to_read, pool.map(lambda path: _read_file_stats(path, fingerprints[path]), to_read)))
  return {path: stats[path] for path in files}


def write_record_stats(cache_file: str, stats: Dict[str, RecordFileStats]) -> None:
  """Records `stats` in `cache_file` (see `read_record_stats`), keeping the entries of other files; a cache that
  holds them already is left as it is."""
  cache = _read_count_cache(cache_file)
  entries = {path: dataclasses.asdict(file_stats) for path, file_stats in stats.items()}
  if any(cache.get(path) != entry for path, entry in entries.items()):
    cache.update(entries)
    # Whole or not at all, so that workers sharing the cache never read half a file.
    write_atomically(cache_file, json.dumps(cache, indent=1, sort_keys=True))


def count_records(files: Sequence[str], cache_file: Optional[str] = None) -> Dict[str, int]:
  """The number of records in each TFRecord file, counted by reading the files in parallel.

  Args:
    files: TFRecord files, local or gs:// paths.
    cache_file: optional JSON file of earlier counts (see `read_record_stats`), updated with the files read.

  Returns:
    The number of records of each file, by path.

  Raises:
    ValueError: naming a file that holds a corrupt record.
  """
  stats = read_record_stats(files, cache_file)
  if cache_file:
    write_record_stats(cache_file, stats)
  return {path: file_stats.records for path, file_stats in stats.items()}
