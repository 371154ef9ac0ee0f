"""Sentence embedders: texts in, one float32 row per text out, from whatever holds a sentence encoder.

`saved_model_embedder` runs a SavedModel's `sentence_embedding` signature (ours, or any other whose signature
takes a string vector and returns one embedding per string). `checkpoint_embedder` runs an albert-tf
checkpoint and `hf_folder_embedder` a Hugging Face or sentence-transformers folder, each tokenized in the graph
as our SavedModels are. The tools that consume embeddings (the distillation teacher, `tools/evaluate_sts.py`)
see only `Embedder` callables.
"""

import os
import sys
import time
from typing import Callable, Optional, Sequence, Union

import numpy as np
import tensorflow as tf

from albert_tf import files
from albert_tf.errors import DataError, InputFileError, OptionError
from albert_tf.interop import huggingface
from albert_tf.interop import sentence_transformers_folders as st_folders
from albert_tf.interop.source_tensors import SPM_FILE
from albert_tf.modeling import checkpoints as checkpoint_lib
from albert_tf.modeling.config import AlbertConfig
from albert_tf.modeling.layers.pooling import SentenceEmbeddingHead, TokenPooling
from albert_tf.text import tokenizer_options
from albert_tf.text.graph_tokenizer import GraphTokenizer, tokenizer_for_model

SENTENCE_EMBEDDING_SIGNATURE = "sentence_embedding"
# The length a checkpoint's texts are cut to unless told (at most the model's max_position_embeddings), as
# tools/export_saved_model.py's default.
DEFAULT_MAX_SEQ_LENGTH = 128
_PROGRESS_SECONDS = 10.0

Embedder = Callable[[Sequence[str]], np.ndarray]


def embed_in_batches(embed_batch: Callable[[Sequence[str]], np.ndarray], texts: Sequence[str], batch_size: int,
                     description: str) -> np.ndarray:
  """`embed_batch` over `texts` in batches, as one float32 array `[len(texts), D]`, with progress lines on
  long inputs."""
  rows, start, last_report = [], time.time(), time.time()
  for begin in range(0, len(texts), batch_size):
    rows.append(np.asarray(embed_batch(list(texts[begin:begin + batch_size])), np.float32))
    done = min(begin + batch_size, len(texts))
    if time.time() - last_report > _PROGRESS_SECONDS and done < len(texts):
      last_report = time.time()
      print(f"Embedded {done:,}/{len(texts):,} {description} ({done / (last_report - start):,.0f}/s)",
            file=sys.stderr, flush=True)
  if not rows:
    raise OptionError(f"No {description} to embed.")
  return np.concatenate(rows)


def saved_model_embedder(path: str, batch_size: int = 64) -> Embedder:
  """An embedder of a SavedModel's `sentence_embedding` signature.

  The signature takes one string vector; its output is `embedding` or, for another model's export, its only
  output. Our SavedModels need tensorflow_text's SentencePiece op, which `graph_tokenizer` imports.

  Raises:
    InputFileError: no SavedModel at `path`.
    OptionError: the SavedModel has no `sentence_embedding` signature, or its signature does not fit.
  """
  if not tf.saved_model.contains_saved_model(path):
    raise InputFileError(f"No SavedModel at {path} (a folder with saved_model.pb, e.g. <export_dir>/<version>).")
  loaded = tf.saved_model.load(path)
  if SENTENCE_EMBEDDING_SIGNATURE not in loaded.signatures:
    raise OptionError(f"The SavedModel {path} has no '{SENTENCE_EMBEDDING_SIGNATURE}' signature (it has: "
                      f"{', '.join(sorted(loaded.signatures)) or 'none'}).")
  signature = loaded.signatures[SENTENCE_EMBEDDING_SIGNATURE]
  inputs = signature.structured_input_signature[1]
  outputs = signature.structured_outputs
  if len(inputs) != 1 or next(iter(inputs.values())).dtype != tf.string:
    raise OptionError(f"The '{SENTENCE_EMBEDDING_SIGNATURE}' signature of {path} must take one string vector; "
                      f"it takes {sorted(inputs)}.")
  input_name = next(iter(inputs))
  output_name = "embedding" if "embedding" in outputs else (next(iter(outputs)) if len(outputs) == 1 else None)
  if output_name is None:
    raise OptionError(f"The '{SENTENCE_EMBEDDING_SIGNATURE}' signature of {path} returns {sorted(outputs)}; "
                      "expected 'embedding' or a single output.")

  def embed_batch(texts):
    return signature(**{input_name: tf.constant(texts, tf.string)})[output_name].numpy()

  def embed(texts: Sequence[str]) -> np.ndarray:
    return embed_in_batches(embed_batch, texts, batch_size, f"texts with {path}")

  # The loaded object owns the signature's variables: keep it alive as long as the embedder.
  embed.saved_model = loaded
  return embed


