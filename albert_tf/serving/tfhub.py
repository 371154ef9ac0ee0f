"""TF Hub-style exports: an encoder and its preprocessor as two Reusable SavedModels, as TF Hub's ALBERT comes.

`export_tfhub` writes `<export_path>/encoder` and `<export_path>/preprocessor`, which implement TF Hub's
"text embeddings with Transformer encoders" API, so `hub.KerasLayer` loads them and fine-tunes the encoder:

- `encoder`: `__call__(inputs, training=False)` on the dict `input_word_ids`, `input_mask`, `input_type_ids`
  (int32 `[batch, seq]`, any seq up to `max_position_embeddings`) → `pooled_output` `[batch, H]` (also as
  `default`), `sequence_output` `[batch, seq, H]` and `encoder_outputs`, each layer's `[batch, seq, H]`;
  dropout runs only with `training=True`. `variables`, `trainable_variables` and `regularization_losses` are
  the encoder's. With the masked-LM head, `mlm` takes `masked_lm_positions` `[batch, P]` too and adds
  `mlm_logits` `[batch, P, V]`. The `serving_default` signature gives `pooled_output` and `sequence_output`.
- `preprocessor`: `tokenize` (strings `[batch]` → ragged int32 ids `[batch, (tokens)]`, with
  `tokenize.get_special_tokens_dict()`), `bert_pack_inputs` (a list of 1 or 2 tokenized segments, optional
  `seq_length` → the encoder's inputs, pairs cut as Google's `_truncate_seq_pair`) and `__call__` (strings →
  single segments packed to `max_seq_length`). `do_lower_case` and `keep_accents` are boolean variables.

Loading needs only TensorFlow and `import tensorflow_text` (for the SentencePiece op), not albert-tf. The
config travels with the encoder as `assets/albert_config.json`; the SentencePiece model and the tokenizer
options with the preprocessor as `assets/spiece.model` and `assets/spiece.tokenizer_options.json`, the layout
that `albert_tf.text.tokenizer_options` reads.
"""

import dataclasses
import os
from typing import Callable, Optional, Sequence

import tensorflow as tf

from albert_tf import files
from albert_tf.errors import OptionError
from albert_tf.serving.saved_model import SAVED_MODEL_FILE
from albert_tf.serving.tracing import graph_function, tracing_as_saving
from albert_tf.text import tokenizer_options
from albert_tf.text.graph_tokenizer import GraphTokenizer, tokenizer_for_model

INPUT_NAMES = ("input_word_ids", "input_mask", "input_type_ids")
ENCODER_DIR = "encoder"
PREPROCESSOR_DIR = "preprocessor"
SPM_ASSET = "spiece.model"
CONFIG_ASSET = "albert_config.json"
# The files that mark an export complete, uploaded last to a bucket, in this order: each SavedModel is loaded
# from its saved_model.pb, so neither can be loaded half-written; users load the preprocessor before the encoder
# (TF Hub's examples build the text input's preprocessing, then the encoder on its outputs), so the encoder's comes
# last and loading it fails ("no SavedModel") until everything else is there.
COMPLETE_MARKERS = (f"{PREPROCESSOR_DIR}/{SAVED_MODEL_FILE}", f"{ENCODER_DIR}/{SAVED_MODEL_FILE}")

_TEXT = tf.TensorSpec([None], tf.string)
_SEGMENT = tf.RaggedTensorSpec([None, None], tf.int32)
_SEQ_LENGTH = tf.TensorSpec([], tf.int32)


def _ids_spec(name: str) -> tf.TensorSpec:
  return tf.TensorSpec([None, None], tf.int32, name=name)


_ENCODER_INPUTS = {name: _ids_spec(name) for name in INPUT_NAMES}
_MLM_INPUTS = dict(_ENCODER_INPUTS, masked_lm_positions=_ids_spec("masked_lm_positions"))


