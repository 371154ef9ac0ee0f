"""SQuAD v1.1 and v2.0: examples read from the official JSON, and features exactly as Google's ALBERT makes them.

Features follow Google's `squad_utils.convert_examples_to_features`: the question cut to `max_query_length`
pieces, the context in windows of `max_seq_length - query_length - 3` pieces that advance by `doc_stride`,
`[CLS] question [SEP] window [SEP]`, and for each context piece the characters it covers, found by aligning
the context's characters with the concatenated pieces (a longest-common-subsequence alignment in a band
around the diagonal). The alignment is computed once per distinct context (Google's, once per question).

Deliberate differences from Google's code:
  * Preprocessing is `SentencePieceTokenizer`'s, which keeps non-Latin combining marks (see its module) and
    turns `` and '' into " (Hugging Face's rule; Google's `preprocess_text` keeps them). So Hangul aligns
    here: Google's per-character comparison sees each syllable as its decomposed jamo, which never equals a
    character of the pieces, so its offsets in mixed text are interpolated and a mostly Korean context is a
    "MISMATCH" that yields no features at all.
  * A training answer is taken from the context: the text at its `answer_start`, without the whitespace
    around it. Google maps an answer with a trailing space to one more token (the space belongs to the next
    piece); here the positions cover the answer's own pieces.
  * A training answer whose text is not at its `answer_start` is skipped and counted (the BERT reference's
    check), and feature files are a cache checked against the settings that made them.
  * Training features keep their `example_index` (Google sets it to None).

The feature file holds Google's features (`unique_ids`, `input_ids`, `input_mask`, `segment_ids`, `p_mask`
and, for training, `start_positions`, `end_positions`, `is_impossible`), which Google's `input_fn_builder`
reads, plus what rebuilds a `SquadFeature` without tokenizing again (`example_index`, `doc_span_index`,
`query_length`, `token_start_to_char`, `token_end_to_char`, `token_is_max_context`).
"""

import collections
import dataclasses
import functools
import hashlib
import json
import os
import re
import sys
import time
import unicodedata
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np
import tensorflow as tf

from albert_tf.errors import DataError, InputFileError, OptionError
from albert_tf.files import file_exists, partial_path, read_bytes, write_atomically
from albert_tf.text.tokenizer import SentencePieceTokenizer, preprocess_text

FIRST_UNIQUE_ID = 1000000000  # Google's
_WORD_START = "\u2581"
_PROGRESS_SECONDS = 10.0
_CACHE_FORMAT = 1  # bump when the feature file's layout changes, so older caches are rebuilt
_READ_BATCH = 1024
# Read back from the cache (p_mask and segment_ids follow from the rest).
_SCALAR_RECORD_FEATURES = ("unique_ids", "example_index", "doc_span_index", "query_length")
_TRAINING_RECORD_FEATURES = ("start_positions", "end_positions", "is_impossible")
_TOKEN_RECORD_FEATURES = ("token_start_to_char", "token_end_to_char", "token_is_max_context")


