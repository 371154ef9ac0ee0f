"""Token classification (named-entity recognition): tagged sentences read strictly, their tags aligned with
SentencePiece pieces, and predicted piece tags brought back to every unit.

A sentence is a list of units, each with an IOB2 tag: characters in KLUE-NER (spaces included, as their own
lines), words in CoNLL and TSV files. Three formats are read (`FORMATS`, see each reader):

- `klue-ner`: KLUE v1.1's NER files, `## <guid><tab><sentence with <entity:TYPE> markup>` then one
  `CHAR<tab>TAG` line per character;
- `conll`: CoNLL-2003's layout, whitespace-separated columns with the tag last;
- `tsv`: a user's `WORD<tab>TAG` lines.

Every reader is strict: a tag outside the label set, a line without a tag, an `I-X` that does not continue a
`B-X` or `I-X` (tags are IOB2: an IOB1 file, such as CoNLL-2003's original release, must be converted), an
empty or non-UTF-8 file is one `TaskError` naming the file and the 1-based line.

The alignment (`align_units`) tokenizes the sentence's text as `SentencePieceTokenizer.tokenize` does and
locates each piece in the text by SentencePiece's own surface offsets, so that `<unk>` pieces, pieces that
cover no character (the bare word-boundary piece "▁") and characters that preprocessing changes (accents,
upper case) are placed exactly. A piece takes the tag of the unit it starts and carries the loss; a piece that
starts no unit (the rest of a word, a bare "▁") is ignored (`IGNORE_LABEL`). Back from pieces, a unit that
starts a piece takes the piece's tag, a unit inside a piece its continuation (`continuation`), and a space its
entity's `I-` tag when the entity goes on after it, else O (KLUE tags the spaces inside an entity I-).

A sentence longer than the model's input is read in windows of `doc_stride` pieces' step (`windows`), each
piece predicted from the window where it has the most context, as Google's SQuAD features do; KLUE's baseline
truncates instead (`evaluated_units`).
"""

import dataclasses
import functools
import os
from typing import Iterator, List, Optional, Sequence, Tuple, TypeVar

from sentencepiece import sentencepiece_pb2

from albert_tf import files
from albert_tf.errors import DataError, OptionError, TaskError
from albert_tf.text.tokenizer import SentencePieceTokenizer, ends_in_digit_comma, preprocess_text

FORMATS = ("klue-ner", "conll", "tsv")
OUTSIDE = "O"
# The label of a piece the loss leaves out (Keras' and PyTorch's convention for token classification).
IGNORE_LABEL = -100
# KLUE-NER's tags in the KLUE baseline's order (its `label_list`), so that label ids match its checkpoints'.
KLUE_NER_LABELS = ("B-PS", "I-PS", "B-LC", "I-LC", "B-OG", "I-OG", "B-DT", "I-DT", "B-TI", "I-TI", "B-QT",
                   "I-QT", OUTSIDE)
_WORD_START = "\u2581"
_CONLL_DOCUMENT_START = "-DOCSTART-"

Value = TypeVar("Value")


@dataclasses.dataclass(frozen=True)
class TokenExample:
  """One tagged sentence, with what writing it back in its file's format needs.

  Attributes:
    guid: KLUE's sentence id; "<file name>-<line number of its first unit>" in CoNLL and TSV files.
    units: the characters (KLUE-NER, a space is a unit) or the words (CoNLL, TSV).
    labels: one IOB2 tag per unit.
    file_format: the format read, one of `FORMATS`.
    marked_sentence: KLUE-NER: the sentence of the `## <guid><tab>...` line, with its `<entity:TYPE>` markup.
    columns: CoNLL: per unit, the line's fields before the tag (the word first).
  """

  guid: str
  units: Tuple[str, ...]
  labels: Tuple[str, ...]
  file_format: str
  marked_sentence: Optional[str] = None
  columns: Optional[Tuple[Tuple[str, ...], ...]] = None

  @property
  def separator(self) -> str:
    """What joins the units into the sentence's text: nothing between KLUE's characters, a space between
    words."""
    return "" if self.file_format == "klue-ner" else " "

  @property
  def text(self) -> str:
    """The sentence's text, what the model reads."""
    return self.separator.join(self.units)


