"""Pretraining input: TFRecord files of `tf.train.Example` (see `record_files`) into batches of the model's
inputs.

Batches use the Model Garden / TF-Hub input names and int32 tensors of static shapes, as TPUs require.

Every epoch reads an input pipeline's files together, each in proportion to its record count, as Google's
`parallel_interleave` and shuffle buffer do, so that every batch samples every file (record sets written
by separate data runs included) rather than a stretch of one. The epoch is cut into rounds of about
`shuffle_window` records that take each file's share in a shuffled order, and each window of
`shuffle_window` consecutive records of the merged epoch is shuffled again, so that a file's records also
come in a new order every epoch.

The training stream is position-addressable: every draw is stateless, seeded by (seed, epoch, round or
window), so the stream is a pure function of the files, their record counts, the seed and the input
pipeline, and can start at any example. The records each file gave before that example are counted, not
read, and skipped where the file is opened. Training resumes exactly from that position, since the
iterator of a distributed dataset cannot be checkpointed and `skip` on the merged stream would re-read
everything already consumed. Evaluation reads one epoch of the same stream.

Files hold masked records (Google's) or unmasked ones (`--dynamic_masking`), whose recipe the caller passes
(`check_pretraining_records` reads it). Unmasked records are masked per example with stateless draws of
(seed, input pipeline, epoch, index in the epoch), so they too are a pure function of the position in the
stream.
"""

import bisect
from typing import Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
import tensorflow as tf

from albert_tf.data import input_streams
from albert_tf.data.dynamic_masking import DynamicMasker
from albert_tf.data.instances import MASKING_RECIPE_FEATURE, MaskingRecipe
from albert_tf.data.record_files import MASKED_FEATURES, UNMASKED_FEATURES, count_records, feature_lengths
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

# Keys that keep apart the stateless seeds of the file orders, the files' phases, the rounds' orders and
# the window shuffles.
_FILE_ORDER_STREAM = 0
_PHASE_STREAM = 1
_ROUND_STREAM = 2
_WINDOW_STREAM = 3
_MASKING_STREAM = 4

# The read buffers of an input pipeline, split among the files it reads at once: TF's default, 256 KiB a
# file, would grow with their number. Each file keeps at least 64 KiB, so that reads stay large.
_READ_BUFFER_BYTES = 16 << 20
_MIN_FILE_BUFFER_BYTES = 64 << 10


