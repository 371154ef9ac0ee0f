"""Morpheme boundaries for SentencePiece's trainer: `train_sentencepiece(..., pretokenizer="kiwi")`.

A Korean word is a stem and its particles or endings (학교에서 = 학교 + 에서), and a vocabulary learned from raw
text often has pieces that cross them (▁학교에, 서). SentencePiece's trainer option `pretokenization_delimiter`
keeps pieces from crossing a delimiter written in the text it learns from (and removes the delimiter before it
scores them), so each morpheme boundary inside a word is marked with `DELIMITER`: 학교에서 → 학교\\ufdd0에서. Only
training sees the marks: the model is an ordinary SentencePiece model, which tokenizes raw text with no analyzer.

The analysis is slow next to SentencePiece (about a millisecond a line with Kiwi), so it runs only on the lines
the trainer uses: a seeded sample (`reservoir_sample`), analysed by a pool of processes (`mark_morphemes`).
"""

import random
import time
from typing import Iterable, List, Sequence

from absl import logging

from albert_tf.errors import OptionError
from albert_tf.text import korean_analyzers
from albert_tf.workers import ordered_workers

# U+FDD0 is a Unicode noncharacter, reserved for a program's internal use and not written in text that programs
# exchange. Our `preprocess_text` (lower-casing, accent stripping by NFKD and NFC) and SentencePiece's nmt_nfkc
# leave it as it is; SentencePiece's own boundary mark, the tab, is a space to nmt_nfkc.
DELIMITER = "\ufdd0"
SAMPLE_SEED = 12345
# Lines a worker analyses per task: few enough to balance the pool, enough that pickling costs little.
_CHUNK_LINES = 256
_PROGRESS_SECONDS = 30.0


def reservoir_sample(lines: Iterable[str], size: int, seed: int = SAMPLE_SEED) -> List[str]:
  """`size` of `lines`, drawn uniformly in one pass that holds no more than `size` lines (reservoir sampling);
  every line when `size` is 0 or there are no more than `size`. The same lines and seed give the same sample."""
  if size == 0:
    return list(lines)
  rng = random.Random(seed)
  sample = []
  for index, line in enumerate(lines):
    if index < size:
      sample.append(line)
    else:
      slot = rng.randrange(index + 1)
      if slot < size:
        sample[slot] = line
  return sample


def mark_boundaries(text: str, starts: Sequence[int]) -> str:
  """`text` with `DELIMITER` before each offset of `starts` that is inside a word (between two non-spaces).

  Boundaries at spaces are left out: a piece never crosses a space anyway.
  """
  parts = []
  previous = 0
  for start in starts:
    if text[start - 1] != " " and text[start] != " ":
      parts += [text[previous:start], DELIMITER]
      previous = start
  parts.append(text[previous:])
  return "".join(parts)


def _marked(analyzer, lines: Sequence[str]) -> List[str]:
  return [mark_boundaries(line, analyzer.morpheme_starts(line)) for line in lines]


# The analyzer of a worker process (or of this process, during `mark_morphemes` with one process).
_worker = {}


def _start_worker(name: str, purpose: str):
  _worker["analyzer"] = korean_analyzers.analyzer(name, purpose)


def _marked_in_worker(lines: Sequence[str]) -> List[str]:
  return _marked(_worker["analyzer"], lines)


def check_pretokenizer(pretokenizer: str):
  """Raises unless `pretokenizer` names an analyzer whose package is installed; loads no model.

  Raises:
    OptionError: an unknown analyzer, or the korean extra is not installed (one line that names it).
  """
  if pretokenizer not in korean_analyzers.ANALYZERS:
    raise OptionError(f"--pretokenizer must be one of {', '.join(korean_analyzers.ANALYZERS)}, not "
                      f"{pretokenizer!r}.")
  korean_analyzers.require_extra(pretokenizer, f"--pretokenizer={pretokenizer}")


def mark_morphemes(lines: Sequence[str], pretokenizer: str, num_processes: int) -> List[str]:
  """Each of `lines` with its morpheme boundaries inside words marked (`mark_boundaries`), in the order given.

  Args:
    lines: text, each line as the trainer will see it.
    pretokenizer: the analyzer, "kiwi" or "mecab" (`korean_analyzers.ANALYZERS`).
    num_processes: analyzer processes, each with its own model; 1 analyses in this process. Workers come from a
      fork server (not forked from a caller that may hold TensorFlow's threads), and their results are taken in
      order, so the output does not depend on their number.

  Raises:
    OptionError: as `check_pretokenizer`.
  """
  # Here, not in the workers, whose failed start the pool would only retry.
  check_pretokenizer(pretokenizer)
  chunks = [lines[start:start + _CHUNK_LINES] for start in range(0, len(lines), _CHUNK_LINES)]
  marked = []
  started = last_log = time.perf_counter()

  def take(results):
    nonlocal last_log
    for chunk in results:
      marked.extend(chunk)
      if time.perf_counter() - last_log > _PROGRESS_SECONDS:
        last_log = time.perf_counter()
        logging.info("Analysed %d of %d lines with %s in %.0f s.", len(marked), len(lines), pretokenizer,
                     last_log - started)

  try:
    with ordered_workers(num_processes, _start_worker, (pretokenizer, f"--pretokenizer={pretokenizer}")) as tasks:
      for chunk in chunks:
        take(tasks.submit(_marked_in_worker, chunk))
      take(tasks.drain())
  finally:
    _worker.clear()
  return marked
