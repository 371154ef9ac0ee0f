"""SavedModels for TF Serving that take ids or raw text.

`export_saved_model` writes `<export_dir>/<version>/` (the layout TF Serving polls) with signatures:

- `serving_default`: `input_word_ids`, `input_mask`, `input_type_ids` int32 `[batch, seq]` →
  `sequence_output`, `pooled_output`.
- `encode_text` (`text_a`) and `encode_text_pair` (`text_a`, `text_b`): strings `[batch]`, tokenized in the
  graph and packed as `[CLS] a [SEP] b [SEP]` to `max_seq_length` → the same outputs plus the packed ids.
  From Python, `loaded.encode_text(text_a)` and `loaded.encode_text(text_a, text_b)` both work.
- `sentence_embedding` (`text`): a unit-length embedding per text → `embedding` `[batch, D]` (dot products are
  cosine similarities). An `AlbertSentenceEncoder` exports its own pooling (mean, `[CLS]` or max) and
  projection; any other model the mean of the token vectors over real tokens (D = H).
- `fill_mask` (`text` with `[MASK]`s), when the model has its masked-LM head → the top-k tokens and
  probabilities at each mask.

A fine-tuned `AlbertClassifier` exports `classify_text` (`text_a`) and `classify_text_pair` (`text_a`,
`text_b`) → `probabilities`, `predictions` (class ids) and `labels` (their names), or `predictions` (the
score) for a regression; its `serving_default` classifies ids the same way, as Google's export did.

A SQuAD model (`AlbertQuestionAnswerer`, `AlbertQuestionAnswererV2`) exports `answer_question` (`question`,
`context`: strings `[batch]`) → `answer` (the best span, cut from the context as given), `score`, and for v2
`has_answer` and `no_answer_score` (Google's null-score difference; no answer when it is not below the
threshold the evaluation chose); long contexts are read in Google's doc-stride windows (see `answer_spans`).
Its `serving_default` takes ids, as Google's SQuAD export (v2 also `p_mask`). A multiple-choice model's
`serving_default` takes ids `[batch, options, seq]` → `probabilities` and `predictions` over the options.

Loading needs only TensorFlow and `import tensorflow_text` (for the SentencePiece op), not albert-tf.
The config, the SentencePiece model and its tokenizer options travel along as `assets/albert_config.json`,
`assets/spiece.model` and `assets/spiece.tokenizer_options.json`.
"""

import os
import shutil
import tempfile
from typing import Optional

import tensorflow as tf

from albert_tf.errors import OptionError
from albert_tf.modeling.classifier import AlbertClassifier
from albert_tf.modeling.layers.pooling import SentenceEmbeddingHead
from albert_tf.modeling.question_answering import AlbertMultipleChoice, AlbertQuestionAnswerer, AlbertQuestionAnswererV2
from albert_tf.serving import answer_spans
from albert_tf.serving.answer_spans import QuestionAnsweringOptions
from albert_tf.serving.tracing import graph_function, tracing_as_saving
from albert_tf.text import tokenizer_options
from albert_tf.text.graph_tokenizer import GraphTokenizer, tokenizer_for_model

_TEXT = tf.TensorSpec([None], tf.string)
_IDS = tf.TensorSpec([None, None], tf.int32)
_TEXT_A = tf.TensorSpec([None], tf.string, name="text_a")
_TEXT_B = tf.TensorSpec([None], tf.string, name="text_b")
_QUESTION = tf.TensorSpec([None], tf.string, name="question")
_CONTEXT = tf.TensorSpec([None], tf.string, name="context")
_CHOICE_IDS = tf.TensorSpec([None, None, None], tf.int32)


