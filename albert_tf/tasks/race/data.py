"""RACE reading comprehension: multiple-choice examples and features as Google's ALBERT `race_utils.py` makes them.

RACE questions each have an article, a question and 4 options, one of them right (answers "A"-"D").
Google's `RaceProcessor` reads `RACE/<split>/<level>/all.txt`, one JSON object per line (users concatenate
the download's files into it). RACE's own download has one file per article instead,
`RACE/<split>/<level>/<n>.txt`, each one JSON object. Both are read here: a level folder's `all.txt` when it
has one, else each of its `*.txt` files (in numeric order of their names, so the order is deterministic).

Features are Google's `convert_single_example`: per option, `[CLS] article [SEP] qa [SEP]` where qa is the
question with the option in place of each "_" (or the question, a space and the option), cut to its last
`max_qa_length` pieces, and the article keeps its beginning, as much as fits `max_seq_length`. Texts go
through the tokenizer's preprocessing (whose accent stripping keeps the marks of non-Latin scripts that Google's
deletes), and `[CLS]` or `[SEP]` written in a text stay text, as in Google's features.

Differences from Google's reader, all about inputs it mishandles:
- Example ids are the article's "id" + "-" + the question's 0-based index. Google gives every question of an
  article the article's id; prediction files need one id per question.
- A split without "answers" (a test set without them) has label -1; Google's reader fails with a KeyError.
- Bad input is a `DataError` naming the file (and line of `all.txt`) and question, raised while reading:
  Google's reader crashes on it, or drops the questions after the last answer when there are fewer answers.
"""

import dataclasses
import json
import os
import re
from typing import Any, Dict, Iterator, List, Sequence, Tuple

from albert_tf import files
from albert_tf.errors import DataError, InputFileError, OptionError, json_error_text
from albert_tf.text.tokenizer import SentencePieceTokenizer, preprocess_text

RACE_LEVELS = ("middle", "high")
RACE_SPLITS = ("train", "dev", "test")
RACE_ANSWERS = ("A", "B", "C", "D")
NUM_OPTIONS = len(RACE_ANSWERS)
JSON_LINES_FILE = "all.txt"
NO_LABEL = -1
_NUMBERED_NAME = re.compile(r"[0-9]+")


@dataclasses.dataclass(frozen=True)
class RaceExample:
  """One RACE question with its article and options, as written in the data (not yet preprocessed).

  Attributes:
    example_id: the article's "id" + "-" + the question's 0-based index in the article, unique in a split
      (Google's reader gives all the questions of an article the article's id).
    level: "middle" or "high", the folder the article came from.
    article: the article.
    question: the question; a "_" in it is a blank that each option fills.
    options: the 4 options, in the order of the answers "A"-"D".
    label: the index of the right option (0-3), or -1 where the split has no answers.
  """

  example_id: str
  level: str
  article: str
  question: str
  options: Tuple[str, ...]
  label: int


@dataclasses.dataclass(frozen=True)
class RaceFeature:
  """The 4 packed sequences of one question, unpadded.

  Attributes:
    choice_ids: per option, the ids of `[CLS] article [SEP] qa [SEP]`.
    first_segment_lengths: per option, the length of `[CLS] article [SEP]` (type id 0); the rest is type 1.
  """

  choice_ids: Tuple[Tuple[int, ...], ...]
  first_segment_lengths: Tuple[int, ...]


def _numeric_name_order(name: str) -> Tuple[int, int, str]:
  """Sorts "2.txt" before "10.txt" (RACE's names are numbers), and other names after them by name."""
  stem = name[:-len(".txt")]
  if _NUMBERED_NAME.fullmatch(stem):
    return 0, int(stem), name
  return 1, 0, name


def _read_json_lines(path: str) -> Iterator[Tuple[str, Any]]:
  """Yields ("<file>, line <n>", object) of each non-blank line of a JSON-lines file."""
  found_any = False
  for line_number, line in files.read_utf8_lines(path):
    if not line.strip():
      continue
    found_any = True
    where = f"{path}, line {line_number}"
    try:
      record = json.loads(line)
    except json.JSONDecodeError as error:
      raise DataError(f"{where}: not JSON ({json_error_text(error, with_line=False)}).") from None
    yield where, record
  if not found_any:
    raise DataError(f"{path} is empty: it should hold one RACE article (a JSON object) per line.")


