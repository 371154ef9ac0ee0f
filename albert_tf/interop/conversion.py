"""Converts Google's TF1 checkpoints and Hugging Face model folders into albert-tf checkpoints.

The model is built from the config with the heads the source holds, and every one of its variables is
filled from the source tensor that `weight_names.named_weights` names for it. Every source tensor must
fill a variable, apart from a few ignored by design (the step counter, optimizer slots, Hugging Face's tied
decoder copies and buffers). Variables left unfilled, source tensors left over and shapes that differ are
reported together in one `CheckpointMismatchError`, and nothing is written: Hugging Face's own TF1
converter only logs unmatched names and leaves those weights random.
"""

import dataclasses
import glob
import json
import os
import shutil
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import tensorflow as tf

from albert_tf.errors import AlbertConfigError, CheckpointMismatchError, DataError, InputFileError, OptionError
from albert_tf.interop.safetensors_files import read_safetensors
from albert_tf.interop.weight_names import named_weights
from albert_tf.modeling import checkpoints as checkpoint_lib
from albert_tf.modeling.checkpoints import CHECKPOINT_NAME
from albert_tf.modeling.config import CONFIG_FILE, GOOGLE_LEGACY_KEYS, AlbertConfig
from albert_tf.modeling.encoder import LAYER_NORM_EPSILON
from albert_tf.text import tokenizer_options as options_lib
from albert_tf.text.tokenizer import SentencePieceTokenizer

SOURCE_FORMATS = ("google", "hf")
SPM_FILE = "spiece.model"
_GOOGLE_SLOT_SUFFIXES = ("/adam_m", "/adam_v", "/lamb_m", "/lamb_v")
_TF_HUB_PREFIX = "module/"
_HF_PREFIX = "albert."
_HF_TIED_COPIES = ("predictions.decoder.weight", "predictions.decoder.bias")
_HF_PROJECTION = "albert.encoder.embedding_hidden_mapping_in"
_HF_POOLER = ("albert.pooler.weight", "albert.pooler.bias")
_TANH_GELUS = ("gelu_new", "gelu_pytorch_tanh")


@dataclasses.dataclass
class Conversion:
  """A converted model and what became of the source.

  Attributes:
    source: the checkpoint prefix or folder converted.
    model: the built model (an `AlbertEncoder`, `AlbertPretrainer` or SQuAD model) with the converted weights.
    num_tensors: source tensors converted into variables.
    ignored: source tensors left out by design, counted by reason.
    notes: what the user should know about the result.
    spm_model_file: the SentencePiece model to copy beside the checkpoint, if any.
    tokenizer_options: the options the vocabulary was trained with, recorded beside the copied model.
    tokenizer_options_source: where they come from, for the summary.
  """

  source: str
  model: tf.Module
  num_tensors: int
  ignored: Dict[str, int]
  notes: List[str] = dataclasses.field(default_factory=list)
  spm_model_file: Optional[str] = None
  tokenizer_options: options_lib.TokenizerOptions = options_lib.TokenizerOptions()
  tokenizer_options_source: str = "Google's defaults"

  @property
  def parts(self) -> List[str]:
    """The parts converted: the encoder, then the heads."""
    heads = dict(checkpoint_lib.HEADS, **checkpoint_lib.TASK_HEADS)
    return ["encoder"] + [name for head, name in heads.items() if getattr(self.model, head, None) is not None]


