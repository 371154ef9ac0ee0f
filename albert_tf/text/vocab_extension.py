"""Extending a SentencePiece vocabulary: new pieces after the old ones, and the old text segmented as before.

A released model's vocabulary turns a script it never saw into `<unk>`. The merged model keeps every old piece
with its id and score and appends pieces for the new text, learned from a corpus or listed in a file, so
that the model's embedding rows stay where they are and only new rows are added.

Why text the old model covers keeps its ids, whatever the new pieces' scores: a piece is added only if it
holds a character that no old piece holds. Text the old model encodes without `<unk>` is a concatenation of
old pieces, so it holds only their characters, and no new piece matches anywhere in it: its unigram lattice
(or its BPE merges) is the old one. The only other thing new scores touch is the score of the unknown-character
nodes (the lowest piece score minus 10), which can only fall, and no such node is on the old best path. The
pieces a corpus model learns that the old model lacks but could spell with its own characters (an English
word in the Korean corpus) are therefore left out: such a piece could only ever be used by segmenting old
text differently. `SegmentationChange` measures the promise on the user's text.

Scores. Unigram: the new pieces keep the corpus model's scores, the log-probabilities of their use in the new
text, so new text is segmented as the corpus model segments it. BPE: merges are applied by score, and the new
ones come after every old one, in the corpus model's order. Listed words (unigram only) enter as the pieces
running text produces: `▁word` after a space, `word` glued to what comes before (a particle or ending after
a stem: 법률+을, 공포+하였다), and each of its characters the old model lacks, so that no other form built
from them is `<unk>`; all with the lowest old score, so that the fewest, longest pieces win.
"""

import dataclasses
import os
from typing import Dict, FrozenSet, List, Optional, Sequence, Union

import sentencepiece as spm
from sentencepiece import sentencepiece_model_pb2

from albert_tf import files
from albert_tf.errors import DataError, OptionError
from albert_tf.text import tokenizer_options as options_lib
from albert_tf.text import sentencepiece_training
from albert_tf.text.tokenizer import (SPECIAL_TOKENS, SentencePieceTokenizer, google_segmentation_model,
                                      preprocess_text, read_model_proto)

ModelProto = sentencepiece_model_pb2.ModelProto
_NORMAL = ModelProto.SentencePiece.NORMAL
# Pieces whose characters text can be made of: the others (control symbols, <unk>, bytes) match no text.
_TEXT_PIECE_TYPES = (_NORMAL, ModelProto.SentencePiece.USER_DEFINED)
_WORD_START = "\u2581"
_MAX_LISTED_PROBLEMS = 10


@dataclasses.dataclass(frozen=True)
class NewPiece:
  """A piece to append, with its score in the merged model."""

  piece: str
  score: float


@dataclasses.dataclass
class NewPieces:
  """The pieces to append, most useful first, and what the user should know about how they were chosen."""

  pieces: List[NewPiece]
  notes: List[str] = dataclasses.field(default_factory=list)


def model_type_name(proto: ModelProto) -> str:
  """`unigram`, `bpe`, `word` or `char`, as `train_sentencepiece` names them."""
  return sentencepiece_model_pb2.TrainerSpec.ModelType.Name(proto.trainer_spec.model_type).lower()


def old_characters(proto: ModelProto) -> FrozenSet[str]:
  """Every character of the model's text pieces: all the characters of the text it encodes without `<unk>`."""
  return frozenset(char for piece in proto.pieces if piece.type in _TEXT_PIECE_TYPES for char in piece.piece)


def _lowest_score(proto: ModelProto) -> float:
  return min(piece.score for piece in proto.pieces if piece.type == _NORMAL)


