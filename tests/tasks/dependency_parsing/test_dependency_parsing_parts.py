"""Dependency parsing's parts without the model loop: the KLUE-DP and CoNLL-U readers and each bad input, the
single-root tree decoder against brute force, KLUE's UAS/LAS macro F1 against scikit-learn, and the biaffine
layers."""

import itertools
import os
import pathlib
import re

import numpy as np
import pytest
from sklearn.metrics import f1_score
import tensorflow as tf
import tf_keras

from albert_tf import files
from albert_tf.errors import DataError, OptionError
from albert_tf.tasks.dependency_parsing import data, decoding, metrics
from albert_tf.tasks.dependency_parsing.layers import (MASKED_ARC_SCORE, BiaffineArcScorer,
                                                       BiaffineLabelScorer, word_representations)
from albert_tf.tasks.dependency_parsing.objective import DependencyParsingObjective
from albert_tf.training import loop
from tests.conftest import SHARED, requires_shared, write

KLUE_DP_DEV = os.path.join(SHARED, "klue", "klue-dp-v1.1_dev.tsv")
KLUE_LAYOUT_COMMENTS = ["## 토큰, 레이블 구분자 : \\t", "## 토큰 구분자 : \\n", "## 문장 구분자 : \\n\\n", "## 주석 : ##",
                        "## 칼럼명 : INDEX\tWORD_FORM\tLEMMA\tPOS\tHEAD\tDEPREL"]
KLUE_SENTENCE = ["## klue-dp-x_00000\t철수가 밥을 먹었다.", "1\t철수가\t철수 가\tNNP+JKS\t3\tNP_SBJ",
                 "2\t밥을\t밥 을\tNNG+JKO\t3\tNP_OBJ", "3\t먹었다.\t먹 었 다 .\tVV+EP+EF+SF\t0\tVP"]
CONLLU_SENTENCE = ["# sent_id = x-1", "# text = 나는 갔다.", "1\t나는\t나+는\tPRON\tNP+JX\t_\t2\tnsubj\t_\t_",
                   "2\t갔다\t가+았+다\tVERB\tVV+EP+EF\t_\t0\troot\t_\tSpaceAfter=No",
                   "3\t.\t.\tPUNCT\tSF\t_\t2\tpunct\t_\t_"]


@pytest.fixture(scope="module")
def klue_dev():
  return data.read_klue_dp(KLUE_DP_DEV)


def label_ids(examples):
  ids = {label: index for index, label in enumerate(data.KLUE_DP_LABELS)}
  return [[ids[deprel] for deprel in example.deprels] for example in examples]


@requires_shared(KLUE_DP_DEV)
def test_the_real_klue_dev_file_reads_into_single_root_trees(klue_dev):
  assert len(klue_dev) == 1200 and sum(len(example.words) for example in klue_dev) == 16892
  first = klue_dev[0]
  assert first.guid == "klue-dp-v1_dev_00000_wikitree"
  assert first.sentence_text == "'K팝스타3’ 유희열이 홍정희의 탈락에 눈물을 흘렸다."
  assert first.words[1] == "유희열이" and first.lemmas[1] == "유희열 이" and first.pos_tags[0] == "SS+SL+NNP+SN+SS"
  assert first.heads == (2, 6, 4, 6, 6, 0)
  assert first.deprels == ("NP", "NP_SBJ", "NP_MOD", "NP_AJT", "NP_OBJ", "VP")
  assert len({example.guid for example in klue_dev}) == 1200
  for example in klue_dev:
    assert all(0 <= head <= len(example.words) for head in example.heads)
    assert decoding.is_single_root_tree(example.heads), example.guid
  # The eojeols are the header text's space-separated words, but in 6 sentences where KLUE's files write a
  # number or a quote otherwise ("15.70" for "15.7", "5" for "5.0"): a parser's input is the words.
  assert sum(" ".join(example.words) != example.sentence_text for example in klue_dev) == 6
  labels = {deprel for example in klue_dev for deprel in example.deprels}
  assert labels <= set(data.KLUE_DP_LABELS) and len(labels) == 31
  assert len(data.KLUE_DP_LABELS) == 38 == len(set(data.KLUE_DP_LABELS))
  assert data.label_list("klue-dp", klue_dev) == list(data.KLUE_DP_LABELS)


