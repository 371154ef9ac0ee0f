"""Pretraining record files: checking that they fit the model's lengths, and counting their records.

Their layout is that of Google's `create_pretraining_data.py`, which our own data tool writes too:
`input_ids`, `input_mask`, `segment_ids` (and, optionally, `token_boundary`) of `max_seq_length` values,
`masked_lm_positions`, `masked_lm_ids`, `masked_lm_weights` of `max_predictions_per_seq` values, and one
`next_sentence_labels` value, the sentence-order label (1 = swapped or from another document).
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

from albert_tf.errors import DataError

# Feature name -> (the `tf.train.Feature` kind it is stored as, the flag its length must equal).
# `token_boundary` is left out: training never reads it and older files lack it.
FEATURE_KINDS = {
    "input_ids": ("int64_list", "max_seq_length"),
    "input_mask": ("int64_list", "max_seq_length"),
    "segment_ids": ("int64_list", "max_seq_length"),
    "masked_lm_positions": ("int64_list", "max_predictions_per_seq"),
    "masked_lm_ids": ("int64_list", "max_predictions_per_seq"),
    "masked_lm_weights": ("float_list", "max_predictions_per_seq"),
    "next_sentence_labels": ("int64_list", None),
}

# Files `count_records` reads at once: it waits on I/O, on gs:// especially.
_COUNTING_THREADS = 16


def feature_lengths(max_seq_length: int, max_predictions_per_seq: int) -> Dict[str, int]:
  flag_values = {"max_seq_length": max_seq_length, "max_predictions_per_seq": max_predictions_per_seq}
  return {name: flag_values[flag] if flag else 1 for name, (_, flag) in FEATURE_KINDS.items()}


def _corrupt_file_error(path: str, error: tf.errors.DataLossError) -> DataError:
  # TF's message is wrapped in op details such as "{{function_node ...}} ... [Op:IteratorGetNext]".
  reason = re.sub(r"\{\{.*?\}\}\s*|\s*\[Op:.*$", "", error.message)
  return DataError(f"{path}: corrupt record, damaged or not a TFRecord file ({reason}).")


def check_pretraining_records(files: Sequence[str], max_seq_length: int,
                              max_predictions_per_seq: int) -> None:
  """Checks that the first record of every file has the features and lengths training expects.

  Reading one record per file is cheap, and a mismatch found here is reported by name rather than as a
  shape error in the middle of the first training step.

  Args:
    files: TFRecord files, e.g. from `expand_input_patterns`.
    max_seq_length: the length `input_ids`, `input_mask` and `segment_ids` must have.
    max_predictions_per_seq: the length of `masked_lm_positions`, `masked_lm_ids`, `masked_lm_weights`.

  Raises:
    ValueError: naming the file (and the feature, its length and the length expected) for a missing
      feature, a feature of the wrong length or type, an empty file or a corrupt record.
  """
  lengths = feature_lengths(max_seq_length, max_predictions_per_seq)
  for path in files:
    try:
      records = list(tf.data.TFRecordDataset(path).take(1).as_numpy_iterator())
    except tf.errors.DataLossError as error:
      raise _corrupt_file_error(path, error) from None
    if not records:
      raise DataError(f"{path}: the file holds no records (it is empty or cut short).")
    try:
      features = tf.train.Example.FromString(records[0]).features.feature
    except message.DecodeError as error:
      raise DataError(f"{path}: the first record is not a tf.train.Example ({error}).") from None
    for name, (kind, flag) in FEATURE_KINDS.items():
      expected = f"--{flag}={lengths[name]}" if flag else str(lengths[name])
      if name not in features:
        raise DataError(f"{path}: feature '{name}' is missing (expected {expected} values).")
      found_kind = features[name].WhichOneof("kind")
      if found_kind != kind:
        raise DataError(f"{path}: feature '{name}' is stored as {found_kind}, expected {kind}.")
      found_length = len(getattr(features[name], kind).value)
      if found_length != lengths[name]:
        raise DataError(f"{path}: feature '{name}' has {found_length} values, expected {expected}.")


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
