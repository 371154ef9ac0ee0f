"""Hugging Face model folders: `config.json`, `model.safetensors` and the tokenizer files.

The folder loads with `transformers.AlbertForPreTraining.from_pretrained(folder)` (and `AlbertModel`,
`AlbertForMaskedLM`, ...) with no missing or unexpected weights, in transformers 4.x and 5.x. Weights are
written straight from our variables through `weight_names`, never through Hugging Face's TF1 converter,
which logs unmatched names and leaves those weights random.

A sentence encoder's folder is also a sentence-transformers model (`sentence_transformers_folders`).
"""

import dataclasses
import os
from typing import Dict, Optional, Sequence

import numpy as np

from albert_tf.errors import InputFileError, OptionError
from albert_tf.interop import hf_tokenizer
from albert_tf.interop import sentence_transformers_folders as st_folders
from albert_tf.interop.safetensors_files import write_safetensors
from albert_tf.interop.weight_names import named_weights
from albert_tf.modeling.config import AlbertConfig
from albert_tf.text import tokenizer_options as options_lib
from albert_tf.text.tokenizer import SentencePieceTokenizer

# Our activation names -> Hugging Face's (its "gelu" is the exact erf form; Google's is "gelu_new").
_HF_ACTIVATION = {"gelu": "gelu_new", "gelu_new": "gelu_new", "gelu_pytorch_tanh": "gelu_pytorch_tanh",
                  "gelu_exact": "gelu", "relu": "relu", "tanh": "tanh", "linear": "linear"}
_HF_ONLY_DEFAULTS = {"classifier_dropout_prob": 0.1, "layer_norm_eps": 1e-12, "pad_token_id": 0,
                     "bos_token_id": 2, "eos_token_id": 3}


def hf_config_dict(config: AlbertConfig) -> Dict:
  """`config.json` for `transformers.AlbertConfig`: Google's keys plus Hugging Face's own."""
  values = {key: value for key, value in config.to_dict().items() if key not in ("architectures",)}
  values.update({key: values.get(key, default) for key, default in _HF_ONLY_DEFAULTS.items()})
  values["hidden_act"] = _HF_ACTIVATION[config.hidden_act]
  values["model_type"] = "albert"
  values["architectures"] = ["AlbertForPreTraining"]
  return values


def hf_state_dict(model) -> Dict[str, np.ndarray]:
  """Hugging Face tensors of a model (`AlbertForPreTraining`, `AlbertForMaskedLM`, `AlbertModel`, or the
  fine-tuned classes of `_architecture_config`), float32. A sentence encoder's are its encoder's (`AlbertModel`):
  its projection is a sentence-transformers `Dense` module (see `sentence_transformers_files`).

  Google's code creates no E→H projection when E == H, but Hugging Face always has one: it gets the
  identity matrix and a zero bias, which computes the same function.

  Raises:
    OptionError: a model with weights transformers has no place for (SQuAD v2's XLNet-style head).
  """
  named = named_weights(model)
  without_hf_name = sorted({names.google.split("/")[0] for names, _ in named if names.hf is None})
  if without_hf_name:
    raise OptionError(f"transformers has no ALBERT class for this model's head ({', '.join(without_hf_name)}: "
                      "Google's SQuAD v2 head, from XLNet); export it as a SavedModel "
                      "(tools/export_saved_model.py or --export_dir) instead.")
  # AlbertForQuestionAnswering has no pooler (transformers builds it with add_pooling_layer=False).
  skipped = ("albert.pooler.",) if getattr(model, "squad_head", None) is not None else ()
  tensors = {}
  for names, variable in named:
    if skipped and names.hf.startswith(skipped):
      continue
    value = np.asarray(variable.numpy(), dtype=np.float32)
    tensors[names.hf] = np.ascontiguousarray(value.T if names.transpose_for_hf else value)
  encoder = getattr(model, "encoder", model)
  if encoder.embeddings.projection is None:
    size = encoder.config.hidden_size
    tensors["albert.encoder.embedding_hidden_mapping_in.weight"] = np.eye(size, dtype=np.float32)
    tensors["albert.encoder.embedding_hidden_mapping_in.bias"] = np.zeros([size], np.float32)
  return tensors


def _architecture_config(model) -> Dict:
  """The transformers class of `model`, and a classifier's labels, for `config.json`."""
  if getattr(model, "squad_head", None) is not None:
    return {"architectures": ["AlbertForQuestionAnswering"], "num_labels": 2}
  if getattr(model, "choice_head", None) is not None:
    return {"architectures": ["AlbertForMultipleChoice"], "classifier_dropout_prob": model.dropout_rate}
  if getattr(model, "classifier_head", None) is not None:
    names = model.label_names or ("LABEL_0",)  # a regression's one output
    return {"architectures": ["AlbertForSequenceClassification"],
            "id2label": {str(index): name for index, name in enumerate(names)},
            "label2id": {name: index for index, name in enumerate(names)},
            "problem_type": "regression" if model.is_regression else "single_label_classification",
            "classifier_dropout_prob": model.dropout_rate}
  if getattr(model, "masked_lm_head", None) is None:
    return {"architectures": ["AlbertModel"]}
  return {"architectures": ["AlbertForMaskedLM" if model.sentence_order_head is None else "AlbertForPreTraining"]}


