"""Morpheme-aware Korean vocabularies (train_sentencepiece --pretokenizer) and the vocabulary report."""

import json
import os
import re
import subprocess
import sys

import pytest
import sentencepiece as spm
import tensorflow as tf

from albert_tf.data import masking_statistics
from albert_tf.data.instances import InstanceOptions
from albert_tf.data.pretraining_corpus import InstanceMaker
from albert_tf.text import pretokenization
from albert_tf.text import tokenizer_options as options_lib
from albert_tf.text import vocab_report
from albert_tf.text.korean_analyzers import KiwiAnalyzer
from albert_tf.text.sentencepiece_training import train_vocabulary
from albert_tf.text.tokenizer import SPECIAL_TOKENS, SentencePieceTokenizer, read_model_proto
from tests.conftest import SHARED, TOOLS, requires_shared, run_tool

KO_LAW = os.path.join(SHARED, "corpus", "ko_law.txt")
KO_HELP = os.path.join(SHARED, "corpus", "ko_libreoffice_help.txt")
# Small enough for a quick test, large enough that the figures hold at this size (see held_out_figures).
VOCAB_SIZE = 2000
TRAIN_LINES = 6000
HELD_OUT_LINES = 600

pytestmark = requires_shared(KO_HELP)


@pytest.fixture(scope="module")
def split(tmp_path_factory):
  """The training text (every document but each 10th of both corpora, its first lines) and held-out lines."""
  kept, held_out = vocab_report.hold_out_documents([KO_LAW, KO_HELP], 10)
  train_file = tmp_path_factory.mktemp("text") / "train.txt"
  train_file.write_text("\n".join(kept[:TRAIN_LINES]) + "\n", encoding="utf-8")
  return str(train_file), held_out[:HELD_OUT_LINES]


@pytest.fixture(scope="module")
def kiwi():
  return KiwiAnalyzer()


@pytest.fixture(scope="module")
def held_out_words(split, kiwi):
  return vocab_report.analyse_lines(split[1], kiwi)


@pytest.fixture(scope="module")
def models(split, tmp_path_factory):
  """A plain, a Kiwi and a MeCab-ko vocabulary of the same size on the same text; Kiwi's with two processes."""
  folder = tmp_path_factory.mktemp("models")
  return {name: train_vocabulary(split[0], str(folder / name / "spiece"), vocab_size=VOCAB_SIZE,
                                 num_threads=2 if name == "kiwi" else 1,
                                 pretokenizer=None if name == "plain" else name)
          for name in ("plain", "kiwi", "mecab")}


def test_pretokenized_vocabularies_follow_morpheme_boundaries(models, held_out_words):
  reports = {name: vocab_report.vocab_report(SentencePieceTokenizer(trained.model_file), held_out_words, name)
             for name, trained in models.items()}
  print(vocab_report.table(list(reports.values())))
  plain = reports["plain"].morphemes
  for name in ("kiwi", "mecab"):
    figures = reports[name].morphemes
    assert figures.recall > plain.recall + 0.2, name
    assert figures.precision > plain.precision - 0.02, name
    assert figures.stem_in_one_piece > plain.stem_in_one_piece, name
    assert reports[name].vocab_size == VOCAB_SIZE
    # The same characters are kept (coverage of the text without delimiters), so the same words are aligned.
    assert models[name].coverage == models["plain"].coverage
    assert figures.unaligned_words == plain.unaligned_words


def test_no_piece_holds_the_delimiter_and_the_options_record_the_pretokenizer(models):
  for name, trained in models.items():
    sp_model = spm.SentencePieceProcessor(model_file=trained.model_file)
    pieces = [sp_model.IdToPiece(i) for i in range(sp_model.GetPieceSize())]
    assert not any(pretokenization.DELIMITER in piece for piece in pieces)
    with open(trained.model_file[:-len(".model")] + ".vocab", encoding="utf-8") as reader:
      assert [line.split("\t")[0] for line in reader.read().splitlines()] == pieces
    pretokenizer = None if name == "plain" else name
    assert options_lib.read_options(trained.model_file) == options_lib.TokenizerOptions(pretokenizer=pretokenizer)
    # An ordinary model: its trainer spec is the plain one's but for the paths and the threads.
    specs = [read_model_proto(path).trainer_spec for path in (trained.model_file, models["plain"].model_file)]
    for spec in specs:
      spec.ClearField("model_prefix")
      spec.ClearField("num_threads")
    assert specs[0] == specs[1]
  assert models["kiwi"].analysed_lines == models["mecab"].analysed_lines > 5000
  assert 0 < models["kiwi"].analysis_seconds < models["kiwi"].seconds
  assert models["plain"].analysis_seconds == 0