class AlbertServingModule(tf.Module):
  """The exported object: an encoder (and MLM head when present) behind text-in signatures.

  Args:
    model: a restored `AlbertEncoder`, `AlbertPretrainer` or `AlbertSentenceEncoder`.
    tokenizer: the `GraphTokenizer` of the model's SentencePiece model and options.
    max_seq_length: length that text inputs are packed to.
    fill_mask_top_k: how many candidates `fill_mask` returns at each mask.
    asset_files: files to ship in `assets/`, by name.
  """

  def __init__(self, model, tokenizer: GraphTokenizer, max_seq_length: int, fill_mask_top_k: int = 5,
               asset_files: Optional[dict] = None):
    super().__init__(name="albert")
    # The Keras layers stay out of the object graph, their variables in it: saving a Keras layer traces each of
    # its sublayers' calls again for Keras's own metadata, which serving never reads (most of an export's time).
    self._untracked(model=model, encoder=getattr(model, "encoder", model),
                    masked_lm_head=getattr(model, "masked_lm_head", None),
                    sentence_head=getattr(model, "sentence_head", None) or SentenceEmbeddingHead("mean"))
    self.model_variables = list(model.variables)
    self.tokenizer = tokenizer
    self.max_seq_length = max_seq_length
    self.fill_mask_top_k = fill_mask_top_k
    self.assets = {name: tf.saved_model.Asset(path) for name, path in (asset_files or {}).items()}
    # The tokenizer is traced once here and called by every text signature.
    self.tokenize = graph_function(tokenizer.encode, input_signature=[_TEXT])
    # Saving traces every tf.function the module holds, so fill_mask exists only with its head.
    self.fill_mask = None
    if self.masked_lm_head is not None:
      self.fill_mask = graph_function(self._fill_mask, input_signature=[_TEXT])

  def _untracked(self, **attributes):
    """Sets attributes that saving does not follow (tf.Module tracks what is assigned to it)."""
    for name, value in attributes.items():
      object.__setattr__(self, name, value)

  def _pack(self, text_a, text_b=None):
    """The model inputs of texts (pairs when `text_b` is given), tokenized by the one traced tokenizer."""
    ids_a = self.tokenize(text_a)
    ids_b = ids_a[:, :0] if text_b is None else self.tokenize(text_b)
    return self.tokenizer.pack(ids_a, ids_b, self.max_seq_length)

  @graph_function(input_signature=[_IDS, _IDS, _IDS])
  def serve(self, input_word_ids, input_mask, input_type_ids):
    outputs = self.encoder({"input_word_ids": input_word_ids, "input_mask": input_mask,
                            "input_type_ids": input_type_ids}, training=False)
    return {"sequence_output": outputs["sequence_output"], "pooled_output": outputs["pooled_output"]}

  @graph_function()
  def encode_text(self, text_a, text_b=None):
    inputs = self._pack(text_a, text_b)
    return dict(self.serve(**inputs), **inputs)

  @graph_function(input_signature=[_TEXT])
  def sentence_embedding(self, text):
    inputs = self._pack(text)
    return {"embedding": self.sentence_head(self.serve(**inputs)["sequence_output"], inputs["input_mask"])}

  def _fill_mask(self, text):
    """Top-k tokens at each `[MASK]`; slots past a text's `num_masks` have id -1, score 0, token ''."""
    inputs = self._pack(text)
    sequence_output = self.serve(**inputs)["sequence_output"]
    word_ids = inputs["input_word_ids"]
    positions = tf.broadcast_to(tf.range(tf.shape(word_ids)[1]), tf.shape(word_ids))
    mask_positions = tf.ragged.boolean_mask(positions, tf.equal(word_ids, self.tokenizer.mask_id))
    num_masks = tf.cast(mask_positions.row_lengths(), tf.int32)
    mask_positions = mask_positions.to_tensor(0)
    logits = self.masked_lm_head(sequence_output, mask_positions,
                                 embedding_table=self.encoder.get_embedding_table())
    scores, ids = tf.math.top_k(tf.nn.softmax(logits), k=self.fill_mask_top_k)
    is_mask = tf.sequence_mask(num_masks, tf.shape(mask_positions)[1])
    is_candidate = tf.broadcast_to(is_mask[:, :, tf.newaxis], tf.shape(ids))
    ids = tf.where(is_candidate, ids, -1)
    return {
        "mask_positions": tf.where(is_mask, mask_positions, -1),
        "num_masks": num_masks,
        "top_k_ids": ids,
        "top_k_tokens": tf.where(is_candidate, tf.gather(self.tokenizer.vocabulary, tf.maximum(ids, 0)), ""),
        "top_k_scores": tf.where(is_candidate, scores, 0.0),
    }

  def signatures(self):
    """The SavedModel signatures, by name."""
    signatures = {
        "serving_default": self.serve.get_concrete_function(),
        "encode_text": self.encode_text.get_concrete_function(_TEXT_A),
        "encode_text_pair": self.encode_text.get_concrete_function(_TEXT_A, _TEXT_B),
        "sentence_embedding": self.sentence_embedding.get_concrete_function(),
    }
    if self.fill_mask is not None:
      signatures["fill_mask"] = self.fill_mask.get_concrete_function()
    return signatures


