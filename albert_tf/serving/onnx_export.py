"""ONNX exports of our SavedModels, for serving with ONNX Runtime: the model and its tokenizer, with no TensorFlow.

`export_onnx` converts the `serving_default` signature of a SavedModel version that `saved_model.export_saved_model`
wrote (int32 `input_word_ids`, `input_mask`, `input_type_ids` `[batch, seq]`; a multiple-choice model's
`[batch, options, seq]`, a SQuAD v2 model's `p_mask` too) with tf2onnx to `<output_dir>/model.onnx`. Its inputs
and outputs are named as the signature's: an encoder's `sequence_output` and `pooled_output`, a classifier's
`probabilities`, `predictions` and `labels` (ONNX strings), a SQuAD or RACE model's; the inputs' axes are dynamic
(`batch`, `sequence`, a multiple-choice model's `options`). Beside it go the tokenizer files of our Hugging Face export
(`hf_tokenizer`, built from the SavedModel's `assets/`): `tokenizers.Tokenizer.from_file` or
`transformers.AutoTokenizer` make its inputs.

Nothing is written unless ONNX Runtime gives the SavedModel's outputs: the converted model runs on text pairs and
on single texts (English, Korean, accented Latin), packed by the SavedModel's own `encode_text_pair` and
`encode_text` (two segments, padding, two lengths), and a float output more than `TOLERANCE` from
`serving_default`'s, or any other output that differs, refuses the export. The folder's `tokenizer.json` is
checked to give the SavedModel's ids on those texts, and transformers' tokenizers its ids on the vocabulary (each
reported, as the Hugging Face export reports them).
"""

import contextlib
import dataclasses
import importlib
import logging
import math
import os
import time
from typing import Collection, Dict, List, Optional

import numpy as np
import tensorflow as tf
from tensorflow.core.protobuf import saved_model_pb2

from albert_tf import files
from albert_tf.errors import DataError, InputFileError, OptionError
from albert_tf.interop import hf_tokenizer
from albert_tf.modeling import task_heads
from albert_tf.modeling.config import AlbertConfig
from albert_tf.text import tokenizer_options as options_lib
from albert_tf.text.tokenizer import SentencePieceTokenizer

ONNX_FILE = "model.onnx"
# What an export writes: a folder holding one of them is not written into without `overwrite`.
ONNX_FOLDER_FILES = (ONNX_FILE,) + hf_tokenizer.TOKENIZER_FILES + (
    os.path.basename(options_lib.options_file(hf_tokenizer.SPM_FILE)),)
# The largest difference allowed between a float output of ONNX Runtime and the SavedModel's.
TOLERANCE = 1e-4
# 17: what ONNX Runtime 1.13 (2022) and later run. tf2onnx 1.17 writes opsets up to 18; below 11 parts of our
# graphs do not convert (opset 9 has no strided slice that adds axes).
DEFAULT_OPSET = 17
MIN_OPSET, MAX_OPSET = 11, 18
EXTRA_HINT = "pip install 'albert-tf[onnx]' (pip install -e '.[onnx]' in a checkout)"
# The assets an albert-tf SavedModel carries (see `saved_model.export_saved_model`).
SPM_ASSET, CONFIG_ASSET = "spiece.model", "albert_config.json"
OPTIONS_ASSET = os.path.basename(options_lib.options_file(SPM_ASSET))
# The texts the converted model is checked on: pairs (two segments) and single texts, of several lengths, so that
# each batch holds padding; English, Korean and accented Latin, so that the tokenizer files are checked too.
PROBE_PAIRS = (
    ("The cat sat on the mat.", "A cat is sitting on a mat in the sun."),
    ("서울은 한국의 수도입니다.", "부산은 바다가 아름다운 항구 도시입니다."),
    ("When did the third series begin?", "Unlike the two series before it, the third began in 2004."),
)
PROBE_TEXTS = ("Café Zürich, naïve RÉSUMÉ façade.", "대한민국의 수도는 서울이다. 한강이 흐른다.")
# Names of the dynamic axes of inputs, by rank.
_AXES = {2: ("batch", "sequence"), 3: ("batch", "options", "sequence")}
_ID_INPUTS = ("input_word_ids", "input_mask", "input_type_ids")

