"""SentencePiece tokenization with Google's ALBERT text preprocessing, safe for non-Latin scripts.

Preprocessing follows Google's `tokenization.preprocess_text` (whitespace collapsed, accents stripped,
optional lower-casing), and pieces follow Google's `encode_pieces` (a piece ending in "<digit>," is split
before the comma).

Two deliberate differences:
- Google strips accents by deleting every combining character after NFKD, which destroys Japanese dakuten
  (が→か), Hindi viramas (क्या→कया) and Thai tone marks (ไม่→ไม), and leaves Hangul as jamo. Here only the
  Unicode blocks of diacritical marks are deleted and the text is recomposed (NFC), so Latin accents go
  (é→e) while Korean, Japanese, Devanagari and Thai come through intact.
- `` and '' become ", as in Hugging Face's `AlbertTokenizer` (and XLNet's preprocessing); Google's ALBERT keeps
  them. Exported tokenizer files then give our ids in transformers.
"""

import re
import unicodedata
from typing import List, Optional, Tuple

import sentencepiece as spm
from sentencepiece import sentencepiece_model_pb2

from albert_tf import files
from albert_tf.errors import DataError

SPECIAL_TOKENS = ("<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]")
# Control symbols written in text (e.g. "수도는[MASK]이다") are recognised as their ids, not split.
_SPECIAL_IN_TEXT = re.compile(r"(\[CLS\]|\[SEP\]|\[MASK\])")
_WORD_START = "\u2581"
# Combining diacritical marks (U+0300-036F and its extensions): the "accents" that stripping removes.
DIACRITICAL_MARKS = "[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]"
_DIACRITICAL_MARKS = re.compile(DIACRITICAL_MARKS)


def ends_in_digit_comma(piece: str) -> bool:
  """Google's `encode_pieces` splits a piece ending in "<digit>," (e.g. "▁3,") before the comma."""
  return len(piece) > 1 and piece[-1] == "," and piece[-2].isdigit()


def read_model_proto(spm_model_file: str) -> sentencepiece_model_pb2.ModelProto:
  """The protobuf of a SentencePiece `.model` file (local or gs://): its pieces and scores, trainer and normaliser
  specs."""
  proto = sentencepiece_model_pb2.ModelProto()
  proto.ParseFromString(files.read_bytes(spm_model_file))
  return proto


def google_segmentation_model(spm_model_file: str) -> sentencepiece_model_pb2.ModelProto:
  """The SentencePiece model with every "<digit>," piece priced out of the unigram lattice.

  Plain Viterbi segmentation with it gives what Google's `encode_pieces` gives with the original model,
  so tokenizers that cannot post-process pieces (Hugging Face's `tokenizers`, the in-graph op of an
  exported SavedModel) still match `SentencePieceTokenizer`.
  """
  proto = read_model_proto(spm_model_file)
  for piece in proto.pieces:
    if ends_in_digit_comma(piece.piece):
      piece.score -= 100.0
  return proto


def strip_accents(text: str) -> str:
  """Removes diacritical marks (café→cafe) and keeps every other script whole (NFKD, drop, NFC)."""
  return unicodedata.normalize("NFC", _DIACRITICAL_MARKS.sub("", unicodedata.normalize("NFKD", text)))


def preprocess_text(text: str, do_lower_case: bool = True, keep_accents: bool = False) -> str:
  """Google's `preprocess_text` (collapse whitespace, strip accents, lower-case), with Hugging Face's quotes."""
  text = " ".join(text.strip().split())
  text = text.replace("``", '"').replace("''", '"')
  if not keep_accents:
    text = strip_accents(text)
  if do_lower_case:
    text = text.lower()
  return text


