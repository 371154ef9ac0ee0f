"""Question answering inside the graph: raw question and context in, the best answer span out.

What `features` and `predictions` do in Python for evaluation, as graph ops for the `answer_question`
signature of an exported SavedModel:

1. `question_windows`: the question's pieces (cut at `max_query_length`) and the context's pieces with
   their byte spans; the context is cut into Google's doc-stride windows, each packed as
   `[CLS] question [SEP] window [SEP]`, and every context token is flagged in the window where it has the
   most context on both sides (Google's "max context").
2. `best_spans`: per window, the best candidate span by Google's rules (start and end inside the window's
   context, start at a max-context token, end not before start, at most `max_answer_length` tokens),
   then the best window of each question and that span's text cut from the context as given.
"""

import dataclasses
from typing import Dict, Optional

import tensorflow as tf

from albert_tf.errors import OptionError
from albert_tf.tasks.squad import features as squad_features
from albert_tf.text import korean_analyzers


# The reading settings a SQuAD run records in its task.json (the no-answer threshold is its evaluation's).
READING_SETTINGS = ("max_query_length", "doc_stride", "max_answer_length", "n_best_size", "trim_particles")


@dataclasses.dataclass(frozen=True)
class QuestionAnsweringOptions:
  """How `answer_question` reads, as the run that trained the model (Google's flags).

  Attributes:
    max_query_length: question pieces kept.
    doc_stride: how far each window of a long context moves on.
    max_answer_length: the longest answer, in pieces.
    n_best_size: the best starts and ends considered (SQuAD v1).
    no_answer_threshold: SQuAD v2: a question has no answer when its null-score difference is not below
      this (Google's `null_score_diff_threshold`, the best-F1 threshold of the evaluation); None: always answer.
    trim_particles: the Korean analyzer that cuts each answer's trailing particles (`--trim_particles`, see
      `particles`), or None. The graph cannot run it: `answer_question` gives the span's offsets, and
      `serving.QuestionAnswerer` cuts them in Python as the run's predictions were cut.
  """

  max_query_length: int = 64
  doc_stride: int = 128
  max_answer_length: int = 30
  n_best_size: int = 20
  no_answer_threshold: Optional[float] = None
  trim_particles: Optional[str] = None

  def check(self, max_seq_length: int):
    """Raises OptionError unless the options fit `max_seq_length` (as the features of training must)."""
    squad_features.check_feature_options(max_seq_length, self.doc_stride, self.max_query_length)
    for name in ("max_answer_length", "n_best_size"):
      if getattr(self, name) < 1:
        raise OptionError(f"{name} must be at least 1, not {getattr(self, name)}.")
    if self.trim_particles not in (None,) + korean_analyzers.ANALYZERS:
      raise OptionError(f"trim_particles={self.trim_particles!r}: one of {', '.join(korean_analyzers.ANALYZERS)} "
                        "or None.")


