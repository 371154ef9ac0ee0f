"""SQuAD features exactly as Google's ALBERT makes them (`squad_utils.convert_examples_to_features`).

The question is cut to `max_query_length` pieces, the context read in windows of `max_seq_length -
query_length - 3` pieces that advance by `doc_stride`, each `[CLS] question [SEP] window [SEP]`, with, for each
context piece, the characters it covers (`alignment`). Training features keep their `example_index` (Google
sets it to None).
"""

import collections
import dataclasses
import sys
import time
from typing import Dict, List, Optional, Sequence, Tuple

from albert_tf.errors import DataError, OptionError
from albert_tf.tasks.squad.alignment import ContextAlignment, align_context
from albert_tf.tasks.squad.examples import SquadExample
from albert_tf.text.tokenizer import SentencePieceTokenizer

FIRST_UNIQUE_ID = 1000000000  # Google's
_PROGRESS_SECONDS = 10.0

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
    dataset: the file's "data" list as read, which the official evaluation scripts score against (the files'
      lists joined, for a benchmark read from several; see the task's reader).
  """

  examples: List[SquadExample]
  features: List[SquadFeature]
  skipped_answers: int
  dataset: list


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
  alignments: Dict[str, Optional[ContextAlignment]] = {}
  features: List[SquadFeature] = []
  misaligned = 0
  started = last_report = time.time()
  for example_index, example in enumerate(examples):
    context = example.context_text
    if context not in alignments:
      alignments[context] = align_context(context, tokenizer)
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


def _answer_tokens(example: SquadExample, alignment: ContextAlignment) -> Tuple[int, ...]:
  """The first and last token of a training answer; () when its characters have no piece of their own (the
  first maps after the last, where Google's code fails an assertion)."""
  answer_end = example.answer_start + len(example.answer_text) - 1
  if not 0 <= example.answer_start <= answer_end < len(example.context_text):
    raise DataError(f"Question {example.qas_id}: its answer (characters {example.answer_start} to "
                    f"{answer_end}) does not lie in its context of {len(example.context_text)} characters.")
  start, end = alignment.answer_tokens(example.answer_start, answer_end)
  return (start, end) if start <= end else ()


def _example_features(example: SquadExample, example_index: int, alignment: ContextAlignment,
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
