"""Token classification data: the strict readers, the alignment of tags with pieces and back on every sentence
of KLUE-NER's real dev file, windows and truncation, and the KLUE baseline's two scores against seqeval and
scikit-learn."""

import collections
import os
import pathlib
import re
import warnings

import numpy as np
import pytest
from seqeval.metrics import f1_score as seqeval_f1
from seqeval.scheme import IOB2
from sklearn.metrics import f1_score as sklearn_f1

from albert_tf import files
from albert_tf.errors import InputFileError, OptionError, TaskError
from albert_tf.tasks.token_classification import metrics
from albert_tf.tasks.token_classification.data import (
    IGNORE_LABEL, KLUE_NER_LABELS, PieceAlignment, TokenExample, align_example, align_units, continuation,
    evaluated_units, format_examples, label_list_from_examples, mark_entities, merge_windows, read_conll,
    read_examples, read_klue_ner, read_tsv, windows)
from albert_tf.tasks.token_classification.objective import TokenClassificationObjective
from tests.conftest import SHARED, SP8K_MODEL, corpus_lines, requires_shared, write

KLUE_NER_DEV = os.path.join(SHARED, "klue", "klue-ner-v1.1_dev.tsv")
pytestmark = [requires_shared(SP8K_MODEL), requires_shared(KLUE_NER_DEV)]

# KLUE's markup: <text:TYPE>, where the text may hold ":" ("<01:23:39:TI>") and the sentence a bare "<".
MARKUP = re.compile(r"<([^<>]+):(PS|LC|OG|DT|TI|QT)>")


@pytest.fixture(scope="module")
def klue(tokenizer):
  """The real dev file's sentences and their alignments, read and aligned once."""
  examples = read_klue_ner(KLUE_NER_DEV)
  return examples, [align_example(example, tokenizer) for example in examples]


def round_trip(alignment: PieceAlignment, tags, piece_tags_of=None):
  """Gold unit tags -> one tag per piece (the tag of the unit each piece starts, O for pieces that start none)
  -> unit tags again; `piece_tags_of` may change the piece tags on the way (a planted bug)."""
  ids = alignment.piece_label_ids(range(len(tags)))
  piece_tags = ["O" if index == IGNORE_LABEL else tags[index] for index in ids]
  return alignment.unit_tags(piece_tags_of(piece_tags) if piece_tags_of else piece_tags)


def representable(example: TokenExample, alignment: PieceAlignment):
  """The gold tags that one tag per piece can carry, from the gold tags alone: a unit inside a piece continues
  the tag of the piece's first unit, and a space is I-X between a B-X or I-X and an I-X, else O."""
  first_tag = {}
  expected = []
  for unit, piece, starts in zip(example.labels, alignment.unit_pieces, alignment.unit_starts_piece):
    if starts:
      first_tag[piece] = unit
    expected.append(unit if starts or piece is None else continuation(first_tag[piece]))
  solid = [index for index, is_space in enumerate(alignment.unit_is_space) if not is_space]
  for index in range(len(expected)):
    if alignment.unit_is_space[index]:
      before = [expected[i] for i in solid if i < index][-1:] or ["O"]
      after = [expected[i] for i in solid if i > index][:1] or ["O"]
      inside = before[0] != "O" and after[0] == "I-" + before[0][2:]
      expected[index] = after[0] if inside else "O"
  return expected


# The reader.

def test_the_klue_dev_file_is_read_whole_and_agrees_with_its_markup(klue):
  examples, _ = klue
  with open(KLUE_NER_DEV, encoding="utf-8") as reader:
    lines = reader.read().split("\n")
  assert len(examples) == 3000 == sum(line.startswith("## klue-ner-v1_dev_") for line in lines)
  assert sum(len(example.units) for example in examples) == sum(
      1 for line in lines if line and not line.startswith("##"))
  assert examples[0].guid == "klue-ner-v1_dev_00000-wikitree"
  assert "".join(examples[0].units[:4]) == "경찰은 " and examples[0].labels[:4] == ("B-OG", "I-OG", "O", "O")
  assert len({example.guid for example in examples}) == 3000
  for example in examples:
    # The header's sentence without its markup is the characters; the tags give back the markup exactly.
    assert MARKUP.sub(r"\1", example.marked_sentence) == example.text, example.guid
    assert mark_entities(example.units, example.labels) == example.marked_sentence, example.guid
  counts = collections.Counter(label for example in examples for label in example.labels)
  assert set(counts) == set(KLUE_NER_LABELS)
  # KLUE tags a space inside an entity I-; twice in this file an entity starts with a space.
  spaces = collections.Counter(label for example in examples
                               for unit, label in zip(example.units, example.labels) if unit == " ")
  assert spaces["I-PS"] > 100 and spaces["B-LC"] == spaces["B-QT"] == 1


