"""What both engines of `create_pretraining_data` share: the corpus as documents, the held-out split, how each
document's instances are seeded, and the order the records are written in.

The local engine (`pretraining_writer`) and the Apache Beam one (`pretraining_beam`) differ in how they
move data around, not in what they compute. Everything random is keyed by *what* it is about, never by
when or where it runs:

- documents are numbered per split in corpus order (input files sorted, then line order); whether a
  document is held out for evaluation depends on (seed, file, its index in the file);
- document `d` of a split, in pass `p`, is planned with its own `random.Random` (seed, split, p, d), and its
  j-th pair is finished (truncated, masked) with another (seed, split, p, d, j), so a pair can be finished
  wherever its random segment B is read;
- each record gets a 64-bit shuffle key, the first draw of its pair's generator. The records of a split are
  written in the order of (key, pass, document, pair), the k-th to shard k mod the number of shards, as
  Google's tool writes its shuffled instances round-robin. So every shard is a uniform random sample of the
  whole run, and the bytes of each shard do not depend on the number of workers, the memory budget, or the
  engine.
"""

import contextlib
import dataclasses
import hashlib
import math
import os
import random
import re
import socket
import sys
import uuid
from typing import Dict, Iterator, List, NamedTuple, Optional, Sequence, Tuple

from albert_tf import files
from albert_tf.data import word_boundaries
from albert_tf.data.example_encoding import ExampleEncoder
from albert_tf.data.instances import (Instance, InstanceOptions, SegmentPair, Vocabulary, finish_instance,
                                      plan_segment_pairs)
from albert_tf.errors import OptionError
from albert_tf.text import korean_analyzers
from albert_tf.text.tokenizer import SentencePieceTokenizer

TRAIN, EVAL = "train", "eval"
# A document longer than this is cut into parts, so that no document outgrows a worker's memory.
MAX_DOCUMENT_CHARACTERS = 4 * 1024 * 1024
# Shuffle keys are 64-bit; buckets are ranges of keys, named by their top bits.
KEY_BITS = 64


@dataclasses.dataclass(frozen=True)
class TokenizerSpec:
  """The tokenizer of a data run: its SentencePiece model and how text is prepared for it."""

  spm_model_file: str
  do_lower_case: bool = True
  keep_accents: bool = False
  pretokenizer: Optional[str] = None  # the analyzer the vocabulary was learned with, as recorded beside it


@dataclasses.dataclass
class DataSummary:
  """What was written for one split (the training records, or the held-out ones): the tool's closing summary."""

  instances: int = 0
  documents: int = 0
  tokens: int = 0  # real tokens, [CLS]/[SEP] included
  masked: int = 0
  masked_as_mask_token: int = 0
  masked_kept: int = 0
  masked_random: int = 0
  sop_label_1: int = 0
  output_files: Sequence[str] = ()
  dynamic_masking: bool = False  # unmasked records: training masks them

  COUNTS = ("instances", "tokens", "masked", "masked_as_mask_token", "masked_kept", "masked_random", "sop_label_1")

  def add(self, other: "DataSummary"):
    for field in self.COUNTS:
      setattr(self, field, getattr(self, field) + getattr(other, field))

  def add_instance(self, instance: Instance, mask_id: int):
    self.instances += 1
    self.tokens += len(instance.input_ids)
    self.sop_label_1 += instance.sentence_order_label
    for position, label in zip(instance.masked_lm_positions, instance.masked_lm_ids):
      token = instance.input_ids[position]
      self.masked += 1
      self.masked_as_mask_token += token == mask_id
      self.masked_kept += token == label
      self.masked_random += token != label and token != mask_id

  @property
  def mask_rate(self) -> float:
    """Masked tokens over tokens other than [CLS]/[SEP] (how Google's figures are measured)."""
    return self.masked / max(1, self.tokens - 3 * self.instances)

  def lines(self) -> List[str]:
    masked = max(1, self.masked)
    masking = (f"mask rate: {self.mask_rate:.4f} of non-special tokens; [MASK] / kept / random: "
               f"{self.masked_as_mask_token / masked:.3f} / {self.masked_kept / masked:.3f} / "
               f"{self.masked_random / masked:.3f}")
    if self.dynamic_masking:
      masking = "masking: none written (--dynamic_masking); training masks every epoch afresh"
    return [
        f"instances: {self.instances:,} from {self.documents:,} documents",
        f"tokens: {self.tokens:,} (mean sequence length {self.tokens / max(1, self.instances):.2f})",
        masking,
        f"SOP balance: label 1 (swapped or random document) {self.sop_label_1 / max(1, self.instances):.4f}",
        "output: " + ", ".join(self.output_files),
    ]