def question_windows(tokenizer, question: tf.Tensor, context: tf.Tensor, max_seq_length: int,
                     options: QuestionAnsweringOptions) -> Dict[str, tf.Tensor]:
  """Google's doc-stride windows of each (question, context) pair, packed for the model.

  Args:
    tokenizer: the model's `GraphTokenizer`.
    question, context: string `[batch]`.
    max_seq_length: the packed length (a Python int).
    options: the reading options.

  Returns:
    Per window `[windows]`: the model inputs (`input_word_ids`, `input_mask`, `input_type_ids`,
    `[windows, max_seq_length]`; SQuAD v2's model derives its `p_mask` from them), `example` (its question's
    index), and per sequence position `in_context` and `is_max_context` (bool) and the token's byte span in
    the context, `token_begin`/`token_end` (int64).
  """
  question_ids = tokenizer.encode(question)[:, :options.max_query_length]
  context_ids, piece_begin, piece_end = tokenizer.encode_with_offsets(context)
  num_tokens = tf.cast(context_ids.row_lengths(), tf.int32)
  question_length = tf.cast(question_ids.row_lengths(), tf.int32)
  # Google's windows: as many context tokens as fit, moving on by min(doc_stride, that many).
  max_window = max_seq_length - question_length - 3
  stride = tf.minimum(max_window, options.doc_stride)
  extra_windows = (tf.maximum(num_tokens - max_window, 0) + stride - 1) // stride
  num_windows = 1 + extra_windows
  example = tf.repeat(tf.range(tf.shape(question)[0]), num_windows)
  window_start = tf.ragged.range(num_windows).flat_values * tf.gather(stride, example)
  window_length = tf.minimum(tf.gather(max_window, example), tf.gather(num_tokens, example) - window_start)

  token_index = tf.ragged.range(window_start, window_start + window_length)  # within the example's context
  flat_index = token_index + tf.gather(tf.cast(context_ids.row_starts(), tf.int32), example)[:, tf.newaxis]
  window_ids = tf.gather(context_ids.flat_values, flat_index)
  inputs = tokenizer.pack(tf.gather(question_ids, example), window_ids, max_seq_length)

  # Max context: a token's score in a window is min(left, right context) + 0.01 × window length; the first
  # window with the best score is the token's (Google's `_check_is_max_context`).
  position = tf.cast(token_index - window_start[:, tf.newaxis], tf.float32)
  length = tf.cast(window_length, tf.float32)[:, tf.newaxis]
  score = tf.minimum(position, length - 1.0 - position) + 0.01 * length
  num_flat = tf.shape(context_ids.flat_values)[0]
  best_score = tf.math.unsorted_segment_max(score.flat_values, flat_index.flat_values, num_flat)
  window_of_token = tf.repeat(tf.range(tf.shape(window_start)[0]), window_length)  # in flat_index's order
  achieving = tf.where(score.flat_values >= tf.gather(best_score, flat_index.flat_values), window_of_token,
                       tf.int32.max)
  first_window = tf.math.unsorted_segment_min(achieving, flat_index.flat_values, num_flat)
  is_max_context = flat_index.with_flat_values(
      tf.equal(tf.gather(first_window, flat_index.flat_values), window_of_token))

  # Per-token values laid out by sequence position: context token j of a window sits at offset + j.
  context_offset = tf.gather(question_length, example) + 2
  shape = [None, max_seq_length]

  def at_positions(values: tf.RaggedTensor, pad):
    dense = values.to_tensor(pad, shape=shape)
    positions = tf.range(max_seq_length)[tf.newaxis, :] - context_offset[:, tf.newaxis]
    return tf.gather(dense, tf.clip_by_value(positions, 0, max_seq_length - 1), batch_dims=1)

  positions = tf.range(max_seq_length)[tf.newaxis, :]
  in_context = (positions >= context_offset[:, tf.newaxis]) & (
      positions < (context_offset + window_length)[:, tf.newaxis])
  return {
      "inputs": inputs,
      "example": example,
      "in_context": in_context,
      "is_max_context": in_context & at_positions(is_max_context, False),
      "token_begin": at_positions(tf.gather(piece_begin.flat_values, flat_index), tf.constant(0, tf.int64)),
      "token_end": at_positions(tf.gather(piece_end.flat_values, flat_index), tf.constant(0, tf.int64)),
  }


def _candidates_by_position(index: tf.Tensor, max_seq_length: int) -> tf.Tensor:
  """bool `[windows, seq]`: the positions among `index` `[windows, k]`."""
  return tf.reduce_any(tf.one_hot(index, max_seq_length, on_value=True, off_value=False, dtype=tf.bool), axis=1)


def span_scores_v1(windows: Dict[str, tf.Tensor], start_logits: tf.Tensor, end_logits: tf.Tensor,
                   options: QuestionAnsweringOptions):
  """SQuAD v1: each window's best span among the `n_best_size` best starts × ends.

  Returns:
    `score` (start + end logit; -inf where a window has no valid span), `start` and `end` positions, each
    `[windows]`.
  """
  max_seq_length = start_logits.shape[1]
  k = min(options.n_best_size, max_seq_length)
  start_ok = windows["is_max_context"] & _candidates_by_position(tf.math.top_k(start_logits, k).indices,
                                                                 max_seq_length)
  end_ok = windows["in_context"] & _candidates_by_position(tf.math.top_k(end_logits, k).indices, max_seq_length)
  positions = tf.range(max_seq_length)
  span_length = positions[tf.newaxis, :] - positions[:, tf.newaxis] + 1  # [start, end]
  allowed = (span_length >= 1) & (span_length <= options.max_answer_length)
  valid = start_ok[:, :, tf.newaxis] & end_ok[:, tf.newaxis, :] & allowed[tf.newaxis]
  scores = tf.where(valid, start_logits[:, :, tf.newaxis] + end_logits[:, tf.newaxis, :], -float("inf"))
  flat = tf.reshape(scores, [-1, max_seq_length * max_seq_length])
  best = tf.argmax(flat, axis=1, output_type=tf.int32)
  return tf.reduce_max(flat, axis=1), best // max_seq_length, best % max_seq_length