@pytest.mark.parametrize("where", ["local", "bucket"])
def test_klue_layout_comments_are_not_sentence_headers(tmp_path, where, bucket):
  second = ["## klue-dp-x_00001\t철수가 밥을", "1\t철수가\t철수 가\tNNP+JKS\t2\tNP_SBJ",
            "2\t밥을\t밥 을\tNNG+JKO\t0\tVP"]
  root = f"{bucket if where == 'bucket' else tmp_path}/klue"  # --data_dir=gs://... too
  with files.staged_folder(root) as staging:
    write(pathlib.Path(staging, "klue-dp-v1.1", "klue-dp-v1.1_dev.tsv"),
          KLUE_LAYOUT_COMMENTS + KLUE_SENTENCE + ["", ""] + second)
  path = f"{root}/klue-dp-v1.1/klue-dp-v1.1_dev.tsv"
  examples = data.read_parse_examples(path, "klue-dp")
  # The download's folder in --data_dir; the test split reads the dev file.
  assert DependencyParsingObjective(None, "klue-dp").read_examples(root, "test") == examples
  assert [example.heads for example in examples] == [(3, 3, 0), (2, 0)]
  assert examples[0] == data.ParseExample("klue-dp-x_00000", ("철수가", "밥을", "먹었다."),
                                          ("철수 가", "밥 을", "먹 었 다 ."), ("NNP+JKS", "NNG+JKO", "VV+EP+EF+SF"),
                                          (3, 3, 0), ("NP_SBJ", "NP_OBJ", "VP"), "철수가 밥을 먹었다.")
  with pytest.raises(OptionError, match="Unknown dependency parsing format 'conll'"):
    data.read_parse_examples(path, "conll")


def test_conllu_skips_multiword_tokens_and_empty_nodes(tmp_path):
  path = write(tmp_path / "ko.conllu", [
      "# newdoc id = d1", *CONLLU_SENTENCE, "",
      "# a sentence without sent_id or text", "1-2\t먹었다\t_\t_\t_\t_\t_\t_\t_\t_",
      "1\t먹\t먹\tVERB\t_\t_\t0\troot\t_\t_", "2\t었다\t었다\tAUX\tEP+EF\t_\t1\taux\t_\t_",
      "2.1\t먹\t먹\tVERB\t_\t_\t_\t_\t1:conj\t_", "3\t.\t.\tPUNCT\tSF\t_\t1\tpunct\t_\t_"])
  first, second = data.read_parse_examples(path, "conllu")
  assert first == data.ParseExample("x-1", ("나는", "갔다", "."), ("나+는", "가+았+다", "."),
                                    ("NP+JX", "VV+EP+EF", "SF"), (2, 0, 2), ("nsubj", "root", "punct"),
                                    "나는 갔다.")
  # Guid and text by default; UPOS where XPOS is "_".
  assert second.guid == "ko.conllu:10" and second.sentence_text == "먹 었다 ."
  assert second.words == ("먹", "었다", ".") and second.pos_tags == ("VERB", "EP+EF", "SF")
  assert second.heads == (0, 1, 1)
  assert data.label_list("conllu", [first, second]) == ["aux", "nsubj", "punct", "root"]


def klue_with(*word_lines):
  return KLUE_LAYOUT_COMMENTS + [KLUE_SENTENCE[0], *word_lines]