@dataclasses.dataclass
class OnnxExport:
  """What `export_onnx` wrote and measured.

  Attributes:
    paths: the files written, by name.
    inputs, outputs: the names of the ONNX model's inputs and outputs.
    max_abs_differences: by float output, the largest |ONNX Runtime - SavedModel| on the probe batches (every
      other output was equal).
    probe_shapes: the `input_word_ids` shapes of the probe batches.
    tokenizer_parity: how well transformers reproduces our ids from the tokenizer files.
    tokenizer_mismatches: the probe texts on which `tokenizers` gave other ids than the SavedModel (None when
      `tokenizers` is not installed).
    conversion_seconds: how long tf2onnx took.
  """

  paths: Dict[str, str]
  inputs: List[str]
  outputs: List[str]
  max_abs_differences: Dict[str, float]
  probe_shapes: List[tuple]
  tokenizer_parity: hf_tokenizer.ParityReport
  tokenizer_mismatches: Optional[List[str]]
  conversion_seconds: float


def _converter():
  """tf2onnx and ONNX Runtime, or one clear error when the onnx extra is not installed."""
  try:
    import onnxruntime  # pylint: disable=import-outside-toplevel
    import tf2onnx  # pylint: disable=import-outside-toplevel
  except ImportError as error:
    raise OptionError(f"Exporting to ONNX needs tf2onnx and ONNX Runtime, the onnx extra ({error}): "
                      f"{EXTRA_HINT}.") from None
  return tf2onnx, onnxruntime


def check_onnx_output_dir(saved_model_dir: str, output_dir: str, overwrite: bool = False):
  """Refuses, before any work, an `output_dir` (local or a bucket) that cannot be a folder, already holds an export's
  files (unless `overwrite`), or lies inside the SavedModel (a version folder that a model server loads stays as
  written)."""
  files.check_output_folder(output_dir, ONNX_FOLDER_FILES, overwrite)
  if files.is_remote(output_dir) != files.is_remote(saved_model_dir):
    return
  inside, source = output_dir.rstrip("/"), saved_model_dir.rstrip("/")
  if not files.is_remote(output_dir):
    inside, source = os.path.realpath(output_dir), os.path.realpath(saved_model_dir)
  if inside == source or inside.startswith(source.rstrip("/") + "/"):
    raise OptionError(f"--output_dir {output_dir} is inside the SavedModel {saved_model_dir}; choose a folder "
                      "outside it (nothing was written).")


def check_saved_model_dir(saved_model_dir: str):
  """Refuses, before any work, a `saved_model_dir` that is not a SavedModel of `export_saved_model`.

  Raises:
    InputFileError: no such folder (local or in a bucket), a file, or a folder that holds no SavedModel (an export
      directory's versions are named).
    DataError: a SavedModel without the assets of ours, or of a kind that does not convert (`check_model_kind`).
  """
  if not files.exists(saved_model_dir):
    raise InputFileError(f"SavedModel not found: {saved_model_dir}")
  if not files.is_folder(saved_model_dir):
    raise InputFileError(f"{saved_model_dir} is a file; name a SavedModel folder (<export_dir>/<version>, as "
                         "export_saved_model writes it).")
  if not tf.saved_model.contains_saved_model(saved_model_dir):
    versions = sorted(int(name) for name in files.list_folder(saved_model_dir)
                      if name.isdigit() and tf.saved_model.contains_saved_model(os.path.join(saved_model_dir, name)))
    if versions:
      held = f"versions {', '.join(map(str, versions))}" if len(versions) > 1 else f"version {versions[0]}"
      raise InputFileError(f"{saved_model_dir} is an export directory holding {held}, not a SavedModel: name a "
                           f"version folder, e.g. {saved_model_dir.rstrip('/')}/{versions[-1]}.")
    raise InputFileError(f"{saved_model_dir} holds no SavedModel (no saved_model.pb); name a version folder "
                         "that export_saved_model wrote (<export_dir>/<version>).")
  for name in (SPM_ASSET, CONFIG_ASSET):
    if not files.file_exists(_asset(saved_model_dir, name)):
      raise DataError(f"{saved_model_dir} has no assets/{name}: not a SavedModel of albert-tf's "
                      "export_saved_model, whose tokenizer travels with it.")
  proto = saved_model_pb2.SavedModel.FromString(files.read_bytes(f"{saved_model_dir.rstrip('/')}/saved_model.pb"))
  check_model_kind({name for meta_graph in proto.meta_graphs for name in meta_graph.signature_def},
                   saved_model_dir)


