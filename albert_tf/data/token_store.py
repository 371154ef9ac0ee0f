"""A tokenized corpus on disk that any process can read any document of, holding none of it in memory.

Three flat files in a local directory: the token ids of every sentence one after another (int32), the offset where
each sentence starts and ends (int64, with a leading 0), and the sentence offset where each document starts
and ends (int64, with a leading 0). One process appends whole documents in order; once it has closed the
store, any number of readers fetch documents by index with a few positioned reads (`os.pread`), so that a
random document of a corpus of any size costs the same and no reader's memory grows with the corpus.
"""

import os
from typing import List

import numpy as np

from albert_tf import files

_TOKENS, _SENTENCE_OFFSETS, _DOCUMENT_OFFSETS = "tokens.int32", "sentence_offsets.int64", "document_offsets.int64"


class TokenStoreWriter:
  """Appends documents (lists of sentences of ids) to a new store in `directory`.

  It also cuts the documents into `blocks`: ranges of consecutive documents of about `tokens_per_block`
  tokens (at least one document each), the units of work of the passes that read the store.
  """

  def __init__(self, directory: str, tokens_per_block: int):
    files.make_folders(directory)
    self.directory = directory
    self.tokens_per_block = tokens_per_block
    self.blocks: List[range] = []
    self._block_start, self._block_tokens = 0, 0
    self._writers = {name: files.open_file(os.path.join(directory, name), "wb") for name in
                   (_TOKENS, _SENTENCE_OFFSETS, _DOCUMENT_OFFSETS)}
    self.num_documents = 0
    self.num_sentences = 0
    self.num_tokens = 0
    zero = np.zeros(1, np.int64).tobytes()
    self._writers[_SENTENCE_OFFSETS].write(zero)
    self._writers[_DOCUMENT_OFFSETS].write(zero)

  def append(self, tokens: np.ndarray, sentence_lengths: np.ndarray, document_sentence_counts: np.ndarray):
    """Appends documents given as their concatenated ids, the length of each sentence, and the number of
    sentences of each document (a document may have none)."""
    self._writers[_TOKENS].write(np.asarray(tokens, np.int32).tobytes())
    self._writers[_SENTENCE_OFFSETS].write((self.num_tokens + np.cumsum(sentence_lengths, dtype=np.int64)).tobytes())
    sentence_ends = np.cumsum(document_sentence_counts, dtype=np.int64)
    self._writers[_DOCUMENT_OFFSETS].write((self.num_sentences + sentence_ends).tobytes())
    token_ends = np.concatenate([[0], np.cumsum(sentence_lengths, dtype=np.int64)])[sentence_ends]
    for document_tokens in np.diff(token_ends, prepend=0).tolist():
      self.num_documents += 1
      self._block_tokens += document_tokens
      if self._block_tokens >= self.tokens_per_block:
        self._close_block()
    self.num_tokens += int(token_ends[-1]) if len(token_ends) else 0
    self.num_sentences += len(sentence_lengths)

  def _close_block(self):
    if self.num_documents > self._block_start:
      self.blocks.append(range(self._block_start, self.num_documents))
    self._block_start, self._block_tokens = self.num_documents, 0

  def close(self):
    self._close_block()
    for writer in self._writers.values():
      writer.close()


class TokenStoreReader:
  """Reads documents of a closed store by index."""

  def __init__(self, directory: str):
    self._fds = {name: os.open(os.path.join(directory, name), os.O_RDONLY) for name in
                 (_TOKENS, _SENTENCE_OFFSETS, _DOCUMENT_OFFSETS)}
    self.num_documents = os.fstat(self._fds[_DOCUMENT_OFFSETS]).st_size // 8 - 1

  def _read(self, name: str, dtype, start: int, count: int) -> np.ndarray:
    size = np.dtype(dtype).itemsize
    data = os.pread(self._fds[name], count * size, start * size)
    return np.frombuffer(data, dtype)

  def documents(self, first: int, end: int) -> List[List[List[int]]]:
    """Documents `first`..`end - 1`, each a list of sentences of ids."""
    sentence_bounds = self._read(_DOCUMENT_OFFSETS, np.int64, first, end - first + 1)
    first_sentence, end_sentence = int(sentence_bounds[0]), int(sentence_bounds[-1])
    token_bounds = self._read(_SENTENCE_OFFSETS, np.int64, first_sentence, end_sentence - first_sentence + 1)
    tokens = self._read(_TOKENS, np.int32, int(token_bounds[0]), int(token_bounds[-1] - token_bounds[0])).tolist()
    bounds = (token_bounds - token_bounds[0]).tolist()
    sentences = [tokens[start:stop] for start, stop in zip(bounds[:-1], bounds[1:])]
    relative = (sentence_bounds - first_sentence).tolist()
    return [sentences[start:stop] for start, stop in zip(relative[:-1], relative[1:])]

  def document(self, index: int) -> List[List[int]]:
    return self.documents(index, index + 1)[0]

  def close(self):
    for fd in self._fds.values():
      os.close(fd)