def test_label_lists(klue):
  examples, _ = klue
  assert label_list_from_examples(examples) == ("O", "B-DT", "I-DT", "B-LC", "I-LC", "B-OG", "I-OG", "B-PS",
                                                "I-PS", "B-QT", "I-QT", "B-TI", "I-TI")
  assert sorted(KLUE_NER_LABELS) == sorted(label_list_from_examples(examples))
  assert KLUE_NER_LABELS[-1] == "O" and KLUE_NER_LABELS[:2] == ("B-PS", "I-PS")  # the KLUE baseline's ids


@pytest.mark.parametrize("where", ["local", "bucket"])
def test_a_klue_data_dir_reads_its_split_file(tmp_path, where, bucket, tokenizer, klue):
  with open(KLUE_NER_DEV, encoding="utf-8") as reader:
    head = reader.read().split("\n## klue-ner-v1_dev_00010")[0]  # its first 10 sentences
  root = f"{bucket if where == 'bucket' else tmp_path}/klue"  # --data_dir=gs://... too
  with files.staged_folder(root) as staging:
    write(pathlib.Path(staging, "klue-ner-v1.1_dev.tsv"), [head])
  assert TokenClassificationObjective("klue-ner", tokenizer).read_examples(root, "dev") == klue[0][:10]


@pytest.mark.parametrize("where", ["local", "bucket"])
def test_conll_files(tmp_path, where, bucket):
  root = f"{bucket if where == 'bucket' else tmp_path}/conll"
  with files.staged_folder(root) as staging:
    write(pathlib.Path(staging, "train.txt"), [
        "-DOCSTART- -X- -X- O", "", "EU NNP B-NP B-ORG", "rejects VBZ B-VP O", "German JJ B-NP B-MISC", "", "",
        "Peter NNP B-NP B-PER", "Blackburn NNP I-NP I-PER\r", "   ", "-DOCSTART- -X- -X- O",
        "BRUSSELS NNP B-NP B-LOC"])
  examples = read_conll(f"{root}/train.txt")
  assert [example.units for example in examples] == [("EU", "rejects", "German"), ("Peter", "Blackburn"),
                                                     ("BRUSSELS",)]
  assert examples[1].labels == ("B-PER", "I-PER") and examples[1].text == "Peter Blackburn"
  assert [example.guid for example in examples] == ["train.txt-3", "train.txt-8", "train.txt-12"]
  assert examples[0].columns[0] == ("EU", "NNP", "B-NP")
  assert label_list_from_examples(examples) == ("O", "B-LOC", "I-LOC", "B-MISC", "I-MISC", "B-ORG", "I-ORG",
                                                "B-PER", "I-PER")
  # Predictions are written in the file's own layout, and read back as they were written.
  predicted = [("B-ORG", "O", "O"), ("B-PER", "I-PER"), ("O",)]
  written = write(tmp_path / "predicted.txt", format_examples(examples, predicted).split("\n"))
  assert [example.labels for example in read_conll(written)] == predicted
  assert read_conll(written)[0].columns == examples[0].columns


