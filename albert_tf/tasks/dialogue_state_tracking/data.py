"""WoS (KLUE's Wizard of Seoul) dialogue state tracking: the ontology and the dialogues, read strictly, and the
text the model reads at each user turn.

The ontology (`ontology.json`) maps each "domain-slot" to the list of its values, "none" and "dontcare" among
them (WoS's 45 slots in 5 domains). A dialogue file (`wos-v1.1_{train,dev}.json`) is a JSON array of dialogues
`{"guid", "domains", "dialogue": [turns]}`, each turn `{"role": "user" | "sys", "text"}` and, on user turns,
`"state"`: the dialogue state after that turn, a list of "domain-slot-value" strings. Every user turn is one
example (KLUE's baseline numbers them `<guid>-<k>` from 0).

The model reads, at user turn k, the turns newest first: the user turn and the system turn before it (the first
segment), then the earlier turns (the second segment). Packing cuts a long pair from the end of the longer
segment, so what goes first is the oldest text of either (the baseline cuts its history from the left too), and
the user turn is cut last. `turn_segments` is that rule, which the SavedModel's `track_state` applies in the graph
to the turns of a dialogue.

Every problem is one `TaskError` naming the file and the dialogue (its index in the array and its guid) and
turn: a turn without a role or text, an unknown role, a user turn without a state list, a state item that is
not "domain-slot-value", a slot the ontology lacks, a value the ontology does not list for its slot, a slot
given twice in one state.
"""

import dataclasses
import itertools
from typing import Dict, List, Sequence, Tuple

from albert_tf.data.task_readers import read_json_file
from albert_tf.errors import TaskError

TASK_NAME = "wos"
ROLES = ("user", "sys")
NONE_VALUE = "none"
# Between the turns of a dialogue given to the SavedModel's track_state as one string.
TURN_SEPARATOR = "\n"


@dataclasses.dataclass(frozen=True)
class Ontology:
  """The slots in the order of the head ("domain-slot", sorted as KLUE's baseline sorts its slot_meta) and the
  values of each, in the ontology file's order (a value's position is its class id for its slot)."""

  slots: Tuple[str, ...]
  values: Tuple[Tuple[str, ...], ...]

  def as_dict(self) -> Dict[str, List[str]]:
    return {slot: list(values) for slot, values in zip(self.slots, self.values)}

  @classmethod
  def from_dict(cls, mapping: Dict[str, Sequence[str]]) -> "Ontology":
    slots = tuple(sorted(mapping))
    return cls(slots, tuple(tuple(mapping[slot]) for slot in slots))

  def first_difference(self, other: "Ontology") -> str:
    """What `other` first changes of this ontology (a slot, or a slot's value by position), for a message."""
    mine, theirs = self.as_dict(), other.as_dict()
    for slot in sorted(set(mine) | set(theirs)):
      if slot not in theirs:
        return f"it lacks the run's slot {slot!r}"
      if slot not in mine:
        return f"it adds the slot {slot!r}"
      for index, (value, other_value) in enumerate(itertools.zip_longest(mine[slot], theirs[slot])):
        if value != other_value:
          return (f"its slot {slot!r} has {'no value' if other_value is None else repr(other_value)} as value "
                  f"{index} where the run's has {'none' if value is None else repr(value)}")
    return "no slot or value differs"

  def value_ids(self) -> List[Dict[str, int]]:
    """Per slot, value -> its class id."""
    return [{value: index for index, value in enumerate(values)} for values in self.values]


@dataclasses.dataclass(frozen=True)
class TurnExample:
  """One user turn: what the model reads and the gold state after it.

  Attributes:
    guid: "<dialogue guid>-<k>", k the user turn's number in the dialogue from 0 (KLUE's baseline's).
    dialogue_guid: the dialogue's guid.
    turns: the texts of the dialogue's turns up to this user turn, in order.
    state: the gold "domain-slot-value" strings, as the file lists them.
  """

  guid: str
  dialogue_guid: str
  turns: Tuple[str, ...]
  state: Tuple[str, ...]


def turn_segments(turns: Sequence[str]) -> Tuple[str, str]:
  """The two segments the model reads after `turns` (the last one the user's), newest first: the user turn and
  the system's reply before it, then the earlier turns, each joined by spaces."""
  current_start = max(len(turns) - 2, 0)
  return " ".join(reversed(turns[current_start:])), " ".join(reversed(turns[:current_start]))


