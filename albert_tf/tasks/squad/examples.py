"""SQuAD v1.1 and v2.0 examples, read from the official JSON.

Deliberate differences from Google's code:
  * A training answer is taken from the context: the text at its `answer_start`, without the whitespace
    around it. Google maps an answer with a trailing space to one more token (the space belongs to the next
    piece); here the positions cover the answer's own pieces.
  * A training answer whose text is not at its `answer_start` is skipped and counted (the BERT reference's
    check).
"""

import dataclasses
import hashlib
import json
import os
import sys
from typing import Callable, List, Optional, Protocol, Tuple

from albert_tf.errors import DataError, json_error_text
from albert_tf.files import read_bytes, require_file

@dataclasses.dataclass(frozen=True)
class QuestionLayout:
  """How a benchmark in SQuAD's JSON layout writes its questions, and how strictly they are read.

  Attributes:
    id_field: the question's field that holds its id (the key of the predictions).
    answers_must_match: an answer (of any file) whose text is not at its `answer_start` is an error naming the
      question; otherwise SQuAD's rule: a training answer is skipped and counted, a prediction one kept.
    trains_on_first_answer: a training question may have several answers and is trained on the first; otherwise
      it needs exactly one (Google's rule).
    requires_is_impossible: (v2) every question says `is_impossible`, which must agree with its answers (true
      without answers, false with some); otherwise a missing one is false and training answers are ignored
      when true.
    other_answer_fields: lists of {"text", "answer_start"} besides "answers" (never gold answers), checked as
      the answers are.
    check_question: (where, question) -> None, raising DataError on a benchmark's own fields; None: nothing more.
  """

  id_field: str = "id"
  answers_must_match: bool = False
  trains_on_first_answer: bool = False
  requires_is_impossible: bool = False
  other_answer_fields: Tuple[str, ...] = ()
  check_question: Optional[Callable[[str, dict], None]] = None


SQUAD_LAYOUT = QuestionLayout()


class ContextSource(Protocol):
  """The markup a context's text was read from (`html_text.HtmlText`: KorQuAD 2.x's HTML pages)."""

  def markup_span(self, first: int, last: int) -> str:
    """The markup that holds the text characters `first` to `last` (inclusive)."""


@dataclasses.dataclass(frozen=True)
class SquadExample:
  """One question about one context.

  Attributes:
    qas_id: the question's id in the file (the key of the predictions the official scripts score).
    question_text: the question.
    context_text: the paragraph (for a benchmark of marked-up pages, the page's text).
    answer_text: the first answer, as the context writes it at its offset, without surrounding whitespace;
      "" when the question is unanswerable or has no answer in the file.
    answer_start: the character offset of `answer_text` in `context_text`; -1 when impossible or unknown.
    is_impossible: a SQuAD v2.0 question without an answer (always False for v1.1).
    gold_answers: every answer text in the file, for scoring; () when unanswerable.
    context_source: for a context read from markup whose answers are markup (KorQuAD 2.x), that markup, which
      predicted answers are written in; None: answers are the context's text. Kept for the examples whose
      answers are written (not training ones, which would hold every page's markup for nothing).
  """

  qas_id: str
  question_text: str
  context_text: str
  answer_text: str
  answer_start: int
  is_impossible: bool
  gold_answers: Tuple[str, ...]
  context_source: Optional[ContextSource] = dataclasses.field(default=None, compare=False, repr=False)

  def answer_of_span(self, first_char: int, last_char: int) -> str:
    """The answer that a prediction of the context's characters `first_char` to `last_char` writes: their text
    without whitespace at either end, or with a `context_source` the markup holding that text (the form of the
    benchmark's own answers)."""
    text = self.context_text[first_char:last_char + 1]
    answer = text.strip()
    if self.context_source is None or not answer:
      return answer
    first = first_char + len(text) - len(text.lstrip())
    return self.context_source.markup_span(first, first + len(answer) - 1)


