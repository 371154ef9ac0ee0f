"""Dialogue state tracking (WoS) end to end: the reader and its refusals, the segments the model reads, KLUE's
joint goal accuracy and slot F1 against TRADE's formula written out here, the tool on synthetic dialogues built
from the real ontology (train, evaluate, predict, export, serve) learning what trivial trackers do not, and the
checkpoint rebuilt through the registry."""

import collections
import json
import os
import re

import numpy as np
import pytest
import tensorflow as tf

from albert_tf import files
from albert_tf.errors import TaskError
from albert_tf.modeling import checkpoints as checkpoint_lib
from albert_tf.modeling.checkpoints import build_model_for_checkpoint
from albert_tf.serving import onnx_export
from albert_tf.serving.saved_model import TextPacking
from albert_tf.tasks.dialogue_state_tracking import data, metrics, serving
from albert_tf.tasks.dialogue_state_tracking.model import GATE_VALUES
from albert_tf.tasks.dialogue_state_tracking.objective import PREDICTIONS, DialogueStateTrackingObjective
from albert_tf.text.graph_tokenizer import GraphTokenizer
from albert_tf.text.tokenizer import SentencePieceTokenizer
from albert_tf.training import run_directory
from tests.conftest import (SP8K_MODEL, corpus_lines, onnx_export_refusal, python_pack, randomize, requires_shared,
                            run_tool, tiny_config)
from tests.tasks.dialogue_state_tracking.wos_dialogues import ONTOLOGY, trivial_states, write_wos

pytestmark = [requires_shared(ONTOLOGY), requires_shared(SP8K_MODEL)]
# One layer (tiny_config's default is 4): the tool's train, eval, predict and export steps and `track_state` trace
# a quarter of the graph; 20 steps still lower the loss and the head's outputs still depend on the text.
CONFIG = dict(vocab_size=8000, max_position_embeddings=128, num_hidden_layers=1)
# The slots the tool's dialogues ask for (the head tracks all 45).
LEARNED_SLOTS = ("숙소-가격대", "숙소-종류", "숙소-주차 가능", "숙소-수영장 유무", "숙소-예약 요일")


def reference_scores(predicted, gold):
  """KLUE's wos_jga and wos_slot_micro_f1 from their definitions (TRADE's per-turn F1 averaged over turns), as
  fractions."""
  joint = [collections.Counter(set(p)) == collections.Counter(set(g)) for p, g in zip(predicted, gold)]
  f1s = []
  for p, g in zip(predicted, gold):
    if not g:
      f1s.append(float(not p))
      continue
    hits = sum(item in p for item in g)
    precision = hits / len(p) if p else 0.0
    recall = hits / len(g)
    f1s.append(2 * precision * recall / (precision + recall) if hits else 0.0)
  return float(np.mean(joint)), float(np.mean(f1s))


@pytest.fixture(scope="module")
def ontology():
  return data.read_ontology(ONTOLOGY)


def test_the_real_ontology_reads_as_wos_45_slots_in_5_domains(ontology):
  assert len(ontology.slots) == 45 and len({slot.split("-")[0] for slot in ontology.slots}) == 5
  assert list(ontology.slots) == sorted(ontology.slots)
  assert all({"none", "dontcare"} <= set(values) for values in ontology.values)
  assert len(ontology.values[ontology.slots.index("식당-예약 시간")]) == 641


@pytest.mark.parametrize("where", ["local", "bucket"])
def test_the_reader_makes_an_example_of_each_user_turn(tmp_path, ontology, where, bucket):
  root = f"{bucket if where == 'bucket' else tmp_path}/wos"  # --data_dir=gs://... too
  with files.staged_folder(root) as staging:
    write_wos(staging, 6, 2, seed=3)
    records = json.load(open(os.path.join(staging, "wos-v1.1_train.json"), encoding="utf-8"))
  examples = data.read_dialogues(f"{root}/wos-v1.1_train.json", ontology)
  # --data_dir's dialogues, with the ontology.json beside them.
  objective = DialogueStateTrackingObjective(None)
  assert objective.read_examples(root, "train") == examples and objective.ontology == ontology
  expected = [(f"{record['guid']}-{k}", turn["state"]) for record in records
              for k, turn in enumerate(t for t in record["dialogue"] if t["role"] == "user")]
  assert [(example.guid, list(example.state)) for example in examples] == expected
  first = records[0]["dialogue"]
  assert examples[0].turns == (first[0]["text"],) and examples[1].turns == tuple(t["text"] for t in first[:3])
  # The model reads the turns newest first: the user turn and the system's reply, then the earlier turns.
  assert data.turn_segments(["u0"]) == ("u0", "")
  assert data.turn_segments(["u0", "s0", "u1", "s1", "u2"]) == ("u2 s1", "u1 s0 u0")
  values = data.state_values(examples[1].state)
  ids = data.state_label_ids(examples[1], ontology, ontology.value_ids())
  for slot, values_of_slot, index in zip(ontology.slots, ontology.values, ids):
    assert values_of_slot[index] == values.get(slot, "none")