@dataclasses.dataclass(frozen=True)
class SquadExample:
  """One question about one context.

  Attributes:
    qas_id: the question's id in the file (the key of the predictions the official scripts score).
    question_text: the question.
    context_text: the paragraph.
    answer_text: the first answer, as the context writes it at its offset, without surrounding whitespace;
      "" when the question is unanswerable or has no answer in the file.
    answer_start: the character offset of `answer_text` in `context_text`; -1 when impossible or unknown.
    is_impossible: a SQuAD v2.0 question without an answer (always False for v1.1).
    gold_answers: every answer text in the file, for scoring; () when unanswerable.
  """

  qas_id: str
  question_text: str
  context_text: str
  answer_text: str
  answer_start: int
  is_impossible: bool
  gold_answers: Tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class SquadFeature:
  """One window of one example: the model's input and the way back to the context's characters.

  Attributes:
    unique_id: Google's: 1000000000, 1000000001, ... in creation order.
    example_index: the example's index in the list the features were made from.
    doc_span_index: the window's index among the example's windows.
    input_ids: `[CLS] question [SEP] window [SEP]`, unpadded.
    query_length: the question's pieces after the `max_query_length` cut.
    token_start_to_char: for each context token of the window, the first character it covers.
    token_end_to_char: for each context token of the window, the last character it covers.
    token_is_max_context: for each context token of the window, whether this window gives it the most
      context on both sides (each token has exactly one such window).
    start_position: the sequence position of the answer's first token; 0 when impossible, out of the
      window, or not training.
    end_position: the sequence position of the answer's last token (0 likewise).
    is_impossible: the example's, or True for a training window that does not hold the whole answer.
  """

  unique_id: int
  example_index: int
  doc_span_index: int
  input_ids: Tuple[int, ...]
  query_length: int
  token_start_to_char: Tuple[int, ...]
  token_end_to_char: Tuple[int, ...]
  token_is_max_context: Tuple[bool, ...]
  start_position: int
  end_position: int
  is_impossible: bool

  @property
  def context_offset(self) -> int:
    """The sequence position of the first context token (after `[CLS]`, the question and `[SEP]`)."""
    return self.query_length + 2

  def input_mask(self, max_seq_length: int) -> List[int]:
    """1 for real tokens, 0 for padding."""
    return [1] * len(self.input_ids) + [0] * (max_seq_length - len(self.input_ids))

  def segment_ids(self, max_seq_length: int) -> List[int]:
    """0 for `[CLS] question [SEP]` and padding, 1 for the window and its `[SEP]`."""
    second = len(self.input_ids) - self.context_offset
    return [0] * self.context_offset + [1] * second + [0] * (max_seq_length - len(self.input_ids))

  def p_mask(self, max_seq_length: int) -> List[int]:
    """Google's: 0 where an answer may start or end (`[CLS]` and the context tokens), 1 elsewhere."""
    context_length = len(self.token_start_to_char)
    padding = max_seq_length - len(self.input_ids)
    return [0] + [1] * (self.query_length + 1) + [0] * context_length + [1] * (1 + padding)

  def padded_input_ids(self, max_seq_length: int) -> List[int]:
    """`input_ids` followed by 0s up to `max_seq_length`."""
    return list(self.input_ids) + [0] * (max_seq_length - len(self.input_ids))


@dataclasses.dataclass
class SquadSplit:
  """A SQuAD file read and converted.

  Attributes:
    examples: every question of the file (training answers that do not match their text left out).
    features: the model's windows of the examples.
    skipped_answers: training answers whose text is not at their `answer_start`.
    dataset: the file's "data" list as read, which the official evaluation scripts score against.
  """

  examples: List[SquadExample]
  features: List[SquadFeature]
  skipped_answers: int
  dataset: list


# Reading.


def read_squad_examples(input_file: str, is_training: bool,
                        version_2_with_negative: bool) -> Tuple[List[SquadExample], list, int]:
  """Reads a SQuAD JSON file.

  Args:
    input_file: the file (local or gs://).
    is_training: a training file: each answerable question needs exactly one answer, and answers whose
      text is not at their `answer_start` are skipped (counted, one line on stderr).
    version_2_with_negative: SQuAD v2.0: a question's `is_impossible` is read (v1.1 files have none).

  Returns:
    (the examples, the file's "data" list, the number of training answers skipped).

  Raises:
    InputFileError: the file does not exist.
    DataError: the file is empty, not UTF-8, not JSON, not of SQuAD's layout, holds no questions, breaks
      the training rules above, or every training answer is skipped.
  """
  return _parse_squad(input_file, _read_input(input_file), is_training, version_2_with_negative)