@dataclasses.dataclass(frozen=True)
class ExampleReader:
  """How a benchmark's input (`--train_file`, `--predict_file`) becomes examples.

  Attributes:
    input_files: (the path given) -> the files it names, in reading order: SQuAD's is the file itself,
      KorQuAD 2.x's a file or a folder's shards. Raises InputFileError when the path does not exist, DataError
      when it names no file to read.
    parse: (a file's path, its bytes, is_training, version_2_with_negative, layout) -> (its examples, its part
      of the "data" list the scores are computed on, the number of its training answers skipped). Raises
      DataError naming the file (and the question) for a file it cannot use.
  """

  input_files: Callable[[str], List[str]]
  parse: Callable[[str, bytes, bool, bool, QuestionLayout], Tuple[List[SquadExample], list, int]]


@dataclasses.dataclass
class InputExamples:
  """The examples of an input, one file or several.

  Attributes:
    examples: the examples, file after file.
    dataset: the files' "data" lists, joined: what the scores are computed on.
    skipped: the number of training answers skipped.
    input_size: the bytes of all the files.
    input_sha256: the sha256 of the file; for several, of each one's name, size and sha256 in order (a changed,
      added, removed or renamed file changes it).
  """

  examples: List[SquadExample]
  dataset: list
  skipped: int
  input_size: int
  input_sha256: str


def read_squad_examples(input_file: str, is_training: bool, version_2_with_negative: bool,
                        layout: QuestionLayout = SQUAD_LAYOUT,
                        reader: Optional[ExampleReader] = None) -> Tuple[List[SquadExample], list, int]:
  """Reads a SQuAD JSON file (or the input of another benchmark's `reader`).

  Args:
    input_file: the file (local or gs://).
    is_training: a training file: each answerable question needs exactly one answer, and answers whose
      text is not at their `answer_start` are skipped (counted, one line on stderr).
    version_2_with_negative: SQuAD v2.0: a question's `is_impossible` is read (v1.1 files have none).
    layout: the benchmark's fields and rules (default SQuAD's).
    reader: how the input is read (default SQuAD's: one JSON file).

  Returns:
    (the examples, the file's "data" list, the number of training answers skipped).

  Raises:
    InputFileError: the file does not exist.
    DataError: the file is empty, not UTF-8, not JSON, not of SQuAD's layout, holds no questions, breaks
      the training rules above, or every training answer is skipped.
  """
  read = read_examples(input_file, is_training, version_2_with_negative, layout, reader)
  return read.examples, read.dataset, read.skipped


def count_questions(input_file: str, with_answers: bool = False, layout: QuestionLayout = SQUAD_LAYOUT,
                    reader: Optional[ExampleReader] = None) -> int:
  """The number of questions in a SQuAD file (all, or only those with at least one answer), for the number of
  training steps and whether predictions can be scored.

  Raises:
    InputFileError, DataError: as `read_squad_examples` raises them when predicting.
  """
  examples, _, _ = read_squad_examples(input_file, is_training=False,
                                       version_2_with_negative=layout.requires_is_impossible, layout=layout,
                                       reader=reader)
  return sum(1 for example in examples if example.gold_answers or not with_answers)


def read_examples(input_path: str, is_training: bool, version_2_with_negative: bool,
                  layout: QuestionLayout = SQUAD_LAYOUT, reader: Optional[ExampleReader] = None) -> InputExamples:
  """The examples of an input, read file after file by `reader` (default SQuAD's), with the input's size and
  sha256 (which key the feature cache).

  Raises:
    InputFileError, DataError: as the reader raises them; DataError also for a question id twice in a file or
      in two files.
  """
  reader = reader or SQUAD_READER
  examples, dataset, skipped = [], [], 0
  input_files = reader.input_files(input_path)
  file_hashes = []  # (name, size, sha256) of each file
  first_file = {}  # the file of each question id
  for input_file in input_files:
    raw = read_input(input_file)  # one file at a time: a folder of shards can be larger than memory
    file_examples, file_dataset, file_skipped = reader.parse(input_file, raw, is_training, version_2_with_negative,
                                                             layout)
    for example in file_examples:
      # Within a file too: the predictions (and their scores) are keyed by question id, so two questions of one
      # id would get one prediction, scored twice.
      if example.qas_id in first_file:
        other = first_file[example.qas_id]
        where = "there twice" if other == input_file else f"also in {other}"
        raise DataError(f"{input_file}: question {example.qas_id} is {where}; the predictions of a set are keyed "
                        "by question id, so each question needs an id of its own.")
      first_file[example.qas_id] = input_file
    examples.extend(file_examples)
    dataset.extend(file_dataset)
    skipped += file_skipped
    file_hashes.append((os.path.basename(input_file), len(raw), hashlib.sha256(raw).hexdigest()))
  input_sha256 = file_hashes[0][2]
  if len(file_hashes) > 1:
    input_sha256 = hashlib.sha256("".join(f"{name} {size} {sha256}\n" for name, size, sha256 in file_hashes)
                                  .encode("utf-8")).hexdigest()
  return InputExamples(examples, dataset, skipped, sum(size for _, size, _ in file_hashes), input_sha256)


