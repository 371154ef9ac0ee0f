"""SavedModels for TF Serving that take ids or raw text.

`export_saved_model` writes `<export_dir>/<version>/` (the layout TF Serving polls) with signatures:

- `serving_default`: `input_word_ids`, `input_mask`, `input_type_ids` int32 `[batch, seq]` →
  `sequence_output`, `pooled_output`.
- `encode_text` (`text_a`) and `encode_text_pair` (`text_a`, `text_b`): strings `[batch]`, tokenized in the
  graph and packed as `[CLS] a [SEP] b [SEP]` (see `TextPacking`: by default to the batch's longest text, at most
  `max_seq_length`) → the same outputs plus the packed ids.
  From Python, `loaded.encode_text(text_a)` and `loaded.encode_text(text_a, text_b)` both work.
- `sentence_embedding` (`text`): a unit-length embedding per text → `embedding` `[batch, D]` (dot products are
  cosine similarities). An `AlbertSentenceEncoder` exports its own pooling (mean, `[CLS]` or max) and
  projection; any other model the mean of the token vectors over real tokens (D = H).
- `fill_mask` (`text` with `[MASK]`s), when the model has its masked-LM head → the top-k tokens and
  probabilities at each mask.

A fine-tuned model exports its task's signatures besides these, from the module its task head names
(`task_heads.TaskHead.serving_module`): a classifier's `classify_text`, a SQuAD model's `answer_question`, ...
(see each task package's `serving`).

Loading needs only TensorFlow and `import tensorflow_text` (for the SentencePiece op), not albert-tf.
The config, the SentencePiece model and its tokenizer options travel along as `assets/albert_config.json`,
`assets/spiece.model` and `assets/spiece.tokenizer_options.json`.
"""

import dataclasses
import os
from typing import Optional

import tensorflow as tf

from albert_tf import files
from albert_tf.errors import OptionError
from albert_tf.modeling import task_heads
from albert_tf.modeling.layers.pooling import SentenceEmbeddingHead
from albert_tf.serving.tracing import graph_function, tracing_as_saving
from albert_tf.text import tokenizer_options
from albert_tf.text.graph_tokenizer import GraphTokenizer, tokenizer_for_model

_TEXT = tf.TensorSpec([None], tf.string)
IDS = tf.TensorSpec([None, None], tf.int32)
TEXT_A = tf.TensorSpec([None], tf.string, name="text_a")
TEXT_B = tf.TensorSpec([None], tf.string, name="text_b")
TEXT_PADDINGS = ("longest", "max_seq_length")
# What a loader reads first and a model server waits for: a SavedModel's folder is complete once this file is in it.
SAVED_MODEL_FILE = "saved_model.pb"


@dataclasses.dataclass(frozen=True)
class TextPacking:
  """How the text signatures pack texts into model inputs.

  Attributes:
    max_seq_length: the longest packed input; longer texts (and pairs) are cut to it as in training.
    padding: "longest" pads each call's batch only to its longest packed text, rounded up to a multiple of
      `pad_to_multiple_of`: a 20-piece sentence costs 24 positions, not `max_seq_length` (a third of the latency
      at 128; docs/export-and-serving.md). "max_seq_length" pads every input to `max_seq_length`, the one
      static shape that TPU serving and XLA want. The outputs at real positions are the same either way.
    pad_to_multiple_of: the widths "longest" pads to are multiples of this, so a server sees few shapes.
  """
  max_seq_length: int
  padding: str = "longest"
  pad_to_multiple_of: int = 8

  def check(self, config):
    """Raises `OptionError` for a length the model cannot take or an unknown padding."""
    config.check_max_seq_length(self.max_seq_length)
    if self.padding not in TEXT_PADDINGS:
      raise OptionError(f"Text padding {self.padding!r} is not one of {', '.join(TEXT_PADDINGS)}.")
    if self.pad_to_multiple_of < 1:
      raise OptionError(f"pad_to_multiple_of={self.pad_to_multiple_of} must be a positive integer.")

  def pack(self, tokenizer: GraphTokenizer, ids_a: tf.RaggedTensor, ids_b: tf.RaggedTensor):
    """The model inputs of tokenized texts (`ids_b` empty rows for single texts)."""
    multiple = self.pad_to_multiple_of if self.padding == "longest" else None
    return tokenizer.pack(ids_a, ids_b, self.max_seq_length, multiple)


