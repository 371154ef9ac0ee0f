"""Raw text to Google's pretraining format (one sentence a line, a blank line between documents): the work of
`prepare_corpus`, on local worker processes.

Documents are read from each input file in order (files sorted), as paragraphs separated by blank lines, as
one document a line, or as JSON lines. Each is cleaned (NFC, no control characters) and split into sentences
(`albert_tf.text.sentence_splitting`); documents with too few sentences or characters are dropped, and so is
every exact duplicate of an earlier document. The k-th document kept goes to shard k mod the number of shards.

Workers clean and split blocks of documents; the main process takes their results in input order, so the
shards are the same bytes whatever the number of workers, and the same as the Apache Beam engine's
(`corpus_preparation_beam`). Memory is bounded by the blocks in flight plus 8 bytes (a digest) and Python's
set overhead, about 70 bytes in all, per distinct document kept. Shards, local or in a bucket, are written to
hidden partial files beside them and renamed (on a bucket, copied) into place only when the whole run succeeded.
"""

import dataclasses
import hashlib
import json
import os
from typing import Iterator, List, Optional, Sequence, Tuple

from albert_tf import files
from albert_tf.data import pretraining_corpus
from albert_tf.errors import CorpusError, DataError, InputFileError, OptionError, OutputError, json_error_text
from albert_tf.text import korean_analyzers
from albert_tf.text.sentence_splitting import AUTO, KOREAN, SentenceSplitter, check_language, clean_text
from albert_tf.workers import Progress, ordered_workers

INPUT_FORMATS = ("paragraphs", "lines", "jsonl")
# A block of raw text closes once it holds this much text: the unit of splitting work.
BLOCK_CHARACTERS = 256 * 1024
# Why a document is not written: each is the field of `PreparationSummary` that counts it.
TOO_FEW_SENTENCES, TOO_FEW_CHARACTERS, DUPLICATES = "too_few_sentences", "too_few_characters", "duplicates"


@dataclasses.dataclass(frozen=True)
class PreparationOptions:
  """How raw documents are read, split and filtered.

  Attributes:
    input_format: "paragraphs" (a blank line between documents; the lines of a document are one wrapped
      paragraph), "lines" (a document a line) or "jsonl" (a JSON object a line; its line breaks separate
      paragraphs, and no sentence crosses one).
    text_field: the field of a `jsonl` object that holds the document.
    language: "ko", "auto" (per document) or an ISO 639 code; see `SentenceSplitter`.
    min_sentences: documents with fewer sentences are dropped.
    min_chars: documents with fewer characters (in their sentences) are dropped.
  """

  input_format: str = "paragraphs"
  text_field: str = "text"
  language: str = AUTO
  min_sentences: int = 1
  min_chars: int = 0


@dataclasses.dataclass
class PreparationSummary:
  """What a run read and wrote: the tool's closing summary."""

  documents_read: int = 0
  documents_written: int = 0
  sentences: int = 0
  characters: int = 0
  duplicates: int = 0
  too_few_sentences: int = 0
  too_few_characters: int = 0
  output_files: Sequence[str] = ()

  COUNTS = ("documents_read", "documents_written", "sentences", "characters", "duplicates", "too_few_sentences",
            "too_few_characters")

  def lines(self) -> List[str]:
    return [
        f"documents: {self.documents_read:,} read, {self.documents_written:,} written",
        f"dropped: {self.duplicates:,} exact duplicates, {self.too_few_sentences:,} with too few sentences, "
        f"{self.too_few_characters:,} with too few characters",
        f"sentences: {self.sentences:,} ({self.sentences / max(1, self.documents_written):.1f} a document), "
        f"characters: {self.characters:,}",
        "output: " + ", ".join(self.output_files),
    ]