def _fill_variables(targets: Dict[str, Tuple[tf.Variable, bool]], shapes: Dict[str, List[int]],
                    load: Callable[[str], np.ndarray], source: str, hint: str,
                    problems: Sequence[str] = ()) -> int:
  """Assigns every target variable its source tensor, or raises one error listing every problem.

  Args:
    targets: source name -> (variable, whether the source stores it transposed).
    shapes: every source tensor still to place, by name.
    load: reads one source tensor.
    source: the source's path, for the message.
    hint: the likely cause, for the message.
    problems: problems found before, reported with the others.

  Returns:
    The number of tensors assigned.
  """
  expected = {name: variable.shape.as_list()[::-1] if transposed else variable.shape.as_list()
              for name, (variable, transposed) in targets.items()}
  unmapped = sorted(f"{name} {list(shape)}" for name, shape in shapes.items() if name not in expected)
  missing = sorted(f"{name} {shape}" for name, shape in expected.items() if name not in shapes)
  mismatched = sorted(f"{name}: source {list(shapes[name])} vs model {shape}"
                      for name, shape in expected.items() if name in shapes and list(shapes[name]) != shape)
  if unmapped or missing or mismatched or problems:
    raise checkpoint_lib.mismatch_error(
        f"Cannot convert {source}: it does not fit the model of the config. Nothing was written.",
        [("in the source but not in the model", unmapped), ("missing from the source", missing),
         ("shape mismatches (source layout)", mismatched), ("not convertible", list(problems))], hint)
  for name, (variable, transposed) in targets.items():
    value = np.asarray(load(name), np.float32)
    variable.assign(value.T if transposed else value)
  return len(targets)


# --- Google's TF1 checkpoints ----------------------------------------------------------------------------

def convert_google_checkpoint(path: str, albert_config_file: Optional[str] = None,
                              spm_model_file: Optional[str] = None) -> Conversion:
  """Converts a checkpoint of Google's TF1 ALBERT code (or a TF-Hub module's variables).

  Args:
    path: a checkpoint prefix, or a directory holding one (its latest).
    albert_config_file: the model's config; default `albert_config.json` beside the checkpoint.
    spm_model_file: the SentencePiece model; default the single `*.model` file beside the checkpoint.

  Returns:
    The conversion: `cls/predictions` gives the masked-LM head and `cls/seq_relationship` the
    sentence-order head; without them the model is the encoder. A checkpoint fine-tuned by Google's
    `run_squad_v1.py` (`cls/squad`) or `run_squad_v2.py` (`start_logits`, `end_logits`, `answer_class`) gives
    `AlbertQuestionAnswerer` or `AlbertQuestionAnswererV2` (beam 5 × 5).

  Raises:
    FileNotFoundError: no checkpoint or config where given or expected.
    CheckpointMismatchError: listing every variable that does not fit the config.
  """
  prefix = checkpoint_lib.resolve_checkpoint_path(path)
  directory = os.path.dirname(prefix)
  config_file = _config_file(directory, albert_config_file)
  config = AlbertConfig.from_json_file(config_file)
  reader = tf.train.load_checkpoint(prefix)
  shapes = reader.get_variable_to_shape_map()
  if checkpoint_lib.OBJECT_GRAPH_KEY in shapes:
    raise CheckpointMismatchError(
        f"{prefix} is an object-based TF2 checkpoint, not one of Google's TF1 checkpoints. An albert-tf "
        "checkpoint needs no conversion; pass it to the tools directly.")
  ignored = {"global_step": 0, "optimizer slots": 0}
  weights = {}
  for name, shape in shapes.items():
    if name.split("/")[-1] == "global_step":
      ignored["global_step"] += 1
    elif name.endswith(_GOOGLE_SLOT_SUFFIXES):
      ignored["optimizer slots"] += 1
    else:
      weights[name] = shape
  source_name = {name: name for name in weights}
  if weights and all(name.startswith(_TF_HUB_PREFIX) for name in weights):
    source_name = {name[len(_TF_HUB_PREFIX):]: name for name in weights}
  heads = {head for head, scope in (("masked_lm_head", "cls/predictions/"),
                                    ("sentence_order_head", "cls/seq_relationship/"))
           if any(name.startswith(scope) for name in source_name)}
  squad_heads = {head for head, scope in ((checkpoint_lib.SQUAD_HEAD, "cls/squad/"),
                                          (checkpoint_lib.SQUAD_V2_HEAD, "start_logits/"))
                 if any(name.startswith(scope) for name in source_name)}
  if squad_heads:  # fine-tuned by run_squad_v1.py or run_squad_v2.py
    model = checkpoint_lib.reading_comprehension_model(config, squad_heads, {})
  else:
    model = checkpoint_lib.model_with_heads(config, heads)
  targets = {names.google: (variable, False) for names, variable in named_weights(model)}
  num_tensors = _fill_variables(
      targets, {name: weights[original] for name, original in source_name.items()},
      lambda name: reader.get_tensor(source_name[name]), prefix,
      f"Does {config_file} match the checkpoint? Classifier heads (top-level output_weights) "
      "have no place in an ALBERT pretraining or SQuAD model.")
  spm_model_file = spm_model_file or _single_spm_model(directory)
  return Conversion(prefix, model, num_tensors, ignored, spm_model_file=spm_model_file,
                    **_recorded_tokenizer_options(spm_model_file))


