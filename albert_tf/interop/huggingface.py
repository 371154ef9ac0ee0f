"""Hugging Face model folders, written and read: `config.json`, `model.safetensors` and the tokenizer files.

A written folder loads with `transformers.AlbertForPreTraining.from_pretrained(folder)` (and `AlbertModel`,
`AlbertForMaskedLM`, ...) with no missing or unexpected weights, in transformers 4.x and 5.x. Weights are
written straight from our variables through `weight_names`, never through Hugging Face's TF1 converter,
which logs unmatched names and leaves those weights random.

A sentence encoder's folder is also a sentence-transformers model (`sentence_transformers_folders`).

`convert_hf_folder` reads a folder (`AlbertForPreTraining`, `AlbertForMaskedLM`, `AlbertModel`, or the class
a task head's `task_heads.TaskHead.hf_architecture` names) back into our model, through the same names, all or
nothing (`source_tensors`).
"""

import dataclasses
import os
from typing import Dict, List, Optional, Sequence

import numpy as np

from albert_tf import files
from albert_tf.errors import AlbertConfigError, OptionError
from albert_tf.interop import hf_tokenizer
from albert_tf.interop import sentence_transformers_folders as st_folders
from albert_tf.interop.hf_weight_files import read_hf_weights, write_safetensors
from albert_tf.interop.source_tensors import SPM_FILE, Conversion, fill_variables, recorded_tokenizer_options
from albert_tf.modeling import checkpoints as checkpoint_lib
from albert_tf.modeling import task_heads
from albert_tf.modeling.config import GOOGLE_LEGACY_KEYS, AlbertConfig
from albert_tf.modeling.encoder import LAYER_NORM_EPSILON
from albert_tf.modeling.weight_names import named_weights
from albert_tf.text import tokenizer_options as options_lib
from albert_tf.text.tokenizer import SentencePieceTokenizer

# Our activation names -> Hugging Face's (its "gelu" is the exact erf form; Google's is "gelu_new").
_HF_ACTIVATION = {"gelu": "gelu_new", "gelu_new": "gelu_new", "gelu_pytorch_tanh": "gelu_pytorch_tanh",
                  "gelu_exact": "gelu", "relu": "relu", "tanh": "tanh", "linear": "linear"}
_HF_PREFIX = "albert."
_HF_TIED_COPIES = ("predictions.decoder.weight", "predictions.decoder.bias")
_HF_PROJECTION = "albert.encoder.embedding_hidden_mapping_in"
_HF_POOLER = ("albert.pooler.weight", "albert.pooler.bias")
_TANH_GELUS = ("gelu_new", "gelu_pytorch_tanh")
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
  """Hugging Face tensors of a model (`AlbertForPreTraining`, `AlbertForMaskedLM`, `AlbertModel`, or a
  fine-tuned model's transformers class, as its task head says), float32. A sentence encoder's are its
  encoder's (`AlbertModel`):
  its projection is a sentence-transformers `Dense` module (see `sentence_transformers_files`).

  Google's code creates no E→H projection when E == H, but Hugging Face always has one: it gets the
  identity matrix and a zero bias, which computes the same function.

  Raises:
    OptionError: a model whose head transformers has no class for.
  """
  task_head = task_heads.head_of(model)
  if task_head is not None and task_head.hf_config is None:
    raise OptionError(f"transformers has no ALBERT class for this model's head ({task_head.description}); export "
                      "it as a SavedModel (tools/export_saved_model.py or --export_dir) instead.")
  named = named_weights(model)
  skipped = task_head.hf_dropped_prefixes if task_head is not None else ()
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
  """The transformers class of `model` (and what its task head adds, a classifier's labels...), for
  `config.json`."""
  task_head = task_heads.head_of(model)
  if task_head is not None:
    return task_head.hf_config(model)
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


HF_CONFIG_FILE = "config.json"
# What an export writes that identifies a Hugging Face folder: a folder holding one of them is not written into
# without `overwrite`.
HF_FOLDER_FILES = (HF_CONFIG_FILE, "model.safetensors") + hf_tokenizer.TOKENIZER_FILES