@dataclasses.dataclass
class HfExport:
  """What `export_to_hf` wrote.

  Attributes:
    paths: the files written, by file name (a module's files by their path in the folder, `1_Pooling/...`).
    tokenizer_parity: how well transformers reproduces our ids from the tokenizer files (None without them).
    sentence_transformers: a sentence encoder's modules, written for sentence-transformers (None for another
      model).
  """

  paths: Dict[str, str]
  tokenizer_parity: Optional[hf_tokenizer.ParityReport] = None
  sentence_transformers: Optional[st_folders.SentenceTransformersHead] = None


def export_to_hf(model, output_dir: str, spm_model_file: Optional[str] = None,
                 tokenizer_options: Optional[options_lib.TokenizerOptions] = None,
                 parity_text_files: Sequence[str] = (), max_seq_length: Optional[int] = None) -> HfExport:
  """Writes a Hugging Face folder for a built `AlbertPretrainer` (with or without its SOP head), encoder,
  `AlbertClassifier` (`AlbertForSequenceClassification`, with its labels), `AlbertQuestionAnswerer`
  (`AlbertForQuestionAnswering`), `AlbertMultipleChoice` (`AlbertForMultipleChoice`) or
  `AlbertSentenceEncoder`.

  A sentence encoder's encoder is written as `AlbertModel` (its projection has no place in transformers'
  ALBERT classes), and the folder is also a sentence-transformers model (see `sentence_transformers_files`):
  with the tokenizer files, `SentenceTransformer(output_dir)` computes its embedding.

  Args:
    model: the model, with its weights restored.
    output_dir: created if needed; existing files of the same names are replaced.
    spm_model_file: the SentencePiece model; adds the tokenizer files when given.
    tokenizer_options: the options the model was trained with; default: what is recorded beside
      `spm_model_file` (see `albert_tf.text.tokenizer_options`).
    parity_text_files: text files (a line a text) to measure tokenizer parity on, besides the vocabulary's
      pieces and probe lines; see `hf_tokenizer.write_measured_tokenizer_files`.
    max_seq_length: a sentence encoder's: the length sentence-transformers cuts texts to (`[CLS]` and `[SEP]`
      included); default `max_position_embeddings`.

  Raises:
    OptionError: before anything is written: a head transformers or sentence-transformers cannot hold,
      `max_seq_length` for another model or out of range, another model into a sentence-transformers folder.
  """
  if parity_text_files and not spm_model_file:
    raise OptionError("--parity_text checks the tokenizer files, which need --spm_model_file.")
  if spm_model_file:
    SentencePieceTokenizer(spm_model_file)  # fails on a bad model before anything is written
    tokenizer_options = tokenizer_options or options_lib.resolve_options(spm_model_file)
    for path in parity_text_files:
      if not os.path.isfile(path):
        raise InputFileError(f"--parity_text file not found: {path}")
  encoder = getattr(model, "encoder", model)
  tensors = hf_state_dict(model)  # refuses a head transformers lacks before anything is written
  sentence_head = None
  if getattr(model, "sentence_head", None) is not None:
    sentence_head = st_folders.sentence_encoder_head(model, max_seq_length)
  elif max_seq_length is not None:
    raise OptionError("--max_seq_length is the length sentence-transformers cuts texts to, written for a sentence "
                      "encoder; this model is not one.")
  elif os.path.isfile(os.path.join(output_dir, st_folders.ST_MODULES_FILE)):
    # Its modules.json would go on describing the sentence encoder that was there.
    raise OptionError(f"{output_dir} holds a sentence-transformers model ({st_folders.ST_MODULES_FILE}); choose another "
                      "--output_dir for this model (nothing was written).")
  os.makedirs(output_dir, exist_ok=True)
  paths = {name: os.path.join(output_dir, name) for name in ("config.json", "model.safetensors")}
  config = dict(hf_config_dict(encoder.config), **_architecture_config(model))
  hf_tokenizer.write_json(paths["config.json"], config, sort_keys=True)
  write_safetensors(paths["model.safetensors"], tensors, metadata={"format": "pt"})
  if sentence_head is not None:
    paths.update(st_folders.write_sentence_transformers_files(output_dir, st_folders.sentence_transformers_files(sentence_head)))
  if not spm_model_file:
    return HfExport(paths, sentence_transformers=sentence_head)
  tokenizer_paths, report = hf_tokenizer.write_measured_tokenizer_files(
      spm_model_file, output_dir, tokenizer_options, encoder.config.max_position_embeddings, parity_text_files)
  return HfExport(dict(paths, **tokenizer_paths), report, sentence_head)
