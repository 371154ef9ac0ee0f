"""Pretraining input: TFRecord files of `tf.train.Example` into batches of the model's inputs.

The files follow the layout of Google's `create_pretraining_data.py`, which our own data tool writes too:
`input_ids`, `input_mask`, `segment_ids` (and, optionally, `token_boundary`) of `max_seq_length` values,
`masked_lm_positions`, `masked_lm_ids`, `masked_lm_weights` of `max_predictions_per_seq` values, and one
`next_sentence_labels` value, the sentence-order label (1 = swapped or from another document).

Batches use the Model Garden / TF-Hub input names and int32 tensors of static shapes, as TPUs require.

The training stream is position-addressable: a pure function of the files, their record counts, the seed and
the input pipeline, which can start at any example while reading at most the start of one file. Training
resumes exactly from that position, since the iterator of a distributed dataset cannot be checkpointed and
`skip` would re-read everything already consumed. Every epoch reads the files, one at a time, in a new
seeded order and shuffles each chunk of `shuffle_chunk_size` consecutive records. That mixes only locally:
Google's data tool shuffles globally, ours streams (see "Known limitation: data order" in BUILD_NOTES.md).
"""

import concurrent.futures
import json
import re
import uuid
from typing import Dict, List, Optional, Sequence, Tuple, Union

from absl import logging
import numpy as np
import tensorflow as tf

from google.protobuf import message

# Feature name -> (the `tf.train.Feature` kind it is stored as, the flag its length must equal).
# `token_boundary` is left out: training never reads it and older files lack it.
_FEATURE_KINDS = {
    "input_ids": ("int64_list", "max_seq_length"),
    "input_mask": ("int64_list", "max_seq_length"),
    "segment_ids": ("int64_list", "max_seq_length"),
    "masked_lm_positions": ("int64_list", "max_predictions_per_seq"),
    "masked_lm_ids": ("int64_list", "max_predictions_per_seq"),
    "masked_lm_weights": ("float_list", "max_predictions_per_seq"),
    "next_sentence_labels": ("int64_list", None),
}

# Feature in the file -> input name of the model (or of the loss, for the labels).
_OUTPUT_NAMES = {
    "input_ids": "input_word_ids",
    "input_mask": "input_mask",
    "segment_ids": "input_type_ids",
    "masked_lm_positions": "masked_lm_positions",
    "masked_lm_ids": "masked_lm_ids",
    "masked_lm_weights": "masked_lm_weights",
}


def expand_input_patterns(patterns: Union[str, Sequence[str]]) -> List[str]:
  """The files matching comma-separated globs, Google's `--input_file` convention (local or gs:// paths).

  Args:
    patterns: a string of comma-separated file names or globs, or a list of such strings.

  Returns:
    The matching files, sorted, each once.

  Raises:
    FileNotFoundError: naming the first pattern that matches no file (a typo in one of several patterns
      would otherwise drop that data silently).
  """
  if isinstance(patterns, str):
    patterns = [patterns]
  pieces = [piece.strip() for pattern in patterns for piece in pattern.split(",") if piece.strip()]
  if not pieces:
    raise FileNotFoundError("No input files given.")
  files = []
  for piece in pieces:
    matches = [path for path in sorted(tf.io.gfile.glob(piece)) if not tf.io.gfile.isdir(path)]
    if not matches:
      raise FileNotFoundError(f"No input file matches {piece}.")
    files.extend(matches)
  return sorted(set(files))


# Keys that keep the stateless seeds of the file orders apart from those of the chunk shuffles.
_FILE_ORDER_STREAM = 0
_CHUNK_SHUFFLE_STREAM = 1

# Files `count_records` reads at once: it waits on I/O, on gs:// especially.
_COUNTING_THREADS = 16


def _feature_lengths(max_seq_length: int, max_predictions_per_seq: int) -> Dict[str, int]:
  flag_values = {"max_seq_length": max_seq_length, "max_predictions_per_seq": max_predictions_per_seq}
  return {name: flag_values[flag] if flag else 1 for name, (_, flag) in _FEATURE_KINDS.items()}


