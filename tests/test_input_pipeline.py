import numpy as np
import pytest
import tensorflow as tf

from albert_tf.input_pipeline import check_pretraining_records, expand_input_patterns, pretraining_dataset

SEQ_LENGTH = 8
MAX_PREDICTIONS = 3


def int_feature(values):
  return tf.train.Feature(int64_list=tf.train.Int64List(value=list(values)))


def float_feature(values):
  return tf.train.Feature(float_list=tf.train.FloatList(value=list(values)))


def example_features(record_id, token_boundary=True):
  """Features of Google's layout whose values all derive from `record_id`, so each record is recognizable."""
  features = {
      "input_ids": int_feature([record_id] + [record_id % 97 + i for i in range(1, SEQ_LENGTH)]),
      "input_mask": int_feature([1] * (SEQ_LENGTH - 2) + [0, 0]),
      "segment_ids": int_feature([0] * (SEQ_LENGTH // 2) + [1] * (SEQ_LENGTH // 2)),
      "masked_lm_positions": int_feature([1, 2, 0]),
      "masked_lm_ids": int_feature([record_id % 50, 7, 0]),
      "masked_lm_weights": float_feature([1.0, 0.5, 0.0]),
      "next_sentence_labels": int_feature([record_id % 2]),
  }
  if token_boundary:
    features["token_boundary"] = int_feature([1] * SEQ_LENGTH)
  return features


def write_records(path, record_ids, edit=None, token_boundary=True):
  """Writes one example per id; `edit(features)` may change the features before writing."""
  with tf.io.TFRecordWriter(str(path)) as writer:
    for record_id in record_ids:
      features = example_features(record_id, token_boundary)
      if edit:
        edit(features)
      writer.write(tf.train.Example(features=tf.train.Features(feature=features)).SerializeToString())
  return str(path)


def write_files(tmp_path, num_files, records_per_file):
  return [write_records(tmp_path / f"part-{i:02d}.tfrecord", range(i * 100, i * 100 + records_per_file))
          for i in range(num_files)]


def dataset(patterns, batch_size, **kwargs):
  return pretraining_dataset(patterns, SEQ_LENGTH, MAX_PREDICTIONS, batch_size, **kwargs)


def record_ids(ds, num_batches=None):
  batches = ds.take(num_batches) if num_batches else ds
  return [int(i) for batch in batches for i in batch["input_word_ids"][:, 0]]


def test_static_shapes_dtypes_and_values(tmp_path):
  path = write_records(tmp_path / "data.tfrecord", range(5))
  ds = dataset(path, batch_size=2, is_training=False)
  expected_specs = {
      "input_word_ids": ([2, SEQ_LENGTH], tf.int32),
      "input_mask": ([2, SEQ_LENGTH], tf.int32),
      "input_type_ids": ([2, SEQ_LENGTH], tf.int32),
      "masked_lm_positions": ([2, MAX_PREDICTIONS], tf.int32),
      "masked_lm_ids": ([2, MAX_PREDICTIONS], tf.int32),
      "masked_lm_weights": ([2, MAX_PREDICTIONS], tf.float32),
      "sentence_order_labels": ([2], tf.int32)}
  specs = {name: (spec.shape.as_list(), spec.dtype) for name, spec in ds.element_spec.items()}
  assert specs == expected_specs

  batches = list(ds.as_numpy_iterator())
  assert len(batches) == 2  # the fifth record, a partial batch, is dropped
  for row, record_id in enumerate(range(4)):
    batch, i = batches[row // 2], row % 2
    written = example_features(record_id)
    for name, feature in (("input_word_ids", "input_ids"), ("input_mask", "input_mask"),
                          ("input_type_ids", "segment_ids"), ("masked_lm_positions", "masked_lm_positions"),
                          ("masked_lm_ids", "masked_lm_ids")):
      np.testing.assert_array_equal(batch[name][i], written[feature].int64_list.value)
    np.testing.assert_array_equal(batch["masked_lm_weights"][i],
                                  written["masked_lm_weights"].float_list.value)
    assert batch["sentence_order_labels"][i] == record_id % 2


def test_training_shapes_are_static_and_dataset_repeats(tmp_path):
  files = write_files(tmp_path, num_files=2, records_per_file=3)
  ds = dataset(files, batch_size=4, seed=1)
  assert ds.element_spec["input_word_ids"].shape.as_list() == [4, SEQ_LENGTH]
  assert ds.element_spec["sentence_order_labels"].shape.as_list() == [4]
  ids = record_ids(ds, num_batches=6)  # 24 records from 6 written: the data repeat
  assert sorted(set(ids)) == [0, 1, 2, 100, 101, 102]


def test_same_seed_same_batches_other_seed_differs(tmp_path):
  files = write_files(tmp_path, num_files=3, records_per_file=8)
  first = list(dataset(files, batch_size=4, seed=7, shuffle_buffer_size=16).take(10).as_numpy_iterator())
  again = list(dataset(files, batch_size=4, seed=7, shuffle_buffer_size=16).take(10).as_numpy_iterator())
  for ours, theirs in zip(first, again):
    for name in ours:
      np.testing.assert_array_equal(ours[name], theirs[name])
  other = record_ids(dataset(files, batch_size=4, seed=8, shuffle_buffer_size=16), num_batches=10)
  assert record_ids(dataset(files, batch_size=4, seed=7, shuffle_buffer_size=16), num_batches=10) != other


@pytest.mark.parametrize("num_files", [1, 4])  # shards records of one file, or the file list
def test_eval_shards_are_disjoint_and_cover_everything(tmp_path, num_files):
  files = write_files(tmp_path, num_files=num_files, records_per_file=5)
  shards = []
  for pipeline_id in range(2):
    context = tf.distribute.InputContext(num_input_pipelines=2, input_pipeline_id=pipeline_id,
                                         num_replicas_in_sync=2)
    shards.append(record_ids(dataset(files, batch_size=1, is_training=False, input_context=context)))
  assert not set(shards[0]) & set(shards[1])
  assert sorted(shards[0] + shards[1]) == record_ids(dataset(files, batch_size=1, is_training=False))


def test_reads_files_without_token_boundary(tmp_path):
  path = write_records(tmp_path / "old.tfrecord", range(4), token_boundary=False)
  check_pretraining_records([path], SEQ_LENGTH, MAX_PREDICTIONS)
  assert record_ids(dataset(path, batch_size=2, is_training=False)) == [0, 1, 2, 3]


def test_expand_comma_list_and_globs(tmp_path):
  a, b, c = (write_records(tmp_path / name, [0]) for name in ("a.tfrecord", "b.tfrecord", "c.other"))
  assert expand_input_patterns(f"{tmp_path}/*.tfrecord") == [a, b]
  assert expand_input_patterns(f"{c}, {tmp_path}/*.tfrecord,{a}") == [a, b, c]
  assert expand_input_patterns([f"{b},{c}", a]) == [a, b, c]


def test_expand_raises_naming_patterns(tmp_path):
  with pytest.raises(FileNotFoundError, match=r"nothing-\*\.tfrecord"):
    expand_input_patterns(f"{tmp_path}/nothing-*.tfrecord")


def test_check_accepts_google_layout(tmp_path):
  files = write_files(tmp_path, num_files=2, records_per_file=2)
  check_pretraining_records(files, SEQ_LENGTH, MAX_PREDICTIONS)


def test_check_reports_wrong_length(tmp_path):
  path = write_records(tmp_path / "long.tfrecord", [0])
  with pytest.raises(ValueError, match=rf"long\.tfrecord: feature 'input_ids' has {SEQ_LENGTH} values, "
                                       r"expected --max_seq_length=16"):
    check_pretraining_records([path], 16, MAX_PREDICTIONS)
  with pytest.raises(ValueError,
                     match=r"'masked_lm_positions' has 3 values, expected --max_predictions_per_seq=5"):
    check_pretraining_records([path], SEQ_LENGTH, 5)


def test_check_reports_missing_feature(tmp_path):
  path = write_records(tmp_path / "partial.tfrecord", [0], edit=lambda features: features.pop("segment_ids"))
  with pytest.raises(ValueError, match=r"partial\.tfrecord: feature 'segment_ids' is missing"):
    check_pretraining_records([path], SEQ_LENGTH, MAX_PREDICTIONS)


def test_check_reports_wrong_type(tmp_path):
  def weights_as_ints(features):
    features["masked_lm_weights"] = int_feature([1, 1, 0])
  path = write_records(tmp_path / "ints.tfrecord", [0], edit=weights_as_ints)
  with pytest.raises(ValueError,
                     match=r"ints\.tfrecord: feature 'masked_lm_weights' is stored as int64_list"):
    check_pretraining_records([path], SEQ_LENGTH, MAX_PREDICTIONS)


def test_check_reports_empty_and_corrupt_files(tmp_path):
  good = write_records(tmp_path / "good.tfrecord", [0])
  empty = write_records(tmp_path / "empty.tfrecord", [])
  with pytest.raises(ValueError, match=r"empty\.tfrecord: the file holds no records"):
    check_pretraining_records([good, empty], SEQ_LENGTH, MAX_PREDICTIONS)
  corrupt = tmp_path / "corrupt.tfrecord"
  corrupt.write_bytes(np.random.default_rng(0).integers(0, 256, 200, dtype=np.uint8).tobytes())
  with pytest.raises(ValueError, match=r"corrupt\.tfrecord: corrupt record"):
    check_pretraining_records([good, str(corrupt)], SEQ_LENGTH, MAX_PREDICTIONS)


def test_check_reports_record_that_is_not_an_example(tmp_path):
  path = str(tmp_path / "text.tfrecord")
  with tf.io.TFRecordWriter(path) as writer:
    writer.write(b"\xff\xff not a proto")
  with pytest.raises(ValueError, match=r"text\.tfrecord: the first record is not a tf\.train\.Example"):
    check_pretraining_records([path], SEQ_LENGTH, MAX_PREDICTIONS)
