"""Training a SentencePiece vocabulary with the layout of Google's released ALBERT `spiece.model`.

Ids 0-4 are `<pad> <unk> [CLS] [SEP] [MASK]` (`[CLS]`, `[SEP]`, `[MASK]` as control symbols, no bos/eos),
so the model works with `SentencePieceTokenizer` and Hugging Face's `AlbertTokenizer` defaults. Every line
goes through the tokenizer's `preprocess_text` first, so the vocabulary is learned on exactly the text that
will be encoded. With a pretokenizer (a Korean analyzer), no piece crosses a morpheme boundary inside a word
(see `albert_tf.text.pretokenization`).
"""

import dataclasses
import os
import re
import time
from typing import Dict, Iterator, List, Optional, Sequence, Union

from absl import logging
import numpy as np
import sentencepiece as spm
from sentencepiece import sentencepiece_model_pb2

from albert_tf import files
from albert_tf.errors import DataError, OptionError
from albert_tf.text import pretokenization
from albert_tf.text import tokenizer_options
from albert_tf.text.tokenizer import SPECIAL_TOKENS, preprocess_text, read_model_proto

MODEL_TYPES = ("unigram", "bpe", "char", "word")
# SentencePiece's log levels (glog's): its trainer logs its options and progress at INFO, problems at WARNING.
_SPM_INFO, _SPM_WARNING = 0, 1
# Characters are counted in batches of about this many: numpy's bincount is far cheaper per batch than
# counting character by character in Python.
_COUNT_BATCH_CHARS = 1 << 22
_NUM_CODE_POINTS = 0x110000
# SentencePiece's max_sentence_length: its trainer skips longer lines (in bytes).
_SPM_MAX_SENTENCE_BYTES = 4192
# The model types whose trainers take SentencePiece's pretokenization_delimiter.
PRETOKENIZED_MODEL_TYPES = ("unigram", "bpe")


class VocabularyTooSmallError(OptionError):
  """A vocab_size below the special tokens and the characters the coverage keeps.

  Attributes:
    pieces_needed: the smallest vocab_size SentencePiece would accept, when it said.
  """

  def __init__(self, message: str, pieces_needed: Optional[int]):
    super().__init__(message)
    self.pieces_needed = pieces_needed


def _name_files(paths: Sequence[str], shown: int = 3) -> str:
  names = ", ".join(paths[:shown])
  return names if len(paths) <= shown else f"{names} and {len(paths) - shown} more"


class _Corpus:
  """Streams the preprocessed, non-blank lines of text files, counting lines and characters as it reads.

  Errors met while SentencePiece pulls lines come back from it as a RuntimeError; they are also kept in
  `error` so that the caller can raise the original.
  """

  def __init__(self, paths: Sequence[str], do_lower_case: bool, keep_accents: bool,
               normalizer: Optional[spm.SentencePieceNormalizer] = None):
    self.paths = paths
    self.do_lower_case = do_lower_case
    self.keep_accents = keep_accents
    self.normalizer = normalizer
    self.num_lines = 0
    self.num_chars = 0
    self.char_counts = np.zeros(_NUM_CODE_POINTS, np.int64)
    self.error: Optional[Exception] = None
    self._pending: List[str] = []
    self._pending_chars = 0

  def __iter__(self) -> Iterator[str]:
    try:
      yield from self._lines()
    except ValueError as error:
      self.error = error
      raise

  def _lines(self) -> Iterator[str]:
    for path in self.paths:
      for _, line in files.read_utf8_lines(path):
        line = preprocess_text(line, self.do_lower_case, self.keep_accents)
        if line and self.normalizer is not None:
          line = self.normalizer.Normalize(line)
        if line:
          self._count(line)
          yield line
    self._flush_counts()
    if not self.num_lines:
      raise DataError(f"No text in {_name_files(self.paths)}: every line is blank.")
    logging.info("Read %d lines, %d characters from %d file(s).", self.num_lines, self.num_chars,
                 len(self.paths))

  def _count(self, line: str):
    self.num_lines += 1
    self.num_chars += len(line)
    self._pending.append(line)
    self._pending_chars += len(line)
    if self._pending_chars >= _COUNT_BATCH_CHARS:
      self._flush_counts()

  def _flush_counts(self):
    code_points = np.frombuffer("".join(self._pending).encode("utf-32-le"), np.uint32)
    self.char_counts += np.bincount(code_points, minlength=_NUM_CODE_POINTS)
    self._pending = []
    self._pending_chars = 0

  def coverage(self, sp_model: spm.SentencePieceProcessor) -> float:
    """Fraction of the corpus's non-space characters that `sp_model` encodes without `<unk>`."""
    code_points = np.flatnonzero(self.char_counts)
    code_points = code_points[code_points != ord(" ")]
    encoded = sp_model.EncodeAsIds([chr(code_point) for code_point in code_points])
    unknown = np.array([sp_model.unk_id() in ids for ids in encoded], bool)
    counts = self.char_counts[code_points]
    return 1.0 - counts[unknown].sum() / counts.sum() if counts.sum() else 1.0