def count_questions(input_file: str, with_answers: bool = False) -> int:
  """The number of questions in a SQuAD file (all, or only those with at least one answer), for the number of
  training steps and whether predictions can be scored.

  Raises:
    InputFileError, DataError: as `read_squad_examples` raises them when predicting.
  """
  examples, _, _ = read_squad_examples(input_file, is_training=False, version_2_with_negative=False)
  return sum(1 for example in examples if example.gold_answers or not with_answers)


def _read_input(input_file: str) -> bytes:
  if not file_exists(input_file):
    raise InputFileError(f"SQuAD file not found: {input_file}")
  return read_bytes(input_file)


def _parse_squad(input_file: str, raw: bytes, is_training: bool,
                 version_2_with_negative: bool) -> Tuple[List[SquadExample], list, int]:
  try:
    text = raw.decode("utf-8").removeprefix("\ufeff")
  except UnicodeDecodeError as error:
    raise DataError(f"{input_file}: not UTF-8 ({error.reason} {raw[error.start:error.end]!r} at byte "
                    f"{error.start}).") from None
  if not text.strip():
    raise DataError(f"{input_file} is empty.")
  try:
    document = json.loads(text)
  except json.JSONDecodeError as error:
    raise DataError(f"{input_file}: not valid JSON at line {error.lineno}, column {error.colno} "
                    f"({error.msg}).") from None
  if not isinstance(document, dict) or not isinstance(document.get("data"), list):
    raise DataError(f'{input_file}: no "data" list at the top level; not a SQuAD file.')
  dataset = document["data"]
  examples, answers_checked, skipped = [], 0, 0
  for article_index, article in enumerate(dataset):
    where = f"{input_file}: data[{article_index}]"
    if not isinstance(article, dict) or not isinstance(article.get("paragraphs"), list):
      raise DataError(f'{where} has no "paragraphs" list.')
    for paragraph_index, paragraph in enumerate(article["paragraphs"]):
      where = f"{input_file}: data[{article_index}].paragraphs[{paragraph_index}]"
      if not isinstance(paragraph, dict) or not isinstance(paragraph.get("context"), str):
        raise DataError(f'{where} has no "context" text.')
      if not isinstance(paragraph.get("qas"), list):
        raise DataError(f'{where} has no "qas" list.')
      for qa_index, qa in enumerate(paragraph["qas"]):
        example = _read_question(f"{where}.qas[{qa_index}]", input_file, paragraph["context"], qa, is_training,
                                 version_2_with_negative)
        if example is None:
          skipped += 1
        else:
          examples.append(example)
        if is_training and (example is None or not example.is_impossible):
          answers_checked += 1
  if not examples and not skipped:
    raise DataError(f"{input_file} holds no questions.")
  if skipped:
    print(f"{skipped:,} of {answers_checked:,} training answers do not match the text at their answer_start "
          "and were skipped (as the official scripts warn).", file=sys.stderr, flush=True)
    if not examples:
      raise DataError(f"{input_file}: no training answer matches the text at its answer_start.")
  return examples, dataset, skipped


