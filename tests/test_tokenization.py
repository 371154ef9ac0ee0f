import os

import pytest

from albert_tf.tokenization import SentencePieceTokenizer, preprocess_text, strip_accents
from conftest import SHARED, SP8K_MODEL, requires_shared

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


def test_google_digit_comma_rule():
  tokenizer = SentencePieceTokenizer(SP8K_MODEL, do_lower_case=False)
  assert "\u25811," in [tokenizer.sp_model.IdToPiece(i) for i in range(tokenizer.vocab_size)]
  pieces = tokenizer.tokenize("1, 2 and 1,000")
  assert "\u25811," not in pieces and pieces[:2] == ["\u25811", ","]


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