def rules_normalizer(normalizer_spec: sentencepiece_model_pb2.NormalizerSpec) -> spm.SentencePieceNormalizer:
  """A normaliser that applies `normalizer_spec`'s compiled rules alone, without its whitespace handling."""
  # SentencePiece 0.2.2 loads a spec only inside a model; the normaliser's whitespace options default to off.
  rules_only = sentencepiece_model_pb2.ModelProto(normalizer_spec=normalizer_spec)
  return spm.SentencePieceNormalizer(model_proto=rules_only.SerializeToString())


def _check_arguments(model_prefix, vocab_size, character_coverage, model_type, input_sentence_size,
                     user_defined_symbols, num_threads, pretokenizer):
  if not os.path.basename(model_prefix):
    raise OptionError(f"model_prefix {model_prefix!r} must end in a file name, e.g. out/spiece")
  if model_type not in MODEL_TYPES:
    raise OptionError(f"model_type must be one of {', '.join(MODEL_TYPES)}, not {model_type!r}")
  if not 0.0 < character_coverage <= 1.0:
    raise OptionError(f"character_coverage must be in (0, 1], not {character_coverage}")
  if input_sentence_size < 0:
    raise OptionError(f"input_sentence_size must be >= 0 (0 means every line), not {input_sentence_size}")
  if num_threads < 1:
    raise OptionError(f"num_threads must be >= 1, not {num_threads}")
  if pretokenizer is not None:
    if model_type not in PRETOKENIZED_MODEL_TYPES:
      raise OptionError(f"--pretokenizer needs model_type {' or '.join(PRETOKENIZED_MODEL_TYPES)} (SentencePiece "
                        f"keeps pieces within morphemes only there), not {model_type!r}")
    pretokenization.check_pretokenizer(pretokenizer)
  for symbol in user_defined_symbols:
    if not symbol or symbol.split() != [symbol]:
      raise OptionError(f"User-defined symbol {symbol!r} must be non-empty and have no whitespace.")
    if symbol in SPECIAL_TOKENS:
      raise OptionError(f"User-defined symbol {symbol} is already one of {' '.join(SPECIAL_TOKENS)}.")
  if len(set(user_defined_symbols)) != len(user_defined_symbols):
    raise OptionError(f"User-defined symbols are repeated: {','.join(user_defined_symbols)}")
  # At least one piece must be learned beyond the fixed ones.
  minimum = len(SPECIAL_TOKENS) + len(user_defined_symbols) + 1
  if vocab_size < minimum:
    raise OptionError(f"vocab_size must be at least {minimum} (the special tokens, user-defined symbols and "
                     f"one learned piece), not {vocab_size}")


def _user_error(error: RuntimeError, corpus: _Corpus, vocab_size: int, character_coverage: float,
                hidden_pieces: int) -> Optional[Exception]:
  """The ValueError a SentencePiece training failure stands for, or None when it is not the input's fault.

  Args:
    hidden_pieces: pieces SentencePiece counted that the model will not have (the pretokenization delimiter),
      left out of the figures in the message.
  """
  if corpus.error is not None:
    return corpus.error
  message = str(error)
  names = _name_files(corpus.paths)
  if "Vocabulary size too high" in message:
    limit = re.search(r"<= (\d+)", message)
    figure = (f" (SentencePiece could make at most {int(limit.group(1)) - hidden_pieces} pieces)" if limit
              else "")
    return OptionError(f"vocab_size {vocab_size} is too high for the text in {names}{figure}; use a smaller "
                      "--vocab_size or more text.")
  if "smaller than required_chars" in message:
    needed = re.search(r"(\d+) vs (\d+)", message)
    pieces_needed = int(needed.group(2)) - hidden_pieces if needed else None
    figure = f" ({pieces_needed} pieces are needed)" if needed else ""
    return VocabularyTooSmallError(
        f"vocab_size {vocab_size} cannot hold the special tokens and the characters that character_coverage "
        f"{character_coverage} keeps from {names}{figure}; use a larger --vocab_size or a smaller "
        "--character_coverage.", pieces_needed)
  return None