def learn_pieces(old_proto: ModelProto, input_patterns: Union[str, Sequence[str]], num_new_pieces: int,
                 options: options_lib.TokenizerOptions, character_coverage: float = 0.9995,
                 input_sentence_size: int = 10_000_000, num_threads: Optional[int] = None) -> NewPieces:
  """The pieces a model of `old_proto`'s type and normalisation learns from a corpus, that the old one lacks.

  The corpus model has `num_new_pieces` pieces besides its special tokens (fewer if the corpus cannot support
  so many): the vocabulary a model of that corpus alone would have. Of its pieces, those holding a character
  no old piece holds are added (see the module docstring), most useful first: the characters (without them
  the new text has `<unk>`), then the longer pieces, each group by the corpus model's score (unigram: the
  log-probability of the piece's use in the corpus; BPE: its merge order, which also puts every merge's
  parts before it).

  Raises:
    OptionError: `num_new_pieces` below 1; or as `train_sentencepiece`.
    InputFileError, DataError: as `train_sentencepiece` (missing files, no text, not UTF-8).
  """
  if num_new_pieces < 1:
    raise OptionError(f"--num_new_pieces must be at least 1, not {num_new_pieces}.")
  model_type = model_type_name(old_proto)
  with files.local_temp_folder(prefix="extend_vocab.") as folder:
    try:
      corpus_model = sentencepiece_training.train_sentencepiece(
          input_patterns, os.path.join(folder, "corpus"), vocab_size=num_new_pieces + len(SPECIAL_TOKENS),
          character_coverage=character_coverage, model_type=model_type, do_lower_case=options.do_lower_case,
          keep_accents=options.keep_accents, input_sentence_size=input_sentence_size, num_threads=num_threads,
          normalizer_spec=old_proto.normalizer_spec, hard_vocab_limit=False)
    except sentencepiece_training.VocabularyTooSmallError as error:
      needed = (f" at least {error.pieces_needed - len(SPECIAL_TOKENS):,}" if error.pieces_needed else "")
      raise OptionError(f"--num_new_pieces={num_new_pieces} is too few for the characters that --character_coverage="
                        f"{character_coverage} keeps from the corpus: use{needed or ' more'}, or a smaller "
                        "--character_coverage.") from None
    learned = [piece for piece in read_model_proto(corpus_model).pieces if piece.type == _NORMAL]
  old_pieces = {piece.piece for piece in old_proto.pieces}
  characters = old_characters(old_proto)
  in_old = sum(piece.piece in old_pieces for piece in learned)
  new = [piece for piece in learned if piece.piece not in old_pieces and not set(piece.piece) <= characters]
  if not new:
    raise DataError(f"The corpus has no character the old model lacks: the {len(learned):,} pieces learned from it "
                    "are in the old vocabulary or spelled with its characters. Nothing was written.")
  new.sort(key=lambda piece: (len(piece.piece) > 1, -piece.score))
  shift = _lowest_score(old_proto) - max(piece.score for piece in new) - 1.0 if model_type == "bpe" else 0.0
  notes = [f"The corpus model learned {len(learned):,} pieces: {in_old:,} are in the old vocabulary, "
           f"{len(learned) - in_old - len(new):,} are spelled with the old pieces' characters only (left out: they "
           f"would re-segment text the old model covers), {len(new):,} are added."]
  return NewPieces([NewPiece(piece.piece, piece.score + shift) for piece in new], notes)