BAD_TURNS = {
    "a value the ontology lacks": (lambda turn: turn["state"].append("숙소-가격대-공짜"),
                                   "value '공짜' is not one of the ontology's values of '숙소-가격대'"),
    "a slot the ontology lacks": (lambda turn: turn["state"].append("숙소-층수-3"),
                                  "slot '숙소-층수' is not in the ontology"),
    "a malformed item": (lambda turn: turn["state"].append("숙소가격대저렴"),
                         "state item '숙소가격대저렴' is not \"domain-slot-value\""),
    "a turn without role": (lambda turn: turn.pop("role"), "no 'role' string"),
    "a turn without text": (lambda turn: turn.pop("text"), "no 'text' string"),
}


def run_tiny_tracker(tmp_path, data_dir):
  """run_dialogue_state_tracking on `data_dir` for 2 steps of a tiny model, into tmp_path/run."""
  config = tmp_path / "albert_config.json"
  tiny_config(**CONFIG).to_json_file(str(config))
  return run_tool("run_dialogue_state_tracking", "--task_name=wos", f"--data_dir={data_dir}",
                  f"--output_dir={tmp_path / 'run'}", f"--albert_config_file={config}",
                  f"--spm_model_file={SP8K_MODEL}", "--max_seq_length=64", "--train_step=2")


@pytest.mark.parametrize("problem", sorted(BAD_TURNS))
def test_the_tool_refuses_bad_dialogues_with_one_line_naming_file_dialogue_and_turn(tmp_path, problem):
  folder = write_wos(str(tmp_path / "data"), 3, 2, seed=5, slots=LEARNED_SLOTS)
  path = os.path.join(folder, "wos-v1.1_dev.json")
  records = json.load(open(path, encoding="utf-8"))
  damage, reason = BAD_TURNS[problem]
  damage(records[1]["dialogue"][2])
  json.dump(records, open(path, "w", encoding="utf-8"), ensure_ascii=False)
  result = run_tiny_tracker(tmp_path, folder)
  assert result.returncode == 2
  lines = result.stderr.strip().splitlines()
  assert lines[-1].startswith(f"error: {path}, dialogue 1 ({records[1]['guid']}), turn 2: "), lines[-1]
  assert reason in lines[-1]
  assert not (tmp_path / "run").exists()


def test_the_tool_refuses_a_dialogue_file_as_data_dir(tmp_path):
  # Read as the train and the dev split, it would choose the best checkpoint on training dialogues.
  train = os.path.join(write_wos(str(tmp_path / "data"), 3, 2, seed=5, slots=LEARNED_SLOTS), "wos-v1.1_train.json")
  result = run_tiny_tracker(tmp_path, train)
  assert result.returncode == 2
  assert result.stderr.strip().splitlines()[-1] == (
      f"error: --data_dir {train} is a file; --task_name=wos reads a folder: the one that holds "
      "wos-v1.1_train.json, wos-v1.1_dev.json and ontology.json."), result.stderr[-2000:]
  assert not (tmp_path / "run").exists()


def test_slot_f1_follows_trades_rules_for_empty_states():
  assert metrics.turn_slot_f1([], []) == 1.0
  assert metrics.turn_slot_f1(["a-b-c"], []) == 0.0
  assert metrics.turn_slot_f1([], ["a-b-c"]) == 0.0
  assert metrics.turn_slot_f1(["a-b-c", "a-d-e"], ["a-b-c", "a-f-g", "a-h-i"]) == pytest.approx(2 * 0.5 * (1 / 3)
                                                                                              / (0.5 + 1 / 3))
  predicted = [[], ["a-b-c"], ["a-b-c", "a-d-e"], ["x-y-z"]]
  gold = [[], [], ["a-d-e", "a-b-c"], ["a-b-c"]]
  scores = metrics.state_tracking_scores(predicted, gold)
  assert (scores["joint_goal_accuracy"], scores["slot_f1"]) == pytest.approx(reference_scores(predicted, gold))
  assert scores["joint_goal_accuracy"] == 0.5