# (format, lines, 1-based line of the error or None for the file, what the message says)
BAD_INPUTS = {
    "head out of range": ("klue-dp", klue_with(*KLUE_SENTENCE[1:3], "3\t먹었다.\t먹 었 다 .\tVV\t4\tVP"), 9,
                          "head 4 is out of range: the sentence has 3 words"),
    "negative head": ("klue-dp", klue_with(KLUE_SENTENCE[1], "2\t밥을\t밥 을\tNNG\t-1\tNP", KLUE_SENTENCE[3]), 8,
                      "head -1 is out of range"),
    "index skipped": ("klue-dp", klue_with(KLUE_SENTENCE[1], "3\t밥을\t밥 을\tNNG\t0\tVP"), 8,
                      "word index 3 where 2 was expected"),
    "index not from 1": ("klue-dp", klue_with("2\t밥을\t밥 을\tNNG\t0\tVP"), 7,
                         "word index 2 where 1 was expected"),
    "missing column": ("klue-dp", klue_with(KLUE_SENTENCE[1], "2\t밥을\t밥 을\tNNG\t3"), 8,
                       "5 tab-separated columns where KLUE-DP has 6"),
    "empty column": ("klue-dp", klue_with("1\t밥을\t\tNNG\t0\tVP"), 7, "the LEMMA column is empty"),
    "no root": ("klue-dp", klue_with("1\t철수가\t철수 가\tNNP\t2\tNP_SBJ", "2\t밥을\t밥 을\tNNG\t1\tNP_OBJ"), 7,
                "the heads of words 1 -> 2 -> 1 form a cycle"),
    "two roots": ("klue-dp", klue_with(KLUE_SENTENCE[1], "2\t밥을\t밥 을\tNNG+JKO\t0\tNP_OBJ", KLUE_SENTENCE[3]), 9,
                  "sentence klue-dp-x_00000 has 2 words whose head is 0 (lines 8, 9); a KLUE-DP sentence has one root"),
    "own head": ("klue-dp", klue_with(*KLUE_SENTENCE[1:3], "3\t먹었다.\t먹 었 다 .\tVV\t3\tVP"), 9,
                 "the heads of words 3 -> 3 form a cycle"),
    "unknown relation": ("klue-dp", klue_with("1\t밥을\t밥 을\tNNG\t0\tROOT"), 7,
                         "'ROOT' is not one of KLUE-DP's 38 relations"),
    "head not a number": ("klue-dp", klue_with("1\t밥을\t밥 을\tNNG\tx\tVP"), 7,
                          "the head 'x' is not a whole number"),
    "no header": ("klue-dp", KLUE_LAYOUT_COMMENTS + [""] + KLUE_SENTENCE[1:], 7,
                  "an eojeol line that does not follow a sentence header"),
    "header without tab": ("klue-dp", KLUE_LAYOUT_COMMENTS + ["## klue-dp-x_00000 철수가 밥을 먹었다."] +
                           KLUE_SENTENCE[1:], 6, "a sentence header must be `## <guid>\\t<sentence>`"),
    "klue empty": ("klue-dp", [], None, "holds no sentence"),
    "klue comments only": ("klue-dp", KLUE_LAYOUT_COMMENTS, None, "holds no sentence"),
    "conllu missing column": ("conllu", CONLLU_SENTENCE[:3] + ["2\t갔다\t가+았+다\tVERB\tVV\t_\t0\troot\t_"], 4,
                              "9 tab-separated columns where CoNLL-U has 10"),
    "conllu head out of range": ("conllu", CONLLU_SENTENCE[:4] + ["3\t.\t.\tPUNCT\tSF\t_\t9\tpunct\t_\t_"], 5,
                                 "head 9 is out of range: the sentence has 3 words"),
    "conllu index skipped": ("conllu", CONLLU_SENTENCE[:4] + ["4\t.\t.\tPUNCT\tSF\t_\t2\tpunct\t_\t_"], 5,
                             "word index 4 where 3 was expected"),
    "conllu no root": ("conllu", ["1\t나는\t나\tPRON\t_\t_\t2\tnsubj\t_\t_",
                                  "2\t갔다\t가\tVERB\t_\t_\t1\tx\t_\t_"], 1,
                       "the heads of words 1 -> 2 -> 1 form a cycle"),
    "conllu no relation": ("conllu", ["1\t갔다\t가\tVERB\t_\t_\t0\t_\t_\t_"], 1, "word 1 has no DEPREL"),
    "conllu empty": ("conllu", ["# only a comment", ""], None, "holds no sentence"),
}