def _read_question(where: str, input_file: str, context: str, qa: object, is_training: bool,
                   version_2_with_negative: bool) -> Optional[SquadExample]:
  """One qa of a paragraph; None for a training question whose answer is not at its offset."""
  if not isinstance(qa, dict) or not isinstance(qa.get("id"), str):
    # The official scripts look predictions up by the id as a string.
    raise DataError(f'{where} has no "id" string.')
  qas_id = qa["id"]
  if not isinstance(qa.get("question"), str):
    raise DataError(f'{input_file}: question {qas_id} has no "question" text.')
  is_impossible = False
  if version_2_with_negative:
    is_impossible = qa.get("is_impossible", False)
    if not isinstance(is_impossible, bool):
      raise DataError(f'{input_file}: question {qas_id} has an "is_impossible" that is not true or false.')
  answers = qa.get("answers", [])
  if not isinstance(answers, list) or not all(
      isinstance(answer, dict) and isinstance(answer.get("text"), str) and type(answer.get("answer_start")) is int
      for answer in answers):
    raise DataError(f'{input_file}: question {qas_id} needs an "answers" list of {{"text", "answer_start"}} '
                    "objects (answer_start an integer).")
  if is_training and not is_impossible and len(answers) != 1:
    hint = ("; a SQuAD v2.0 file with unanswerable questions needs version_2_with_negative"
            if not answers and not version_2_with_negative else "")
    raise DataError(f"{input_file}: question {qas_id} has {len(answers)} answers; training needs exactly one "
                    f"per answerable question{hint}.")
  if is_impossible or not answers:
    return SquadExample(qas_id, qa["question"], context, "", -1, is_impossible, ())
  gold_answers = tuple(answer["text"] for answer in answers)
  answer_text, answer_start = _answer_in_context(context, answers[0]["text"], answers[0]["answer_start"])
  if answer_start < 0:
    if is_training:
      return None
    # Prediction answers are only scored: keep the file's, trimmed.
    answer_text = answers[0]["text"].strip()
    answer_start = answers[0]["answer_start"] + len(answers[0]["text"]) - len(answers[0]["text"].lstrip())
  return SquadExample(qas_id, qa["question"], context, answer_text, answer_start, False, gold_answers)


def _answer_in_context(context: str, text: str, start: int) -> Tuple[str, int]:
  """The context's text at the answer, trimmed, and its offset; ("", -1) when it is not the answer's text.

  As the BERT reference compares, whitespace runs count as one space on both sides.
  """
  end = start + len(text)
  if start < 0 or end > len(context) or not text.strip():
    return "", -1
  span = context[start:end]
  if span.split() != text.split():
    return "", -1
  return span.strip(), start + len(span) - len(span.lstrip())


# The alignment of a context's characters with its pieces.


@dataclasses.dataclass(frozen=True)
class _ContextAlignment:
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


def _align_context(context: str, tokenizer: SentencePieceTokenizer) -> Optional[_ContextAlignment]:
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
  return _ContextAlignment(tokenizer.convert_tokens_to_ids(pieces), token_start_to_char, token_end_to_char,
                           char_to_piece_char, piece_char_to_token)


# Features.


def check_feature_options(max_seq_length: int, doc_stride: int, max_query_length: int) -> None:
  """Raises OptionError unless the question keeps a piece, every window holds a context token, and windows
  advance."""
  if max_query_length < 1:
    raise OptionError(f"max_query_length must be at least 1, not {max_query_length}.")
  if max_seq_length <= max_query_length + 3:
    raise OptionError(f"max_seq_length ({max_seq_length}) must exceed max_query_length + 3 "
                      f"({max_query_length} + 3 = {max_query_length + 3}): [CLS], two [SEP] and the question "
                      "leave no room for the context.")
  if doc_stride < 1:
    raise OptionError(f"doc_stride must be at least 1, not {doc_stride}.")


def _doc_windows(num_tokens: int, max_tokens_for_doc: int, doc_stride: int) -> List[Tuple[int, int]]:
  """Google's sliding windows (start, length) over a context's tokens, the last one reaching its end."""
  windows, start = [], 0
  while True:
    length = min(num_tokens - start, max_tokens_for_doc)
    windows.append((start, length))
    if start + length == num_tokens:
      return windows
    start += min(length, doc_stride)


def _max_context_windows(windows: List[Tuple[int, int]], num_tokens: int) -> List[int]:
  """For each token, the window where it has the most context (Google's `_check_is_max_context`): the largest
  min(left, right) context, plus 0.01 × the window's length; the first such window on ties."""
  best_window = [0] * num_tokens
  best_score: List[Optional[float]] = [None] * num_tokens
  for window_index, (start, length) in enumerate(windows):
    end = start + length - 1
    for position in range(start, end + 1):
      score = min(position - start, end - position) + 0.01 * length
      if best_score[position] is None or score > best_score[position]:
        best_score[position], best_window[position] = score, window_index
  return best_window