def test_tsv_files(tmp_path):
  path = write(tmp_path / "mine.tsv", ["New York \tB-LOC ", "is\tO", " \t ", "Seoul\tB-LOC", "City\tI-LOC"])
  examples = read_examples(path, "tsv", label_list=("O", "B-LOC", "I-LOC"))
  assert [(example.units, example.labels) for example in examples] == [
      (("New York", "is"), ("B-LOC", "O")), (("Seoul", "City"), ("B-LOC", "I-LOC"))]
  predicted = [("B-LOC", "O"), ("O", "O")]
  written = write(tmp_path / "again.tsv", format_examples(examples, predicted).split("\n"))
  again = read_tsv(written)
  assert [(example.units, example.labels) for example in again] == [(("New York", "is"), ("B-LOC", "O")),
                                                                     (("Seoul", "City"), ("O", "O"))]
  assert [example.guid for example in again] == ["again.tsv-1", "again.tsv-4"]


def test_klue_predictions_are_written_as_klue_files(tmp_path, klue):
  examples = klue[0][:40]
  predicted = [tuple("O" for _ in example.units) for example in examples]
  predicted[3] = examples[3].labels
  written = write(tmp_path / "predicted.tsv", format_examples(examples, predicted).split("\n"))
  again = read_klue_ner(written)
  assert [example.guid for example in again] == [example.guid for example in examples]
  assert [example.labels for example in again] == predicted
  assert again[3].marked_sentence == examples[3].marked_sentence
  assert again[0].marked_sentence == examples[0].text  # no entity: no markup


HEADER = "## s-1\t<김:PS>씨"


@pytest.mark.parametrize("file_format,lines,line,message", [
    ("klue-ner", [HEADER, "김\tB-XX", "씨\tO"], 2, "tag 'B-XX' is not one of the labels B-PS, I-PS"),
    ("klue-ner", [HEADER, "김\tB-PS", "씨"], 3, "a character without a tag; KLUE-NER lines are CHAR<tab>TAG"),
    ("klue-ner", [HEADER, "김\tO", "씨\tI-PS"], 3, "I-PS after O continues no PS entity; tags must be IOB2"),
    ("klue-ner", [HEADER, "김\tB-LC", "씨\tI-PS"], 3, "I-PS after B-LC continues no PS entity"),
    ("klue-ner", [HEADER, "김\tB-PS", "", "씨\tI-PS"], 4,
     "a character line without a '## <guid>\\t<sentence>' header"),
    ("klue-ner", ["## s-1 김씨", "김\tB-PS"], 1, "a sentence's header must be '## <guid>\\t<sentence>'"),
    ("klue-ner", [HEADER, "김\tB-PS", "", HEADER, "씨\tO"], 4, "guid 's-1' is also the guid of line 1"),
    ("klue-ner", [HEADER, "김\tB-PS", "## s-2\t씨", "씨\tO"], 3, "a '##' line among a sentence's characters"),
    ("klue-ner", [HEADER, "김씨\tB-PS"], 2, "'김씨\\tB-PS'; KLUE-NER lines are CHAR<tab>TAG, one character each"),
    ("conll", ["EU B-ORG", "rejects"], 2, "a word without a tag; CoNLL lines are whitespace-separated"),
    ("conll", ["EU NNP I-ORG", "rejects VBZ O"], 1, "I-ORG at the start of a sentence continues no ORG"),
    ("conll", ["EU NNP ORG"], 1, "tag 'ORG' is not an IOB2 tag (O, B-<type> or I-<type>)"),
    ("tsv", ["EU\tB-ORG", "rejects O"], 2, "a word without a tag (no tab); TSV lines are WORD<tab>TAG"),
    ("tsv", ["EU\tNNP\tB-ORG"], 1, "3 tab-separated fields; TSV lines are WORD<tab>TAG (read a file of more"),
    ("tsv", ["EU\tB-ORG", " \tO"], 2, "an empty word"),
])
def test_bad_lines_are_named_by_file_and_line(tmp_path, file_format, lines, line, message):
  path = write(tmp_path / "bad.txt", lines)
  with pytest.raises(TaskError, match=re.escape(f"{path}, line {line}: ") + ".*" + re.escape(message)):
    read_examples(path, file_format)


def test_tags_outside_a_given_label_list(tmp_path):
  path = write(tmp_path / "train.tsv", ["EU\tB-ORG", "rejects\tO", "German\tB-MISC"])
  message = f"{path}, line 3: tag 'B-MISC' is not one of the labels O, B-ORG, I-ORG."
  with pytest.raises(TaskError, match=re.escape(message)):
    read_tsv(path, label_list=("O", "B-ORG", "I-ORG"))


