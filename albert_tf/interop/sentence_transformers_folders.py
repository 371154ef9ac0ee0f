"""sentence-transformers folders, written and read.

`huggingface.export_to_hf` writes a sentence encoder's folder as a sentence-transformers model too:
`modules.json` chains the `AlbertModel` in the folder's root with its pooling, projection and normalisation, in
the configuration files sentence-transformers has read since its 2.x releases (a projection's weights,
safetensors, need 3.0.1 or later), so `SentenceTransformer(folder)` computes our `sentence_embedding`.
`read_sentence_transformers_head` reads such a folder's modules back, ours or one sentence-transformers wrote.
"""

import dataclasses
import json
import os
from typing import Dict, Optional, Sequence, Tuple

import numpy as np

from albert_tf import files
from albert_tf.errors import DataError, OptionError
from albert_tf.interop.hf_weight_files import read_hf_weights, write_safetensors
from albert_tf.modeling.layers.pooling import POOLING_MODES

# sentence-transformers' files. The module types are the names its releases have always written
# (`sentence_transformers.models.*`); releases since 5.4, which moved the classes, still load them.
ST_MODULES_FILE = "modules.json"
ST_TRANSFORMER_CONFIG = "sentence_bert_config.json"
ST_MODEL_CONFIG = "config_sentence_transformers.json"
_ST_MODULE_TYPE = "sentence_transformers.models.{}"
# Pooling's configuration: one flag per mode, as every release reads it (5.x writes a `pooling_mode` string,
# which releases before it do not know); the first three are `TokenPooling`'s modes.
_ST_POOLING_FLAGS = {"mean": "pooling_mode_mean_tokens", "cls": "pooling_mode_cls_token",
                     "max": "pooling_mode_max_tokens", "mean_sqrt_len_tokens": "pooling_mode_mean_sqrt_len_tokens",
                     "weightedmean": "pooling_mode_weightedmean_tokens", "lasttoken": "pooling_mode_lasttoken"}
# Dense's activations (PyTorch class paths, as sentence-transformers writes them) by our activation names.
_ST_ACTIVATIONS = {"tanh": "torch.nn.modules.activation.Tanh", "linear": "torch.nn.modules.linear.Identity"}
_ST_ACTIVATION_NAMES = {path.rsplit(".", 1)[-1]: name for name, path in _ST_ACTIVATIONS.items()}
_ST_EMBEDDING = "sentence_embedding"


@dataclasses.dataclass(frozen=True)
class DenseLayer:
  """One sentence-transformers `Dense` module: `activation(x @ kernel + bias)`.

  Attributes:
    kernel: float32 `[in, out]`, our layout (PyTorch's `linear.weight` is its transpose).
    bias: float32 `[out]`; None for a layer without one.
    activation: "tanh" or "linear".
  """

  kernel: np.ndarray
  bias: Optional[np.ndarray]
  activation: str


@dataclasses.dataclass(frozen=True)
class SentenceTransformersHead:
  """What a sentence-transformers folder computes from its transformer's token vectors, and how it cuts texts.

  Attributes:
    pooling: one of `TokenPooling`'s modes ("mean", "cls", "max").
    dense: the `Dense` modules after the pooling, in order.
    normalize: whether a `Normalize` module makes the embeddings unit length.
    max_seq_length: the length texts are cut to, `[CLS]` and `[SEP]` included; None where the folder does not
      say (sentence-transformers then takes the tokenizer's `model_max_length`).
    do_lower_case: whether sentence-transformers lower-cases texts before the tokenizer prepares them.
    transformer_path: the transformer's folder, relative to the model's ("" for the model's own folder).
    hidden_size: the width of the token vectors the pooling takes; None where the folder does not say.
  """

  pooling: str
  dense: Tuple[DenseLayer, ...] = ()
  normalize: bool = True
  max_seq_length: Optional[int] = None
  do_lower_case: bool = False
  transformer_path: str = ""
  hidden_size: Optional[int] = None

  def describe(self) -> str:
    """E.g. "mean pooling, Dense 768→256 tanh, normalised"."""
    parts = [f"{self.pooling} pooling"]
    parts += [f"Dense {layer.kernel.shape[0]}→{layer.kernel.shape[1]} {layer.activation}" for layer in self.dense]
    return ", ".join(parts + ["normalised" if self.normalize else "not normalised"])


def dense_module(layer) -> DenseLayer:
  """The sentence-transformers `Dense` module of a built Keras `Dense` layer (a sentence head's projection).

  Raises:
    OptionError: an activation sentence-transformers cannot compute (other than tanh or none).
  """
  activation = getattr(layer.activation, "__name__", repr(layer.activation))
  if activation not in _ST_ACTIVATIONS:
    raise OptionError(f"The sentence encoder's projection has the activation {activation!r}; a "
                      f"sentence-transformers Dense module is written for {', '.join(_ST_ACTIVATIONS)} only.")
  bias = np.asarray(layer.bias.numpy(), np.float32) if layer.use_bias else None
  return DenseLayer(np.asarray(layer.kernel.numpy(), np.float32), bias, activation)