# tf.train.Checkpoint, not tf.Module: the public trackable object that can hold attributes named `variables`
# and `trainable_variables` (tf.Module computes them as properties, which a SavedModel does not store).
class ReusableCallable(tf.train.Checkpoint):
  """A callable of TF Hub's Reusable SavedModel API: `__call__(inputs, training=False)` and its variables.

  Args:
    call: the computation, `call(inputs, training)`.
    variables: every variable `call` reads; the trainable ones are what fine-tuning updates.
    input_spec: the structure of `inputs`; `__call__` is traced for it with `training` False and True.
  """

  def __init__(self, call: Callable, variables: Sequence[tf.Variable], input_spec):
    super().__init__()
    self.variables = list(variables)
    self.trainable_variables = [variable for variable in variables if variable.trainable]
    self.regularization_losses = []  # ALBERT has no weight regularizers

    def forward(inputs, training=False):
      return call(inputs, training=training)

    self.__call__ = graph_function(forward)
    for training in (False, True):
      self.__call__.get_concrete_function(input_spec, training=training)


class HubEncoder(ReusableCallable):
  """The encoder SavedModel's root: the encoder, its `mlm` callable when the model has the head, the config.

  Args:
    model: a restored `AlbertEncoder`, or a model holding one as `encoder` (`AlbertPretrainer`,
      `AlbertSentenceEncoder`, a fine-tuned model); only a pretrainer's masked-LM head is exported.
    config_file: the model's `albert_config.json`, shipped as an asset.
  """

  def __init__(self, model, config_file: str):
    encoder = getattr(model, "encoder", model)
    super().__init__(lambda inputs, training: _encoder_outputs(encoder(inputs, training=training)),
                     encoder.variables, _ENCODER_INPUTS)
    self.albert_config_file = tf.saved_model.Asset(config_file)
    masked_lm_head = getattr(model, "masked_lm_head", None)
    self.mlm = None
    if masked_lm_head is not None:

      def mlm(inputs, training):
        encoded = encoder({name: inputs[name] for name in INPUT_NAMES}, training=training)
        logits = masked_lm_head(encoded["sequence_output"], inputs["masked_lm_positions"],
                                embedding_table=encoder.get_embedding_table())
        return dict(_encoder_outputs(encoded), mlm_logits=logits)

      self.mlm = ReusableCallable(mlm, encoder.variables + masked_lm_head.variables, _MLM_INPUTS)

    @graph_function(input_signature=[_ids_spec(name) for name in INPUT_NAMES])
    def serve(input_word_ids, input_mask, input_type_ids):
      outputs = encoder({"input_word_ids": input_word_ids, "input_mask": input_mask,
                         "input_type_ids": input_type_ids}, training=False)
      return {"pooled_output": outputs["pooled_output"], "sequence_output": outputs["sequence_output"]}

    self.serve = serve


def _encoder_outputs(outputs):
  """The encoder's outputs under TF Hub's names, with `default` (the API's embedding) = `pooled_output`."""
  return {"default": outputs["pooled_output"], "pooled_output": outputs["pooled_output"],
          "sequence_output": outputs["sequence_output"], "encoder_outputs": outputs["encoder_outputs"]}


class HubPreprocessor(tf.train.Checkpoint):
  """The preprocessor SavedModel's root: `__call__`, `tokenize` and `bert_pack_inputs` over one tokenizer.

  Args:
    tokenizer: the model's `GraphTokenizer`.
    max_seq_length: the length `__call__` packs to, and `bert_pack_inputs`' default.
    spm_model_file, options_file: the SentencePiece model and its tokenizer options, shipped as assets.
  """

  def __init__(self, tokenizer: GraphTokenizer, max_seq_length: int, spm_model_file: str, options_file: str):
    super().__init__()
    self.graph_tokenizer = tokenizer  # tracked: it holds the SentencePiece model the functions use
    self.sp_model_file = tf.saved_model.Asset(spm_model_file)
    self.tokenizer_options_file = tf.saved_model.Asset(options_file)
    self.do_lower_case = tf.Variable(tokenizer.do_lower_case, trainable=False, name="do_lower_case")
    self.keep_accents = tf.Variable(tokenizer.keep_accents, trainable=False, name="keep_accents")

    self.tokenize = tf.train.Checkpoint()
    self.tokenize.__call__ = graph_function(tokenizer.encode, input_signature=[_TEXT])
    special_tokens = {"vocab_size": tokenizer.vocab_size, "start_of_sequence_id": tokenizer.cls_id,
                      "end_of_segment_id": tokenizer.sep_id, "padding_id": tokenizer.pad_id,
                      "mask_id": tokenizer.mask_id}
    self.tokenize.get_special_tokens_dict = tf.train.Checkpoint()
    self.tokenize.get_special_tokens_dict.__call__ = graph_function(
        lambda: {name: tf.constant(value, tf.int32) for name, value in special_tokens.items()}, input_signature=[])

    def bert_pack_inputs(segments, seq_length=max_seq_length):
      return tokenizer.pack(segments[0], segments[1] if len(segments) == 2 else segments[0][:, :0], seq_length)

    self.bert_pack_inputs = tf.train.Checkpoint()
    self.bert_pack_inputs.__call__ = graph_function(bert_pack_inputs)
    for num_segments in (1, 2):
      self.bert_pack_inputs.__call__.get_concrete_function([_SEGMENT] * num_segments, seq_length=_SEQ_LENGTH)

    self.__call__ = graph_function(lambda sentences: tokenizer.encode_and_pack(sentences, None, max_seq_length),
                                   input_signature=[_TEXT])