def listed_pieces(old_proto: ModelProto, new_pieces_file: str, options: options_lib.TokenizerOptions) -> NewPieces:
  """The pieces for the words (or pieces) of a file, one a line, in the forms running text produces.

  A line is a word, prepared as the tokenizer prepares text (`options`, then the model's normalisation); it
  adds `▁word`, `word` and its characters the old model lacks. A line holding `▁` is one piece, added as
  written with its new characters. Blank lines are skipped; a piece already added is not added again.

  Raises:
    OptionError: the old model is not a unigram model.
    InputFileError: the file cannot be read.
    DataError: the file is not UTF-8 (naming the line), has no words, or lines that are more than one word,
      already a piece of the old model, or spelled with the old pieces' characters only (each named).
  """
  if model_type_name(old_proto) != "unigram":
    raise OptionError(f"--new_pieces_file needs a unigram model, not {model_type_name(old_proto)}: a BPE model "
                      "reaches a piece only by merging pieces it has. Learn the pieces from a corpus "
                      "(--input_file) instead.")
  normalizer = sentencepiece_training.rules_normalizer(old_proto.normalizer_spec)
  old_ids = {piece.piece: piece_id for piece_id, piece in enumerate(old_proto.pieces)}
  characters = old_characters(old_proto)
  added: Dict[str, None] = {}  # insertion-ordered set
  problems = []
  for number, line in files.read_utf8_lines(new_pieces_file):
    parts = [normalizer.Normalize(preprocess_text(part, options.do_lower_case, options.keep_accents))
             for part in line.strip().split(_WORD_START)]
    text = _WORD_START.join(parts)
    if not text:
      continue
    is_piece = len(parts) > 1
    piece = text if is_piece else _WORD_START + text
    if len(text.split()) > 1:
      problems.append(f"line {number}: {line.strip()!r} is more than one word")
    elif piece in old_ids:
      problems.append(f"line {number}: {piece} is already a piece of the old model (id {old_ids[piece]})")
    elif set(piece) <= characters:
      problems.append(f"line {number}: {piece} is spelled with the old pieces' characters only; a new piece for "
                      "it would re-segment text the old model covers")
    else:
      forms = [piece] if is_piece else [piece, text]
      for form in forms + [char for char in text if char not in characters]:
        if form not in old_ids:
          added[form] = None
  if problems:
    more = len(problems) - _MAX_LISTED_PROBLEMS
    raise DataError(f"{new_pieces_file}: " + "; ".join(problems[:_MAX_LISTED_PROBLEMS])
                    + (f"; and {more} more" if more > 0 else "") + ". Nothing was written.")
  if not added:
    raise DataError(f"{new_pieces_file} holds no words or pieces: every line is blank. Nothing was written.")
  score = _lowest_score(old_proto)
  return NewPieces([NewPiece(piece, score) for piece in added],
                   [f"{new_pieces_file}: {len(added):,} pieces for its words, their attached forms and new "
                    "characters."])


def merged_model(old_proto: ModelProto, new_pieces: Sequence[NewPiece]) -> ModelProto:
  """`old_proto` with `new_pieces` appended as normal pieces (ids from the old size on)."""
  merged = ModelProto()
  merged.CopyFrom(old_proto)
  for new_piece in new_pieces:
    merged.pieces.add(piece=new_piece.piece, score=new_piece.score, type=_NORMAL)
  merged.trainer_spec.vocab_size = len(merged.pieces)
  return merged


def write_model(proto: ModelProto, model_prefix: str, options: options_lib.TokenizerOptions) -> str:
  """Writes `<model_prefix>.model`, `.vocab` (a piece and its score a line, as SentencePiece writes it) and the
  tokenizer options record; the `.model` last, so that once it is there the others are too. Returns its path."""
  files.write_atomically(model_prefix + ".vocab",
                         "".join(f"{piece.piece}\t{piece.score:g}\n" for piece in proto.pieces))
  options_lib.write_options(model_prefix + ".model", options)
  return files.write_atomically(model_prefix + ".model", proto.SerializeToString())


def old_segmentations(spm_model_file: str, pieces: Sequence[str]) -> List[List[int]]:
  """The old model's ids for the text of each piece, as that text is segmented inside running text.

  A piece is already prepared text, and `▁` is where a space stood: `▁법률` is segmented as a word after a
  space, `을` as text glued to what comes before (no word-start is added), with Google's digit-comma rule.
  A bare `▁` piece in the result is left out: it stands for the space, not for the piece's text (the old
  model splits every word of an unknown script into `▁` and `<unk>`), so it says nothing of what the piece
  means. `▁` inside a piece with text (`▁wi`) is kept.
  """
  segmenter = google_segmentation_model(spm_model_file)
  segmenter.normalizer_spec.add_dummy_prefix = False
  segmenter.normalizer_spec.remove_extra_whitespaces = False
  sp_model = spm.SentencePieceProcessor(model_proto=segmenter.SerializeToString())
  word_start = sp_model.PieceToId(_WORD_START)
  return [[piece_id for piece_id in ids if piece_id != word_start]
          for ids in sp_model.EncodeAsIds([piece.replace(_WORD_START, " ") for piece in pieces])]