class AlbertServingModule(tf.Module):
  """The exported object: an encoder (and MLM head when present) behind text-in signatures.

  Args:
    model: a restored `AlbertEncoder`, `AlbertPretrainer` or `AlbertSentenceEncoder`.
    tokenizer: the `GraphTokenizer` of the model's SentencePiece model and options.
    packing: how text inputs are packed (`TextPacking`).
    fill_mask_top_k: how many candidates `fill_mask` returns at each mask.
    asset_files: files to ship in `assets/`, by name.
    embedding_head: what `sentence_embedding` computes from the token vectors (a sentence encoder's pooling and
      projection); None: the mean over real tokens, L2-normalised.
  """

  def __init__(self, model, tokenizer: GraphTokenizer, packing: TextPacking, fill_mask_top_k: int = 5,
               asset_files: Optional[dict] = None, embedding_head: Optional[SentenceEmbeddingHead] = None):
    super().__init__(name="albert")
    # The Keras layers stay out of the object graph, their variables in it: saving a Keras layer traces each of
    # its sublayers' calls again for Keras's own metadata, which serving never reads (most of an export's time).
    self._untracked(model=model, encoder=getattr(model, "encoder", model),
                    masked_lm_head=getattr(model, "masked_lm_head", None),
                    embedding_head=embedding_head or SentenceEmbeddingHead("mean"))
    self.model_variables = list(model.variables)
    self.tokenizer = tokenizer
    self.packing = packing
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
    return self.packing.pack(self.tokenizer, ids_a, ids_b)

  @graph_function(input_signature=[IDS, IDS, IDS])
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
    return {"embedding": self.embedding_head(self.serve(**inputs)["sequence_output"], inputs["input_mask"])}

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
        "encode_text": self.encode_text.get_concrete_function(TEXT_A),
        "encode_text_pair": self.encode_text.get_concrete_function(TEXT_A, TEXT_B),
        "sentence_embedding": self.sentence_embedding.get_concrete_function(),
    }
    if self.fill_mask is not None:
      signatures["fill_mask"] = self.fill_mask.get_concrete_function()
    return signatures


class ModelOutputsServingModule(AlbertServingModule):
  """`TaskHead.serving_module`'s default: `serving_default` returns the fine-tuned model's outputs on ids
  `[batch, seq]` (a model whose outputs are a dict of tensors, called on the three id inputs), plus the encoder's
  signatures."""

  def __init__(self, model, tokenizer: GraphTokenizer, packing: TextPacking, asset_files: Optional[dict] = None,
               task_options=None):
    del task_options
    super().__init__(model, tokenizer, packing, asset_files=asset_files)

  @graph_function(input_signature=[IDS, IDS, IDS])
  def serve_model(self, input_word_ids, input_mask, input_type_ids):
    return self.model({"input_word_ids": input_word_ids, "input_mask": input_mask,
                       "input_type_ids": input_type_ids}, training=False)

  def signatures(self):
    return dict(super().signatures(), serving_default=self.serve_model.get_concrete_function())


def run_task_options(model, checkpoint_prefix: str):
  """The `task_options` that the run of a fine-tuned model's checkpoint recorded for serving (None for none)."""
  task_head = task_heads.head_of(model)
  if task_head is None or task_head.serving_options_of_run is None:
    return None
  return task_head.serving_options_of_run(checkpoint_prefix)


def next_version(export_dir: str) -> int:
  """One more than the highest numeric version under `export_dir` (local or a bucket; 1 for a new directory)."""
  versions = [int(name) for name in files.list_folder(export_dir) if name.isdigit()]
  return max(versions, default=0) + 1