def _encoder_embedder(encoder, head: Callable, tokenizer: GraphTokenizer, max_seq_length: int, batch_size: int,
                      description: str) -> Embedder:
  """An embedder that packs each text alone, `[CLS] text [SEP]`, runs `encoder` and `head(sequence_output,
  input_mask)`.

  A batch is packed to its longest text (at most `max_seq_length`): padding changes no embedding, and short
  texts cost less.
  """

  # No AutoGraph: the tokenizer and the encoder branch on Python values only, and the first batch traces in half
  # the time (2 s rather than 4 s for a tiny model).
  @tf.function(input_signature=[tf.TensorSpec([None], tf.string)], autograph=False)
  def embed_batch(text):
    ids = tokenizer.encode(text)
    inputs = tokenizer.pack(ids, ids[:, :0], max_seq_length, pad_to_multiple_of=1)
    return head(encoder(inputs, training=False)["sequence_output"], inputs["input_mask"])

  def embed(texts: Sequence[str]) -> np.ndarray:
    return embed_in_batches(lambda batch: embed_batch(tf.constant(batch, tf.string)).numpy(), texts, batch_size,
                            description)

  # The encoder and tokenizer own the variables and the SentencePiece model: keep them alive with the embedder.
  embed.encoder, embed.tokenizer = encoder, tokenizer
  return embed


def checkpoint_embedder(albert_config: Union[str, AlbertConfig], checkpoint: str, spm_model_file: str,
                        max_seq_length: Optional[int] = None, do_lower_case: Optional[bool] = None,
                        keep_accents: Optional[bool] = None, batch_size: int = 64) -> Embedder:
  """An embedder of an albert-tf checkpoint: a sentence encoder's own embedding (its pooling and projection,
  from the `task.json` beside it), or for any other model the mean of its encoder's token vectors over real
  tokens, L2-normalised (what its SavedModel's `sentence_embedding` computes).

  Args:
    albert_config: the config the checkpoint was written with, or its `albert_config.json`.
    checkpoint: a checkpoint prefix, or a directory meaning its latest checkpoint.
    spm_model_file: the SentencePiece model the model was trained with.
    max_seq_length: texts are cut to this many tokens, `[CLS]` and `[SEP]` included; default
      `DEFAULT_MAX_SEQ_LENGTH`, or `max_position_embeddings` where that is less.
    do_lower_case, keep_accents: the tokenizer options; None: what is recorded beside `spm_model_file` (see
      `albert_tf.text.tokenizer_options`), which a given value must agree with.
    batch_size: texts run together.

  Raises:
    InputFileError: no config, checkpoint or SentencePiece model where given.
    OptionError: a bad length or tokenizer option; DataError: a vocabulary that is not the model's.
    CheckpointMismatchError: the checkpoint does not fit the config.
  """
  config = AlbertConfig.from_json_file(albert_config) if isinstance(albert_config, str) else albert_config
  if max_seq_length is None:
    max_seq_length = min(DEFAULT_MAX_SEQ_LENGTH, config.max_position_embeddings)
  config.check_max_seq_length(max_seq_length)
  options = tokenizer_options.resolve_options(spm_model_file, do_lower_case, keep_accents)
  tokenizer = tokenizer_for_model(config, spm_model_file, options.do_lower_case, options.keep_accents)
  model, prefix = checkpoint_lib.build_model_for_checkpoint(config, checkpoint)
  head = getattr(model, "sentence_head", None)
  if head is None:
    head = SentenceEmbeddingHead("mean")
  return _encoder_embedder(getattr(model, "encoder", model), head, tokenizer, max_seq_length, batch_size,
                           f"texts with {prefix}")