def converted_kinds() -> str:
  """The models `export_onnx` converts, for messages: encoders and those of the heads it does not refuse."""
  kinds = [head.description.removesuffix(" head") for head in task_heads.registered_heads()
           if head.onnx_refusal_signature is None]
  return f"encoders and models with a {', '.join(kinds[:-1])} or {kinds[-1]} head"


def check_model_kind(signature_names: Collection[str], saved_model_dir: str):
  """Refuses a SavedModel of a task head whose `serving_default` does not convert, known by its signatures'
  names (`TaskHead.onnx_refusal_signature`).

  Raises:
    DataError: naming the kind, its signature, and the kinds that convert.
  """
  for head in task_heads.registered_heads():
    if head.onnx_refusal_signature in signature_names:
      kind = head.description.removesuffix(" head")
      raise DataError(f"{saved_model_dir} is a {kind} (its {head.onnx_refusal_signature} signature): export_onnx "
                      f"does not support {kind}s; it converts {converted_kinds()}.")


def _asset(saved_model_dir: str, name: str) -> str:
  return f"{saved_model_dir.rstrip('/')}/assets/{name}"


def _copy_assets(saved_model_dir: str, folder: str) -> Dict[str, str]:
  """Copies the SavedModel's tokenizer and config assets (local or in a bucket) into the local `folder`."""
  paths = {}
  for name in (SPM_ASSET, CONFIG_ASSET, OPTIONS_ASSET):
    source = _asset(saved_model_dir, name)
    if name == OPTIONS_ASSET and not files.file_exists(source):
      continue  # options_lib reads Google's defaults, as every tool does
    paths[name] = os.path.join(folder, name)
    files.copy_file(source, paths[name])
  return paths


def _serving_signature(loaded, saved_model_dir: str):
  """`serving_default`, checked to take int32 ids we can make, and the text signatures that pack them."""
  missing = [name for name in ("serving_default", "encode_text", "encode_text_pair") if name not in loaded.signatures]
  if missing:
    raise DataError(f"{saved_model_dir} has no {', '.join(missing)} signature: not a SavedModel of albert-tf's "
                    "export_saved_model.")
  signature = loaded.signatures["serving_default"]
  specs = signature.structured_input_signature[1]
  for name, spec in sorted(specs.items()):
    if name not in _ID_INPUTS + ("p_mask",) or spec.dtype != tf.int32 or spec.shape.rank not in _AXES:
      raise DataError(f"{saved_model_dir}: serving_default takes {name} ({spec.dtype.name} {spec.shape}), "
                      "not the int32 ids of albert-tf's SavedModels.")
  return signature


def probe_batches(loaded, specs: Dict[str, tf.TensorSpec]) -> List[Dict[str, np.ndarray]]:
  """The inputs the converted model is checked on: `PROBE_PAIRS` packed by the SavedModel's `encode_text_pair` and
  `PROBE_TEXTS` by its `encode_text`, each batch cut to its longest text (so that the two lengths differ and the
  shorter rows are padded); shaped `[2, options, seq]` for a multiple-choice model (the rows as options, in two
  orders), with a `p_mask` of 1 outside the second segment's text where the model takes one (SQuAD v2)."""
  pairs = loaded.signatures["encode_text_pair"](text_a=tf.constant([a for a, _ in PROBE_PAIRS]),
                                                text_b=tf.constant([b for _, b in PROBE_PAIRS]))
  singles = loaded.signatures["encode_text"](text_a=tf.constant(PROBE_TEXTS))
  batches = []
  for packed in (pairs, singles):
    lengths = tf.reduce_sum(packed["input_mask"], axis=1).numpy()
    batch = {name: packed[name].numpy()[:, :lengths.max()].astype(np.int32) for name in _ID_INPUTS}
    if "p_mask" in specs:
      sep_id = batch["input_word_ids"][0, lengths[0] - 1]  # every packed text ends with [SEP]
      context = (batch["input_type_ids"] == 1) & (batch["input_mask"] == 1) & (batch["input_word_ids"] != sep_id)
      batch["p_mask"] = np.where(context, 0, 1).astype(np.int32)
    if specs["input_word_ids"].shape.rank == 3:
      batch = {name: np.stack([rows, rows[::-1]]) for name, rows in batch.items()}
    batches.append({name: batch[name] for name in specs})
  return batches


