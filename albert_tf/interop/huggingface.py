"""Hugging Face model folders: `config.json`, `model.safetensors` and the tokenizer files.

The folder loads with `transformers.AlbertForPreTraining.from_pretrained(folder)` (and `AlbertModel`,
`AlbertForMaskedLM`, ...) with no missing or unexpected weights, in transformers 4.x and 5.x. Weights are
written straight from our variables through `weight_names`, never through Hugging Face's TF1 converter,
which logs unmatched names and leaves those weights random.
"""

import base64
import json
import os
import shutil
import struct
from typing import Dict, Optional

import numpy as np

from albert_tf.errors import DataError
from albert_tf.interop.weight_names import named_weights
from albert_tf.modeling.config import AlbertConfig
from albert_tf.text.tokenizer import (DIACRITICAL_MARKS, SPECIAL_TOKENS, SentencePieceTokenizer,
                                      google_segmentation_model)

# Our activation names -> Hugging Face's (its "gelu" is the exact erf form; Google's is "gelu_new").
_HF_ACTIVATION = {"gelu": "gelu_new", "gelu_new": "gelu_new", "gelu_pytorch_tanh": "gelu_pytorch_tanh",
                  "gelu_exact": "gelu", "relu": "relu", "tanh": "tanh", "linear": "linear"}
_SAFETENSORS_DTYPES = {np.dtype(np.float32): "F32", np.dtype(np.float16): "F16", np.dtype(np.int64): "I64",
                       np.dtype(np.int32): "I32"}
_SAFETENSORS_READ_DTYPES = {"F32": np.dtype("<f4"), "F16": np.dtype("<f2"), "BF16": np.dtype("<u2"),
                            "I64": np.dtype("<i8"), "I32": np.dtype("<i4")}
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
  """Hugging Face `AlbertForPreTraining` (`AlbertForMaskedLM`, `AlbertModel`) tensors of a model, float32.

  Google's code creates no E→H projection when E == H, but Hugging Face always has one: it gets the
  identity matrix and a zero bias, which computes the same function.
  """
  tensors = {}
  for names, variable in named_weights(model):
    value = np.asarray(variable.numpy(), dtype=np.float32)
    tensors[names.hf] = np.ascontiguousarray(value.T if names.transpose_for_hf else value)
  encoder = getattr(model, "encoder", model)
  if encoder.embeddings.projection is None:
    size = encoder.config.hidden_size
    tensors["albert.encoder.embedding_hidden_mapping_in.weight"] = np.eye(size, dtype=np.float32)
    tensors["albert.encoder.embedding_hidden_mapping_in.bias"] = np.zeros([size], np.float32)
  return tensors


def write_safetensors(path: str, tensors: Dict[str, np.ndarray], metadata: Optional[Dict[str, str]] = None):
  """Writes the safetensors format: u64 header size, JSON header, then the raw little-endian tensors."""
  header, offset = {}, 0
  if metadata:
    header["__metadata__"] = metadata
  for name in sorted(tensors):
    array = tensors[name]
    if array.dtype not in _SAFETENSORS_DTYPES:
      raise ValueError(f"Cannot write {name} of dtype {array.dtype} to safetensors.")
    size = array.nbytes
    header[name] = {"dtype": _SAFETENSORS_DTYPES[array.dtype], "shape": list(array.shape),
                    "data_offsets": [offset, offset + size]}
    offset += size
  header_bytes = json.dumps(header, separators=(",", ":")).encode("utf-8")
  header_bytes += b" " * (-len(header_bytes) % 8)  # tensors start 8-byte aligned
  with open(path, "wb") as writer:
    writer.write(struct.pack("<Q", len(header_bytes)))
    writer.write(header_bytes)
    for name in sorted(tensors):
      writer.write(tensors[name].astype(tensors[name].dtype.newbyteorder("<"), copy=False).tobytes())


