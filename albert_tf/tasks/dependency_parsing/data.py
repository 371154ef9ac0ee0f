"""Dependency parsing files: KLUE-DP's TSV and CoNLL-U (Universal Dependencies), read strictly.

KLUE-DP v1.1 (`klue-dp-v1.1_{train,dev}.tsv`): comment lines starting "##" (the first five describe the
layout), and per sentence a header `## <guid>\t<sentence>` followed directly by one eojeol (a space-separated
word) a line, `INDEX\tWORD_FORM\tLEMMA\tPOS\tHEAD\tDEPREL`, and a blank line. LEMMA is the eojeol's morphemes
separated by spaces ("눈물 을"), POS their tags joined by "+" ("NNG+JKO"), HEAD the index of the head eojeol (0
is the root), DEPREL one of KLUE's 38 relations (`KLUE_DP_LABELS`).

CoNLL-U (https://universaldependencies.org/format.html): 10 tab-separated columns ID FORM LEMMA UPOS XPOS
FEATS HEAD DEPREL DEPS MISC, "#" comments (`# sent_id = ...` and `# text = ...` give the guid and the text), a
blank line after each sentence. Multi-word token lines (ID "1-2") and empty nodes (ID "1.1") are skipped: the
tree is over the syntactic words. The tag kept is XPOS, which in the Korean treebanks holds "+"-joined
morpheme tags as KLUE's POS does, or UPOS where XPOS is "_".

Both readers check everything before returning: indices 1, 2, 3, ... in each sentence, every head in 0 to the
number of words, heads that form a tree under the root (no word on a cycle of heads, hence at least one word
under the root; CoNLL-U may have several, as CoNLL-X allows, KLUE-DP one, as all of its files have), and for
KLUE a relation of its list. A problem is one `DataError` naming the file and the 1-based line.
"""

import dataclasses
import os
import re
from typing import Iterator, List, Optional, Sequence, Tuple

from albert_tf.errors import DataError, OptionError
from albert_tf.files import read_utf8_lines
from albert_tf.tasks.dependency_parsing.decoding import find_cycle

KLUE_DP = "klue-dp"
CONLLU = "conllu"
FORMATS = (KLUE_DP, CONLLU)
# The "task" of a parser run's task.json, whatever its format.
TASK_NAME = "dependency_parsing"

# KLUE-baseline's relation list (`klue_baseline/data/klue_dp.py`, `get_dep_labels`), in its order: label ids
# are indices in it, and KLUE's LAS merges the ids from 15 on ("VP_CMP" and after) into one class.
KLUE_DP_LABELS = (
    "NP", "NP_AJT", "VP", "NP_SBJ", "VP_MOD", "NP_OBJ", "AP", "NP_CNJ", "NP_MOD", "VNP",
    "DP", "VP_AJT", "VNP_MOD", "NP_CMP", "VP_SBJ", "VP_CMP", "VP_OBJ", "VNP_CMP", "AP_MOD", "X_AJT",
    "VP_CNJ", "VNP_AJT", "IP", "X", "X_SBJ", "VNP_OBJ", "VNP_SBJ", "X_OBJ", "AP_AJT", "L",
    "X_MOD", "X_CNJ", "VNP_CNJ", "X_CMP", "AP_CMP", "AP_SBJ", "R", "NP_SVJ")

_KLUE_COLUMNS = ("INDEX", "WORD_FORM", "LEMMA", "POS", "HEAD", "DEPREL")
_CONLLU_COLUMNS = 10
_INTEGER = re.compile(r"-?[0-9]+")
# CoNLL-U's IDs that are not syntactic words: a multi-word token's range ("1-2"), an empty node ("1.1").
_CONLLU_NOT_A_WORD = re.compile(r"[0-9]+-[0-9]+|[0-9]+\.[0-9]+")


@dataclasses.dataclass(frozen=True)
class ParseExample:
  """One sentence and its gold tree, a value per word (a KLUE eojeol, a CoNLL-U syntactic word).

  Attributes:
    guid: the sentence's id (KLUE's header, CoNLL-U's `sent_id`, else "<file name>:<line of its first word>").
    words: the word forms.
    lemmas: the lemmas (KLUE: the eojeol's morphemes separated by spaces).
    pos_tags: the tags (KLUE: the morphemes' tags joined by "+").
    heads: each word's head, 1-based word indices, 0 for the root.
    deprels: each word's relation to its head.
    sentence_text: the sentence as written (KLUE's header, CoNLL-U's `# text`, else the words joined by
      spaces). KLUE's text and words differ in a few sentences (a number or a quote written otherwise).
  """

  guid: str
  words: Tuple[str, ...]
  lemmas: Tuple[str, ...]
  pos_tags: Tuple[str, ...]
  heads: Tuple[int, ...]
  deprels: Tuple[str, ...]
  sentence_text: str


