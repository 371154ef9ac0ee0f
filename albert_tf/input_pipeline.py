"""Pretraining input: TFRecord files of `tf.train.Example` into batches of the model's inputs.

The files follow the layout of Google's `create_pretraining_data.py`, which our own data tool writes too:
`input_ids`, `input_mask`, `segment_ids` (and, optionally, `token_boundary`) of `max_seq_length` values,
`masked_lm_positions`, `masked_lm_ids`, `masked_lm_weights` of `max_predictions_per_seq` values, and one
`next_sentence_labels` value, the sentence-order label (1 = swapped or from another document).

Batches use the Model Garden / TF-Hub input names and int32 tensors of static shapes, as TPUs require.
"""

import re
from typing import Dict, List, Optional, Sequence, Union

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


def _feature_lengths(max_seq_length: int, max_predictions_per_seq: int) -> Dict[str, int]:
  flag_values = {"max_seq_length": max_seq_length, "max_predictions_per_seq": max_predictions_per_seq}
  return {name: flag_values[flag] if flag else 1 for name, (_, flag) in _FEATURE_KINDS.items()}


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
      # TF's message is wrapped in op details such as "{{function_node ...}} ... [Op:IteratorGetNext]".
      reason = re.sub(r"\{\{.*?\}\}\s*|\s*\[Op:.*$", "", error.message)
      raise ValueError(f"{path}: corrupt record, damaged or not a TFRecord file ({reason}).") from None
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


def pretraining_dataset(input_patterns: Union[str, Sequence[str]],
                        max_seq_length: int,
                        max_predictions_per_seq: int,
                        batch_size: int,
                        is_training: bool = True,
                        input_context: Optional[tf.distribute.InputContext] = None,
                        seed: Optional[int] = None,
                        shuffle_buffer_size: int = 1000,
                        cycle_length: Optional[int] = None) -> tf.data.Dataset:
  """Batches of pretraining inputs read from TFRecord files.

  Training shuffles the file list, interleaves `cycle_length` files at a time, shuffles records in a
  buffer and repeats forever; evaluation reads the files in order, once, unshuffled.

  The dataset is deterministic: built again with the same arguments and the same `seed` (and the same
  global seed, if `tf.random.set_seed` was called), it yields the same batches in the same order, so that
  training resumes exactly by skipping the batches already consumed. With `seed=None` training order
  differs from run to run.

  Args:
    input_patterns: comma-separated files or globs, or a list of such strings (see
      `expand_input_patterns`).
    max_seq_length: length of `input_ids`, `input_mask` and `segment_ids` in the files.
    max_predictions_per_seq: length of the `masked_lm_*` features in the files.
    batch_size: the per-replica batch size, e.g. `input_context.get_per_replica_batch_size(global)`.
      The last partial batch is dropped so that every shape is static.
    is_training: shuffle and repeat (True), or read every record once in file order (False).
    input_context: from `tf.distribute.Strategy.distribute_datasets_from_function`. With several input
      pipelines, each reads every `num_input_pipelines`-th file, or every `num_input_pipelines`-th record
      of each file when there are fewer files than pipelines.
    seed: seeds the file and record shuffles.
    shuffle_buffer_size: records in the training shuffle buffer.
    cycle_length: files read at once in training; defaults to min(4, files this pipeline reads).

  Returns:
    A dataset of dicts: int32 `input_word_ids`, `input_mask`, `input_type_ids` `[batch, max_seq_length]`;
    int32 `masked_lm_positions`, `masked_lm_ids` and float32 `masked_lm_weights`
    `[batch, max_predictions_per_seq]`; int32 `sentence_order_labels` `[batch]`.

  Raises:
    FileNotFoundError: no file matches `input_patterns`.
  """
  files = expand_input_patterns(input_patterns)
  num_pipelines = input_context.num_input_pipelines if input_context else 1
  pipeline_id = input_context.input_pipeline_id if input_context else 0
  shard_files = num_pipelines > 1 and len(files) >= num_pipelines
  shard_records = num_pipelines > 1 and not shard_files
  if shard_files:
    files = files[pipeline_id::num_pipelines]

  def read_file(path):
    records = tf.data.TFRecordDataset(path)
    # Sharding each file's records (not the interleaved stream) keeps pipelines disjoint whatever the
    # file order each one drew.
    return records.shard(num_pipelines, pipeline_id) if shard_records else records

  dataset = tf.data.Dataset.from_tensor_slices(files)
  if is_training:
    # Shuffling before `repeat` draws a new file order every epoch, all fixed by `seed`.
    dataset = dataset.shuffle(len(files), seed=seed, reshuffle_each_iteration=True).repeat()
    dataset = dataset.interleave(
        read_file, cycle_length=cycle_length or min(4, len(files)), num_parallel_calls=tf.data.AUTOTUNE,
        deterministic=True)
    dataset = dataset.shuffle(shuffle_buffer_size, seed=seed)
  else:
    dataset = dataset.flat_map(read_file)

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
