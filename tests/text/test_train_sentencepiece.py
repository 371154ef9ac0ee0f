import os

import pytest
import sentencepiece as spm

from albert_tf import files
from albert_tf.errors import OutputError
from albert_tf.text import tokenizer_options
from albert_tf.text.sentencepiece_training import train_sentencepiece
from albert_tf.text.tokenizer import SPECIAL_TOKENS, SentencePieceTokenizer, preprocess_text, read_model_proto
from tests.conftest import SHARED, requires_shared, run_tool

KO_LAW = os.path.join(SHARED, "corpus", "ko_law.txt")
EN_WIKI = os.path.join(SHARED, "corpus", "en_wiki.txt")
VOCAB_SIZE = 1000

pytestmark = requires_shared(KO_LAW)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
  """All of ko_law.txt and a slice of en_wiki.txt (capitals and accents): about 400 KB."""
  folder = tmp_path_factory.mktemp("corpus")
  with open(EN_WIKI, encoding="utf-8") as reader:
    (folder / "en_wiki_head.txt").write_text("".join(line for line, _ in zip(reader, range(2000))),
                                             encoding="utf-8")
  return [KO_LAW, str(folder / "en_wiki_*.txt")]


@pytest.fixture(scope="module")
def model_file(corpus, tmp_path_factory):
  prefix = str(tmp_path_factory.mktemp("model") / "spiece")
  return train_sentencepiece(corpus, prefix, vocab_size=VOCAB_SIZE, user_defined_symbols=["·"],
                             num_threads=2)


def pieces_of(path):
  sp_model = spm.SentencePieceProcessor(model_file=path)
  return [sp_model.IdToPiece(i) for i in range(sp_model.GetPieceSize())]


def write(path, data: bytes):
  path.write_bytes(data)
  return str(path)


def test_ids_0_to_4_are_googles_albert_layout(model_file):
  sp_model = spm.SentencePieceProcessor(model_file=model_file)
  assert sp_model.GetPieceSize() == VOCAB_SIZE
  assert tuple(pieces_of(model_file)[:6]) == SPECIAL_TOKENS + ("·",)
  assert (sp_model.pad_id(), sp_model.unk_id(), sp_model.bos_id(), sp_model.eos_id()) == (0, 1, -1, -1)
  assert all(sp_model.IsControl(i) for i in (2, 3, 4))
  with open(model_file[:-len(".model")] + ".vocab", encoding="utf-8") as reader:
    vocab_lines = reader.read().splitlines()
  assert [line.split("\t")[0] for line in vocab_lines] == pieces_of(model_file)


def test_korean_encodes_with_few_unk(model_file):
  """0.9995 coverage of a 130 KB corpus leaves out a few rare syllables (0.3% of characters here)."""
  tokenizer = SentencePieceTokenizer(model_file)
  assert (tokenizer.pad_id, tokenizer.cls_id, tokenizer.sep_id, tokenizer.mask_id) == (0, 2, 3, 4)
  with open(KO_LAW, encoding="utf-8") as reader:
    lines = [line for line in map(preprocess_text, reader) if line]
  ids = [tokenizer.encode(line) for line in lines]
  num_unknown = sum(line_ids.count(tokenizer.unk_id) for line_ids in ids)
  num_chars = sum(len(line.replace(" ", "")) for line in lines)
  assert num_unknown < 0.01 * num_chars
  round_trips = [tokenizer.sp_model.DecodeIds(line_ids) == line for line, line_ids in zip(lines, ids)]
  assert sum(round_trips) > 0.95 * len(lines)


def test_case_and_accent_options_shape_the_vocabulary(corpus, model_file, tmp_path):
  cased = train_sentencepiece(corpus, str(tmp_path / "cased"), vocab_size=VOCAB_SIZE, do_lower_case=False,
                              keep_accents=True, num_threads=2)
  lower_pieces = pieces_of(model_file)[len(SPECIAL_TOKENS):]
  cased_pieces = pieces_of(cased)[len(SPECIAL_TOKENS):]
  assert all(piece == piece.lower() for piece in lower_pieces)
  assert sum(piece != piece.lower() for piece in cased_pieces) > 20
  assert not any("é" in piece for piece in lower_pieces)
  assert any("é" in piece for piece in cased_pieces)


def test_failed_training_leaves_no_output(corpus, tmp_path):
  with pytest.raises(ValueError):
    train_sentencepiece(corpus, str(tmp_path / "spiece"), vocab_size=100_000, num_threads=2)
  assert os.listdir(tmp_path) == []


def test_failed_training_keeps_an_existing_model(model_file, tmp_path):
  prefix = tmp_path / "spiece"
  (tmp_path / "spiece.model").write_bytes(open(model_file, "rb").read())
  (tmp_path / "spiece.vocab").write_text("old vocab\n", encoding="utf-8")
  bad = write(tmp_path / "bad.txt", "좋은 줄\n".encode() * 500 + b"\xff\n")
  with pytest.raises(ValueError, match="line 501"):
    train_sentencepiece(bad, str(prefix), vocab_size=VOCAB_SIZE, num_threads=2, overwrite=True)
  assert (tmp_path / "spiece.model").read_bytes() == open(model_file, "rb").read()
  assert (tmp_path / "spiece.vocab").read_text(encoding="utf-8") == "old vocab\n"
  assert sorted(os.listdir(tmp_path)) == ["bad.txt", "spiece.model", "spiece.vocab"]