@pytest.mark.parametrize("name", sorted(BAD_INPUTS))
def test_each_bad_input_is_one_error_naming_the_file_and_line(tmp_path, name):
  file_format, lines, line_number, message = BAD_INPUTS[name]
  path = write(tmp_path / "bad.txt", lines)
  where = f"{path}, line {line_number}: " if line_number else f"{path} "
  with pytest.raises(DataError) as caught:
    data.read_parse_examples(path, file_format)
  assert str(caught.value).startswith(where) and message in str(caught.value), str(caught.value)


@pytest.mark.parametrize("file_format", data.FORMATS)
def test_a_file_that_is_not_utf8_names_its_line(tmp_path, file_format):
  path = tmp_path / "latin1.txt"
  valid = KLUE_LAYOUT_COMMENTS[4:] + KLUE_SENTENCE[:2] if file_format == "klue-dp" else CONLLU_SENTENCE[:3]
  path.write_bytes("".join(line + "\n" for line in valid).encode() + "2\tcafé".encode("latin-1"))
  with pytest.raises(DataError, match=f"^{re.escape(str(path))}, line 4: not UTF-8"):
    data.read_parse_examples(str(path), file_format)


def score(scores, heads):
  return float(scores[np.arange(1, len(heads) + 1), np.asarray(heads)].sum())


@pytest.fixture(scope="module")
def all_trees():
  """For n = 1..5 words: every head assignment without a cycle (any number of root children), as an array."""
  return {count: np.array([heads for heads in itertools.product(range(count + 1), repeat=count)
                           if not decoding.find_cycle(heads)]) for count in range(1, 6)}


def test_the_decoder_finds_the_best_single_root_tree_as_brute_force(all_trees):
  rng = np.random.default_rng(0)
  binding = 0  # matrices whose best tree overall has several root children: the constraint is what decides
  for count, trees in all_trees.items():
    single_root = trees[(trees == 0).sum(axis=1) == 1]
    assert len(single_root) == count ** (count - 1)  # Cayley: rooted trees on n labelled words
    for trial in range(60):
      if trial % 3 == 0:
        scores = rng.normal(size=(count + 1, count + 1))
      elif trial % 3 == 1:
        scores = rng.integers(0, 3, (count + 1, count + 1)).astype(float)  # ties
      else:
        scores = rng.normal(size=(count + 1, count + 1))
        scores[:, 0] += 2.0  # the root attracts every word
      heads = decoding.maximum_spanning_tree(scores)
      assert heads.shape == (count,) and decoding.is_single_root_tree(heads.tolist())
      every_tree_score = scores[np.arange(1, count + 1), trees].sum(axis=1)
      best = scores[np.arange(1, count + 1), single_root].sum(axis=1).max()
      assert abs(score(scores, heads) - best) < 1e-9, (scores, heads)
      binding += every_tree_score.max() > best + 1e-9
  assert binding > 30


@requires_shared(KLUE_DP_DEV)
def test_the_decoder_on_gold_trees_and_padded_batches(klue_dev):
  rng = np.random.default_rng(1)
  longest = max(len(example.words) for example in klue_dev)
  # Noise far below the gold arcs' bonus: the best tree is the gold one.
  batch = rng.normal(0, 0.1, (len(klue_dev), longest + 1, longest + 1))
  for index, example in enumerate(klue_dev):
    count = len(example.words)
    batch[index, np.arange(1, count + 1), example.heads] += 3.0
    batch[index, count + 1:] = batch[index, :, count + 1:] = MASKED_ARC_SCORE  # padding, never read
  counts = [len(example.words) for example in klue_dev]
  decoded = decoding.decode_batch(batch, counts)
  assert all(tuple(heads) == example.heads for heads, example in zip(decoded, klue_dev))
  # KLUE's trees are all projective: Eisner's decoder finds them too.
  projective = decoding.projective_trees(batch, counts).numpy()
  assert all(tuple(row[:count]) == example.heads and (row[count:] == -1).all()
             for row, count, example in zip(projective, counts, klue_dev))


