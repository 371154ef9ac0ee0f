"""KLUE-RE, relation extraction as sentence classification: the relation between a subject and an object entity
of one sentence, read from the text with both entities marked in it.

KLUE v1.1's files (`klue-re-v1.1/klue-re-v1.1_{train,dev}.json`) are JSON arrays of records `{guid, sentence,
subject_entity, object_entity, label, source}`, each entity `{word, start_idx, end_idx, type}` with inclusive
character offsets into the sentence; the labels are those of `relation_list.json` beside them (`{"relations":
[...]}`, in head order, `no_relation` among them). Every record is checked before training: an entity whose
span lies outside the sentence, ends before it starts or whose `word` is not the sentence's text there, both
entities on the same span, or a label not in the relation list is a `TaskError` naming the file and the record.

The entities are marked in the text (`ENTITY_MARKERS`):
  typed_punct    `& * PER * 이순신 &` and `# ^ LOC ^ 서울 #`: the typed entity markers of "An Improved Baseline for
                 Sentence-level Relation Extraction" (Zhou and Chen, 2022; its subject marker is `@`, which
                 many vocabularies lack), with no new pieces;
  added_pieces   `⟦이순신⟧` and `⟪서울⟫`: one new piece a marker, as KLUE's baseline adds `<subj>`, `</subj>`,
                 `<obj>`, `</obj>` to its vocabulary. The characters are new to a vocabulary, so
                 `tools/extend_vocab.py --new_pieces_file` can add them (it adds no piece spelled with old
                 characters, which `<subj>` is); the run refuses a vocabulary without them.
A served model's `classify_relation` takes the sentence and both entities' spans and types, and marks them in the
graph as `mark_entities` does here; `classify_text` takes a sentence already marked.
"""

import dataclasses
import os
from typing import Dict, List, Optional, Sequence, Tuple

from albert_tf import files
from albert_tf.data.task_readers import SPLITS, Example, read_json_file, read_json_records, split_files
from albert_tf.errors import InputFileError, TaskError
from albert_tf.tasks.classification.task_types import Task

RELATION_LIST_FILE = "relation_list.json"
NO_RELATION = "no_relation"
FOLDER = "klue-re-v1.1"
# KLUE's test labels are not public: the test split reads the dev file, as the other KLUE tasks.
FILE_NAMES = {"train": f"{FOLDER}_train.json", "dev": f"{FOLDER}_dev.json", "test": f"{FOLDER}_dev.json"}
ENTITY_FIELDS = ("subject_entity", "object_entity")
WORD_START = "\u2581"  # SentencePiece's mark of a piece that starts a word


@dataclasses.dataclass(frozen=True)
class Entity:
  """One entity of a record: its text, its inclusive character span in the sentence and its type (PER, ORG,
  LOC, DAT, POH, NOH in KLUE-RE)."""

  word: str
  start: int
  end: int
  type: str


@dataclasses.dataclass(frozen=True)
class EntityMarkers:
  """The text put around each entity: `{type}` in a marker is replaced by the entity's type.

  Attributes:
    subject: (before, after) the subject.
    object: (before, after) the object.
    new_pieces: pieces the markers add to a vocabulary (`tools/extend_vocab.py`); empty: the markers are
      spelled with pieces a vocabulary has.
  """

  subject: Tuple[str, str]
  object: Tuple[str, str]
  new_pieces: Tuple[str, ...] = ()

  def characters(self) -> Tuple[str, ...]:
    """The characters of the markers (the type aside), each of which the vocabulary must have as a piece."""
    text = "".join(self.subject + self.object).replace("{type}", "")
    return tuple(sorted(set(text) - {" "}))


ENTITY_MARKERS: Dict[str, EntityMarkers] = {
    # The paper's subject marker is @, which many SentencePiece vocabularies lack (ours: <unk>): & instead.
    "typed_punct": EntityMarkers(subject=("& * {type} * ", " &"), object=("# ^ {type} ^ ", " #")),
    "added_pieces": EntityMarkers(subject=("⟦", "⟧"), object=("⟪", "⟫"), new_pieces=("⟦", "⟧", "⟪", "⟫")),
}
DEFAULT_MARKERS = "typed_punct"


