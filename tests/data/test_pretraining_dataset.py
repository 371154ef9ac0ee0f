import json

import numpy as np
import pytest
from scipy import stats
import tensorflow as tf

from albert_tf.data.pretraining_dataset import pretraining_dataset
from albert_tf.data.record_files import check_pretraining_records, count_records, read_record_stats, write_record_stats
from albert_tf.errors import DataError
from albert_tf.files import expand_input_patterns, list_folder, read_json, remove, write_json

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


def ids_of_batches(batches):
  """The record id (its first input id) of every row of NumPy batches, in order."""
  return [int(i) for batch in batches for i in batch["input_word_ids"][:, 0]]


def record_ids(ds, num_batches=None):
  batches = ds.take(num_batches) if num_batches else ds
  return ids_of_batches(batches.as_numpy_iterator())


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
  assert len(batches) == 2  # four of the five records: the last partial batch is dropped
  rows = [(batch, i) for batch in batches for i in range(2)]
  assert len({batch["input_word_ids"][i, 0] for batch, i in rows}) == 4
  for batch, i in rows:
    record_id = int(batch["input_word_ids"][i, 0])
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
  first = list(dataset(files, batch_size=4, seed=7, shuffle_window=4).take(10).as_numpy_iterator())
  again = list(dataset(files, batch_size=4, seed=7, shuffle_window=4).take(10).as_numpy_iterator())
  for ours, theirs in zip(first, again):
    for name in ours:
      np.testing.assert_array_equal(ours[name], theirs[name])
  other = record_ids(dataset(files, batch_size=4, seed=8, shuffle_window=4), num_batches=10)
  assert ids_of_batches(first) != other


def all_records(sizes):
  return sorted(i * 1000 + j for i, size in enumerate(sizes) for j in range(size))


def test_every_epoch_is_a_new_permutation_of_all_records(tmp_path):
  sizes = [37, 50, 11]
  files = write_sized_files(tmp_path, sizes)
  stream = record_ids(dataset(files, batch_size=1, seed=5, shuffle_window=8), num_batches=3 * 98)
  epochs = [stream[i:i + 98] for i in range(0, len(stream), 98)]
  for epoch in epochs:
    assert sorted(epoch) == all_records(sizes)
  assert epochs[0] != epochs[1] != epochs[2] != epochs[0]


# Two record sets as two data runs write them, (sizes of the large set's files, of the small set's), 3:1 in
# records and in unequal numbers of files.
RECORD_SETS = [([900], [300]), ([250, 300, 350], [100, 200]), ([900], [100, 100, 100])]