def _corrupt_file_error(path: str, error: tf.errors.DataLossError) -> ValueError:
  # TF's message is wrapped in op details such as "{{function_node ...}} ... [Op:IteratorGetNext]".
  reason = re.sub(r"\{\{.*?\}\}\s*|\s*\[Op:.*$", "", error.message)
  return ValueError(f"{path}: corrupt record, damaged or not a TFRecord file ({reason}).")


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
  lengths = _feature_lengths(max_seq_length, max_predictions_per_seq)
  for path in files:
    try:
      records = list(tf.data.TFRecordDataset(path).take(1).as_numpy_iterator())
    except tf.errors.DataLossError as error:
      raise _corrupt_file_error(path, error) from None
    if not records:
      raise ValueError(f"{path}: the file holds no records (it is empty or cut short).")
    try:
      features = tf.train.Example.FromString(records[0]).features.feature
    except message.DecodeError as error:
      raise ValueError(f"{path}: the first record is not a tf.train.Example ({error}).") from None
    for name, (kind, flag) in _FEATURE_KINDS.items():
      expected = f"--{flag}={lengths[name]}" if flag else str(lengths[name])
      if name not in features:
        raise ValueError(f"{path}: feature '{name}' is missing (expected {expected} values).")
      found_kind = features[name].WhichOneof("kind")
      if found_kind != kind:
        raise ValueError(f"{path}: feature '{name}' is stored as {found_kind}, expected {kind}.")
      found_length = len(getattr(features[name], kind).value)
      if found_length != lengths[name]:
        raise ValueError(f"{path}: feature '{name}' has {found_length} values, expected {expected}.")


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


def _stream_seed(seed: int, *indices) -> tf.Tensor:
  """A stateless-op seed derived from `seed` and `indices`; the same eagerly and in a `tf.data` graph."""
  derived = tf.constant([seed, 0], tf.int64)
  for index in indices:
    derived = tf.random.experimental.stateless_fold_in(derived, tf.cast(index, tf.int64))
  return derived


def _file_order(num_files: int, seed: int, epoch) -> tf.Tensor:
  """The int64 indices of the files in the order epoch `epoch` (an int or an int64 tensor) reads them."""
  return tf.random.experimental.stateless_shuffle(
      tf.range(num_files, dtype=tf.int64), _stream_seed(seed, _FILE_ORDER_STREAM, epoch))


