"""Hugging Face's weight files: the safetensors format, read and written with NumPy alone (without the
safetensors package), and a folder's weights read from whichever files it has."""

import json
import os
import struct
from typing import Dict, Optional

import numpy as np

from albert_tf.errors import DataError, InputFileError

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
    if entry["dtype"] not in _READ_DTYPES:
      raise DataError(f"{path}: cannot read {name} of dtype {entry['dtype']}.")
    start, end = entry["data_offsets"]
    array = np.frombuffer(data[start:end], _READ_DTYPES[entry["dtype"]]).reshape(entry["shape"])
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