def is_projective(heads):
  arcs = [sorted((word, head)) for word, head in enumerate(heads, 1)]
  return not any(a < c < b < d for a, b in arcs for c, d in arcs)


def test_the_projective_decoder_finds_the_best_projective_tree_as_brute_force(all_trees):
  rng = np.random.default_rng(2)
  # One padded batch of every size (and sentences of no word): each sentence reads only its own corner.
  counts = [count for count in all_trees for _ in range(24)] + [0, 0]
  scores = rng.normal(size=(len(counts), 6, 6))
  scores[::2, :, 0] += 2.0  # the root attracts every word: the single-root constraint decides
  scores[1::4] = rng.integers(0, 3, (len(scores[1::4]), 6, 6))  # ties
  decoded = decoding.projective_trees(tf.constant(scores), tf.constant(counts)).numpy()
  assert decoded.shape == (len(counts), 5) and decoded.dtype == np.int32
  differs_from_any_tree = 0
  for row, count in enumerate(counts):
    heads = decoded[row, :count]
    assert (decoded[row, count:] == -1).all()
    if not count:
      continue
    trees = all_trees[count]
    projective = np.array([tree for tree in trees if (tree == 0).sum() == 1 and is_projective(tree)])
    assert decoding.is_single_root_tree(heads.tolist()) and is_projective(heads.tolist())
    best = scores[row, np.arange(1, count + 1), projective].sum(axis=1).max()
    assert abs(score(scores[row], heads) - best) < 1e-9, (scores[row], heads)
    # Where the best of all trees is projective, Chu-Liu/Edmonds scores the same.
    unrestricted = decoding.maximum_spanning_tree(scores[row, :count + 1, :count + 1])
    if is_projective(unrestricted.tolist()):
      assert abs(score(scores[row], unrestricted) - best) < 1e-9
    else:
      differs_from_any_tree += 1
  assert differs_from_any_tree > 5  # some sentences' best trees cross, and the decoder kept to projective ones
  empty = decoding.projective_trees(tf.zeros([0, 4, 4]), tf.zeros([0], tf.int32))
  assert empty.shape == (0, 3)


def test_tree_checks_and_scores_the_decoder_refuses():
  with pytest.raises(ValueError, match="square matrix"):
    decoding.maximum_spanning_tree(np.zeros([3, 4]))
  with pytest.raises(ValueError, match="finite"):
    decoding.maximum_spanning_tree(np.array([[0.0, 0.0], [np.nan, 0.0]]))
  # Row 0 and the diagonal are not read.
  assert decoding.maximum_spanning_tree(np.array([[0.0, -np.inf], [5.0, MASKED_ARC_SCORE]])).tolist() == [0]
  assert decoding.find_cycle([3, 0, 4, 1]) == [1, 3, 4]
  assert decoding.find_cycle([2, 0, 2]) == [] and decoding.is_single_root_tree([2, 0, 2])
  assert not decoding.is_single_root_tree([0, 0]) and not decoding.is_single_root_tree([1])
  assert not decoding.is_single_root_tree([2, 3]) and not decoding.is_single_root_tree([])
  assert decoding.right_branching_heads(4).tolist() == [2, 3, 4, 0]
  assert decoding.right_branching_heads(1).tolist() == [0]


def klue_las_reference(predicted_heads, predicted_labels, gold_heads, gold_labels, others_from=15):
  """KLUE-baseline's LAS written out with scikit-learn: merge ids >= 15 into -3, then -2 for a wrong head."""
  predicted_heads, gold_heads = np.concatenate(predicted_heads), np.concatenate(gold_heads)
  predicted_labels, gold_labels = np.concatenate(predicted_labels), np.concatenate(gold_labels)
  if others_from is not None:
    predicted_labels = np.where(predicted_labels >= others_from, -3, predicted_labels)
    gold_labels = np.where(gold_labels >= others_from, -3, gold_labels)
  predicted_labels[predicted_heads != gold_heads] = -2
  return f1_score(gold_labels, predicted_labels, average="macro", zero_division=0)