def read_raw_documents(path: str, options: PreparationOptions) -> Iterator[List[str]]:
  """Yields the documents of one raw file as lists of paragraphs (see `PreparationOptions.input_format`).

  Raises:
    InputFileError: the file cannot be read.
    DataError: a line that is not UTF-8, a `jsonl` line that is not a JSON object with a string
      `text_field` (file and line named), a corrupt `.gz`.
  """
  if options.input_format == "jsonl":
    for line_number, line in files.read_utf8_lines(path):
      if not line.strip():
        continue
      try:
        record = json.loads(line)
      except json.JSONDecodeError as error:
        raise DataError(f"{path}, line {line_number}: not JSON ({json_error_text(error, with_line=False)}).") from None
      if not isinstance(record, dict) or options.text_field not in record:
        raise DataError(f"{path}, line {line_number}: no field {options.text_field!r} (--text_field).")
      text = record[options.text_field]
      if not isinstance(text, str):
        raise DataError(f"{path}, line {line_number}: field {options.text_field!r} is "
                        f"{type(text).__name__}, not text.")
      yield text.splitlines()
  elif options.input_format == "lines":
    for _, line in files.read_utf8_lines(path):
      if line.strip():
        yield [line]
  else:
    paragraph = []
    for _, line in files.read_utf8_lines(path):
      if line.strip():
        paragraph.append(line.strip())
      elif paragraph:
        yield [" ".join(paragraph)]
        paragraph = []
    if paragraph:
      yield [" ".join(paragraph)]


def split_document(splitter: SentenceSplitter, paragraphs: Sequence[str],
                   options: PreparationOptions) -> Tuple[List[str], Optional[str]]:
  """(the sentences of a raw document, why it is dropped or None)."""
  sentences = [sentence for paragraph in paragraphs for sentence in splitter.split(clean_text(paragraph))]
  if len(sentences) < max(1, options.min_sentences):
    return sentences, TOO_FEW_SENTENCES
  if sum(map(len, sentences)) < options.min_chars:
    return sentences, TOO_FEW_CHARACTERS
  return sentences, None


def document_text(sentences: Sequence[str]) -> str:
  """A document as written: a sentence a line, then a blank line."""
  return "".join(sentence + "\n" for sentence in sentences) + "\n"


def document_digest(sentences: Sequence[str]) -> int:
  """A 64-bit digest of a document's text: equal documents, equal digests (collisions: ~1 in 10^5 for 30
  million documents)."""
  return int.from_bytes(hashlib.blake2b(document_text(sentences).encode("utf-8"), digest_size=8).digest(), "little")


def check_preparation(input_files: Sequence[str], output_files: Sequence[str], options: PreparationOptions,
                      overwrite: bool = False):
  """What both engines check before any work.

  Raises:
    InputFileError: no input file, or one that does not exist.
    OptionError: bad options; outputs that are inputs, named twice, that cannot be written or exist (unless
      `overwrite`); Korean without the korean extra.
  """
  files.check_inputs_and_outputs(input_files, output_files, overwrite)
  check_language(options.language)
  if options.input_format not in INPUT_FORMATS:
    raise OptionError(f"--input_format must be one of {', '.join(INPUT_FORMATS)}, not {options.input_format!r}.")
  if not options.text_field and options.input_format == "jsonl":
    raise OptionError("--text_field must name the field that holds the text.")
  if options.min_sentences < 1 or options.min_chars < 0:
    raise OptionError(f"--min_sentences must be at least 1 and --min_chars at least 0, got "
                      f"{options.min_sentences} and {options.min_chars}.")
  if options.language in (KOREAN, AUTO):
    korean_analyzers.require_extra("kiwi", f"Splitting Korean sentences (--language={options.language})")


def shard_file_names(output_file: str, num_shards: int) -> List[str]:
  """`out/ko.txt` and 3 → out/ko-00000-of-00003.txt, ...: the names `--num_shards` gives."""
  stem, extension = os.path.splitext(output_file)
  return [f"{stem}-{shard:05d}-of-{num_shards:05d}{extension}" for shard in range(num_shards)]


def empty_result_error(input_files: Sequence[str], summary: PreparationSummary) -> CorpusError:
  return CorpusError(
      f"No document left to write from {', '.join(input_files)}: {summary.documents_read:,} read, "
      f"{summary.duplicates:,} exact duplicates, {summary.too_few_sentences:,} with too few sentences "
      f"(--min_sentences), {summary.too_few_characters:,} with too few characters (--min_chars). "
      "No output file was written.")


# --- worker side ------------------------------------------------------------------------------------------
_worker = {}


def _init_worker(options: PreparationOptions):
  _worker.update(splitter=SentenceSplitter(options.language), options=options)