def test_a_right_slot_with_a_wrong_value_is_a_wrong_turn():
  # Joint goal accuracy and slot F1 compare whole "domain-slot-value" items: the slot alone earns nothing.
  gold = [["숙소-가격대-저렴", "숙소-종류-호텔"], ["숙소-가격대-저렴"]]
  predicted = [["숙소-가격대-비싼", "숙소-종류-호텔"], ["숙소-가격대-비싼"]]
  scores = metrics.state_tracking_scores(predicted, gold)
  assert scores == pytest.approx({"joint_goal_accuracy": 0.0, "slot_f1": 0.5 / 2})  # turn F1s: 1/2 and 0
  assert (scores["joint_goal_accuracy"], scores["slot_f1"]) == pytest.approx(reference_scores(predicted, gold))


def tool(root, *flags):
  result = run_tool("run_dialogue_state_tracking", "--task_name=wos", f"--data_dir={root / 'data'}",
                    f"--output_dir={root / 'run'}", f"--albert_config_file={root / 'albert_config.json'}",
                    f"--spm_model_file={SP8K_MODEL}", "--max_seq_length=64", "--eval_batch_size=16",
                    "--predict_batch_size=16", *flags)
  assert result.returncode == 0, result.stderr[-3000:]
  return result.stderr


@pytest.fixture(scope="module")
def trained_run(tmp_path_factory):
  """The tool on 40 train and 12 dev synthetic dialogues: 20 steps of a tiny model from scratch, scored at 10
  and 20."""
  root = tmp_path_factory.mktemp("wos")
  write_wos(str(root / "data"), 40, 12, seed=1, slots=LEARNED_SLOTS)
  tiny_config(**CONFIG).to_json_file(str(root / "albert_config.json"))
  stderr = tool(root, "--train_step=20", "--train_batch_size=16", "--learning_rate=1e-3", "--warmup_step=0",
                "--save_checkpoints_steps=10", "--iterations_per_loop=10")
  return root, stderr


@pytest.fixture(scope="module")
def scored_run(trained_run, ontology):
  """The trained run's best weights, rebuilt through the registry, with one state item made the head's answer
  wherever it is not overruled (its slot's gate, and for a value other than a gate's its candidate, 100 nats
  ahead), and the lexical weights zeroed, scored, predicting and exported by the tool without training.

  The item is the dev split's most frequent one-item state, so that some turns are right and others not."""
  root, _ = trained_run
  best = str(root / "run" / run_directory.BEST_CHECKPOINT)
  model, _ = build_model_for_checkpoint(tiny_config(**CONFIG), best)
  assert model.ontology() == ontology.as_dict()
  dev = data.read_dialogues(str(root / "data" / "wos-v1.1_dev.json"), ontology)
  [(item, _)] = collections.Counter(example.state[0] for example in dev if len(example.state) == 1).most_common(1)
  slot, value = data.split_state_item(item, "dev", ontology)
  slot_index = ontology.slots.index(slot)
  head = model.state_tracker_head
  gate = GATE_VALUES.index(value) if value in GATE_VALUES else len(GATE_VALUES)
  head.gate_bias.assign(tf.tensor_scatter_nd_add(head.gate_bias, [[slot_index, gate]], [100.0]))
  row = sum(len(values) for values in ontology.values[:slot_index]) + ontology.values[slot_index].index(value)
  head.value_bias.assign(tf.tensor_scatter_nd_add(head.value_bias, [[row]], [100.0]))
  # Without the lexical weights: values whose pieces are found alike would tie, and float noise pick one.
  head.value_match_weight.assign(tf.zeros_like(head.value_match_weight))
  head.pointer_weight.assign(tf.zeros_like(head.pointer_weight))
  tf.train.Checkpoint(**{checkpoint_lib.MODEL_KEY: model}).write(best)
  tool(root, "--nodo_train", "--do_eval", "--do_predict", f"--export_dir={root / 'export'}")
  records = json.loads((root / "run" / PREDICTIONS).read_text(encoding="utf-8"))
  return root, dev, records, item