def mark_entities(sentence: str, subject: Entity, obj: Entity, markers: str = DEFAULT_MARKERS) -> str:
  """The sentence with its subject and object marked as `ENTITY_MARKERS[markers]` says (what the model reads).

  Nested spans nest their markers; the spans must differ (`read_relation_file` checks it).
  """
  style = ENTITY_MARKERS[markers]
  # (position, order at that position, text): ends before starts; of two starts the longer span opens first,
  # of two ends the shorter closes first, so that a nested entity's markers sit inside its container's.
  insertions = []
  for entity, (before, after) in ((subject, style.subject), (obj, style.object)):
    length = entity.end - entity.start + 1
    insertions.append((entity.start, 1, -length, before.format(type=entity.type)))
    insertions.append((entity.end + 1, 0, length, after.format(type=entity.type)))
  pieces, position = [], 0
  for index, _, _, text in sorted(insertions):
    pieces.extend((sentence[position:index], text))
    position = index
  pieces.append(sentence[position:])
  return "".join(pieces)


def read_relation_list(path: str) -> Tuple[str, ...]:
  """The relations of KLUE's `relation_list.json` (`{"relations": [...]}`), in its order (the head's).

  Raises:
    InputFileError: no such file.
    TaskError: not that layout, repeated or empty names, or no `no_relation`, naming the file.
  """
  if not files.exists(path):
    raise InputFileError(f"{path} not found: KLUE-RE reads its labels from {RELATION_LIST_FILE} beside its data "
                         "files, as KLUE's download has it.")
  listing = read_json_file(path, "KLUE-RE's relation list")
  relations = listing.get("relations") if isinstance(listing, dict) else None
  if (not isinstance(relations, list) or not relations
      or not all(isinstance(name, str) and name for name in relations)):
    raise TaskError(f'{path}: not KLUE\'s layout, {{"relations": ["no_relation", ...]}} (a list of names).')
  repeated = sorted({name for name in relations if relations.count(name) > 1})
  if repeated:
    raise TaskError(f"{path}: relations listed twice: {repeated}.")
  if NO_RELATION not in relations:
    raise TaskError(f"{path}: no {NO_RELATION!r} among the relations (KLUE-RE's F1 leaves it out).")
  return tuple(relations)


def _entity(record: dict, field: str, sentence: str, where: str) -> Entity:
  value = record.get(field)
  if value is None:
    raise TaskError(f"{where}: no field {field!r} (an object: word, start_idx, end_idx, type).")
  if not isinstance(value, dict):
    raise TaskError(f"{where} ({record['guid']}): {field} is {value!r}, not an object: it must be one with word, "
                    "start_idx, end_idx and type.")
  for key, kind in (("word", str), ("start_idx", int), ("end_idx", int), ("type", str)):
    if not isinstance(value.get(key), kind) or isinstance(value.get(key), bool):
      kind_name = "an integer" if kind is int else "a string"
      raise TaskError(f"{where}: {field}.{key} is {value.get(key)!r}, not {kind_name}.")
  entity = Entity(value["word"], value["start_idx"], value["end_idx"], value["type"])
  if not 0 <= entity.start <= entity.end < len(sentence):
    raise TaskError(f"{where}: {field} spans characters {entity.start} to {entity.end} (inclusive); the sentence "
                    f"has {len(sentence)} (0 to {len(sentence) - 1}).")
  if sentence[entity.start:entity.end + 1] != entity.word:
    raise TaskError(f"{where}: {field}.word is {entity.word!r} but the sentence holds "
                    f"{sentence[entity.start:entity.end + 1]!r} at {entity.start} to {entity.end}.")
  return entity