def check_against_sklearn(predicted_heads, predicted_labels, gold_heads, gold_labels):
  figures = metrics.dependency_metrics(predicted_heads, predicted_labels, gold_heads, gold_labels)
  expected_uas = f1_score(np.concatenate(gold_heads), np.concatenate(predicted_heads), average="macro",
                          zero_division=0)
  assert figures["uas_macro_f1"] == pytest.approx(expected_uas, abs=1e-6)
  assert figures["las_macro_f1"] == pytest.approx(
      klue_las_reference(predicted_heads, predicted_labels, gold_heads, gold_labels), abs=1e-6)
  unmerged = metrics.las_macro_f1(predicted_heads, predicted_labels, gold_heads, gold_labels, None)
  assert unmerged == pytest.approx(
      klue_las_reference(predicted_heads, predicted_labels, gold_heads, gold_labels, None), abs=1e-6)
  right_heads = np.concatenate(predicted_heads) == np.concatenate(gold_heads)
  right_labels = np.concatenate(predicted_labels) == np.concatenate(gold_labels)
  assert figures["uas"] == pytest.approx(np.mean(right_heads), abs=1e-12)
  assert figures["las"] == pytest.approx(np.mean(right_heads & right_labels), abs=1e-12)
  return figures


def test_klue_metrics_match_sklearn_on_random_parses():
  rng = np.random.default_rng(2)
  for trial in range(20):
    counts = rng.integers(1, 12, rng.integers(1, 30))
    gold_heads = [rng.integers(0, count + 1, count) for count in counts]
    # Predictions near the gold for some trials, so that the wrong-head rule and the merged class both matter.
    keep = [rng.random(count) < trial / 20 for count in counts]
    predicted_heads = [np.where(k, g, rng.integers(0, count + 1, count)) for k, g, count in
                       zip(keep, gold_heads, counts)]
    gold_labels = [rng.integers(0, 38, count) for count in counts]
    predicted_labels = [np.where(k, g, rng.integers(0, 38, count)) for k, g, count in
                        zip(keep, gold_labels, counts)]
    check_against_sklearn(predicted_heads, predicted_labels, gold_heads, gold_labels)
  with pytest.raises(ValueError, match="Sentence 0: 2 predicted heads, 1 gold heads"):
    metrics.uas_macro_f1([[0, 1]], [[0]])


@requires_shared(KLUE_DP_DEV)
def test_klue_metrics_match_sklearn_on_the_dev_file(klue_dev):
  rng = np.random.default_rng(3)
  gold_heads = [np.array(example.heads) for example in klue_dev]
  gold_labels = [np.array(ids) for ids in label_ids(klue_dev)]
  perfect = check_against_sklearn(gold_heads, gold_labels, gold_heads, gold_labels)
  assert perfect == {"uas_macro_f1": 1.0, "las_macro_f1": 1.0, "uas": 1.0, "las": 1.0}
  corrupted_heads = [np.where(rng.random(len(heads)) < 0.2, rng.integers(0, len(heads) + 1, len(heads)),
                              heads) for heads in gold_heads]
  corrupted_labels = [np.where(rng.random(len(labels)) < 0.2, rng.integers(0, 38, len(labels)), labels)
                      for labels in gold_labels]
  figures = check_against_sklearn(corrupted_heads, corrupted_labels, gold_heads, gold_labels)
  assert 0.75 < figures["uas"] < 0.9 and figures["las"] < figures["uas"]


