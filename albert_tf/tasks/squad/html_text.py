"""The plain text of an HTML fragment, and where each of its characters comes from in the HTML.

KorQuAD 2.x writes its contexts and answers as HTML (Wikipedia pages, simplified). The model reads text, so a
context becomes its text with a map back to the markup: an answer given as an HTML range is found in the text,
and a predicted text span is written back as the HTML that holds it, the form of the benchmark's answers.

The text is what the standard library's `html.parser` finds between the tags (BeautifulSoup's `get_text()` with
that parser), with three changes that only add or remove whitespace:
  * a block-level tag (a paragraph, heading, list item, table cell or row, a line break, ...) separates what
    comes before and after it by a space, so that two cells or items do not glue into one word;
  * every run of whitespace is one space, none at either end (a newline or tab would be a character the
    SentencePiece pieces do not have, which counts against the context's alignment with them);
  * comments and the content of <script>, <style> and <template> are not text (recent BeautifulSoup versions
    leave them out of `get_text()` too).
Entities (&amp;, &#44032;) are decoded as `html.unescape` decodes them.

Each character of the text comes either from the same character of the HTML (most of it) or from a unit of
it: an entity, a whitespace run, or the tag a separator stands for. `HtmlText` keeps this as runs ("segments"),
a few per text node, so that a long page costs little more than its text.
"""

import array
import bisect
import html
import html.parser
import re
from typing import List, Optional, Tuple

# Tags that start or end a block, a line or a cell: the text on either side of one is separate words.
_SEPARATING_TAGS = frozenset("""
    address article aside blockquote br caption center col colgroup dd details dialog dir div dl dt fieldset
    figcaption figure footer form h1 h2 h3 h4 h5 h6 header hgroup hr li main menu nav ol p pre section summary
    table tbody td tfoot th thead tr ul
""".split())
# Elements whose content is not text of the page.
_HIDDEN_ELEMENTS = frozenset({"script", "style", "template"})
# What `html.unescape` replaces (its own pattern): a character reference or an entity, with or without ";".
_CHARACTER_REFERENCE = re.compile(r"&(#[0-9]+;?|#[xX][0-9a-fA-F]+;?|[^\t\n\f <&#;]{1,32};?)")
# Whitespace other than one space: a run of two or more characters, or a newline, tab, no-break space, ...
_IRREGULAR_WHITESPACE = re.compile(r"\s{2,}|[^\S ]")


class _Events(html.parser.HTMLParser):
  """The parser's events in order, each as (kind, HTML offset where it starts, tag name or text)."""

  def __init__(self, markup: str):
    super().__init__(convert_charrefs=True)
    self.events: List[Tuple[str, int, Optional[str]]] = []
    self._line_starts = [0] + [match.end() for match in re.finditer("\n", markup)]

  def _offset(self) -> int:
    line, column = self.getpos()  # where the construct being reported starts
    return self._line_starts[line - 1] + column

  def handle_starttag(self, tag, attrs):
    self.events.append(("start", self._offset(), tag))

  def handle_startendtag(self, tag, attrs):
    self.events.append(("start_end", self._offset(), tag))

  def handle_endtag(self, tag):
    self.events.append(("end", self._offset(), tag))

  def handle_data(self, data):
    self.events.append(("data", self._offset(), data))

  # Not text, but they end the text before them.
  def handle_comment(self, data):
    self.events.append(("other", self._offset(), None))

  def handle_decl(self, decl):
    self.events.append(("other", self._offset(), None))

  def handle_pi(self, data):
    self.events.append(("other", self._offset(), None))

  def unknown_decl(self, data):
    self.events.append(("other", self._offset(), None))