@dataclasses.dataclass(frozen=True)
class HubExport:
  """What `export_tfhub` wrote."""

  encoder_dir: str
  preprocessor_dir: str
  has_mlm: bool
  tokenizer_options: tokenizer_options.TokenizerOptions


def export_tfhub(model, export_path: str, spm_model_file: str, max_seq_length: int = 128,
                 do_lower_case: Optional[bool] = None, keep_accents: Optional[bool] = None) -> HubExport:
  """Writes `<export_path>/encoder` and `<export_path>/preprocessor` for TF Hub (see the module docstring).

  `export_path` appears whole or not at all (`files.staged_folder`): on local disk both SavedModels are written
  beside it and renamed into place; in a bucket they are written locally and uploaded, the `COMPLETE_MARKERS` last.
  An existing `export_path` is never overwritten.

  Args:
    model: a restored `AlbertEncoder`, `AlbertPretrainer` (`mlm` needs its masked-LM head),
      `AlbertSentenceEncoder` or fine-tuned model (their encoder is exported).
    export_path: the directory to create (local or a bucket).
    spm_model_file: the SentencePiece model the model was trained with.
    max_seq_length: what the preprocessor's `__call__` packs to (at most `max_position_embeddings`).
    do_lower_case, keep_accents: the tokenizer options; None means what is recorded beside `spm_model_file`
      (see `albert_tf.text.tokenizer_options.resolve_options`).

  Raises:
    OptionError: an existing export path, a bad length, options that contradict the record.
    InputFileError, DataError: no SentencePiece model, or not the model's vocabulary.
  """
  config = model.config
  export_path = export_path.rstrip("/")
  files.check_destination(export_path, "--export_path")
  if files.exists(export_path):
    raise OptionError(f"{export_path} already exists; choose another export path (an export is never overwritten).")
  config.check_max_seq_length(max_seq_length)
  options = tokenizer_options.resolve_options(spm_model_file, do_lower_case, keep_accents)
  tokenizer = tokenizer_for_model(config, spm_model_file, options.do_lower_case, options.keep_accents)

  with files.local_temp_folder() as asset_dir:
    config_file = os.path.join(asset_dir, CONFIG_ASSET)
    config.to_json_file(config_file)
    spiece_file = os.path.join(asset_dir, SPM_ASSET)
    files.copy_file(spm_model_file, spiece_file)
    options_file = tokenizer_options.write_options(spiece_file, options)
    with files.staged_folder(export_path, *COMPLETE_MARKERS) as staging_dir:
      # The callables trace their variants as they are built: under saving's context, so that each is traced once.
      with tracing_as_saving() as save_options:
        encoder = HubEncoder(model, config_file)
        signatures = {"serving_default": encoder.serve.get_concrete_function()}
      tf.saved_model.save(encoder, os.path.join(staging_dir, ENCODER_DIR), signatures=signatures,
                          options=save_options)
      with tracing_as_saving() as save_options:
        preprocessor = HubPreprocessor(tokenizer, max_seq_length, spiece_file, options_file)
      tf.saved_model.save(preprocessor, os.path.join(staging_dir, PREPROCESSOR_DIR), options=save_options)
  return HubExport(os.path.join(export_path, ENCODER_DIR), os.path.join(export_path, PREPROCESSOR_DIR),
                   has_mlm=encoder.mlm is not None, tokenizer_options=options)