def test_missing_input_is_named(tmp_path):
  with pytest.raises(FileNotFoundError, match="nothing_here_"):
    train_sentencepiece([KO_LAW, str(tmp_path / "nothing_here_*.txt")], str(tmp_path / "spiece"))


def test_empty_corpus_is_named(tmp_path):
  blank = write(tmp_path / "blank.txt", b"\n  \n\t\n\n")
  with pytest.raises(ValueError, match=r"No text in .*blank\.txt"):
    train_sentencepiece(blank, str(tmp_path / "spiece"), vocab_size=VOCAB_SIZE)


def test_non_utf8_bytes_are_named_by_file_and_line(tmp_path):
  latin1 = write(tmp_path / "latin1.txt", "first line\n\nCafé au lait\n".encode("latin-1"))
  with pytest.raises(ValueError, match=r"latin1\.txt, line 3: not UTF-8"):
    train_sentencepiece([KO_LAW, latin1], str(tmp_path / "spiece"), vocab_size=VOCAB_SIZE)


def test_vocab_size_too_high_suggests_a_smaller_one(tmp_path):
  small = write(tmp_path / "small.txt", "대한민국은 민주공화국이다.\n".encode() * 20)
  with pytest.raises(ValueError, match=r"at most \d+ pieces.*smaller --vocab_size"):
    train_sentencepiece(small, str(tmp_path / "spiece"), vocab_size=VOCAB_SIZE)


def test_vocab_size_below_the_characters_suggests_a_larger_one(tmp_path):
  with pytest.raises(ValueError, match=r"\d+ pieces are needed.*larger --vocab_size"):
    train_sentencepiece(KO_LAW, str(tmp_path / "spiece"), vocab_size=100)


def test_vocab_size_must_leave_room_for_learned_pieces(tmp_path):
  with pytest.raises(ValueError, match="at least 6"):
    train_sentencepiece(KO_LAW, str(tmp_path / "spiece"), vocab_size=5)


def test_tool_trains_a_model(corpus, tmp_path):
  result = run_tool("train_sentencepiece", f"--input={','.join(corpus)}",
                    f"--model_prefix={tmp_path / 'out' / 'spiece'}", f"--vocab_size={VOCAB_SIZE}", "--num_threads=2")
  assert result.returncode == 0, result.stderr
  assert pieces_of(str(tmp_path / "out" / "spiece.model"))[:5] == list(SPECIAL_TOKENS)
  assert os.path.isfile(tmp_path / "out" / "spiece.vocab")


def test_tool_reports_missing_input_in_one_line(tmp_path):
  result = run_tool("train_sentencepiece", f"--input={tmp_path / 'missing.txt'}",
                    f"--model_prefix={tmp_path / 'spiece'}")
  assert result.returncode == 2
  assert result.stderr.strip().splitlines()[-1].startswith("error: No input file matches")
  assert "missing.txt" in result.stderr and "Traceback" not in result.stderr


def test_a_vocabulary_trained_into_a_bucket_is_read_from_there_whole_or_not_at_all(bucket, tmp_path, monkeypatch):
  with open(EN_WIKI, encoding="utf-8") as reader:
    files.write_atomically(f"{bucket}/corpus/en.txt", "".join(line for line, _ in zip(reader, range(300))))
  result = run_tool("train_sentencepiece", f"--input={bucket}/corpus/*.txt", f"--model_prefix={bucket}/vocab/sp",
                    "--vocab_size=200", "--num_threads=1", "--nodo_lower_case", cwd=tmp_path)
  assert result.returncode == 0, result.stderr
  assert os.listdir(tmp_path) == []  # nothing written to a local folder named after the bucket
  assert files.list_folder(f"{bucket}/vocab") == ["sp.model", "sp.tokenizer_options.json", "sp.vocab"]
  options = tokenizer_options.read_options(f"{bucket}/vocab/sp.model")
  tokenizer = SentencePieceTokenizer(f"{bucket}/vocab/sp.model", options.do_lower_case, options.keep_accents)
  assert (tokenizer.vocab_size, tokenizer.mask_id, options.do_lower_case) == (200, 4, False)
  assert len(read_model_proto(f"{bucket}/vocab/sp.model").pieces) == 200
  assert tokenizer.tokenize("The") != tokenizer.tokenize("the")

  # The .model's upload fails: the .vocab and options uploaded before it are removed again, and the folder made.
  write_atomically = files.write_atomically

  def failing_at_the_model(path, content):
    if path.startswith(bucket) and path.endswith(".model"):
      raise OutputError("bucket full")
    return write_atomically(path, content)

  monkeypatch.setattr(files, "write_atomically", failing_at_the_model)
  with pytest.raises(OutputError, match="bucket full"):
    train_sentencepiece(f"{bucket}/corpus/en.txt", f"{bucket}/other/sp", vocab_size=200, num_threads=1)
  assert not files.exists(f"{bucket}/other")