def _training_records(files: List[str], counts: List[int], seed: int, chunk_size: int,
                      num_pipelines: int, pipeline_id: int, start_example: int) -> tf.data.Dataset:
  """The endless training stream of serialized records of one input pipeline, from `start_example` on.

  Epoch e reads the files in the order `_file_order(e)`: every `num_pipelines`-th of them from
  `pipeline_id` on, or, with fewer files than pipelines, all of them, keeping every `num_pipelines`-th
  record of each. Each file is cut into chunks of `chunk_size` records, and each chunk is shuffled with a
  seed of its own (seed, epoch, file, chunk), so any position of the stream can be rebuilt from its epoch,
  file and offset alone.

  Args:
    files: the TFRecord files, none of them empty.
    counts: the number of records of each file.
    seed: fixes the file orders and the chunk shuffles.
    chunk_size: records per shuffled chunk.
    num_pipelines: the number of input pipelines sharing the files.
    pipeline_id: this pipeline's index, in [0, num_pipelines).
    start_example: the number of examples of the stream to leave out.

  Returns:
    A dataset of serialized `tf.train.Example`s that never ends.

  Raises:
    ValueError: this pipeline would see no record (with fewer records in each file than pipelines).
  """
  shard_files = num_pipelines > 1 and len(files) >= num_pipelines
  shard_records = num_pipelines > 1 and not shard_files
  if not shard_files:
    counts = [len(range(pipeline_id, count, num_pipelines)) for count in counts]
    if not sum(counts):
      raise ValueError(f"Input pipeline {pipeline_id} of {num_pipelines} gets no record: every file holds "
                       f"{pipeline_id} or fewer records.")

  def epoch_files(epoch):
    order = _file_order(len(files), seed, epoch)
    return order[pipeline_id::num_pipelines] if shard_files else order

  # Where `start_example` falls, found eagerly on the CPU, where tf.data runs the same ops.
  with tf.device("/CPU:0"):
    epoch, offset = 0, start_example
    if not shard_files:
      # This pipeline reads every file in every epoch, so all its epochs are equally long.
      epoch, offset = divmod(start_example, sum(counts))
    order = epoch_files(epoch).numpy().tolist()
    while offset >= sum(counts[i] for i in order):
      offset -= sum(counts[i] for i in order)
      epoch += 1
      order = epoch_files(epoch).numpy().tolist()
  position = 0
  while offset >= counts[order[position]]:
    offset -= counts[order[position]]
    position += 1
  first_chunk, skipped_in_chunk = divmod(offset, chunk_size)

  # Rows of (file, epoch, first chunk to read, records of that chunk to leave out).
  remaining_files = np.array(order[position:], np.int64)
  first_chunks, skipped = np.zeros_like(remaining_files), np.zeros_like(remaining_files)
  first_chunks[0], skipped[0] = first_chunk, skipped_in_chunk
  start_epoch_rows = tf.data.Dataset.from_tensor_slices(
      (remaining_files, np.full_like(remaining_files, epoch), first_chunks, skipped))

  def epoch_rows(later_epoch):
    later_order = epoch_files(later_epoch)
    zeros = tf.zeros_like(later_order)
    return tf.data.Dataset.from_tensor_slices(
        (later_order, tf.fill(tf.shape(later_order), later_epoch), zeros, zeros))

  rows = start_epoch_rows.concatenate(tf.data.Dataset.counter(epoch + 1).flat_map(epoch_rows))

  file_paths = tf.constant(files)

  def read_file(file_index, file_epoch, file_first_chunk, skipped_in_file):
    records = tf.data.TFRecordDataset(tf.gather(file_paths, file_index))
    if shard_records:
      records = records.shard(num_pipelines, pipeline_id)
    chunks = records.skip(file_first_chunk * chunk_size).batch(chunk_size).enumerate(start=file_first_chunk)
    shuffled = chunks.map(lambda chunk_index, chunk: tf.random.experimental.stateless_shuffle(
        chunk, _stream_seed(seed, _CHUNK_SHUFFLE_STREAM, file_epoch, file_index, chunk_index)))
    return shuffled.unbatch().skip(skipped_in_file)

  return rows.flat_map(read_file)


def _nonempty_files(files: List[str], record_counts: Dict[str, int]) -> Tuple[List[str], List[int]]:
  missing = [path for path in files if path not in record_counts]
  if missing:
    raise ValueError(f"record_counts has no count for {missing[0]} ({len(missing)} file(s) missing).")
  nonempty = [path for path in files if record_counts[path] > 0]
  if not nonempty:
    raise ValueError(f"None of the {len(files)} input file(s) holds a record.")
  return nonempty, [record_counts[path] for path in nonempty]