class AlbertClassifierServingModule(AlbertServingModule):
  """A fine-tuned `AlbertClassifier` behind text-in classification signatures, plus the encoder's.

  Args:
    model: a restored `AlbertClassifier`.
    tokenizer, max_seq_length, asset_files: as for `AlbertServingModule`.
  """

  def __init__(self, model: AlbertClassifier, tokenizer: GraphTokenizer, max_seq_length: int,
               asset_files: Optional[dict] = None):
    super().__init__(model, tokenizer, max_seq_length, asset_files=asset_files)
    self._untracked(classifier_head=model.classifier_head)
    self.label_names = None if model.is_regression else tf.constant(model.label_names)

  def _classify(self, inputs):
    logits = self.classifier_head(self.serve(**inputs)["pooled_output"], training=False)
    if self.label_names is None:
      return {"predictions": logits[:, 0]}
    predictions = tf.argmax(logits, axis=-1, output_type=tf.int32)
    return {"probabilities": tf.nn.softmax(logits), "predictions": predictions,
            "labels": tf.gather(self.label_names, predictions)}

  @graph_function(input_signature=[_IDS, _IDS, _IDS])
  def classify(self, input_word_ids, input_mask, input_type_ids):
    return self._classify({"input_word_ids": input_word_ids, "input_mask": input_mask,
                           "input_type_ids": input_type_ids})

  @graph_function()
  def classify_text(self, text_a, text_b=None):
    return self.classify(**self._pack(text_a, text_b))

  def signatures(self):
    return dict(super().signatures(), serving_default=self.classify.get_concrete_function(),
                classify_text=self.classify_text.get_concrete_function(_TEXT_A),
                classify_text_pair=self.classify_text.get_concrete_function(_TEXT_A, _TEXT_B))


class AlbertQuestionAnsweringServingModule(AlbertServingModule):
  """A fine-tuned SQuAD model behind `answer_question`, plus the encoder's signatures.

  Args:
    model: a restored `AlbertQuestionAnswerer` or `AlbertQuestionAnswererV2`.
    tokenizer, max_seq_length, asset_files: as for `AlbertServingModule`.
    options: how questions and contexts are read, as in training.
  """

  def __init__(self, model, tokenizer: GraphTokenizer, max_seq_length: int, options: QuestionAnsweringOptions,
               asset_files: Optional[dict] = None):
    super().__init__(model, tokenizer, max_seq_length, asset_files=asset_files)
    options.check(max_seq_length)
    self.options = options
    self.is_v2 = isinstance(model, AlbertQuestionAnswererV2)
    threshold = options.no_answer_threshold
    self.no_answer_threshold = tf.constant(float("inf") if threshold is None else threshold, tf.float32)
    # Saving traces every tf.function the module holds: only the one of this model's inputs exists (v2's
    # head also takes p_mask).
    self.serve_spans = graph_function(self._spans, input_signature=[_IDS] * (4 if self.is_v2 else 3))

  def _spans(self, input_word_ids, input_mask, input_type_ids, p_mask=None):
    inputs = {"input_word_ids": input_word_ids, "input_mask": input_mask, "input_type_ids": input_type_ids}
    if p_mask is not None:
      inputs["p_mask"] = p_mask
    return self.model(inputs, training=False)

  @graph_function(input_signature=[_QUESTION, _CONTEXT])
  def answer_question(self, question, context):
    windows = answer_spans.question_windows(self.tokenizer, question, context, self.max_seq_length, self.options)
    outputs = self.model(windows["inputs"], training=False)
    if not self.is_v2:
      spans = answer_spans.span_scores_v1(windows, outputs["start_logits"], outputs["end_logits"], self.options)
      return answer_spans.best_answers(context, windows, *spans)
    answers = answer_spans.best_answers(context, windows, *answer_spans.span_scores_v2(windows, outputs,
                                                                                        self.options))
    # Google's null score: the lowest no-answer logit over the question's windows.
    no_answer_score = tf.math.unsorted_segment_min(outputs["cls_logits"], windows["example"], tf.shape(question)[0])
    has_answer = (no_answer_score < self.no_answer_threshold) & tf.math.is_finite(answers["score"])
    return dict(answer=tf.where(has_answer, answers["answer"], ""), score=answers["score"], has_answer=has_answer,
                no_answer_score=no_answer_score)

  def signatures(self):
    return dict(super().signatures(), serving_default=self.serve_spans.get_concrete_function(),
                answer_question=self.answer_question.get_concrete_function())


class AlbertMultipleChoiceServingModule(AlbertServingModule):
  """A fine-tuned `AlbertMultipleChoice` whose `serving_default` scores the options, plus the encoder's signatures.

  Args:
    model: a restored `AlbertMultipleChoice`.
    tokenizer, max_seq_length, asset_files: as for `AlbertServingModule`.
  """

  @graph_function(input_signature=[_CHOICE_IDS, _CHOICE_IDS, _CHOICE_IDS])
  def choose(self, input_word_ids, input_mask, input_type_ids):
    logits = self.model({"input_word_ids": input_word_ids, "input_mask": input_mask,
                         "input_type_ids": input_type_ids}, training=False)["logits"]
    return {"probabilities": tf.nn.softmax(logits), "predictions": tf.argmax(logits, axis=-1, output_type=tf.int32)}

  def signatures(self):
    return dict(super().signatures(), serving_default=self.choose.get_concrete_function())


