"""create_pretraining_data: Google's statistics, reproducibility, features and errors."""

import collections
import hashlib
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from albert_tf import files
from albert_tf.data import pretraining_writer as pd
from albert_tf.data.example_encoding import FEATURE_NAMES
from albert_tf.data.instances import InstanceOptions
from albert_tf.data.word_boundaries import is_start_piece
from albert_tf.data.pretraining_dataset import pretraining_dataset
from albert_tf.data.record_files import check_pretraining_records, count_records
from albert_tf.errors import CorpusError, DataError, OptionError
from albert_tf.text.tokenizer import SentencePieceTokenizer
from tests.conftest import SHARED, SP8K_MODEL, TOOLS, requires_shared, run_tool

pytestmark = requires_shared(SP8K_MODEL)
CORPUS = os.path.join(SHARED, "corpus")
TOOL = os.path.join(TOOLS, "create_pretraining_data.py")


def create(tmp_path, input_files, name="out.tfrecord", dupe_factor=2, num_workers=1, seed=12345, run_options=None,
           **options):
  """Runs the local engine; returns the training split's summary and output files."""
  options.setdefault("max_seq_length", 128)
  options.setdefault("max_predictions_per_seq", 20)
  outputs = [str(tmp_path / part) for part in name.split(",")]
  summaries = pd.create_pretraining_data(
      input_files, outputs, pd.TokenizerSpec(SP8K_MODEL, do_lower_case=False), InstanceOptions(**options),
      dupe_factor=dupe_factor, random_seed=seed, num_workers=num_workers, progress=False, **(run_options or {}))
  return summaries["train"], outputs


def structure_problems(batch, starts_word, cls_id, sep_id):
  """The checks of ../shared/reference/record_stats.py, and whole-word alignment, on a batch of examples (as
  `pretraining_dataset` batches them): {problem: whether each example has it}. `starts_word[id]` says whether
  each piece starts a word."""
  ids, mask, segments = batch["input_word_ids"], batch["input_mask"], batch["input_type_ids"]
  count, seq_length = ids.shape
  positions, labels, used = masked_slots(batch)
  rows = np.broadcast_to(np.arange(count)[:, None], used.shape)
  in_range = used & (positions < seq_length)
  original = ids.copy()
  original[rows[in_range], positions[in_range]] = labels[in_range]  # the sequences before masking
  length = mask.sum(axis=1)
  in_sequence = np.arange(seq_length) < length[:, None]
  separator = in_sequence & (original == sep_id)
  segment_b = in_sequence & (segments == 1)
  first_b, first_separator = segment_b.argmax(axis=1), separator.argmax(axis=1)
  after_sequence = lambda values: (np.where(in_sequence, 0, values) != 0).any(axis=1)
  problems = {
      "first token not [CLS]": original[:, 0] != cls_id,
      "not exactly two [SEP], last": ((separator.sum(axis=1) != 2) |
                                      (original[np.arange(count), length - 1] != sep_id)),
      "padding not zero": ((np.where(in_sequence, mask, np.iinfo(mask.dtype).max).min(axis=1) != 1) |
                           after_sequence(mask) | after_sequence(ids)),
      "segment ids": (~segment_b.any(axis=1) | ~separator.any(axis=1) | (first_b != first_separator + 1) |
                      (in_sequence & (np.arange(seq_length) >= first_b[:, None]) & (segments == 0)).any(axis=1) |
                      after_sequence(segments)),
      "masked position out of range": (used & (positions >= length[:, None])).any(axis=1),
      "special token chosen for masking": (used & np.isin(labels, [cls_id, sep_id])).any(axis=1),
      "positions not ascending": (used[:, 1:] & (np.diff(positions, axis=1) <= 0)).any(axis=1),
  }
  # Words as Google's code forms them: a piece that does not start one joins the word before it, across [CLS]/[SEP].
  candidate = in_sequence & ~np.isin(original, [cls_id, sep_id])
  starts = candidate & (starts_word[np.where(in_sequence, original, 0)] | (np.cumsum(candidate, axis=1) == 1))
  word_of = (rows[:, :1] * seq_length + np.cumsum(starts, axis=1) - 1)[candidate]  # numbered across the batch
  masked = np.zeros_like(in_sequence)
  within = used & (positions < length[:, None])
  masked[rows[within], positions[within]] = True
  pieces = np.bincount(word_of, minlength=count * seq_length)
  masked_pieces = np.bincount(word_of, weights=masked[candidate], minlength=count * seq_length)
  problems["part of a word masked"] = ((masked_pieces > 0) & (masked_pieces < pieces)).reshape(
      count, seq_length).any(axis=1)
  return problems


def masked_slots(batch):
  """The masked positions of each example, their labels, and which slots are used (weight > 0): the used slots
  first, in their order."""
  order = np.argsort(batch["masked_lm_weights"] <= 0, axis=1, kind="stable")
  return (np.take_along_axis(batch["masked_lm_positions"], order, axis=1),
          np.take_along_axis(batch["masked_lm_ids"], order, axis=1),
          np.take_along_axis(batch["masked_lm_weights"] > 0, order, axis=1))