def summary_lines(summaries: Dict[str, DataSummary], seconds: float) -> List[str]:
  """The closing lines of a run: each split's summary (prefixed by its name when there are two), then the time."""
  lines = []
  for split, summary in summaries.items():
    lines += [f"{split}: {line}" if len(summaries) > 1 else line for line in summary.lines()]
  instances = sum(summary.instances for summary in summaries.values())
  return lines + [f"done in {seconds:.1f} s ({instances / max(seconds, 1e-9):,.0f} instances/s)"]


def read_documents(path: str) -> Iterator[List[str]]:
  """Yields the documents of one file of Google's format (a blank line between documents) as lists of their
  non-blank lines, stripped. A document longer than `MAX_DOCUMENT_CHARACTERS` is cut into parts.

  Raises:
    DataError: a line that is not UTF-8, naming the file and line.
  """
  document, size = [], 0
  for _, line in files.read_utf8_lines(path):
    line = line.strip()
    if line:
      document.append(line)
      size += len(line)
    if (not line or size > MAX_DOCUMENT_CHARACTERS) and document:
      yield document
      document, size = [], 0
  if document:
    yield document


def is_held_out(seed: int, file_index: int, index_in_file: int, eval_fraction: float) -> bool:
  """Whether a document goes to the eval split: a seeded coin of probability `eval_fraction` per document."""
  if eval_fraction <= 0:
    return False
  digest = hashlib.blake2b(f"{seed}:held-out:{file_index}:{index_in_file}".encode(), digest_size=8).digest()
  return int.from_bytes(digest, "little") < eval_fraction * 2.0**KEY_BITS


def tokenize_document(tokenizer: SentencePieceTokenizer, lines: Sequence[str]) -> List[List[int]]:
  """The ids of each line (a sentence); lines that tokenize to nothing are left out. `[CLS]`, `[SEP]` and
  `[MASK]` written in the text stay text, as in Google's tool."""
  return [ids for ids in (tokenizer.encode(line, special_tokens_in_text=False) for line in lines) if ids]


def vocabulary_of(tokenizer: SentencePieceTokenizer, rule: str = word_boundaries.GOOGLE) -> Vocabulary:
  return Vocabulary(size=tokenizer.vocab_size, cls_id=tokenizer.cls_id, sep_id=tokenizer.sep_id,
                    mask_id=tokenizer.mask_id, starts_word=word_boundaries.piece_starts(tokenizer.sp_model, rule))


class Entry(NamedTuple):
  """One record and where it goes: records are written in the order of (key, pass, document, pair)."""

  key: int
  pass_index: int
  document_index: int
  pair_index: int
  record: bytes