def export_saved_model(model, export_dir: str, spm_model_file: str, max_seq_length: int,
                       do_lower_case: Optional[bool] = None, keep_accents: Optional[bool] = None,
                       fill_mask_top_k: int = 5, version: Optional[int] = None,
                       task_options=None, text_padding: str = "longest", pad_to_multiple_of: int = 8) -> str:
  """Writes a SavedModel of a restored model to `<export_dir>/<version>` and returns that path.

  The version directory appears whole or not at all (`files.staged_folder`): on local disk the model is saved
  beside it and renamed into place; in a bucket it is saved locally and uploaded with `saved_model.pb` last, the
  file a model server waits for. An existing version is never overwritten.

  Args:
    model: a restored `AlbertEncoder`, `AlbertPretrainer` (`fill_mask` needs its masked-LM head),
      `AlbertSentenceEncoder` (its `sentence_embedding`) or fine-tuned model (with its task head's signatures:
      see `task_heads.TaskHead.serving_module`).
    export_dir: the model's base directory, as TF Serving's `--model_base_path` (local or a bucket).
    spm_model_file: the SentencePiece model the model was trained with.
    max_seq_length: the longest packed text input (at most `max_position_embeddings`).
    do_lower_case, keep_accents: the tokenizer options the model was trained with; None: what is recorded
      beside `spm_model_file` (see `albert_tf.text.tokenizer_options`), which a given value must agree with.
    fill_mask_top_k: candidates per mask in `fill_mask`.
    version: the version number; default one more than the highest present.
    task_options: what a fine-tuned model's signatures need besides the model, as its task head takes them
      (how a SQuAD model's `answer_question` reads; None: its defaults). See `run_task_options`.
    text_padding, pad_to_multiple_of: how the text signatures pad (`TextPacking`): "longest" (the batch's
      longest text, rounded up to a multiple of `pad_to_multiple_of`) or "max_seq_length" (fixed, for TPUs).

  Raises:
    ValueError: a bad length, top-k or version; FileNotFoundError: no SentencePiece model.
  """
  config = model.config
  packing = TextPacking(max_seq_length, text_padding, pad_to_multiple_of)
  packing.check(config)
  options = tokenizer_options.resolve_options(spm_model_file, do_lower_case, keep_accents)
  tokenizer = tokenizer_for_model(config, spm_model_file, options.do_lower_case, options.keep_accents)
  if not 1 <= fill_mask_top_k <= config.vocab_size:
    raise OptionError(f"fill_mask_top_k={fill_mask_top_k} must be between 1 and vocab_size={config.vocab_size}.")
  version = next_version(export_dir) if version is None else version
  if version < 1:
    raise OptionError(f"The export version must be a positive integer, not {version}.")
  version_dir = os.path.join(export_dir, str(version))
  files.check_destination(version_dir, "--export_dir")
  if files.exists(version_dir):
    raise OptionError(f"{version_dir} already exists; choose another version or export_dir.")

  with files.local_temp_folder() as asset_dir:
    config_file = os.path.join(asset_dir, "albert_config.json")
    config.to_json_file(config_file)
    spiece_file = os.path.join(asset_dir, "spiece.model")
    files.copy_file(spm_model_file, spiece_file)
    options_file = tokenizer_options.write_options(spiece_file, options)
    asset_files = {"albert_config.json": config_file, "spiece.model": spiece_file,
                   os.path.basename(options_file): options_file}
    task_head = task_heads.head_of(model)
    if task_head is not None:
      module = (task_head.serving_module or ModelOutputsServingModule)(model, tokenizer, packing, asset_files,
                                                                        task_options)
    else:
      module = AlbertServingModule(model, tokenizer, packing, fill_mask_top_k, asset_files)
    with files.staged_folder(version_dir, SAVED_MODEL_FILE) as staging_dir:
      with tracing_as_saving() as save_options:
        signatures = module.signatures()
      tf.saved_model.save(module, staging_dir, signatures=signatures, options=save_options)
  return version_dir