@pytest.mark.parametrize("file_format", ["klue-ner", "conll", "tsv"])
def test_empty_missing_and_non_utf8_files(tmp_path, file_format):
  # A KLUE line "  " is a character without a tag, not a blank line.
  blank = ["", "\t"] if file_format == "klue-ner" else ["", "  "]
  for lines in ([], blank, ["## a description", "## of the file"] if file_format == "klue-ner" else ["", ""]):
    path = write(tmp_path / "empty.txt", lines)
    with pytest.raises(TaskError, match=re.escape(f"{path}: no sentences: the file is empty")):
      read_examples(path, file_format)
  path = tmp_path / "latin1.txt"
  first = "## s-1\tx\nx\tO\n" if file_format == "klue-ner" else "x\tO\ny\tO\n"
  path.write_bytes((first + "\n## Pelé\tB-PER\n").encode("latin-1"))
  with pytest.raises(TaskError, match=re.escape(f"{path}, line 4: not UTF-8")):
    read_examples(str(path), file_format)
  with pytest.raises(InputFileError, match="NER data file not found"):
    read_examples(str(tmp_path / "nowhere.txt"), file_format)


def test_unknown_format(tmp_path):
  with pytest.raises(OptionError, match="Unknown NER file format 'iob'; the formats are klue-ner, conll, tsv"):
    read_examples(str(tmp_path), "iob")


# The alignment.

def test_pieces_are_the_tokenizers_on_every_sentence(klue, tokenizer):
  examples, alignments = klue
  english = [line.split() for line in corpus_lines("en_wiki.txt", 300)]
  english.append(["Café", "naïve", "İstanbul", "3,", "4,", "and", "1,5,", "``quoted''", "ﬁne", "①", "藤井"])
  sentences = [(example.text, alignment) for example, alignment in zip(examples, alignments)]
  sentences += [(" ".join(words), align_units(words, " ", tokenizer)) for words in english]
  for text, alignment in sentences:
    assert alignment.pieces == tuple(tokenizer.tokenize(text, special_tokens_in_text=False)), text
    assert list(alignment.token_ids) == tokenizer.encode(text, special_tokens_in_text=False), text
    # Every unit but the spaces is in a piece, and each piece is started by at most one unit.
    assert all((piece is None) == is_space
               for piece, is_space in zip(alignment.unit_pieces, alignment.unit_is_space))
    started = [piece for piece, starts in zip(alignment.unit_pieces, alignment.unit_starts_piece) if starts]
    assert started == sorted(set(started))
  # Google's split before "<digit>," happened (the pieces "▁3" and ","), and the offsets stay right after it.
  last = sentences[-1][1]
  assert last.pieces[last.unit_pieces[3]:last.unit_pieces[3] + 2] == ("▁3", ",")
  assert last.unit_pieces[4] == last.unit_pieces[3] + 2


def test_every_klue_sentence_round_trips_exactly_where_pieces_can_carry_its_tags(klue, tokenizer):
  examples, alignments = klue
  exact, kinds = 0, collections.Counter()
  for example, alignment in zip(examples, alignments):
    back = round_trip(alignment, example.labels)
    # What comes back is exactly the gold tags that one tag per piece can carry ...
    assert back == representable(example, alignment), example.guid
    exact += back == list(example.labels)
    # ... and every unit that starts a piece comes back exactly.
    assert all(back[i] == example.labels[i] for i, starts in enumerate(alignment.unit_starts_piece) if starts)
    for index, (tag, gold) in enumerate(zip(back, example.labels)):
      if tag != gold:
        piece = alignment.unit_pieces[index]
        is_unk = piece is not None and alignment.token_ids[piece] == tokenizer.unk_id
        kinds["space" if piece is None else "unk" if is_unk else "piece"] += 1
  # The rest: an entity boundary inside a piece (mostly an <unk> run such as "김씨", or "북핵"), or a space that
  # begins an entity (twice).
  assert exact == 2937
  assert kinds == {"unk": 60, "piece": 13, "space": 2}