def _check_layout(sp_model: spm.SentencePieceProcessor):
  """Raises unless ids 0-4 are Google's `<pad> <unk> [CLS] [SEP] [MASK]` with control `[CLS] [SEP] [MASK]`."""
  pieces = tuple(sp_model.IdToPiece(i) for i in range(len(SPECIAL_TOKENS)))
  controls = all(sp_model.IsControl(i) for i in range(2, len(SPECIAL_TOKENS)))
  if pieces != SPECIAL_TOKENS or not controls or sp_model.unk_id() != 1:
    raise RuntimeError(f"SentencePiece trained ids 0-4 as {' '.join(pieces)} (control: {controls}), "
                       f"not {' '.join(SPECIAL_TOKENS)} with [CLS] [SEP] [MASK] as control symbols.")


def _trainer_normalizer(normalization: Dict) -> spm.SentencePieceNormalizer:
  """The normalisation SentencePiece's trainer applies with `normalization` (its options, else its defaults),
  spaces escaped as it does."""
  return spm.SentencePieceNormalizer(
      rule_name=normalization.get("normalization_rule_name", "nmt_nfkc"),
      add_dummy_prefix=normalization.get("add_dummy_prefix", True), escape_whitespaces=True,
      remove_extra_whitespaces=normalization.get("remove_extra_whitespaces", True))


def _pretokenized_options(marked: Sequence[str], normalization: Dict, vocab_size: int,
                          character_coverage: float) -> Dict:
  """The trainer's options for lines marked with `pretokenization.DELIMITER`, already sampled.

  SentencePiece counts the delimiter among the text's characters and, once it is a required character (as it
  must be: any other character too rare to keep becomes <unk> before the text is split at the delimiters), keeps
  it as a piece. So one piece more is asked for, to be removed (`_remove_delimiter`), and the coverage asked for
  makes SentencePiece keep the characters that `character_coverage` of the text without delimiters keeps.
  """
  normalizer = _trainer_normalizer(normalization)
  num_chars = num_delimiters = 0
  for line in marked:
    normalized = normalizer.Normalize(line)
    num_delimiters += normalized.count(pretokenization.DELIMITER)
    num_chars += len(normalized)
  num_chars -= num_delimiters
  # The delimiter, required, is counted first; then characters until the coverage is reached.
  coverage = (character_coverage * num_chars + num_delimiters) / (num_chars + num_delimiters)
  # A line of SentencePiece's longest (`_SPM_MAX_SENTENCE_BYTES`) at most quadruples with 3-byte delimiters.
  return dict(vocab_size=vocab_size + 1, character_coverage=coverage, input_sentence_size=0,
              max_sentence_length=4 * _SPM_MAX_SENTENCE_BYTES, required_chars=pretokenization.DELIMITER,
              pretokenization_delimiter=pretokenization.DELIMITER)


def _remove_delimiter(prefix: str, trainer_options: Dict, plain_options: Dict):
  """Removes the delimiter's piece from `<prefix>.model` and `.vocab`, and records `plain_options` in the model's
  trainer spec in place of `trainer_options`: the model is the ordinary model of its pieces."""
  proto = read_model_proto(prefix + ".model")
  index = [piece.piece for piece in proto.pieces].index(pretokenization.DELIMITER)
  del proto.pieces[index]
  for name in trainer_options:
    proto.trainer_spec.ClearField(name)
  for name, value in plain_options.items():
    setattr(proto.trainer_spec, name, value)
  files.write_atomically(prefix + ".model", proto.SerializeToString())
  # The .vocab lists the pieces in id order, one a line.
  vocab_lines = [line for _, line in files.read_utf8_lines(prefix + ".vocab")]
  del vocab_lines[index]
  files.write_atomically(prefix + ".vocab", "".join(vocab_lines))


@dataclasses.dataclass(frozen=True)
class TrainedVocabulary:
  """What `train_vocabulary` wrote, and what it measured.

  Attributes:
    model_file: the `.model` file.
    num_pieces: its pieces, the special tokens included.
    coverage: the fraction of the corpus's non-space characters it encodes without `<unk>`.
    seconds: the whole run: reading the corpus, the morpheme analysis, SentencePiece's training.
    analysis_seconds: the part of `seconds` spent analysing morphemes; 0 without a pretokenizer.
    analysed_lines: the lines analysed, which are the lines trained on; 0 without a pretokenizer.
  """

  model_file: str
  num_pieces: int
  coverage: float
  seconds: float
  analysis_seconds: float = 0.0
  analysed_lines: int = 0