def test_size_errors_give_the_figures_of_the_vocabulary_asked_for(tmp_path):
  """SentencePiece counts the delimiter's piece; the figures in the errors leave it out."""
  needed = []
  for pretokenizer in (None, "mecab"):
    with pytest.raises(ValueError, match=r"\((\d+) pieces are needed\)") as error:
      train_vocabulary(KO_LAW, str(tmp_path / "spiece"), vocab_size=100, num_threads=1, pretokenizer=pretokenizer)
    needed.append(error.value.pieces_needed)
  assert needed[0] == needed[1] > 100
  with pytest.raises(ValueError, match=r"at most (\d+) pieces") as error:
    train_vocabulary(KO_LAW, str(tmp_path / "spiece"), vocab_size=100_000, num_threads=1, pretokenizer="mecab")
  most = int(re.search(r"at most (\d+) pieces", str(error.value)).group(1))
  assert train_vocabulary(KO_LAW, str(tmp_path / "spiece"), vocab_size=most, num_threads=1,
                          pretokenizer="mecab").num_pieces == most
  with pytest.raises(ValueError, match="--pretokenizer needs model_type unigram or bpe"):
    train_vocabulary(KO_LAW, str(tmp_path / "spiece"), model_type="char", pretokenizer="mecab")


def test_marks_are_morpheme_boundaries_inside_words_whatever_the_processes(split):
  line = "대한민국의 국민이 되는 요건은 법률로 정한다."
  # 정한다 is 정하+ㄴ다: ㄴ starts inside 한, so no boundary between its characters.
  expected = "대한민국|의 국민|이 되|는 요건|은 법률|로 정한다|.".replace("|", pretokenization.DELIMITER)
  lines = [line] + split[1][:200]
  marked = pretokenization.mark_morphemes(lines, "kiwi", 1)
  assert marked[0] == expected
  assert [text.replace(pretokenization.DELIMITER, "") for text in marked] == lines
  assert pretokenization.mark_morphemes(lines, "kiwi", 2) == marked


def test_reservoir_sample_is_seeded_and_uniform():
  lines = [str(i) for i in range(1000)]
  sample = pretokenization.reservoir_sample(iter(lines), 100)
  assert sample == pretokenization.reservoir_sample(iter(lines), 100) and len(set(sample)) == 100
  assert sample != pretokenization.reservoir_sample(iter(lines), 100, seed=1)
  assert 300 < sum(map(int, sample)) / 100 < 700  # not the first lines
  assert pretokenization.reservoir_sample(iter(lines), 0) == lines
  assert pretokenization.reservoir_sample(iter(lines[:50]), 100) == lines[:50]


def test_python_graph_and_transformers_tokenizers_agree_on_raw_korean(models, split, tmp_path):
  import tensorflow as tf  # pylint: disable=import-outside-toplevel
  import transformers  # pylint: disable=import-outside-toplevel
  from albert_tf.interop import hf_tokenizer  # pylint: disable=import-outside-toplevel
  from albert_tf.text.graph_tokenizer import GraphTokenizer  # pylint: disable=import-outside-toplevel
  model_file = models["kiwi"].model_file
  options = options_lib.read_options(model_file)
  lines = split[1][:300] + ["  대한민국의   수도는 서울이다.  ", "LibreOffice를 사용합니다, 3,000원!"]
  expected = [SentencePieceTokenizer(model_file, options.do_lower_case, options.keep_accents).encode(line)
              for line in lines]
  graph_ids = GraphTokenizer(model_file, options.do_lower_case, options.keep_accents).encode(tf.constant(lines))
  assert graph_ids.to_list() == expected
  paths, _ = hf_tokenizer.write_measured_tokenizer_files(model_file, str(tmp_path), options, 512)
  hf_ids = transformers.AlbertTokenizer.from_pretrained(str(tmp_path))(lines, add_special_tokens=False)["input_ids"]
  assert hf_ids == expected
  # The export records the pretokenizer beside its spiece.model, for our tools.
  assert options_lib.read_options(paths["spiece.model"]).pretokenizer == "kiwi"


def hand_made_model(base_model_file, path):
  """A unigram model of a few pieces whose segmentations are known: 학교|에서, 공부했|다, 학|생(<unk>), x|y|z(<unk>)."""
  proto = read_model_proto(base_model_file)
  del proto.pieces[len(SPECIAL_TOKENS):]
  for piece in ("▁학교", "에서", "▁공부했", "다", "▁학", "▁x", "y"):
    proto.pieces.add(piece=piece, score=-1.0)
  proto.pieces.add(piece="▁", score=-5.0)  # a word start alone, where no longer piece fits
  proto.trainer_spec.vocab_size = len(proto.pieces)
  path.write_bytes(proto.SerializeToString())
  return str(path)


