"""create_pretraining_data: Google's statistics, reproducibility, features and errors."""

import collections
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from albert_tf.data import pretraining_data as pd
from albert_tf.data.example_encoding import FEATURE_NAMES
from albert_tf.data.instances import InstanceOptions
from conftest import REPO, SHARED, SP8K_MODEL, requires_shared

pytestmark = requires_shared(SP8K_MODEL)
CORPUS = os.path.join(SHARED, "corpus")


def create(tmp_path, input_files, name="out.tfrecord", dupe_factor=2, num_workers=1, seed=12345, **options):
  options.setdefault("max_seq_length", 128)
  options.setdefault("max_predictions_per_seq", 20)
  outputs = [str(tmp_path / part) for part in name.split(",")]
  summary = pd.create_pretraining_data(
      input_files, outputs, pd.TokenizerOptions(SP8K_MODEL, do_lower_case=False), InstanceOptions(**options),
      dupe_factor=dupe_factor, random_seed=seed, num_workers=num_workers, progress=False)
  return summary, outputs


def record_stats(paths, mask_id=4, cls_id=2, sep_id=3):
  """The statistics of ../shared/reference/record_stats.py (Google's measurement), per record set."""
  stats = collections.Counter()
  runs = collections.Counter()
  for raw in tf.data.TFRecordDataset(paths):
    example = tf.train.Example.FromString(raw.numpy()).features.feature
    ids = np.array(example["input_ids"].int64_list.value)
    length = int(np.sum(example["input_mask"].int64_list.value))
    weights = np.array(example["masked_lm_weights"].float_list.value)
    positions = np.array(example["masked_lm_positions"].int64_list.value)[weights > 0]
    labels = np.array(example["masked_lm_ids"].int64_list.value)[weights > 0]
    stats["instances"] += 1
    stats["label1"] += example["next_sentence_labels"].int64_list.value[0]
    stats["tokens"] += length
    stats["masked"] += len(positions)
    stats["as_mask"] += int(np.sum(ids[positions] == mask_id))
    stats["kept"] += int(np.sum(ids[positions] == labels))
    stats["bad_special"] += int(np.isin(labels, [cls_id, sep_id]).sum())
    run = 1
    for a, b in zip(positions[:-1], positions[1:]):
      if b == a + 1:
        run += 1
      else:
        runs[min(run, 4)] += 1
        run = 1
    if len(positions):
      runs[min(run, 4)] += 1
  n, masked, total_runs = stats["instances"], stats["masked"], sum(runs.values())
  return {
      "sop_label1": stats["label1"] / n, "mean_len": stats["tokens"] / n,
      "mask_rate": masked / (stats["tokens"] - 3 * n), "frac_mask": stats["as_mask"] / masked,
      "frac_kept": stats["kept"] / masked, "frac_random": 1 - (stats["as_mask"] + stats["kept"]) / masked,
      "runs": [runs[k] / total_runs for k in (1, 2, 3, 4)], "bad_special": stats["bad_special"],
  }


# ../shared/reference/google-data-stats.md: Google's tool on the same corpora, model and flags.
GOOGLE = {
    "en_wiki.txt": dict(sop_label1=0.5393, mean_len=119.30, mask_rate=0.1525, frac_mask=0.7993, frac_kept=0.1006,
                        frac_random=0.1002, runs=[0.448, 0.233, 0.150, 0.169]),
    "ko_libreoffice_help.txt": dict(sop_label1=0.5509, mean_len=106.43, mask_rate=0.1530, frac_mask=0.7997,
                                    frac_kept=0.1008, frac_random=0.0994, runs=[0.532, 0.265, 0.160, 0.043]),
}