def _split_block(task: Tuple[List[List[str]], int]) -> Tuple[List[Tuple[List[str], Optional[str]]], int]:
  """(documents, their bytes) → (each one's sentences and why it is dropped, the bytes)."""
  documents, num_bytes = task
  return [split_document(_worker["splitter"], paragraphs, _worker["options"]) for paragraphs in documents], num_bytes


# --- main process -----------------------------------------------------------------------------------------

def _raw_blocks(input_files: Sequence[str], options: PreparationOptions) -> Iterator[Tuple[List[List[str]], int]]:
  """(raw documents, their UTF-8 bytes) in blocks, in corpus order."""
  block, size = [], 0
  for path in input_files:
    for paragraphs in read_raw_documents(path, options):
      block.append(paragraphs)
      size += sum(len(paragraph.encode("utf-8")) for paragraph in paragraphs)
      if size >= BLOCK_CHARACTERS:
        yield block, size
        block, size = [], 0
  if block:
    yield block, size


def prepare_corpus(input_files: Sequence[str], output_files: Sequence[str], options: PreparationOptions,
                   num_workers: int = 1, progress: bool = True, overwrite: bool = False) -> PreparationSummary:
  """Writes the documents of raw text files in Google's pretraining format, split into sentences.

  Args:
    input_files: raw text files (local or gs://; `.gz` read compressed), read in this order.
    output_files: text shards (local or gs://); the k-th document kept goes to shard k mod their number.
    options: how documents are read, split and filtered.
    num_workers: processes that clean and split (1: this process); the output does not depend on it.
    progress: print progress lines to stderr.
    overwrite: replace output files that exist (else they are refused before any work).

  Returns:
    The run's counts.

  Raises:
    InputFileError, DataError: an input that cannot be read, is not UTF-8 or not the format (named by file
      and line). CorpusError: nothing left to write. OptionError: bad options, or Korean without the korean
      extra. OutputError: a shard that cannot be written. In every case no output file (or folder) is written.
  """
  check_preparation(input_files, output_files, options, overwrite)
  if num_workers < 1:
    raise OptionError(f"--num_workers must be at least 1, got {num_workers}.")
  with pretraining_corpus.output_dirs(output_files):
    # Compressed sizes say little about the text to come: no ETA then.
    total_bytes = (None if any(path.endswith(".gz") for path in input_files)
                   else sum(files.file_size(path) for path in input_files))
    tracker = Progress("prepare_corpus", progress)
    summary = PreparationSummary(output_files=list(output_files))
    partials = [files.partial_path(path) for path in output_files]
    writers = []
    done_bytes = 0
    seen = set()

    def write(results, final=False):
      nonlocal done_bytes
      for block, num_bytes in results:
        done_bytes += num_bytes
        for sentences, dropped in block:
          summary.documents_read += 1
          if dropped is None:
            digest = document_digest(sentences)
            if digest in seen:
              dropped = DUPLICATES
            else:
              seen.add(digest)
          if dropped is not None:
            setattr(summary, dropped, getattr(summary, dropped) + 1)
            continue
          writers[summary.documents_written % len(writers)].write(document_text(sentences))
          summary.documents_written += 1
          summary.sentences += len(sentences)
          summary.characters += sum(map(len, sentences))
      tracker.update(f"documents {summary.documents_read:,} read, {summary.documents_written:,} written | "
                     f"{done_bytes / 1e6:,.2f} MB at {done_bytes / 1e6 / max(1e-9, tracker.elapsed):.2f} MB/s",
                     done_bytes, total_bytes, final=final)

    try:
      try:
        writers.extend(files.open_file(path, "w") for path in partials)
        with ordered_workers(num_workers, _init_worker, (options,)) as tasks:
          for task in _raw_blocks(input_files, options):
            write(tasks.submit(_split_block, task))
          write(tasks.drain(), final=True)
        for writer in writers:
          writer.close()
      except OSError as error:
        if isinstance(error, InputFileError):
          raise
        raise OutputError(f"Could not write {', '.join(output_files)}: {error.strerror or error}. "
                          "No output file was written.") from None
      if not summary.documents_written:
        raise empty_result_error(input_files, summary)
      pretraining_corpus.move_into_place(list(zip(partials, output_files)))
    finally:
      _worker.clear()
      for writer in writers:
        writer.close()
      for path in partials:
        files.remove_tree(path)
  return summary
