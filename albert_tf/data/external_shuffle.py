"""An external shuffle of records on disk, in memory bounded by a budget, whatever the number of records.

Each record comes with a random 64-bit key (`pretraining_corpus.Entry`). Records are scattered into bucket
files by the top bits of their key, so each bucket holds one range of keys; the buckets are then read back
one at a time, in key order, and each is sorted in memory. Reading them in turn yields every record in the
order of (key, pass, document, pair): a uniform random permutation that depends only on the keys, not on how
many buckets there were. A bucket larger than the budget is scattered again by the next bits of the keys.
"""

import array
import math
import os
import struct
from typing import Dict, Iterable, Iterator

import numpy as np

from albert_tf import files
from albert_tf.data.pretraining_corpus import KEY_BITS, Entry, bucket_of

# key, pass, document, pair, record length; then the record.
_HEADER = struct.Struct("<QIQII")
# At most this many files are open at once when a bucket is scattered again.
_MAX_SPLIT_BITS = 8


def encode_by_bucket(entries: Iterable[Entry], bits: int) -> Dict[int, bytes]:
  """The entries as bytes to append to each of 2**bits bucket files (a worker makes these, the writer appends)."""
  chunks: Dict[int, list] = {}
  for entry in entries:
    chunks.setdefault(bucket_of(entry.key, bits), []).append(
        _HEADER.pack(entry.key, entry.pass_index, entry.document_index, entry.pair_index, len(entry.record))
        + entry.record)
  return {bucket: b"".join(parts) for bucket, parts in chunks.items()}


def _entries_of(path: str) -> Iterator[bytes]:
  """The encoded entries of a bucket file, one at a time (header and record)."""
  with files.open_file(path, "rb") as reader:
    while True:
      header = reader.read(_HEADER.size)
      if not header:
        return
      yield header + reader.read(_HEADER.unpack(header)[4])


class ShuffleBuckets:
  """The 2**bits bucket files of one record set, in a local `directory`.

  Args:
    directory: where the bucket files go (removed by the caller).
    bits: the top key bits that name a bucket.
  """

  def __init__(self, directory: str, bits: int):
    files.make_folders(directory)
    self.directory = directory
    self.bits = bits
    self._paths = [os.path.join(directory, f"bucket-{index:05d}") for index in range(2**bits)]
    self._writers = [files.open_file(path, "wb") for path in self._paths]
    self.num_records = 0

  def append(self, chunks: Dict[int, bytes], num_records: int):
    for bucket, chunk in chunks.items():
      self._writers[bucket].write(chunk)
    self.num_records += num_records

  def close(self):
    for writer in self._writers:
      writer.close()

  def records_in_order(self, memory_bytes: int) -> Iterator[bytes]:
    """Every record, in the order of (key, pass, document, pair), holding at most about one bucket of
    `memory_bytes` in memory. Bucket files are removed as they are read."""
    for path in self._paths:
      yield from _sorted_bucket(path, self.bits, memory_bytes)


def _sorted_bucket(path: str, bits_used: int, memory_bytes: int) -> Iterator[bytes]:
  size = files.file_size(path)
  if size > memory_bytes and bits_used < KEY_BITS:
    # Too large for the budget: scatter it by the next bits of the keys, then sort each part.
    split_bits = min(_MAX_SPLIT_BITS, KEY_BITS - bits_used, math.ceil(math.log2(2 * size / max(1, memory_bytes))))
    shift = KEY_BITS - bits_used - split_bits
    parts = [f"{path}.{index:03d}" for index in range(2**split_bits)]
    writers = [files.open_file(part, "wb") for part in parts]
    try:
      for encoded in _entries_of(path):
        writers[(_HEADER.unpack_from(encoded)[0] >> shift) & (2**split_bits - 1)].write(encoded)
    finally:
      for writer in writers:
        writer.close()
    files.remove(path)
    for part in parts:
      yield from _sorted_bucket(part, bits_used + split_bits, memory_bytes)
    return

  data = files.read_bytes(path)
  files.remove(path)
  columns = [array.array("Q") for _ in range(6)]  # key, pass, document, pair, record offset, record length
  offset = 0
  while offset < len(data):
    key, pass_index, document, pair, length = _HEADER.unpack_from(data, offset)
    offset += _HEADER.size
    for column, value in zip(columns, (key, pass_index, document, pair, offset, length)):
      column.append(value)
    offset += length
  key, pass_index, document, pair, starts, lengths = (np.frombuffer(column, np.uint64) for column in columns)
  view = memoryview(data)
  for index in np.lexsort((pair, document, pass_index, key)).tolist():
    start = int(starts[index])
    yield bytes(view[start:start + int(lengths[index])])