def convert_examples_to_features(examples: Sequence[SquadExample], tokenizer: SentencePieceTokenizer,
                                 max_seq_length: int, doc_stride: int, max_query_length: int,
                                 is_training: bool) -> List[SquadFeature]:
  """Google's features of SQuAD examples: one per window of each example's context.

  Examples whose context does not align with its pieces are skipped, as Google's "MISMATCH DETECTED" does,
  and so are training examples whose answer has no piece of its own (Google fails an assertion there); they
  are counted on one stderr line. Progress goes to stderr every ~10 s.

  Args:
    examples: from `read_squad_examples`.
    tokenizer: the model's tokenizer.
    max_seq_length: the length of `[CLS] question [SEP] window [SEP]`.
    doc_stride: how far each window moves past the start of the one before.
    max_query_length: the question's pieces beyond this are cut.
    is_training: give answer positions; windows that do not hold the whole answer become impossible.

  Returns:
    The features, with unique ids from 1000000000 in order.

  Raises:
    OptionError: the lengths leave no room for the context, or doc_stride < 1.
    DataError: a training example whose answer does not lie in its context.
  """
  check_feature_options(max_seq_length, doc_stride, max_query_length)
  # Questions of one paragraph follow each other: an alignment is kept until its context's last question.
  uses_left = collections.Counter(example.context_text for example in examples)
  alignments: Dict[str, Optional[_ContextAlignment]] = {}
  features: List[SquadFeature] = []
  misaligned = 0
  started = last_report = time.time()
  for example_index, example in enumerate(examples):
    context = example.context_text
    if context not in alignments:
      alignments[context] = _align_context(context, tokenizer)
    alignment = alignments[context]
    uses_left[context] -= 1
    if not uses_left[context]:
      del alignments[context]
    answer_tokens = None
    if alignment is not None and is_training and not example.is_impossible:
      answer_tokens = _answer_tokens(example, alignment)
    if alignment is None or answer_tokens == ():
      misaligned += 1
    else:
      features.extend(_example_features(example, example_index, alignment, answer_tokens, tokenizer,
                                        max_seq_length, doc_stride, max_query_length, FIRST_UNIQUE_ID + len(features)))
    if time.time() - last_report > _PROGRESS_SECONDS and example_index + 1 < len(examples):
      last_report = time.time()
      print(f"SQuAD features: {example_index + 1:,}/{len(examples):,} examples, {len(features):,} features "
            f"({(example_index + 1) / (last_report - started):,.0f} examples/s)", file=sys.stderr, flush=True)
  if misaligned:
    print(f"{misaligned:,} of {len(examples):,} examples skipped: fewer than 80% of their context's characters "
          "align with its pieces (Google's MISMATCH), or their answer's characters have no piece.",
          file=sys.stderr, flush=True)
  return features


def _answer_tokens(example: SquadExample, alignment: _ContextAlignment) -> Tuple[int, ...]:
  """The first and last token of a training answer; () when its characters have no piece of their own (the
  first maps after the last, where Google's code fails an assertion)."""
  answer_end = example.answer_start + len(example.answer_text) - 1
  if not 0 <= example.answer_start <= answer_end < len(example.context_text):
    raise DataError(f"Question {example.qas_id}: its answer (characters {example.answer_start} to "
                    f"{answer_end}) does not lie in its context of {len(example.context_text)} characters.")
  start, end = alignment.answer_tokens(example.answer_start, answer_end)
  return (start, end) if start <= end else ()