class _FolderHead(tf.Module):
  """The modules of a sentence-transformers folder after its transformer, as TensorFlow ops."""

  def __init__(self, modules: st_folders.SentenceTransformersHead):
    super().__init__(name="sentence_transformers_head")
    self.pooling = TokenPooling(modules.pooling)
    self.dense = [(tf.constant(layer.kernel), None if layer.bias is None else tf.constant(layer.bias),
                   tf.tanh if layer.activation == "tanh" else tf.identity) for layer in modules.dense]
    self.normalize = modules.normalize

  def __call__(self, sequence_output, input_mask):
    embedding = self.pooling(sequence_output, input_mask)
    for kernel, bias, activation in self.dense:
      embedding = tf.matmul(embedding, kernel)
      embedding = activation(embedding if bias is None else embedding + bias)
    return tf.math.l2_normalize(embedding, axis=-1) if self.normalize else embedding


def hf_folder_embedder(folder: str, max_seq_length: Optional[int] = None, spm_model_file: Optional[str] = None,
                       batch_size: int = 64) -> Embedder:
  """An embedder of a Hugging Face ALBERT folder, as sentence-transformers computes it.

  A folder with `modules.json` (a sentence encoder's `export_hf`, or one sentence-transformers wrote) is
  computed as its modules say: mean, `[CLS]` or max pooling, its Dense modules (tanh or identity) and, where it
  has one, its Normalize module (the embeddings are unit length only then). Any other folder gives the mean of
  the token vectors over real tokens, L2-normalised. The weights are read as `huggingface.convert_hf_folder`
  reads them, and texts are tokenized with the folder's SentencePiece model and recorded options (see
  `albert_tf.text.tokenizer_options`).

  Args:
    folder: the folder.
    max_seq_length: texts are cut to this many tokens, `[CLS]` and `[SEP]` included; default, as
      sentence-transformers: the folder's `sentence_bert_config.json` `max_seq_length`, else its
      `tokenizer_config.json` `model_max_length`, at most `max_position_embeddings`.
    spm_model_file: the SentencePiece model, for a folder without `spiece.model` (transformers 5 saves only
      `tokenizer.json`).
    batch_size: texts run together.

  Raises:
    InputFileError: no folder, config or weights; OptionError: no SentencePiece model, or a bad length.
    DataError: modules albert-tf does not compute (see `st_folders.read_sentence_transformers_head`), or a
      pooling of another width than the model's.
    CheckpointMismatchError, AlbertConfigError: as `huggingface.convert_hf_folder`.
  """
  if not files.is_folder(folder):
    raise InputFileError(f"Hugging Face folder not found: {folder}")
  modules = st_folders.read_sentence_transformers_head(folder)
  if modules is None:
    modules = st_folders.SentenceTransformersHead("mean")
  transformer_dir = os.path.join(folder, modules.transformer_path)
  if spm_model_file is None and not files.file_exists(os.path.join(transformer_dir, SPM_FILE)):
    raise OptionError(f"{transformer_dir} has no {SPM_FILE}: pass the SentencePiece model of its "
                      "tokenizer (--spm_model_file).")
  converted = huggingface.convert_hf_folder(transformer_dir, spm_model_file)
  encoder = getattr(converted.model, "encoder", converted.model)
  config = encoder.config
  if modules.hidden_size not in (None, config.hidden_size):
    raise DataError(f"{folder}: the pooling takes {modules.hidden_size} values per token, but the model's "
                    f"hidden_size is {config.hidden_size}.")
  if max_seq_length is not None:
    config.check_max_seq_length(max_seq_length)
  elif modules.max_seq_length is not None:
    max_seq_length = modules.max_seq_length
    config.check_max_seq_length(max_seq_length, f"max_seq_length in {st_folders.ST_TRANSFORMER_CONFIG}")
  else:
    max_seq_length = min(st_folders.tokenizer_max_length(transformer_dir) or config.max_position_embeddings,
                         config.max_position_embeddings)
  options = converted.tokenizer_options
  tokenizer = tokenizer_for_model(config, converted.spm_model_file, options.do_lower_case or modules.do_lower_case,
                                  options.keep_accents)
  embed = _encoder_embedder(encoder, _FolderHead(modules), tokenizer, max_seq_length, batch_size,
                            f"texts with {folder}")
  embed.sentence_transformers = modules
  return embed