def starts_word_table(model=SP8K_MODEL, rule="google"):
  """Whether each piece starts a word under `rule`: Google's, or eojeols (a "▁" piece starts one)."""
  tokenizer = SentencePieceTokenizer(model, do_lower_case=False)
  pieces = [tokenizer.sp_model.IdToPiece(i) for i in range(tokenizer.vocab_size)]
  if rule == "google":
    return np.array([is_start_piece(piece) for piece in pieces])
  return np.array([piece.startswith("\u2581") for piece in pieces])


# The features of masked records, and their names in `pretraining_dataset` batches.
BATCH_NAMES = {"input_ids": "input_word_ids", "input_mask": "input_mask", "segment_ids": "input_type_ids",
               "masked_lm_positions": "masked_lm_positions", "masked_lm_ids": "masked_lm_ids",
               "masked_lm_weights": "masked_lm_weights", "next_sentence_labels": "sentence_order_labels"}


def record_batches(paths):
  """The masked records of `paths` in batches of 1,024, named as `pretraining_dataset` names them."""
  first = tf.train.Example.FromString(next(tf.data.TFRecordDataset(paths).as_numpy_iterator())).features.feature
  spec = {name: tf.io.FixedLenFeature([len(getattr(first[name], first[name].WhichOneof("kind")).value)],
                                      tf.float32 if name == "masked_lm_weights" else tf.int64)
          for name in BATCH_NAMES}
  parse = lambda raw: {BATCH_NAMES[name]: value for name, value in tf.io.parse_example(raw, spec).items()}
  return tf.data.TFRecordDataset(paths).batch(1024).map(parse).as_numpy_iterator()


def record_stats(paths, mask_id=4, cls_id=2, sep_id=3, batches=None, rule="google"):
  """The statistics and structure checks of ../shared/reference/record_stats.py (Google's measurement), of the
  records in `paths` or of `pretraining_dataset` batches, with whole words by `rule` (google or sentencepiece)."""
  stats = collections.Counter()
  runs = collections.Counter()
  problems = collections.Counter()
  starts_word = starts_word_table(rule=rule)
  for batch in record_batches(paths) if batches is None else batches:
    for problem, found in structure_problems(batch, starts_word, cls_id, sep_id).items():
      if found.any():
        problems[problem] += int(found.sum())
    positions, labels, used = masked_slots(batch)
    ids = np.take_along_axis(batch["input_word_ids"], positions, axis=1)
    stats["instances"] += len(used)
    stats["label1"] += int(batch["sentence_order_labels"].sum())
    stats["tokens"] += int(batch["input_mask"].sum())
    stats["masked"] += int(used.sum())
    stats["as_mask"] += int((used & (ids == mask_id)).sum())
    stats["kept"] += int((used & (ids == labels)).sum())
    # Runs of consecutive positions: one starts at each used slot that does not follow the one before.
    starts = used & np.concatenate([np.ones_like(used[:, :1]), np.diff(positions, axis=1) != 1], axis=1)
    run_of = (np.arange(len(used))[:, None] * used.shape[1] + np.cumsum(starts, axis=1) - 1)[used]
    lengths = np.bincount(run_of)
    runs.update(np.minimum(lengths[lengths > 0], 4).tolist())
  n, masked, total_runs = stats["instances"], stats["masked"], sum(runs.values())
  return {
      "instances": n, "problems": dict(problems), "sop_label1": stats["label1"] / n, "mean_len": stats["tokens"] / n,
      "mask_rate": masked / (stats["tokens"] - 3 * n), "frac_mask": stats["as_mask"] / masked,
      "frac_kept": stats["kept"] / masked, "frac_random": 1 - (stats["as_mask"] + stats["kept"]) / masked,
      "runs": [runs[k] / total_runs for k in (1, 2, 3, 4)],
  }


# ../shared/reference/google-data-stats.md: Google's tool on the same corpora, model and flags.
GOOGLE = {
    "en_wiki.txt": dict(instances=26123, sop_label1=0.5393, mean_len=119.30, mask_rate=0.1525, frac_mask=0.7993,
                        frac_kept=0.1006, frac_random=0.1002, runs=[0.448, 0.233, 0.150, 0.169]),
    "ko_libreoffice_help.txt": dict(instances=12865, sop_label1=0.5509, mean_len=106.43, mask_rate=0.1530,
                                    frac_mask=0.7997, frac_kept=0.1008, frac_random=0.0994,
                                    runs=[0.532, 0.265, 0.160, 0.043]),
}

# Instances per pass move with the documents that draw a short target length: Google's own tool made 5,329
# on en_wiki.txt in one pass and 5,225 a pass over five (2%); ours over 20 passes, seeds 12345 and 7, were
# 1.7% and 0.4% below Google's on en_wiki.txt, 0.9% above and 1.6% below on ko_libreoffice_help.txt.
INSTANCE_TOLERANCE = 0.03


