"""Pretraining input: TFRecord files of `tf.train.Example` (see `record_files`) into batches of the model's
inputs.

Batches use the Model Garden / TF-Hub input names and int32 tensors of static shapes, as TPUs require.

The training stream is position-addressable: a pure function of the files, their record counts, the seed and
the input pipeline, which can start at any example while reading at most the start of one file. Training
resumes exactly from that position, since the iterator of a distributed dataset cannot be checkpointed and
`skip` would re-read everything already consumed. Every epoch reads the files, one at a time, in a new
seeded order and shuffles each chunk of `shuffle_chunk_size` consecutive records. That mixes only locally:
Google's data tool shuffles globally, ours streams (see "Known limitation: data order" in BUILD_NOTES.md).
"""

from typing import Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
import tensorflow as tf

from albert_tf.data import input_streams
from albert_tf.data.record_files import FEATURE_KINDS, count_records, feature_lengths
from albert_tf.errors import DataError, OptionError
from albert_tf.files import expand_input_patterns

# Feature in the file -> input name of the model (or of the loss, for the labels).
_OUTPUT_NAMES = {
    "input_ids": "input_word_ids",
    "input_mask": "input_mask",
    "segment_ids": "input_type_ids",
    "masked_lm_positions": "masked_lm_positions",
    "masked_lm_ids": "masked_lm_ids",
    "masked_lm_weights": "masked_lm_weights",
}

# Keys that keep the stateless seeds of the file orders apart from those of the chunk shuffles.
_FILE_ORDER_STREAM = 0
_CHUNK_SHUFFLE_STREAM = 1


def _file_order(num_files: int, seed: int, epoch) -> tf.Tensor:
  """The int64 indices of the files in the order epoch `epoch` (an int or an int64 tensor) reads them."""
  return tf.random.experimental.stateless_shuffle(
      tf.range(num_files, dtype=tf.int64), input_streams.stream_seed(seed, _FILE_ORDER_STREAM, epoch))


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
  shard_files, shard_records = input_streams.sharding(len(files), num_pipelines)
  if not shard_files:
    counts = [len(range(pipeline_id, count, num_pipelines)) for count in counts]
    if not sum(counts):
      raise DataError(f"Input pipeline {pipeline_id} of {num_pipelines} gets no record: every file holds "
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
        chunk, input_streams.stream_seed(seed, _CHUNK_SHUFFLE_STREAM, file_epoch, file_index, chunk_index)))
    return shuffled.unbatch().skip(skipped_in_file)

  return rows.flat_map(read_file)


def _nonempty_files(files: List[str], record_counts: Dict[str, int]) -> Tuple[List[str], List[int]]:
  missing = [path for path in files if path not in record_counts]
  if missing:
    raise ValueError(f"record_counts has no count for {missing[0]} ({len(missing)} file(s) missing).")
  nonempty = [path for path in files if record_counts[path] > 0]
  if not nonempty:
    raise DataError(f"None of the {len(files)} input file(s) holds a record.")
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
  num_pipelines, pipeline_id = input_streams.input_pipeline(input_context)

  if is_training:
    if start_example < 0:
      raise OptionError(f"start_example must be 0 or more, got {start_example}.")
    if shuffle_chunk_size < 1:
      raise OptionError(f"shuffle_chunk_size must be 1 or more, got {shuffle_chunk_size}.")
    files, counts = _nonempty_files(files, count_records(files) if record_counts is None else record_counts)
    dataset = _training_records(files, counts, seed, shuffle_chunk_size, num_pipelines, pipeline_id,
                                start_example)
  else:
    shard_files, shard_records = input_streams.sharding(len(files), num_pipelines)
    if shard_files:
      files = files[pipeline_id::num_pipelines]

    def read_file(path):
      records = tf.data.TFRecordDataset(path)
      return records.shard(num_pipelines, pipeline_id) if shard_records else records

    dataset = tf.data.Dataset.from_tensor_slices(files).flat_map(read_file)

  lengths = feature_lengths(max_seq_length, max_predictions_per_seq)
  feature_spec = {
      name: tf.io.FixedLenFeature([lengths[name]], tf.float32 if kind == "float_list" else tf.int64)
      for name, (kind, _) in FEATURE_KINDS.items()}

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
