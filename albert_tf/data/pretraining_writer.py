"""Creates ALBERT pretraining TFRecords on one machine: parallel, reproducible, globally shuffled, in bounded
memory.

Google's tool holds the whole corpus and every instance of every `dupe_factor` pass in memory, then shuffles
and writes (users report more than 1 TB of RAM for a 40 GB corpus). Here the work runs in three phases, with
disk where Google uses memory:

1. **tokenize**: the corpus streams through in blocks of text; workers tokenize them and the main process
   appends each split's documents (train, and the held-out eval documents) to a `token_store` on disk;
2. **instances**: for each of the `dupe_factor` passes, every block of documents of a store is a task: a
   worker plans each document's pairs, reads the random segments B it needs from anywhere in the store,
   finishes the records and groups them by shuffle bucket; the main process appends them to bucket files;
3. **write**: the buckets are sorted one at a time and their records written round-robin to the shards
   (`external_shuffle`), so every shard is a uniform random sample of the whole run, as Google's are.

`pretraining_corpus` says how seeds and the record order are defined: the same seed and flags give the same
bytes whatever `num_workers` and memory budget, and the same as the Apache Beam engine. Shards, local or in a
bucket, are written to hidden partial files beside them and renamed (on a bucket, copied) into place only when
everything succeeded. The work directory (token stores, buckets) is on local disk: beside the first local output,
or in a local temporary folder when the outputs are in a bucket. It is removed on success, on failure and on
Ctrl-C, and one left beside the outputs by a killed run is removed by the next run in the same directory.
"""

import contextlib
import os
from typing import Callable, Dict, Iterator, List, Sequence, Tuple

import numpy as np

from albert_tf import files
from albert_tf.data import pretraining_corpus
from albert_tf.data.external_shuffle import ShuffleBuckets, encode_by_bucket
from albert_tf.data.instances import InstanceOptions, random_segment_tokens
from albert_tf.data.pretraining_corpus import EVAL, TRAIN, DataSummary, TokenizerSpec
from albert_tf.data.token_store import TokenStoreReader, TokenStoreWriter
from albert_tf.errors import CorpusError, OptionError, OutputError
from albert_tf.workers import Progress, ordered_workers

__all__ = ["DataSummary", "TokenizerSpec", "create_pretraining_data"]

# A block of text closes once it holds this much text (or this many documents): the unit of tokenizing work.
BLOCK_CHARACTERS = 256 * 1024
MAX_BLOCK_DOCUMENTS = 4096
# Tokens per block of documents in the instance passes: the unit of instance work.
TOKENS_PER_BLOCK = 64 * 1024
DEFAULT_MEMORY_BYTES = 1 << 30


# --- worker side ------------------------------------------------------------------------------------------
# State of a worker process, set once by `_init_worker` (a single-process run uses it too and clears it).
_worker = {}


def _init_worker(tokenizer_spec: TokenizerSpec, model_proto: bytes, options: InstanceOptions,
                 random_seed: int, work_dir: str):
  _worker.update(maker=pretraining_corpus.instance_maker(tokenizer_spec, model_proto, options, random_seed),
                 work_dir=work_dir, stores={})


def _tokenize_block(task):
  """(split, documents of lines) → (split, their ids, sentence lengths, sentences per document)."""
  split, documents = task
  tokenized = [_worker["maker"].tokenize(lines) for lines in documents]
  sentences = [sentence for document in tokenized for sentence in document]
  return (split, np.fromiter((t for sentence in sentences for t in sentence), np.int32),
          np.array([len(sentence) for sentence in sentences], np.int64),
          np.array([len(document) for document in tokenized], np.int64))


def _store(split: str) -> TokenStoreReader:
  stores = _worker["stores"]
  if split not in stores:
    stores[split] = TokenStoreReader(os.path.join(_worker["work_dir"], f"tokens-{split}"))
  return stores[split]


def _make_block(task):
  """One block of documents in one pass → its records grouped by shuffle bucket, and their statistics."""
  split, pass_index, documents, bits = task
  maker, store = _worker["maker"], _store(split)
  summary = DataSummary(documents=len(documents))
  entries = []
  for document_index, document in zip(documents, store.documents(documents.start, documents.stop)):
    for pair_index, pair in enumerate(maker.plan(split, pass_index, document_index, document, store.num_documents)):
      tokens_b = pair.tokens_b
      if pair.random_segment is not None:
        tokens_b = random_segment_tokens(store.document(pair.random_segment.document_index), pair.random_segment)
      entry = maker.finish(split, pass_index, document_index, pair_index, pair, tokens_b, summary)
      if entry is not None:
        entries.append(entry)
  return split, encode_by_bucket(entries, bits), len(entries), summary