def _example_features(example: SquadExample, example_index: int, alignment: _ContextAlignment,
                      answer_tokens: Optional[Tuple[int, ...]], tokenizer: SentencePieceTokenizer,
                      max_seq_length: int, doc_stride: int, max_query_length: int,
                      first_unique_id: int) -> List[SquadFeature]:
  """The windows of one example; `answer_tokens` (first, last) for an answerable training example, else None."""
  query_ids = tokenizer.convert_tokens_to_ids(
      tokenizer.tokenize(example.question_text, special_tokens_in_text=False))[:max_query_length]
  num_tokens = len(alignment.token_ids)
  windows = _doc_windows(num_tokens, max_seq_length - len(query_ids) - 3, doc_stride)
  max_context_window = _max_context_windows(windows, num_tokens)
  context_offset = len(query_ids) + 2
  features = []
  for window_index, (start, length) in enumerate(windows):
    end = start + length
    start_position = end_position = 0
    is_impossible = example.is_impossible
    if answer_tokens is not None:
      if start <= answer_tokens[0] and answer_tokens[1] < end:
        start_position = answer_tokens[0] - start + context_offset
        end_position = answer_tokens[1] - start + context_offset
      else:
        is_impossible = True
    features.append(SquadFeature(
        unique_id=first_unique_id + window_index,
        example_index=example_index,
        doc_span_index=window_index,
        input_ids=tuple([tokenizer.cls_id] + query_ids + [tokenizer.sep_id] + alignment.token_ids[start:end] +
                        [tokenizer.sep_id]),
        query_length=len(query_ids),
        token_start_to_char=tuple(alignment.token_start_to_char[start:end]),
        token_end_to_char=tuple(alignment.token_end_to_char[start:end]),
        token_is_max_context=tuple(window == window_index for window in max_context_window[start:end]),
        start_position=start_position,
        end_position=end_position,
        is_impossible=is_impossible))
  return features


# The feature cache.


def load_or_create_features(input_file: str, tokenizer: SentencePieceTokenizer, max_seq_length: int,
                            doc_stride: int, max_query_length: int, is_training: bool,
                            version_2_with_negative: bool, feature_file: str,
                            feature_left_file: Optional[str] = None) -> SquadSplit:
  """Reads a SQuAD file, and its features from `feature_file` when that was made with the same settings.

  The examples are always read from the JSON (scoring needs them). The features are read from
  `feature_file` when `<feature_file>.json` records the same settings (the lengths, is_training, the SQuAD
  version, the tokenizer's options and model, the input file's size and sha256); otherwise, or when the
  file is corrupt, they are made again and written, each file to a temporary name renamed into place.

  `feature_left_file` is Google's flag for the prediction features' metadata (Google pickles them). Here
  the feature file already holds everything, so it is only written, as JSON lines (one feature each:
  unique_id, example_index, doc_span_index, query_length and the per-token maps), for tools that read it.

  Args:
    input_file: the SQuAD JSON file.
    tokenizer: the model's tokenizer.
    max_seq_length: see `convert_examples_to_features`.
    doc_stride: see `convert_examples_to_features`.
    max_query_length: see `convert_examples_to_features`.
    is_training: see `read_squad_examples`.
    version_2_with_negative: see `read_squad_examples`.
    feature_file: the TFRecord file of the features (Google's `--train_feature_file` or
      `--predict_feature_file`).
    feature_left_file: optional JSON-lines file of the features' metadata (Google's
      `--predict_feature_left_file`).

  Returns:
    The examples, the features, the number of training answers skipped and the file's "data" list.

  Raises:
    OptionError, InputFileError, DataError: as `read_squad_examples` and `convert_examples_to_features`
      raise them, before anything is written.
  """
  check_feature_options(max_seq_length, doc_stride, max_query_length)
  raw = _read_input(input_file)
  examples, dataset, skipped = _parse_squad(input_file, raw, is_training, version_2_with_negative)
  settings = {
      "cache_format": _CACHE_FORMAT,
      "max_seq_length": max_seq_length,
      "doc_stride": doc_stride,
      "max_query_length": max_query_length,
      "is_training": is_training,
      "version_2_with_negative": version_2_with_negative,
      "do_lower_case": tokenizer.do_lower_case,
      "keep_accents": tokenizer.keep_accents,
      "spm_model_sha256": hashlib.sha256(tokenizer.sp_model.serialized_model_proto()).hexdigest(),
      "input_file_size": len(raw),
      "input_file_sha256": hashlib.sha256(raw).hexdigest(),
  }
  features = _cached_features(feature_file, settings, examples, max_seq_length, is_training)
  if features is None:
    features = convert_examples_to_features(examples, tokenizer, max_seq_length, doc_stride, max_query_length,
                                            is_training)
    _write_cache(feature_file, settings, features, max_seq_length, is_training)
    print(f"Wrote {len(features):,} features of {len(examples):,} examples to {feature_file}.", file=sys.stderr,
          flush=True)
    if feature_left_file:
      _write_left_file(feature_left_file, features)
  elif feature_left_file and not tf.io.gfile.exists(feature_left_file):
    _write_left_file(feature_left_file, features)
  return SquadSplit(examples, features, skipped, dataset)


