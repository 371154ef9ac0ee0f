"""Corpus-scale mixing: a corpus ordered by source still gives shards that are uniform samples, and record sets
of separate data runs read together mix in every batch."""

import os

import numpy as np
import tensorflow as tf

from albert_tf.data import pretraining_writer
from albert_tf.data.instances import InstanceOptions
from tests.conftest import SHARED, SP8K_MODEL, requires_shared

pytestmark = requires_shared(SP8K_MODEL)
CORPUS = os.path.join(SHARED, "corpus")
KOREAN, ENGLISH = ("ko_law.txt", "ko_libreoffice_help.txt"), ("en_wiki.txt", "en_botchan.txt")
SEQ, PREDICTIONS = 128, 20


def hangul_pieces():
  import sentencepiece as spm
  processor = spm.SentencePieceProcessor(model_file=SP8K_MODEL)
  return np.array([any("\uac00" <= char <= "\ud7a3" for char in processor.IdToPiece(i))
                   for i in range(processor.GetPieceSize())])


def is_korean(input_ids, segment_ids, positions, labels, weights, hangul):
  """Whether segment A of each record of a batch, as it was before masking (a random replacement can be any
  piece), holds Korean: its document's language."""
  original = np.array(input_ids)
  rows, slots = np.nonzero(np.asarray(weights) > 0)
  original[rows, np.asarray(positions)[rows, slots]] = np.asarray(labels)[rows, slots]
  first_b = np.argmax(segment_ids, axis=1)
  in_a = (np.arange(original.shape[1]) >= 1) & (np.arange(original.shape[1]) < (first_b - 1)[:, None])
  return (hangul[original] & in_a).any(axis=1)


def create(output_files, input_names, **run_options):
  return pretraining_writer.create_pretraining_data(
      [os.path.join(CORPUS, name) for name in input_names] if input_names else run_options.pop("input_files"),
      output_files, pretraining_writer.TokenizerSpec(SP8K_MODEL, do_lower_case=False),
      InstanceOptions(max_seq_length=SEQ, max_predictions_per_seq=PREDICTIONS), num_workers=2, progress=False,
      **run_options)


def test_a_corpus_ordered_by_source_gives_shards_mixed_in_every_window(tmp_path):
  """All Korean text, then all English, in one file: in each of the two shards, every window of 1,000
  consecutive records holds Korean records within 5 points of the corpus-wide share (32%). For a uniform
  shuffle a window's share has a standard deviation of 1.5 points; over 7 seeds, the worst of the about 7,000
  windows was 2.7-4.4 points away (dev/measure_mixing.py). The streamed tool this replaced wrote each shard
  in corpus order up to a 20,000-record window: 8.6-9.4 points at dupe_factor 3."""
  corpus = tmp_path / "korean_then_english.txt"
  corpus.write_text("\n\n".join(open(os.path.join(CORPUS, name), encoding="utf-8").read().strip()
                                for name in KOREAN + ENGLISH) + "\n", encoding="utf-8")
  outputs = [str(tmp_path / f"train-{index}.tfrecord") for index in range(2)]
  create(outputs, None, input_files=[str(corpus)], dupe_factor=1)
  hangul = hangul_pieces()
  shards = []
  for path in outputs:
    records = [tf.train.Example.FromString(raw).features.feature
               for raw in tf.data.TFRecordDataset(path).as_numpy_iterator()]
    features = {name: np.array([getattr(r[name], "float_list" if name == "masked_lm_weights" else "int64_list").value
                                for r in records])
                for name in ("input_ids", "segment_ids", "masked_lm_positions", "masked_lm_ids", "masked_lm_weights")}
    shards.append(is_korean(*features.values(), hangul))
  share = np.concatenate(shards).mean()
  assert 0.3 < share < 0.45 and min(len(shard) for shard in shards) > 4000
  for shard in shards:
    windows = np.convolve(shard.astype(float), np.ones(1000), "valid") / 1000
    assert np.abs(windows - share).max() <= 0.05, (share, windows.min(), windows.max())


def test_record_sets_of_separate_runs_read_together_mix_in_every_batch(tmp_path):
  """A Korean record set (2 files) and an English one (3 files), made by two runs of one pass: each of the first
  100 batches of 64 holds both, in proportion to their sizes. A batch is 64 records of a shuffled window of 1,024
  that holds each file's share of the epoch (within a record), so its Korean count follows a hypergeometric
  law; the bound is its 1e-5 tails. (The reader this replaced read one file at a time: 184-189 of 200
  batches held one set only.)"""
  from scipy import stats
  from albert_tf.data.pretraining_dataset import pretraining_dataset
  korean = [str(tmp_path / f"korean-{index}.tfrecord") for index in range(2)]
  english = [str(tmp_path / f"english-{index}.tfrecord") for index in range(3)]
  sizes = {name: create(files, names, dupe_factor=1)["train"].instances
           for name, files, names in (("korean", korean, KOREAN), ("english", english, ENGLISH))}
  share = sizes["korean"] / (sizes["korean"] + sizes["english"])
  hangul = hangul_pieces()
  num_batches = 100
  batches = pretraining_dataset(korean + english, SEQ, PREDICTIONS, batch_size=64, seed=3).take(num_batches)
  counts = np.array([is_korean(batch["input_word_ids"], batch["input_type_ids"], batch["masked_lm_positions"],
                               batch["masked_lm_ids"], batch["masked_lm_weights"], hangul).sum()
                     for batch in batches.as_numpy_iterator()])
  window_korean = round(1024 * share)
  low, high = stats.hypergeom(1024, window_korean, 64).ppf([1e-5, 1 - 1e-5])
  assert len(counts) == num_batches and sum(sizes.values()) > num_batches * 64
  assert counts.min() >= max(1, low - 1) and counts.max() <= min(63, high + 1), (share, counts.min(), counts.max())
  assert abs(counts.sum() / (num_batches * 64) - share) < 0.01, (share, counts.mean() / 64)