# --- measuring -------------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class TextMeasure:
  """How a tokenizer encodes some lines."""

  words: int
  pieces: int
  unknown: int

  @property
  def unknown_rate(self) -> float:
    return self.unknown / self.pieces if self.pieces else 0.0

  @property
  def pieces_per_word(self) -> float:
    return self.pieces / self.words if self.words else 0.0


@dataclasses.dataclass(frozen=True)
class SegmentationChange:
  """Lines whose ids differ between the old and the merged model: among those the old model covers without
  `<unk>` (the promise: none), and among all."""

  lines: int
  covered_lines: int
  changed_covered_lines: int
  changed_lines: int


@dataclasses.dataclass(frozen=True)
class TextComparison:
  """One text file encoded by the old and the merged model."""

  path: str
  before: TextMeasure
  after: TextMeasure
  change: SegmentationChange


def read_text_lines(path: str) -> List[str]:
  """The non-blank lines of a UTF-8 text file."""
  return [line.strip() for _, line in files.read_utf8_lines(path) if line.strip()]


def measure_text(tokenizer: SentencePieceTokenizer, encoded: Sequence[Sequence[int]],
                 lines: Sequence[str]) -> TextMeasure:
  """`<unk>` count and pieces of `encoded` (the tokenizer's ids of `lines`), and the lines' words."""
  return TextMeasure(words=sum(len(line.split()) for line in lines), pieces=sum(len(ids) for ids in encoded),
                     unknown=sum(ids.count(tokenizer.unk_id) for ids in encoded))


def compare_on_text(old: SentencePieceTokenizer, merged: SentencePieceTokenizer, path: str) -> TextComparison:
  """The old and the merged model on a text file's non-blank lines."""
  lines = read_text_lines(path)
  old_ids = [old.encode(line) for line in lines]
  new_ids = [merged.encode(line) for line in lines]
  covered = [old.unk_id not in ids for ids in old_ids]
  changed = [before != after for before, after in zip(old_ids, new_ids)]
  change = SegmentationChange(lines=len(lines), covered_lines=sum(covered),
                              changed_covered_lines=sum(c and d for c, d in zip(covered, changed)),
                              changed_lines=sum(changed))
  return TextComparison(path, measure_text(old, old_ids, lines), measure_text(merged, new_ids, lines), change)


def comparison_lines(comparisons: Sequence[TextComparison]) -> List[str]:
  """A table of `<unk>` rate and pieces per word before and after, then the lines whose ids changed."""
  names = [f"{os.path.basename(comparison.path)} ({comparison.change.lines:,} lines)" for comparison in comparisons]
  width = max(len(name) for name in names)
  lines = [f"  {'--parity_text':<{width}}  <unk> rate, old → merged   pieces per word, old → merged"]
  for name, comparison in zip(names, comparisons):
    before, after = comparison.before, comparison.after
    lines.append(f"  {name:<{width}}  {100 * before.unknown_rate:6.2f}% → {100 * after.unknown_rate:6.2f}%"
                 f"        {before.pieces_per_word:5.2f} → {after.pieces_per_word:5.2f}")
  lines.append("Lines whose ids changed, among those the old model covers without <unk> | among all:")
  for comparison in comparisons:
    change = comparison.change
    lines.append(f"  {os.path.basename(comparison.path)}: {change.changed_covered_lines:,} of {change.covered_lines:,} "
                 f"({_percent(change.changed_covered_lines, change.covered_lines)}) | {change.changed_lines:,} of "
                 f"{change.lines:,} ({_percent(change.changed_lines, change.lines)})")
  return lines


def _percent(part: int, whole: int) -> str:
  return f"{100 * part / whole:.3f}%" if whole else "-"