def read_safetensors(path: str) -> Dict[str, np.ndarray]:
  """Reads a safetensors file: floats (F32, F16, BF16) as float32 arrays, integers as they are."""
  with open(path, "rb") as reader:
    header_size = struct.unpack("<Q", reader.read(8))[0]
    header = json.loads(reader.read(header_size))
    data = reader.read()
  tensors = {}
  for name, entry in header.items():
    if name == "__metadata__":
      continue
    if entry["dtype"] not in _SAFETENSORS_READ_DTYPES:
      raise DataError(f"{path}: cannot read {name} of dtype {entry['dtype']}.")
    start, end = entry["data_offsets"]
    array = np.frombuffer(data[start:end], _SAFETENSORS_READ_DTYPES[entry["dtype"]]).reshape(entry["shape"])
    if entry["dtype"] == "BF16":  # bfloat16 is the top half of a float32
      array = (array.astype(np.uint32) << 16).view(np.float32)
    native = np.float32 if array.dtype.kind == "f" else array.dtype.newbyteorder("=")
    tensors[name] = array.astype(native)  # a writable copy in native byte order
  return tensors


def _special_token(content: str) -> Dict:
  # Hugging Face's [MASK] strips the space before it; all are matched before normalisation.
  return {"content": content, "lstrip": content == "[MASK]", "normalized": False, "rstrip": False,
          "single_word": False, "special": True}


def tokenizer_json(spm_model_file: str, do_lower_case: bool, keep_accents: bool) -> Dict:
  """A `tokenizers` definition that gives exactly `SentencePieceTokenizer`'s ids.

  transformers 5 builds its tokenizer from this file when present. Converting `spiece.model` on the fly
  instead would split words before the unigram model (so user-defined symbols such as "(" segment unlike
  SentencePiece) and strip every combining mark (so NFKD-decomposed Hangul becomes <unk>). Here the
  normaliser is ours, step for step, and the unigram model sees whole text as SentencePiece does.
  """
  proto = google_segmentation_model(spm_model_file)
  vocab = [[piece.piece, piece.score] for piece in proto.pieces]
  unk_id = next(i for i, piece in enumerate(proto.pieces) if piece.type == piece.UNKNOWN)
  normalizers = [
      {"type": "Strip", "strip_left": True, "strip_right": True},
      {"type": "Replace", "pattern": {"Regex": r"\s+"}, "content": " "},
      {"type": "Replace", "pattern": {"String": "``"}, "content": '"'},
      {"type": "Replace", "pattern": {"String": "''"}, "content": '"'},
  ]
  if not keep_accents:
    normalizers += [{"type": "NFKD"}, {"type": "Replace", "pattern": {"Regex": DIACRITICAL_MARKS}, "content": ""},
                    {"type": "NFC"}]
  if do_lower_case:
    normalizers.append({"type": "Lowercase"})
  charsmap = proto.normalizer_spec.precompiled_charsmap
  if charsmap:
    normalizers.append({"type": "Precompiled", "precompiled_charsmap": base64.b64encode(charsmap).decode()})
  normalizers += [{"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "},
                  {"type": "Strip", "strip_left": True, "strip_right": True}]
  ids = {token: i for i, piece in enumerate(proto.pieces) for token in (piece.piece,) if token in SPECIAL_TOKENS}

  def template(*parts):
    return [{"SpecialToken": {"id": part, "type_id": type_id}} if part.startswith("[") else
            {"Sequence": {"id": part, "type_id": type_id}} for part, type_id in parts]

  return {
      "version": "1.0",
      "truncation": None,
      "padding": None,
      "added_tokens": [dict(_special_token(token), id=ids[token]) for token in SPECIAL_TOKENS],
      "normalizer": {"type": "Sequence", "normalizers": normalizers},
      "pre_tokenizer": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": False},
      "post_processor": {
          "type": "TemplateProcessing",
          "single": template(("[CLS]", 0), ("A", 0), ("[SEP]", 0)),
          "pair": template(("[CLS]", 0), ("A", 0), ("[SEP]", 0), ("B", 1), ("[SEP]", 1)),
          "special_tokens": {token: {"id": token, "ids": [ids[token]], "tokens": [token]}
                             for token in ("[CLS]", "[SEP]")},
      },
      "decoder": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": True},
      "model": {"type": "Unigram", "unk_id": unk_id, "vocab": vocab, "byte_fallback": False},
  }


