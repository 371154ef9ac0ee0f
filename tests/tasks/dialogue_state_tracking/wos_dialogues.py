"""Synthetic WoS dialogues in the official layout, built from the REAL ontology's slots and values
(../shared/klue/ontology.json) in Korean templates written here: WoS itself is not on this machine.

A dialogue visits one or two domains; each user turn asks for one or two slots of its domain (a value the
ontology lists, "dontcare", or for the yes/no slots "yes" or "no"), sometimes changes a value it asked for
before; the state accumulates as WoS's does. Each system turn acknowledges or asks, sometimes naming a value.

  python tests/tasks/dialogue_state_tracking/wos_dialogues.py OUT_DIR [TRAIN_DIALOGUES DEV_DIALOGUES]

writes OUT_DIR/wos-v1.1_{train,dev}.json and ontology.json and prints the dev scores of trivial trackers.
"""

import json
import os
import random
import shutil
import sys

# tests/tasks/dialogue_state_tracking/ of the checkout, whose sibling is shared/.
REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
SHARED = os.path.join(os.path.dirname(REPO), "shared")
ONTOLOGY = os.path.join(SHARED, "klue", "ontology.json")
YES_NO = {"none", "dontcare", "yes", "no"}


def _has_final_consonant(word: str) -> bool:
  last = word[-1]
  if "가" <= last <= "힣":
    return (ord(last) - ord("가")) % 28 != 0
  return last in "0136789lmnLMN"  # read aloud: 영, 일, 삼, 육, 칠, 팔, 구; el, em, en


def _topic(word: str) -> str:
  return word + ("은" if _has_final_consonant(word) else "는")


def _with(word: str) -> str:
  """word + (으)로."""
  last = word[-1]
  plain = not _has_final_consonant(word) or ("가" <= last <= "힣" and (ord(last) - ord("가")) % 28 == 8)
  return word + ("로" if plain else "으로")


USER_VALUE = ("{domain} {slot} 조건은 {value_with} 부탁드려요.", "{slot_topic} {value_with} 해 주세요.",
              "{domain} 찾는데 {slot_topic} {value}이면 좋겠어요.", "{value_with} 알아봐 주실래요? {slot} 기준이에요.")
USER_CHANGE = ("아 잠깐만요, {slot_topic} {value_with} 바꿀게요.", "{slot} 말인데요, 그냥 {value_with} 해 주세요.")
USER_YES = ("{slot} 되는 곳이면 좋겠어요.", "{slot} 꼭 돼야 해요.")
USER_NO = ("{slot} 안 되는 곳이 좋아요.", "{slot} 필요 없어요.")
USER_DONTCARE = ("{slot_topic} 상관없어요.", "{slot_topic} 아무래도 괜찮아요.")
SYSTEM = ("네, 알겠습니다. 더 필요하신 조건이 있으신가요?", "{value} 말씀이시죠? 확인했습니다.",
          "조건에 맞는 곳을 찾아볼게요. 다른 건 없으신가요?", "{domain} 관련해서 더 도와드릴까요?")


def _utterance(rng, domain, slot, value, change):
  fields = {"domain": domain, "slot": slot, "slot_topic": _topic(slot), "value": value}
  if value == "yes":
    template = rng.choice(USER_YES)
  elif value == "no":
    template = rng.choice(USER_NO)
  elif value == "dontcare":
    template = rng.choice(USER_DONTCARE)
  else:
    fields["value_with"] = _with(value)
    template = rng.choice(USER_CHANGE if change else USER_VALUE)
  return template.format(**fields)


def dialogue(rng, ontology, guid, slots=None):
  """One dialogue record of the official layout, asking for `slots` only (default: every slot)."""
  by_domain = {}
  for name in slots or ontology:
    by_domain.setdefault(name.split("-")[0], []).append(name)
  domains = rng.sample(sorted(by_domain), min(rng.choice((1, 1, 2)), len(by_domain)))
  state, turns = {}, []
  for domain in domains:
    for _ in range(rng.randint(2, 3)):
      texts = []
      asked = [name for name in state if name.startswith(domain + "-")]
      change = asked and rng.random() < 0.25
      names = [rng.choice(asked)] if change else rng.sample(by_domain[domain], rng.choice((1, 1, 2)))
      for name in names:
        values = [value for value in ontology[name] if value != "none"]
        choices = ["yes", "no", "dontcare"] if set(ontology[name]) == YES_NO else values
        value = rng.choice([value for value in choices if value != state.get(name)] or choices)
        state[name] = value
        texts.append(_utterance(rng, domain, name.split("-")[1], value, change))
      turns.append({"role": "user", "text": " ".join(texts),
                    "state": [f"{name}-{value}" for name, value in state.items()]})
      named = rng.choice(names)
      # The system names a value the way the user did: not "yes", "no" or "dontcare".
      replies = SYSTEM if state[named] not in YES_NO else SYSTEM[:1] + SYSTEM[2:]
      turns.append({"role": "sys", "text": rng.choice(replies).format(domain=domain, value=state[named])})
  return {"guid": guid, "domains": domains, "dialogue": turns}


def write_wos(folder, train_dialogues, dev_dialogues, seed=0, slots=None):
  """Writes wos-v1.1_train.json, wos-v1.1_dev.json and the real ontology.json into `folder`; returns it. The
  dialogues ask for `slots` only (default: every slot of the ontology)."""
  with open(ONTOLOGY, encoding="utf-8") as reader:
    ontology = json.load(reader)
  rng = random.Random(seed)
  os.makedirs(folder, exist_ok=True)
  for split, count in (("train", train_dialogues), ("dev", dev_dialogues)):
    records = [dialogue(rng, ontology, f"wos-v1.1_{split}_{index:05d}", slots) for index in range(count)]
    with open(os.path.join(folder, f"wos-v1.1_{split}.json"), "w", encoding="utf-8") as writer:
      json.dump(records, writer, ensure_ascii=False, indent=1)
  shutil.copy(ONTOLOGY, os.path.join(folder, "ontology.json"))
  return folder


def trivial_states(records, ontology):
  """Per user turn: the gold state, the empty state, the previous user turn's gold state, and every ontology
  value whose text occurs in the dialogue so far (its slot's first such value)."""
  rows = []
  for record in records:
    previous, seen = [], ""
    for turn in record["dialogue"]:
      seen += " " + turn["text"]
      if turn["role"] != "user":
        continue
      matched = [f"{name}-{value}" for name, values in ontology.items()
                 for value in [next((value for value in values if value not in YES_NO and value in seen), None)]
                 if value is not None]
      rows.append((turn["state"], [], previous, matched))
      previous = turn["state"]
  return rows


def main(argv):
  sys.path.insert(0, REPO)
  from albert_tf.tasks.dialogue_state_tracking.metrics import state_tracking_scores
  folder = argv[1]
  train, dev = (int(argv[2]), int(argv[3])) if len(argv) > 3 else (2000, 200)
  write_wos(folder, train, dev)
  with open(os.path.join(folder, "wos-v1.1_dev.json"), encoding="utf-8") as reader:
    records = json.load(reader)
  with open(ONTOLOGY, encoding="utf-8") as reader:
    rows = trivial_states(records, json.load(reader))
  gold = [row[0] for row in rows]
  for index, name in ((1, "empty state"), (2, "previous turn's gold state"), (3, "values named in the text")):
    scores = state_tracking_scores([row[index] for row in rows], gold)
    print(f"{name}: joint goal accuracy {scores['joint_goal_accuracy']:.4f}, slot F1 {scores['slot_f1']:.4f}")


if __name__ == "__main__":
  main(sys.argv)