def test_the_tool_trains_and_scores_every_checkpoint(trained_run):
  root, stderr = trained_run
  losses = [float(value) for value in re.findall(r"\| loss ([0-9.]+)", stderr)]
  assert len(losses) == 2 and losses[1] < losses[0]
  assert len(re.findall(r"^eval: .*joint_goal_accuracy", stderr, re.MULTILINE)) == 2
  task = json.loads((root / "run" / "task.json").read_text(encoding="utf-8"))
  assert task["task"] == "wos" and task["ontology"] == json.load(open(ONTOLOGY, encoding="utf-8"))
  assert len(task["value_piece_ids"]) == sum(len(values) for values in task["ontology"].values())


def test_a_resumed_run_takes_the_value_pieces_its_task_json_records(trained_run, monkeypatch):
  # A run with a task.json (resumed, evaluated, exported) takes the pieces of the 2,452 values from there, and
  # reading the splits' ontology again tokenizes nothing either.
  root, _ = trained_run
  task = json.loads((root / "run" / "task.json").read_text(encoding="utf-8"))
  objective = DialogueStateTrackingObjective(SentencePieceTokenizer(SP8K_MODEL))
  monkeypatch.setattr(objective, "_word_pieces", lambda text: pytest.fail(f"{text!r} tokenized again"))
  objective.adopt_run_info(task, str(root / "run"))
  objective.read_examples(str(root / "data"), "dev")
  model = objective.build_model(tiny_config(**CONFIG), 0.0)
  assert [list(pieces) for pieces in model.value_piece_ids] == task["value_piece_ids"]
  assert objective.run_info() == task


def test_the_scores_are_klues_on_the_predictions_the_tool_wrote(scored_run, ontology):
  root, dev, records, item = scored_run
  assert [record["guid"] for record in records] == [example.guid for example in dev]
  assert [record["gold_state"] for record in records] == [list(example.state) for example in dev]
  predicted = [record["state"] for record in records]
  assert all(item in state for state in predicted)
  for state in predicted:
    for predicted_item in state:
      data.split_state_item(predicted_item, "prediction", ontology)  # every predicted item is in the ontology
  evaluation = (root / "run" / run_directory.EVAL_RESULTS).read_text()
  found = dict(re.findall(r"^(joint_goal_accuracy|slot_f1) = ([0-9.]+)$", evaluation, re.MULTILINE))
  joint, f1 = reference_scores(predicted, [record["gold_state"] for record in records])
  assert float(found["joint_goal_accuracy"]) == pytest.approx(joint, abs=1e-4)
  assert float(found["slot_f1"]) == pytest.approx(f1, abs=1e-4)
  assert 0 < joint < f1 < 1
  # Trivial trackers on the same turns: the empty state scores nothing (every gold state has an item).
  rows = trivial_states(json.load(open(root / "data" / "wos-v1.1_dev.json", encoding="utf-8")),
                        json.load(open(ONTOLOGY, encoding="utf-8")))
  assert reference_scores([row[1] for row in rows], [row[0] for row in rows]) == (0.0, 0.0)


def test_the_export_tracks_raw_dialogues_as_the_predictions(scored_run, ontology):
  root, dev, records, _ = scored_run
  loaded = tf.saved_model.load(str(root / "export" / "1"))
  served = loaded.signatures["track_state"](dialogue=tf.constant([data.TURN_SEPARATOR.join(example.turns)
                                                                  for example in dev]))
  for row, record in enumerate(records):
    count = int(served["num_state"][row])
    assert [value.decode() for value in served["state"].numpy()[row, :count]] == record["state"]
  assert served["values"].shape == (len(dev), 45)


def test_export_onnx_refuses_a_tracker_with_one_line_before_converting(scored_run, tmp_path):
  version = scored_run[0] / "export" / "1"
  assert onnx_export_refusal(version, tmp_path / "onnx") == (
      f"error: {version} is a dialogue state tracker (its track_state signature): export_onnx does not support "
      f"dialogue state trackers; it converts {onnx_export.converted_kinds()}.")