def test_the_round_trip_exercised_unk_and_bare_word_start_pieces(klue, tokenizer):
  examples, alignments = klue
  with_unk = [a for a in alignments if tokenizer.unk_id in a.token_ids]
  with_bare = [a for a in alignments if "\u2581" in a.pieces]
  assert len(with_unk) == 2792 and len(with_bare) == 2987
  # <unk> pieces that cover several characters, labelled by their first; bare "▁" pieces start no unit.
  unit_counts = collections.Counter((id(a), p) for a in with_unk for p in a.unit_pieces if p is not None
                                    and a.token_ids[p] == tokenizer.unk_id)
  assert max(unit_counts.values()) >= 4
  for alignment in with_bare:
    labels = alignment.piece_label_ids([0] * len(alignment.unit_pieces))
    assert all(labels[i] == IGNORE_LABEL for i, piece in enumerate(alignment.pieces) if piece == "\u2581")


def test_a_planted_shift_of_the_piece_labels_is_caught(klue):
  examples, alignments = klue
  broken = sum(round_trip(alignment, example.labels, lambda tags: ["O"] + tags[:-1]) != list(example.labels)
               for example, alignment in zip(examples, alignments))
  assert broken > 0.9 * len(examples)


def test_unit_tags_from_piece_tags():
  # "▁" "서울" "▁" "시" "청": the units 서 울 ␣ 시 청, the space in no piece.
  alignment = PieceAlignment(("▁", "서울", "▁", "시", "청"), (8, 9, 8, 10, 11), (1, 1, None, 3, 4),
                             (True, False, False, True, True), (False, False, True, False, False))
  assert alignment.piece_label_ids([3, 4, 5, 6, 7]) == [IGNORE_LABEL, 3, IGNORE_LABEL, 6, 7]
  assert alignment.unit_tags(["B-PS", "B-LC", "B-PS", "I-LC", "I-LC"]) == ["B-LC", "I-LC", "I-LC", "I-LC",
                                                                           "I-LC"]
  assert alignment.unit_tags(["O", "I-LC", "O", "B-LC", "I-LC"]) == ["I-LC", "I-LC", "O", "B-LC", "I-LC"]
  assert alignment.unit_tags(["O", "B-LC", "O", "I-OG", "O"]) == ["B-LC", "I-LC", "O", "I-OG", "O"]
  assert alignment.unit_tags(["O", "O", "O", "O", "B-DT"]) == ["O", "O", "O", "O", "B-DT"]
  with pytest.raises(ValueError, match="4 tags for 5 pieces"):
    alignment.unit_tags(["O"] * 4)


@pytest.mark.parametrize("units,separator,pieces,unit_pieces,starts", [
    # Upper case, accents and a ligature change the characters; a word is labelled by its first piece.
    (["Café", "naïve", "ﬁne"], " ", ("▁ca", "f", "e", "▁", "na", "ive", "▁fine"), (0, 4, 6), (1, 1, 1)),
    # Google's split before "<digit>,": "1,5," is "▁1" "," "5" ",".
    (["1,5,", "ok"], " ", ("▁1", ",", "5", ",", "▁", "ok"), (0, 5), (1, 1)),
    # Two backquotes become one quote piece, which the first starts.
    (list("a``b"), "", ("▁a", '"', "b"), (0, 1, 1, 2), (1, 1, 0, 1)),
    # Conjoining jamo compose into a syllable; the bare "▁" before 하 covers only the space.
    (list("\u1112\u1161\u11ab 하"), "", ("▁한", "▁", "하"), (0, 0, 0, None, 2), (1, 0, 0, 0, 1)),
    # A lone accent is deleted: it shares the piece before it, and before any piece it is in none.
    (["e\u0301", "\u0301", "x"], "", ("▁ex",), (0, 0, 0), (1, 0, 0)),
    (["\u0301", "a", "b"], "", ("▁a", "b"), (None, 0, 1), (0, 1, 1)),
    # An <unk> run of several characters, labelled by its first; whitespace runs collapse.
    (list(" 藤井 x "), "", ("▁", "藤井", "▁x"), (None, 1, 1, None, 2, None), (0, 1, 0, 0, 1, 0)),
])
def test_hard_alignments(tokenizer, units, separator, pieces, unit_pieces, starts):
  alignment = align_units(units, separator, tokenizer)
  assert alignment.pieces == pieces == tuple(tokenizer.tokenize(separator.join(units)))
  assert alignment.unit_pieces == unit_pieces
  assert alignment.unit_starts_piece == tuple(map(bool, starts))