@dataclasses.dataclass
class _Word:
  """A word line as read, with its line number for the checks of its sentence."""

  line_number: int
  form: str
  lemma: str
  pos: str
  head: int
  deprel: str


def _integer(text: str, what: str, where: str) -> int:
  """`text` as an integer (a sign allowed, so that a negative head is reported as out of range)."""
  if not _INTEGER.fullmatch(text):
    raise DataError(f"{where}: {what} {text!r} is not a whole number.")
  return int(text)


def _example(path: str, guid: Optional[str], text: Optional[str], words: List[_Word],
             single_root: bool = False) -> ParseExample:
  """The sentence of `words`, once its heads are checked against its length and to form a tree (with
  `single_root`, a tree with one word under the root)."""
  for word in words:
    if not 0 <= word.head <= len(words):
      raise DataError(f"{path}, line {word.line_number}: head {word.head} is out of range: the sentence has "
                      f"{len(words)} words (heads are 0 for the root or 1 to {len(words)}).")
  roots = [word for word in words if word.head == 0]
  if single_root and len(roots) > 1:
    # The decoder finds single-root trees only: such a sentence would be scored against a tree it cannot give.
    raise DataError(f"{path}, line {roots[1].line_number}: sentence {guid} has {len(roots)} words whose head is 0 "
                    f"(lines {', '.join(str(word.line_number) for word in roots)}); a KLUE-DP sentence has one root, "
                    "the only tree the parser decodes.")
  heads = [word.head for word in words]
  cycle = find_cycle(heads)
  if cycle:
    chain = " -> ".join(str(index) for index in cycle + cycle[:1])
    raise DataError(f"{path}, line {words[cycle[0] - 1].line_number}: the heads of words {chain} form a "
                    "cycle: the heads of a sentence must form a tree under the root (head 0).")
  return ParseExample(guid if guid is not None else f"{os.path.basename(path)}:{words[0].line_number}",
                      tuple(word.form for word in words), tuple(word.lemma for word in words),
                      tuple(word.pos for word in words), tuple(heads), tuple(word.deprel for word in words),
                      text if text is not None else " ".join(word.form for word in words))


def _check_index(index_text: str, words: List[_Word], where: str) -> None:
  index = _integer(index_text, "the word index", where)
  if index != len(words) + 1:
    raise DataError(f"{where}: word index {index} where {len(words) + 1} was expected: each sentence numbers "
                    "its words 1, 2, 3, ...")


def _lines(path: str) -> Iterator[Tuple[int, str]]:
  """(line number, line without its line break) of a UTF-8 file."""
  for line_number, line in read_utf8_lines(path):
    yield line_number, line.rstrip("\r\n")