def test_report_figures_are_the_hand_computed_ones(models, kiwi, tmp_path):
  words = vocab_report.analyse_lines(["학교에서 공부했다 학생 ㈜한국 xyz", "   "], kiwi)
  assert words == [
      vocab_report.Word("학교에서", "Hangul", (2,), 2),  # 학교|에서, the stem 학교 a noun
      vocab_report.Word("공부했다", "Hangul", (2, 3), 2),  # 공부|했(하+었)|다
      vocab_report.Word("학생", "Hangul", (), 2),
      vocab_report.Word("㈜한국", "Hangul", (1,), None),  # starts with a symbol, not a stem
      vocab_report.Word("xyz", "Latin"),
  ]
  tokenizer = SentencePieceTokenizer(hand_made_model(models["plain"].model_file, tmp_path / "hand.model"))
  # 생 and all of (주)한국 are <unk>.
  assert [tokenizer.tokenize(word) for word in ("학생", "㈜한국")] == [["▁학", "생"], ["▁", "(주)한국"]]
  report = vocab_report.vocab_report(tokenizer, words, "hand")
  hangul, latin = report.scripts["Hangul"], report.scripts["Latin"]
  # 2 pieces for each Hangul word, 2 of them <unk>; x|y|z with z <unk>.
  assert (hangul.words, hangul.pieces, hangul.unknown_pieces, hangul.words_with_unknown) == (4, 8, 2, 2)
  assert (latin.words, latin.pieces, latin.unknown_pieces, latin.words_with_unknown) == (1, 3, 1, 1)
  assert report.scripts["other"].words == 0
  # ㈜한국 is 3 characters, its piece (주)한국 5: left out. Morpheme boundaries {2}, {2, 3}, {}; piece boundaries
  # {2}, {3}, {1}: 2 shared of 3 each way. Stems 학교 (one piece), 공부 (in 공부했), 학생 (학|생).
  figures = report.morphemes
  assert (figures.words, figures.unaligned_words) == (3, 1)
  assert (figures.morpheme_boundaries, figures.piece_boundaries, figures.shared_boundaries) == (3, 3, 2)
  assert (figures.stems, figures.stems_in_one_piece) == (3, 1)
  assert figures.recall == figures.precision == pytest.approx(2 / 3)
  assert report.as_dict()["scripts"]["Hangul"]["pieces_per_word"] == 2.0
  assert report.as_dict()["scripts"]["Hangul"]["unknown_rate"] == 0.5


def test_hold_out_documents_counts_documents_across_files(tmp_path):
  (tmp_path / "a.txt").write_text("a\nb\n\n\nc\n\nd\ne", encoding="utf-8")
  (tmp_path / "b.txt").write_text("f\n", encoding="utf-8")
  kept, held_out = vocab_report.hold_out_documents(str(tmp_path / "*.txt"), 2)
  assert kept == ["a", "b", "", "d", "e", ""]
  assert held_out == ["c", "f"]


def test_tool_reports_the_missing_korean_extra_in_one_line(split, tmp_path):
  # The tool as a user without the extra runs it: importing kiwipiepy fails.
  code = ("import runpy, sys; sys.modules['kiwipiepy'] = None; sys.argv = sys.argv[1:]; "
          "runpy.run_path(sys.argv[0], run_name='__main__')")
  result = subprocess.run([sys.executable, "-c", code, os.path.join(TOOLS, "train_sentencepiece.py"),
                           f"--input={split[0]}", f"--model_prefix={tmp_path / 'spiece'}", "--pretokenizer=kiwi"],
                          capture_output=True, text=True, check=False)
  assert result.returncode == 2, result.stderr
  lines = result.stderr.strip().splitlines()
  assert len(lines) == 1 and lines[0].startswith("error: --pretokenizer=kiwi needs the Korean analyzers of the korean "
                                                 "extra"), result.stderr
  assert "pip install 'albert-tf[korean]'" in lines[0]
  assert os.listdir(tmp_path) == []