def split_state_item(item, where: str, ontology: Ontology) -> Tuple[str, str]:
  """("domain-slot", value) of a state item "domain-slot-value" (WoS's slot names hold no "-"; values may)."""
  if not isinstance(item, str) or item.count("-") < 2:
    raise TaskError(f"{where}: state item {item!r} is not \"domain-slot-value\".")
  domain, slot, value = item.split("-", 2)
  if not domain or not slot or not value:
    raise TaskError(f"{where}: state item {item!r} is not \"domain-slot-value\" (a part is empty).")
  name = f"{domain}-{slot}"
  if name not in ontology.slots:
    raise TaskError(f"{where}: state item {item!r}: slot {name!r} is not in the ontology.")
  if value not in ontology.values[ontology.slots.index(name)]:
    raise TaskError(f"{where}: state item {item!r}: value {value!r} is not one of the ontology's values of "
                    f"{name!r}.")
  return name, value


def read_ontology(path: str) -> Ontology:
  """The ontology of `path`: a JSON object "domain-slot" -> a non-empty list of distinct string values.

  Every slot needs its values: the tracker picks each slot's value among them (`model`)."""
  mapping = read_json_file(path, "Ontology file")
  if not isinstance(mapping, dict) or not mapping:
    raise TaskError(f"{path}: the ontology is a JSON object \"domain-slot\" -> list of values, not {mapping!r:.80}.")
  for slot, values in mapping.items():
    parts = slot.split("-")
    if len(parts) != 2 or not all(parts):
      raise TaskError(f"{path}: slot {slot!r} is not \"domain-slot\" (one \"-\" between two names).")
    if (not isinstance(values, list) or not values or not all(isinstance(value, str) and value for value in values)
        or len(set(values)) < len(values)):
      raise TaskError(f"{path}: slot {slot!r} needs a list of distinct non-empty string values, not "
                      f"{values!r:.80}; the tracker picks each slot's value among them.")
    if NONE_VALUE not in values:
      raise TaskError(f"{path}: slot {slot!r} has no value {NONE_VALUE!r} (WoS's every slot has it: the slot "
                      "not set).")
  return Ontology.from_dict(mapping)


def _text(turn: dict, field: str, where: str) -> str:
  value = turn.get(field)
  if not isinstance(value, str):
    raise TaskError(f"{where}: no {field!r} string (the turn has {value!r:.60}).")
  return value


def read_dialogues(path: str, ontology: Ontology) -> List[TurnExample]:
  """Every user turn of the dialogues of `path`, checked against `ontology`."""
  dialogues = read_json_file(path, "Dialogue file")
  if not isinstance(dialogues, list) or not dialogues:
    raise TaskError(f"{path}: WoS's files are a non-empty JSON array of dialogues.")
  examples = []
  for index, dialogue in enumerate(dialogues):
    where = f"{path}, dialogue {index}"
    if not isinstance(dialogue, dict) or not isinstance(dialogue.get("guid"), str):
      raise TaskError(f"{where}: a dialogue is an object with a \"guid\" string.")
    guid = dialogue["guid"]
    where = f"{path}, dialogue {index} ({guid})"
    turns = dialogue.get("dialogue")
    if not isinstance(turns, list) or not turns:
      raise TaskError(f"{where}: no \"dialogue\" list of turns.")
    texts, user_turns = [], 0
    for turn_index, turn in enumerate(turns):
      turn_where = f"{where}, turn {turn_index}"
      if not isinstance(turn, dict):
        raise TaskError(f"{turn_where}: a turn is an object, not {turn!r:.60}.")
      role = _text(turn, "role", turn_where)
      if role not in ROLES:
        raise TaskError(f"{turn_where}: role {role!r} is not one of {', '.join(ROLES)}.")
      texts.append(_text(turn, "text", turn_where))
      if role != "user":
        continue
      state = turn.get("state")
      if not isinstance(state, list):
        raise TaskError(f"{turn_where}: a user turn needs a \"state\" list (the turn has {state!r:.60}).")
      seen = set()
      for item in state:
        slot, _ = split_state_item(item, turn_where, ontology)
        if slot in seen:
          raise TaskError(f"{turn_where}: slot {slot!r} is given twice in the state.")
        seen.add(slot)
      examples.append(TurnExample(f"{guid}-{user_turns}", guid, tuple(texts), tuple(state)))
      user_turns += 1
  if not examples:
    raise TaskError(f"{path}: no user turn in any dialogue.")
  return examples


def state_values(state: Sequence[str]) -> Dict[str, str]:
  """"domain-slot" -> value of checked state items."""
  values = {}
  for item in state:
    domain, slot, value = item.split("-", 2)
    values[f"{domain}-{slot}"] = value
  return values


def state_label_ids(example: TurnExample, ontology: Ontology, value_ids: List[Dict[str, int]]) -> List[int]:
  """Per slot of the ontology, the class id of its value in the example's state ("none" where it has none)."""
  values = state_values(example.state)
  return [ids[values.get(slot, NONE_VALUE)] for slot, ids in zip(ontology.slots, value_ids)]
