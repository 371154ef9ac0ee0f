"""The state tracker's head in the registry. Google has no dialogue script and transformers no ALBERT state
tracker: the head's TF1 names are our own, under `state_tracker/`, and it has no Hugging Face names (export to
Hugging Face refuses it). The ontology and its pieces are not variables: a run's task.json records them
(`run_info`), and `rebuild` reads them there."""

from typing import Dict, List, Tuple

import tensorflow as tf

from albert_tf.errors import TaskError
from albert_tf.modeling import task_heads
from albert_tf.modeling.config import AlbertConfig
from albert_tf.modeling.weight_names import WeightNames, dense_weights
from albert_tf.tasks.dialogue_state_tracking import serving
from albert_tf.tasks.dialogue_state_tracking.data import Ontology
from albert_tf.tasks.dialogue_state_tracking.model import AlbertDialogueStateTracker

ATTRIBUTE = "state_tracker_head"
GOOGLE_SCOPE = "state_tracker"


def weight_names(head) -> List[Tuple[WeightNames, tf.Variable]]:
  """Every variable of a `SlotValueHead`, named `state_tracker/...`."""
  named = (dense_weights(head.value_projection, f"{GOOGLE_SCOPE}/value_projection", None)
           + dense_weights(head.gate, f"{GOOGLE_SCOPE}/gate", None))
  return named + [(WeightNames(f"{GOOGLE_SCOPE}/{name}", None), getattr(head, name))
                  for name in ("slot_queries", "slot_gate_kernel", "gate_bias", "gate_feature_weight",
                               "value_embeddings", "value_bias", "value_match_weight", "pointer_weight")]


def run_info(model: AlbertDialogueStateTracker) -> Dict:
  """What `rebuild` needs of task.json: the ontology and the piece ids of its values and slot names."""
  return {"ontology": model.ontology(), "value_piece_ids": [list(ids) for ids in model.value_piece_ids],
          "slot_piece_ids": [list(ids) for ids in model.slot_piece_ids]}


def placeholder_ontology(num_slots: int, num_values: int) -> Tuple[List[str], List[List[str]]]:
  """Slots "SLOT_0", ... and values "VALUE_0", ... of the head's sizes, for a checkpoint without its task.json:
  the weights restore (to convert them, as a classifier's labels become "LABEL_0", ...), but which value is
  whose is unknown (the first slot takes the values the others' one each leaves), so its states mean nothing."""
  counts = [num_values - num_slots + 1] + [1] * (num_slots - 1)
  values, start = [], 0
  for count in counts:
    values.append([f"VALUE_{index}" for index in range(start, start + count)])
    start += count
  return [f"SLOT_{index}" for index in range(num_slots)], values


def rebuild(config: AlbertConfig, shapes: Dict[str, List[int]], task_info: Dict) -> AlbertDialogueStateTracker:
  """The tracker of a checkpoint, its slots, values and their pieces from the run's task.json (checked against
  the head's sizes), or placeholders of the head's sizes without one (`placeholder_ontology`)."""
  num_slots = shapes[f"{ATTRIBUTE}/slot_queries"][0]
  num_values = shapes[f"{ATTRIBUTE}/value_embeddings"][0]
  if not all(isinstance(task_info.get(name), expected) for name, expected in (
      ("ontology", dict), ("value_piece_ids", list), ("slot_piece_ids", list))):
    slots, values = placeholder_ontology(num_slots, num_values)
    model = AlbertDialogueStateTracker(config, slots, values, [[]] * num_values, [[]] * num_slots)
  else:
    ontology = Ontology.from_dict(task_info["ontology"])
    if (num_slots, num_values) != (len(ontology.slots), sum(len(values) for values in ontology.values)):
      raise TaskError(f"The checkpoint's state tracker has {num_slots} slots and {num_values} values; its "
                      f"task.json's ontology has {len(ontology.slots)} and "
                      f"{sum(len(values) for values in ontology.values)}.")
    model = AlbertDialogueStateTracker(config, ontology.slots, ontology.values, task_info["value_piece_ids"],
                                       task_info["slot_piece_ids"])
  model(model.dummy_inputs(), training=False)
  return model


# Google's checkpoints hold no state tracker, so there is no scope to look for in them (google_scope None).
STATE_TRACKER_HEAD = task_heads.register(task_heads.TaskHead(
    attribute=ATTRIBUTE, description="dialogue state tracker head", model_class=AlbertDialogueStateTracker,
    weight_names=weight_names, rebuild=rebuild, serving_module=serving.serving_module, run_info=run_info,
    onnx_refusal_signature="track_state"))  # tf2onnx fails on serving_default's value lookups