# --- main process -----------------------------------------------------------------------------------------

def _written(what: str, write: Callable, *args):
  """`write(*args)`, with a full disk or a refused write reported as one error naming `what`."""
  try:
    return write(*args)
  except OSError as error:
    raise OutputError(f"Could not write {what}: {error.strerror or error}. No output file was written.") from None


def _text_blocks(input_files: Sequence[str], random_seed: int,
                 eval_fraction: float) -> Iterator[Tuple[str, List[List[str]]]]:
  """Yields (split, documents) blocks of text, each split's in corpus order."""
  blocks = {TRAIN: [], EVAL: []}
  sizes = {TRAIN: 0, EVAL: 0}
  for file_index, path in enumerate(input_files):
    for index_in_file, document in enumerate(pretraining_corpus.read_documents(path)):
      split = EVAL if pretraining_corpus.is_held_out(random_seed, file_index, index_in_file, eval_fraction) else TRAIN
      blocks[split].append(document)
      sizes[split] += sum(len(line) for line in document)
      if sizes[split] >= BLOCK_CHARACTERS or len(blocks[split]) >= MAX_BLOCK_DOCUMENTS:
        yield split, blocks[split]
        blocks[split], sizes[split] = [], 0
  for split, documents in blocks.items():
    if documents:
      yield split, documents


@contextlib.contextmanager
def _work_dir(output_dirs: Sequence[str]) -> Iterator[str]:
  """A new local folder for the run's token stores and shuffle buckets, removed with them when the block ends:
  beside the first local output folder, where the next run removes it if this one is killed
  (`pretraining_corpus.remove_stale_work`), or a temporary folder when every output is in a bucket."""
  local_dirs = [directory for directory in output_dirs if not files.is_remote(directory)]
  if not local_dirs:
    with files.local_temp_folder(prefix=".albert_data_work-") as work_dir:
      yield work_dir
    return
  work_dir = pretraining_corpus.work_dir_path(local_dirs[0])
  files.make_folders(work_dir)
  try:
    yield work_dir
  finally:
    files.remove_tree(work_dir)


