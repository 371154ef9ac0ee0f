"""A fine-tuned SQuAD model's SavedModel: `answer_question` (`question`, `context`: strings `[batch]`) →
`answer` (the best span, cut from the context as given), `answer_start` and `answer_end` (where it is in the
context, in characters), `score`, and for v2 `has_answer` and `no_answer_score` (Google's null-score difference;
no answer when it is not below the threshold the evaluation chose); long contexts are read in Google's doc-stride
windows (see `answer_spans`). Its `serving_default` takes ids, as Google's SQuAD export (v2 also `p_mask`).

A run with `--trim_particles` cut its answers' trailing particles with a Korean analyzer, which cannot run in the
graph (and a suffix table without it would cut 나이 to 나): the SavedModel records the analyzer's name
(`trim_particles`, "" for none), `answer` stays the model's span, and `QuestionAnswerer` cuts it in Python as
the run's predictions were cut."""

import os
from typing import Dict, Optional, Sequence

import numpy as np
import tensorflow as tf

from albert_tf.modeling import checkpoints as checkpoint_lib
from albert_tf.serving.saved_model import IDS, AlbertServingModule, TextPacking
from albert_tf.serving.tracing import graph_function
from albert_tf.tasks.squad import answer_spans
from albert_tf.tasks.squad import particles
from albert_tf.tasks.squad import reading_tasks
from albert_tf.tasks.squad.answer_spans import READING_SETTINGS, QuestionAnsweringOptions
from albert_tf.tasks.squad.model import AlbertQuestionAnswererV2
from albert_tf.text.graph_tokenizer import GraphTokenizer
from albert_tf.training import run_directory

_QUESTION = tf.TensorSpec([None], tf.string, name="question")
_CONTEXT = tf.TensorSpec([None], tf.string, name="context")


class AlbertQuestionAnsweringServingModule(AlbertServingModule):
  """A fine-tuned SQuAD model behind `answer_question`, plus the encoder's signatures.

  Args:
    model: a restored `AlbertQuestionAnswerer` or `AlbertQuestionAnswererV2`.
    tokenizer, packing, asset_files: as for `AlbertServingModule`.
    options: how questions and contexts are read, as in training.
  """

  def __init__(self, model, tokenizer: GraphTokenizer, packing: TextPacking, options: QuestionAnsweringOptions,
               asset_files: Optional[dict] = None):
    super().__init__(model, tokenizer, packing, asset_files=asset_files)
    options.check(packing.max_seq_length)
    self.options = options
    self.is_v2 = isinstance(model, AlbertQuestionAnswererV2)
    threshold = options.no_answer_threshold
    self.no_answer_threshold = tf.constant(float("inf") if threshold is None else threshold, tf.float32)
    # Saved with the model, for `QuestionAnswerer`: the analyzer that cuts the answers' particles, "" for none.
    self.trim_particles = tf.Variable(options.trim_particles or "", trainable=False, name="trim_particles")
    # Saving traces every tf.function the module holds: only the one of this model's inputs exists (v2's
    # head also takes p_mask).
    self.serve_spans = graph_function(self._spans, input_signature=[IDS] * (4 if self.is_v2 else 3))

  def _spans(self, input_word_ids, input_mask, input_type_ids, p_mask=None):
    inputs = {"input_word_ids": input_word_ids, "input_mask": input_mask, "input_type_ids": input_type_ids}
    if p_mask is not None:
      inputs["p_mask"] = p_mask
    return self.model(inputs, training=False)

  @graph_function(input_signature=[_QUESTION, _CONTEXT])
  def answer_question(self, question, context):
    windows = answer_spans.question_windows(self.tokenizer, question, context, self.packing.max_seq_length,
                                            self.options)
    outputs = self.model(windows["inputs"], training=False)
    if not self.is_v2:
      spans = answer_spans.span_scores_v1(windows, outputs["start_logits"], outputs["end_logits"], self.options)
      return answer_spans.best_answers(context, windows, *spans)
    answers = answer_spans.best_answers(context, windows, *answer_spans.span_scores_v2(windows, outputs,
                                                                                        self.options))
    # Google's null score: the lowest no-answer logit over the question's windows.
    no_answer_score = tf.math.unsorted_segment_min(outputs["cls_logits"], windows["example"], tf.shape(question)[0])
    has_answer = (no_answer_score < self.no_answer_threshold) & tf.math.is_finite(answers["score"])
    no_offset = tf.zeros_like(answers["answer_start"])
    return dict(answer=tf.where(has_answer, answers["answer"], ""), score=answers["score"], has_answer=has_answer,
                no_answer_score=no_answer_score, answer_start=tf.where(has_answer, answers["answer_start"], no_offset),
                answer_end=tf.where(has_answer, answers["answer_end"], no_offset))

  def signatures(self):
    return dict(super().signatures(), serving_default=self.serve_spans.get_concrete_function(),
                answer_question=self.answer_question.get_concrete_function())


