"""The alignment of a SQuAD context's characters with its SentencePiece pieces, which maps answers to tokens
and predicted tokens back to the context.

The context's characters are aligned with the concatenated pieces by a longest-common-subsequence alignment in
a band around the diagonal, once per distinct context (Google's, once per question).

Deliberate difference from Google's code: preprocessing is `SentencePieceTokenizer`'s, which keeps non-Latin
combining marks (see its module) and turns `` and '' into " (Hugging Face's rule; Google's `preprocess_text`
keeps them). So Hangul aligns here: Google's per-character comparison sees each syllable as its decomposed jamo,
which never equals a character of the pieces, so its offsets in mixed text are interpolated and a mostly Korean
context is a "MISMATCH" that yields no features at all.
"""

import dataclasses
import functools
import unicodedata
from typing import List, Optional, Tuple

from albert_tf.text.tokenizer import SentencePieceTokenizer, preprocess_text

_WORD_START = "\u2581"

@dataclasses.dataclass(frozen=True)
class ContextAlignment:
  """A context's pieces and the maps between its characters and the characters of its joined pieces."""

  token_ids: List[int]
  token_start_to_char: List[int]
  token_end_to_char: List[int]
  char_to_piece_char: List[Optional[int]]
  piece_char_to_token: List[int]

  def answer_tokens(self, start_char: int, end_char: int) -> Tuple[int, int]:
    """The tokens holding the first and the last character of an answer (inclusive)."""
    start = self.piece_char_to_token[_nearest_aligned(self.char_to_piece_char, start_char, is_start=True)]
    end = self.piece_char_to_token[_nearest_aligned(self.char_to_piece_char, end_char, is_start=False)]
    return start, end


@functools.lru_cache(maxsize=65536)
def _normalized_char(char: str, do_lower_case: bool, keep_accents: bool) -> str:
  """A character as preprocessing writes it alone (Google's `remove_space=False` comparison)."""
  if char.isspace():
    # Preprocessing a whole text collapses whitespace, so alone it would vanish; Google keeps each as its
    # compatibility form, so only a space (or one that decomposes to it, as U+00A0) matches a "▁".
    return unicodedata.normalize("NFKD", char)
  return preprocess_text(char, do_lower_case, keep_accents)


def _banded_lcs(chars: List[str], joined: str, max_dist: int) -> Tuple[int, List[Tuple[int, List[int]]]]:
  """Longest common subsequence of `chars` and `joined` over the cells |i - j| near the diagonal.

  Cell (i, j) is computed for i - max_dist <= j < i + max_dist; cells outside count as 0. Ties prefer the
  cell above, then the cell to the left, then the diagonal match (Google's order).

  Returns:
    The score of the last cell, and per row i (lo, moves) with moves[j - lo] = 0 (from above), 1 (from the
    left), 2 (a match), or -1 (no move: row 0 without a match or a longer cell to its left).
  """
  m = len(joined)
  rows = []
  previous_lo, previous = 0, []  # row -1: nothing, so row 0 reads 0 above and on the diagonal
  for i, char in enumerate(chars):
    lo, hi = max(i - max_dist, 0), min(i + max_dist, m)
    no_move = 0 if i > 0 else -1
    previous_length = len(previous)
    values, moves = [], []
    left = 0  # the cell left of the band
    for j in range(lo, hi):
      k = j - previous_lo
      best = previous[k] if 0 <= k < previous_length else 0
      diagonal = previous[k - 1] if 0 < k <= previous_length else 0
      move = no_move
      if left > best:
        best, move = left, 1
      if char == joined[j] and diagonal + 1 > best:
        best, move = diagonal + 1, 2
      values.append(best)
      moves.append(move)
      left = best
    rows.append((lo, moves))
    previous_lo, previous = lo, values
  last_lo = rows[-1][0]
  score = previous[m - 1 - last_lo] if 0 <= m - 1 - last_lo < len(previous) else 0
  return score, rows


def _trace_alignment(rows: List[Tuple[int, List[int]]], m: int) -> Tuple[List[Optional[int]], List[Optional[int]]]:
  """Follows the moves back from the last cell: the matched pairs (char index, joined index) as two maps."""
  n = len(rows)
  char_to_piece_char: List[Optional[int]] = [None] * n
  piece_char_to_char: List[Optional[int]] = [None] * m
  i, j = n - 1, m - 1
  while i >= 0 and j >= 0:
    lo, moves = rows[i]
    move = moves[j - lo] if 0 <= j - lo < len(moves) else -1
    if move == -1:
      break
    if move == 2:
      char_to_piece_char[i], piece_char_to_char[j] = j, i
      i, j = i - 1, j - 1
    elif move == 1:
      j -= 1
    else:
      i -= 1
  return char_to_piece_char, piece_char_to_char


def _nearest_aligned(index: List[Optional[int]], pos: int, length: Optional[int] = None,
                     is_start: bool = True) -> int:
  """`index[pos]`, or for an unaligned position the value Google's `_convert_index` guesses from its neighbours.

  Args:
    index: a map with None where nothing was aligned (not all None).
    pos: the position.
    length: the length of the target sequence, which lets a position after the last aligned one move past it.
    is_start: the position starts a span (guess just after the aligned neighbour before it) or ends one
      (guess just before the aligned neighbour after it).
  """
  if index[pos] is not None:
    return index[pos]
  after = pos
  while after < len(index) - 1 and index[after] is None:
    after += 1
  before = pos
  while before > 0 and index[before] is None:
    before -= 1
  after, before = index[after], index[before]
  if before is None:
    if after >= 1:
      return 0 if is_start else after - 1
    return after
  if after is None:
    if length is not None and before < length - 1:
      return before + 1 if is_start else length - 1
    return before
  if after > before + 1:
    return before + 1 if is_start else after - 1
  return after if is_start else before


def align_context(context: str, tokenizer: SentencePieceTokenizer) -> Optional[ContextAlignment]:
  """Tokenizes a context and maps each piece to the characters it covers; None if they do not align (Google's
  "MISMATCH": fewer than 80% of the characters matched)."""
  # Google encodes the text as text: "[SEP]" written in a context is not a control token.
  pieces = tokenizer.tokenize(context, special_tokens_in_text=False)
  joined = "".join(pieces).replace(_WORD_START, " ")
  n, m = len(context), len(joined)
  if n == 0 or m == 0:
    return None
  chars = [_normalized_char(char, tokenizer.do_lower_case, tokenizer.keep_accents) for char in context]
  max_dist = abs(n - m) + 5
  for _ in range(2):
    score, rows = _banded_lcs(chars, joined, max_dist)
    if score > 0.8 * n:
      break
    max_dist *= 2
  char_to_piece_char, piece_char_to_char = _trace_alignment(rows, m)
  if score < 0.8 * n or all(value is None for value in char_to_piece_char):
    return None
  piece_char_to_token, token_start_to_char, token_end_to_char = [], [], []
  for token_index, piece in enumerate(pieces):
    first = len(piece_char_to_token)
    piece_char_to_token.extend([token_index] * len(piece))
    token_start_to_char.append(_nearest_aligned(piece_char_to_char, first, n, is_start=True))
    token_end_to_char.append(_nearest_aligned(piece_char_to_char, len(piece_char_to_token) - 1, n, is_start=False))
  return ContextAlignment(tokenizer.convert_tokens_to_ids(pieces), token_start_to_char, token_end_to_char,
                          char_to_piece_char, piece_char_to_token)
