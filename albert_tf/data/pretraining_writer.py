"""Creates ALBERT pretraining TFRecords from text: streamed, parallel, reproducible, bounded in memory.

Google's tool reads the whole corpus, builds every instance of every `dupe_factor` pass in memory, then
shuffles and writes. Here the corpus streams through in *blocks* of whole documents:

- pass 0 tokenizes each block once (in a worker process) and keeps its ids in a small cache file;
  passes 1..dupe_factor-1 re-read the cache, so every pass covers the whole corpus, as Google's do;
- each (pass, block) draws from its own `random.Random` seeded by (random_seed, pass, block), and results
  are consumed in task order, so the bytes written do not depend on `num_workers`;
- records go through a bounded shuffle window, then round-robin to the output shards (Google's layout);
- outputs are written to temporary files and renamed into place only when everything succeeded.

Peak memory is the shuffle window plus a few blocks in flight, whatever the corpus size.
"""

import collections
import dataclasses
import multiprocessing
import os
import random
import shutil
import sys
import tempfile
import time
from typing import Iterator, List, Optional, Sequence

import numpy as np

from albert_tf.data.example_encoding import ExampleEncoder
from albert_tf.data.instances import InstanceOptions, Vocabulary, create_instances_from_document, is_start_piece
from albert_tf.errors import DataError, InputFileError, OptionError
from albert_tf.files import read_utf8_lines
from albert_tf.text.tokenizer import SentencePieceTokenizer

# A block closes once it holds this much text and enough documents to draw "random other documents" from.
BLOCK_CHARACTERS = 256 * 1024
MIN_BLOCK_DOCUMENTS = 8
MAX_BLOCK_DOCUMENTS = 4096
# A document longer than this is cut into parts, so that no block outgrows memory.
MAX_DOCUMENT_CHARACTERS = 4 * 1024 * 1024


@dataclasses.dataclass(frozen=True)
class TokenizerOptions:
  spm_model_file: str
  do_lower_case: bool = True
  keep_accents: bool = False


@dataclasses.dataclass
class DataSummary:
  """What was written: the closing summary of the tool."""

  instances: int = 0
  documents: int = 0
  tokens: int = 0  # real tokens, [CLS]/[SEP] included
  masked: int = 0
  masked_as_mask_token: int = 0
  masked_kept: int = 0
  masked_random: int = 0
  sop_label_1: int = 0
  output_files: Sequence[str] = ()
  seconds: float = 0.0

  def add(self, other: "DataSummary"):
    for field in ("instances", "tokens", "masked", "masked_as_mask_token", "masked_kept", "masked_random",
                  "sop_label_1"):
      setattr(self, field, getattr(self, field) + getattr(other, field))

  @property
  def mask_rate(self) -> float:
    """Masked tokens over tokens other than [CLS]/[SEP] (how Google's figures are measured)."""
    return self.masked / max(1, self.tokens - 3 * self.instances)

  def lines(self) -> List[str]:
    masked = max(1, self.masked)
    return [
        f"instances: {self.instances:,} from {self.documents:,} documents in {self.seconds:.1f} s "
        f"({self.instances / max(self.seconds, 1e-9):,.0f} instances/s)",
        f"tokens: {self.tokens:,} (mean sequence length {self.tokens / max(1, self.instances):.2f})",
        f"mask rate: {self.mask_rate:.4f} of non-special tokens; [MASK] / kept / random: "
        f"{self.masked_as_mask_token / masked:.3f} / {self.masked_kept / masked:.3f} / "
        f"{self.masked_random / masked:.3f}",
        f"SOP balance: label 1 (swapped or random document) {self.sop_label_1 / max(1, self.instances):.4f}",
        "output: " + ", ".join(self.output_files),
    ]


class CorpusError(DataError):
  """Input text that cannot be used: missing, empty, or not UTF-8."""