class _InterleavedEpochs:
  """The epochs of one input pipeline: which files each reads, and how it merges and shuffles them.

  Epoch e reads this pipeline's share of the files: every `num_pipelines`-th file of an order drawn from
  (seed, e), or, with fewer files than pipelines, every `num_pipelines`-th record of every file. Its N
  records are read in M = ceil(N / window) rounds. Before round m, file f (n_f records, phase h_f drawn
  from (seed, e) in [0, M)) has given c_f(m) = floor((m·n_f + h_f) / M) records: c_f(0) = 0, c_f(M) = n_f,
  and every round takes n_f / M records of it, rounded down or up, so rounds hold the files in proportion.
  The phases move where each file's rounding falls: without them c_f(m) ≤ m·n_f / M, and a file of one
  record would always be read in the last round. Round m's choices of files are shuffled with a seed of
  (seed, e, m); the merged records are then shuffled in windows of `window` with seeds of (seed, e, window
  index). The arithmetic is int64, exact while M·N < 2^63 (below about 9·10^10 records an epoch at the
  default window), and the TF ops give the same values eagerly (where a start is located) and in the
  `tf.data` graph.
  """

  def __init__(self, files: List[str], counts: List[int], seed: int, window: int, num_pipelines: int,
               pipeline_id: int):
    self.seed, self.window = seed, window
    self.num_pipelines, self.pipeline_id = num_pipelines, pipeline_id
    self.shard_files, self.shard_records = input_streams.sharding(len(files), num_pipelines)
    if self.shard_records:
      counts = [len(range(pipeline_id, count, num_pipelines)) for count in counts]
      if not sum(counts):
        raise DataError(f"Input pipeline {pipeline_id} of {num_pipelines} gets no record: every file holds "
                        f"{pipeline_id} or fewer records.")
    self.num_files = len(files)
    # With file sharding, a pipeline reads the same number of files every epoch, so an epoch's dataset is
    # a fixed list of file datasets whose paths change from epoch to epoch.
    self.files_per_epoch = len(range(pipeline_id, len(files), num_pipelines)) if self.shard_files else len(files)
    self.file_buffer_bytes = max(_READ_BUFFER_BYTES // self.files_per_epoch, _MIN_FILE_BUFFER_BYTES)
    self.paths = tf.constant(files)
    self.counts = tf.constant(counts, tf.int64)

  def epoch_files(self, epoch):
    """(the files epoch `epoch` reads, as int64 indices into the files, and their record counts)."""
    if self.shard_files:
      order = tf.random.experimental.stateless_shuffle(
          tf.range(self.num_files, dtype=tf.int64), input_streams.stream_seed(self.seed, _FILE_ORDER_STREAM, epoch))
      files = order[self.pipeline_id::self.num_pipelines]
    else:
      files = tf.range(self.num_files, dtype=tf.int64)
    return files, tf.gather(self.counts, files)

  def plan(self, epoch):
    """(the files epoch `epoch` reads, their record counts, their phases, the number of rounds)."""
    files, counts = self.epoch_files(epoch)
    num_rounds = (tf.reduce_sum(counts) + self.window - 1) // self.window
    phases = tf.random.stateless_uniform(
        [self.files_per_epoch], input_streams.stream_seed(self.seed, _PHASE_STREAM, epoch), minval=0,
        maxval=num_rounds, dtype=tf.int64)
    return files, counts, phases, num_rounds

  @staticmethod
  def taken_before(counts, phases, num_rounds, round_index):
    """The records of each file that the rounds before `round_index` take: c_f(m) of the class docstring.

    The same int64 arithmetic on tensors (in the `tf.data` graph) and NumPy arrays (to locate a start).
    """
    return (round_index * counts + phases) // num_rounds

  def round_choices(self, epoch, counts, phases, num_rounds, round_index):
    """The files (positions in the epoch's file list) round `round_index` reads from, record by record."""
    taken = (self.taken_before(counts, phases, num_rounds, round_index + 1)
             - self.taken_before(counts, phases, num_rounds, round_index))
    return tf.random.experimental.stateless_shuffle(
        tf.repeat(tf.range(self.files_per_epoch, dtype=tf.int64), taken),
        input_streams.stream_seed(self.seed, _ROUND_STREAM, epoch, round_index))

  def read_file(self, file_index, skipped):
    """This pipeline's records of file `file_index`, after the first `skipped` of them."""
    records = tf.data.TFRecordDataset(tf.gather(self.paths, file_index), buffer_size=self.file_buffer_bytes)
    if self.shard_records:
      # Whole strides are skipped before sharding, where TFRecordDataset skips records without parsing.
      return records.skip(skipped * self.num_pipelines).shard(self.num_pipelines, self.pipeline_id)
    return records.skip(skipped)

  def epoch_records(self, epoch, offset, file_skips, first_round, round_skip) -> tf.data.Dataset:
    """Epoch `epoch` from its record `offset` on, reading from where `locate` says.

    Reading starts at the window of the offset, `round_skip` records into round `first_round`, where file
    k has given `file_skips[k]` records; the window is shuffled whole and its records before the offset
    left out. At the start of an epoch, all of these are 0.
    """
    files, counts, phases, num_rounds = self.plan(epoch)
    sources = [self.read_file(files[k], file_skips[k]) for k in range(self.files_per_epoch)]
    choices = tf.data.Dataset.range(first_round, num_rounds).map(
        lambda round_index: self.round_choices(epoch, counts, phases, num_rounds, round_index)).unbatch()
    merged = tf.data.Dataset.choose_from_datasets(sources, choices.skip(round_skip))
    windows = merged.batch(self.window).enumerate(start=offset // self.window).map(
        lambda index, window: tf.random.experimental.stateless_shuffle(
            window, input_streams.stream_seed(self.seed, _WINDOW_STREAM, epoch, index)))
    # Prefetching the next window lets the interleave run beside the batching and parsing downstream.
    return windows.prefetch(1).unbatch().skip(offset % self.window).enumerate(start=offset)

  def locate(self, start_example: int) -> Tuple[int, np.int64, np.ndarray, np.int64, np.int64]:
    """Where the epoch holding example `start_example` starts reading (see `epoch_records`); runs eagerly."""
    epoch, offset = 0, start_example
    if self.shard_files:
      while offset >= (length := int(tf.reduce_sum(self.epoch_files(epoch)[1]))):
        offset -= length
        epoch += 1
    else:
      # This pipeline reads all its records every epoch, so all its epochs are equally long.
      epoch, offset = divmod(start_example, int(tf.reduce_sum(self.counts)))
    _, counts, phases, num_rounds = (tensor.numpy() for tensor in self.plan(epoch))
    window_start = offset // self.window * self.window

    def records_before(round_index):
      return int(self.taken_before(counts, phases, num_rounds, round_index).sum())

    # The round holding the window's first record: the last that starts at or before it (an empty round
    # starts where the next one does).
    first_round = bisect.bisect_right(range(int(num_rounds)), window_start, key=records_before) - 1
    round_skip = window_start - records_before(first_round)
    skipped_choices = self.round_choices(epoch, counts, phases, num_rounds, first_round).numpy()[:round_skip]
    file_skips = (self.taken_before(counts, phases, num_rounds, first_round)
                  + np.bincount(skipped_choices, minlength=self.files_per_epoch))
    return epoch, np.int64(offset), file_skips, np.int64(first_round), np.int64(round_skip)

  def records(self, start_example: int = 0, num_epochs: int = -1) -> tf.data.Dataset:
    """The stream from `start_example` on: the rest of its epoch, then `num_epochs` - 1 more, or all (-1).

    Its elements are (epoch, index of the record in the epoch, serialized record).
    """
    epoch, *located = self.locate(start_example)
    from_the_start = (np.int64(0), np.zeros(self.files_per_epoch, np.int64), np.int64(0), np.int64(0))
    # One dataset function for every epoch, the first included: each is traced once.
    starts = tf.data.Dataset.from_tensors(tuple(located)).concatenate(
        tf.data.Dataset.from_tensors(from_the_start).repeat())
    epochs = tf.data.Dataset.zip(tf.data.Dataset.counter(epoch), starts).take(num_epochs)
    return epochs.flat_map(lambda epoch, start: self.epoch_records(epoch, *start).map(
        lambda index, record: (epoch, index, record)))


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
                        shuffle_window: int = 1024,
                        start_example: int = 0,
                        record_counts: Optional[Dict[str, int]] = None,
                        masking_recipe: Optional[MaskingRecipe] = None) -> tf.data.Dataset:
  """Batches of pretraining inputs read from TFRecord files.

  Each epoch reads all the files (of this input pipeline) at once, every file in proportion to its
  record count, and shuffles windows of `shuffle_window` records, with draws of (`seed`, epoch): see the
  module docstring. Training repeats forever; batches may span epochs. Evaluation reads training's first
  epoch, once: the same batches for the same `seed`, each a sample of every file.

  The stream is a function of the files, their record counts, `seed`, `shuffle_window` and the input
  pipeline alone, the same in every run. `start_example=n` yields exactly what `start_example=0` yields
  after its first n examples, reading no record before the shuffle window that holds the position, so
  training resumes exactly and at once after a crash. Unmasked records are masked here (`DynamicMasker`)
  with the recipe they carry, each example with draws of (`seed`, input pipeline, epoch, its index in the
  epoch): new masks every epoch, the same masks for the same seed, the same after a resume. This function
  runs small TensorFlow computations eagerly (to count records and find the start), so call it eagerly, as
  `distribute_datasets_from_function` does. A pipeline keeps all the files of its epoch open at once.

  Args:
    input_patterns: comma-separated files or globs, or a list of such strings (see
      `expand_input_patterns`).
    max_seq_length: length of `input_ids`, `input_mask` and `segment_ids` in the files.
    max_predictions_per_seq: length of the `masked_lm_*` features in masked files; for unmasked files
      (`--dynamic_masking`), the most positions masking picks per sequence.
    batch_size: the per-replica batch size, e.g. `input_context.get_per_replica_batch_size(global)`.
      The last partial batch is dropped so that every shape is static.
    is_training: repeat forever (True), or read one epoch (False).
    input_context: from `tf.distribute.Strategy.distribute_datasets_from_function`. With several input
      pipelines, each reads every `num_input_pipelines`-th file of each epoch's order, or every
      `num_input_pipelines`-th record of each file when there are fewer files than pipelines; their
      epochs are disjoint and together hold every record once.
    seed: fixes the file orders, the interleaving and the shuffles; the same seed gives the same batches.
    shuffle_window: records of an epoch shuffled together, and about the records of each round.
    start_example: in training, the number of examples this input pipeline already delivered, i.e.
      `global_step * global_batch_size // num_input_pipelines`; need not be a multiple of `batch_size`.
    record_counts: the number of records of each file by path (see `count_records`, whose cache spares
      a long job the counting on every restart); counted here when not given. Files without records are
      left out.
    masking_recipe: for unmasked records (`--dynamic_masking`), the recipe they carry, which
      `check_pretraining_records` returns; None for masked records. It is passed in rather than read here,
      so that a resumed stream reads no record before its window.

  Returns:
    A dataset of dicts: int32 `input_word_ids`, `input_mask`, `input_type_ids` `[batch, max_seq_length]`;
    int32 `masked_lm_positions`, `masked_lm_ids` and float32 `masked_lm_weights`
    `[batch, max_predictions_per_seq]`; int32 `sentence_order_labels` `[batch]`.

  Raises:
    FileNotFoundError: no file matches `input_patterns`.
    ValueError: a `shuffle_window` below 1, a negative `start_example` in training, a file missing from
      `record_counts`, no record in any file or none for this input pipeline.
  """
  files = expand_input_patterns(input_patterns)
  num_pipelines, pipeline_id = input_streams.input_pipeline(input_context)
  if is_training and start_example < 0:
    raise OptionError(f"start_example must be 0 or more, got {start_example}.")
  if shuffle_window < 1:
    raise OptionError(f"shuffle_window must be 1 or more, got {shuffle_window}.")
  files, counts = _nonempty_files(files, count_records(files) if record_counts is None else record_counts)
  # The start is located eagerly on the CPU, where tf.data runs the same ops.
  with tf.device("/CPU:0"):
    epochs = _InterleavedEpochs(files, counts, seed, shuffle_window, num_pipelines, pipeline_id)
    dataset = epochs.records(start_example) if is_training else epochs.records(num_epochs=1)

  if masking_recipe is None:
    parse = _masked_records_parser(max_seq_length, max_predictions_per_seq)
  else:
    parse = _unmasked_records_parser(
        max_seq_length, DynamicMasker(masking_recipe, max_seq_length, max_predictions_per_seq,
                                      input_streams.stream_seed(seed, _MASKING_STREAM, pipeline_id)))

  # Parsing (and masking) whole batches is faster than one record at a time.
  dataset = dataset.batch(batch_size, drop_remainder=True)
  dataset = dataset.map(parse, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
  return dataset.prefetch(tf.data.AUTOTUNE)


def _parsing_spec(features: dict, lengths: Dict[str, int]) -> Dict[str, tf.io.FixedLenFeature]:
  return {name: tf.io.FixedLenFeature([lengths[name]], tf.float32 if kind == "float_list" else tf.int64)
          for name, (kind, _) in features.items()}


def _model_inputs(features: Dict[str, tf.Tensor]) -> Dict[str, tf.Tensor]:
  batch = {output: tf.cast(features[name], tf.float32 if name == "masked_lm_weights" else tf.int32)
           for name, output in _OUTPUT_NAMES.items()}
  batch["sentence_order_labels"] = tf.cast(features["next_sentence_labels"][:, 0], tf.int32)
  return batch


def _masked_records_parser(max_seq_length: int, max_predictions_per_seq: int):
  spec = _parsing_spec(MASKED_FEATURES, feature_lengths(max_seq_length, max_predictions_per_seq))

  def parse(epochs, indices, serialized):
    del epochs, indices
    return _model_inputs(tf.io.parse_example(serialized, spec))

  return parse


def _unmasked_records_parser(max_seq_length: int, masker: DynamicMasker):
  spec = _parsing_spec(UNMASKED_FEATURES, feature_lengths(max_seq_length, masker.max_predictions_per_seq,
                                                          masked=False))
  del spec[MASKING_RECIPE_FEATURE]  # the same in every record: the caller has read it

  def parse(epochs, indices, serialized):
    features = {name: tf.cast(value, tf.int32) for name, value in tf.io.parse_example(serialized, spec).items()}
    (features["input_ids"], features["masked_lm_positions"], features["masked_lm_ids"],
     features["masked_lm_weights"]) = masker(features["input_ids"], features["input_mask"],
                                             features["token_boundary"], epochs, indices)
    return _model_inputs(features)

  return parse
