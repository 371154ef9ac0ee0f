"""How a SentencePiece vocabulary cuts held-out text, to compare vocabularies before pretraining with them.

For each script of the words (whitespace-separated; Hangul when a word holds a Hangul character, else Latin when
it holds a Latin letter, else other): pieces per word and the share of words with an `<unk>` piece. For the Hangul
words, their piece boundaries against the morphemes of Kiwi's analysis of the whole line (context helps it):

- boundary recall: the share of the morpheme boundaries inside words that are piece boundaries too;
- boundary precision: the share of the piece boundaries inside words that are morpheme boundaries;
- stem in one piece: of the words whose first morpheme is a content morpheme (`STEM_TAGS`: a noun, a verb or
  adjective stem, a root, an adverb, a determiner...), the share where that morpheme is exactly one piece.

A boundary is a character offset in the word. A piece's characters are its text without `▁` in NFC, which undoes
a decomposition that preprocessing may leave (SentencePiece's nmt_nfkc recomposes Hangul; an `<unk>` piece is the
text it stands for); a word whose pieces are not as many characters as the word (a character the normalisation
expands, ㈜ → (주)) cannot be aligned and is left out of the Korean figures, and counted.
"""

import dataclasses
import itertools
import os
import re
import unicodedata
from typing import Dict, Iterable, List, Optional, Sequence, Tuple, Union

from albert_tf.errors import DataError, OptionError
from albert_tf.files import expand_input_patterns, read_utf8_lines
from albert_tf.text import korean_analyzers
from albert_tf.text.sentence_splitting import HANGUL
from albert_tf.text.tokenizer import SentencePieceTokenizer

SCRIPTS = ("Hangul", "Latin", "other")
_LATIN = re.compile("[A-Za-z\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u024f\u1e00-\u1eff\uff21-\uff3a\uff41-\uff5a]")
# Kiwi's tags (Sejong's) of the content morphemes a word can start with: common, proper and bound nouns,
# pronouns, numerals, verb, adjective and auxiliary stems, the negative copula, determiners, adverbs,
# interjections, roots. Kiwi marks irregular conjugations with a suffix (VV-I, VA-R), dropped before the lookup.
STEM_TAGS = frozenset({"NNG", "NNP", "NNB", "NP", "NR", "VV", "VA", "VX", "VCN", "MM", "MAG", "MAJ", "IC", "XR"})
_WORD_START = "\u2581"


def script_of(word: str) -> str:
  """Hangul when `word` holds a Hangul character, else Latin when it holds a Latin letter, else other."""
  if HANGUL.search(word):
    return "Hangul"
  return "Latin" if _LATIN.search(word) else "other"


@dataclasses.dataclass(frozen=True)
class Word:
  """A word of the text (NFC), and for a Hangul word what its morphemes are.

  Attributes:
    text: the word.
    script: `script_of(text)`.
    morpheme_starts: offsets in the word where a morpheme starts, beyond its first character.
    stem_end: where the word's first morpheme ends, when it is a content morpheme (its stem); else None.
  """

  text: str
  script: str
  morpheme_starts: Tuple[int, ...] = ()
  stem_end: Optional[int] = None


def _korean_word(text: str, morphemes: Sequence[korean_analyzers.Morpheme]) -> Word:
  """The Hangul word `text` with `morphemes`, those of the line that start in it, offsets from its start."""
  stem_end = None
  if morphemes and morphemes[0].start == 0 and morphemes[0].tag.split("-")[0] in STEM_TAGS:
    stem_end = min(morphemes[0].end, len(text))
  return Word(text, "Hangul", tuple(korean_analyzers.morpheme_starts(morphemes, len(text))), stem_end)


def analyse_lines(lines: Iterable[str], analyzer: Optional[korean_analyzers.KiwiAnalyzer] = None) -> List[Word]:
  """The words of `lines` (each in NFC; blank lines give none), the Hangul ones with Kiwi's morphemes.

  Args:
    lines: the text, a sentence (or a paragraph) a line.
    analyzer: the Kiwi analyzer; loaded when a line holds Hangul if not given.

  Raises:
    OptionError: Hangul text and no korean extra to analyse it.
  """
  words = []
  for line in lines:
    line = unicodedata.normalize("NFC", line)
    spans = [(match.start(), match.group()) for match in re.finditer(r"\S+", line)]
    if not any(HANGUL.search(text) for _, text in spans):
      words += [Word(text, script_of(text)) for _, text in spans]
      continue
    analyzer = analyzer or korean_analyzers.KiwiAnalyzer("The Korean figures of the vocabulary report")
    morphemes = analyzer.morphemes(line)
    for start, text in spans:
      if script_of(text) != "Hangul":
        words.append(Word(text, script_of(text)))
        continue
      end = start + len(text)
      words.append(_korean_word(text, [korean_analyzers.Morpheme(morpheme.start - start, morpheme.end - start,
                                                                 morpheme.tag)
                                       for morpheme in morphemes if start <= morpheme.start < end]))
  return words