def read_input(input_file: str) -> bytes:
  return read_bytes(require_file(input_file, "SQuAD file"))


def load_json(input_file: str, raw: bytes) -> object:
  """The JSON value of a UTF-8 file (a byte-order mark allowed).

  Raises:
    DataError: naming the file: not UTF-8 (where), empty, or not JSON (where).
  """
  try:
    text = raw.decode("utf-8").removeprefix("\ufeff")
  except UnicodeDecodeError as error:
    raise DataError(f"{input_file}: not UTF-8 ({error.reason} {raw[error.start:error.end]!r} at byte "
                    f"{error.start}).") from None
  if not text.strip():
    raise DataError(f"{input_file} is empty.")
  try:
    return json.loads(text)
  except json.JSONDecodeError as error:
    raise DataError(f"{input_file}: not valid JSON ({json_error_text(error)}).") from None


def parse_squad(input_file: str, raw: bytes, is_training: bool, version_2_with_negative: bool,
                layout: QuestionLayout = SQUAD_LAYOUT) -> Tuple[List[SquadExample], list, int]:
  """The examples of a SQuAD-layout JSON file's bytes, its "data" list and the training answers skipped (see
  `read_squad_examples`)."""
  document = load_json(input_file, raw)
  if not isinstance(document, dict) or not isinstance(document.get("data"), list):
    raise DataError(f'{input_file}: no "data" list at the top level; not a SQuAD file.')
  dataset = document["data"]
  examples, answers_checked, skipped = [], 0, 0
  for article_index, article in enumerate(dataset):
    where = f"{input_file}: data[{article_index}]"
    if not isinstance(article, dict) or not isinstance(article.get("paragraphs"), list):
      raise DataError(f'{where} has no "paragraphs" list.')
    for paragraph_index, paragraph in enumerate(article["paragraphs"]):
      where = f"{input_file}: data[{article_index}].paragraphs[{paragraph_index}]"
      if not isinstance(paragraph, dict) or not isinstance(paragraph.get("context"), str):
        raise DataError(f'{where} has no "context" text.')
      if not isinstance(paragraph.get("qas"), list):
        raise DataError(f'{where} has no "qas" list.')
      for qa_index, qa in enumerate(paragraph["qas"]):
        example = _read_question(f"{where}.qas[{qa_index}]", input_file, paragraph["context"], qa, is_training,
                                 version_2_with_negative, layout)
        if example is None:
          skipped += 1
        else:
          examples.append(example)
        if is_training and (example is None or not example.is_impossible):
          answers_checked += 1
  if not examples and not skipped:
    raise DataError(f"{input_file} holds no questions.")
  if skipped:
    print(f"{skipped:,} of {answers_checked:,} training answers do not match the text at their answer_start "
          "and were skipped (as the official scripts warn).", file=sys.stderr, flush=True)
    if not examples:
      raise DataError(f"{input_file}: no training answer matches the text at its answer_start.")
  return examples, dataset, skipped