def next_version(export_dir: str) -> int:
  """One more than the highest numeric version under `export_dir` (1 for a new directory)."""
  if not tf.io.gfile.isdir(export_dir):
    return 1
  versions = [int(name.rstrip("/")) for name in tf.io.gfile.listdir(export_dir) if name.rstrip("/").isdigit()]
  return max(versions, default=0) + 1


def export_saved_model(model, export_dir: str, spm_model_file: str, max_seq_length: int,
                       do_lower_case: Optional[bool] = None, keep_accents: Optional[bool] = None,
                       fill_mask_top_k: int = 5, version: Optional[int] = None,
                       question_answering: Optional[QuestionAnsweringOptions] = None) -> str:
  """Writes a SavedModel of a restored model to `<export_dir>/<version>` and returns that path.

  The version directory appears whole or not at all: the model is saved beside it and renamed into place.
  An existing version is never overwritten.

  Args:
    model: a restored `AlbertEncoder`, `AlbertPretrainer` (`fill_mask` needs its masked-LM head),
      `AlbertSentenceEncoder` (its `sentence_embedding`), `AlbertClassifier` (with `classify_text`) or a
      reading-comprehension model.
    export_dir: the model's base directory, as TF Serving's `--model_base_path`.
    spm_model_file: the SentencePiece model the model was trained with.
    max_seq_length: the length text inputs are packed to (at most `max_position_embeddings`).
    do_lower_case, keep_accents: the tokenizer options the model was trained with; None: what is recorded
      beside `spm_model_file` (see `albert_tf.text.tokenizer_options`), which a given value must agree with.
    fill_mask_top_k: candidates per mask in `fill_mask`.
    version: the version number; default one more than the highest present.
    question_answering: how a SQuAD model's `answer_question` reads (default Google's flags' defaults).

  Raises:
    ValueError: a bad length, top-k or version; FileNotFoundError: no SentencePiece model.
  """
  config = model.config
  config.check_max_seq_length(max_seq_length)
  options = tokenizer_options.resolve_options(spm_model_file, do_lower_case, keep_accents)
  tokenizer = tokenizer_for_model(config, spm_model_file, options.do_lower_case, options.keep_accents)
  if not 1 <= fill_mask_top_k <= config.vocab_size:
    raise OptionError(f"fill_mask_top_k={fill_mask_top_k} must be between 1 and vocab_size={config.vocab_size}.")
  version = next_version(export_dir) if version is None else version
  if version < 1:
    raise OptionError(f"The export version must be a positive integer, not {version}.")
  version_dir = os.path.join(export_dir, str(version))
  if tf.io.gfile.exists(version_dir):
    raise OptionError(f"{version_dir} already exists; choose another version or export_dir.")

  tf.io.gfile.makedirs(export_dir)
  with tempfile.TemporaryDirectory() as asset_dir:
    config_file = os.path.join(asset_dir, "albert_config.json")
    config.to_json_file(config_file)
    spiece_file = os.path.join(asset_dir, "spiece.model")
    shutil.copyfile(spm_model_file, spiece_file)
    options_file = tokenizer_options.write_options(spiece_file, options)
    asset_files = {"albert_config.json": config_file, "spiece.model": spiece_file,
                   os.path.basename(options_file): options_file}
    if isinstance(model, AlbertClassifier):
      module = AlbertClassifierServingModule(model, tokenizer, max_seq_length, asset_files)
    elif isinstance(model, (AlbertQuestionAnswerer, AlbertQuestionAnswererV2)):
      module = AlbertQuestionAnsweringServingModule(model, tokenizer, max_seq_length,
                                                    question_answering or QuestionAnsweringOptions(), asset_files)
    elif isinstance(model, AlbertMultipleChoice):
      module = AlbertMultipleChoiceServingModule(model, tokenizer, max_seq_length, asset_files)
    else:
      module = AlbertServingModule(model, tokenizer, max_seq_length, fill_mask_top_k, asset_files)
    staging_dir = os.path.join(export_dir, f".{version}.incomplete")
    if tf.io.gfile.exists(staging_dir):
      tf.io.gfile.rmtree(staging_dir)
    try:
      with tracing_as_saving() as save_options:
        signatures = module.signatures()
      tf.saved_model.save(module, staging_dir, signatures=signatures, options=save_options)
    except BaseException:  # Ctrl-C too: leave nothing half-written behind
      if tf.io.gfile.exists(staging_dir):
        tf.io.gfile.rmtree(staging_dir)
      raise
  tf.io.gfile.rename(staging_dir, version_dir)
  return version_dir