def read_documents(input_files: Sequence[str]) -> Iterator[List[str]]:
  """Yields documents (lists of non-blank lines) of Google's format: a blank line between documents.

  Raises:
    DataError: a line that is not UTF-8, naming the file and line.
  """
  for path in input_files:
    document, size = [], 0
    for _, line in read_utf8_lines(path):
      line = line.strip()
      if line:
        document.append(line)
        size += len(line)
      if (not line or size > MAX_DOCUMENT_CHARACTERS) and document:
        yield document
        document, size = [], 0
    if document:
      yield document


def _blocks(documents: Iterator[List[str]]) -> Iterator[List[List[str]]]:
  block, size = [], 0
  for document in documents:
    block.append(document)
    size += sum(len(line) for line in document)
    if (size >= BLOCK_CHARACTERS and len(block) >= MIN_BLOCK_DOCUMENTS) or len(block) >= MAX_BLOCK_DOCUMENTS:
      yield block
      block, size = [], 0
  if block:
    yield block


def vocabulary_of(tokenizer: SentencePieceTokenizer) -> Vocabulary:
  pieces = [tokenizer.sp_model.IdToPiece(i) for i in range(tokenizer.vocab_size)]
  return Vocabulary(size=len(pieces), cls_id=tokenizer.cls_id, sep_id=tokenizer.sep_id,
                    mask_id=tokenizer.mask_id, is_start_piece=[is_start_piece(piece) for piece in pieces])


# State of a worker process (set once by `_init_worker`; a single-process run uses it too).
_worker = {}


def _init_worker(tokenizer_options: TokenizerOptions, options: InstanceOptions, random_seed: int,
                 cache_dir: str):
  tokenizer = SentencePieceTokenizer(tokenizer_options.spm_model_file, tokenizer_options.do_lower_case,
                                     tokenizer_options.keep_accents)
  _worker.update(tokenizer=tokenizer, vocab=vocabulary_of(tokenizer), options=options, seed=random_seed,
                 cache_dir=cache_dir,
                 encoder=ExampleEncoder(options.max_seq_length, options.num_label_slots, tokenizer.vocab_size))


def _tokenized_block(pass_index: int, block_index: int, block: Optional[List[List[str]]]):
  """Documents of sentences of ids: tokenized in pass 0 and cached, read back in later passes."""
  cache = os.path.join(_worker["cache_dir"], f"block-{block_index:08d}.npz")
  if pass_index > 0:
    with np.load(cache) as arrays:
      ids, sentence_ends, document_ends = arrays["ids"], arrays["sentence_ends"], arrays["document_ends"]
    sentences = np.split(ids, sentence_ends[:-1]) if len(ids) else []
    sentences = [sentence.tolist() for sentence in sentences]
    starts = [0] + document_ends[:-1].tolist()
    return [sentences[start:end] for start, end in zip(starts, document_ends.tolist())]
  tokenizer = _worker["tokenizer"]
  documents = []
  for lines in block:
    sentences = [ids for ids in (tokenizer.encode(line, special_tokens_in_text=False) for line in lines) if ids]
    if sentences:
      documents.append(sentences)
  sentence_lengths = [len(s) for document in documents for s in document]
  np.savez(cache, ids=np.array([t for document in documents for s in document for t in s], np.int32),
           sentence_ends=np.cumsum(sentence_lengths, dtype=np.int64),
           document_ends=np.cumsum([len(document) for document in documents], dtype=np.int64))
  return documents


def _process_block(task):
  """One (pass, block): its serialized records and their statistics."""
  pass_index, block_index, block = task
  documents = _tokenized_block(pass_index, block_index, block)
  options, vocab, encoder = _worker["options"], _worker["vocab"], _worker["encoder"]
  rng = random.Random(f"{_worker['seed']}:{pass_index}:{block_index}")
  records, summary = [], DataSummary(documents=len(documents))
  for document_index in range(len(documents)):
    for instance in create_instances_from_document(documents, document_index, options, vocab, rng):
      records.append(encoder.encode(instance))
      summary.instances += 1
      summary.tokens += len(instance.input_ids)
      summary.sop_label_1 += instance.sentence_order_label
      for position, label in zip(instance.masked_lm_positions, instance.masked_lm_ids):
        token = instance.input_ids[position]
        summary.masked += 1
        summary.masked_as_mask_token += token == vocab.mask_id
        summary.masked_kept += token == label
        summary.masked_random += token != label and token != vocab.mask_id
  return records, summary