@requires_shared(KLUE_DP_DEV)
def test_the_right_branching_baseline_on_the_dev_file(klue_dev):
  # Each word's head is the next word, the last word's the root; relations: VP for the last word, else NP.
  ids = {label: index for index, label in enumerate(data.KLUE_DP_LABELS)}
  predicted_heads = [decoding.right_branching_heads(len(example.words)) for example in klue_dev]
  predicted_labels = [[ids["NP"]] * (len(example.words) - 1) + [ids["VP"]] for example in klue_dev]
  assert all(decoding.is_single_root_tree(heads.tolist()) for heads in predicted_heads)
  figures = metrics.dependency_metrics(predicted_heads, predicted_labels,
                                       [example.heads for example in klue_dev], label_ids(klue_dev))
  print("right-branching baseline on the KLUE-DP dev file:", {name: round(value, 4) for name, value in
                                                              figures.items()})
  # Korean is head-final: two words in three depend on the next word.
  assert 0.6 < figures["uas"] < 0.7 and 0.6 < figures["uas_macro_f1"] < 0.7
  assert 0.2 < figures["las"] < 0.3 and figures["las_macro_f1"] < 0.1


def test_word_representations_gather_first_and_last_pieces():
  sequence = tf.reshape(tf.range(2 * 6 * 3, dtype=tf.float32), [2, 6, 3])
  first, last = tf.constant([[1, 2, 4], [1, 3, 0]]), tf.constant([[1, 3, 5], [2, 4, 0]])
  words = word_representations(sequence, first, last).numpy()
  assert words.shape == (2, 3, 6)
  values = sequence.numpy()
  np.testing.assert_array_equal(words[0, 1], np.concatenate([values[0, 2], values[0, 3]]))
  np.testing.assert_array_equal(words[1, 1], np.concatenate([values[1, 3], values[1, 4]]))


def padded_words(seed=4):
  """Word vectors `[3, 5, 8]` of sentences of 5, 3 and 1 words, and their mask."""
  vectors = tf.random.stateless_normal([3, 5, 8], [seed, 0])
  mask = tf.sequence_mask([5, 3, 1], 5, tf.int32)
  return vectors, mask


def test_the_arc_scorer_never_chooses_padding_or_the_word_itself():
  vectors, mask = padded_words()
  scorer = BiaffineArcScorer(16, dropout_rate=0.0, initializer_range=0.5)
  scores = scorer(vectors, mask).numpy()
  assert scores.shape == (3, 6, 6) and scores.dtype == np.float32
  for row, count in enumerate((5, 3, 1)):
    real = scores[row, 1:count + 1, :count + 1]
    assert (real[np.eye(count, count + 1, 1, dtype=bool)] == MASKED_ARC_SCORE).all()
    assert (scores[row, :, count + 1:] == MASKED_ARC_SCORE).all()
    assert (real[~np.eye(count, count + 1, 1, dtype=bool)] > MASKED_ARC_SCORE / 2).all()
    chosen = real.argmax(axis=1)
    assert (chosen <= count).all() and (chosen != np.arange(1, count + 1)).all()
  # What the padded words hold changes no real word's scores.
  noisy = tf.where(tf.cast(mask, tf.bool)[:, :, tf.newaxis], vectors, 100.0)
  np.testing.assert_allclose(scorer(noisy, mask).numpy()[1, :4, :4], scores[1, :4, :4], rtol=1e-6)
  decoded = decoding.decode_batch(scores, [5, 3, 1])
  assert [len(heads) for heads in decoded] == [5, 3, 1]
  assert all(decoding.is_single_root_tree(heads.tolist()) for heads in decoded)


def test_the_label_scorer_scores_every_head_or_the_given_ones():
  vectors, _ = padded_words()
  scorer = BiaffineLabelScorer(7, 6, dropout_rate=0.0, initializer_range=0.5)
  every_head = scorer(vectors).numpy()
  assert every_head.shape == (3, 6, 6, 7) and every_head.dtype == np.float32
  heads = tf.constant([[0, 2, 0, 2, 3, 3], [0, 3, 1, 0, 0, 0], [0, 0, 0, 0, 0, 0]])
  given = scorer(vectors, heads).numpy()
  assert given.shape == (3, 6, 7)
  at_heads = np.take_along_axis(every_head, heads.numpy()[:, :, None, None], axis=2)[:, :, 0]
  np.testing.assert_allclose(given, at_heads, rtol=1e-5, atol=1e-5)
  assert np.std(given) > 0.1  # the labels' scores differ