# Windows and truncation.

def google_max_context(spans, span_index, position):
  """Google's `_check_is_max_context`, written out: spans are (start, length)."""
  best_score, best_index = None, None
  for index, (start, length) in enumerate(spans):
    end = start + length - 1
    if position < start or position > end:
      continue
    score = min(position - start, end - position) + 0.01 * length
    if best_score is None or score > best_score:
      best_score, best_index = score, index
  return span_index == best_index


@pytest.mark.parametrize("num_pieces,max_seq_length,doc_stride", [
    (10, 6, 2), (1, 5, 1), (0, 8, 4), (30, 32, 8), (31, 32, 8), (100, 20, 7), (100, 20, 30), (57, 12, 1)])
def test_windows_predict_every_piece_once_from_its_max_context_window(num_pieces, max_seq_length, doc_stride):
  sentence_windows = windows(num_pieces, max_seq_length, doc_stride)
  assert sentence_windows[0].start == 0 and sentence_windows[-1].end == num_pieces
  for window, following in zip(sentence_windows, sentence_windows[1:]):
    assert 0 < following.start - window.start <= doc_stride and following.start <= window.end
  spans = [(window.start, window.end - window.start) for window in sentence_windows]
  for index, window in enumerate(sentence_windows):
    assert window.end - window.start <= max_seq_length - 2
    assert window.max_context == tuple(google_max_context(spans, index, position)
                                       for position in range(window.start, window.end))
  # Each window's values name the window: the merge takes each piece from one window, once.
  merged = merge_windows(sentence_windows, [[(index, p) for p in range(w.start, w.end)]
                                            for index, w in enumerate(sentence_windows)])
  assert [position for _, position in merged] == list(range(num_pieces))
  if num_pieces <= max_seq_length - 2:
    assert len(sentence_windows) == 1


def test_window_options():
  with pytest.raises(OptionError, match="max_seq_length >= 3"):
    windows(10, 2, 1)
  with pytest.raises(OptionError, match="doc_stride >= 1"):
    windows(10, 8, 0)
  with pytest.raises(ValueError, match="2 values for the 3 pieces of a window"):
    merge_windows(windows(3, 5, 1), [[1, 2]])


def test_a_long_sentence_round_trips_through_windows(klue, tokenizer):
  examples, _ = klue
  # Twenty real sentences joined by a space: one sentence of some 700 pieces.
  units, labels = [], []
  for example in examples[:20]:
    units += list(example.units) + [" "]
    labels += list(example.labels) + ["O"]
  alignment = align_units(units, "", tokenizer)
  assert len(alignment.pieces) > 600
  ids = alignment.piece_label_ids(range(len(units)))
  gold_pieces = ["O" if index == IGNORE_LABEL else labels[index] for index in ids]
  sentence_windows = windows(len(alignment.pieces), 64, 16)
  assert len(sentence_windows) > 30
  # Each window "predicts" the gold tags where it has the most context and a wrong tag elsewhere.
  predictions = [[tag if predicts else "B-XX" for tag, predicts in zip(gold_pieces[w.start:w.end],
                                                                        w.max_context)]
                 for w in sentence_windows]
  merged = merge_windows(sentence_windows, predictions)
  assert merged == gold_pieces
  assert alignment.unit_tags(merged) == round_trip(alignment, labels)