def _as_comparable(values: np.ndarray) -> np.ndarray:
  """Strings as `str` (TensorFlow gives bytes, ONNX Runtime str); anything else as it is."""
  if values.dtype.kind in "OSU":
    return np.array([value.decode("utf-8") if isinstance(value, bytes) else value for value in values.ravel()],
                    dtype=object).reshape(values.shape)
  return values


def difference(expected: np.ndarray, actual: np.ndarray) -> float:
  """The largest |actual - expected| of a float output (non-finite values must match exactly); for any other
  output 0 where all are equal. `inf` for other shapes or values that do not match."""
  expected, actual = _as_comparable(np.asarray(expected)), _as_comparable(np.asarray(actual))
  if expected.shape != actual.shape:
    return math.inf
  if expected.dtype.kind != "f":
    return 0.0 if np.array_equal(expected, actual) else math.inf
  finite = np.isfinite(expected)
  if not np.array_equal(finite, np.isfinite(actual)) or not np.array_equal(expected[~finite], actual[~finite]):
    return math.inf
  return float(np.max(np.abs(actual[finite] - expected[finite]), initial=0.0))


@contextlib.contextmanager
def _quiet_converter():
  """tf2onnx logs each step of a conversion at INFO; its warnings and errors stay."""
  logger = logging.getLogger("tf2onnx")
  level = logger.level
  logger.setLevel(max(level, logging.WARNING))
  try:
    yield
  finally:
    logger.setLevel(level)


def convert_signature(loaded, name: str, opset: int):
  """The ONNX `ModelProto` of the `serving_default` signature of a loaded SavedModel (`name` is its path), with the
  shapes `_set_shapes` gives."""
  tf2onnx, _ = _converter()
  from tf2onnx import optimizer, tf_loader, tfonnx  # pylint: disable=import-outside-toplevel
  signature = loaded.signatures["serving_default"]
  # The signature's arguments come first among its inputs (the captured variables follow), in the order of their
  # sorted names, as its outputs do; each is given the name of its argument or output.
  specs = tf.nest.flatten(signature.structured_input_signature)
  inputs = [tensor.name for tensor in signature.inputs[:len(specs)]]
  outputs = [tensor.name for tensor in signature.outputs]
  renamed = dict(zip(inputs, [spec.name for spec in specs]))
  renamed.update(zip(outputs, sorted(signature.structured_outputs)))
  with _quiet_converter(), tf.device("/cpu:0"):
    frozen, _ = tf_loader.from_trackable(loaded, signature, inputs, outputs, large_model=False)
    with tf.Graph().as_default() as graph:
      tf.import_graph_def(frozen, name="")
      onnx_graph = tfonnx.process_tf_graph(graph, opset=opset, input_names=inputs, output_names=outputs,
                                           tensors_to_rename=renamed)
    # Without catch_errors: catching copies the graph before each optimizer, three quarters of the optimizing time
    # (17.8 s of a base model's 23.8 s); an optimizer that fails then raises, where it would be skipped.
    onnx_graph = optimizer.optimize_graph(onnx_graph, catch_errors=False)
    model = onnx_graph.make_model(f"serving_default of {name}")
  model.producer_name = f"albert-tf with tf2onnx {tf2onnx.__version__}"
  _set_shapes(model, signature.structured_outputs)
  return model


