"""KorQuAD 2.x (`run_squad_v1 --task_name=korquad2`): questions on whole Wikipedia pages written in HTML.

The official files are shards (`KorQuAD_2.1_train_00.json` ... `_37.json`, dev `_00`, `_01`), each
`{"version", "data": [page, ...]}`, a page `{"title", "url", "context", "raw_html", "qas"}`: `context` is the page's
simplified HTML (tables, lists, paragraphs, headings, links), `raw_html` the page as crawled, and each question
`{"question", "id", "answer": {"text", "answer_start", "html_answer_start"}}` has one answer, itself HTML (a few
words, or a whole table or list), at `answer_start` in `context` (`html_answer_start` is its offset in
`raw_html`, which nothing here reads). KorQuAD 2.0 and 2.1 share this layout; every question has an answer.

`--train_file` and `--predict_file` are one such file or a folder of them (its `*.json`, in name order). A page's
context becomes its text (`html_text.HtmlText`: block tags separate words, entities decoded), and an answer the
text of its HTML range; the pages are long, and the doc-stride windows cut them as any long context. A
prediction's text is written back as the HTML that holds it, the form of the official answers, so that
`predictions.json` is what KorQuAD's evaluation script reads (scored by `korean_scoring.korquad2_scores`).

Every answer must be the context's HTML at its `answer_start` (whitespace runs compare as one space, as the
other readers compare): anything else stops the run with an error naming the file and the question.
"""

from typing import List, Tuple

from albert_tf.errors import DataError, InputFileError
from albert_tf.files import file_exists, folder_files, is_folder
from albert_tf.tasks.squad.examples import ExampleReader, QuestionLayout, SquadExample, load_json
from albert_tf.tasks.squad.html_text import HtmlText

SHARD_PATTERN = "*.json"
# Fields of a page that the scores need no copy of: the examples hold the context's text.
_PAGE_MARKUP_FIELDS = ("context", "raw_html")
_QUOTED_CHARACTERS = 60


def input_files(input_path: str) -> List[str]:
  """The KorQuAD 2.x files of `--train_file` / `--predict_file`: the file, or the folder's `*.json` in name order.

  Raises:
    InputFileError: the path does not exist.
    DataError: a folder without `*.json` files.
  """
  if file_exists(input_path):
    return [input_path]
  if is_folder(input_path):
    shards = folder_files(input_path, SHARD_PATTERN)
    if not shards:
      raise DataError(f"{input_path}: a folder without {SHARD_PATTERN} files; KorQuAD 2.x's are its shards "
                      "(KorQuAD_2.1_dev_00.json, ...).")
    return shards
  raise InputFileError(f"KorQuAD 2.x file or folder not found: {input_path}")


def parse_korquad2(input_file: str, raw: bytes, is_training: bool, version_2_with_negative: bool,
                   layout: QuestionLayout) -> Tuple[List[SquadExample], list, int]:
  """The examples of one KorQuAD 2.x file (an `examples.ExampleReader` parse).

  Args:
    input_file: the file's path, for messages.
    raw: its bytes.
    is_training: training examples keep no map back to the HTML (no answer of theirs is written).
    version_2_with_negative: unused: every KorQuAD 2.x question has its answer.
    layout: unused: KorQuAD 2.x's fields are its own, always checked strictly.

  Returns:
    (the examples, the pages without their HTML (title, url, qas: what the scores read), 0 answers skipped).

  Raises:
    DataError: naming the file (and the question): not UTF-8, not JSON, not KorQuAD 2.x's layout, a question
      without its id, question text or answer object, an answer not at its `answer_start`, an answer without
      text, or no question at all.
  """
  del version_2_with_negative, layout
  document = load_json(input_file, raw)
  if not isinstance(document, dict) or not isinstance(document.get("data"), list):
    raise DataError(f'{input_file}: no "data" list at the top level; not a KorQuAD 2.x file.')
  examples, pages = [], []
  for page_index, page in enumerate(document["data"]):
    where = f"{input_file}: data[{page_index}]"
    if isinstance(page, dict) and "paragraphs" in page and "context" not in page:
      raise DataError(f'{where} has "paragraphs", not a page\'s "context": a SQuAD or KorQuAD 1.0 file '
                      "(--task_name=squad or korquad1).")
    if not isinstance(page, dict) or not isinstance(page.get("context"), str):
      raise DataError(f'{where} has no "context" HTML.')
    if not isinstance(page.get("qas"), list):
      raise DataError(f'{where} has no "qas" list.')
    if page["qas"]:
      context = HtmlText(page["context"])
      for qa_index, qa in enumerate(page["qas"]):
        examples.append(_read_question(f"{where}.qas[{qa_index}]", input_file, context, qa, is_training))
    pages.append({field: value for field, value in page.items() if field not in _PAGE_MARKUP_FIELDS})
  if not examples:
    raise DataError(f"{input_file} holds no questions.")
  return examples, pages, 0


def _read_question(where: str, input_file: str, context: HtmlText, qa: object, is_training: bool) -> SquadExample:
  if not isinstance(qa, dict) or not isinstance(qa.get("id"), str):
    raise DataError(f'{where} has no "id" string.')
  qas_id = qa["id"]
  if not isinstance(qa.get("question"), str):
    raise DataError(f'{input_file}: question {qas_id} has no "question" text.')
  answer = qa.get("answer")
  if not isinstance(answer, dict):
    hint = ("; an \"answers\" list is KorQuAD 1.0's layout (--task_name=korquad1)" if "answers" in qa else "")
    raise DataError(f'{input_file}: question {qas_id} has no "answer" object ({{"text", "answer_start", '
                    f'"html_answer_start"}}){hint}.')
  text, start = answer.get("text"), answer.get("answer_start")
  if not isinstance(text, str) or type(start) is not int:  # not bool, a subclass of int
    raise DataError(f'{input_file}: question {qas_id}: its "answer" needs a "text" string and an integer '
                    f'"answer_start", not {_quoted(text)} and {start!r}.')
  end = start + len(text)
  span = context.markup[start:end] if 0 <= start and end <= len(context.markup) else None
  if span is None or not text.strip() or span.split() != text.split():
    found = _quoted(span) if span is not None else f"outside the context of {len(context.markup)} characters"
    raise DataError(f"{input_file}: question {qas_id}: the answer text {_quoted(text)} is not the context's HTML at "
                    f"its answer_start {start} ({found}).")
  first, text_end = context.text_range(start, end)
  if first == text_end:
    raise DataError(f"{input_file}: question {qas_id}: the answer {_quoted(text)} holds no text, only markup.")
  return SquadExample(qas_id, qa["question"], context.text, context.text[first:text_end], first, False, (text,),
                      context_source=None if is_training else context)


def _quoted(value: object) -> str:
  """A value for a message: a long text cut (an answer can be a whole table)."""
  if isinstance(value, str) and len(value) > _QUOTED_CHARACTERS:
    return repr(value[:_QUOTED_CHARACTERS]) + "…"
  return repr(value)


READER = ExampleReader(input_files=input_files, parse=parse_korquad2)
