"""Hugging Face's weight files: the safetensors format, read and written with NumPy alone (without the
safetensors package), and a folder's weights read from whichever files it has (local or in a bucket)."""

import json
import os
import struct
from typing import Dict, Optional

import numpy as np

from albert_tf import files
from albert_tf.errors import DataError, InputFileError, json_error_text

_WRITE_DTYPES = {np.dtype(np.float32): "F32", np.dtype(np.float16): "F16", np.dtype(np.int64): "I64",
                       np.dtype(np.int32): "I32"}
_READ_DTYPES = {"F32": np.dtype("<f4"), "F16": np.dtype("<f2"), "BF16": np.dtype("<u2"),
                            "I64": np.dtype("<i8"), "I32": np.dtype("<i4")}


def write_safetensors(path: str, tensors: Dict[str, np.ndarray], metadata: Optional[Dict[str, str]] = None):
  """Writes the safetensors format: u64 header size, JSON header, then the raw little-endian tensors."""
  header, offset = {}, 0
  if metadata:
    header["__metadata__"] = metadata
  for name in sorted(tensors):
    array = tensors[name]
    if array.dtype not in _WRITE_DTYPES:
      raise ValueError(f"Cannot write {name} of dtype {array.dtype} to safetensors.")
    size = array.nbytes
    header[name] = {"dtype": _WRITE_DTYPES[array.dtype], "shape": list(array.shape),
                    "data_offsets": [offset, offset + size]}
    offset += size
  header_bytes = json.dumps(header, separators=(",", ":")).encode("utf-8")
  header_bytes += b" " * (-len(header_bytes) % 8)  # tensors start 8-byte aligned
  with files.open_file(path, "wb") as writer:
    writer.write(struct.pack("<Q", len(header_bytes)))
    writer.write(header_bytes)
    for name in sorted(tensors):
      writer.write(tensors[name].astype(tensors[name].dtype.newbyteorder("<"), copy=False).tobytes())


def read_safetensors(path: str) -> Dict[str, np.ndarray]:
  """Reads a safetensors file: floats (F32, F16, BF16) as float32 arrays, integers as they are.

  Raises:
    DataError: naming the file, when it is not a safetensors file or is cut short.
  """
  content = files.read_bytes(path)
  # The header's size is checked against the file's: in a file of another kind its first 8 bytes may say anything.
  if len(content) < 8 or (header_size := struct.unpack("<Q", content[:8])[0]) > len(content) - 8:
    raise DataError(f"{path}: not a safetensors file, or cut short (the header its first 8 bytes announce does not "
                    f"fit in its {len(content)} bytes).")
  try:
    header = json.loads(content[8:8 + header_size])
  except ValueError as error:  # not UTF-8, or not JSON
    raise DataError(f"{path}: not a safetensors file (its header is not JSON: {error}).") from None
  if not isinstance(header, dict):
    raise DataError(f"{path}: not a safetensors file (its header is not a JSON object).")
  data = memoryview(content)[8 + header_size:]
  tensors = {}
  for name, entry in header.items():
    if name == "__metadata__":
      continue
    if entry["dtype"] not in _READ_DTYPES:
      raise DataError(f"{path}: cannot read {name} of dtype {entry['dtype']}.")
    dtype, (start, end) = _READ_DTYPES[entry["dtype"]], entry["data_offsets"]
    if not 0 <= start <= end <= len(data) or end - start != np.prod(entry["shape"]) * dtype.itemsize:
      raise DataError(f"{path}: {name} {entry['shape']} does not fit its bytes {start} to {end} of the {len(data)} "
                      "after the header: the file is cut short or corrupt.")
    array = np.frombuffer(data[start:end], dtype).reshape(entry["shape"])
    if entry["dtype"] == "BF16":  # bfloat16 is the top half of a float32
      array = (array.astype(np.uint32) << 16).view(np.float32)
    native = np.float32 if array.dtype.kind == "f" else array.dtype.newbyteorder("=")
    tensors[name] = array.astype(native)  # a writable copy in native byte order
  return tensors


def read_hf_weights(folder: str) -> Dict[str, np.ndarray]:
  """A Hugging Face folder's tensors by name, as float32 arrays: `model.safetensors`, a sharded safetensors index,
  or `pytorch_model.bin` (which needs torch); a sentence-transformers module's folder too."""
  safetensors_file = os.path.join(folder, "model.safetensors")
  index_file = os.path.join(folder, "model.safetensors.index.json")
  pytorch_file = os.path.join(folder, "pytorch_model.bin")
  if files.file_exists(safetensors_file):
    return read_safetensors(safetensors_file)
  if files.file_exists(index_file):
    try:
      shards = sorted(set(json.loads(files.read_bytes(index_file))["weight_map"].values()))
    except json.JSONDecodeError as error:
      raise DataError(f"{index_file}: not valid JSON ({json_error_text(error)}).") from None
    except (UnicodeDecodeError, TypeError, KeyError, AttributeError):
      raise DataError(f"{index_file}: not a safetensors index (a JSON object whose weight_map names each "
                      "tensor's shard).") from None
    tensors = {}
    for shard in shards:
      tensors.update(read_safetensors(os.path.join(folder, shard)))
    return tensors
  if files.file_exists(pytorch_file):
    return _read_pytorch_weights(pytorch_file)
  raise InputFileError(f"No weights in {folder}: expected model.safetensors, model.safetensors.index.json "
                       "or pytorch_model.bin.")


def _read_pytorch_weights(path: str) -> Dict[str, np.ndarray]:
  try:
    import torch  # pylint: disable=import-outside-toplevel  # only this format needs PyTorch
  except ImportError:
    raise DataError(f"Reading {path} needs PyTorch (pip install torch); a folder with model.safetensors "
                    "needs nothing more.") from None
  with files.local_copy(path) as local_path:  # torch reads local files only
    try:
      state_dict = torch.load(local_path, map_location="cpu", weights_only=True)
    except Exception as error:  # pylint: disable=broad-except; torch raises many types for a damaged file
      raise DataError(f"{path}: not a PyTorch weights file, or cut short ({error}).") from None
  return {name: (tensor.float() if tensor.is_floating_point() else tensor).numpy()
          for name, tensor in state_dict.items()}