class InstanceMaker:
  """Plans a document's pairs and finishes each into a serialized record, with the seeds described above.

  Args:
    tokenizer: the SentencePiece tokenizer of the run.
    options: the instance flags.
    seed: `--random_seed`.
    analyzer: the Korean analyzer whose morpheme starts also start words (`--word_boundaries=morpheme`).
  """

  def __init__(self, tokenizer: SentencePieceTokenizer, options: InstanceOptions, seed: int, analyzer=None):
    self.tokenizer = tokenizer
    self.options = options
    self.seed = seed
    self.analyzer = analyzer
    self.vocab = vocabulary_of(tokenizer, options.word_boundaries)
    self.encoder = ExampleEncoder(options.max_seq_length, options.num_label_slots, tokenizer.vocab_size,
                                  options.masking_recipe(self.vocab) if options.dynamic_masking else None,
                                  options.word_boundaries)

  def tokenize(self, lines: Sequence[str]) -> List[List[int]]:
    """`tokenize_document`, with the morpheme starts inside eojeols marked (`word_boundaries`) under an analyzer."""
    if self.analyzer is None:
      return tokenize_document(self.tokenizer, lines)
    document = []
    for line in lines:
      text, ids, offsets = self.tokenizer.encode_with_offsets(line)
      if ids:
        document.append(word_boundaries.mark_morpheme_starts(ids, offsets, self.analyzer.morpheme_starts(text),
                                                             self.vocab.starts_word))
    return document

  def plan(self, split: str, pass_index: int, document_index: int, document: Sequence[List[int]],
           num_documents: int) -> List[SegmentPair]:
    rng = random.Random(f"{self.seed}:{split}:{pass_index}:{document_index}")
    return plan_segment_pairs(document, document_index, num_documents, self.options, rng)

  def finish(self, split: str, pass_index: int, document_index: int, pair_index: int, pair: SegmentPair,
             tokens_b: List[int], summary: DataSummary) -> Optional[Entry]:
    """The record of `pair` with segment B `tokens_b`, counted into `summary`; None if truncation empties it."""
    rng = random.Random(f"{self.seed}:{split}:{pass_index}:{document_index}:{pair_index}")
    key = rng.getrandbits(KEY_BITS)
    instance = finish_instance(pair.tokens_a, tokens_b, pair.sentence_order_label, self.options, self.vocab, rng)
    if instance is None:
      return None
    summary.add_instance(instance, self.vocab.mask_id)
    return Entry(key, pass_index, document_index, pair_index, self.encoder.encode(instance))


def bucket_of(key: int, bits: int) -> int:
  """The bucket of a shuffle key among 2**bits buckets of consecutive key ranges."""
  return key >> (KEY_BITS - bits) if bits else 0


