"""Answers without their trailing particles (`--trim_particles`): a Korean span's 조사 cut with a morpheme analyzer.

A reading model often ends its span after the particle that the gold answer leaves out (서울에서 for 서울, 한국의
for 한국), which costs the exact match. `ParticleTrimmer.answer_end` analyses the passage around the span (the
words from a little before its start to the word after its end, so that 나이가 is 나이+가 and the span 나이 keeps
its 이) and moves the span's end back over the trailing morphemes tagged as particles (Sejong's J*: JKS, JKC, JKG,
JKO, JKB, JKV, JKQ, JX, JC), and over a copula with its endings (VCP+E*: 이다, 이며, 인), which no noun phrase
answer holds either. It cuts only at a morpheme boundary that is also a boundary between characters, never the
whole span, and only when the span ends where a morpheme ends: the result is always a non-empty prefix of the
span, text of the passage at the same start.

The analyzer is the vocabulary's (`train_sentencepiece --pretokenizer`), else Kiwi; one instance loads its model
(a second or more), so a trimmer is made once per run or per loaded SavedModel and reused.
"""

from typing import List, Optional, Sequence

from albert_tf.text import korean_analyzers
from albert_tf.text.korean_analyzers import Morpheme

DEFAULT_ANALYZER = "kiwi"
# Characters of passage read on the left of a span (snapped to a word start): enough for the word before it.
_LEFT_CONTEXT = 16


def analyzer_name(pretokenizer: Optional[str]) -> str:
  """The analyzer that trims a run's answers: its vocabulary's (`pretokenizer`) when it is one, else Kiwi."""
  return pretokenizer if pretokenizer in korean_analyzers.ANALYZERS else DEFAULT_ANALYZER


def _tags(morpheme: Morpheme) -> List[str]:
  return morpheme.tag.split("+")  # MeCab joins the morphemes of one surface: VCP+EF


def _is_particle(morpheme: Morpheme) -> bool:
  return all(tag.startswith("J") for tag in _tags(morpheme))


def _is_ending(morpheme: Morpheme) -> bool:
  return all(tag.startswith("E") for tag in _tags(morpheme))


def trailing_cut(morphemes: Sequence[Morpheme], copula: bool = True) -> int:
  """How many of `morphemes` (those of a span, in text order) to cut from its end: its trailing particles, and
  before them a copula with its endings when `copula`; 0 when the span would be left with nothing."""
  cut = len(morphemes)
  while cut > 0 and _is_particle(morphemes[cut - 1]):
    cut -= 1
  if copula:
    ending = cut
    while ending > 0 and _is_ending(morphemes[ending - 1]):
      ending -= 1
    # Endings count only after a copula (이다, 인): a verb's endings (했다) are part of its answer.
    if ending > 0 and _tags(morphemes[ending - 1])[0] == "VCP":
      cut = ending - 1
  return len(morphemes) - cut if cut > 0 else 0


def _word_start(text: str, position: int) -> int:
  while position > 0 and not text[position - 1].isspace():
    position -= 1
  return position


def _word_end(text: str, position: int) -> int:
  while position < len(text) and not text[position].isspace():
    position += 1
  return position


class ParticleTrimmer:
  """Cuts a span's trailing particles with a Korean analyzer (see the module's docstring).

  Args:
    name: the analyzer, "kiwi" or "mecab" (the korean extra).
    copula: also cut a trailing copula with its endings (이다, 인).

  Raises:
    OptionError: an unknown analyzer, or the korean extra is missing.
  """

  def __init__(self, name: str = DEFAULT_ANALYZER, copula: bool = True):
    self.name = name
    self.copula = copula
    self._analyzer = korean_analyzers.analyzer(name, "--trim_particles")

  def answer_end(self, context: str, start: int, end: int) -> int:
    """The end (exclusive) of the span `context[start:end]` without its trailing particles: `end` itself when
    nothing is cut, else an offset in (start, end), after the span's first non-space character and before no
    whitespace."""
    if not 0 <= start < end <= len(context):
      return end
    text = context[start:end]
    # The span as an answer is written: without whitespace at either end.
    start, stripped_end = start + len(text) - len(text.lstrip()), start + len(text.rstrip())
    if start >= stripped_end:
      return end
    window_start = _word_start(context, max(0, start - _LEFT_CONTEXT))
    # The word after the span's too: what follows decides some analyses (이 as a particle or a copula).
    window_end = _word_end(context, _word_end(context, stripped_end) + 1)
    morphemes = [Morpheme(m.start + window_start, m.end + window_start, m.tag)
                 for m in self._analyzer.morphemes(context[window_start:window_end])]
    inside = [m for m in morphemes if m.start < stripped_end and m.end > start]
    # A span that ends inside a morpheme (the model cut a word) is left alone, as is one that starts inside it.
    if not inside or max(m.end for m in inside) != stripped_end or inside[0].start < start:
      return end
    count = trailing_cut(inside, self.copula)
    if not count:
      return end
    kept, cut = inside[:-count], inside[-count].start
    # The cut must fall between characters: not inside a syllable that a kept morpheme shares (하+었 in 했).
    if any(m.end > cut for m in kept):
      return end
    kept_text = context[start:cut].rstrip()
    return start + len(kept_text) if kept_text else end

  def trim(self, context: str, start: int, end: int) -> str:
    """The text of the span `context[start:end]` without its trailing particles."""
    return context[start:self.answer_end(context, start, end)]