def _config_file(directory: str, albert_config_file: Optional[str]) -> str:
  """`albert_config_file`, else the `albert_config.json` in the checkpoint's directory; it must exist."""
  config_file = albert_config_file or os.path.join(directory, CONFIG_FILE)
  if not os.path.isfile(config_file):
    raise InputFileError(f"ALBERT config file not found: {config_file} (pass --albert_config_file).")
  return config_file


def _single_spm_model(directory: str) -> Optional[str]:
  """The one `*.model` file in `directory` (Google's releases ship `30k-clean.model`), if exactly one."""
  found = glob.glob(os.path.join(glob.escape(directory), "*.model"))
  return found[0] if len(found) == 1 else None


# --- Hugging Face folders --------------------------------------------------------------------------------

def convert_hf_folder(folder: str, spm_model_file: Optional[str] = None) -> Conversion:
  """Converts a Hugging Face ALBERT folder (`AlbertForPreTraining`, `AlbertForMaskedLM` or `AlbertModel`).

  Args:
    folder: holds `config.json` and `model.safetensors`, a sharded `model.safetensors.index.json`, or
      `pytorch_model.bin` (read with PyTorch).
    spm_model_file: the SentencePiece model; default the folder's `spiece.model` if there is one.

  Returns:
    The conversion: `predictions.*` gives the masked-LM head and `sop_classifier.*` the sentence-order
    head; without them the model is the encoder.

  Raises:
    FileNotFoundError: no config.json or weights file in `folder`.
    AlbertConfigError: a config.json this package cannot compute exactly.
    CheckpointMismatchError: listing every tensor that does not fit the config.
  """
  config_file = os.path.join(folder, "config.json")
  if not os.path.isfile(config_file):
    raise InputFileError(f"Hugging Face config not found: {config_file}")
  with open(config_file, encoding="utf-8") as reader:
    config = _config_from_hf(json.load(reader), config_file)
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
  num_tensors = _fill_variables(
      targets, {name: list(value.shape) for name, value in tensors.items()}, tensors.__getitem__, folder,
      f"Does {config_file} belong to these weights? Task heads (e.g. classifier, qa_outputs) have no place "
      "in an ALBERT pretraining model.", problems)
  spm_in_folder = os.path.join(folder, SPM_FILE)
  spm_model_file = spm_model_file or (spm_in_folder if os.path.isfile(spm_in_folder) else None)
  return Conversion(folder, model, num_tensors, ignored, notes, spm_model_file,
                    **(_recorded_tokenizer_options(spm_model_file) or _hf_tokenizer_options(folder)))


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


def read_hf_weights(folder: str) -> Dict[str, np.ndarray]:
  """A Hugging Face folder's tensors by name, as float32 arrays: `model.safetensors`, a sharded safetensors index,
  or `pytorch_model.bin` (which needs torch); a sentence-transformers module's folder too."""
  safetensors_file = os.path.join(folder, "model.safetensors")
  index_file = os.path.join(folder, "model.safetensors.index.json")
  pytorch_file = os.path.join(folder, "pytorch_model.bin")
  if os.path.isfile(safetensors_file):
    return read_safetensors(safetensors_file)
  if os.path.isfile(index_file):
    with open(index_file, encoding="utf-8") as reader:
      shards = sorted(set(json.load(reader)["weight_map"].values()))
    tensors = {}
    for shard in shards:
      tensors.update(read_safetensors(os.path.join(folder, shard)))
    return tensors
  if os.path.isfile(pytorch_file):
    return _read_pytorch_weights(pytorch_file)
  raise InputFileError(f"No weights in {folder}: expected model.safetensors, model.safetensors.index.json "
                          "or pytorch_model.bin.")