def check_hf_output_dir(output_dir: str, overwrite: bool = False):
  """Refuses, before any work, an `output_dir` that cannot be a folder or already holds a Hugging Face model's
  files (unless `overwrite`)."""
  files.check_output_folder(output_dir, HF_FOLDER_FILES, overwrite)


def export_to_hf(model, output_dir: str, spm_model_file: Optional[str] = None,
                 tokenizer_options: Optional[options_lib.TokenizerOptions] = None,
                 parity_text_files: Sequence[str] = (), max_seq_length: Optional[int] = None,
                 overwrite: bool = False) -> HfExport:
  """Writes a Hugging Face folder for a built `AlbertPretrainer` (with or without its SOP head), encoder,
  `AlbertSentenceEncoder`, or fine-tuned model whose task head transformers has a class for (a classifier's
  `AlbertForSequenceClassification` with its labels, ...: see `task_heads.TaskHead.hf_config`).

  A sentence encoder's encoder is written as `AlbertModel` (its projection has no place in transformers'
  ALBERT classes), and the folder is also a sentence-transformers model (see `sentence_transformers_files`):
  with the tokenizer files, `SentenceTransformer(output_dir)` computes its embedding.

  The folder appears whole or not at all (`files.staged_folder`): written aside, then renamed into place on local
  disk or uploaded to a bucket, `config.json` last (transformers reads it first, so a half-uploaded folder is not
  taken for a model).

  Args:
    model: the model, with its weights restored.
    output_dir: a folder, local or in a bucket; created if needed.
    spm_model_file: the SentencePiece model; adds the tokenizer files when given.
    tokenizer_options: the options the model was trained with; default: what is recorded beside
      `spm_model_file` (see `albert_tf.text.tokenizer_options`).
    parity_text_files: text files (a line a text) to measure tokenizer parity on, besides the vocabulary's
      pieces and probe lines; see `hf_tokenizer.write_measured_tokenizer_files`.
    max_seq_length: a sentence encoder's: the length sentence-transformers cuts texts to (`[CLS]` and `[SEP]`
      included); default `max_position_embeddings`.
    overwrite: replace the files of a Hugging Face model `output_dir` holds (else it is refused).

  Raises:
    OptionError: before anything is written: an `output_dir` that holds a model (without `overwrite`) or
      cannot be written, a head transformers or sentence-transformers cannot hold, `max_seq_length` for
      another model or out of range, another model into a sentence-transformers folder.
  """
  check_hf_output_dir(output_dir, overwrite)
  if parity_text_files and not spm_model_file:
    raise OptionError("--parity_text checks the tokenizer files, which need --spm_model_file.")
  if spm_model_file:
    SentencePieceTokenizer(spm_model_file)  # fails on a bad model before anything is written
    tokenizer_options = tokenizer_options or options_lib.resolve_options(spm_model_file)
    for path in parity_text_files:
      files.require_file(path, "--parity_text file")
  encoder = getattr(model, "encoder", model)
  tensors = hf_state_dict(model)  # refuses a head transformers lacks before anything is written
  task_head = task_heads.head_of(model)
  st_modules = None
  if task_head is not None and task_head.sentence_transformers_modules is not None:
    st_modules = task_head.sentence_transformers_modules(model, max_seq_length)
  elif max_seq_length is not None:
    raise OptionError("--max_seq_length is the length sentence-transformers cuts texts to, written for a model "
                      "that computes a sentence embedding; this model does not.")
  elif files.file_exists(os.path.join(output_dir, st_folders.ST_MODULES_FILE)):
    # Its modules.json would go on describing the sentence encoder that was there.
    raise OptionError(f"{output_dir} holds a sentence-transformers model ({st_folders.ST_MODULES_FILE}); choose "
                      "another --output_dir for this model (nothing was written).")
  config = dict(hf_config_dict(encoder.config), **_architecture_config(model))
  report = None
  with files.staged_folder(output_dir, HF_CONFIG_FILE) as staging:
    files.write_json(os.path.join(staging, HF_CONFIG_FILE), config, sort_keys=True)
    write_safetensors(os.path.join(staging, "model.safetensors"), tensors, metadata={"format": "pt"})
    names = [HF_CONFIG_FILE, "model.safetensors"]
    if st_modules is not None:
      names += st_folders.write_sentence_transformers_files(staging,
                                                            st_folders.sentence_transformers_files(st_modules))
    if spm_model_file:
      tokenizer_paths, report = hf_tokenizer.write_measured_tokenizer_files(
          spm_model_file, staging, tokenizer_options, encoder.config.max_position_embeddings, parity_text_files)
      names += tokenizer_paths
  return HfExport({name: os.path.join(output_dir, name) for name in names}, report, st_modules)