def read_relation_file(path: str, relations: Sequence[str], markers: str) -> List[Example]:
  """The examples of one KLUE-RE file: the marked sentence as `text_a`, the relation as the label.

  Raises:
    InputFileError: no such file.
    TaskError: a bad file or record (see the module docstring), naming the file and the record (from 0).
  """
  examples = []
  for where, record in read_json_records(path):
    for field in ("guid", "sentence", "label"):
      if not isinstance(record.get(field), str):
        raise TaskError(f"{where}: field {field!r} is {record.get(field)!r}, not a string.")
    sentence = record["sentence"]
    subject, obj = (_entity(record, field, sentence, where) for field in ENTITY_FIELDS)
    if (subject.start, subject.end) == (obj.start, obj.end):
      raise TaskError(f"{where}: the subject and the object are the same span ({subject.start} to {subject.end}).")
    if record["label"] not in relations:
      raise TaskError(f"{where}: label {record['label']!r} is not one of the {len(relations)} relations of "
                      f"{RELATION_LIST_FILE}.")
    examples.append(Example(record["guid"], mark_entities(sentence, subject, obj, markers), None, record["label"]))
  return examples


class RelationTask(Task):
  """KLUE-RE: a sentence and two marked entities -> one of the relations of `relation_list.json`.

  Scored as KLUE: `micro_f1`, micro F1 over the relations other than `no_relation` (KLUE's figure is it x 100),
  and `auprc`, the mean over every relation of the one-vs-rest area under the precision-recall curve of the
  softmax outputs. The labels are read with the first split read; later splits must list the same.

  Args:
    markers: how entities are marked in the text, a key of `ENTITY_MARKERS`.
  """

  name = "klue-re"
  is_regression = False
  is_pair = False
  metric_names = ("micro_f1", "auprc")
  primary_metric = "micro_f1"
  negative_label = NO_RELATION

  def __init__(self, markers: str = DEFAULT_MARKERS):
    if markers not in ENTITY_MARKERS:
      raise TaskError(f"Unknown entity markers {markers!r}; the choices are {', '.join(ENTITY_MARKERS)}.")
    self.markers = markers
    self.label_list: Optional[Tuple[str, ...]] = None

  @property
  def settings(self) -> Dict[str, str]:
    """What the run records in task.json beside the labels, and a later run of its directory must repeat."""
    return {"entity_markers": self.markers}

  def check_vocabulary(self, pieces: Sequence[str]) -> None:
    """Refuses a vocabulary (its pieces in id order) without a character of the markers as a piece: they would
    be `<unk>`, and the subject's and the object's might not differ."""
    known = set(pieces) | {piece.lstrip(WORD_START) for piece in pieces}
    missing = [character for character in ENTITY_MARKERS[self.markers].characters() if character not in known]
    if not missing:
      return
    style = ENTITY_MARKERS[self.markers]
    if style.new_pieces:
      raise TaskError(f"The vocabulary has no piece {' '.join(missing)}, which --entity_markers={self.markers} needs: "
                      f"add {' '.join(style.new_pieces)} with tools/extend_vocab.py --new_pieces_file (a piece a "
                      "line) and fine-tune from its --output_dir, or use --entity_markers=typed_punct.")
    raise TaskError(f"The vocabulary has no piece {' '.join(missing)}, which --entity_markers={self.markers} "
                    "writes around the entities: they would be <unk>. Use --entity_markers=added_pieces (with "
                    "tools/extend_vocab.py).")

  def _adopt_relations(self, relations: Tuple[str, ...], path: str):
    if self.label_list is None:
      self.label_list = relations
    elif relations != self.label_list:
      raise TaskError(f"{path} lists the relations {list(relations)}; this run's are {list(self.label_list)} "
                      "(the head's order). Use one relation list.")

  def read_examples(self, data_path: str, split: str) -> List[Example]:
    if split not in SPLITS:
      raise TaskError(f"Unknown split {split!r}; the splits are {', '.join(SPLITS)}.")
    if files.is_folder(os.path.join(data_path, FOLDER)):
      data_path = os.path.join(data_path, FOLDER)
    [path] = split_files(data_path, split, FILE_NAMES)
    relations_path = os.path.join(os.path.dirname(path), RELATION_LIST_FILE)
    self._adopt_relations(read_relation_list(relations_path), relations_path)
    return read_relation_file(path, self.label_list, self.markers)