def continuation(tag: str) -> str:
  """The tag of a unit that continues a unit tagged `tag` in the same piece: I-X inside an entity, else O."""
  return OUTSIDE if tag == OUTSIDE else f"I-{tag[2:]}"


def _check_tag(tag: str, previous: Optional[str], label_list: Optional[Sequence[str]], where: str) -> None:
  """Raises `TaskError` for a tag outside `label_list`, not IOB2, or an I- that does not follow its entity."""
  if label_list is not None and tag not in label_list:
    raise TaskError(f"{where}: tag {tag!r} is not one of the labels {', '.join(label_list)}.")
  if tag != OUTSIDE and (tag[:2] not in ("B-", "I-") or len(tag) == 2):
    raise TaskError(f"{where}: tag {tag!r} is not an IOB2 tag (O, B-<type> or I-<type>).")
  if tag.startswith("I-") and previous not in (f"B-{tag[2:]}", tag):
    after = f"after {previous}" if previous else "at the start of a sentence"
    raise TaskError(f"{where}: {tag} {after} continues no {tag[2:]} entity; tags must be IOB2, where every "
                    "entity starts with B- (convert an IOB1 file, such as CoNLL-2003's original release).")


def _lines(path: str) -> Iterator[Tuple[int, str]]:
  """(1-based line number, line without its line break) of a UTF-8 file; a bad file is a `TaskError`."""
  files.require_file(path, "NER data file")
  try:
    for line_number, line in files.read_utf8_lines(path):
      yield line_number, line.removesuffix("\n").removesuffix("\r")
  except DataError as error:
    raise TaskError(str(error)) from None


class _Sentences:
  """Collects the units of one file's sentences and checks their tags as they come."""

  def __init__(self, path: str, file_format: str, label_list: Optional[Sequence[str]]):
    self.path, self.file_format, self.label_list = path, file_format, label_list
    self.examples: List[TokenExample] = []
    self.units: List[str] = []
    self.labels: List[str] = []
    self.columns: List[Tuple[str, ...]] = []
    self.first_line = 0

  def add(self, line_number: int, unit: str, tag: str, columns: Tuple[str, ...] = ()) -> None:
    where = f"{self.path}, line {line_number}"
    _check_tag(tag, self.labels[-1] if self.labels else None, self.label_list, where)
    if not self.units:
      self.first_line = line_number
    self.units.append(unit)
    self.labels.append(tag)
    self.columns.append(columns)

  def end(self, guid: Optional[str] = None, marked_sentence: Optional[str] = None) -> None:
    """Ends the sentence being read, if any."""
    if not self.units:
      return
    guid = guid if guid is not None else f"{os.path.basename(self.path)}-{self.first_line}"
    columns = tuple(self.columns) if self.file_format == "conll" else None
    self.examples.append(TokenExample(guid, tuple(self.units), tuple(self.labels), self.file_format,
                                      marked_sentence, columns))
    self.units, self.labels, self.columns = [], [], []

  def read(self) -> List[TokenExample]:
    if not self.examples:
      raise TaskError(f"{self.path}: no sentences: the file is empty or holds only blank or comment lines.")
    return self.examples