def sentence_transformers_files(head: SentenceTransformersHead) -> Dict[str, object]:
  """The sentence-transformers files of `head`, by path in the folder: JSON values, and each `Dense` module's
  tensors (`linear.weight` `[out, in]`, `linear.bias`).

  The transformer is the folder's own `AlbertModel` (`modules.json` path ""); `do_lower_case` is false, as
  the tokenizer files lower-case where the model was trained so.
  """
  modules = [("Transformer", ""), ("Pooling", "1_Pooling")]
  contents = {
      ST_MODEL_CONFIG: {"model_type": "SentenceTransformer", "prompts": {}, "default_prompt_name": None,
                        "similarity_fn_name": "cosine"},
      ST_TRANSFORMER_CONFIG: {"max_seq_length": head.max_seq_length, "do_lower_case": head.do_lower_case},
      "1_Pooling/config.json": dict({"word_embedding_dimension": head.hidden_size},
                                    **{flag: mode == head.pooling for mode, flag in _ST_POOLING_FLAGS.items()}),
  }
  for layer in head.dense:
    path = f"{len(modules)}_Dense"
    contents[f"{path}/config.json"] = {"in_features": layer.kernel.shape[0], "out_features": layer.kernel.shape[1],
                                    "bias": layer.bias is not None,
                                    "activation_function": _ST_ACTIVATIONS[layer.activation]}
    tensors = {"linear.weight": np.ascontiguousarray(layer.kernel.T)}
    if layer.bias is not None:
      tensors["linear.bias"] = layer.bias
    contents[f"{path}/model.safetensors"] = tensors
    modules.append(("Dense", path))
  if head.normalize:
    modules.append(("Normalize", f"{len(modules)}_Normalize"))  # no files: its folder only, as the library's
  contents[ST_MODULES_FILE] = [{"idx": index, "name": str(index), "path": path, "type": _ST_MODULE_TYPE.format(kind)}
                            for index, (kind, path) in enumerate(modules)]
  return contents


def write_sentence_transformers_files(output_dir: str, contents: Dict[str, object]) -> Dict[str, str]:
  """Writes `sentence_transformers_files(...)` into `output_dir`, each module in its folder; returns the paths
  by name."""
  for entry in contents[ST_MODULES_FILE]:
    files.make_folders(os.path.join(output_dir, entry["path"]))
  paths = {}
  for name, content in contents.items():
    path = paths[name] = os.path.join(output_dir, name)
    if name.endswith(".safetensors"):
      write_safetensors(path, content, metadata={"format": "pt"})
    else:
      files.write_json(path, content)
  return paths


def _read_json(path: str):
  try:
    return json.loads(files.read_bytes(path).decode("utf-8"))
  except (UnicodeDecodeError, json.JSONDecodeError) as error:
    raise DataError(f"{path} is not valid JSON: {error}") from None


def _module_config(module_dir: str, names: Sequence[str]) -> Dict:
  """The first of the config files `names` that `module_dir` holds, a JSON object; {} where it holds none (the
  module's defaults, as sentence-transformers takes them)."""
  for name in names:
    path = os.path.join(module_dir, name)
    if files.file_exists(path):
      values = _read_json(path)
      if not isinstance(values, dict):
        raise DataError(f"{path} is not a JSON object of the module's settings.")
      return values
  return {}


def _pooling_mode(values: Dict, where: str) -> str:
  """The one mode of a `Pooling` module's config: 5.x's `pooling_mode`, else the flags of every release."""
  if "pooling_mode" in values:
    modes = values["pooling_mode"]
    modes = list(modes) if isinstance(modes, (list, tuple)) else [modes]
  else:
    # No flag set is the library's default, mean pooling.
    modes = [mode for mode, flag in _ST_POOLING_FLAGS.items() if values.get(flag)] or ["mean"]
  if len(modes) != 1 or modes[0] not in POOLING_MODES:
    raise DataError(f"{where}: pooling {' + '.join(map(str, modes))}; albert-tf computes one of "
                    f"{', '.join(POOLING_MODES)}.")
  return modes[0]