class SentencePieceTokenizer:
  """Text to ALBERT ids with a SentencePiece model whose ids 0-4 are `<pad> <unk> [CLS] [SEP] [MASK]`.

  Args:
    spm_model_file: the SentencePiece `.model` file, local or gs:// (its name in messages when `model_proto` is
      given).
    do_lower_case: lower-case before encoding (Google's flag; default True as in Google's tools).
    keep_accents: keep diacritical marks (Hugging Face's `keep_accents`); Google always strips them.
    model_proto: the model file's bytes, when they were read elsewhere (a worker of a distributed pipeline that
      cannot see the file).
  """

  def __init__(self, spm_model_file: str, do_lower_case: bool = True, keep_accents: bool = False,
               model_proto: Optional[bytes] = None):
    if model_proto is None:
      # Read here, not by SentencePiece: its loader knows local files only.
      model_proto = files.read_bytes(files.require_file(spm_model_file, "SentencePiece model"))
    self.spm_model_file = spm_model_file
    self.do_lower_case = do_lower_case
    self.keep_accents = keep_accents
    self.sp_model = spm.SentencePieceProcessor()
    try:
      self.sp_model.LoadFromSerializedProto(model_proto)
    except (OSError, RuntimeError) as error:
      raise DataError(f"{spm_model_file} is not a SentencePiece model: {error}") from None
    missing = [token for token in ("[CLS]", "[SEP]", "[MASK]") if self.sp_model.PieceToId(token) ==
               self.sp_model.unk_id()]
    if missing:
      raise DataError(f"SentencePiece model {spm_model_file} has no {', '.join(missing)} piece(s); train it "
                       "with tools/train_sentencepiece.py (control symbols [CLS],[SEP],[MASK]).")
    self.pad_id = self.sp_model.pad_id() if self.sp_model.pad_id() >= 0 else 0
    self.unk_id = self.sp_model.unk_id()
    self.cls_id = self.sp_model.PieceToId("[CLS]")
    self.sep_id = self.sp_model.PieceToId("[SEP]")
    self.mask_id = self.sp_model.PieceToId("[MASK]")
    # Pieces Google's encode_pieces splits before the comma; lines without them take the fast id path.
    self._digit_comma_ids = {i for i in range(self.vocab_size) if ends_in_digit_comma(self.sp_model.IdToPiece(i))}

  @property
  def vocab_size(self) -> int:
    return self.sp_model.GetPieceSize()

  def _google_pieces(self, piece: str) -> List[str]:
    """`piece` as Google's `encode_pieces` leaves it: "3.0," is encoded as pieces of "3.0" followed by ","."""
    if not ends_in_digit_comma(piece):
      return [piece]
    split = self.sp_model.EncodeAsPieces(piece[:-1].replace(_WORD_START, ""))
    if piece[0] != _WORD_START and split and split[0].startswith(_WORD_START):
      split = split[1:] if len(split[0]) == 1 else [split[0][1:]] + split[1:]
    return split + [piece[-1]]

  def _encode_pieces(self, text: str) -> List[str]:
    return [split for piece in self.sp_model.EncodeAsPieces(text) for split in self._google_pieces(piece)]

  def encode_with_offsets(self, text: str) -> Tuple[str, List[int], List[int]]:
    """`text` as SentencePiece sees it (preprocessed), its ids as `encode(text, special_tokens_in_text=False)`
    gives them, and the character offset in that text where each piece's characters begin, after its "▁" (-1 when
    a piece begins inside a character, as byte pieces do)."""
    text = preprocess_text(text, self.do_lower_case, self.keep_accents)
    encoded = text.encode("utf-8")
    char_of_byte, position = {len(encoded): len(text)}, 0  # SentencePiece's offsets count UTF-8 bytes
    for index, char in enumerate(text):
      char_of_byte[position] = index
      position += len(char.encode("utf-8"))
    ids, offsets = [], []
    for piece in self.sp_model.encode(text, out_type="proto").pieces:
      begin = piece.begin + (piece.piece.startswith(_WORD_START) and encoded[piece.begin:piece.begin + 1] == b" ")
      offset = char_of_byte.get(begin, -1)
      for split in self._google_pieces(piece.piece):
        ids.append(self.sp_model.PieceToId(split))
        offsets.append(offset)
        offset += len(split.lstrip(_WORD_START)) if offset >= 0 else 0
    return text, ids, offsets

  def tokenize(self, text: str, special_tokens_in_text: bool = True) -> List[str]:
    """Pieces of `text`.

    Args:
      text: the text.
      special_tokens_in_text: `[CLS]`, `[SEP]`, `[MASK]` written in the text become those pieces (as in
        Hugging Face's tokenizer). Pretraining data turns this off: Google's tool encodes them as text.
    """
    pieces = []
    for chunk in _SPECIAL_IN_TEXT.split(text) if special_tokens_in_text else [text]:
      if special_tokens_in_text and chunk in ("[CLS]", "[SEP]", "[MASK]"):
        pieces.append(chunk)
      else:
        chunk = preprocess_text(chunk, self.do_lower_case, self.keep_accents)
        if chunk:
          pieces.extend(self._encode_pieces(chunk))
    return pieces

  def convert_tokens_to_ids(self, pieces: List[str]) -> List[int]:
    return [self.sp_model.PieceToId(piece) for piece in pieces]

  def convert_ids_to_tokens(self, ids: List[int]) -> List[str]:
    return [self.sp_model.IdToPiece(int(i)) for i in ids]

  def encode(self, text: str, special_tokens_in_text: bool = True) -> List[int]:
    """Ids of `text` without `[CLS]`/`[SEP]` around it (see `tokenize`)."""
    if not special_tokens_in_text or not _SPECIAL_IN_TEXT.search(text):
      ids = self.sp_model.EncodeAsIds(preprocess_text(text, self.do_lower_case, self.keep_accents))
      if not self._digit_comma_ids.intersection(ids):
        return ids
    return self.convert_tokens_to_ids(self.tokenize(text, special_tokens_in_text))