# --- Reading ------------------------------------------------------------------------------------------------

def is_hf_folder(path: str) -> bool:
  """Whether `path` (local or in a bucket) is a Hugging Face model folder: a `config.json` and a weights file."""
  return files.file_exists(os.path.join(path, HF_CONFIG_FILE)) and any(
      files.file_exists(os.path.join(path, name))
      for name in ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin"))


def convert_hf_folder(folder: str, spm_model_file: Optional[str] = None) -> Conversion:
  """Converts a Hugging Face ALBERT folder (`AlbertForPreTraining`, `AlbertForMaskedLM`, `AlbertModel`, or the
  transformers class of a task head that converts: `task_heads.TaskHead.hf_architecture`).

  Args:
    folder: holds `config.json` and `model.safetensors`, a sharded `model.safetensors.index.json`, or
      `pytorch_model.bin` (read with PyTorch); local or in a bucket.
    spm_model_file: the SentencePiece model; default the folder's `spiece.model` if there is one.

  Returns:
    The conversion: a folder whose config.json's `architectures` is a task head's `hf_architecture` gives that
    head's model (`hf_rebuild`: its labels...); else `predictions.*` gives the masked-LM head and
    `sop_classifier.*` the sentence-order head, and without them the model is the encoder.

  Raises:
    FileNotFoundError: no config.json or weights file in `folder`.
    AlbertConfigError: a config.json this package cannot compute exactly.
    CheckpointMismatchError: listing every tensor that does not fit the config.
  """
  config_file = files.require_file(os.path.join(folder, HF_CONFIG_FILE), "Hugging Face config")
  values = files.read_json(config_file, "a Hugging Face config")
  config = _config_from_hf(values, config_file)
  tensors = read_hf_weights(folder)
  ignored = {"tied decoder copies": 0, "position_ids buffers": 0}
  for name in list(tensors):
    if name in _HF_TIED_COPIES:
      ignored["tied decoder copies"] += 1
      del tensors[name]
    elif name.endswith(".position_ids"):
      ignored["position_ids buffers"] += 1
      del tensors[name]
  has_prefix = any(name.startswith(_HF_PREFIX) for name in tensors)

  def key(hf_name):  # a bare `AlbertModel` is saved without the `albert.` prefix of the head models
    return hf_name if has_prefix else hf_name.removeprefix(_HF_PREFIX)

  architectures = values.get("architectures") or []
  task_head = next((head for head in task_heads.registered_heads()
                    if head.hf_architecture is not None and head.hf_architecture in architectures), None)
  if task_head is not None:
    model = task_head.hf_rebuild(config, values)
  else:
    heads = {head for head, scope in (("masked_lm_head", "predictions."),
                                      ("sentence_order_head", "sop_classifier."))
             if any(name.startswith(scope) for name in tensors)}
    model = checkpoint_lib.model_with_heads(config, heads)
  targets = {key(names.hf): (variable, names.transpose_for_hf) for names, variable in named_weights(model)}
  problems, notes = [], []
  if getattr(model, "encoder", model).embeddings.projection is None:
    problems += _drop_identity_projection(tensors, key(_HF_PROJECTION), config.hidden_size, ignored)
  pooler = [key(name) for name in _HF_POOLER]
  if not any(name in tensors for name in pooler):
    # transformers' AlbertForMaskedLM has no pooler; transformers would initialise one afresh too.
    for name in pooler:
      del targets[name]
    notes.append("The source has no pooler (as transformers' AlbertForMaskedLM): the pooler keeps its fresh "
                 "random initialisation, so pooled_output means nothing until fine-tuned.")
  num_tensors = fill_variables(
      targets, {name: list(value.shape) for name, value in tensors.items()}, tensors.__getitem__, folder,
      f"Does {config_file} belong to these weights? Task heads (e.g. classifier, qa_outputs) have no place "
      "in an ALBERT pretraining model.", problems)
  spm_in_folder = os.path.join(folder, SPM_FILE)
  spm_model_file = spm_model_file or (spm_in_folder if files.file_exists(spm_in_folder) else None)
  return Conversion(folder, model, num_tensors, ignored, notes, spm_model_file,
                    **(recorded_tokenizer_options(spm_model_file) or _hf_tokenizer_options(folder)))


def _config_from_hf(values: Dict, path: str) -> AlbertConfig:
  """Our config from a Hugging Face config.json, with Google's keys only; refuses what we cannot compute."""
  epsilon = values.get("layer_norm_eps", LAYER_NORM_EPSILON)
  if epsilon != LAYER_NORM_EPSILON:
    raise AlbertConfigError(f"{path}: layer_norm_eps={epsilon} is not supported; ALBERT (Google's and "
                            f"albert-tf) uses {LAYER_NORM_EPSILON}.")
  position_embedding_type = values.get("position_embedding_type", "absolute")
  if position_embedding_type != "absolute":
    raise AlbertConfigError(f"{path}: position_embedding_type={position_embedding_type!r} is not supported; "
                            "ALBERT (Google's and albert-tf) uses absolute positions.")
  config = AlbertConfig.from_dict(values, source=path)
  # Google's code knows the tanh-approximated GELU as "gelu" only.
  hidden_act = "gelu" if config.hidden_act in _TANH_GELUS else config.hidden_act
  return dataclasses.replace(config, hidden_act=hidden_act,
                             extra={k: v for k, v in config.extra.items() if k in GOOGLE_LEGACY_KEYS})


def _drop_identity_projection(tensors: Dict[str, np.ndarray], projection: str, hidden_size: int,
                              ignored: Dict[str, int]) -> List[str]:
  """Takes Hugging Face's E→H projection out of `tensors`, for with E == H our model has none.

  Returns the problem, unless it is the identity with a zero bias and so computes nothing.
  """
  weight, bias = tensors.pop(f"{projection}.weight", None), tensors.pop(f"{projection}.bias", None)
  if weight is None and bias is None:
    return []
  is_identity = weight is not None and bias is not None and np.array_equal(weight, np.eye(hidden_size))
  if is_identity and not np.any(bias):
    ignored["identity E→H projection (E == H)"] = 2
    return []
  return [f"{projection}: with embedding_size == hidden_size == {hidden_size}, Google's ALBERT and albert-tf "
          "have no E→H projection, so only the identity with a zero bias (what albert-tf exports) converts; "
          "this one is not (a model trained in Hugging Face with E == H computes something else)."]


def _hf_tokenizer_options(folder: str) -> Dict:
  """The options a Hugging Face folder's `tokenizer_config.json` sets, over transformers' defaults (Google's)."""
  path = os.path.join(folder, "tokenizer_config.json")
  if not files.file_exists(path):
    return {"tokenizer_options_source": "transformers' defaults (no tokenizer_config.json)"}
  values = files.read_json(path, "a Hugging Face tokenizer config")
  given = {name: values[name] for name in ("do_lower_case", "keep_accents") if isinstance(values.get(name), bool)}
  return {"tokenizer_options": options_lib.TokenizerOptions(**given), "tokenizer_options_source": path}