def _settings_file(feature_file: str) -> str:
  return feature_file + ".json"


def _cached_features(feature_file: str, settings: dict, examples: List[SquadExample], max_seq_length: int,
                     is_training: bool) -> Optional[List[SquadFeature]]:
  """The features of the cache when its settings are `settings`, else None (with a line saying why)."""
  settings_file = _settings_file(feature_file)
  if not (tf.io.gfile.exists(settings_file) and tf.io.gfile.exists(feature_file)):
    return None
  try:
    with tf.io.gfile.GFile(settings_file, "r") as reader:
      recorded = json.load(reader)
  except (json.JSONDecodeError, UnicodeDecodeError):
    recorded = None
  if not isinstance(recorded, dict):
    print(f"{settings_file} cannot be read; rebuilding the features.", file=sys.stderr, flush=True)
    return None
  changed = [_describe_change(name, recorded.get(name), value) for name, value in settings.items()
             if recorded.get(name) != value]
  if changed:
    print(f"Rebuilding {feature_file}: {', '.join(changed)} changed.", file=sys.stderr, flush=True)
    return None
  try:
    features = _read_records(feature_file, examples, max_seq_length, is_training)
  except (tf.errors.OpError, ValueError) as error:
    # TF's message is wrapped in op details: "{{function_node ...}} corrupted record at 2296 [Op:...]".
    reason = re.sub(r"\{\{.*?\}\}\s*|\s*\[Op:.*$", "", str(error)) or type(error).__name__
    print(f"The cached features {feature_file} are corrupt ({reason}); rebuilding them.", file=sys.stderr,
          flush=True)
    return None
  if len(features) != recorded.get("num_features"):
    print(f"The cached features {feature_file} hold {len(features):,} features, not "
          f"{recorded.get('num_features')}; rebuilding them.", file=sys.stderr, flush=True)
    return None
  print(f"Read {len(features):,} features from {feature_file} (made with the same settings).", file=sys.stderr,
        flush=True)
  return features


def _describe_change(name: str, old: object, new: object) -> str:
  if name.endswith("sha256"):
    return name
  return f"{name} ({old} → {new})"


def _write_cache(feature_file: str, settings: dict, features: List[SquadFeature], max_seq_length: int,
                 is_training: bool) -> None:
  """Writes the feature file, then its settings: a crash in between leaves no settings, so no stale cache."""
  directory = os.path.dirname(feature_file)
  if directory:
    tf.io.gfile.makedirs(directory)
  settings_file = _settings_file(feature_file)
  if tf.io.gfile.exists(settings_file):
    tf.io.gfile.remove(settings_file)
  partial = partial_path(feature_file)
  try:
    with tf.io.TFRecordWriter(partial) as writer:
      for feature in features:
        writer.write(_feature_record(feature, max_seq_length, is_training))
    tf.io.gfile.rename(partial, feature_file, overwrite=True)
  finally:
    if tf.io.gfile.exists(partial):
      tf.io.gfile.remove(partial)
  write_atomically(settings_file, json.dumps(dict(settings, num_features=len(features)), indent=2) + "\n")