@pytest.mark.parametrize("corpus", sorted(GOOGLE))
def test_statistics_match_google(tmp_path, corpus):
  """The issue's tolerances. Google's figures are one dupe_factor=5 sample; with ~100 documents, which ones
  draw a short target length moves the mean length by ±2% from seed to seed, so we measure 20 passes."""
  _, outputs = create(tmp_path, [os.path.join(CORPUS, corpus)], name="a.tfrecord,b.tfrecord", dupe_factor=20,
                      num_workers=2)
  ours, google = record_stats(outputs), GOOGLE[corpus]
  assert ours["bad_special"] == 0
  assert abs(ours["sop_label1"] - google["sop_label1"]) <= 0.02, ours
  assert abs(ours["mask_rate"] - google["mask_rate"]) <= 0.005, ours
  for key in ("frac_mask", "frac_kept", "frac_random"):
    assert abs(ours[key] - google[key]) <= 0.01, (key, ours)
  for bucket, (mine, theirs) in enumerate(zip(ours["runs"], google["runs"]), 1):
    assert abs(mine - theirs) <= 0.03, (bucket, ours)
  assert abs(ours["mean_len"] / google["mean_len"] - 1) <= 0.02, ours


def test_same_seed_same_bytes_whatever_the_workers(tmp_path):
  inputs = [os.path.join(CORPUS, "ko_law.txt"), os.path.join(CORPUS, "en_botchan.txt")]
  _, one = create(tmp_path / "one", inputs, name="a,b", num_workers=1)
  _, two = create(tmp_path / "two", inputs, name="a,b", num_workers=2)
  _, other_seed = create(tmp_path / "seed", inputs, name="a,b", num_workers=2, seed=7)
  for path_one, path_two in zip(one, two):
    with open(path_one, "rb") as a, open(path_two, "rb") as b:
      assert a.read() == b.read()
  with open(one[0], "rb") as a, open(other_seed[0], "rb") as b:
    assert a.read() != b.read()


def test_features_are_googles(tmp_path):
  summary, outputs = create(tmp_path, [os.path.join(CORPUS, "ko_law.txt")], dupe_factor=1, max_seq_length=64,
                            max_predictions_per_seq=10)
  lengths = {"input_ids": 64, "input_mask": 64, "segment_ids": 64, "token_boundary": 64,
             "masked_lm_positions": 10, "masked_lm_ids": 10, "masked_lm_weights": 10, "next_sentence_labels": 1}
  count = 0
  for raw in tf.data.TFRecordDataset(outputs):
    feature = tf.train.Example.FromString(raw.numpy()).features.feature
    assert set(feature) == set(FEATURE_NAMES)
    for name, length in lengths.items():
      kind = "float_list" if name == "masked_lm_weights" else "int64_list"
      assert feature[name].WhichOneof("kind") == kind
      assert len(getattr(feature[name], kind).value) == length, name
    ids = np.array(feature["input_ids"].int64_list.value)
    mask = np.array(feature["input_mask"].int64_list.value)
    segments = np.array(feature["segment_ids"].int64_list.value)
    boundary = np.array(feature["token_boundary"].int64_list.value)
    length = int(mask.sum())
    assert ids[0] == 2 and ids[length - 1] == 3 and np.sum(ids[:length] == 3) >= 1
    assert not ids[length:].any() and not segments[length:].any() and boundary[0] == 1
    first_b = np.argmax(segments)
    assert ids[first_b - 1] == 3 and segments[first_b:length].all()
    count += 1
  assert count == summary.instances > 50


def test_masking_options(tmp_path):
  inputs = [os.path.join(CORPUS, "en_botchan.txt")]
  _, outputs = create(tmp_path / "p", inputs, dupe_factor=1, do_permutation=True)
  first = tf.train.Example.FromString(next(iter(tf.data.TFRecordDataset(outputs))).numpy())
  assert len(first.features.feature["masked_lm_positions"].int64_list.value) == 40  # 2 × max_predictions
  _, outputs = create(tmp_path / "u", inputs, dupe_factor=1, ngram=1, do_whole_word_mask=False)
  assert record_stats(outputs)["runs"][3] < 0.01  # unigram masking: almost no runs of 4+
  _, outputs = create(tmp_path / "n", inputs, dupe_factor=1, random_next_sentence=True)
  assert 0.4 < record_stats(outputs)["sop_label1"] < 0.6