def assert_matches_google(ours, google, passes):
  assert ours["problems"] == {}
  # Google's figure is for dupe_factor=5: the same number of instances per pass over the corpus.
  assert abs((ours["instances"] / passes) / (google["instances"] / 5) - 1) <= INSTANCE_TOLERANCE, ours["instances"]
  assert abs(ours["sop_label1"] - google["sop_label1"]) <= 0.02, ours
  assert abs(ours["mask_rate"] - google["mask_rate"]) <= 0.005, ours
  for key in ("frac_mask", "frac_kept", "frac_random"):
    assert abs(ours[key] - google[key]) <= 0.01, (key, ours)
  for bucket, (mine, theirs) in enumerate(zip(ours["runs"], google["runs"]), 1):
    assert abs(mine - theirs) <= 0.03, (bucket, ours)
  assert abs(ours["mean_len"] / google["mean_len"] - 1) <= 0.02, ours


# Masked passes measured: with about 100 documents, which ones draw a short target length moves the mean length
# and the instances by ±2% from pass to pass. Ten passes of en_wiki.txt (seed 12345) are within 1.5% of Google's
# on both, and ko_libreoffice_help.txt, whose documents are shorter, needs twenty to keep a margin (ten: -2.2%
# instances, +1.7% mean length, against tolerances of 3% and 2%). Unmasked records: 4 passes (the same pairs as
# the first 4 masked passes) read for one epoch, whose 10,000 to 20,000 examples measure the masks' figures well
# within their tolerances (test_dynamic_masking checks that every epoch draws new masks).
PASSES = {"en_wiki.txt": 10, "ko_libreoffice_help.txt": 20}
DYNAMIC_PASSES = 4


