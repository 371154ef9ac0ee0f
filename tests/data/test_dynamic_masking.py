"""Dynamic masking: unmasked records from create_pretraining_data --dynamic_masking, masked in the input
pipeline afresh every epoch, reproducibly and exactly after a resume. Google's statistics are checked in
test_pretraining_writer.test_statistics_match_google."""

import collections
import os

import numpy as np
import pytest
import tensorflow as tf

import albert_tf
from albert_tf.data import pretraining_writer
from albert_tf.data.dynamic_masking import DynamicMasker
from albert_tf.data.example_encoding import UNMASKED_FEATURE_NAMES
from albert_tf.data.instances import InstanceOptions, MaskingRecipe
from albert_tf.data.pretraining_dataset import pretraining_dataset
from albert_tf.data.record_files import check_pretraining_records, count_records
from albert_tf.errors import DataError, OptionError
from albert_tf.training import distribution, pretraining
from tests.conftest import SHARED, SP8K_MODEL, assert_same_pretrainer_weights, requires_shared, run_tool

pytestmark = requires_shared(SP8K_MODEL)
CORPUS = os.path.join(SHARED, "corpus")
SEQ, PREDICTIONS = 64, 10
CLS, SEP, MASK = 2, 3, 4


def write(directory, dynamic, dupe_factor=1, corpus="ko_law.txt", **options):
  outputs = [str(directory / "a.tfrecord"), str(directory / "b.tfrecord")]
  summaries = pretraining_writer.create_pretraining_data(
      [os.path.join(CORPUS, corpus)], outputs, pretraining_writer.TokenizerSpec(SP8K_MODEL),
      InstanceOptions(max_seq_length=SEQ, max_predictions_per_seq=PREDICTIONS, dynamic_masking=dynamic, **options),
      dupe_factor=dupe_factor, random_seed=7, progress=False)
  return outputs, summaries["train"]


@pytest.fixture(scope="module")
def unmasked_run(tmp_path_factory):
  """Two shards of unmasked Korean records (one pass) and the run's summary."""
  return write(tmp_path_factory.mktemp("unmasked"), dynamic=True)


@pytest.fixture(scope="module")
def masked_run(tmp_path_factory):
  """The same run with masking: same seed and flags."""
  return write(tmp_path_factory.mktemp("masked"), dynamic=False)


@pytest.fixture(scope="module")
def unmasked(unmasked_run):
  """The unmasked records and their recipe."""
  outputs, _ = unmasked_run
  return outputs, check_pretraining_records(outputs, SEQ, PREDICTIONS).masking_recipe


def features_of(path):
  for raw in tf.data.TFRecordDataset(path).as_numpy_iterator():
    yield tf.train.Example.FromString(raw).features.feature


def test_unmasked_records_are_the_masked_ones_before_masking(masked_run, unmasked_run):
  """Same seed and flags: the same pairs, truncations and order; only the masking differs."""
  masked, masked_summary = masked_run
  unmasked, summary = unmasked_run
  assert (summary.instances, summary.tokens, summary.sop_label_1) == (
      masked_summary.instances, masked_summary.tokens, masked_summary.sop_label_1)
  assert "training masks every epoch" in "\n".join(summary.lines()) and summary.masked == 0
  recipe = MaskingRecipe(CLS, SEP, MASK, 8000, 0.15, 3, True, True)
  for masked_path, unmasked_path in zip(masked, unmasked):
    pairs = list(zip(features_of(masked_path), features_of(unmasked_path), strict=True))
    assert len(pairs) > 100
    for before, after in pairs:
      assert sorted(after) == sorted(UNMASKED_FEATURE_NAMES)
      assert MaskingRecipe.from_values(after["masking_recipe"].int64_list.value) == recipe
      ids = np.array(before["input_ids"].int64_list.value)
      weights = np.array(before["masked_lm_weights"].float_list.value) > 0
      ids[np.array(before["masked_lm_positions"].int64_list.value)[weights]] = np.array(
          before["masked_lm_ids"].int64_list.value)[weights]
      assert ids.tolist() == list(after["input_ids"].int64_list.value)
      for name in ("input_mask", "segment_ids", "token_boundary", "next_sentence_labels"):
        assert before[name] == after[name], name
  # One pass of unmasked records takes less than one pass of masked ones.
  assert sum(map(os.path.getsize, unmasked)) < sum(map(os.path.getsize, masked))