def read_klue_ner(path: str, label_list: Optional[Sequence[str]] = KLUE_NER_LABELS) -> List[TokenExample]:
  """The sentences of a KLUE v1.1 NER file (`klue-ner-v1.1_train.tsv`, `klue-ner-v1.1_dev.tsv`).

  Sentences are separated by blank lines (a line holding only a tab counts as blank, as in KLUE's own reader).
  Each starts with its header `## <guid><tab><sentence with <entity:TYPE> markup>`, then holds one line per
  character, `CHAR<tab>TAG`, a space being the line `<space><tab>O` (I-X inside an entity). `##` lines before
  a header are comments (the file's description at its top). The header's markup is kept, not checked: the
  tags come from the character lines.

  Raises:
    InputFileError: no such file.
    TaskError: naming the file and line: not UTF-8, no sentences, a character line without a header before
      it, a header without a tab or a guid, a guid seen before, a `##` line among a sentence's characters, a
      line that is not one character, a tab and a tag, a tag outside `label_list` (None: any) or not IOB2.
  """
  sentences = _Sentences(path, "klue-ner", label_list)
  header, guid, marked_sentence = None, None, None
  guid_lines = {}
  for line_number, line in _lines(path):
    where = f"{path}, line {line_number}"
    if line in ("", "\t"):
      sentences.end(guid, marked_sentence)
      header = None
      continue
    if line.startswith("##"):
      if sentences.units:
        raise TaskError(f"{where}: a '##' line among a sentence's characters; sentences are separated by "
                        "blank lines.")
      header = (line_number, line)  # the last '##' line before the characters is the sentence's header
      continue
    if not sentences.units:
      if header is None:
        raise TaskError(f"{where}: a character line without a '## <guid>\\t<sentence>' header before it.")
      header_line, header_text = header
      guid, tab, marked_sentence = header_text[2:].partition("\t")
      guid = guid.strip()
      if not tab or not guid:
        raise TaskError(f"{path}, line {header_line}: a sentence's header must be '## <guid>\\t<sentence>', "
                        f"not {header_text!r}.")
      if guid in guid_lines:
        raise TaskError(f"{path}, line {header_line}: guid {guid!r} is also the guid of line "
                        f"{guid_lines[guid]}.")
      guid_lines[guid] = header_line
    fields = line.split("\t")
    if len(fields) != 2 or len(fields[0]) != 1:
      problem = "a character without a tag" if len(fields) == 1 else repr(line)
      raise TaskError(f"{where}: {problem}; KLUE-NER lines are CHAR<tab>TAG, one character each.")
    sentences.add(line_number, fields[0], fields[1])
  sentences.end(guid, marked_sentence)
  return sentences.read()


def read_conll(path: str, label_list: Optional[Sequence[str]] = None) -> List[TokenExample]:
  """The sentences of a CoNLL-2003-style file: one word a line, whitespace-separated columns with the word
  first and the IOB2 tag last (CoNLL-2003's `WORD POS CHUNK TAG`), blank lines between sentences;
  `-DOCSTART-` lines are skipped.

  Raises:
    InputFileError: no such file.
    TaskError: naming the file and line: not UTF-8, no sentences, a line of one column (a word without a
      tag), a tag outside `label_list` (None: any) or not IOB2.
  """
  sentences = _Sentences(path, "conll", label_list)
  for line_number, line in _lines(path):
    fields = line.split()
    if not fields or fields[0] == _CONLL_DOCUMENT_START:
      sentences.end()
      continue
    if len(fields) < 2:
      raise TaskError(f"{path}, line {line_number}: a word without a tag; CoNLL lines are "
                      "whitespace-separated columns, the word first and the tag last.")
    sentences.add(line_number, fields[0], fields[-1], tuple(fields[:-1]))
  sentences.end()
  return sentences.read()


def read_tsv(path: str, label_list: Optional[Sequence[str]] = None) -> List[TokenExample]:
  """The sentences of a user's TSV file: one word a line, `WORD<tab>TAG`, and blank (or whitespace-only)
  lines between sentences. Exactly one tab a line; whitespace around the word and the tag is dropped, and a
  word may hold spaces (its pieces are those of the text). No header, no comments.

  Raises:
    InputFileError: no such file.
    TaskError: naming the file and line: not UTF-8, no sentences, a line without a tab or with more than one,
      an empty word, a tag outside `label_list` (None: any) or not IOB2.
  """
  sentences = _Sentences(path, "tsv", label_list)
  for line_number, line in _lines(path):
    if not line.strip():
      sentences.end()
      continue
    where = f"{path}, line {line_number}"
    fields = line.split("\t")
    if len(fields) != 2:
      problem = "a word without a tag (no tab)" if len(fields) == 1 else f"{len(fields)} tab-separated fields"
      raise TaskError(f"{where}: {problem}; TSV lines are WORD<tab>TAG (read a file of more columns as "
                      "conll).")
    word, tag = fields[0].strip(), fields[1].strip()
    if not word:
      raise TaskError(f"{where}: an empty word; TSV lines are WORD<tab>TAG.")
    sentences.add(line_number, word, tag)
  sentences.end()
  return sentences.read()