def _set_shapes(model, output_specs: Dict[str, tf.TensorSpec]):
  """Names the dynamic axes of the inputs as `_AXES` (tf2onnx calls each unk__<n>) and the first axis of each output
  `batch`, and gives the outputs the sizes the signature knows (a classifier's classes), so that a reader of the
  model sees which sizes must agree."""
  renamed = {}
  for value in model.graph.input:
    dims = value.type.tensor_type.shape.dim
    for dim, name in zip(dims, _AXES.get(len(dims), ())):
      if dim.dim_param:
        renamed[dim.dim_param] = name
        dim.dim_param = name
  for value in list(model.graph.output) + list(model.graph.value_info):
    for dim in value.type.tensor_type.shape.dim:
      if dim.dim_param in renamed:
        dim.dim_param = renamed[dim.dim_param]
  for value in model.graph.output:
    dims = value.type.tensor_type.shape.dim
    for position, (dim, size) in enumerate(zip(dims, output_specs[value.name].shape)):
      if size is not None:
        dim.dim_value = size
      elif position == 0:
        dim.dim_param = "batch"


def run_onnx(session, batch: Dict[str, np.ndarray]) -> Dict[str, np.ndarray]:
  """An ONNX Runtime session's outputs on `batch`, by name."""
  names = [output.name for output in session.get_outputs()]
  return dict(zip(names, session.run(names, batch)))


def _session(model_bytes: bytes):
  _, onnxruntime = _converter()
  options = onnxruntime.SessionOptions()
  options.log_severity_level = 3  # errors only: it warns of every constant it folds
  return onnxruntime.InferenceSession(model_bytes, options, providers=["CPUExecutionProvider"])


def _tokenizer_mismatches(tokenizer_file: str, batches: List[Dict[str, np.ndarray]]) -> Optional[List[str]]:
  """The probe texts on which `tokenizers`, loaded from `tokenizer_file`, gives other ids or segments than the
  SavedModel packed; None without `tokenizers`. A text whose ids are longer than the longest the SavedModel packed
  may have been cut to its `max_seq_length`, and is not compared."""
  try:
    import tokenizers  # pylint: disable=import-outside-toplevel; installed with transformers
  except ImportError:
    return None
  tokenizer = tokenizers.Tokenizer.from_file(tokenizer_file)
  longest = max(batch["input_word_ids"].shape[-1] for batch in batches)
  mismatches = []
  for texts, batch in ((PROBE_PAIRS, batches[0]), ([(text, None) for text in PROBE_TEXTS], batches[1])):
    rows = (batch[name].reshape(-1, batch[name].shape[-1])[:len(texts)] for name in _ID_INPUTS)
    for (text_a, text_b), ids, mask, types in zip(texts, *rows):
      encoded, length = tokenizer.encode(text_a, text_b), int(mask.sum())
      if len(encoded.ids) <= longest and (encoded.ids != ids[:length].tolist()
                                          or encoded.type_ids != types[:length].tolist()):
        mismatches.append(text_a if text_b is None else f"{text_a} | {text_b}")
  return mismatches


def check_conversion(session, batches: List[Dict[str, np.ndarray]], expected: List[Dict[str, np.ndarray]],
                     tolerance: float, description: str) -> Dict[str, float]:
  """The largest difference of each output (see `difference`) between an ONNX Runtime `session` and the SavedModel's
  `expected` outputs on `batches`.

  Raises:
    DataError: an output more than `tolerance` apart, or missing, naming `description` (the SavedModel and opset).
  """
  differences = {}
  for batch, outputs in zip(batches, expected):
    actual = run_onnx(session, batch)
    for name, values in outputs.items():
      found = difference(values, actual[name]) if name in actual else math.inf
      differences[name] = max(differences.get(name, 0.0), found)
  wrong = {name: found for name, found in differences.items() if found > tolerance}
  if wrong:
    described = ", ".join(f"{name} by up to {found:.2g}" if math.isfinite(found) else f"{name} (other values)"
                          for name, found in sorted(wrong.items()))
    raise DataError(f"The ONNX model of {description} does not give its serving_default outputs: {described}, more "
                    f"than {tolerance:g} apart; nothing was written. Another --opset may convert it faithfully.")
  return differences