class _OrderedTasks:
  """Runs tasks on a pool (or inline) with a bounded number in flight, yielding results in task order."""

  def __init__(self, pool, max_in_flight: int):
    self._pool = pool
    self._max_in_flight = max_in_flight
    self._in_flight = collections.deque()

  def submit(self, task) -> Iterator:
    """Queues `task`; yields the results that had to finish first to make room."""
    if self._pool is None:
      yield _process_block(task)
      return
    while len(self._in_flight) >= self._max_in_flight:
      yield self._in_flight.popleft().get()
    self._in_flight.append(self._pool.apply_async(_process_block, (task,)))

  def drain(self) -> Iterator:
    while self._in_flight:
      yield self._in_flight.popleft().get()


class _ShuffledShardWriter:
  """A bounded shuffle window in front of round-robin TFRecord shards."""

  def __init__(self, paths: Sequence[str], window: int, rng: random.Random):
    import tensorflow as tf  # only the writing process needs TensorFlow
    self._writers = [tf.io.TFRecordWriter(path) for path in paths]
    self._window = window
    self._rng = rng
    self._buffer = []
    self._next = 0

  def _write(self, record: bytes):
    self._writers[self._next].write(record)
    self._next = (self._next + 1) % len(self._writers)

  def add(self, record: bytes):
    if len(self._buffer) < self._window:
      self._buffer.append(record)
      return
    slot = self._rng.randrange(self._window)
    self._write(self._buffer[slot])
    self._buffer[slot] = record

  def close(self):
    self._rng.shuffle(self._buffer)
    for record in self._buffer:
      self._write(record)
    for writer in self._writers:
      writer.close()


class _Progress:
  """A line on stderr every few seconds: pass, documents, instances, instances/s, ETA."""

  def __init__(self, dupe_factor: int, enabled: bool, interval: float = 2.0):
    self._dupe_factor = dupe_factor
    self._enabled = enabled
    self._interval = interval
    self._start = self._last = time.time()
    self.documents_per_pass = None

  def update(self, pass_index: int, documents_done: int, instances: int, final: bool = False):
    now = time.time()
    if not self._enabled or (now - self._last < self._interval and not final):
      return
    self._last = now
    elapsed = now - self._start
    total = f"/{self.documents_per_pass:,}" if self.documents_per_pass else ""
    eta = ""
    if self.documents_per_pass:
      done = pass_index * self.documents_per_pass + documents_done
      remaining = self._dupe_factor * self.documents_per_pass - done
      eta = f" | ETA {remaining * elapsed / max(done, 1):.0f} s"
    print(f"[create_pretraining_data] pass {pass_index + 1}/{self._dupe_factor} | documents "
          f"{documents_done:,}{total} | instances {instances:,} | {instances / max(elapsed, 1e-9):,.0f} "
          f"instances/s | elapsed {elapsed:.0f} s{eta}", file=sys.stderr, flush=True)


