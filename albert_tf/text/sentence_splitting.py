"""Raw text to sentences: the cleaning and the sentence splitters of `prepare_corpus`.

Korean goes to Kiwi (`kiwipiepy`, the `korean` extra), every other language to sentencex (Wikimedia's
splitter, about 300 languages). Both were chosen by measured boundary precision and recall, on the shared
corpora and on labelled hard cases (docs/design.md, "Sentence splitters: the choice"): Kiwi analyses the
morphemes, so it finds `-다.`/`-요.` with no space after them and keeps `"...요."라고` inside its sentence, where
rule-based splitters cut; but it misses most English boundaries, so `auto` chooses per document.
"""

import re
import unicodedata
from typing import List, NamedTuple, Sequence, Set

from albert_tf.errors import OptionError
from albert_tf.text.korean_analyzers import KiwiAnalyzer

AUTO, KOREAN = "auto", "ko"
# A document is Korean for `auto` when at least this share of its letters is Hangul: Korean technical text
# is often a third Latin (product names, commands), and English text quotes little Hangul.
KOREAN_LETTER_SHARE = 0.25
# Hangul syllables and jamo, all their blocks.
HANGUL = re.compile("[\u1100-\u11ff\u3130-\u318f\ua960-\ua97f\uac00-\ud7ff]")
_LANGUAGE_CODE = re.compile(r"^[a-z]{2,3}(?:[-_][A-Za-z0-9]+)*$")
_WHITESPACE = re.compile(r"\s+")
# The control characters (category Cc) that are not whitespace; whitespace ones (tab, line breaks, U+001C-1F,
# U+0085) become spaces with the rest of the whitespace.
_CONTROL = re.compile("[\x00-\x08\x0e-\x1b\x7f-\x84\x86-\x9f]")


def clean_text(text: str) -> str:
  """`text` in Unicode NFC, control characters removed (tabs and line breaks become spaces), spaces collapsed.

  NFC because the same Hangul syllable arrives composed or as jamo from different sources, and would count as
  different text; control characters (category Cc) are bytes of markup or broken encodings, never words.
  """
  text = _CONTROL.sub("", unicodedata.normalize("NFC", text))
  return _WHITESPACE.sub(" ", text).strip()


def is_korean(text: str) -> bool:
  """Whether at least `KOREAN_LETTER_SHARE` of the letters of `text` are Hangul."""
  letters = sum(map(str.isalpha, text))
  return bool(letters) and len(HANGUL.findall(text)) >= KOREAN_LETTER_SHARE * letters


def check_language(language: str):
  """Refuses what is neither ko, auto nor an ISO 639 code: found before any work, not in a worker."""
  if language != AUTO and not _LANGUAGE_CODE.match(language):
    raise OptionError(f"--language must be ko, auto or an ISO 639 language code (en, de, ja, ...), "
                      f"not {language!r}.")


class SentenceSplitter:
  """Splits cleaned text into sentences for one language, or per text for `auto`.

  Args:
    language: "ko", "auto" (Korean or not, per text), or another ISO 639 code for sentencex ("en", "de", ...).

  Raises:
    OptionError: a language that is not a code, or Korean without the `korean` extra (named).
  """

  def __init__(self, language: str):
    check_language(language)
    self.language = language
    self._kiwi = (KiwiAnalyzer(f"Splitting Korean sentences (--language={language})")
                  if language in (KOREAN, AUTO) else None)
    import sentencex  # pylint: disable=import-outside-toplevel; a dependency, imported where it is used
    self._sentencex = sentencex

  def language_of(self, text: str) -> str:
    """The language `text` is split as."""
    if self.language != AUTO:
      return self.language
    return KOREAN if is_korean(text) else "en"

  def split(self, text: str) -> List[str]:
    """The sentences of one paragraph of cleaned text, stripped, none empty."""
    if not text:
      return []
    language = self.language_of(text)
    if language == KOREAN:
      return self._kiwi.split_sentences(text)
    return [sentence.strip() for sentence in self._sentencex.segment(language, text) if sentence.strip()]


class BoundaryScores(NamedTuple):
  """Sentence boundaries found against the true ones (a document's start is not a boundary)."""

  true_positives: int
  false_positives: int
  false_negatives: int

  @property
  def precision(self) -> float:
    return self.true_positives / max(1, self.true_positives + self.false_positives)

  @property
  def recall(self) -> float:
    return self.true_positives / max(1, self.true_positives + self.false_negatives)

  def __add__(self, other: "BoundaryScores") -> "BoundaryScores":
    return BoundaryScores(*(mine + theirs for mine, theirs in zip(self, other)))


def sentence_starts(text: str, sentences: Sequence[str]) -> Set[int]:
  """Where in `text` each of `sentences` (its pieces, in order) starts, beyond the start of `text`.

  Raises:
    ValueError: a sentence that is not found in `text` after the previous one.
  """
  starts, position = set(), 0
  for sentence in sentences:
    found = text.find(sentence, position)
    if found < 0:
      raise ValueError(f"{sentence[:40]!r} is not in the text after position {position}.")
    if found > 0:
      starts.add(found)
    position = found + len(sentence)
  return starts


def boundary_scores(text: str, true_sentences: Sequence[str], found_sentences: Sequence[str]) -> BoundaryScores:
  """How well `found_sentences` split `text` (made of `true_sentences` joined by whitespace)."""
  true_starts = sentence_starts(text, true_sentences)
  found_starts = sentence_starts(text, found_sentences)
  return BoundaryScores(len(true_starts & found_starts), len(found_starts - true_starts),
                        len(true_starts - found_starts))
