import os

import pytest

from albert_tf.text.sentencepiece_training import train_sentencepiece
from albert_tf.text.tokenizer import SentencePieceTokenizer, preprocess_text, strip_accents
from tests.conftest import SHARED, SP8K_MODEL, requires_shared

pytestmark = requires_shared(SP8K_MODEL)


@pytest.mark.parametrize("text", [
    "대한민국의 주권은 국민에게 있고, 모든 권력은 국민으로부터 나온다.",  # Hangul (NFKD turns it into jamo)
    "がぎぐげご パピプペポ ジャパン",  # kana with (han)dakuten
    "क्या आप हिंदी बोलते हैं?",  # Devanagari virama and vowel signs
    "ไม่ใช่ภาษาไทย",  # Thai tone marks
    "مرحبا إيثار",  # Arabic hamza below
])
def test_accent_stripping_keeps_non_latin_scripts_whole(text):
  assert strip_accents(text) == text
  assert preprocess_text(text, do_lower_case=True) == " ".join(text.split()).lower()


def test_accent_stripping_removes_latin_diacritics_like_google():
  assert preprocess_text("Café  Naïve\tRÉSUMÉ ``quoted''") == 'cafe naive resume "quoted"'
  assert preprocess_text("Café", keep_accents=True, do_lower_case=False) == "Café"


@pytest.mark.parametrize("corpus", ["ko_law.txt", "ko_libreoffice_help.txt"])
def test_korean_reaches_sentencepiece_unchanged(corpus):
  """Preprocessing (accent stripping, lower-casing) leaves Korean exactly as raw SentencePiece reads it."""
  tokenizer = SentencePieceTokenizer(SP8K_MODEL, do_lower_case=True)
  with open(os.path.join(SHARED, "corpus", corpus), encoding="utf-8") as reader:
    lines = [line.strip() for line, _ in zip(reader, range(300)) if line.strip()]
  korean = [line for line in lines if any("\uac00" <= char <= "\ud7a3" for char in line)]
  assert len(korean) > 100
  for line in korean:
    assert tokenizer.encode(line) == tokenizer.sp_model.EncodeAsIds(" ".join(line.split()).lower()), line


def test_special_tokens_in_text_are_recognised_even_glued_to_korean():
  tokenizer = SentencePieceTokenizer(SP8K_MODEL)
  pieces = tokenizer.tokenize("대한민국의 수도는[MASK]이다.")
  assert pieces.count("[MASK]") == 1
  assert tokenizer.encode("[CLS] 수도는[MASK]이다 [SEP]")[0] == tokenizer.cls_id == 2
  assert tokenizer.mask_id == 4 and tokenizer.sep_id == 3 and tokenizer.pad_id == 0
  assert tokenizer.mask_id in tokenizer.encode("The capital is [MASK].")


def test_special_tokens_in_text_can_stay_plain_text():
  # Pretraining data encodes them as text, as Google's tool does: one SentencePiece call over the whole line.
  tokenizer = SentencePieceTokenizer(SP8K_MODEL, do_lower_case=False)
  text = "x[MASK]y and [CLS] z"
  assert tokenizer.tokenize(text, special_tokens_in_text=False) == tokenizer.sp_model.EncodeAsPieces(text)
  assert tokenizer.encode(text, special_tokens_in_text=False) == tokenizer.sp_model.EncodeAsIds(text)
  assert tokenizer.mask_id not in tokenizer.encode(text, special_tokens_in_text=False)


def test_google_digit_comma_rule():
  tokenizer = SentencePieceTokenizer(SP8K_MODEL, do_lower_case=False)
  assert "\u25811," in [tokenizer.sp_model.IdToPiece(i) for i in range(tokenizer.vocab_size)]
  pieces = tokenizer.tokenize("1, 2 and 1,000")
  assert "\u25811," not in pieces and pieces[:2] == ["\u25811", ","]


def test_offsets_give_the_ids_of_encode_and_where_each_piece_begins():
  """`encode_with_offsets` (the morpheme rule of --word_boundaries reads it): the ids of `encode`, on lines with
  Hangul, accents, a digit-comma split, unknown characters and runs of spaces; each offset is where the piece's
  characters begin in the preprocessed text, after its "▁"."""
  tokenizer = SentencePieceTokenizer(SP8K_MODEL)
  lines = ["학교에서  공부했다. 3,000원!", "Café 1,234.5, naïve ☃☃ 𝔘𝔫𝔦", "", "  (주)대한  "]
  lines += open(os.path.join(SHARED, "corpus", "ko_law.txt"), encoding="utf-8").read().splitlines()[:200]
  for line in lines:
    text, ids, offsets = tokenizer.encode_with_offsets(line)
    assert ids == tokenizer.encode(line, special_tokens_in_text=False), line
    unknown = False
    for piece, token, offset in zip(tokenizer.convert_ids_to_tokens(ids), ids, offsets):
      surface = piece.lstrip("\u2581")
      unknown |= token == tokenizer.unk_id
      if surface and not unknown:  # past an unknown character the pieces no longer spell the text
        assert text[offset:offset + len(surface)] == surface, (line, piece, offset)


def test_google_digit_comma_rule_inside_a_word(tmp_path):
  """A digit-comma piece without the word-start mark: Google re-encodes its digits and drops the mark that
  re-encoding adds, so no "▁" appears inside the word."""
  corpus = tmp_path / "numbers.txt"
  corpus.write_text("".join(f"item {i} costs {i * 7} and 21 or 7 more, said x{i}\n" for i in range(300)))
  symbols = ["8,", "21,", "49,", "305,"]  # user-defined: whole pieces wherever they occur, inside words too
  model = train_sentencepiece(str(corpus), str(tmp_path / "numbers"), vocab_size=120, character_coverage=1.0,
                              user_defined_symbols=symbols)
  tokenizer = SentencePieceTokenizer(model, do_lower_case=False)
  lone_marks = set()
  for symbol in symbols:
    lone_marks.add(tokenizer.sp_model.EncodeAsPieces(symbol[:-1])[0] == "\u2581")
    for text in (f"x{symbol}", symbol):
      pieces = tokenizer.tokenize(text)
      assert all(pieces) and "".join(pieces) == "\u2581" + text, (text, pieces)
      assert pieces[-1] == "," and symbol not in pieces, (text, pieces)
  assert lone_marks == {True, False}  # both of Google's cases: a lone "▁" first, and "▁" glued to a digit


def test_default_options_are_googles_lower_case_without_accents():
  tokenizer = SentencePieceTokenizer(SP8K_MODEL)
  assert tokenizer.encode("Café NAÏVE") == tokenizer.sp_model.EncodeAsIds("cafe naive")
  assert tokenizer.spm_model_file == SP8K_MODEL


def test_bad_models_are_reported(tmp_path):
  with pytest.raises(FileNotFoundError, match="missing.model"):
    SentencePieceTokenizer(str(tmp_path / "missing.model"))
  botchan = os.path.join(SHARED, "corpus", "botchan_en_unigram_1000.model")
  with pytest.raises(ValueError, match=r"has no \[CLS\], \[SEP\], \[MASK\]"):
    SentencePieceTokenizer(botchan)
  junk = tmp_path / "junk.model"
  junk.write_bytes(b"not a model")
  with pytest.raises(ValueError, match="is not a SentencePiece model"):
    SentencePieceTokenizer(str(junk))