@pytest.mark.parametrize("large, small", RECORD_SETS)
def test_rounds_hold_the_files_in_proportion(tmp_path, large, small):
  # With a window of one record nothing is shuffled after the rounds, and an epoch of N records is N rounds.
  # Before round m, file f (n records) has given floor((m·n + h) / N), within 1 of m·n / N; so the small
  # set's records among the first L of an epoch, for L in round m, are within |small| of m·p (p = its
  # share), and L is within (files + 1) of m: the count is within |small| + (files + 1)·p of L·p, whatever
  # the seed, the phases h and the rounds' orders.
  large, small = [size // 10 for size in large], [size // 10 for size in small]
  files = write_sized_files(tmp_path, large + small)
  total, share = sum(large + small), sum(small) / sum(large + small)
  bound = len(small) + (len(files) + 1) * share
  stream = record_ids(dataset(files, batch_size=total, shuffle_window=1), num_batches=2)
  for epoch in (stream[:total], stream[total:]):
    small_counts = np.cumsum([record_id // 1000 >= len(large) for record_id in epoch])
    assert np.abs(small_counts - np.arange(1, total + 1) * share).max() < bound


@pytest.mark.parametrize("large, small", RECORD_SETS)
def test_every_batch_draws_from_both_record_sets_in_proportion(tmp_path, large, small):
  # With the default window (1024), a batch of 64 is a uniform sample of its window, which holds the sets
  # about 3:1 (its whole rounds exactly, up to a record a file, and random parts of the rounds at its
  # ends): the small set's count in a batch is hypergeometric, 16 ± 3.4, outside these bounds with a
  # probability below 1e-4.
  files = write_sized_files(tmp_path, large + small)
  total, share = sum(large + small), sum(small) / sum(large + small)
  batch_size = 64
  hypergeometric = stats.hypergeom(1024, round(1024 * share), batch_size)
  low, high = hypergeometric.ppf(0.5e-4), hypergeometric.isf(0.5e-4)
  assert 0 < low < batch_size * share < high < batch_size
  batches = dataset(files, batch_size=batch_size, seed=3).take(total // batch_size)
  for batch in batches.as_numpy_iterator():
    assert low <= np.sum(batch["input_word_ids"][:, 0] // 1000 >= len(large)) <= high


def test_the_seed_the_epoch_and_the_window_each_change_the_order(tmp_path):
  # One file: its records enter the window shuffle in file order, so that each window of 8 shows its shuffle.
  files = write_sized_files(tmp_path, [32])

  def window_orders(seed):
    """(epoch, window) -> the order of the window's 8 records, as offsets within the window."""
    stream = record_ids(dataset(files, batch_size=1, seed=seed, shuffle_window=8), num_batches=3 * 32)
    orders = {}
    for epoch in range(3):
      for window in range(4):
        records = stream[epoch * 32 + window * 8:epoch * 32 + window * 8 + 8]
        assert sorted(records) == list(range(window * 8, window * 8 + 8))
        orders[epoch, window] = tuple(record - window * 8 for record in records)
    return orders

  orders = window_orders(3)
  assert orders[0, 0] != orders[0, 1]  # another window
  assert orders[0, 0] != orders[1, 0]  # another epoch
  assert orders != window_orders(4)  # another seed

  # Two files, a window of one record: the rounds alone decide which file each position reads.
  (tmp_path / "pair").mkdir()
  pair = write_sized_files(tmp_path / "pair", [16, 16])

  def file_sequences(seed):
    stream = record_ids(dataset(pair, batch_size=1, seed=seed, shuffle_window=1), num_batches=2 * 32)
    return [[record_id // 1000 for record_id in stream[epoch * 32:(epoch + 1) * 32]] for epoch in range(2)]

  sequences = file_sequences(3)
  assert sequences[0] != sequences[1]
  assert sequences != file_sequences(4)


def test_a_file_smaller_than_the_rounds_is_read_at_other_places_each_epoch(tmp_path):
  # 200 records in windows of 10 make 20 rounds; a file of 2 records gives a record in 2 of them, which its
  # phase (drawn each epoch) decides. Without phases: always rounds 9 and 19, the merged epoch's records 89
  # to 99 and 189 to 199, which the window shuffle can move back to 80 and 180 at most.
  files = write_sized_files(tmp_path, [2, 198])
  stream = record_ids(dataset(files, batch_size=200, seed=1, shuffle_window=10), num_batches=4)
  first_places = [stream[epoch * 200:(epoch + 1) * 200].index(0) for epoch in range(4)]
  assert min(first_places) < 80 and len(set(first_places)) > 1


@pytest.mark.parametrize("sizes, num_pipelines, window, starts", [
    # Windows of 3 and rounds of about 3 records do not line up: starts inside windows and rounds, at their
    # starts, on epoch boundaries and in later epochs. Each start builds a dataset (about 1 s), so the starts
    # are few and of every kind: inside the first window, a window that starts a round and places inside it, a
    # window that starts inside a round (the seed's draws put one at each start marked *), the first record of
    # an epoch, and a later epoch.
    ([4, 3, 2], 1, 3, [2, 3, 4, 8, 9, 13, 400]),  # 9 records an epoch; * 8, 400
    ([5, 3, 2, 4], 2, 3, [1, 5, 6, 7, 11, 13, 400]),  # file sharding: epochs of 5 to 9; * 6, 11, 13, 400
    ([9, 6, 5], 4, 3, [2, 3, 4, 7, 150]),  # record sharding: 2 + 1 + 1 records an epoch; * 3, 7
    ([37, 50, 11], 1, 1024, [5, 97, 98, 300]),  # the default window: an epoch is one round and one window
])
def test_start_example_continues_the_stream(tmp_path, sizes, num_pipelines, window, starts):
  files = write_sized_files(tmp_path, sizes)
  kwargs = dict(batch_size=1, seed=2, shuffle_window=window, record_counts=count_records(files),
                input_context=pipeline_context(num_pipelines, num_pipelines - 1))
  stream = record_ids(dataset(files, **kwargs), num_batches=max(starts) + 3)
  for start in starts:
    assert record_ids(dataset(files, start_example=start, **kwargs), num_batches=3) == stream[start:start + 3], \
        f"start_example={start}"


@pytest.mark.parametrize("sizes, epoch_lengths", [
    ([5, 5, 5, 5], [10, 10]),  # shards the files of each epoch's order
    ([9], [5, 4]),  # shards the records of the one file
])
def test_training_pipelines_split_every_epoch(tmp_path, sizes, epoch_lengths):
  files = write_sized_files(tmp_path, sizes)
  streams = [record_ids(dataset(files, batch_size=1, shuffle_window=2,
                                input_context=pipeline_context(2, pipeline_id)), num_batches=3 * length)
             for pipeline_id, length in enumerate(epoch_lengths)]
  for epoch in range(3):
    shards = [stream[epoch * length:(epoch + 1) * length] for stream, length in zip(streams, epoch_lengths)]
    assert not set(shards[0]) & set(shards[1])
    assert sorted(shards[0] + shards[1]) == all_records(sizes)


def corrupt_first_records(path, num_records):
  """Zeroes the data of the file's first `num_records` records, keeping their length headers: reading them
  fails its checksum, skipping them does not."""
  with open(path, "rb") as f:
    data = bytearray(f.read())
  position = 0
  for _ in range(num_records):
    length = int.from_bytes(data[position:position + 8], "little")
    data[position + 12:position + 12 + length] = bytes(length)  # after the length and its checksum
    position += 12 + length + 4
  with open(path, "wb") as f:
    f.write(data)


def test_start_example_reads_no_record_before_its_window(tmp_path):
  sizes = [37, 50, 11]
  files = write_sized_files(tmp_path, sizes)
  kwargs = dict(batch_size=1, seed=4, shuffle_window=8, record_counts=count_records(files))
  stream = record_ids(dataset(files, **kwargs), num_batches=98)
  start, window_start = 45, 40
  for file_index, path in enumerate(files):
    corrupt_first_records(path, sum(record_id // 1000 == file_index for record_id in stream[:window_start]))
  with pytest.raises(tf.errors.DataLossError):
    record_ids(dataset(files, **kwargs), num_batches=98)
  resumed = dataset(files, start_example=start, **kwargs)  # up to the end of the epoch: the next reads all
  assert record_ids(resumed, num_batches=98 - start) == stream[start:]


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
  with pytest.raises(ValueError, match=r"shuffle_window"):
    dataset(full, batch_size=1, shuffle_window=0)


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


def test_record_counts_of_files_in_a_bucket_are_cached_in_the_bucket(bucket):
  records = write_records(f"{bucket}/data/a.tfrecord", range(3))
  cache_file = f"{bucket}/run/counts.json"
  assert count_records([records], cache_file) == {records: 3}
  cache = read_json(cache_file)
  cache[records]["records"] = 99  # only a count read from the cache can be 99
  write_json(cache_file, cache)
  assert count_records([records], cache_file) == {records: 99}
  remove(records)  # TensorFlow's ram:// appends to a file written again
  write_records(records, range(4))
  assert count_records([records], cache_file) == {records: 4}
  assert list_folder(f"{bucket}/run") == ["counts.json"]


def test_record_stats_find_the_largest_token_id_and_are_cached_only_when_asked(tmp_path):
  a = write_records(tmp_path / "a.tfrecord", [5, 300])  # input_ids up to 300
  b = write_records(tmp_path / "b.tfrecord", [1], edit=lambda features: features.update(
      masked_lm_ids=int_feature([500, 7, 0])))
  cache_file = tmp_path / "stats.json"
  stats = read_record_stats([a, b], str(cache_file))
  assert {path: (found.records, found.largest_token_id) for path, found in stats.items()} == {a: (2, 300), b: (1, 500)}
  assert not cache_file.exists()
  write_record_stats(str(cache_file), stats)
  cache = json.loads(cache_file.read_text())
  cache[a]["largest_token_id"] = 299  # only the cache can say 299
  del cache[b]["largest_token_id"]  # an entry of an earlier version, with the count alone: read again
  cache_file.write_text(json.dumps(cache))
  assert {path: found.largest_token_id for path, found in read_record_stats([a, b], str(cache_file)).items()} == {
      a: 299, b: 500}
  text = str(tmp_path / "text.tfrecord")
  with tf.io.TFRecordWriter(text) as writer:
    writer.write(b"\xff\xff not a proto")
  with pytest.raises(DataError, match=r"text\.tfrecord: a record is not a tf\.train\.Example of integer token ids"):
    read_record_stats([text])


def test_eval_reads_training_s_first_epoch_once_the_same_every_time(tmp_path):
  sizes = [60, 40, 20]
  files = write_sized_files(tmp_path, sizes)
  order = record_ids(dataset(files, batch_size=1, is_training=False, seed=7))
  assert sorted(order) == all_records(sizes)
  assert record_ids(dataset(files, batch_size=1, is_training=False, seed=7)) == order
  assert record_ids(dataset(files, batch_size=1, seed=7), num_batches=len(order)) == order
  # The first batches sample every file (the first 64 of one file would miss the other two).
  assert {record_id // 1000 for record_id in order[:64]} == {0, 1, 2}


@pytest.mark.parametrize("num_files", [1, 4])  # shards records of one file, or the file list
def test_eval_shards_are_disjoint_and_cover_everything(tmp_path, num_files):
  files = write_files(tmp_path, num_files=num_files, records_per_file=5)
  shards = [record_ids(dataset(files, batch_size=1, is_training=False, input_context=pipeline_context(2, index)))
            for index in range(2)]
  assert not set(shards[0]) & set(shards[1])
  assert sorted(shards[0] + shards[1]) == sorted(record_ids(dataset(files, batch_size=1, is_training=False)))


def test_reads_files_without_token_boundary(tmp_path):
  path = write_records(tmp_path / "old.tfrecord", range(4), token_boundary=False)
  check_pretraining_records([path], SEQ_LENGTH, MAX_PREDICTIONS)
  assert sorted(record_ids(dataset(path, batch_size=2, is_training=False))) == [0, 1, 2, 3]


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