def _read_pytorch_weights(path: str) -> Dict[str, np.ndarray]:
  try:
    import torch  # pylint: disable=import-outside-toplevel  # only this format needs PyTorch
  except ImportError:
    raise DataError(f"Reading {path} needs PyTorch (pip install torch); a folder with model.safetensors "
                     "needs nothing more.") from None
  state_dict = torch.load(path, map_location="cpu", weights_only=True)
  return {name: (tensor.float() if tensor.is_floating_point() else tensor).numpy()
          for name, tensor in state_dict.items()}


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


def _recorded_tokenizer_options(spm_model_file: Optional[str]) -> Dict:
  """`Conversion`'s tokenizer fields from the record beside `spm_model_file`; empty when there is none."""
  record = options_lib.recorded_options(spm_model_file) if spm_model_file else None
  if record is None:
    return {}
  source, recorded = record
  return {"tokenizer_options": recorded, "tokenizer_options_source": source}


def _hf_tokenizer_options(folder: str) -> Dict:
  """The options a Hugging Face folder's `tokenizer_config.json` sets, over transformers' defaults (Google's)."""
  path = os.path.join(folder, "tokenizer_config.json")
  if not os.path.isfile(path):
    return {"tokenizer_options_source": "transformers' defaults (no tokenizer_config.json)"}
  with open(path, encoding="utf-8") as reader:
    values = json.load(reader)
  given = {name: values[name] for name in ("do_lower_case", "keep_accents") if isinstance(values.get(name), bool)}
  return {"tokenizer_options": options_lib.TokenizerOptions(**given), "tokenizer_options_source": path}


# --- Any of the three ------------------------------------------------------------------------------------

