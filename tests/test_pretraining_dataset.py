import itertools
import json

import numpy as np
import pytest
import tensorflow as tf

from albert_tf.data.pretraining_dataset import pretraining_dataset
from albert_tf.data.record_files import check_pretraining_records, count_records
from albert_tf.files import expand_input_patterns

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


def write_sized_files(tmp_path, sizes):
  """Writes file i with `sizes[i]` records whose ids are i * 1000 + their index in the file."""
  return [write_records(tmp_path / f"sized-{i}.tfrecord", range(i * 1000, i * 1000 + size))
          for i, size in enumerate(sizes)]


def pipeline_context(num_pipelines, pipeline_id):
  return tf.distribute.InputContext(num_input_pipelines=num_pipelines, input_pipeline_id=pipeline_id,
                                    num_replicas_in_sync=num_pipelines)


def dataset(patterns, batch_size, **kwargs):
  return pretraining_dataset(patterns, SEQ_LENGTH, MAX_PREDICTIONS, batch_size, **kwargs)


def record_ids(ds, num_batches=None):
  batches = ds.take(num_batches) if num_batches else ds
  return [int(i) for batch in batches.as_numpy_iterator() for i in batch["input_word_ids"][:, 0]]


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
  first = list(dataset(files, batch_size=4, seed=7, shuffle_chunk_size=4).take(10).as_numpy_iterator())
  again = list(dataset(files, batch_size=4, seed=7, shuffle_chunk_size=4).take(10).as_numpy_iterator())
  for ours, theirs in zip(first, again):
    for name in ours:
      np.testing.assert_array_equal(ours[name], theirs[name])
  other = record_ids(dataset(files, batch_size=4, seed=8, shuffle_chunk_size=4), num_batches=10)
  assert record_ids(dataset(files, batch_size=4, seed=7, shuffle_chunk_size=4), num_batches=10) != other


@pytest.mark.parametrize("sizes, num_pipelines, starts", [
    ([37, 50, 11], 1, [0, 1, 3, 7, 8, 9, 37, 97, 98, 150, 400]),
    ([37, 50, 11, 23], 2, [0, 9, 60, 150, 400]),  # file sharding: this pipeline's epochs differ in length
    ([37, 50, 11], 4, [0, 9, 23, 150, 400]),  # record sharding: 9 + 12 + 2 records an epoch
])
def test_start_example_continues_the_stream(tmp_path, sizes, num_pipelines, starts):
  files = write_sized_files(tmp_path, sizes)
  kwargs = dict(batch_size=4, seed=3, shuffle_chunk_size=8, record_counts=count_records(files),
                input_context=pipeline_context(num_pipelines, num_pipelines - 1))
  stream = record_ids(dataset(files, **kwargs), num_batches=110)
  for start in starts:
    assert record_ids(dataset(files, start_example=start, **kwargs), num_batches=5) == \
        stream[start:start + 20], f"start_example={start}"