def test_vocab_report_tool_compares_models(models, split, tmp_path):
  held_out = tmp_path / "held_out.txt"
  held_out.write_text("\n".join(split[1][:50]) + "\n\n", encoding="utf-8")
  output_json = tmp_path / "report.json"
  result = run_tool("vocab_report", f"--spm_model_file={models['plain'].model_file},{models['kiwi'].model_file}",
                    f"--input_file={held_out}", f"--output_json={output_json}", "--max_lines=40")
  assert result.returncode == 0, result.stderr
  assert "plain/spiece" in result.stdout and "kiwi/spiece" in result.stdout
  assert "morpheme boundary recall" in result.stdout
  reports = json.loads(output_json.read_text(encoding="utf-8"))
  assert [report["name"] for report in reports] == ["plain/spiece", "kiwi/spiece"]
  assert reports[1]["morphemes"]["recall"] > reports[0]["morphemes"]["recall"]


def test_morpheme_word_boundaries_start_words_where_the_vocabularys_analyzer_finds_morphemes(models, split, kiwi,
                                                                                             tmp_path):
  """create_pretraining_data --word_boundaries=morpheme with the Kiwi vocabulary: a piece starts a word after a
  space or where Kiwi finds a morpheme start (the offsets checked here from the pieces' own text), every masked
  morpheme is masked whole, and eojeols are split (masked in part, as words no longer are eojeols). A vocabulary
  learned without an analyzer is refused before any work."""
  tokenizer = SentencePieceTokenizer(models["kiwi"].model_file)
  maker = InstanceMaker(tokenizer, InstanceOptions(word_boundaries="morpheme"), seed=1, analyzer=kiwi)
  lines = split[1][:50]
  checked = 0
  for line, tokens in zip(lines, maker.tokenize(lines)):
    ids = [token if token >= 0 else ~token for token in tokens]
    if tokenizer.unk_id in ids:  # the pieces do not spell the text
      continue
    checked += 1
    pieces = tokenizer.convert_ids_to_tokens(ids)
    text = "".join(pieces).replace("\u2581", " ").lstrip(" ")
    starts = set(kiwi.morpheme_starts(text))
    offset = 0
    for piece, token in zip(pieces, tokens):
      surface = piece.lstrip("\u2581")
      offset += len(piece) - len(surface) - (offset == 0 and piece.startswith("\u2581"))
      assert (token < 0) == (not piece.startswith("\u2581") and offset in starts), (line, piece, offset)
      offset += len(surface)
  assert checked > 30

  corpus = tmp_path / "corpus.txt"
  corpus.write_text("\n".join(split[1][:300]) + "\n", encoding="utf-8")
  output = tmp_path / "morphemes.tfrecord"
  flags = [f"--input_file={corpus}", f"--output_file={output}", "--max_seq_length=64", "--max_predictions_per_seq=10",
           "--dupe_factor=3", "--num_workers=1", "--word_boundaries=morpheme"]
  refused = run_tool("create_pretraining_data", *flags, f"--spm_model_file={models['plain'].model_file}")
  assert refused.returncode == 2 and "--pretokenizer" in refused.stderr.splitlines()[-1] and not output.exists()
  result = run_tool("create_pretraining_data", *flags, f"--spm_model_file={models['kiwi'].model_file}")
  assert result.returncode == 0, result.stderr
  morphemes, eojeols = (masking_statistics.MaskedSpans(tokenizer.cls_id, tokenizer.sep_id) for _ in range(2))
  eojeol_starts = masking_statistics.eojeol_start_table(tokenizer.sp_model)
  for raw in tf.data.TFRecordDataset(str(output)).batch(256):
    batch = tf.io.parse_example(raw, {
        "input_ids": tf.io.FixedLenFeature([64], tf.int64), "input_mask": tf.io.FixedLenFeature([64], tf.int64),
        "token_boundary": tf.io.FixedLenFeature([64], tf.int64),
        "masked_lm_positions": tf.io.FixedLenFeature([10], tf.int64),
        "masked_lm_ids": tf.io.FixedLenFeature([10], tf.int64),
        "masked_lm_weights": tf.io.FixedLenFeature([10], tf.float32),
        "word_boundaries": tf.io.FixedLenFeature([1], tf.int64)})
    batch = {name: value.numpy() for name, value in batch.items()}
    assert (batch["word_boundaries"] == 2).all()
    ids = masking_statistics.original_ids(batch["input_ids"], batch["masked_lm_positions"], batch["masked_lm_ids"],
                                          batch["masked_lm_weights"])
    masked = masking_statistics.masked_positions(batch["masked_lm_positions"], batch["masked_lm_weights"], 64)
    lengths = batch["input_mask"].sum(axis=1)
    morphemes.add(ids, lengths, masked, batch["token_boundary"])
    eojeols.add(ids, lengths, masked, eojeol_starts[ids])
  assert morphemes.units_touched > 500 and morphemes.whole_share == 1.0
  assert eojeols.whole_share < 0.9