def _is_hf_folder(path: str) -> bool:
  return os.path.isfile(os.path.join(path, "config.json")) and any(
      os.path.isfile(os.path.join(path, name))
      for name in ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin"))


def read_checkpoint(path: str, albert_config_file: Optional[str] = None,
                    spm_model_file: Optional[str] = None) -> Conversion:
  """Reads an albert-tf checkpoint, one of Google's TF1 checkpoints or a Hugging Face folder, told apart by
  their files, into the model it holds (its heads included).

  Args:
    path: a Hugging Face folder; or a checkpoint prefix, or a directory meaning its latest checkpoint.
    albert_config_file: the config of an albert-tf or Google checkpoint; default `albert_config.json` beside
      it. A Hugging Face folder has its own `config.json`.
    spm_model_file: the SentencePiece model; default the one found beside the checkpoint (see the
      `convert_*` functions; `spiece.model` for an albert-tf checkpoint).

  Raises:
    FileNotFoundError: no checkpoint, weights or config where given or expected.
    OptionError: `albert_config_file` given with a Hugging Face folder.
    CheckpointMismatchError, AlbertConfigError: as `convert_google_checkpoint` and `convert_hf_folder`.
  """
  if os.path.isdir(path) and _is_hf_folder(path):
    if albert_config_file:
      raise OptionError(f"{path} is a Hugging Face folder, which has its config.json: leave out "
                        "--albert_config_file.")
    return convert_hf_folder(path, spm_model_file)
  prefix = checkpoint_lib.resolve_checkpoint_path(path)
  if checkpoint_lib.OBJECT_GRAPH_KEY not in tf.train.load_checkpoint(prefix).get_variable_to_shape_map():
    return convert_google_checkpoint(prefix, albert_config_file, spm_model_file)
  directory = os.path.dirname(prefix)
  config = AlbertConfig.from_json_file(_config_file(directory, albert_config_file))
  model, prefix = checkpoint_lib.build_model_for_checkpoint(config, prefix)
  spm_in_directory = os.path.join(directory, SPM_FILE)
  spm_model_file = spm_model_file or (spm_in_directory if os.path.isfile(spm_in_directory) else None)
  return Conversion(prefix, model, len(model.variables), {}, spm_model_file=spm_model_file,
                    **_recorded_tokenizer_options(spm_model_file))


# --- Writing -----------------------------------------------------------------------------------------------

def check_output_dir(output_dir: str, other_files: Sequence[str] = ()) -> None:
  """Refuses a directory that already holds one of `other_files` or a checkpoint, so that nothing written is
  lost."""
  for name, path in [(name, name) for name in other_files] + [(CHECKPOINT_NAME, f"{CHECKPOINT_NAME}.index")]:
    if os.path.exists(os.path.join(output_dir, path)):
      raise OptionError(f"{output_dir} already holds {name}; choose another --output_dir (nothing was written).")


def write_conversion(conversion: Conversion, output_dir: str) -> Dict[str, str]:
  """Writes `model.ckpt` (readable by `restore_checkpoint`), `albert_config.json` and `spiece.model`.

  Returns:
    The paths written, by file name.
  """
  check_output_dir(output_dir)
  if conversion.spm_model_file:
    SentencePieceTokenizer(conversion.spm_model_file)  # fails on a bad model before anything is written
  paths = {name: os.path.join(output_dir, name) for name in (CHECKPOINT_NAME, CONFIG_FILE)}
  checkpoint_lib.save_checkpoint(conversion.model, paths[CHECKPOINT_NAME])
  conversion.model.config.to_json_file(paths[CONFIG_FILE])
  if conversion.spm_model_file:
    paths[SPM_FILE] = os.path.join(output_dir, SPM_FILE)
    shutil.copyfile(conversion.spm_model_file, paths[SPM_FILE])
    options_file = options_lib.write_options(paths[SPM_FILE], conversion.tokenizer_options)
    paths[os.path.basename(options_file)] = options_file
  return paths


def convert(source_format: str, source: str, output_dir: str, albert_config_file: Optional[str] = None,
            spm_model_file: Optional[str] = None) -> Tuple[Conversion, Dict[str, str]]:
  """Converts `source` and writes the result to `output_dir`; nothing is written unless conversion succeeds.

  See `convert_google_checkpoint`, `convert_hf_folder` and `write_conversion`.

  Returns:
    The conversion and the paths written, by file name.
  """
  check_output_dir(output_dir)  # before the work, not only before the writing
  if source_format == "google":
    conversion = convert_google_checkpoint(source, albert_config_file, spm_model_file)
  elif source_format == "hf":
    if albert_config_file:
      raise OptionError("--albert_config_file is for --source_format=google; a Hugging Face folder has its "
                       "config.json.")
    conversion = convert_hf_folder(source, spm_model_file)
  else:
    raise OptionError(f"--source_format must be one of {', '.join(SOURCE_FORMATS)}, got {source_format!r}.")
  return conversion, write_conversion(conversion, output_dir)


def summary(conversion: Conversion, paths: Dict[str, str]) -> str:
  """What was converted, ignored and written, and the tokenizer options recorded."""
  parts = ", ".join(conversion.parts)
  lines = [f"Converted {conversion.source}: {parts} ({conversion.num_tensors} tensors)."]
  ignored = [f"{count} {reason}" for reason, count in conversion.ignored.items() if count]
  if ignored:
    lines.append(f"Ignored: {', '.join(ignored)}.")
  lines += conversion.notes
  if conversion.spm_model_file:
    lines.append(f"Tokenizer options {conversion.tokenizer_options.as_flags()} (from "
                 f"{conversion.tokenizer_options_source}), recorded beside {SPM_FILE} for the other tools.")
  else:
    lines.append("No SentencePiece model was found or given (--spm_model_file), so none was copied.")
  lines.append("Wrote:")
  lines += [f"  {paths[name]}" for name in sorted(paths)]
  return "\n".join(lines)