_READERS = {"klue-ner": read_klue_ner, "conll": read_conll, "tsv": read_tsv}


def read_examples(path: str, file_format: str,
                  label_list: Optional[Sequence[str]] = None) -> List[TokenExample]:
  """The sentences of a file of one of `FORMATS`, tags checked against `label_list` (None: KLUE's labels for
  klue-ner, any IOB2 tag otherwise)."""
  if file_format not in _READERS:
    raise OptionError(f"Unknown NER file format {file_format!r}; the formats are {', '.join(FORMATS)}.")
  if label_list is None and file_format == "klue-ner":
    label_list = KLUE_NER_LABELS
  return _READERS[file_format](path, label_list)


def label_list_from_examples(examples: Sequence[TokenExample]) -> Tuple[str, ...]:
  """The labels of training sentences: O, then B- and I- of each entity type, the types sorted."""
  types = sorted({label[2:] for example in examples for label in example.labels if label != OUTSIDE})
  return (OUTSIDE,) + tuple(f"{prefix}-{entity_type}" for entity_type in types for prefix in "BI")


def entity_spans(tags: Sequence[str]) -> List[Tuple[str, int, int]]:
  """The entities of IOB2 tags, strictly as seqeval's IOB2 scheme reads them: (type, first unit, end unit
  exclusive) of each B-X and the I-X after it; an I-X that does not continue its entity is no entity."""
  spans = []
  start = None
  for index, tag in enumerate(list(tags) + [OUTSIDE]):
    if start is not None and tag != f"I-{tags[start][2:]}":
      spans.append((tags[start][2:], start, index))
      start = None
    if tag.startswith("B-"):
      start = index
  return spans


def mark_entities(units: Sequence[str], tags: Sequence[str]) -> str:
  """A sentence of characters with KLUE's markup, `<text:TYPE>` around each entity (`entity_spans`)."""
  pieces = list(units)
  for entity_type, start, end in entity_spans(tags):
    pieces[start] = "<" + pieces[start]
    pieces[end - 1] = pieces[end - 1] + f":{entity_type}>"
  return "".join(pieces)


def format_examples(examples: Sequence[TokenExample], tags: Sequence[Sequence[str]]) -> str:
  """The text of a file of the examples' format, with `tags` (one sequence per example) in place of theirs:
  what a prediction file holds. KLUE's headers carry the markup of the new tags (`mark_entities`); tags are
  written as given, so predictions that are not IOB2 make a file the strict readers refuse."""
  blocks = []
  for example, example_tags in zip(examples, tags, strict=True):
    if len(example_tags) != len(example.units):
      raise ValueError(f"{example.guid}: {len(example_tags)} tags for {len(example.units)} units.")
    if example.file_format == "klue-ner":
      lines = [f"## {example.guid}\t{mark_entities(example.units, example_tags)}"]
      lines += [f"{unit}\t{tag}" for unit, tag in zip(example.units, example_tags)]
    elif example.file_format == "conll":
      lines = [" ".join(fields + (tag,)) for fields, tag in zip(example.columns, example_tags)]
    else:
      lines = [f"{unit}\t{tag}" for unit, tag in zip(example.units, example_tags)]
    blocks.append("".join(line + "\n" for line in lines))
  return "\n".join(blocks)