@pytest.mark.parametrize("corpus", sorted(GOOGLE))
@pytest.mark.parametrize("masking", ["offline", "dynamic"])
def test_statistics_match_google(tmp_path, corpus, masking):
  """The issue's tolerances, against Google's figures of one dupe_factor=5 sample, over enough passes (`PASSES`)
  that the documents' random target lengths average out: masked passes, or (dynamic masking) unmasked passes
  masked as training reads them."""
  dynamic = masking == "dynamic"
  _, outputs = create(tmp_path, [os.path.join(CORPUS, corpus)], name="a.tfrecord,b.tfrecord",
                      dupe_factor=DYNAMIC_PASSES if dynamic else PASSES[corpus], num_workers=2,
                      dynamic_masking=dynamic)
  if not dynamic:
    ours = record_stats(outputs)
  else:
    counts = count_records(outputs)
    num_records = sum(counts.values())
    recipe = check_pretraining_records(outputs, 128, 20).masking_recipe
    batches = pretraining_dataset(outputs, 128, 20, batch_size=64, seed=5, record_counts=counts,
                                  masking_recipe=recipe).take(num_records // 64)
    ours = record_stats(None, batches=batches.as_numpy_iterator())
    ours["instances"] = num_records  # the passes written (the last partial batch is not read)
  assert_matches_google(ours, GOOGLE[corpus], passes=DYNAMIC_PASSES if dynamic else PASSES[corpus])


def file_bytes(paths):
  return [open(path, "rb").read() for path in paths]


def file_digest(paths):
  digest = hashlib.sha256()
  for path in paths:
    digest.update(open(path, "rb").read())
  return digest.hexdigest()


def test_google_word_boundaries_write_the_bytes_they_always_have(tmp_path):
  """Google's rule stays the default, byte for byte: the digests of what the tool wrote before
  `--word_boundaries` existed (commit 3c07006), masked and unmasked."""
  inputs = [os.path.join(CORPUS, "ko_law.txt"), os.path.join(CORPUS, "en_botchan.txt")]
  _, masked = create(tmp_path / "masked", inputs, name="a,b", dupe_factor=1, num_workers=2)
  _, unmasked = create(tmp_path / "unmasked", inputs, name="a,b", dupe_factor=1, num_workers=2, dynamic_masking=True,
                       word_boundaries="google")
  assert file_digest(masked) == "043077316520e0f236241b6470ae4f310965d551750a1118566c9bfaba95ac70"
  assert file_digest(unmasked) == "c2eb2482880eaa0e6aa1fb0237749524557e18c89d5cf2406ec4c1ee77644622"
  first = tf.train.Example.FromString(next(tf.data.TFRecordDataset(masked).as_numpy_iterator()))
  assert "word_boundaries" not in first.features.feature


def test_sentencepiece_word_boundaries_mask_whole_eojeols_offline_and_dynamic(tmp_path):
  """Under --word_boundaries=sentencepiece every word is an eojeol: no eojeol is masked in part, offline or in the
  pipeline, n-grams count eojeols (longer runs of pieces), and the mask rate and the 80/10/10 split stay within
  Google's tolerances. Google's rule on the same text masks eojeols in part all the time (every Hangul piece is a
  word of its own)."""
  inputs = [os.path.join(CORPUS, "ko_libreoffice_help.txt")]
  google = GOOGLE["ko_libreoffice_help.txt"]
  _, googles = create(tmp_path / "google", inputs, dupe_factor=1, num_workers=2)
  _, eojeols = create(tmp_path / "offline", inputs, dupe_factor=1, num_workers=2, word_boundaries="sentencepiece")
  _, unmasked = create(tmp_path / "dynamic", inputs, dupe_factor=1, num_workers=2, dynamic_masking=True,
                       word_boundaries="sentencepiece")
  kind = check_pretraining_records(unmasked, 128, 20)
  assert kind.word_boundaries == "sentencepiece" and kind.masking_recipe is not None
  assert check_pretraining_records(eojeols, 128, 20) == (None, "sentencepiece")
  with pytest.raises(DataError, match="word_boundaries=sentencepiece.*word_boundaries=google"):
    check_pretraining_records(googles + eojeols, 128, 20)
  dynamic = pretraining_dataset(unmasked, 128, 20, batch_size=64, seed=5, record_counts=count_records(unmasked),
                                masking_recipe=kind.masking_recipe).take(sum(count_records(unmasked).values()) // 64)
  google_stats = record_stats(googles, rule="sentencepiece")
  assert google_stats["problems"]["part of a word masked"] > 0.5 * google_stats["instances"]
  for stats in (record_stats(eojeols, rule="sentencepiece"),
                record_stats(None, batches=dynamic.as_numpy_iterator(), rule="sentencepiece")):
    assert stats["problems"] == {}, stats
    assert abs(stats["mask_rate"] - google["mask_rate"]) <= 0.005, stats
    for key in ("frac_mask", "frac_kept", "frac_random"):
      assert abs(stats[key] - google[key]) <= 0.01, (key, stats)
    # Runs of one piece: about half of Google's masked runs, under a quarter of eojeol runs.
    assert stats["runs"][0] < 0.3 < google["runs"][0], stats
  # The rule changes masks only: the same pairs, the same tokens.
  assert record_stats(eojeols)["mean_len"] == google_stats["mean_len"]


def test_same_seed_same_bytes_whatever_the_workers_and_the_memory_budget(tmp_path):
  """One worker with everything in one shuffle bucket, two workers with a budget of 64 KB (many buckets, each
  scattered again by further key bits): the same records in the same shards, in the same order."""
  inputs = [os.path.join(CORPUS, "ko_law.txt"), os.path.join(CORPUS, "en_botchan.txt")]
  held_out = lambda name: dict(eval_output_files=[str(tmp_path / name / "eval")], eval_fraction=0.1)
  _, one = create(tmp_path / "one", inputs, name="a,b", num_workers=1, run_options=held_out("one"))
  _, two = create(tmp_path / "two", inputs, name="a,b", num_workers=2,
                  run_options=dict(held_out("two"), memory_bytes=64 * 1024))
  _, other_seed = create(tmp_path / "seed", inputs, name="a,b", num_workers=2, seed=7)
  assert file_bytes(one) == file_bytes(two)
  assert file_bytes([tmp_path / "one" / "eval"]) == file_bytes([tmp_path / "two" / "eval"])
  assert file_bytes(one)[0] != file_bytes(other_seed)[0]
  # Round-robin shards of one shuffled sequence: the sizes differ by at most one record.
  sizes = [sum(1 for _ in tf.data.TFRecordDataset(path)) for path in two]
  assert abs(sizes[0] - sizes[1]) <= 1 and sum(sizes) > 1000


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
  with pytest.raises(CorpusError, match="No train instance could be made"):
    create(tmp_path, [str(corpus)], single_segment_policy="skip")


def test_bad_input_is_reported_and_nothing_is_written(tmp_path):
  """An earlier output survives a failed run, --overwrite or not (the run would replace it only on success)."""
  existing = tmp_path / "out.tfrecord"
  existing.write_bytes(b"previous output")
  good = os.path.join(CORPUS, "ko_law.txt")
  replace = {"overwrite": True}
  with pytest.raises(FileNotFoundError, match="missing.txt"):
    create(tmp_path, [str(tmp_path / "missing.txt")], run_options=replace)
  empty = tmp_path / "empty.txt"
  empty.write_text("\n\n  \n")
  with pytest.raises(CorpusError, match="corpus is empty"):
    create(tmp_path, [str(empty)], run_options=replace)
  broken = tmp_path / "broken.txt"
  broken.write_bytes("첫 줄입니다.\n둘째 줄.\n".encode() + b"bad \xff\xfe bytes\n")
  with pytest.raises(DataError, match=r"broken.txt, line 3: not UTF-8"):
    create(tmp_path, [good, str(broken)], num_workers=2, run_options=replace)
  with pytest.raises(ValueError, match="max_seq_length must be at least 8"):
    create(tmp_path, [good], max_seq_length=7, run_options=replace)
  with pytest.raises(ValueError, match=r"has no \[CLS\], \[SEP\], \[MASK\]"):
    pd.create_pretraining_data([good], [str(existing)],
                               pd.TokenizerSpec(os.path.join(CORPUS, "botchan_en_unigram_1000.model")),
                               InstanceOptions(), overwrite=True)
  with pytest.raises(OptionError, match="out.tfrecord already exists; pass --overwrite"):
    create(tmp_path, [good])
  assert existing.read_bytes() == b"previous output"
  assert sorted(os.listdir(tmp_path)) == ["broken.txt", "empty.txt", "out.tfrecord"]


def test_tool_warns_and_summarises(tmp_path):
  output = tmp_path / "out.tfrecord"
  result = run_tool(
      "create_pretraining_data", f"--input_file={os.path.join(CORPUS, 'ko_law.txt')}", f"--output_file={output}",
      f"--spm_model_file={SP8K_MODEL}", f"--vocab_file={SP8K_MODEL.replace('.model', '.vocab')}",
      "--max_seq_length=256", "--max_predictions_per_seq=20", "--dupe_factor=1", "--num_workers=2")
  assert result.returncode == 0, result.stderr
  assert "--max_predictions_per_seq=20 is below masked_lm_prob × max_seq_length = 38" in result.stderr
  for phase in ("tokenizing | documents", "instances | documents 11/11 of 1 passes", "writing | records"):
    assert f"[create_pretraining_data] {phase}" in result.stderr
  assert "instances:" in result.stdout and "SOP balance" in result.stdout and "mask rate" in result.stdout
  failed = run_tool("create_pretraining_data", f"--input_file={tmp_path / 'nothing*.txt'}", f"--output_file={output}",
                    f"--spm_model_file={SP8K_MODEL}")
  assert failed.returncode == 2 and "error:" in failed.stderr and "Traceback" not in failed.stderr


def corpus_head(tmp_path, name, lines):
  """The first `lines` lines of a shared corpus, cut at a document boundary (a blank line)."""
  with open(os.path.join(CORPUS, name), encoding="utf-8") as reader:
    head = [line for line, _ in zip(reader, range(lines))]
  while head and head[-1].strip():
    head.pop()
  path = tmp_path / name
  path.write_text("".join(head), encoding="utf-8")
  return str(path)


def tool_stats(tmp_path, name, input_file, *flags):
  """The tool with Google's flags at small sizes; returns the records' statistics and their path."""
  output = tmp_path / f"{name}.tfrecord"
  result = run_tool("create_pretraining_data", f"--input_file={input_file}", f"--output_file={output}",
                    f"--spm_model_file={SP8K_MODEL}", "--max_seq_length=128", "--max_predictions_per_seq=20",
                    "--dupe_factor=2", "--num_workers=1", *flags)
  assert result.returncode == 0, result.stderr
  return record_stats([str(output)]), str(output)


def original_pieces(path):
  """The pieces of every record before masking, as one string."""
  import sentencepiece as spm
  processor = spm.SentencePieceProcessor(model_file=SP8K_MODEL)
  pieces = []
  for raw in tf.data.TFRecordDataset(path):
    feature = tf.train.Example.FromString(raw.numpy()).features.feature
    ids = np.array(feature["input_ids"].int64_list.value)
    weights = np.array(feature["masked_lm_weights"].float_list.value)
    positions = np.array(feature["masked_lm_positions"].int64_list.value)[weights > 0]
    ids[positions] = np.array(feature["masked_lm_ids"].int64_list.value)[weights > 0]
    length = int(sum(feature["input_mask"].int64_list.value))
    pieces += [processor.IdToPiece(int(i)) for i in ids[:length] if i > 4]  # not <pad> <unk> [CLS] [SEP] [MASK]
  return "".join(pieces)


@pytest.fixture(scope="module")
def english(tmp_path_factory):
  """Five long Wikipedia articles (with accents) and the 108 short documents of Botchan: a short target length
  is drawn per document, so enough documents keep the length statistics steady."""
  directory = tmp_path_factory.mktemp("flags")
  corpus = directory / "english.txt"
  with open(os.path.join(CORPUS, "en_botchan.txt"), encoding="utf-8") as botchan:
    corpus.write_text(open(corpus_head(directory, "en_wiki.txt", 1500), encoding="utf-8").read() + "\n" +
                      botchan.read(), encoding="utf-8")
  corpus = str(corpus)
  default_stats, default_records = tool_stats(directory, "default", corpus)
  return directory, corpus, default_stats, default_records


def test_tool_short_seq_prob_masked_lm_prob_and_ngram_flags(english):
  directory, corpus, default, _ = english
  assert default["problems"] == {}
  always_short, _ = tool_stats(directory, "short", corpus, "--short_seq_prob=1.0")
  never_short, _ = tool_stats(directory, "long", corpus, "--short_seq_prob=0")
  # Measured: mean length 65 / 114 / 124 and 4,708 / 2,356 / 2,126 instances for short_seq_prob 1 / 0.1 / 0.
  # A short target is uniform in [2, 125], and chunks of whole sentences overshoot it.
  assert always_short["mean_len"] < 0.8 * default["mean_len"] and always_short["instances"] > 1.5 * default[
      "instances"]
  assert never_short["mean_len"] > 1.05 * default["mean_len"] and never_short["instances"] < default["instances"]

  more_masks, _ = tool_stats(directory, "masked", corpus, "--masked_lm_prob=0.3", "--max_predictions_per_seq=40")
  assert abs(default["mask_rate"] - 0.15) <= 0.01 and abs(more_masks["mask_rate"] - 0.3) <= 0.015

  # n-gram sizes ∝ 1/n (1: 6/11, 3: 2/11) or reversed (3: 6/11): runs of 3 and more grow.
  longer, _ = tool_stats(directory, "longer", corpus, "--nofavor_shorter_ngram")
  assert sum(longer["runs"][2:]) > sum(default["runs"][2:]) + 0.15
  assert longer["runs"][0] < default["runs"][0] - 0.15
  for stats in (always_short, never_short, more_masks, longer):
    assert stats["problems"] == {}


def test_tool_case_and_accent_flags_reach_the_records(english):
  directory, corpus, _, default_records = english
  default = original_pieces(default_records)
  assert not any(char.isupper() for char in default) and "é" not in default  # Google's: lower-cased, no accents
  _, cased_records = tool_stats(directory, "cased", corpus, "--nodo_lower_case", "--keep_accents")
  cased = original_pieces(cased_records)
  assert sum(char.isupper() for char in cased) > 100 and "é" in cased


def test_memory_stays_flat_as_the_corpus_grows(tmp_path):
  """Peak Python memory for 2 and 8 copies of 90 documents with a shuffle budget of 256 KB: the same blocks in
  flight and one bucket in memory, whatever the length. A tool that held every instance would need four times
  as much."""
  import tracemalloc
  text = open(corpus_head(tmp_path, "ko_libreoffice_help.txt", 3400), encoding="utf-8").read()
  peaks = {}
  for copies in (2, 8):
    corpus = tmp_path / f"corpus{copies}.txt"
    corpus.write_text(text * copies, encoding="utf-8")
    tracemalloc.start()
    try:
      summaries = pd.create_pretraining_data(
          [str(corpus)], [str(tmp_path / f"out{copies}.tfrecord")], pd.TokenizerSpec(SP8K_MODEL),
          InstanceOptions(max_seq_length=128, max_predictions_per_seq=20), dupe_factor=1, memory_bytes=256 * 1024,
          progress=False)
      peaks[copies] = tracemalloc.get_traced_memory()[1], summaries["train"].instances
    finally:
      tracemalloc.stop()
  (small_peak, small_count), (large_peak, large_count) = peaks[2], peaks[8]
  assert large_count > 3.5 * small_count
  assert large_peak < 1.5 * small_peak, peaks


@pytest.mark.parametrize("piece, starts_a_word", [
    ("\u2581the", True), ("\u2581", True), ("<unk>", True), (",", True), ("$", True),  # Google's prefixes and marks
    ("ing", False), ("Ing", False), ("a-b", False), (".com", False),  # lower-case Latin letters and marks
    ("\ud55c\uad6d", True), ("2019", True), ("\u00e9t\u00e9", True), ("'s", True),  # anything else starts one
])
def test_is_start_piece_is_googles_word_start_rule(piece, starts_a_word):
  # Google's `_is_start_piece`: n-gram masking masks whole words, a word being a start piece and the pieces
  # that are not, up to the next start piece.
  assert is_start_piece(piece) is starts_a_word


# --- the whole corpus: random segments, held-out documents -------------------------------------------------

def original_segments(raw):
  """(segment A, segment B) of a record, as tuples of ids before masking."""
  feature = tf.train.Example.FromString(raw).features.feature
  ids = np.array(feature["input_ids"].int64_list.value)
  weights = np.array(feature["masked_lm_weights"].float_list.value)
  positions = np.array(feature["masked_lm_positions"].int64_list.value)[weights > 0]
  ids[positions] = np.array(feature["masked_lm_ids"].int64_list.value)[weights > 0]
  segments = np.array(feature["segment_ids"].int64_list.value)
  length = int(sum(feature["input_mask"].int64_list.value))
  a_end = int(np.argmax(segments)) - 1  # the first [SEP]
  return tuple(ids[1:a_end].tolist()), tuple(ids[a_end + 1:length - 1].tolist())


@pytest.fixture(scope="module")
def one_sentence_documents(tmp_path_factory):
  """2,400 one-line documents, the Korean ones first (about 400 KB, beyond one block of text of the old
  engine), then the English ones; every line short enough that no pair is truncated at 128 tokens."""
  tokenizer = SentencePieceTokenizer(SP8K_MODEL)
  lines = {}
  for language, name in (("ko", "ko_libreoffice_help.txt"), ("en", "en_wiki.txt")):
    seen, lines[language] = set(), []
    for line in open(os.path.join(CORPUS, name), encoding="utf-8"):
      ids = tuple(tokenizer.encode(line, special_tokens_in_text=False))
      if 20 <= len(ids) <= 55 and ids not in seen and len(lines[language]) < 1200:
        seen.add(ids)
        lines[language].append(line.strip())
  directory = tmp_path_factory.mktemp("one_sentence")
  corpus = directory / "documents.txt"
  corpus.write_text("\n\n".join(lines["ko"] + lines["en"]) + "\n", encoding="utf-8")
  return directory, str(corpus), lines


def hangul(ids, processor):
  return any("\uac00" <= char <= "\ud7a3" for i in ids for char in processor.IdToPiece(int(i)))


def test_random_segments_come_from_the_whole_corpus(one_sentence_documents):
  """Every chunk is one sentence, so every B comes from a random other document: drawn from the whole corpus,
  about half of the Korean A's get an English B (the old engine drew from the same 256 KB block of text, so
  Korean A's got Korean B's)."""
  import sentencepiece as spm
  processor = spm.SentencePieceProcessor(model_file=SP8K_MODEL)
  directory, corpus, _ = one_sentence_documents
  summary, outputs = create(directory / "whole", [corpus], dupe_factor=2, num_workers=2)
  assert summary.sop_label_1 == summary.instances == 2 * 2400
  pairs = collections.Counter()
  for raw in tf.data.TFRecordDataset(outputs).as_numpy_iterator():
    a, b = original_segments(raw)
    pairs[hangul(a, processor), hangul(b, processor)] += 1
  for korean_a in (True, False):
    english_b = pairs[korean_a, False] / (pairs[korean_a, False] + pairs[korean_a, True])
    assert 0.44 < english_b < 0.56, pairs


def test_held_out_documents_go_to_the_eval_files_with_segments_from_their_own_split(one_sentence_documents):
  from albert_tf.data.pretraining_corpus import is_held_out
  tokenizer = SentencePieceTokenizer(SP8K_MODEL)
  directory, corpus, lines = one_sentence_documents
  documents = [tuple(tokenizer.encode(line, special_tokens_in_text=False)) for line in lines["ko"] + lines["en"]]
  expected_eval = {documents[i] for i in range(len(documents)) if is_held_out(5, 0, i, 0.2)}
  assert 0.17 < len(expected_eval) / len(documents) < 0.23
  eval_output = str(directory / "held_out" / "eval.tfrecord")
  summaries = pd.create_pretraining_data(
      [corpus], [str(directory / "held_out" / "train.tfrecord")], pd.TokenizerSpec(SP8K_MODEL),
      InstanceOptions(max_seq_length=128, max_predictions_per_seq=20), dupe_factor=2, random_seed=5,
      eval_output_files=[eval_output], eval_fraction=0.2, progress=False)
  assert summaries["eval"].documents == len(expected_eval)
  assert summaries["train"].documents == len(documents) - len(expected_eval)
  for split, should_be_held_out in (("eval", True), ("train", False)):
    segments_a = set()
    for raw in tf.data.TFRecordDataset(summaries[split].output_files).as_numpy_iterator():
      a, b = original_segments(raw)
      assert (a in expected_eval) == (b in expected_eval) == should_be_held_out
      segments_a.add(a)
    assert segments_a == (expected_eval if should_be_held_out else set(documents) - expected_eval)


def test_bad_held_out_flags_are_refused(tmp_path):
  good = os.path.join(CORPUS, "ko_law.txt")
  for run_options, message in ((dict(eval_fraction=0.1), "go together"),
                               (dict(eval_output_files=[str(tmp_path / "e")]), "go together"),
                               (dict(eval_output_files=[str(tmp_path / "e")], eval_fraction=1.0), r"in \[0, 1\)"),
                               (dict(eval_output_files=[good], eval_fraction=0.1), "none of the input files")):
    with pytest.raises(ValueError, match=message):
      create(tmp_path, [good], run_options=run_options)
  with pytest.raises(CorpusError, match="No document was held out"):
    create(tmp_path, [good], run_options=dict(eval_output_files=[str(tmp_path / "e")], eval_fraction=0.001))
  assert sorted(os.listdir(tmp_path)) == []


# --- nothing partial: killed, interrupted, a full disk ----------------------------------------------------

def tool_flags(output_dir, *flags, corpus=("ko_libreoffice_help.txt", "en_wiki.txt")):
  corpus = [os.path.join(CORPUS, name) for name in corpus]
  return [f"--input_file={','.join(corpus)}", f"--output_file={output_dir}/a.tfrecord,{output_dir}/b.tfrecord",
          f"--spm_model_file={SP8K_MODEL}", "--max_seq_length=128", "--max_predictions_per_seq=20",
          "--dupe_factor=4", "--num_workers=2", *flags]


def tool_command(output_dir, *flags, **corpus):
  """The tool in a process of its own, for tests that signal, kill or limit it."""
  return [sys.executable, TOOL, *tool_flags(output_dir, *flags, **corpus)]


def wait_for_buckets(process, output_dir):
  """Waits until the run is scattering records into its shuffle buckets."""
  import glob
  import time
  deadline = time.time() + 300
  while not glob.glob(f"{output_dir}/.albert_data_work-*/buckets-train/bucket-*") and time.time() < deadline:
    assert process.poll() is None, process.communicate()
    time.sleep(0.05)


@pytest.mark.parametrize("signal_name", ["SIGINT", "SIGTERM"])
def test_an_interrupted_run_leaves_nothing(tmp_path, signal_name):
  import signal
  # The tool gets the default Ctrl-C: a test run started in the background of a shell without job control
  # (as CI may be) ignores SIGINT, and its children inherit that.
  process = subprocess.Popen(tool_command(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
  wait_for_buckets(process, tmp_path)
  process.send_signal(getattr(signal, signal_name))
  _, stderr = process.communicate(timeout=120)
  assert process.returncode != 0 and "interrupted" in stderr.lower(), stderr
  assert os.listdir(tmp_path) == []


def test_a_killed_run_leaves_no_output_and_the_next_run_removes_its_work(tmp_path):
  import signal
  process = subprocess.Popen(tool_command(tmp_path), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
  wait_for_buckets(process, tmp_path)
  process.send_signal(signal.SIGKILL)
  process.wait()
  left = os.listdir(tmp_path)
  assert left and all(name.startswith(".albert_data_work-") for name in left), left
  rerun = run_tool("create_pretraining_data", *tool_flags(tmp_path, "--dupe_factor=1"))
  assert rerun.returncode == 0, rerun.stderr
  assert "left by a run that was killed" in rerun.stderr
  assert sorted(os.listdir(tmp_path)) == ["a.tfrecord", "b.tfrecord"]


@pytest.mark.parametrize("memory_flag, failing_write", [
    ("--shuffle_memory_mb=1024", "the shuffle buckets"),  # one bucket file: the scatter fails
    ("--shuffle_memory_mb=1", ".tfrecord"),  # small buckets: writing the shards fails
])
def test_a_full_disk_is_one_error_and_leaves_nothing(tmp_path, memory_flag, failing_write):
  """Files are limited to 1 MB (RLIMIT_FSIZE, which fails a write as a full disk does): the token store fits,
  the 2.6 MB of records do not."""
  import resource
  import signal

  def limit_file_size():
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, 1 << 20))

  existing = tmp_path / "a.tfrecord"
  existing.write_bytes(b"an earlier output")
  result = subprocess.run(tool_command(tmp_path, memory_flag, f"--output_file={tmp_path}/a.tfrecord", "--overwrite",
                                      corpus=("ko_law.txt", "en_botchan.txt")),
                          capture_output=True, text=True, timeout=300, preexec_fn=limit_file_size)
  assert result.returncode == 2, result.stderr
  last = result.stderr.strip().splitlines()[-1]
  assert last.startswith("error: Could not write") and failing_write in last and "File too large" in last, last
  assert os.listdir(tmp_path) == ["a.tfrecord"] and existing.read_bytes() == b"an earlier output"


def test_a_run_in_a_bucket_writes_the_bytes_of_a_local_run_and_an_interrupted_one_leaves_nothing(bucket, tmp_path,
                                                                                               monkeypatch):
  """Corpus, vocabulary and outputs in the bucket (the spill files on local disk, then gone): the bytes of the
  same run on local disk, nothing in the working folder; interrupted while the shards move into place (a rename
  on a bucket is a copy), the run leaves no shard, partial file or folder in the bucket."""
  local, work = tmp_path / "local", tmp_path / "work"
  local.mkdir()
  work.mkdir()
  corpus = corpus_head(local, "ko_libreoffice_help.txt", 400)
  for source, destination in [(corpus, "corpus/ko.txt"), (SP8K_MODEL, "vocab/sp.model"),
                              (SP8K_MODEL.replace(".model", ".vocab"), "vocab/sp.vocab")]:
    files.copy_file(source, f"{bucket}/{destination}")
  flags = ["--max_seq_length=64", "--max_predictions_per_seq=10", "--dupe_factor=2", "--num_workers=1",
           "--eval_fraction=0.2", "--nodo_lower_case"]

  def run(corpus, vocab, output_dir):
    return run_tool("create_pretraining_data", f"--input_file={corpus}", f"--spm_model_file={vocab}.model",
                    f"--vocab_file={vocab}.vocab", f"--output_file={output_dir}/a.tfrecord,{output_dir}/b.tfrecord",
                    f"--eval_output_file={output_dir}/eval.tfrecord", *flags, cwd=work)

  assert run(corpus, SP8K_MODEL[:-len(".model")], local / "data").returncode == 0
  result = run(f"{bucket}/corpus/*.txt", f"{bucket}/vocab/sp", f"{bucket}/data")
  assert result.returncode == 0, result.stderr
  names = ["a.tfrecord", "b.tfrecord", "eval.tfrecord"]
  assert files.list_folder(f"{bucket}/data") == names
  assert [files.read_bytes(f"{bucket}/data/{name}") for name in names] == file_bytes(
      [local / "data" / name for name in names])
  assert os.listdir(work) == []

  rename = files.rename
  renamed = []

  def interrupted_rename(source, destination, overwrite=True):
    if renamed:
      raise KeyboardInterrupt
    renamed.append(destination)
    rename(source, destination, overwrite)

  monkeypatch.setattr(files, "rename", interrupted_rename)
  result = run(f"{bucket}/corpus/*.txt", f"{bucket}/vocab/sp", f"{bucket}/again")
  assert result.returncode == 130 and renamed, result.stderr
  assert not files.exists(f"{bucket}/again") and os.listdir(work) == []