def export_onnx(saved_model_dir: str, output_dir: str, overwrite: bool = False, opset: int = DEFAULT_OPSET,
                tolerance: float = TOLERANCE) -> OnnxExport:
  """Writes `<output_dir>/model.onnx`, the SavedModel's `serving_default` in ONNX, and the tokenizer files.

  The folder appears whole or not at all: the model is converted and checked in memory, and the files are
  published by `files.staged_folder`, `model.onnx` last (written locally, then renamed into place on local disk or
  uploaded to a bucket); with `overwrite`, what it held is replaced only then.

  Args:
    saved_model_dir: a version folder that `saved_model.export_saved_model` wrote (`<export_dir>/<version>`),
      local or in a bucket.
    output_dir: a folder, local or in a bucket, created if needed.
    overwrite: replace the files of an earlier export that `output_dir` holds (else it is refused).
    opset: the ONNX opset, `MIN_OPSET` to `MAX_OPSET`.
    tolerance: the largest difference allowed between a float output of ONNX Runtime and the SavedModel's.

  Raises:
    OptionError: before any work: an `output_dir` that holds an export (without `overwrite`), cannot be written
      or is inside the SavedModel; an opset out of range; tf2onnx or ONNX Runtime missing.
    InputFileError, DataError: before any work, a `saved_model_dir` that is not a SavedModel of ours (its config,
      SentencePiece model and tokenizer options read); after the conversion, an ONNX model whose outputs are not
      the SavedModel's (nothing is written).
  """
  if not MIN_OPSET <= opset <= MAX_OPSET:
    raise OptionError(f"--opset must be from {MIN_OPSET} to {MAX_OPSET} (tf2onnx's newest), not {opset}.")
  check_onnx_output_dir(saved_model_dir, output_dir, overwrite)
  check_saved_model_dir(saved_model_dir)
  _converter()
  with files.local_temp_folder() as asset_dir:
    assets = _copy_assets(saved_model_dir, asset_dir)
    config = AlbertConfig.from_json_file(assets[CONFIG_ASSET])
    options = options_lib.resolve_options(assets[SPM_ASSET])
    SentencePieceTokenizer(assets[SPM_ASSET])  # fails on a bad model before the work
    importlib.import_module("tensorflow_text")  # registers the SentencePiece op of the text signatures
    try:
      loaded = tf.saved_model.load(saved_model_dir)
    except Exception as error:  # pylint: disable=broad-except; TensorFlow raises many types for a damaged SavedModel
      raise DataError(f"{saved_model_dir} cannot be loaded as a SavedModel ({error}).") from None
    signature = _serving_signature(loaded, saved_model_dir)
    batches = probe_batches(loaded, signature.structured_input_signature[1])
    expected = [{name: value.numpy() for name, value in signature(**batch).items()} for batch in batches]

    start = time.perf_counter()
    model = convert_signature(loaded, saved_model_dir, opset)
    conversion_seconds = time.perf_counter() - start
    model_bytes = model.SerializeToString()
    differences = check_conversion(_session(model_bytes), batches, expected, tolerance,
                                   f"{saved_model_dir} (opset {opset})")

    with files.staged_folder(output_dir, ONNX_FILE) as staging:
      files.write_atomically(os.path.join(staging, ONNX_FILE), model_bytes)
      _, parity = hf_tokenizer.write_measured_tokenizer_files(assets[SPM_ASSET], staging, options,
                                                              config.max_position_embeddings)
      mismatches = _tokenizer_mismatches(os.path.join(staging, "tokenizer.json"), batches)
      paths = {name: os.path.join(output_dir, name) for name in files.list_folder(staging)}
  return OnnxExport(paths=paths, inputs=[value.name for value in model.graph.input],
                    outputs=[value.name for value in model.graph.output],
                    max_abs_differences={name: found for name, found in differences.items()
                                         if expected[0][name].dtype.kind == "f"},
                    probe_shapes=[batch["input_word_ids"].shape for batch in batches], tokenizer_parity=parity,
                    tokenizer_mismatches=mismatches, conversion_seconds=conversion_seconds)