def _write_left_file(path: str, features: List[SquadFeature]) -> None:
  lines = [json.dumps({"unique_id": feature.unique_id, "example_index": feature.example_index,
                       "doc_span_index": feature.doc_span_index, "query_length": feature.query_length,
                       "token_start_to_char": feature.token_start_to_char,
                       "token_end_to_char": feature.token_end_to_char,
                       "token_is_max_context": feature.token_is_max_context}) + "\n" for feature in features]
  write_atomically(path, "".join(lines))


def _feature_record(feature: SquadFeature, max_seq_length: int, is_training: bool) -> bytes:
  values = {
      "unique_ids": [feature.unique_id],
      "input_ids": feature.padded_input_ids(max_seq_length),
      "input_mask": feature.input_mask(max_seq_length),
      "segment_ids": feature.segment_ids(max_seq_length),
      "p_mask": feature.p_mask(max_seq_length),
  }
  if is_training:
    values.update(start_positions=[feature.start_position], end_positions=[feature.end_position],
                  is_impossible=[int(feature.is_impossible)])
  values.update(example_index=[feature.example_index], doc_span_index=[feature.doc_span_index],
                query_length=[feature.query_length], token_start_to_char=feature.token_start_to_char,
                token_end_to_char=feature.token_end_to_char,
                token_is_max_context=[int(flag) for flag in feature.token_is_max_context])
  example = tf.train.Example(features=tf.train.Features(feature={
      name: tf.train.Feature(int64_list=tf.train.Int64List(value=value)) for name, value in values.items()}))
  return example.SerializeToString()


def _read_records(feature_file: str, examples: List[SquadExample], max_seq_length: int,
                  is_training: bool) -> List[SquadFeature]:
  """The features of a feature file; tf.errors for a corrupt one, ValueError for one that does not fit."""
  spec = {name: tf.io.FixedLenFeature([max_seq_length], tf.int64) for name in ("input_ids", "input_mask")}
  scalars = _SCALAR_RECORD_FEATURES + (_TRAINING_RECORD_FEATURES if is_training else ())
  spec.update({name: tf.io.FixedLenFeature([], tf.int64) for name in scalars})
  spec.update({name: tf.io.RaggedFeature(tf.int64) for name in _TOKEN_RECORD_FEATURES})

  def parse(records):
    parsed = tf.io.parse_example(records, spec)
    for name in _TOKEN_RECORD_FEATURES:
      ragged = parsed.pop(name)
      parsed[name], parsed[name + "_splits"] = ragged.values, ragged.row_splits
    return parsed

  features = []
  for batch in tf.data.TFRecordDataset(feature_file).batch(_READ_BATCH).map(parse).as_numpy_iterator():
    lengths = batch["input_mask"].sum(axis=1)
    token_maps = {name: np.split(batch[name], batch[name + "_splits"][1:-1]) for name in _TOKEN_RECORD_FEATURES}
    for row in range(len(lengths)):
      example_index = int(batch["example_index"][row])
      if not 0 <= example_index < len(examples):
        raise ValueError(f"example_index {example_index} is not that of an example of the file")
      features.append(SquadFeature(
          unique_id=int(batch["unique_ids"][row]),
          example_index=example_index,
          doc_span_index=int(batch["doc_span_index"][row]),
          input_ids=tuple(batch["input_ids"][row, :lengths[row]].tolist()),
          query_length=int(batch["query_length"][row]),
          token_start_to_char=tuple(token_maps["token_start_to_char"][row].tolist()),
          token_end_to_char=tuple(token_maps["token_end_to_char"][row].tolist()),
          token_is_max_context=tuple(bool(flag) for flag in token_maps["token_is_max_context"][row]),
          start_position=int(batch["start_positions"][row]) if is_training else 0,
          end_position=int(batch["end_positions"][row]) if is_training else 0,
          is_impossible=(bool(batch["is_impossible"][row]) if is_training else
                         examples[example_index].is_impossible)))
  return features