def _read_json_file(path: str) -> Any:
  """The one JSON object of a file of RACE's download."""
  raw = files.read_bytes(path)
  try:
    text = raw.decode("utf-8-sig")
  except UnicodeDecodeError as error:
    raise DataError(f"{path}: not UTF-8 ({error.reason} {raw[error.start:error.end]!r} at byte "
                    f"{error.start}).") from None
  try:
    return json.loads(text)
  except json.JSONDecodeError as error:
    raise DataError(f"{path}: not JSON ({json_error_text(error)}).") from None


def _read_level_records(level_dir: str) -> Iterator[Tuple[str, Any]]:
  """Yields (where, JSON object) of each article of a level folder, in either layout."""
  json_lines_path = os.path.join(level_dir, JSON_LINES_FILE)
  if files.file_exists(json_lines_path):
    yield from _read_json_lines(json_lines_path)
    return
  # Hidden files are left out: macOS archives add "._<n>.txt" companions that are not text.
  names = sorted((name for name in map(os.path.basename, files.folder_files(level_dir, "*.txt"))
                  if not name.startswith(".")), key=_numeric_name_order)
  if not names:
    raise DataError(f"{level_dir} holds no {JSON_LINES_FILE} and no other *.txt file: no RACE articles.")
  for name in names:
    path = os.path.join(level_dir, name)
    yield path, _read_json_file(path)


def _field(record: Dict[str, Any], key: str, kind: type, where: str) -> Any:
  if key not in record:
    raise DataError(f'{where}: no "{key}" field; a RACE article has "id", "article", "questions", "options" '
                    'and "answers".')
  value = record[key]
  if not isinstance(value, kind):
    raise DataError(f'{where}: "{key}" must be a {"list" if kind is list else "string"}, not '
                    f"{type(value).__name__}.")
  return value


def _strings(values: Sequence[Any], what: str, where: str) -> None:
  for index, value in enumerate(values):
    if not isinstance(value, str):
      raise DataError(f"{where}: {what} {index} must be a string, not {type(value).__name__}.")


def _record_examples(record: Any, level: str, where: str) -> Tuple[str, bool, List[RaceExample]]:
  """The article id, whether it has answers, and the examples (one per question) of one article.

  Raises:
    DataError: a record that is not a RACE article, naming `where` and the question.
  """
  if not isinstance(record, dict):
    raise DataError(f"{where}: a RACE article must be a JSON object, not {type(record).__name__}.")
  article_id = _field(record, "id", str, where)
  article = _field(record, "article", str, where)
  questions = _field(record, "questions", list, where)
  options = _field(record, "options", list, where)
  has_answers = "answers" in record
  answers = _field(record, "answers", list, where) if has_answers else None
  _strings(questions, "question", where)
  counts = [len(questions), len(options)] + ([len(answers)] if has_answers else [])
  if len(set(counts)) > 1:
    answer_count = f" and {len(answers)} answers" if has_answers else ""
    raise DataError(f"{where}: {len(questions)} questions, {len(options)} option lists{answer_count}: the lists "
                    f"must be equally long (question {min(counts)} is the first without all of them).")
  examples = []
  for index, question in enumerate(questions):
    question_options = options[index]
    if not isinstance(question_options, list) or len(question_options) != NUM_OPTIONS:
      found = f"{len(question_options)} options" if isinstance(question_options, list) else (
          f"a {type(question_options).__name__}")
      raise DataError(f"{where}: question {index} has {found}; RACE questions have {NUM_OPTIONS}.")
    _strings(question_options, f"question {index}: option", where)
    label = NO_LABEL
    if has_answers:
      if answers[index] not in RACE_ANSWERS:
        raise DataError(f"{where}: question {index}: answer {answers[index]!r} is not one of "
                        f"{', '.join(RACE_ANSWERS)}.")
      label = RACE_ANSWERS.index(answers[index])
    examples.append(RaceExample(f"{article_id}-{index}", level, article, question, tuple(question_options),
                                label))
  return article_id, has_answers, examples


def _race_folder(data_dir: str) -> str:
  """`data_dir/RACE` where there is one, else `data_dir` (the RACE folder itself)."""
  if not files.is_folder(data_dir):
    if files.exists(data_dir):
      raise InputFileError(f"RACE data folder {data_dir} is a file, not a folder.")
    raise InputFileError(f"RACE data folder not found: {data_dir}")
  nested = os.path.join(data_dir, "RACE")
  return nested if files.is_folder(nested) else data_dir