def pretraining_dataset(input_patterns: Union[str, Sequence[str]],
                        max_seq_length: int,
                        max_predictions_per_seq: int,
                        batch_size: int,
                        is_training: bool = True,
                        input_context: Optional[tf.distribute.InputContext] = None,
                        seed: int = 0,
                        shuffle_chunk_size: int = 1024,
                        start_example: int = 0,
                        record_counts: Optional[Dict[str, int]] = None) -> tf.data.Dataset:
  """Batches of pretraining inputs read from TFRecord files.

  Training repeats forever. Epoch e reads the files in an order drawn from (`seed`, e) and shuffles each
  chunk of `shuffle_chunk_size` consecutive records of a file; batches may span files and epochs.
  Evaluation reads the files in order, once, unshuffled.

  Training is deterministic by default: the stream is a function of the files, their record counts,
  `seed` and the input pipeline alone, the same in every run. `start_example=n` yields exactly what
  `start_example=0` yields after its first n examples, reading only the part of one file before the
  position (the file's earlier records), so training resumes exactly and at once after a crash. Training
  runs small TensorFlow computations eagerly here (to count records and find the start), so call it
  eagerly, as `distribute_datasets_from_function` does.

  Args:
    input_patterns: comma-separated files or globs, or a list of such strings (see
      `expand_input_patterns`).
    max_seq_length: length of `input_ids`, `input_mask` and `segment_ids` in the files.
    max_predictions_per_seq: length of the `masked_lm_*` features in the files.
    batch_size: the per-replica batch size, e.g. `input_context.get_per_replica_batch_size(global)`.
      The last partial batch is dropped so that every shape is static.
    is_training: shuffle and repeat (True), or read every record once in file order (False).
    input_context: from `tf.distribute.Strategy.distribute_datasets_from_function`. With several input
      pipelines, each reads every `num_input_pipelines`-th file (of each epoch's order, in training), or
      every `num_input_pipelines`-th record of each file when there are fewer files than pipelines.
    seed: fixes the training file orders and chunk shuffles; the same seed gives the same batches.
    shuffle_chunk_size: consecutive records of a file shuffled together in training.
    start_example: in training, the number of examples this input pipeline already delivered, i.e.
      `global_step * global_batch_size // num_input_pipelines`; need not be a multiple of `batch_size`.
    record_counts: the number of records of each file by path (see `count_records`, whose cache spares
      a long job the counting on every restart); counted here when not given. Training only: files
      without records are left out.

  Returns:
    A dataset of dicts: int32 `input_word_ids`, `input_mask`, `input_type_ids` `[batch, max_seq_length]`;
    int32 `masked_lm_positions`, `masked_lm_ids` and float32 `masked_lm_weights`
    `[batch, max_predictions_per_seq]`; int32 `sentence_order_labels` `[batch]`.

  Raises:
    FileNotFoundError: no file matches `input_patterns`.
    ValueError: in training, a negative `start_example`, a `shuffle_chunk_size` below 1, a file missing
      from `record_counts`, no record in any file or none for this input pipeline.
  """
  files = expand_input_patterns(input_patterns)
  num_pipelines = input_context.num_input_pipelines if input_context else 1
  pipeline_id = input_context.input_pipeline_id if input_context else 0

  if is_training:
    if start_example < 0:
      raise ValueError(f"start_example must be 0 or more, got {start_example}.")
    if shuffle_chunk_size < 1:
      raise ValueError(f"shuffle_chunk_size must be 1 or more, got {shuffle_chunk_size}.")
    files, counts = _nonempty_files(files, count_records(files) if record_counts is None else record_counts)
    dataset = _training_records(files, counts, seed, shuffle_chunk_size, num_pipelines, pipeline_id,
                                start_example)
  else:
    shard_files = num_pipelines > 1 and len(files) >= num_pipelines
    shard_records = num_pipelines > 1 and not shard_files
    if shard_files:
      files = files[pipeline_id::num_pipelines]

    def read_file(path):
      records = tf.data.TFRecordDataset(path)
      return records.shard(num_pipelines, pipeline_id) if shard_records else records

    dataset = tf.data.Dataset.from_tensor_slices(files).flat_map(read_file)

  lengths = _feature_lengths(max_seq_length, max_predictions_per_seq)
  feature_spec = {
      name: tf.io.FixedLenFeature([lengths[name]], tf.float32 if kind == "float_list" else tf.int64)
      for name, (kind, _) in _FEATURE_KINDS.items()}

  def parse(serialized):
    features = tf.io.parse_example(serialized, feature_spec)
    batch = {output: tf.cast(features[name], tf.float32 if name == "masked_lm_weights" else tf.int32)
             for name, output in _OUTPUT_NAMES.items()}
    batch["sentence_order_labels"] = tf.cast(features["next_sentence_labels"][:, 0], tf.int32)
    return batch

  # Parsing whole batches is faster than parsing records one by one.
  dataset = dataset.batch(batch_size, drop_remainder=True)
  dataset = dataset.map(parse, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
  return dataset.prefetch(tf.data.AUTOTUNE)