def test_the_baseline_truncation_leaves_out_the_units_of_the_dropped_pieces(klue):
  examples, alignments = klue
  long = [(e, a) for e, a in zip(examples, alignments) if len(a.pieces) > 62]
  assert len(long) >= 40
  for example, alignment in long:
    kept = evaluated_units(alignment, max_seq_length=64)
    every = evaluated_units(alignment)
    assert every == [i for i, unit in enumerate(example.units) if unit != " "]
    # The kept units are the first ones, exactly those of the first 62 pieces (their pieces, and the units
    # that share them).
    assert kept == every[:len(kept)]
    assert all(alignment.unit_pieces[i] < 62 for i in kept)
    dropped = every[len(kept):]
    assert dropped and alignment.unit_pieces[dropped[0]] >= 62
    assert evaluated_units(alignment, max_seq_length=len(alignment.pieces) + 2) == every


# Metrics.

def seqeval_macro_f1(true_tags, predicted_tags):
  with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # seqeval warns of types without predictions
    return seqeval_f1([list(true_tags)], [list(predicted_tags)], average="macro", mode="strict", scheme=IOB2)


def sklearn_macro_f1(true_tags, predicted_tags, label_list):
  ids = {label: index for index, label in enumerate(label_list)}
  return sklearn_f1([ids[t] for t in true_tags], [ids[t] for t in predicted_tags],
                    labels=range(len(label_list)), average="macro", zero_division=True)


def corrupted(tags, rng, rate, label_list):
  """`tags` with a fraction `rate` replaced by random labels: broken, shifted and invalid (I- after O)
  entities."""
  tags = list(tags)
  for index in np.flatnonzero(rng.random(len(tags)) < rate):
    tags[index] = label_list[rng.integers(len(label_list))]
  return tags


def test_entity_and_character_f1_on_random_sequences():
  rng = np.random.default_rng(0)
  label_list = ("O", "B-A", "I-A", "B-B", "I-B", "B-C", "I-C")
  for trial in range(60):
    size = int(rng.integers(1, 80))
    true_tags = list(rng.choice(label_list, size, p=[0.5] + [0.5 / 6] * 6))
    predicted = corrupted(true_tags, rng, [0.0, 0.1, 0.5, 1.0][trial % 4], label_list)
    expected = seqeval_macro_f1(true_tags, predicted)
    # seqeval's F1 of no entities at all (only O, or I- continuing nothing) is NaN; ours 0.
    expected = 0.0 if np.isnan(expected) else expected
    assert metrics.entity_macro_f1(true_tags, predicted) == pytest.approx(expected, abs=1e-6)
    assert metrics.character_macro_f1(true_tags, predicted, label_list) == pytest.approx(
        sklearn_macro_f1(true_tags, predicted, label_list), abs=1e-6)
  # A label in neither sequence scores 1 (the baseline's zero_division=True), not 0 (scikit-learn's default).
  assert metrics.character_macro_f1(["O", "B-A"], ["O", "B-B"], label_list) == pytest.approx(
      (1 + 0 + 0 + 4) / 7)


def test_scores_on_real_klue_tags_with_corrupted_predictions(klue):
  examples, alignments = klue
  rng = np.random.default_rng(1)
  # seqeval's strict mode is quadratic in the entities: 400 sentences (some 20,000 characters) keep it fast.
  sentences = []
  for example, alignment in zip(examples[:400], alignments):
    units = evaluated_units(alignment)
    sentences.append([example.labels[i] for i in units])
  for rate in (0.0, 0.01, 0.05, 0.3):
    pairs = [(gold, corrupted(gold, rng, rate, KLUE_NER_LABELS)) for gold in sentences]
    true_sequence, predicted_sequence = metrics.concatenated(pairs)
    assert len(true_sequence) == sum(len(gold) + 2 for gold in sentences)
    scores = metrics.ner_scores(pairs, KLUE_NER_LABELS)
    assert scores["entity_f1"] == pytest.approx(seqeval_macro_f1(true_sequence, predicted_sequence), abs=1e-6)
    assert scores["character_f1"] == pytest.approx(
        sklearn_macro_f1(true_sequence, predicted_sequence, KLUE_NER_LABELS), abs=1e-6)
    if rate == 0.0:
      assert scores == {"entity_f1": 1.0, "character_f1": 1.0}
    else:
      assert scores["entity_f1"] < 1.0
  with pytest.raises(ValueError, match="not among the labels"):
    metrics.character_macro_f1(["O"], ["B-XX"], KLUE_NER_LABELS)