def read_lines(input_patterns: Union[str, Sequence[str]], max_lines: int = 0) -> List[str]:
  """The non-blank lines of text files or globs (comma-separated, as `--input_file`), the first `max_lines`
  (0: all).

  Raises:
    InputFileError: a pattern matches no file.
    DataError: a line is not UTF-8, or every line is blank.
  """
  paths = expand_input_patterns(input_patterns)
  lines = []
  for path in paths:
    for _, line in read_utf8_lines(path):
      if line.strip():
        lines.append(line.strip())
        if len(lines) == max_lines:
          return lines
  if not lines:
    raise DataError(f"No text in {', '.join(paths)}: every line is blank.")
  return lines


def hold_out_documents(input_patterns: Union[str, Sequence[str]], every: int) -> Tuple[List[str], List[str]]:
  """Splits a corpus in Google's pretraining format (a blank line between documents) by document: every
  `every`-th document, counted across the files in order, is held out.

  Returns:
    The lines of the documents kept, a blank line after each, and the non-blank lines of those held out.

  Raises:
    OptionError: `every` below 2.
    InputFileError: a pattern matches no file.
    DataError: a line is not UTF-8, or fewer than `every` documents: none to hold out.
  """
  if every < 2:
    raise OptionError(f"every must be at least 2 (1 holds out every document), not {every}.")
  kept, held_out = [], []
  document = []
  index = 0
  for path in expand_input_patterns(input_patterns):
    for _, line in itertools.chain(read_utf8_lines(path), [(0, "")]):  # a blank line ends the last document
      if line.strip():
        document.append(line.strip())
        continue
      if document:
        index += 1
        if index % every:
          kept += document + [""]
        else:
          held_out += document
      document = []
  if not held_out:
    raise DataError(f"{', '.join(expand_input_patterns(input_patterns))} hold {index} documents, fewer than "
                    f"{every}: none is held out.")
  return kept, held_out


def piece_starts(pieces: Sequence[str], word: str) -> Optional[List[int]]:
  """Offsets in `word` where a piece other than the first starts, or None when the pieces cannot be aligned with
  its characters: their characters (NFC) are not as many as the word's.

  Args:
    pieces: the word's pieces as `SentencePieceTokenizer.tokenize` gives them (an unknown piece as its text).
    word: the word.
  """
  lengths = [len(unicodedata.normalize("NFC", piece.replace(_WORD_START, ""))) for piece in pieces]
  if sum(lengths) != len(word):
    return None
  starts = []
  offset = 0
  for length in lengths:
    if 0 < offset and length:
      starts.append(offset)
    offset += length
  return starts


@dataclasses.dataclass
class ScriptFigures:
  """The words of one script and their pieces."""

  words: int = 0
  pieces: int = 0
  unknown_pieces: int = 0
  words_with_unknown: int = 0

  @property
  def pieces_per_word(self) -> Optional[float]:
    return self.pieces / self.words if self.words else None

  @property
  def unknown_rate(self) -> Optional[float]:
    """The share of words with an `<unk>` piece: of pieces, it would be lower where words have more pieces."""
    return self.words_with_unknown / self.words if self.words else None


@dataclasses.dataclass
class MorphemeFigures:
  """The Hangul words' piece boundaries against their morpheme boundaries (see the module docstring)."""

  words: int = 0
  unaligned_words: int = 0
  morpheme_boundaries: int = 0
  piece_boundaries: int = 0
  shared_boundaries: int = 0
  stems: int = 0
  stems_in_one_piece: int = 0

  @property
  def recall(self) -> Optional[float]:
    return self.shared_boundaries / self.morpheme_boundaries if self.morpheme_boundaries else None

  @property
  def precision(self) -> Optional[float]:
    return self.shared_boundaries / self.piece_boundaries if self.piece_boundaries else None

  @property
  def stem_in_one_piece(self) -> Optional[float]:
    return self.stems_in_one_piece / self.stems if self.stems else None

  def add(self, word: Word, starts: Optional[List[int]]):
    """Counts `word`, a Hangul word, cut at `starts` (None: its pieces could not be aligned)."""
    if starts is None:
      self.unaligned_words += 1
      return
    self.words += 1
    self.morpheme_boundaries += len(word.morpheme_starts)
    self.piece_boundaries += len(starts)
    self.shared_boundaries += len(set(word.morpheme_starts).intersection(starts))
    if word.stem_end is not None:
      self.stems += 1
      self.stems_in_one_piece += (starts[0] if starts else len(word.text)) == word.stem_end