def train_vocabulary(input_patterns: Union[str, Sequence[str]],
                     model_prefix: str,
                     vocab_size: int = 30000,
                     character_coverage: float = 0.9995,
                     model_type: str = "unigram",
                     do_lower_case: bool = True,
                     keep_accents: bool = False,
                     input_sentence_size: int = 10_000_000,
                     user_defined_symbols: Sequence[str] = (),
                     num_threads: Optional[int] = None,
                     verbose: Optional[bool] = None,
                     normalizer_spec: Optional[sentencepiece_model_pb2.NormalizerSpec] = None,
                     hard_vocab_limit: bool = True,
                     pretokenizer: Optional[str] = None,
                     overwrite: bool = False) -> TrainedVocabulary:
  """Trains an ALBERT SentencePiece model: writes `<model_prefix>.model`, `<model_prefix>.vocab` and the
  tokenizer options in `<model_prefix>.tokenizer_options.json`, which later tools read.

  The files appear only when training succeeds (trained in a staged folder, SentencePiece writing local files
  only, then published by `files.staged_folder`, the `.model` last), so a failed run leaves no partial output (nor
  the folders it made) and an existing model untouched.

  Args:
    input_patterns: text files or globs (local or gs://), as a list or comma-separated, in Google's pretraining
      format (one sentence per line, a blank line between documents; blank lines are skipped). UTF-8.
    model_prefix: path of the output without extension, local or gs://, e.g. `out/spiece`; its folder is created.
    vocab_size: number of pieces, the 5 special tokens and any user-defined symbols included.
    character_coverage: fraction of characters the vocabulary must cover; 0.9995 suits rich character sets
      (Korean, Japanese, Chinese), 1.0 small alphabets.
    model_type: one of `unigram` (Google's), `bpe`, `char`, `word`.
    do_lower_case: lower-case the text as the tokenizer will (Google's default: True).
    keep_accents: keep diacritical marks as the tokenizer will (Google strips them).
    input_sentence_size: lines SentencePiece samples from the corpus to train on; 0 means all of them.
    user_defined_symbols: pieces always kept whole, given ids 5, 6, ...
    num_threads: training threads, and analyzer processes with a pretokenizer; defaults to the number of CPUs.
    verbose: whether SentencePiece's trainer writes its own log to stderr (its options, then its progress),
      rather than only its warnings and errors. None: when absl logging is at DEBUG (`--verbosity=1`).
    normalizer_spec: the normalisation to learn the pieces under, an existing model's `normalizer_spec`
      (its compiled rules and whitespace handling), instead of SentencePiece's default `nmt_nfkc`: each line
      goes through those rules before SentencePiece sees it, and the trainer adds none of its own
      (`identity`). The model written keeps `identity`; its pieces are in the existing model's normal form.
    hard_vocab_limit: False makes `vocab_size` an upper bound (SentencePiece's option): a corpus that cannot
      support that many pieces gives fewer instead of an error.
    pretokenizer: a Korean analyzer, `kiwi` or `mecab` (the korean extra), whose morpheme boundaries inside
      words no piece may cross (`unigram` and `bpe` only). The `input_sentence_size` lines are then sampled
      here (`pretokenization.reservoir_sample`: seeded, the same lines every run) and analysed by `num_threads`
      processes before SentencePiece trains on them. It is recorded in the tokenizer options; tokenizing with
      the model runs no analyzer.
    overwrite: replace a model that exists at `model_prefix` (else it is refused before any work).

  Returns:
    The model written, its coverage of the corpus and the time taken.

  Raises:
    FileNotFoundError: a pattern matches no file.
    ValueError: bad arguments, an empty corpus, a line that is not UTF-8 (named by file and line), a
      vocab_size the corpus cannot support, or a pretokenizer whose package (the korean extra) is missing.
  """
  started = time.perf_counter()
  num_threads = num_threads or os.cpu_count() or 1
  user_defined_symbols = list(user_defined_symbols)
  _check_arguments(model_prefix, vocab_size, character_coverage, model_type, input_sentence_size,
                   user_defined_symbols, num_threads, pretokenizer)
  model_file = model_prefix + ".model"
  files.check_output_files([model_file, model_prefix + ".vocab", tokenizer_options.options_file(model_file)],
                           overwrite, flag="--model_prefix")
  normalization = {}
  normalizer = None
  if normalizer_spec is not None:
    # The rules here; the trainer applies the spec's own whitespace handling.
    normalizer = rules_normalizer(normalizer_spec)
    normalization = dict(normalization_rule_name="identity", add_dummy_prefix=normalizer_spec.add_dummy_prefix,
                         remove_extra_whitespaces=normalizer_spec.remove_extra_whitespaces)
  corpus = _Corpus(files.expand_input_patterns(input_patterns), do_lower_case, keep_accents, normalizer)
  logging.info("Training a %d-piece %s SentencePiece model on %d file(s): %s", vocab_size, model_type,
               len(corpus.paths), _name_files(corpus.paths))
  plain_options = dict(vocab_size=vocab_size, character_coverage=character_coverage,
                       input_sentence_size=input_sentence_size)
  trainer_options = plain_options
  sentences = iter(corpus)
  analysis_seconds = 0.0
  marked = []
  if pretokenizer is not None:
    # The lines SentencePiece would sample from: it skips longer ones.
    sample = pretokenization.reservoir_sample(
        (line for line in corpus if len(line.encode("utf-8")) <= _SPM_MAX_SENTENCE_BYTES), input_sentence_size)
    analysis_started = time.perf_counter()
    marked = pretokenization.mark_morphemes(sample, pretokenizer, num_threads)
    analysis_seconds = time.perf_counter() - analysis_started
    del sample  # the marked copy is what the trainer reads: the sample's memory goes back before it
    logging.info("Marked the morpheme boundaries of %d lines with %s in %.1f s.", len(marked), pretokenizer,
                 analysis_seconds)
    trainer_options = _pretokenized_options(marked, normalization, vocab_size, character_coverage)
    sentences = iter(marked)
  hidden_pieces = trainer_options["vocab_size"] - vocab_size
  if verbose is None:
    verbose = logging.level_debug()
  folder = files.parent(model_prefix)
  # Trained into a staged folder (SentencePiece writes local files only), then published into `folder` with the
  # .model last: once it is in place, so are its .vocab and its options.
  with files.output_folders([folder]), files.staged_folder(folder, os.path.basename(model_file)) as staging:
    temp_prefix = os.path.join(staging, os.path.basename(model_prefix))
    try:
      # SentencePiece's log level is global to the process (its `minloglevel` option sets it too) and cannot be
      # read back: it is set for this call, then put back to SentencePiece's default.
      spm.set_min_log_level(_SPM_INFO if verbose else _SPM_WARNING)
      spm.SentencePieceTrainer.train(
          sentence_iterator=sentences, model_prefix=temp_prefix, model_type=model_type, pad_id=0, unk_id=1,
          bos_id=-1, eos_id=-1, control_symbols=list(SPECIAL_TOKENS[2:]), user_defined_symbols=user_defined_symbols,
          shuffle_input_sentence=True, num_threads=num_threads, hard_vocab_limit=hard_vocab_limit,
          **trainer_options, **normalization)
    except RuntimeError as error:
      user_error = _user_error(error, corpus, vocab_size, character_coverage, hidden_pieces)
      if user_error is None:
        raise
      raise user_error from None
    finally:
      spm.set_min_log_level(_SPM_INFO)
    if pretokenizer is not None:
      _remove_delimiter(temp_prefix, trainer_options, plain_options)
    sp_model = spm.SentencePieceProcessor(model_file=temp_prefix + ".model")
    _check_layout(sp_model)
    coverage = corpus.coverage(sp_model)
    tokenizer_options.write_options(temp_prefix + ".model", tokenizer_options.TokenizerOptions(
        do_lower_case, keep_accents, pretokenizer))
  logging.info("Wrote %s (%d pieces); it encodes %.4f%% of the corpus's characters without <unk>.",
               model_file, sp_model.GetPieceSize(), 100.0 * coverage)
  return TrainedVocabulary(model_file, sp_model.GetPieceSize(), coverage, time.perf_counter() - started,
                           analysis_seconds, len(marked))


def train_sentencepiece(*args, **kwargs) -> str:
  """`train_vocabulary(*args, **kwargs)` (see there), returning the path of the `.model` file written."""
  return train_vocabulary(*args, **kwargs).model_file