def create_pretraining_data(input_files: Sequence[str], output_files: Sequence[str],
                            tokenizer_spec: TokenizerSpec, options: InstanceOptions,
                            dupe_factor: int = 40, random_seed: int = 12345, num_workers: int = 1,
                            eval_output_files: Sequence[str] = (), eval_fraction: float = 0.0,
                            memory_bytes: int = DEFAULT_MEMORY_BYTES, progress: bool = True,
                            overwrite: bool = False) -> Dict[str, DataSummary]:
  """Writes Google-format ALBERT pretraining TFRecords, globally shuffled.

  Args:
    input_files: text files in Google's format (one sentence per line, blank line between documents), local or
      gs://.
    output_files: TFRecord shards, local or gs://; records are dealt to them round-robin after the global
      shuffle.
    tokenizer_spec: the SentencePiece model and its text options.
    options: the instance flags (Google's names and defaults).
    dupe_factor: passes over the corpus, each with fresh random masks and pairs.
    random_seed: the same seed and flags give byte-identical files, whatever `num_workers` and `memory_bytes`.
    num_workers: processes that tokenize and build instances (1: all in this process).
    eval_output_files: shards of the held-out documents' records (with `eval_fraction`).
    eval_fraction: the share of documents held out for evaluation (a seeded choice per document); their
      random segments B come from held-out documents only, and the training records' from training ones.
    memory_bytes: the shuffle's memory budget: the most bytes of records held at once by the main process.
    progress: print progress lines to stderr.
    overwrite: replace output files that exist (else they are refused before any work).

  Returns:
    The `DataSummary` of each split written ("train", and "eval" with `eval_fraction`).

  Raises:
    InputFileError: an input file is missing or cannot be read.
    CorpusError: non-UTF-8 input (file and line named), a corpus (or held-out share) without instances.
    OptionError: bad flags; DataError: a SentencePiece model without [CLS]/[SEP]/[MASK].
    OutputError: an output that cannot be written (a full disk); nothing is left behind, folders included.
  """
  model_proto = pretraining_corpus.check_run(input_files, output_files, eval_output_files, eval_fraction,
                                             dupe_factor, tokenizer_spec, overwrite, options.word_boundaries)
  if num_workers < 1 or memory_bytes < 1:
    raise OptionError("--num_workers and the shuffle memory budget must be positive.")
  shards = {TRAIN: list(output_files), EVAL: list(eval_output_files)}
  splits = [split for split in (TRAIN, EVAL) if shards[split]]
  with (pretraining_corpus.output_dirs([path for paths in shards.values() for path in paths]) as output_dirs,
        _work_dir(output_dirs) as work_dir):
    tracker = Progress("create_pretraining_data", progress)
    partials = {split: [files.partial_path(path) for path in shards[split]] for split in splits}
    init_args = (tokenizer_spec, model_proto, options, random_seed, work_dir)
    try:
      with ordered_workers(num_workers, _init_worker, init_args) as tasks:
        # 1. Tokenize into one token store per split.
        stores = {split: TokenStoreWriter(os.path.join(work_dir, f"tokens-{split}"), TOKENS_PER_BLOCK)
                  for split in splits}

        def store(results, final=False):
          for split, tokens, sentence_lengths, document_sentences in results:
            _written(f"the token store in {work_dir}", stores[split].append, tokens, sentence_lengths,
                     document_sentences)
          tracker.update(f"tokenizing | documents {sum(s.num_documents for s in stores.values()):,} | tokens "
                         f"{sum(s.num_tokens for s in stores.values()):,}", final=final)

        for split, documents in _text_blocks(input_files, random_seed, eval_fraction if EVAL in splits else 0):
          store(tasks.submit(_tokenize_block, (split, documents)))
        store(tasks.drain(), final=True)
        for writer in stores.values():
          writer.close()
        if not stores[TRAIN].num_documents:
          raise CorpusError(f"No text in {', '.join(input_files)}: the corpus is empty (or only blank lines).")
        if EVAL in splits and not stores[EVAL].num_documents:
          raise CorpusError(f"No document was held out with --eval_fraction={eval_fraction}: the corpus has "
                            f"{stores[TRAIN].num_documents} documents; raise the fraction.")

        # 2. Instances of every pass, scattered into shuffle buckets.
        summaries = {split: DataSummary(documents=stores[split].num_documents, output_files=shards[split],
                                        dynamic_masking=options.dynamic_masking)
                     for split in splits}
        buckets = {split: ShuffleBuckets(os.path.join(work_dir, f"buckets-{split}"), pretraining_corpus.bucket_bits(
            pretraining_corpus.estimated_record_bytes(stores[split].num_tokens, dupe_factor, options),
            memory_bytes)) for split in splits}
        total_documents = dupe_factor * sum(s.num_documents for s in stores.values())
        documents_done = 0
        tracker.phase()

        def scatter(results):
          nonlocal documents_done
          for split, chunks, num_records, block_summary in results:
            _written(f"the shuffle buckets in {work_dir}", buckets[split].append, chunks, num_records)
            summaries[split].add(block_summary)
            documents_done += block_summary.documents
            tracker.update(f"instances | documents {documents_done:,}/{total_documents:,} of {dupe_factor} "
                           f"passes | instances {sum(s.instances for s in summaries.values()):,}", documents_done,
                           total_documents, final=documents_done == total_documents)

        for pass_index in range(dupe_factor):
          for split in splits:
            for block in stores[split].blocks:
              scatter(tasks.submit(_make_block, (split, pass_index, block, buckets[split].bits)))
        scatter(tasks.drain())
        for split in splits:
          buckets[split].close()
          if not summaries[split].instances:
            raise CorpusError(f"No {split} instance could be made from {', '.join(input_files)} with these "
                              "flags.")

        # 3. Every record in shuffled order, dealt round-robin to the shards.
        import tensorflow as tf  # only this process writes TFRecords
        tracker.phase()
        total_records, records_done = sum(b.num_records for b in buckets.values()), 0
        for split in splits:
          try:
            writers = [tf.io.TFRecordWriter(path) for path in partials[split]]
            for rank, record in enumerate(buckets[split].records_in_order(memory_bytes)):
              writers[rank % len(writers)].write(record)
              records_done += 1
              if records_done % 4096 == 0 or records_done == total_records:
                tracker.update(f"writing | records {records_done:,}/{total_records:,}", records_done,
                               total_records, final=records_done == total_records)
            for writer in writers:
              writer.close()
          except (OSError, tf.errors.OpError) as error:
            raise OutputError(f"Could not write {', '.join(shards[split])}: "
                              f"{getattr(error, 'message', error)}. No output file was written.") from None
      pretraining_corpus.move_into_place([(partial, path) for split in splits
                                          for partial, path in zip(partials[split], shards[split])])
    finally:
      for store_reader in _worker.get("stores", {}).values():
        store_reader.close()
      _worker.clear()
      for paths in partials.values():
        for path in paths:
          files.remove_tree(path)
  return summaries