def serving_module(model, tokenizer: GraphTokenizer, packing: TextPacking, asset_files: Optional[dict],
                   task_options: Optional[QuestionAnsweringOptions] = None) -> AlbertQuestionAnsweringServingModule:
  """`task_heads.TaskHead.serving_module`: `task_options` says how questions are read (default Google's flags'
  defaults)."""
  return AlbertQuestionAnsweringServingModule(model, tokenizer, packing,
                                              task_options or QuestionAnsweringOptions(), asset_files)


def run_serving_options(checkpoint_prefix: str) -> Optional[QuestionAnsweringOptions]:
  """How `answer_question` should read for a checkpoint of a SQuAD run: the settings in the run's task.json
  and, for v2, the threshold of its best evaluation; None when the directory holds no SQuAD run."""
  run_dir = os.path.dirname(checkpoint_prefix)
  info = checkpoint_lib.read_task_info(checkpoint_prefix)
  task = reading_tasks.task_of_run(info.get("task"))
  if task is None:
    return None
  best = run_directory.read_best_info(run_dir) or {}
  return QuestionAnsweringOptions(
      **{name: info[name] for name in READING_SETTINGS if name in info},
      no_answer_threshold=best.get("null_score_diff_threshold") if task.version == 2 else None)


class QuestionAnswerer:
  """A loaded SQuAD SavedModel's `answer_question`, with each answer's trailing particles cut as its run cut them
  (`--trim_particles`, recorded in the SavedModel): the answers of the run's predictions.json for the same
  passages. The analyzer is loaded once here (a second or more): keep the instance.

  Args:
    loaded: `tf.saved_model.load(<export>/<version>)` of a SQuAD model.

  Raises:
    OptionError: the recorded analyzer's package (the korean extra) is missing.
  """

  def __init__(self, loaded):
    self._answer_question = loaded.signatures["answer_question"]
    name = loaded.trim_particles.numpy().decode("utf-8") if hasattr(loaded, "trim_particles") else ""
    self.trimmer = particles.ParticleTrimmer(name) if name else None

  def __call__(self, question: Sequence[str], context: Sequence[str]) -> Dict[str, np.ndarray]:
    """`answer_question`'s outputs as NumPy arrays; `answer` (UTF-8 bytes, as the signature's) and `answer_end`
    without the trailing particles when the run cut them."""
    outputs = {name: value.numpy() for name, value in
               self._answer_question(question=tf.constant(list(question)), context=tf.constant(list(context))).items()}
    if self.trimmer is not None:
      ends = [self.trimmer.answer_end(text, int(start), int(end)) if end > start else int(end)
              for text, start, end in zip(context, outputs["answer_start"], outputs["answer_end"])]
      outputs["answer"] = np.array([text[start:end].encode("utf-8") for text, start, end in
                                    zip(context, outputs["answer_start"], ends)], dtype=object)
      outputs["answer_end"] = np.array(ends, outputs["answer_end"].dtype)
    return outputs