@dataclasses.dataclass
class VocabReport:
  """The figures of one vocabulary on one text.

  Attributes:
    name: what the vocabulary is called in the table.
    spm_model_file: its SentencePiece model.
    vocab_size: its pieces.
    scripts: the figures of each of `SCRIPTS`.
    morphemes: the Hangul words' figures.
  """

  name: str
  spm_model_file: str
  vocab_size: int
  scripts: Dict[str, ScriptFigures]
  morphemes: MorphemeFigures

  def as_dict(self) -> Dict:
    """The counts and the figures computed from them, for JSON."""
    scripts = {script: dict(dataclasses.asdict(figures), pieces_per_word=figures.pieces_per_word,
                            unknown_rate=figures.unknown_rate) for script, figures in self.scripts.items()}
    morphemes = dict(dataclasses.asdict(self.morphemes), recall=self.morphemes.recall,
                     precision=self.morphemes.precision, stem_in_one_piece=self.morphemes.stem_in_one_piece)
    return dict(name=self.name, spm_model_file=self.spm_model_file, vocab_size=self.vocab_size, scripts=scripts,
                morphemes=morphemes)


def vocab_report(tokenizer: SentencePieceTokenizer, words: Sequence[Word], name: str) -> VocabReport:
  """The figures of `tokenizer`'s vocabulary on `words` (from `analyse_lines`)."""
  scripts = {script: ScriptFigures() for script in SCRIPTS}
  morphemes = MorphemeFigures()
  for word in words:
    # SentencePiece never joins pieces across spaces: a word's pieces are the same alone as in its line.
    pieces = tokenizer.tokenize(word.text, special_tokens_in_text=False)
    figures = scripts[word.script]
    figures.words += 1
    figures.pieces += len(pieces)
    unknown_pieces = tokenizer.convert_tokens_to_ids(pieces).count(tokenizer.unk_id)
    figures.unknown_pieces += unknown_pieces
    figures.words_with_unknown += unknown_pieces > 0
    if word.script == "Hangul":
      morphemes.add(word, piece_starts(pieces, word.text))
  return VocabReport(name, tokenizer.spm_model_file, tokenizer.vocab_size, scripts, morphemes)


def model_names(spm_model_files: Sequence[str]) -> List[str]:
  """Short names that tell the models apart: the file names without `.model`, with as many of the folders
  above them as it takes (`kiwi/spiece`, `plain/spiece`)."""
  parts = [os.path.normpath(path[:-len(".model")] if path.endswith(".model") else path).split(os.sep)
           for path in spm_model_files]
  depth = 1
  while True:
    names = ["/".join(part[-depth:]) for part in parts]
    if len(set(names)) == len(names) or depth >= max(map(len, parts)):
      return names
    depth += 1


def _percent(value: Optional[float]) -> str:
  return "-" if value is None else f"{100 * value:.1f}%"


def _ratio(value: Optional[float]) -> str:
  return "-" if value is None else f"{value:.3f}"


def table(reports: Sequence[VocabReport], more_rows: Sequence[Tuple[str, Sequence[str]]] = ()) -> str:
  """The reports of one text side by side, a column a vocabulary, a row a figure; then `more_rows`, each a label
  and a value for each report."""
  words = {script: figures.words for script, figures in reports[0].scripts.items()}
  scripts = [script for script in SCRIPTS if words[script]]
  rows = [("", [report.name for report in reports]), ("pieces", [f"{report.vocab_size:,}" for report in reports])]
  rows += [(f"pieces per word, {script} ({words[script]:,} word{'s' if words[script] > 1 else ''})",
            [_ratio(report.scripts[script].pieces_per_word) for report in reports]) for script in scripts]
  rows += [(f"words with <unk>, {script}", [_percent(report.scripts[script].unknown_rate) for report in reports])
           for script in scripts]
  if words["Hangul"]:
    rows += [
        ("Hangul: morpheme boundary recall", [_percent(report.morphemes.recall) for report in reports]),
        ("Hangul: morpheme boundary precision", [_percent(report.morphemes.precision) for report in reports]),
        ("Hangul: stem in one piece", [_percent(report.morphemes.stem_in_one_piece) for report in reports]),
        ("Hangul: words not aligned, left out", [f"{report.morphemes.unaligned_words:,}" for report in reports]),
    ]
  rows += [(label, list(values)) for label, values in more_rows]
  label_width = max(len(label) for label, _ in rows)
  widths = [max(len(values[column]) for _, values in rows) for column in range(len(reports))]
  return "\n".join("  ".join([label.ljust(label_width)] + [value.rjust(width) for value, width in zip(values, widths)])
                   for label, values in rows)