def read_klue_dp(path: str) -> List[ParseExample]:
  """The sentences of a KLUE-DP TSV file, in file order (the module's docstring gives the layout and checks).

  Raises:
    InputFileError: the file cannot be read.
    DataError: naming the file and line: not UTF-8, no sentence, an eojeol line without a header line right
      before its sentence, a header without its tab, a line without 6 columns or with an empty one, an index
      out of order, a head out of range or on a cycle, two words under the root, a relation not in
      `KLUE_DP_LABELS`.
  """
  examples: List[ParseExample] = []
  header: Optional[Tuple[int, str]] = None  # the last "##" line, and its number
  sentence: Optional[Tuple[str, str]] = None  # the open sentence's guid and text
  words: List[_Word] = []

  def close() -> None:
    nonlocal sentence, words
    if sentence is not None:
      examples.append(_example(path, sentence[0], sentence[1], words, single_root=True))
    sentence, words = None, []

  for line_number, line in _lines(path):
    where = f"{path}, line {line_number}"
    if not line.strip() or line.startswith("##"):
      close()
      header = (line_number, line) if line.startswith("##") else None
      continue
    if sentence is None:
      # The layout's own comment lines hold tabs too: the header is the "##" line right before the first word.
      if header is None or header[0] != line_number - 1:
        raise DataError(f"{where}: an eojeol line that does not follow a sentence header "
                        "(`## <guid>\\t<sentence>` on the line before the sentence's first eojeol).")
      guid, tab, text = header[1][2:].lstrip(" ").partition("\t")
      if not tab or not guid:
        raise DataError(f"{path}, line {header[0]}: a sentence header must be `## <guid>\\t<sentence>`; "
                        "this one has no tab or no guid.")
      sentence = (guid, text)
    columns = line.split("\t")
    if len(columns) != len(_KLUE_COLUMNS):
      raise DataError(f"{where}: {len(columns)} tab-separated columns where KLUE-DP has "
                      f"{len(_KLUE_COLUMNS)} ({' '.join(_KLUE_COLUMNS)}).")
    empty = [name for name, value in zip(_KLUE_COLUMNS, columns) if not value.strip()]
    if empty:
      raise DataError(f"{where}: the {empty[0]} column is empty.")
    index_text, form, lemma, pos, head_text, deprel = columns
    _check_index(index_text, words, where)
    if deprel not in KLUE_DP_LABELS:
      raise DataError(f"{where}: {deprel!r} is not one of KLUE-DP's {len(KLUE_DP_LABELS)} relations "
                      f"({', '.join(KLUE_DP_LABELS)}).")
    words.append(_Word(line_number, form, lemma, pos, _integer(head_text, "the head", where), deprel))
  close()
  if not examples:
    raise DataError(f"{path} holds no sentence: a KLUE-DP file holds `## <guid>\\t<sentence>` headers, each "
                    "followed by its eojeol lines.")
  return examples


def read_conllu(path: str) -> List[ParseExample]:
  """The sentences of a CoNLL-U file, in file order (the module's docstring says what is kept and checked).

  Raises:
    InputFileError: the file cannot be read.
    DataError: naming the file and line: not UTF-8, no sentence, a line without 10 columns, a word ID out of
      order or not a number, a head that is not a number, out of range or on a cycle, an empty DEPREL.
  """
  examples: List[ParseExample] = []
  guid: Optional[str] = None
  text: Optional[str] = None
  words: List[_Word] = []
  for line_number, line in _lines(path):
    where = f"{path}, line {line_number}"
    if not line.strip():
      if words:
        examples.append(_example(path, guid, text, words))
      guid, text, words = None, None, []
      continue
    if line.startswith("#"):
      key, equals, value = line[1:].partition("=")
      if equals and key.strip() == "sent_id":
        guid = value.strip()
      elif equals and key.strip() == "text":
        text = value.strip()
      continue
    columns = line.split("\t")
    if len(columns) != _CONLLU_COLUMNS:
      raise DataError(f"{where}: {len(columns)} tab-separated columns where CoNLL-U has {_CONLLU_COLUMNS} "
                      "(ID FORM LEMMA UPOS XPOS FEATS HEAD DEPREL DEPS MISC).")
    word_id, form, lemma, upos, xpos, _, head_text, deprel = columns[:8]
    if _CONLLU_NOT_A_WORD.fullmatch(word_id):
      continue
    _check_index(word_id, words, where)
    if deprel in ("", "_"):
      raise DataError(f"{where}: word {word_id} has no DEPREL: a tree needs each word's relation.")
    words.append(_Word(line_number, form, lemma, xpos if xpos != "_" else upos,
                       _integer(head_text, "the head", where), deprel))
  if words:
    examples.append(_example(path, guid, text, words))
  if not examples:
    raise DataError(f"{path} holds no sentence: CoNLL-U has one word a line (10 tab-separated columns), a "
                    "blank line after each sentence.")
  return examples


def read_parse_examples(path: str, file_format: str) -> List[ParseExample]:
  """The sentences of `path` in `file_format` ("klue-dp" or "conllu"): `read_klue_dp` or `read_conllu`.

  Raises:
    OptionError: an unknown format.
  """
  if file_format == KLUE_DP:
    return read_klue_dp(path)
  if file_format == CONLLU:
    return read_conllu(path)
  raise OptionError(f"Unknown dependency parsing format {file_format!r}; the formats are "
                    f"{', '.join(FORMATS)}.")


def label_list(file_format: str, train_examples: Sequence[ParseExample]) -> List[str]:
  """The relations a parser of `file_format` predicts, in id order: KLUE's fixed list for "klue-dp" (its order
  is what KLUE's LAS merges by), else those of the train examples, sorted."""
  if file_format == KLUE_DP:
    return list(KLUE_DP_LABELS)
  return sorted({deprel for example in train_examples for deprel in example.deprels})