def test_single_segment_policies(tmp_path):
  """60 one-sentence documents and 20 of five sentences, under each policy."""
  corpus = tmp_path / "mixed.txt"
  singles = [f"Document {i} has one sentence only, with quite a few words in it." for i in range(60)]
  longer = [" \n".join(f"Sentence {j} of document {i} is here." for j in range(5)) for i in range(20)]
  corpus.write_text("\n\n".join(singles + longer))
  counts = {}
  for policy in ("random_document", "split_sentence", "skip"):
    summary, _ = create(tmp_path / policy, [str(corpus)], dupe_factor=4, single_segment_policy=policy)
    counts[policy] = summary
  # Google: each single-sentence document pairs with a random document, labelled 1.
  assert counts["random_document"].instances >= 4 * 60
  assert counts["random_document"].sop_label_1 >= 4 * 60
  # Skipping drops exactly those; splitting keeps them, swapped half of the time.
  assert counts["skip"].instances <= counts["random_document"].instances - 4 * 60
  assert counts["split_sentence"].instances >= 4 * 60
  assert 0.35 < counts["split_sentence"].sop_label_1 / counts["split_sentence"].instances < 0.65
  assert 0.35 < counts["skip"].sop_label_1 / counts["skip"].instances < 0.65


def test_skip_policy_with_only_single_sentences_is_a_clear_error(tmp_path):
  corpus = tmp_path / "short.txt"
  corpus.write_text("One sentence.\n\nAnother one.\n")
  with pytest.raises(pd.CorpusError, match="No instance could be made"):
    create(tmp_path, [str(corpus)], single_segment_policy="skip")


def test_bad_input_is_reported_and_nothing_is_written(tmp_path):
  existing = tmp_path / "out.tfrecord"
  existing.write_bytes(b"previous output")
  good = os.path.join(CORPUS, "ko_law.txt")
  with pytest.raises(FileNotFoundError, match="missing.txt"):
    create(tmp_path, [str(tmp_path / "missing.txt")])
  empty = tmp_path / "empty.txt"
  empty.write_text("\n\n  \n")
  with pytest.raises(pd.CorpusError, match="corpus is empty"):
    create(tmp_path, [str(empty)])
  broken = tmp_path / "broken.txt"
  broken.write_bytes("첫 줄입니다.\n둘째 줄.\n".encode() + b"bad \xff\xfe bytes\n")
  with pytest.raises(pd.CorpusError, match=r"broken.txt, line 3: not UTF-8"):
    create(tmp_path, [good, str(broken)], num_workers=2)
  with pytest.raises(ValueError, match="max_seq_length must be at least 8"):
    create(tmp_path, [good], max_seq_length=7)
  with pytest.raises(ValueError, match=r"has no \[CLS\], \[SEP\], \[MASK\]"):
    pd.create_pretraining_data([good], [str(existing)],
                               pd.TokenizerOptions(os.path.join(CORPUS, "botchan_en_unigram_1000.model")),
                               InstanceOptions())
  assert existing.read_bytes() == b"previous output"
  assert sorted(os.listdir(tmp_path)) == ["broken.txt", "empty.txt", "out.tfrecord"]


def test_tool_warns_and_summarises(tmp_path):
  output = tmp_path / "out.tfrecord"
  result = subprocess.run(
      [sys.executable, os.path.join(REPO, "tools", "create_pretraining_data.py"),
       f"--input_file={os.path.join(CORPUS, 'ko_law.txt')}", f"--output_file={output}",
       f"--spm_model_file={SP8K_MODEL}", f"--vocab_file={SP8K_MODEL.replace('.model', '.vocab')}",
       "--max_seq_length=256", "--max_predictions_per_seq=20", "--dupe_factor=1", "--num_workers=2"],
      capture_output=True, text=True, timeout=300)
  assert result.returncode == 0, result.stderr
  assert "--max_predictions_per_seq=20 is below masked_lm_prob × max_seq_length = 38" in result.stderr
  assert "[create_pretraining_data] pass 1/1" in result.stderr
  assert "instances:" in result.stdout and "SOP balance" in result.stdout and "mask rate" in result.stdout
  failed = subprocess.run(
      [sys.executable, os.path.join(REPO, "tools", "create_pretraining_data.py"),
       f"--input_file={tmp_path / 'nothing*.txt'}", f"--output_file={output}", f"--spm_model_file={SP8K_MODEL}"],
      capture_output=True, text=True, timeout=300)
  assert failed.returncode == 2 and "error:" in failed.stderr and "Traceback" not in failed.stderr