@dataclasses.dataclass(frozen=True)
class PieceAlignment:
  """A sentence's pieces and where each unit lies in them.

  Attributes:
    pieces: the pieces of the sentence's text, as `SentencePieceTokenizer.tokenize` gives them.
    token_ids: their ids.
    unit_pieces: per unit, the piece that holds its first character; None for a space (a whitespace
      character of KLUE), which no piece labels, and for a unit that preprocessing deletes (a lone accent)
      before any piece. A unit that preprocessing deletes after a piece shares that piece.
    unit_starts_piece: per unit, whether it is the first unit of its piece (whose tag the piece takes).
    unit_is_space: per unit, whether it is whitespace.
  """

  pieces: Tuple[str, ...]
  token_ids: Tuple[int, ...]
  unit_pieces: Tuple[Optional[int], ...]
  unit_starts_piece: Tuple[bool, ...]
  unit_is_space: Tuple[bool, ...]

  def piece_label_ids(self, unit_label_ids: Sequence[int]) -> List[int]:
    """Per piece, the label id of the unit it starts, or `IGNORE_LABEL` for a piece that starts no unit."""
    labels = [IGNORE_LABEL] * len(self.pieces)
    for piece, starts, label in zip(self.unit_pieces, self.unit_starts_piece, unit_label_ids, strict=True):
      if starts:
        labels[piece] = label
    return labels

  def unit_tags(self, piece_tags: Sequence[str]) -> List[str]:
    """Every unit's tag from one tag per piece: a unit that starts a piece takes the piece's tag, a unit
    inside a piece the continuation of it (I-X for B-X or I-X, else O), a unit of no piece O, and a space I-X
    between a B-X or I-X and an I-X (inside an entity, as KLUE tags it), else O."""
    if len(piece_tags) != len(self.pieces):
      raise ValueError(f"{len(piece_tags)} tags for {len(self.pieces)} pieces.")
    tags: List[Optional[str]] = []
    for piece, starts, is_space in zip(self.unit_pieces, self.unit_starts_piece, self.unit_is_space):
      if is_space:
        tags.append(None)  # known once its neighbours are
      elif piece is None:
        tags.append(OUTSIDE)
      else:
        tags.append(piece_tags[piece] if starts else continuation(piece_tags[piece]))
    following = [OUTSIDE] * len(tags)  # per unit, the tag of the next unit that is not a space
    for index in range(len(tags) - 2, -1, -1):
      following[index] = tags[index + 1] if tags[index + 1] is not None else following[index + 1]
    previous = OUTSIDE
    for index, tag in enumerate(tags):
      if tag is not None:
        previous = tag
      else:
        inside = previous != OUTSIDE and following[index] == continuation(previous)
        tags[index] = following[index] if inside else OUTSIDE
    return tags


@functools.lru_cache(maxsize=65536)
def _normalized_unit(unit: str, do_lower_case: bool, keep_accents: bool) -> str:
  return preprocess_text(unit, do_lower_case, keep_accents)


def _normalized_parts(units: Sequence[str], separator: str, tokenizer: SentencePieceTokenizer) -> List[str]:
  """Each unit as it appears in the preprocessed text, when preprocessing works unit by unit: whitespace
  runs become one space (none at the ends), every other unit is preprocessed alone."""
  normalize = functools.partial(_normalized_unit, do_lower_case=tokenizer.do_lower_case,
                                keep_accents=tokenizer.keep_accents)
  if separator:  # words: never whitespace, one space between them
    return [(separator if index else "") + normalize(unit) for index, unit in enumerate(units)]
  solid = [index for index, unit in enumerate(units) if not unit.isspace()]
  first, last = (solid[0], solid[-1]) if solid else (len(units), -1)
  parts = []
  for index, unit in enumerate(units):
    if not unit.isspace():
      parts.append(normalize(unit))
    else:
      opens_run = index > first and index < last and not units[index - 1].isspace()
      parts.append(" " if opens_run else "")
  return parts


def _unit_spans(units: Sequence[str], separator: str, text: str, normalized: str,
                tokenizer: SentencePieceTokenizer) -> List[Tuple[int, int]]:
  """Where each unit lies in `normalized`, the preprocessed `text`: (begin, end) character offsets, empty
  for a unit that preprocessing deletes (a lone accent)."""
  parts = _normalized_parts(units, separator, tokenizer)
  if "".join(parts) == normalized:
    spans, begin = [], 0
    for part in parts:
      spans.append((begin, begin + len(part)))
      begin += len(part)
    return spans
  # Preprocessing joins some units with the next ones (two backquotes into one quote, conjoining jamo into a
  # syllable): a unit ends where the preprocessed text up to it stops agreeing with the whole text's, and a
  # unit that changes that text without lengthening the agreement lies in the next character, with the units
  # it joins.
  spans = []
  before, agreed, end = "", 0, 0
  for index, unit in enumerate(units):
    end += (len(separator) if index else 0) + len(unit)
    after = preprocess_text(text[:end], tokenizer.do_lower_case, tokenizer.keep_accents)
    agreed_after = max(agreed, len(os.path.commonprefix([after, normalized])))
    if agreed_after == agreed and after != before and agreed < len(normalized):
      spans.append((agreed, agreed + 1))
    else:
      spans.append((agreed, agreed_after))
    before, agreed = after, agreed_after
  return spans