def test_every_epoch_reads_each_file_in_shuffled_chunks(tmp_path):
  sizes = [37, 50, 11]
  files = write_sized_files(tmp_path, sizes)
  stream = record_ids(dataset(files, batch_size=1, seed=5, shuffle_chunk_size=8), num_batches=3 * 98)
  epochs = [stream[i:i + 98] for i in range(0, len(stream), 98)]
  for epoch in epochs:
    assert sorted(epoch) == sorted(i * 1000 + j for i, size in enumerate(sizes) for j in range(size))
    # Files follow one another, each as its chunks of 8 consecutive records, in order, each shuffled.
    assert sorted(file for file, _ in itertools.groupby(record_id // 1000 for record_id in epoch)) == [0, 1, 2]
    runs = [[record_id % 1000 for record_id in epoch if record_id // 1000 == file] for file in range(3)]
    for run in runs:
      assert [sorted(run[k:k + 8]) for k in range(0, len(run), 8)] == \
          [list(range(k, min(k + 8, len(run)))) for k in range(0, len(run), 8)]
    assert any(run != sorted(run) for run in runs)
  assert epochs[0] != epochs[1] != epochs[2] != epochs[0]


def test_the_seed_the_epoch_the_file_and_the_chunk_each_change_the_shuffle(tmp_path):
  files = write_sized_files(tmp_path, [16, 16])

  def chunk_orders(seed):
    """(epoch, file, chunk) -> the order of the chunk's 8 records, as offsets within the chunk."""
    stream = record_ids(dataset(files, batch_size=1, seed=seed, shuffle_chunk_size=8), num_batches=3 * 32)
    orders = {}
    for epoch in range(3):
      for file in range(2):
        run = [record % 1000 for record in stream[epoch * 32:(epoch + 1) * 32] if record // 1000 == file]
        for chunk in range(2):
          orders[epoch, file, chunk] = tuple(offset - 8 * chunk for offset in run[8 * chunk:8 * chunk + 8])
    return orders

  orders = chunk_orders(3)
  assert orders[0, 0, 0] != orders[0, 1, 0]  # another file
  assert orders[0, 0, 0] != orders[1, 0, 0]  # another epoch
  assert orders[0, 0, 0] != orders[0, 0, 1]  # another chunk of the file
  assert orders != chunk_orders(4)  # another seed

  # One record a file: the stream is the order of the files, drawn anew each epoch and for each seed.
  (tmp_path / "singles").mkdir()
  singles = write_sized_files(tmp_path / "singles", [1] * 6)
  file_orders = {seed: record_ids(dataset(singles, batch_size=6, seed=seed), num_batches=4) for seed in (3, 4)}
  assert len({tuple(file_orders[3][i:i + 6]) for i in range(0, 24, 6)}) > 1
  assert file_orders[3] != file_orders[4]


def test_start_example_continues_the_stream_from_every_position(tmp_path):
  # File sharding, where a pipeline's epochs differ in length: starts on every file and epoch boundary.
  files = write_sized_files(tmp_path, [7, 5, 3, 4])
  kwargs = dict(batch_size=1, seed=2, shuffle_chunk_size=4, record_counts=count_records(files),
                input_context=pipeline_context(2, 1))
  stream = record_ids(dataset(files, **kwargs), num_batches=60)
  for start in range(40):
    assert record_ids(dataset(files, start_example=start, **kwargs), num_batches=3) == stream[start:start + 3], \
        f"start_example={start}"


@pytest.mark.parametrize("sizes, epoch_lengths", [
    ([5, 5, 5, 5], [10, 10]),  # shards the files of each epoch's order
    ([9], [5, 4]),  # shards the records of the one file
])
def test_training_pipelines_split_every_epoch(tmp_path, sizes, epoch_lengths):
  files = write_sized_files(tmp_path, sizes)
  streams = [record_ids(dataset(files, batch_size=1, shuffle_chunk_size=2,
                                input_context=pipeline_context(2, pipeline_id)), num_batches=3 * length)
             for pipeline_id, length in enumerate(epoch_lengths)]
  everything = sorted(i * 1000 + j for i, size in enumerate(sizes) for j in range(size))
  for epoch in range(3):
    shards = [stream[epoch * length:(epoch + 1) * length] for stream, length in zip(streams, epoch_lengths)]
    assert not set(shards[0]) & set(shards[1])
    assert sorted(shards[0] + shards[1]) == everything


def test_start_example_reads_no_earlier_file(tmp_path):
  sizes = [37, 50, 11]
  files = write_sized_files(tmp_path, sizes)
  counts = count_records(files)
  stream = record_ids(dataset(files, batch_size=4, shuffle_chunk_size=8, record_counts=counts),
                      num_batches=24)
  first_file = stream[0] // 1000
  with open(files[first_file], "wb") as f:
    f.write(b"not a TFRecord file" * 10)
  start = sizes[first_file] + 5
  num_batches = (sum(sizes) - start) // 4  # up to the end of the first epoch, which reads it again
  resumed = dataset(files, batch_size=4, shuffle_chunk_size=8, record_counts=counts, start_example=start)
  assert record_ids(resumed, num_batches) == stream[start:start + 4 * num_batches]


def test_training_leaves_out_empty_files_and_checks_its_arguments(tmp_path):
  full = write_records(tmp_path / "full.tfrecord", range(3))
  empty = write_records(tmp_path / "empty.tfrecord", [])
  assert sorted(record_ids(dataset([full, empty], batch_size=1), num_batches=3)) == [0, 1, 2]
  with pytest.raises(ValueError, match=r"None of the 1 input file\(s\) holds a record"):
    dataset(empty, batch_size=1)
  with pytest.raises(ValueError, match=r"no count for .*full\.tfrecord"):
    dataset([full, empty], batch_size=1, record_counts={empty: 0})
  with pytest.raises(ValueError, match=r"Input pipeline 3 of 4 gets no record"):
    dataset(full, batch_size=1, input_context=pipeline_context(4, 3))
  with pytest.raises(ValueError, match=r"start_example"):
    dataset(full, batch_size=1, start_example=-1)


def test_count_records_keeps_a_cache_and_recounts_changed_files(tmp_path):
  a = write_records(tmp_path / "a.tfrecord", range(3))
  b = write_records(tmp_path / "b.tfrecord", range(5))
  cache_file = str(tmp_path / "counts.json")
  assert count_records([a, b], cache_file) == {a: 3, b: 5}
  cache = json.loads((tmp_path / "counts.json").read_text())
  assert {path: entry["records"] for path, entry in cache.items()} == {a: 3, b: 5}

  cache[a]["records"] = 99  # only a count read from the cache can be 99
  (tmp_path / "counts.json").write_text(json.dumps(cache))
  write_records(b, range(7))
  assert count_records([a, b], cache_file) == {a: 99, b: 7}
  assert json.loads((tmp_path / "counts.json").read_text())[b]["records"] == 7
  assert count_records([a, b]) == {a: 3, b: 7}

  (tmp_path / "c.tfrecord").write_bytes(b"not a TFRecord file" * 10)
  with pytest.raises(ValueError, match=r"c\.tfrecord: corrupt record"):
    count_records([a, str(tmp_path / "c.tfrecord")])


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