def _dense_layer(module_dir: str, width: Optional[int]) -> DenseLayer:
  """A `Dense` module from its folder; `width` is the size of its input, where known."""
  where = os.path.join(module_dir, "config.json")
  values = _module_config(module_dir, ("config.json",))
  try:
    in_features, out_features = int(values["in_features"]), int(values["out_features"])
  except (KeyError, TypeError, ValueError):
    raise DataError(f"{where}: a Dense module's config needs in_features and out_features.") from None
  activation_path = str(values.get("activation_function", _ST_ACTIVATIONS["tanh"]))  # the library's default
  activation = _ST_ACTIVATION_NAMES.get(activation_path.rsplit(".", 1)[-1])
  if activation is None:
    raise DataError(f"{where}: activation {activation_path}; albert-tf computes a Dense module with "
                    f"{' or '.join(_ST_ACTIVATIONS.values())}.")
  if values.get("use_residual") or any(values.get(key, _ST_EMBEDDING) != _ST_EMBEDDING
                                       for key in ("module_input_name", "module_output_name")):
    raise DataError(f"{where}: albert-tf computes a Dense module on the sentence embedding alone, without "
                    "use_residual or other module_input_name and module_output_name.")
  if width is not None and in_features != width:
    raise DataError(f"{where}: in_features={in_features}, but the module before it gives {width} values.")
  tensors = read_hf_weights(module_dir)
  expected = {"linear.weight": [out_features, in_features]}
  if values.get("bias", True):
    expected["linear.bias"] = [out_features]
  found = {name: list(tensor.shape) for name, tensor in tensors.items()}
  if found != expected:
    raise DataError(f"{module_dir}: the Dense weights are {found}; its config.json means {expected}.")
  return DenseLayer(np.ascontiguousarray(tensors["linear.weight"].T), tensors.get("linear.bias"), activation)


def tokenizer_max_length(folder: str) -> Optional[int]:
  """The `model_max_length` of a folder's `tokenizer_config.json`: what sentence-transformers cuts texts to where
  `sentence_bert_config.json` does not say (at most `max_position_embeddings`); None without one."""
  path = os.path.join(folder, "tokenizer_config.json")
  values = _read_json(path) if files.file_exists(path) else {}
  length = values.get("model_max_length") if isinstance(values, dict) else None
  return length if isinstance(length, int) and length > 0 else None


def read_sentence_transformers_head(folder: str) -> Optional[SentenceTransformersHead]:
  """The modules of a sentence-transformers folder, ours or one sentence-transformers wrote; None for a folder
  without `modules.json`.

  Raises:
    DataError: a module albert-tf does not compute (one of another kind, another pooling, a Dense module with
      another activation), modules in another order, or a file that does not describe its module.
  """
  modules_file = os.path.join(folder, ST_MODULES_FILE)
  if not files.file_exists(modules_file):
    return None
  entries = _read_json(modules_file)
  if not (isinstance(entries, list) and entries and all(
      isinstance(entry, dict) and isinstance(entry.get("type"), str) and isinstance(entry.get("path"), str)
      and not os.path.isabs(entry["path"]) and ".." not in entry["path"].split("/") for entry in entries)):
    raise DataError(f"{modules_file} is not sentence-transformers' list of modules, each with its type and a "
                    "path inside the folder.")
  kinds = [entry["type"].rsplit(".", 1)[-1] for entry in entries]
  normalize = len(kinds) > 2 and kinds[-1] == "Normalize"
  dense_entries = entries[2:len(entries) - normalize]
  if kinds[:2] != ["Transformer", "Pooling"] or any(kind != "Dense" for kind in kinds[2:len(kinds) - normalize]):
    raise DataError(f"{modules_file}: the modules are {', '.join(entry['type'] for entry in entries)}; albert-tf "
                    "computes a Transformer, a Pooling, Dense modules and a Normalize, in that order.")
  transformer_path = entries[0]["path"]
  transformer = _module_config(os.path.join(folder, transformer_path),
                               (ST_TRANSFORMER_CONFIG, "sentence_albert_config.json"))
  max_seq_length = transformer.get("max_seq_length")
  if max_seq_length is not None and not (isinstance(max_seq_length, int) and max_seq_length > 0):
    raise DataError(f"{os.path.join(folder, transformer_path, ST_TRANSFORMER_CONFIG)}: max_seq_length must be a "
                    f"positive integer, not {max_seq_length!r}.")
  pooling_dir = os.path.join(folder, entries[1]["path"])
  pooling = _module_config(pooling_dir, ("config.json",))
  hidden_size = pooling.get("embedding_dimension", pooling.get("word_embedding_dimension"))
  dense, width = [], hidden_size
  for entry in dense_entries:
    dense.append(_dense_layer(os.path.join(folder, entry["path"]), width))
    width = dense[-1].kernel.shape[1]
  return SentenceTransformersHead(_pooling_mode(pooling, os.path.join(pooling_dir, "config.json")), tuple(dense),
                                  normalize, max_seq_length, bool(transformer.get("do_lower_case", False)),
                                  transformer_path, hidden_size)