def span_scores_v2(windows: Dict[str, tf.Tensor], outputs: Dict[str, tf.Tensor], options: QuestionAnsweringOptions):
  """SQuAD v2: each window's best span in the head's beam (start log-prob + end log-prob), as `span_scores_v1`."""
  start_index = outputs["start_top_index"]
  start_n_top = start_index.shape[1]
  end_n_top = outputs["end_top_index"].shape[1] // start_n_top
  start = tf.repeat(start_index, end_n_top, axis=1)  # [windows, beam], start i's ends at i * end_n_top + j
  start_log_prob = tf.repeat(outputs["start_top_log_probs"], end_n_top, axis=1)
  end = outputs["end_top_index"]
  valid = (tf.gather(windows["is_max_context"], start, batch_dims=1) & tf.gather(windows["in_context"], end,
                                                                                batch_dims=1)
           & (end >= start) & (end - start + 1 <= options.max_answer_length))
  scores = tf.where(valid, start_log_prob + outputs["end_top_log_probs"], -float("inf"))
  best = tf.argmax(scores, axis=1, output_type=tf.int32)
  return (tf.reduce_max(scores, axis=1), tf.gather(start, best, batch_dims=1), tf.gather(end, best, batch_dims=1))


def best_answers(context: tf.Tensor, windows: Dict[str, tf.Tensor], score: tf.Tensor, start: tf.Tensor,
                 end: tf.Tensor) -> Dict[str, tf.Tensor]:
  """Each question's best span over its windows, as text of the context (stripped, as Google's).

  Returns:
    `answer` string `[batch]` ("" where no window has a valid span), `score` float32 `[batch]` (-inf there), and
    `answer_start`, `answer_end` int64 `[batch]`: where `answer` is in the context, in characters (Python's
    `context[answer_start:answer_end]`; 0 and 0 for ""), for what cuts answers outside the graph.
  """
  num_examples = tf.shape(context)[0]
  example = windows["example"]
  best_score = tf.math.unsorted_segment_max(score, example, num_examples)
  window_ids = tf.range(tf.shape(example)[0])
  is_best = tf.equal(score, tf.gather(best_score, example))
  best_window = tf.math.unsorted_segment_min(tf.where(is_best, window_ids, tf.int32.max), example, num_examples)
  best_window = tf.minimum(best_window, tf.shape(example)[0] - 1)
  begin = tf.gather(tf.gather(windows["token_begin"], start, batch_dims=1), best_window)
  finish = tf.gather(tf.gather(windows["token_end"], end, batch_dims=1), best_window)
  # The segment max starts from the lowest finite float, so a question whose windows all score -inf would look
  # found (and cut bytes at a meaningless place): ask whether any window has a span instead.
  found = tf.math.unsorted_segment_max(tf.cast(tf.math.is_finite(score), tf.int32), example, num_examples) > 0
  text = tf.strings.substr(context, tf.cast(begin, tf.int32), tf.cast(tf.maximum(finish - begin, 0), tf.int32))
  answer = tf.where(found, tf.strings.strip(text), "")
  # The bytes that strip took from the front (the ASCII whitespace tf.strings.strip strips), then characters.
  leading = tf.strings.length(text) - tf.strings.length(tf.strings.regex_replace(text, r"^[\t\n\v\f\r ]+", ""))
  start_byte = tf.cast(begin, tf.int32) + leading
  before = tf.strings.substr(context, tf.zeros_like(start_byte), start_byte)
  start_char = tf.cast(tf.strings.length(before, unit="UTF8_CHAR"), tf.int64)
  answer_start = tf.where(tf.equal(answer, ""), tf.zeros_like(start_char), start_char)
  answer_end = answer_start + tf.cast(tf.strings.length(answer, unit="UTF8_CHAR"), tf.int64)
  return {"answer": answer, "score": tf.where(found, best_score, -float("inf")), "answer_start": answer_start,
          "answer_end": answer_end}