def create_pretraining_data(input_files: Sequence[str], output_files: Sequence[str],
                            tokenizer_options: TokenizerOptions, options: InstanceOptions,
                            dupe_factor: int = 40, random_seed: int = 12345, num_workers: int = 1,
                            shuffle_window: int = 20000, progress: bool = True) -> DataSummary:
  """Writes Google-format ALBERT pretraining TFRecords.

  Args:
    input_files: text files in Google's format (one sentence per line, blank line between documents).
    output_files: TFRecord shards, written round-robin; replaced only on success.
    tokenizer_options: the SentencePiece model and its text options.
    options: the instance flags (Google's names and defaults).
    dupe_factor: passes over the corpus, each with fresh random masks and pairs.
    random_seed: the same seed and flags give byte-identical files, whatever `num_workers`.
    num_workers: processes that tokenize and build instances (1: all in this process).
    shuffle_window: records held for shuffling; bounds memory.
    progress: print progress lines to stderr.

  Returns:
    The `DataSummary` of what was written.

  Raises:
    FileNotFoundError: an input file is missing.
    CorpusError: non-UTF-8 input (file and line named) or a corpus that yields no instance.
    ValueError: a SentencePiece model without [CLS]/[SEP]/[MASK], bad flags.
  """
  if not input_files:
    raise InputFileError("No input files.")
  for path in input_files:
    if not os.path.isfile(path):
      raise InputFileError(f"Input file not found: {path}")
  if not output_files:
    raise OptionError("No output files.")
  if dupe_factor < 1 or num_workers < 1 or shuffle_window < 1:
    raise OptionError("--dupe_factor, --num_workers and the shuffle window must be positive.")
  SentencePieceTokenizer(tokenizer_options.spm_model_file)  # a bad model fails here, before any work

  start = time.time()
  output_dirs = {os.path.dirname(os.path.abspath(path)) for path in output_files}
  for directory in output_dirs:
    os.makedirs(directory, exist_ok=True)
  temporary = [f"{path}.tmp-{os.getpid()}" for path in output_files]
  cache_dir = tempfile.mkdtemp(prefix=".albert_data_cache-", dir=sorted(output_dirs)[0])
  init_args = (tokenizer_options, options, random_seed, cache_dir)
  pool = None
  summary = DataSummary(output_files=list(output_files))
  try:
    if num_workers > 1:
      # Workers come from a fork server, never from this process: whatever TensorFlow state the caller holds
      # (threads, a GPU context) is not inherited. The data path imports no TensorFlow, so they start fast.
      pool = multiprocessing.get_context("forkserver").Pool(num_workers, _init_worker, init_args)
    else:
      _init_worker(*init_args)
    writer = _ShuffledShardWriter(temporary, shuffle_window, random.Random(f"{random_seed}:shuffle"))
    tasks = _OrderedTasks(pool, max_in_flight=2 * num_workers)
    tracker = _Progress(dupe_factor, progress)
    num_blocks = 0

    def consume(results, pass_index, documents_done):
      for records, block_summary in results:
        documents_done += block_summary.documents
        summary.add(block_summary)
        for record in records:
          writer.add(record)
        tracker.update(pass_index, documents_done, summary.instances)
      return documents_done

    for pass_index in range(dupe_factor):
      documents_done = 0
      blocks = _blocks(read_documents(input_files)) if pass_index == 0 else (None for _ in range(num_blocks))
      for block_index, block in enumerate(blocks):
        num_blocks = max(num_blocks, block_index + 1)
        documents_done = consume(tasks.submit((pass_index, block_index, block)), pass_index, documents_done)
      # Later passes read pass 0's caches: finish the pass before the next starts.
      documents_done = consume(tasks.drain(), pass_index, documents_done)
      if pass_index == 0:
        summary.documents = tracker.documents_per_pass = documents_done
        if not documents_done:
          raise CorpusError(f"No text in {', '.join(input_files)}: the corpus is empty (or only blank lines).")
      tracker.update(pass_index, documents_done, summary.instances, final=pass_index == dupe_factor - 1)
    writer.close()
    if not summary.instances:
      raise CorpusError(f"No instance could be made from {', '.join(input_files)} with these flags.")
    for temporary_path, path in zip(temporary, output_files):
      os.replace(temporary_path, path)
  finally:
    if pool is not None:
      pool.terminate()
      pool.join()
    for temporary_path in temporary:
      if os.path.exists(temporary_path):
        os.remove(temporary_path)
    shutil.rmtree(cache_dir, ignore_errors=True)
  summary.seconds = time.time() - start
  return summary