def _encoded_pieces(tokenizer: SentencePieceTokenizer, text: str) -> List[Tuple[str, int, int]]:
  """(piece, begin, end) of SentencePiece's pieces of preprocessed `text`, the surface of each as character
  offsets into `text` (begin == end for a piece that covers none), split before "<digit>," as Google's
  `encode_pieces` (and `SentencePieceTokenizer.tokenize`) split them."""

  def surfaces(part: str) -> List[Tuple[str, int, int]]:
    proto = sentencepiece_pb2.SentencePieceText.FromString(tokenizer.sp_model.EncodeAsSerializedProto(part))
    # SentencePiece's offsets count UTF-8 bytes.
    char_of_byte = {0: 0}
    size = 0
    for index, char in enumerate(part, 1):
      size += len(char.encode("utf-8"))
      char_of_byte[size] = index
    return [(piece.piece, char_of_byte[piece.begin], char_of_byte[piece.end]) for piece in proto.pieces]

  pieces = []
  for piece, begin, end in surfaces(text):
    if not ends_in_digit_comma(piece):
      pieces.append((piece, begin, end))
      continue
    # Google's rule: "▁3," becomes the pieces of "3" then ",", the comma the last character of the surface.
    core_begin = begin + len(text[begin:end - 1]) - len(text[begin:end - 1].lstrip())
    split = surfaces(piece[:-1].replace(_WORD_START, ""))
    if piece[0] != _WORD_START and split and split[0][0].startswith(_WORD_START):
      first, first_begin, first_end = split[0]
      split = split[1:] if len(first) == 1 else [(first[1:], first_begin, first_end)] + split[1:]
    # The split pieces' offsets count in the piece's text, which is its surface unless SentencePiece's own
    # normalisation changed that: kept within the surface before the comma then.
    pieces.extend((sub_piece, min(core_begin + sub_begin, end - 1), min(core_begin + sub_end, end - 1))
                  for sub_piece, sub_begin, sub_end in split)
    pieces.append((piece[-1], end - 1, end))
  return pieces


def align_units(units: Sequence[str], separator: str, tokenizer: SentencePieceTokenizer) -> PieceAlignment:
  """Tokenizes the sentence `separator.join(units)` and places every unit in its pieces (`PieceAlignment`).

  The pieces are `tokenizer.tokenize(text, special_tokens_in_text=False)`: the text is preprocessed whole
  (whitespace collapsed, accents stripped, lower case), and each unit is located in the preprocessed text by
  preprocessing the units one by one (or, where preprocessing joins neighbours, the text up to each unit), and
  each piece by SentencePiece's surface offsets. A unit belongs to the piece whose surface holds its first
  non-space character; a unit that preprocessing deletes belongs to the piece of the unit before it.
  """
  text = separator.join(units)
  normalized = preprocess_text(text, tokenizer.do_lower_case, tokenizer.keep_accents)
  spans = _unit_spans(units, separator, text, normalized, tokenizer)
  pieces = _encoded_pieces(tokenizer, normalized) if normalized else []
  piece_at = [None] * len(normalized)
  for index, (_, begin, end) in enumerate(pieces):
    piece_at[begin:end] = [index] * (end - begin)
  unit_pieces, unit_starts_piece, unit_is_space = [], [], []
  previous_piece = None
  for index, unit in enumerate(units):
    is_space = unit.isspace()
    piece = None
    if not is_space:
      piece = next((piece_at[position] for position in range(*spans[index])
                    if not normalized[position].isspace() and piece_at[position] is not None), previous_piece)
    unit_starts_piece.append(piece is not None and piece != previous_piece)
    unit_pieces.append(piece)
    unit_is_space.append(is_space)
    previous_piece = piece if piece is not None else previous_piece
  piece_texts = tuple(piece for piece, _, _ in pieces)
  token_ids = tuple(tokenizer.convert_tokens_to_ids(list(piece_texts)))
  return PieceAlignment(piece_texts, token_ids, tuple(unit_pieces), tuple(unit_starts_piece),
                        tuple(unit_is_space))