def _write_json(path: str, values: Dict, sort_keys: bool = False):
  with open(path, "w", encoding="utf-8") as writer:
    json.dump(values, writer, indent=2, ensure_ascii=False, sort_keys=sort_keys)
    writer.write("\n")


def _tokenizer_files(spm_model_file: str, output_dir: str, do_lower_case: bool, keep_accents: bool,
                     model_max_length: int):
  """`spiece.model`, `tokenizer.json`, `tokenizer_config.json` and `special_tokens_map.json`."""
  shutil.copyfile(spm_model_file, os.path.join(output_dir, "spiece.model"))
  tokenizer = tokenizer_json(spm_model_file, do_lower_case, keep_accents)
  _write_json(os.path.join(output_dir, "tokenizer.json"), tokenizer)
  tokenizer_config = {
      "added_tokens_decoder": {str(token["id"]): {k: v for k, v in token.items() if k != "id"}
                               for token in tokenizer["added_tokens"]},
      "bos_token": "[CLS]", "cls_token": "[CLS]", "eos_token": "[SEP]", "sep_token": "[SEP]",
      "unk_token": "<unk>", "pad_token": "<pad>", "mask_token": "[MASK]",
      "do_lower_case": do_lower_case, "keep_accents": keep_accents, "remove_space": True,
      "sp_model_kwargs": {}, "model_max_length": model_max_length, "clean_up_tokenization_spaces": False,
      "tokenizer_class": "AlbertTokenizer",
  }
  special_tokens_map = {
      "bos_token": "[CLS]", "cls_token": "[CLS]", "eos_token": "[SEP]", "sep_token": "[SEP]",
      "unk_token": "<unk>", "pad_token": "<pad>",
      "mask_token": {k: v for k, v in _special_token("[MASK]").items() if k != "special"},
  }
  _write_json(os.path.join(output_dir, "tokenizer_config.json"), tokenizer_config)
  _write_json(os.path.join(output_dir, "special_tokens_map.json"), special_tokens_map)


def _architecture_config(model) -> Dict:
  """The transformers class of `model`, and a classifier's labels, for `config.json`."""
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


def export_to_hf(model, output_dir: str, spm_model_file: Optional[str] = None, do_lower_case: bool = True,
                 keep_accents: bool = False) -> Dict[str, str]:
  """Writes a Hugging Face folder for a built `AlbertPretrainer` (with or without its SOP head), encoder,
  `AlbertClassifier` (`AlbertForSequenceClassification`, with its labels) or `AlbertSentenceEncoder` (its encoder).

  Args:
    model: the model, with its weights restored.
    output_dir: created if needed; existing files of the same names are replaced.
    spm_model_file: the SentencePiece model; adds the tokenizer files when given.
    do_lower_case, keep_accents: the tokenizer options the model was trained with.

  Returns:
    The paths written, by file name.
  """
  if spm_model_file:
    SentencePieceTokenizer(spm_model_file)  # fails on a bad model before anything is written
  encoder = getattr(model, "encoder", model)
  os.makedirs(output_dir, exist_ok=True)
  paths = {name: os.path.join(output_dir, name) for name in ("config.json", "model.safetensors")}
  config = dict(hf_config_dict(encoder.config), **_architecture_config(model))
  _write_json(paths["config.json"], config, sort_keys=True)
  write_safetensors(paths["model.safetensors"], hf_state_dict(model), metadata={"format": "pt"})
  if spm_model_file:
    _tokenizer_files(spm_model_file, output_dir, do_lower_case, keep_accents,
                     encoder.config.max_position_embeddings)
    for name in ("spiece.model", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
      paths[name] = os.path.join(output_dir, name)
  return paths