class HtmlText:
  """The text of an HTML fragment and, for each text character, the HTML characters it comes from.

  Attributes:
    markup: the HTML.
    text: its text (see the module).
  """

  def __init__(self, markup: str):
    self.markup = markup
    self._pieces: List[str] = []
    self._length = 0
    # Segment k is text[text_starts[k]:text_starts[k + 1]] and comes from markup[markup_starts[k]:markup_ends[k]];
    # a verbatim segment copies the markup character for character, another one (an entity, a whitespace run,
    # a separating tag) comes from its whole markup as one unit.
    self._text_starts = array.array("q")
    self._markup_starts = array.array("q")
    self._markup_ends = array.array("q")
    self._verbatim = bytearray()
    self._build()

  # --- the maps ------------------------------------------------------------------------------------------

  def markup_range(self, first: int, last: int) -> Tuple[int, int]:
    """The HTML range [start, end) that holds the text characters `first` to `last` (inclusive)."""
    if not 0 <= first <= last < len(self.text):
      raise IndexError(f"text characters {first} to {last} of {len(self.text)}")
    return self._char_markup(first)[0], self._char_markup(last)[1]

  def markup_span(self, first: int, last: int) -> str:
    """The HTML that holds the text characters `first` to `last` (inclusive): from the first one's HTML to the
    last one's, with the tags between them."""
    start, end = self.markup_range(first, last)
    return self.markup[start:end]

  def text_range(self, markup_start: int, markup_end: int) -> Tuple[int, int]:
    """The text [first, end) of the HTML range [markup_start, markup_end): the characters that come from HTML
    inside it, without whitespace at either end; (end, end) when it holds no text."""
    first, end = self._first_char_from(markup_start), self._end_char_before(markup_end)
    while first < end and self.text[first].isspace():
      first += 1
    while end > first and self.text[end - 1].isspace():
      end -= 1
    return (first, end) if first < end else (end, end)

  def _segment_length(self, segment: int) -> int:
    following = self._text_starts[segment + 1] if segment + 1 < len(self._text_starts) else len(self.text)
    return following - self._text_starts[segment]

  def _char_markup(self, index: int) -> Tuple[int, int]:
    segment = bisect.bisect_right(self._text_starts, index) - 1
    if self._verbatim[segment]:
      start = self._markup_starts[segment] + index - self._text_starts[segment]
      return start, start + 1
    return self._markup_starts[segment], self._markup_ends[segment]

  def _first_char_from(self, markup_start: int) -> int:
    """The first text character whose HTML starts at or after `markup_start`."""
    segment = bisect.bisect_right(self._markup_ends, markup_start)  # the first segment ending after it
    if segment == len(self._markup_ends):
      return len(self.text)
    text_start, segment_start = self._text_starts[segment], self._markup_starts[segment]
    if markup_start <= segment_start:
      return text_start
    if self._verbatim[segment]:
      return text_start + markup_start - segment_start
    return text_start + self._segment_length(segment)  # starts inside a unit: the unit is not in the range

  def _end_char_before(self, markup_end: int) -> int:
    """One past the last text character whose HTML ends at or before `markup_end`."""
    segment = bisect.bisect_left(self._markup_starts, markup_end) - 1  # the last segment starting before it
    if segment < 0:
      return 0
    text_start, segment_start = self._text_starts[segment], self._markup_starts[segment]
    if markup_end >= self._markup_ends[segment]:
      return text_start + self._segment_length(segment)
    if self._verbatim[segment]:
      return text_start + markup_end - segment_start
    return text_start  # ends inside a unit

  # --- building ------------------------------------------------------------------------------------------

  def _build(self):
    parser = _Events(self.markup)
    parser.feed(self.markup)
    parser.close()
    hidden = []  # the open elements whose content is left out
    events = parser.events
    for index, (kind, start, value) in enumerate(events):
      # An event's HTML runs to where the next one starts.
      end = events[index + 1][1] if index + 1 < len(events) else len(self.markup)
      if kind == "data":
        if not hidden:
          self._append_data(value, start, end)
      elif kind in ("start", "end", "start_end"):
        if value in _HIDDEN_ELEMENTS and kind != "start_end":
          if kind == "start":
            hidden.append(value)
          elif value in hidden:  # closes it and whatever was left open inside it
            del hidden[len(hidden) - 1 - hidden[::-1].index(value):]
        elif value in _SEPARATING_TAGS and not hidden:
          self._append_space(start, end, verbatim=False)
    self._finish()

  def _ends_in_space(self) -> bool:
    return not self._pieces or self._pieces[-1][-1] == " "

  def _append(self, text: str, markup_start: int, markup_end: int, verbatim: bool):
    if (verbatim and self._verbatim and self._verbatim[-1] and self._markup_ends[-1] == markup_start):
      self._markup_ends[-1] = markup_end  # continues the last verbatim segment
    else:
      self._text_starts.append(self._length)
      self._markup_starts.append(markup_start)
      self._markup_ends.append(markup_end)
      self._verbatim.append(verbatim)
    self._pieces.append(text)
    self._length += len(text)

  def _append_space(self, markup_start: int, markup_end: int, verbatim: bool):
    """A word break: one space, unless the text is empty or already ends with one."""
    if not self._ends_in_space():
      self._append(" ", markup_start, markup_end, verbatim)

  def _append_text(self, text: str, markup_start: int, verbatim: bool, markup_end: Optional[int] = None):
    """Text from the HTML at `markup_start`: verbatim (each character its own), or one unit ending at
    `markup_end`; its whitespace runs become single spaces."""
    if not verbatim:
      words = text.split()
      if not words:
        self._append_space(markup_start, markup_end, verbatim=False)
        return
      if text[0].isspace():
        self._append_space(markup_start, markup_end, verbatim=False)
      self._append(" ".join(words), markup_start, markup_end, verbatim=False)
      if text[-1].isspace():
        self._append(" ", markup_start, markup_end, verbatim=False)
      return
    # Text with single spaces is copied as it is, in one piece; other whitespace becomes a space of its own.
    position = 0
    for run in _IRREGULAR_WHITESPACE.finditer(text):
      self._append_verbatim(text, position, run.start(), markup_start)
      self._append_space(markup_start + run.start(), markup_start + run.end(), verbatim=False)
      position = run.end()
    self._append_verbatim(text, position, len(text), markup_start)

  def _append_verbatim(self, text: str, start: int, end: int, markup_start: int):
    """text[start:end], which holds no whitespace but single spaces, from the HTML at `markup_start` + start."""
    if start < end and text[start] == " " and self._ends_in_space():
      start += 1  # the word break is there already (or the text has not started)
    if start < end:
      self._append(text[start:end], markup_start + start, markup_start + end, True)

  def _append_data(self, data: str, markup_start: int, markup_end: int):
    """A text node as `html.parser` gives it (`data`) and its HTML."""
    raw = self.markup[markup_start:markup_end]
    if data == raw:
      self._append_text(data, markup_start, verbatim=True)
      return
    decoded, position = [], 0
    for reference in _CHARACTER_REFERENCE.finditer(raw):
      decoded.append((raw[position:reference.start()], markup_start + position, None))
      decoded.append((html.unescape(reference.group()), markup_start + reference.start(),
                      markup_start + reference.end()))
      position = reference.end()
    decoded.append((raw[position:], markup_start + position, None))
    if "".join(text for text, _, _ in decoded) != data:
      # Not the parser's decoding of this HTML (never seen): the whole node is one unit.
      self._append_text(data, markup_start, verbatim=False, markup_end=markup_end)
      return
    for text, start, unit_end in decoded:
      if text:
        self._append_text(text, start, verbatim=unit_end is None, markup_end=unit_end)

  def _finish(self):
    """Drops the trailing space and joins the text."""
    if self._pieces and self._pieces[-1][-1] == " ":
      last = self._pieces.pop()[:-1]
      self._length -= 1
      if self._verbatim[-1]:
        self._markup_ends[-1] -= 1
      if last:
        self._pieces.append(last)
      elif self._text_starts[-1] == self._length:  # the segment held just the space
        for segments in (self._text_starts, self._markup_starts, self._markup_ends):
          segments.pop()
        self._verbatim.pop()
    self.text = "".join(self._pieces)
    self._pieces = []


def plain_text(markup: str) -> str:
  """The text of an HTML fragment (see the module): what KorQuAD 2.x's evaluation compares, up to whitespace."""
  return HtmlText(markup).text