def test_gradients_reach_every_weight():
  vectors, mask = padded_words()
  vectors = tf.Variable(vectors)
  arcs = BiaffineArcScorer(16, initializer_range=0.5)
  labels = BiaffineLabelScorer(7, 6, initializer_range=0.5)
  gold_heads = tf.constant([[0, 2, 0, 2, 3, 3], [0, 3, 3, 0, 0, 0], [0, 0, 0, 0, 0, 0]])
  gold_labels = tf.constant([[0, 1, 2, 3, 4, 5], [0, 6, 1, 0, 0, 0], [0, 2, 0, 0, 0, 0]])
  # Each position's loss counts for real words only (not the root's row 0, not padding).
  weights = tf.cast(tf.concat([tf.zeros([3, 1], tf.int32), mask], axis=1), tf.float32)
  with tf.GradientTape() as tape:
    arc_loss = tf.nn.sparse_softmax_cross_entropy_with_logits(gold_heads, arcs(vectors, mask, training=True))
    label_loss = tf.nn.sparse_softmax_cross_entropy_with_logits(gold_labels,
                                                                labels(vectors, gold_heads, training=True))
    loss = tf.reduce_sum((arc_loss + label_loss) * weights) / tf.reduce_sum(weights)
  variables = arcs.trainable_variables + labels.trainable_variables + [vectors]
  gradients = tape.gradient(loss, variables)
  assert np.isfinite(loss.numpy()) and len(variables) == 7 + 9 + 1
  for variable, gradient in zip(variables, gradients):
    assert gradient is not None and np.abs(gradient.numpy()).max() > 0, variable.name
  padded_gradient = gradients[-1].numpy()
  assert (padded_gradient[1, 3:] == 0).all() and (padded_gradient[2, 1:] == 0).all()  # padding feeds no loss


@pytest.mark.parametrize("layer_class, arguments", [(BiaffineArcScorer, {"units": 16}),
                                                    (BiaffineLabelScorer, {"num_labels": 7, "units": 6})])
def test_the_layers_round_trip_through_their_config(layer_class, arguments):
  vectors, mask = padded_words()
  layer = layer_class(**arguments, activation="relu", dropout_rate=0.2, initializer_range=0.5, name="scorer")
  inputs = (vectors, mask) if layer_class is BiaffineArcScorer else (vectors,)
  expected = layer(*inputs).numpy()
  assert tf_keras.utils.get_registered_name(layer_class) == f"albert_tf>{layer_class.__name__}"
  copy = tf_keras.layers.deserialize(tf_keras.layers.serialize(layer))
  assert type(copy) is layer_class and copy.get_config() == layer.get_config()
  assert copy.get_config()["activation"] == "relu" and copy.dropout_rate == 0.2
  copy(*inputs)
  copy.set_weights(layer.get_weights())
  np.testing.assert_allclose(copy(*inputs).numpy(), expected, rtol=1e-6)


@pytest.mark.parametrize("precision", ["float16", "bfloat16"])
def test_the_scorers_under_mixed_precision(precision):
  vectors, mask = padded_words()
  with loop.run_settings(precision, seed=0):
    arcs = BiaffineArcScorer(16, initializer_range=0.5)
    labels = BiaffineLabelScorer(7, 6, initializer_range=0.5)
    arc_scores = arcs(vectors, mask)  # float32 words are cast to the policy's compute dtype
    label_scores = labels(tf.cast(vectors, labels.compute_dtype))
  assert arcs.compute_dtype == precision and arcs.root.dtype == tf.float32
  assert arc_scores.dtype == label_scores.dtype == tf.float32
  assert (arc_scores.numpy()[1, :, 4:] == MASKED_ARC_SCORE).all() and np.isfinite(arc_scores.numpy()).all()
  assert np.isfinite(label_scores.numpy()).all()