def _read_question(where: str, input_file: str, context: str, qa: object, is_training: bool,
                   version_2_with_negative: bool, layout: QuestionLayout) -> Optional[SquadExample]:
  """One qa of a paragraph; None for a training question whose answer is not at its offset."""
  if not isinstance(qa, dict) or not isinstance(qa.get(layout.id_field), str):
    # The official scripts look predictions up by the id as a string.
    raise DataError(f'{where} has no "{layout.id_field}" string.')
  qas_id = qa[layout.id_field]
  if not isinstance(qa.get("question"), str):
    raise DataError(f'{input_file}: question {qas_id} has no "question" text.')
  is_impossible = False
  if version_2_with_negative:
    if layout.requires_is_impossible and "is_impossible" not in qa:
      raise DataError(f'{input_file}: question {qas_id} has no "is_impossible".')
    is_impossible = qa.get("is_impossible", False)
    if not isinstance(is_impossible, bool):
      raise DataError(f'{input_file}: question {qas_id} has an "is_impossible" that is not true or false.')
  answers = qa.get("answers", [])
  other_answers = {field: qa.get(field) or [] for field in layout.other_answer_fields}  # absent or null: none
  for field, listed in (("answers", answers), *other_answers.items()):
    _check_answer_list(input_file, qas_id, field, listed)
  if layout.check_question is not None:
    layout.check_question(f"{input_file}: question {qas_id}", qa)
  if layout.requires_is_impossible and is_impossible == bool(answers):
    raise DataError(f'{input_file}: question {qas_id} has "is_impossible": {str(is_impossible).lower()} and '
                    f'{len(answers)} answers; an unanswerable question has none, an answerable one at least one.')
  if layout.answers_must_match:
    for field, listed in (("answers", answers), *other_answers.items()):
      for answer in listed:
        if _answer_in_context(context, answer["text"], answer["answer_start"])[1] < 0:
          start = answer["answer_start"]
          raise DataError(f"{input_file}: question {qas_id}: the {field} text {answer['text']!r} is not the "
                          f"context's text at its answer_start {start} "
                          f"({context[max(start, 0):max(start, 0) + len(answer['text'])]!r}).")
  if is_training and not is_impossible and (len(answers) != 1 and not (layout.trains_on_first_answer and answers)):
    # A v1.1 run given v2.0's file: its unanswerable questions have no answer.
    hint = ("; SQuAD v2.0 files, with unanswerable questions, are for run_squad_v2 (albert-run-squad-v2; in Python, "
            "version_2_with_negative=True)" if not answers and not version_2_with_negative else "")
    needed = "at least one" if layout.trains_on_first_answer else "exactly one"
    raise DataError(f"{input_file}: question {qas_id} has {len(answers)} answers; training needs {needed} "
                    f"per answerable question{hint}.")
  if is_impossible or not answers:
    return SquadExample(qas_id, qa["question"], context, "", -1, is_impossible, ())
  gold_answers = tuple(answer["text"] for answer in answers)
  answer_text, answer_start = _answer_in_context(context, answers[0]["text"], answers[0]["answer_start"])
  if answer_start < 0:
    if is_training:
      return None
    # Prediction answers are only scored: keep the file's, trimmed.
    answer_text = answers[0]["text"].strip()
    answer_start = answers[0]["answer_start"] + len(answers[0]["text"]) - len(answers[0]["text"].lstrip())
  return SquadExample(qas_id, qa["question"], context, answer_text, answer_start, False, gold_answers)


def _check_answer_list(input_file: str, qas_id: str, field: str, answers: object):
  if not isinstance(answers, list) or not all(
      isinstance(answer, dict) and isinstance(answer.get("text"), str) and type(answer.get("answer_start")) is int
      for answer in answers):
    raise DataError(f'{input_file}: question {qas_id} needs an "{field}" list of {{"text", "answer_start"}} '
                    "objects (answer_start an integer).")


def _answer_in_context(context: str, text: str, start: int) -> Tuple[str, int]:
  """The context's text at the answer, trimmed, and its offset; ("", -1) when it is not the answer's text.

  As the BERT reference compares, whitespace runs count as one space on both sides.
  """
  end = start + len(text)
  if start < 0 or end > len(context) or not text.strip():
    return "", -1
  span = context[start:end]
  if span.split() != text.split():
    return "", -1
  return span.strip(), start + len(span) - len(span.lstrip())


SQUAD_READER = ExampleReader(input_files=lambda input_file: [input_file], parse=parse_squad)
