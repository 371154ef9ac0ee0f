"""Pretraining record files: checking that they fit the model's lengths, and counting their records.

Masked records have the layout of Google's `create_pretraining_data.py`, which our own data tool writes too:
`input_ids`, `input_mask`, `segment_ids` (and, optionally, `token_boundary`) of `max_seq_length` values,
`masked_lm_positions`, `masked_lm_ids`, `masked_lm_weights` of `max_predictions_per_seq` values, and one
`next_sentence_labels` value, the sentence-order label (1 = swapped or from another document). Unmasked
records (`--dynamic_masking`) have the token features with `token_boundary`, the label, and the
`masking_recipe` that training masks them with, instead of `masked_lm_*`.
"""

import concurrent.futures
import json
import re
import uuid
from typing import Dict, Optional, Sequence

from absl import logging
import numpy as np
import tensorflow as tf

from google.protobuf import message

from albert_tf.data.instances import MASKING_RECIPE_FEATURE, MASKING_RECIPE_VALUES, MaskingRecipe
from albert_tf.errors import DataError

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


def _corrupt_file_error(path: str, error: tf.errors.DataLossError) -> DataError:
  # TF's message is wrapped in op details such as "{{function_node ...}} ... [Op:IteratorGetNext]".
  reason = re.sub(r"\{\{.*?\}\}\s*|\s*\[Op:.*$", "", error.message)
  return DataError(f"{path}: corrupt record, damaged or not a TFRecord file ({reason}).")


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


def check_pretraining_records(files: Sequence[str], max_seq_length: int,
                              max_predictions_per_seq: int) -> Optional[MaskingRecipe]:
  """Checks that the first record of every file has the features and lengths training expects.

  Files hold either masked records (Google's layout) or unmasked ones (`--dynamic_masking`), which carry
  their `MaskingRecipe`; all the files must be of one kind, and of one recipe. Reading one record per file
  is cheap, and a mismatch found here is reported by name rather than as a shape error in the middle of the
  first training step.

  Args:
    files: TFRecord files, e.g. from `expand_input_patterns`.
    max_seq_length: the length `input_ids`, `input_mask` and `segment_ids` must have.
    max_predictions_per_seq: the length of `masked_lm_positions`, `masked_lm_ids`, `masked_lm_weights` in
      masked records.

  Returns:
    The files' masking recipe, or None for masked records.

  Raises:
    ValueError: naming the file (and the feature, its length and the length expected) for a missing
      feature, a feature of the wrong length or type, an empty file or a corrupt record; naming two files
      of different kinds or recipes.
  """
  first_recipe = None
  for index, path in enumerate(files):
    features = _first_record_features(path)
    recipe = _masking_recipe(path, features)
    if index == 0:
      first_recipe = recipe
    elif recipe != first_recipe:
      describe = lambda r: f"unmasked, to be masked with {r}" if r else "masked"
      raise DataError(f"{path} holds {describe(recipe)} records, but {files[0]} {describe(first_recipe)} ones: "
                      "the input files must be of one kind (from --dynamic_masking runs of the same masking "
                      "flags, or masked ones).")
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
  return first_recipe


def _fingerprint(path: str) -> Dict[str, int]:
  stat = tf.io.gfile.stat(path)
  return {"size": stat.length, "mtime_nsec": stat.mtime_nsec}


def _count_file(path: str) -> int:
  try:
    return int(tf.data.TFRecordDataset(path).reduce(np.int64(0), lambda count, _: count + 1))
  except tf.errors.DataLossError as error:
    raise _corrupt_file_error(path, error) from None


def _read_count_cache(cache_file: str) -> Dict[str, dict]:
  if not tf.io.gfile.exists(cache_file):
    return {}
  with tf.io.gfile.GFile(cache_file) as f:
    try:
      return json.load(f)
    except json.JSONDecodeError:
      logging.warning("Ignoring the unreadable record count cache %s; counting again.", cache_file)
      return {}


def _write_count_cache(cache_file: str, cache: Dict[str, dict]) -> None:
  # Written aside and renamed, so that workers sharing the cache never read half a file.
  partial = f"{cache_file}.tmp-{uuid.uuid4().hex}"
  with tf.io.gfile.GFile(partial, "w") as f:
    json.dump(cache, f, indent=1, sort_keys=True)
  tf.io.gfile.rename(partial, cache_file, overwrite=True)


def count_records(files: Sequence[str], cache_file: Optional[str] = None) -> Dict[str, int]:
  """The number of records in each TFRecord file, counted by reading the files in parallel.

  Args:
    files: TFRecord files, local or gs:// paths.
    cache_file: optional JSON file of earlier counts, keyed by path and kept with each file's size and
      modification time. Counts of unchanged files are taken from it; the other files are counted and
      the cache rewritten, keeping the entries of files not asked about. A file rewritten with the same
      size within the file system's mtime resolution (a second on some) would not be counted again.

  Returns:
    The number of records of each file, by path.

  Raises:
    ValueError: naming a file that holds a corrupt record.
  """
  cache = _read_count_cache(cache_file) if cache_file else {}
  with concurrent.futures.ThreadPoolExecutor(_COUNTING_THREADS) as pool:
    fingerprints = dict(zip(files, pool.map(_fingerprint, files)))
    counts = {}
    for path in files:
      cached = cache.get(path, {})
      if all(cached.get(key) == value for key, value in fingerprints[path].items()):
        counts[path] = cached["records"]
    to_count = [path for path in files if path not in counts]
    if to_count:
      logging.info("Counting the records of %d file(s).", len(to_count))
      counts.update(zip(to_count, pool.map(_count_file, to_count)))
  if cache_file and to_count:
    cache.update({path: dict(fingerprints[path], records=counts[path]) for path in to_count})
    _write_count_cache(cache_file, cache)
  return {path: counts[path] for path in files}