def masks_by_record(batches):
  """{the record's unmasked ids: [(masked positions, masked input ids) each time it was read]}, of a dataset's
  batches or of a list of them as NumPy arrays."""
  masks = collections.defaultdict(list)
  for batch in batches.as_numpy_iterator() if isinstance(batches, tf.data.Dataset) else batches:
    for ids, positions, labels, weights in zip(batch["input_word_ids"], batch["masked_lm_positions"],
                                               batch["masked_lm_ids"], batch["masked_lm_weights"]):
      used = weights > 0
      original = ids.copy()
      original[positions[used]] = labels[used]
      masks[original.tobytes()].append((positions[used].tolist(), ids.tolist()))
  return masks


def stream(records, recipe, batch_size=4, **kwargs):
  kwargs.setdefault("seed", 11)
  return pretraining_dataset(records, SEQ, PREDICTIONS, batch_size, record_counts=count_records(records),
                             masking_recipe=recipe, **kwargs)


def test_new_masks_every_epoch_the_same_for_the_same_seed(unmasked):
  records, recipe = unmasked
  num_records = sum(count_records(records).values())
  # Batches of 32: fewer steps of the iterator for the same records (the masks do not depend on the batch).
  batch_size = 32
  epochs = num_records * 2 // batch_size  # two epochs, nearly
  two_epochs = list(stream(records, recipe, batch_size).take(epochs).as_numpy_iterator())
  twice = masks_by_record(two_epochs)
  again = masks_by_record(stream(records, recipe, batch_size).take(epochs))
  assert twice == again
  read_twice = [masks for masks in twice.values() if len(masks) == 2]
  assert len(read_twice) > 0.9 * num_records
  # Another epoch, other masks: the positions of a record differ in nearly every case (short sequences can
  # draw the same ones).
  assert sum(first[0] != second[0] for first, second in read_twice) > 0.9 * len(read_twice)
  # The same also when every epoch reads the records in the same order (one file, no shuffle): the
  # epoch, not only the record's place, draws the masks.
  unshuffled = masks_by_record(stream(records[:1], recipe, batch_size, shuffle_window=1).take(
      count_records(records[:1])[records[0]] * 2 // batch_size))
  in_order_twice = [masks for masks in unshuffled.values() if len(masks) == 2]
  assert sum(first[0] != second[0] for first, second in in_order_twice) > 0.9 * len(in_order_twice) > 50
  other_seed = masks_by_record(stream(records, recipe, batch_size, seed=12).take(epochs // 2))
  first_epoch = {record: masks[0] for record, masks in twice.items()}
  assert sum(masks[0] != first_epoch[record] for record, masks in other_seed.items()) > 0.9 * len(other_seed)
  # Evaluation reads training's first epoch: the same masks every time.
  evaluation = masks_by_record(stream(records, recipe, batch_size, is_training=False))
  assert evaluation == masks_by_record(stream(records, recipe, batch_size, is_training=False))
  assert evaluation == masks_by_record(two_epochs[:num_records // batch_size])


def test_a_resumed_stream_draws_the_same_masks(unmasked):
  """Started mid-epoch in the second epoch, at a position that is not a multiple of the batch: the batches of
  the uninterrupted stream after that position, masks included."""
  records, recipe = unmasked
  num_records = sum(count_records(records).values())
  start = num_records + 37
  whole = [batch for batch in stream(records, recipe, batch_size=1).skip(start).take(24).as_numpy_iterator()]
  resumed = list(stream(records, recipe, batch_size=1, start_example=start).take(24).as_numpy_iterator())
  for expected, actual in zip(whole, resumed, strict=True):
    for name in expected:
      np.testing.assert_array_equal(actual[name], expected[name], err_msg=name)


def test_masks_do_not_depend_on_the_batch(unmasked):
  """Batches of one, and of 8 of which one holds the end of an epoch and the start of the next (the numbers of
  a batch of consecutive examples are drawn at once, those of the others example by example)."""
  records, recipe = unmasked
  start = sum(count_records(records).values()) - 20
  by_one = masks_by_record(stream(records, recipe, batch_size=1, start_example=start).take(48))
  by_eight = masks_by_record(stream(records, recipe, batch_size=8, start_example=start).take(6))
  assert by_one == by_eight


def test_masker_follows_googles_rules_on_a_made_up_batch():
  """[CLS]/[SEP]/padding never masked; the budget min(max_predictions_per_seq, round(len × p)) as Python
  computes it (30 × 0.15 = 4.5 rounds to 4, half to even; 190 × 0.15 is 28.5 in float64, 28.500002 in
  float32); whole words by token_boundary."""
  recipe = MaskingRecipe(CLS, SEP, MASK, 50, 0.15, 3, True, True)
  length = 200
  masker = DynamicMasker(recipe, length, 29, seed=[3, 0])
  lengths = (10, 30, 190, 200, 100)
  ids, boundary = np.zeros([5, length], np.int32), np.zeros([5, length], np.int32)
  mask = np.zeros([5, length], np.int32)
  rng = np.random.default_rng(0)
  for row, real in enumerate(lengths):
    middle = real // 2
    ids[row, :real] = rng.integers(10, 50, real)
    ids[row, [0, middle, real - 1]] = [CLS, SEP, SEP]
    # Single-piece words fill the budget exactly; the last row has words of several pieces.
    boundary[row, :real] = rng.random(real) < 0.6 if row == 4 else 1
    boundary[row, [0, middle, real - 1]] = 1
    mask[row, :real] = 1
  epochs, indices = tf.zeros([5], tf.int64), tf.range(5, dtype=tf.int64)
  masked_ids, positions, labels, weights = (t.numpy() for t in masker(ids, mask, boundary, epochs, indices))
  assert weights.sum(axis=1)[:4].tolist() == [2, 4, 28, 29] and 0 < weights[4].sum() <= 15
  for row in range(5):
    used = positions[row][weights[row] > 0]
    unused = np.setdiff1d(np.arange(length), used)
    assert (np.diff(used) > 0).all() and (labels[row][weights[row] > 0] == ids[row, used]).all()
    assert not np.isin(ids[row, used], [CLS, SEP]).any() and mask[row, used].all()
    assert (masked_ids[row][unused] == ids[row][unused]).all()
    # Whole words: the pieces of a word are masked together.
    word_of = np.cumsum(boundary[row] * ~np.isin(ids[row], [CLS, SEP]))
    for position in used:
      word = np.flatnonzero((word_of == word_of[position]) & ~np.isin(ids[row], [CLS, SEP]) & (mask[row] > 0))
      assert np.isin(word, used).all()
  # Without masked_lm_prob, nothing; a cap longer than the sequence is refused.
  none = DynamicMasker(MaskingRecipe(CLS, SEP, MASK, 50, 0.0, 3, True, True), length, 6, seed=[3, 0])
  assert none(ids, mask, boundary, epochs, indices)[3].numpy().sum() == 0
  with pytest.raises(OptionError, match="max_predictions_per_seq must be in \\[1, --max_seq_length=200\\]"):
    DynamicMasker(recipe, length, 201, seed=[3, 0])


def test_the_input_files_must_be_of_one_kind_and_fit_the_model(unmasked, masked_run, tmp_path):
  records, recipe = unmasked
  masked, _ = masked_run
  with pytest.raises(DataError, match=r"a\.tfrecord holds masked records, but .*a\.tfrecord unmasked, to be "
                     r"masked with MaskingRecipe\(cls_id=2"):
    check_pretraining_records([records[0], masked[0]], SEQ, PREDICTIONS)
  # A different recipe is another kind too.
  trigram_free, _ = write(tmp_path / "ngram1", dynamic=True, ngram=1)
  with pytest.raises(DataError, match="ngram=1.*ngram=3|ngram=3.*ngram=1"):
    check_pretraining_records([records[0], trigram_free[0]], SEQ, PREDICTIONS)
  with pytest.raises(DataError, match="'input_ids' has 64 values, expected --max_seq_length=128"):
    check_pretraining_records(records, 128, PREDICTIONS)
  # A recipe that is not one.
  broken = tmp_path / "broken.tfrecord"
  with tf.io.TFRecordWriter(str(broken)) as writer:
    for features in features_of(records[0]):
      features["masking_recipe"].int64_list.value[5] = 0  # ngram 0
      writer.write(tf.train.Example(features=tf.train.Features(feature=features)).SerializeToString())
      break
  with pytest.raises(DataError, match="broken.tfrecord: feature 'masking_recipe' is not a masking recipe"):
    check_pretraining_records([str(broken)], SEQ, PREDICTIONS)

  strategy = distribution.get_strategy("one_device")
  config = dict(vocab_size=6000, hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64,
                embedding_size=16, max_position_embeddings=SEQ)
  options = lambda **changes: pretraining.PretrainingOptions(**dict(
      dict(input_file=",".join(records), output_dir=str(tmp_path / "run"),
           albert_config=albert_tf.AlbertConfig(**config), max_seq_length=SEQ, max_predictions_per_seq=PREDICTIONS),
      **changes))
  with pytest.raises(OptionError, match="vocabulary of 8000 pieces.*vocab_size is 6000"):
    pretraining.Pretraining(options(), strategy)
  with pytest.raises(OptionError, match="max_predictions_per_seq must be in \\[1, --max_seq_length=64\\]"):
    pretraining.Pretraining(options(albert_config=albert_tf.AlbertConfig(**dict(config, vocab_size=8000)),
                                    max_predictions_per_seq=65), strategy)
  assert not (tmp_path / "run").exists()
  with pytest.raises(OptionError, match="--do_permutation cannot go with --dynamic_masking"):
    InstanceOptions(dynamic_masking=True, do_permutation=True)


# The tools' tests train a narrow model: the data stream, its masks and the resume are the subject, not width.
NARROW = dict(vocab_size=8000, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
              embedding_size=16, max_position_embeddings=SEQ)


def botchan_head(tmp_path, num_lines):
  """The first `num_lines` lines of en_botchan.txt, written in `tmp_path`: English text of a few documents."""
  corpus = tmp_path / "botchan_head.txt"
  with open(os.path.join(CORPUS, "en_botchan.txt"), encoding="utf-8") as botchan:
    corpus.write_text("".join(botchan.readlines()[:num_lines]), encoding="utf-8")
  return corpus


def pretraining_flags(output_dir, config_file, records, num_train_steps=24):
  return [f"--input_file={','.join(records)}", f"--output_dir={output_dir}", f"--albert_config_file={config_file}",
          f"--max_seq_length={SEQ}", f"--max_predictions_per_seq={PREDICTIONS}", "--train_batch_size=8",
          "--learning_rate=1e-3", f"--num_train_steps={num_train_steps}", "--num_warmup_steps=4",
          "--save_checkpoints_steps=4", "--iterations_per_loop=1", "--keep_checkpoint_max=10"]


def test_tools_write_unmasked_records_and_a_stopped_run_resumes_exactly(tmp_path):
  """create_pretraining_data --dynamic_masking (one pass by default; eojeols as words), then run_pretraining on
  them with no other flag, which says what the records' words are: stopped after its first checkpoint and rerun,
  it ends on the weights of a run that was not, so the resumed data stream starts where the first run left it,
  with the masks of each epoch. A kill -9 resumes from its last checkpoint in the same way (test_pretraining's
  kill -9 during a checkpoint write)."""
  corpus = botchan_head(tmp_path, 400)
  data = run_tool("create_pretraining_data", f"--input_file={corpus}", f"--spm_model_file={SP8K_MODEL}",
                  f"--output_file={tmp_path}/train.tfrecord", f"--max_seq_length={SEQ}", "--dynamic_masking",
                  "--num_workers=1", "--word_boundaries=sentencepiece")
  assert data.returncode == 0, data.stderr
  assert "masking: none written (--dynamic_masking)" in data.stdout and "--max_predictions_per_seq" not in data.stderr
  records = [str(tmp_path / "train.tfrecord")]
  one_pass = sum(count_records(records).values())
  assert 50 < one_pass < 24 * 8 // 2  # 24 steps of 8 read over two epochs: the second one's masks are new
  config_file = str(tmp_path / "narrow.json")
  albert_tf.AlbertConfig(**NARROW).to_json_file(config_file)
  straight = run_tool("run_pretraining", *pretraining_flags(tmp_path / "straight", config_file, records))
  assert straight.returncode == 0, straight.stderr
  assert "unmasked, masked every epoch; their words follow --word_boundaries=sentencepiece (eojeols" in straight.stderr
  # The first run stops at its first checkpoint, step 4, mid-epoch. Its steps are all warmup, whose learning
  # rate does not depend on --num_train_steps: the straight run's schedule.
  stopped_dir = tmp_path / "stopped"
  stopped = run_tool("run_pretraining", *pretraining_flags(stopped_dir, config_file, records, num_train_steps=4))
  assert stopped.returncode == 0 and (stopped_dir / "model.ckpt-4.index").exists(), stopped.stderr
  resumed = run_tool("run_pretraining", *pretraining_flags(stopped_dir, config_file, records))
  assert resumed.returncode == 0 and "Resuming from" in resumed.stderr, resumed.stderr
  assert_same_pretrainer_weights(tmp_path / "straight", stopped_dir, NARROW)


def benchmark(tmp_path, *flags):
  """The benchmark on 100 lines: its figures are printed whatever the corpus' size."""
  config_file = tmp_path / "narrow.json"
  albert_tf.AlbertConfig(**NARROW).to_json_file(str(config_file))
  arguments = {"input_file": botchan_head(tmp_path, 100), "spm_model_file": SP8K_MODEL, "albert_config_file": config_file,
               "max_seq_length": SEQ, "max_predictions_per_seq": PREDICTIONS}
  arguments.update(flag.lstrip("-").split("=", 1) for flag in flags)
  return run_tool(
      "benchmarks/benchmark_dynamic_masking", *(f"--{name}={value}" for name, value in arguments.items()),
      "--dupe_factor=2", "--num_workers=1", "--train_batch_size=8", "--rounds=1", "--warmup_steps=1",
      "--timed_steps=2", "--input_batches=2")


def test_benchmark_prints_its_figures_and_refuses_bad_input(tmp_path):
  result = benchmark(tmp_path)
  assert result.returncode == 0, result.stderr
  for line in ("pre-masked: 2 pass(es)", "dynamic: 1 pass(es)", "disk_ratio_dynamic_to_premasked: ",
               "input_examples_per_second dynamic: ", "training round 1/1: pre-masked ",
               "train_speed_ratio_dynamic_to_premasked: "):
    assert line in result.stdout, (line, result.stdout)
  # Refused before any data run, or with the data tool's own error: one line each.
  for flag, message in [("--albert_config_file=/no/config.json", "ALBERT config file not found: /no/config.json"),
                        (f"--max_seq_length={SEQ * 2}", f"--max_seq_length={SEQ * 2} must be between 3"),
                        ("--spm_model_file=/no/spm.model", "SentencePiece model not found: /no/spm.model")]:
    refused = benchmark(tmp_path, flag)
    assert refused.returncode == 2 and f"error: {message}" in refused.stderr, refused.stderr
    assert "Traceback" not in refused.stderr