def read_race_examples(data_dir: str, split: str, high_only: bool = False,
                       middle_only: bool = False) -> List[RaceExample]:
  """The questions of one RACE split, middle school's first, then high school's (Google's order).

  Args:
    data_dir: the folder holding `RACE/` (Google's `--data_dir`), or the `RACE/` folder itself.
    split: "train", "dev" or "test".
    high_only: read the high school questions only (Google's `--high_only`).
    middle_only: read the middle school questions only (Google's `--middle_only`).

  Returns:
    The examples, every file read and checked.

  Raises:
    OptionError: an unknown split, or both `high_only` and `middle_only`.
    InputFileError: `data_dir`, or the split's folder or a level's folder in it, does not exist.
    DataError: a file that is empty, not UTF-8 or not JSON, an article that is not RACE's (a question
      without 4 options, an answer not A-D, counts of questions, options and answers that differ), an article
      id seen twice, or a split where some articles have answers and others not; naming the file (and line
      of `all.txt`) and the question.
  """
  if split not in RACE_SPLITS:
    raise OptionError(f"Unknown RACE split {split!r}; the splits are {', '.join(RACE_SPLITS)}.")
  if high_only and middle_only:
    raise OptionError("high_only and middle_only exclude each other: set at most one.")
  race_dir = _race_folder(data_dir)
  split_dir = os.path.join(race_dir, split)
  if not files.is_folder(split_dir):
    raise InputFileError(f"no RACE/{split} in {data_dir} (looked for {split_dir}).")
  levels = ("high",) if high_only else ("middle",) if middle_only else RACE_LEVELS
  examples = []
  where_of_article_id = {}
  where_first_answered = {}  # whether an article has answers -> where the first such article was read
  for level in levels:
    level_dir = os.path.join(split_dir, level)
    if not files.is_folder(level_dir):
      raise InputFileError(f"no RACE/{split}/{level} in {data_dir} (looked for {level_dir}).")
    for where, record in _read_level_records(level_dir):
      article_id, has_answers, record_examples = _record_examples(record, level, where)
      if article_id in where_of_article_id:
        raise DataError(f"{where}: article id {article_id!r} is also the id of "
                        f"{where_of_article_id[article_id]}; ids must be unique in a split.")
      where_of_article_id[article_id] = where
      where_first_answered.setdefault(has_answers, where)
      if len(where_first_answered) > 1:
        raise DataError(f'{where_first_answered[True]} has "answers" and {where_first_answered[False]} has none: '
                        "a split has answers for all its questions or for none (a test set without them).")
      examples.extend(record_examples)
  return examples


def _question_with_option(question: str, option: str) -> str:
  """Google's qa text: the option fills each "_" blank of the question, or follows it after a space."""
  return question.replace("_", option) if "_" in question else f"{question} {option}"


def race_features(examples: Sequence[RaceExample], tokenizer: SentencePieceTokenizer, max_seq_length: int,
                  max_qa_length: int) -> List[RaceFeature]:
  """Packs each option of each question as `[CLS] article [SEP] qa [SEP]`, cut as Google's RACE features.

  Args:
    examples: the questions.
    tokenizer: the model's tokenizer.
    max_seq_length: the longest sequence.
    max_qa_length: how many pieces of the qa text (question and option) are kept, its last ones; the article
      keeps its first pieces, as many as fit.

  Returns:
    One feature per example, in order.

  Raises:
    OptionError: `max_qa_length` not in 1 to `max_seq_length` - 3 (the article needs room for its [CLS] and
      [SEP], the qa text for its [SEP]).
  """
  if not 0 < max_qa_length < max_seq_length - 2:
    raise OptionError(f"max_qa_length must be from 1 to max_seq_length - 3 ({max_seq_length - 3}), not "
                      f"{max_qa_length} (max_seq_length {max_seq_length}).")

  def preprocess(text: str) -> str:
    return preprocess_text(text, tokenizer.do_lower_case, tokenizer.keep_accents)

  features = []
  article, article_ids = None, []
  for example in examples:
    # The questions of an article come in a row: its ids are computed once for all of them.
    if example.article != article:
      article, article_ids = example.article, tokenizer.encode(example.article, special_tokens_in_text=False)
    # Preprocessed first, as Google's: the "_" test must see a full-width "＿" that NFKD turns into "_".
    question = preprocess(example.question)
    choice_ids, first_segment_lengths = [], []
    for option in example.options:
      qa_ids = tokenizer.encode(_question_with_option(question, preprocess(option)),
                                special_tokens_in_text=False)[-max_qa_length:]
      kept_article_ids = article_ids[:max_seq_length - 3 - len(qa_ids)]
      choice_ids.append(tuple([tokenizer.cls_id] + kept_article_ids + [tokenizer.sep_id] + qa_ids +
                              [tokenizer.sep_id]))
      first_segment_lengths.append(len(kept_article_ids) + 2)
    features.append(RaceFeature(tuple(choice_ids), tuple(first_segment_lengths)))
  return features