def test_track_state_reads_the_turns_as_the_tool_packs_them(ontology):
  # The graph's segments of the joined turns, packed in the SavedModel, are the tool's packing of the same turns,
  # id for id: Google's `_truncate_seq_pair` of `data.turn_segments` written out in Python (a long history loses
  # its oldest turns first). A random head on random weights then gives the same values from both (the slots of
  # the tool's dialogues only: a smaller head builds faster).
  tokenizer = SentencePieceTokenizer(SP8K_MODEL)
  objective = DialogueStateTrackingObjective(tokenizer)
  slots = {slot: ontology.as_dict()[slot] for slot in LEARNED_SLOTS}
  objective.adopt_run_info({"task": "wos", "ontology": slots}, "run")
  law = corpus_lines("ko_law.txt", 7)
  turns = [("숙소 찾아요",), ("숙소 찾아요", "네", "주차 가능 되는 곳이면 좋겠어요"), tuple(law),
           ("", "서울 중앙 호텔", "가격대는 저렴으로 해 주세요"), (" ".join(law), "네", "가격대는 저렴으로 해 주세요")]
  examples = [data.TurnExample(f"d-{index}", "d", dialogue, ()) for index, dialogue in enumerate(turns)]
  graph_tokenizer = GraphTokenizer(SP8K_MODEL)
  length = 48
  split = objective.encode(examples, graph_tokenizer, length, "dialogues")
  batch = split.batch(tf.range(len(examples)), tf.ones([len(examples)]))
  expected = [python_pack(tokenizer, *data.turn_segments(dialogue), length) for dialogue in turns]
  for column, name in enumerate(("input_word_ids", "input_mask", "input_type_ids")):
    np.testing.assert_array_equal(batch["inputs"][name].numpy(), [row[column] for row in expected])
  # Both long dialogues fill the length, each segment cut from its end: the first keeps the start of the user's
  # turn, the second the newest earlier turn's; the last dialogue's short current pair stays whole.
  for row in (2, 4):
    ids, mask, types = expected[row]
    assert sum(mask) == length
    first, second = ids[1:types.index(1) - 1], ids[types.index(1):length - 1]
    user, newest = tokenizer.encode(turns[row][-1]), tokenizer.encode(turns[row][-3])
    assert first[:len(user)] == user[:len(first)]
    assert second[:len(newest)] == newest[:len(second)]
  assert first == tokenizer.encode(data.turn_segments(turns[4])[0])

  model = objective.build_model(tiny_config(**CONFIG), 0.0)
  model(batch["inputs"])
  randomize(model, seed=4, scale=1.0)
  module = serving.AlbertDialogueStateTrackerServingModule(model, graph_tokenizer, TextPacking(length))
  joined = tf.constant([data.TURN_SEPARATOR.join(dialogue) for dialogue in turns])
  packed = module._pack(*serving.dialogue_segments(joined))
  width = packed["input_word_ids"].shape[1]
  for name in ("input_word_ids", "input_mask", "input_type_ids"):
    np.testing.assert_array_equal(packed[name].numpy(), batch["inputs"][name].numpy()[:, :width])
  assert not batch["inputs"]["input_mask"].numpy()[:, width:].any()
  predicted = objective.predict(model, batch).numpy()
  assert len({tuple(row) for row in predicted}) > 1  # the texts give different values
  served = module.track_state(joined)
  np.testing.assert_array_equal(served["value_ids"].numpy(), predicted)
  for row, state in enumerate(objective._states(predicted)):
    assert [item.decode() for item in served["state"].numpy()[row, :int(served["num_state"][row])]] == state


def test_a_run_refuses_another_ontology_naming_its_file_and_first_difference(ontology):
  other = dict(ontology.as_dict())
  other["숙소-가격대"] = other["숙소-가격대"] + ["무료"]
  expected = (f"The ontology {ONTOLOGY} differs from the one the run in --output_dir was trained with (its task.json): "
              f"its slot '숙소-가격대' has '무료' as value {len(ontology.as_dict()['숙소-가격대'])} where the run's has "
              "none. The head's classes would change")
  # Read before the run's task.json (training) or after it (evaluating, predicting): the same message.
  for run_first in (False, True):
    objective = DialogueStateTrackingObjective(SentencePieceTokenizer(SP8K_MODEL))
    adopt = lambda: objective.adopt_run_info({"task": "wos", "ontology": ontology.as_dict()}, "run")
    read = lambda: objective._set_ontology(data.Ontology.from_dict(other), ONTOLOGY)
    first, second = (adopt, read) if run_first else (read, adopt)
    first()
    with pytest.raises(TaskError, match="^" + re.escape(expected)):
      second()
  del other["숙소-가격대"]
  assert ontology.first_difference(data.Ontology.from_dict(other)) == "it lacks the run's slot '숙소-가격대'"