def align_example(example: TokenExample, tokenizer: SentencePieceTokenizer) -> PieceAlignment:
  """`align_units` of an example's units."""
  return align_units(example.units, example.separator, tokenizer)


@dataclasses.dataclass(frozen=True)
class Window:
  """A run of a sentence's pieces that fits one input, `[CLS] pieces[start:end] [SEP]`.

  Attributes:
    start: the first piece.
    end: the piece after the last.
    max_context: per piece of the window, whether this window predicts it (the window where it has the most
      context).
  """

  start: int
  end: int
  max_context: Tuple[bool, ...]


def windows(num_pieces: int, max_seq_length: int, doc_stride: int) -> List[Window]:
  """The windows of a sentence of `num_pieces` pieces, as Google's SQuAD features cut a long document.

  Windows of at most `max_seq_length` - 2 pieces start every `doc_stride` pieces until one reaches the end
  (one window when the sentence fits). Each piece is predicted from the window where min(pieces before it,
  pieces after it) + 0.01 * the window's length is highest, the earliest on a tie (Google's
  `_check_is_max_context`), so every piece is predicted exactly once.

  Raises:
    OptionError: `max_seq_length` below 3 or `doc_stride` below 1.
  """
  if max_seq_length < 3 or doc_stride < 1:
    raise OptionError(f"Windows need max_seq_length >= 3 (room for [CLS], a piece and [SEP]) and doc_stride "
                      f">= 1, not {max_seq_length} and {doc_stride}.")
  max_pieces = max_seq_length - 2
  spans = []
  start = 0
  while True:
    end = min(start + max_pieces, num_pieces)
    spans.append((start, end))
    if end >= num_pieces:
      break
    start += min(end - start, doc_stride)
  best = []  # per piece, the window that predicts it
  for position in range(num_pieces):
    scores = {index: min(position - start, end - 1 - position) + 0.01 * (end - start)
              for index, (start, end) in enumerate(spans) if start <= position < end}
    best.append(max(scores, key=lambda index: (scores[index], -index)))
  return [Window(start, end, tuple(best[position] == index for position in range(start, end)))
          for index, (start, end) in enumerate(spans)]


def merge_windows(sentence_windows: Sequence[Window],
                  window_values: Sequence[Sequence[Value]]) -> List[Value]:
  """Per piece, its value (a predicted tag, logits) in the window that predicts it: `window_values[i]` holds
  one value per piece of `sentence_windows[i]`."""
  merged = []
  for window, values in zip(sentence_windows, window_values, strict=True):
    if len(values) != window.end - window.start:
      raise ValueError(f"{len(values)} values for the {window.end - window.start} pieces of a window.")
    merged.extend(value for value, predicts in zip(values, window.max_context) if predicts)
  return merged


def evaluated_units(alignment: PieceAlignment, max_seq_length: Optional[int] = None) -> List[int]:
  """The units a score counts: every unit but the spaces, as KLUE's baseline counts characters.

  With `max_seq_length`, the KLUE baseline's truncation, applied to our pieces: the baseline reads only the
  first `max_seq_length` - 2 pieces of a sentence, and its evaluation cuts the gold tags to the characters of
  the pieces it read, so the characters of the dropped pieces count neither as labels nor as predictions (they
  are not predicted O). Here: the units before the first unit of a dropped piece. Their predictions are those
  of the sentence's first window (`windows`), which holds exactly the pieces read.
  """
  cut = len(alignment.unit_pieces)
  if max_seq_length is not None:
    max_pieces = max_seq_length - 2
    cut = next((index for index, piece in enumerate(alignment.unit_pieces) if piece is not None and
                piece >= max_pieces), cut)
  return [index for index in range(cut) if not alignment.unit_is_space[index]]