def bucket_bits(estimated_bytes: float, memory_bytes: int, max_bits: int = 8) -> int:
  """How many top key bits name the buckets, so that one bucket of records fits half the memory budget."""
  buckets = max(1.0, estimated_bytes / max(1, memory_bytes // 2))
  return min(max_bits, math.ceil(math.log2(buckets)))


def estimated_record_bytes(num_tokens: int, dupe_factor: int, options: InstanceOptions) -> float:
  """A generous estimate of the bytes of all records made from `num_tokens` tokens: records of half the
  maximum length on average, every id a 3-byte varint."""
  record_bytes = 6 * options.max_seq_length + 9 * options.num_label_slots + 120
  return dupe_factor * num_tokens / max(1, (options.max_seq_length - 3) / 2) * record_bytes


_STALE = re.compile(r"^\.(?:albert_data_work|.+\.partial)-(?P<host>.+)-(?P<pid>\d+)-[0-9a-f]{12}$")


def work_dir_path(directory: str) -> str:
  """A new work directory's path in `directory` (local or gs://), named by the host and process that own it."""
  return f"{directory.rstrip('/')}/.albert_data_work-{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:12]}"


@contextlib.contextmanager
def output_dirs(output_files: Sequence[str]) -> Iterator[List[str]]:
  """Creates the folders of `output_files` (local or gs://) and removes what killed runs on this host left in the
  local ones (`remove_stale_work`); yields the folders, sorted. A run that fails inside the block leaves none of
  the folders it created (`files.output_folders`)."""
  directories = sorted({files.parent(path) for path in output_files})
  with files.output_folders(directories):
    remove_stale_work([directory for directory in directories if not files.is_remote(directory)])
    yield directories


def remove_stale_work(directories: Sequence[str]):
  """Removes the work directories and partial shards that runs on this host left in local `directories` when
  they were killed (their process is gone: only a local folder's can be told, by their process ids)."""
  for directory in directories:
    for name in files.list_folder(directory):
      match = _STALE.match(name)
      if not match or match["host"] != socket.gethostname():
        continue
      try:
        os.kill(int(match["pid"]), 0)
        continue  # that run is still going
      except ProcessLookupError:
        pass
      except PermissionError:
        continue  # another user's live process
      path = os.path.join(directory, name)
      print(f"[create_pretraining_data] removing {path}, left by a run that was killed", file=sys.stderr)
      files.remove_tree(path)


def move_into_place(partials_and_outputs: Sequence[Tuple[str, str]]):
  """Renames each partial file to its output (on a bucket, a copy), once the whole run has succeeded: all or
  none, the outputs moved already are removed again if one fails. An output whose partial file was never written
  (a shard that got no record) is written empty, as Google's tool writes one."""
  moved = []
  try:
    for partial, path in partials_and_outputs:
      if files.exists(partial):
        files.rename(partial, path)
      else:
        files.write_atomically(path, b"")
      moved.append(path)
  except BaseException:
    for path in moved:
      files.remove_tree(path)
    raise


def tokenizer_of(tokenizer_spec: TokenizerSpec, model_proto: bytes) -> SentencePieceTokenizer:
  """The run's tokenizer, from the SentencePiece model's bytes: workers need not see the model's file."""
  return SentencePieceTokenizer(tokenizer_spec.spm_model_file, tokenizer_spec.do_lower_case,
                                tokenizer_spec.keep_accents, model_proto=model_proto)


def instance_maker(tokenizer_spec: TokenizerSpec, model_proto: bytes, options: InstanceOptions,
                   seed: int) -> InstanceMaker:
  """The `InstanceMaker` of a worker, with the vocabulary's analyzer under `--word_boundaries=morpheme`."""
  analyzer = None
  if options.word_boundaries == word_boundaries.MORPHEME:
    analyzer = korean_analyzers.analyzer(tokenizer_spec.pretokenizer, "--word_boundaries=morpheme")
  return InstanceMaker(tokenizer_of(tokenizer_spec, model_proto), options, seed, analyzer)


def check_run(input_files: Sequence[str], output_files: Sequence[str], eval_output_files: Sequence[str],
              eval_fraction: float, dupe_factor: int, tokenizer_spec: TokenizerSpec, overwrite: bool = False,
              rule: str = word_boundaries.GOOGLE) -> bytes:
  """Checks what both engines check before any work: inputs, outputs, the held-out share, the vocabulary.

  Returns:
    The SentencePiece model's bytes (local or gs://), which the workers build their tokenizer from.

  Raises:
    InputFileError: no input file, or one that does not exist.
    OptionError: no output file, an output that is also an input, named twice, that cannot be written or exists
      (unless `overwrite`), a held-out share without eval outputs (or the other way round), a `dupe_factor`
      below 1; `--word_boundaries=morpheme` with a vocabulary learned without an analyzer, or without the
      analyzer's package (the korean extra).
    InputFileError, DataError: a SentencePiece model that cannot be read, or without [CLS]/[SEP]/[MASK].
  """
  files.check_inputs_and_outputs(input_files, list(output_files) + list(eval_output_files), overwrite)
  if not output_files:
    raise OptionError("No output files.")
  if not 0.0 <= eval_fraction < 1.0:
    raise OptionError(f"--eval_fraction must be in [0, 1), got {eval_fraction}.")
  if bool(eval_fraction) != bool(eval_output_files):
    raise OptionError("--eval_fraction and --eval_output_file go together: the share of documents held out, "
                      "and the files they are written to.")
  if dupe_factor < 1:
    raise OptionError(f"--dupe_factor must be at least 1, got {dupe_factor}.")
  model_proto = files.read_bytes(files.require_file(tokenizer_spec.spm_model_file, "SentencePiece model"))
  tokenizer_of(tokenizer_spec, model_proto)  # a bad model fails here, before any work
  word_boundaries.check_rule(rule, tokenizer_spec.pretokenizer, tokenizer_spec.spm_model_file)
  if rule == word_boundaries.MORPHEME:
    korean_analyzers.require_extra(tokenizer_spec.pretokenizer, "--word_boundaries=morpheme")
  return model_proto
