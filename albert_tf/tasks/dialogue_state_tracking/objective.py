"""WoS dialogue state tracking as an objective of `finetuning.FineTuning`: one example per user turn (the
dialogue so far, `data.turn_segments`); per slot the cross-entropy of its gate (TRADE's: "none", "dontcare", "yes",
"no" or another value) plus, where it holds another value, that of the value among its ontology's, averaged over
the slots; KLUE's joint goal accuracy (which picks model.ckpt-best) and slot F1 of the predicted states."""

import json
import os
from typing import Dict, List, Optional

import numpy as np
import tensorflow as tf

from albert_tf.data.finetuning_dataset import EncodedSplit, pack_texts
from albert_tf.data.task_readers import find_split_file
from albert_tf.errors import TaskError
from albert_tf.modeling.config import AlbertConfig
from albert_tf.tasks.dialogue_state_tracking import data, metrics
from albert_tf.tasks.dialogue_state_tracking.model import AlbertDialogueStateTracker
from albert_tf.text.tokenizer import SentencePieceTokenizer
from albert_tf.training.finetuning_objectives import FineTuningDefaults, safe_ratio

ONTOLOGY_FILE = "ontology.json"
PREDICTIONS = "state_predictions.json"
# KLUE's test labels are not public: the test split reads the dev file when there is no test file.
SPLIT_FILES = {"train": ("wos-v1.1_train.json",), "dev": ("wos-v1.1_dev.json",),
               "test": ("wos-v1.1_test.json", "wos-v1.1_dev.json")}
# A file as --data_dir would be read as the train and the dev split, the best checkpoint chosen on training turns.
DATA_DIR_HOLDS = f"wos-v1.1_train.json, wos-v1.1_dev.json and {ONTOLOGY_FILE}"


def predicted_state(ontology: data.Ontology, value_ids) -> List[str]:
  """The "domain-slot-value" items of one turn's predicted value ids, the slots predicted "none" left out."""
  return [f"{slot}-{values[index]}" for slot, values, index in zip(ontology.slots, ontology.values, value_ids)
          if values[index] != data.NONE_VALUE]


class DialogueStateTrackingObjective(FineTuningDefaults):
  """Fine-tuning a state tracker on WoS.

  Args:
    tokenizer: the Python tokenizer of the model (it tokenizes the ontology's values).
    ontology_file: the ontology; default `ontology.json` beside the dialogue files of --data_dir.
  """

  primary_metric = "joint_goal_accuracy"
  sum_names = ("loss", "right_slots", "right_turns", "turns", "slots")
  progress_groups = (("loss",), ("slot_accuracy", "joint_accuracy"))

  def __init__(self, tokenizer: SentencePieceTokenizer, ontology_file: Optional[str] = None):
    self.tokenizer = tokenizer
    self.ontology_file = ontology_file
    self.ontology: Optional[data.Ontology] = None
    self.ontology_source: Optional[str] = None  # the file the ontology was read from
    self.value_piece_ids: Optional[List[List[int]]] = None
    self.slot_piece_ids: Optional[List[List[int]]] = None

  def _word_pieces(self, text: str) -> List[int]:
    """The piece ids of `text` but the bare word-boundary piece, which every dialogue holds: a value is found
    in a dialogue by its other pieces."""
    boundary = self.tokenizer.sp_model.PieceToId("\u2581")
    return [piece for piece in self.tokenizer.encode(text) if piece != boundary]

  def _set_ontology(self, ontology: data.Ontology, ontology_file: Optional[str] = None):
    """The tracker's ontology, read from `ontology_file`, or (None) from the task.json of the run; refused when
    it differs from the one already set, naming the ontology file and the first slot or value that differs."""
    if self.ontology is not None and ontology != self.ontology:
      run_ontology, file_ontology = (self.ontology, ontology) if ontology_file else (ontology, self.ontology)
      raise TaskError(f"The ontology {ontology_file or self.ontology_source} differs from the one the run in "
                      f"--output_dir was trained with (its task.json): {run_ontology.first_difference(file_ontology)}."
                      " The head's classes would change: use the run's ontology, or a new --output_dir.")
    self.ontology = ontology
    self.ontology_source = ontology_file or self.ontology_source

  def _pieces(self):
    """The piece ids of the ontology's values and of its slot names ("숙소-주차 가능" read as "숙소 주차 가능"):
    those the run's task.json records, else the tokenizer's (once a run, not at every read of the ontology)."""
    ontology = self._require_ontology()
    if self.value_piece_ids is None:
      self.value_piece_ids = [self._word_pieces(value) for values in ontology.values for value in values]
      self.slot_piece_ids = [self._word_pieces(slot.replace("-", " ")) for slot in ontology.slots]
    return self.value_piece_ids, self.slot_piece_ids

  def run_info(self) -> Dict:
    value_piece_ids, slot_piece_ids = self._pieces() if self.ontology is not None else (None, None)
    return {"task": data.TASK_NAME, "ontology": self.ontology and self.ontology.as_dict(),
            "value_piece_ids": value_piece_ids, "slot_piece_ids": slot_piece_ids}

  def adopt_run_info(self, info: Dict, output_dir: str):
    if info.get("task") != data.TASK_NAME or not isinstance(info.get("ontology"), dict):
      raise TaskError(f"--output_dir {output_dir} holds a run of task {info.get('task')!r}, not "
                      f"{data.TASK_NAME!r}.")
    self._set_ontology(data.Ontology.from_dict(info["ontology"]))
    values, slots = info.get("value_piece_ids"), info.get("slot_piece_ids")
    # The pieces the run's head was built with (a run of another tokenizer would be another run).
    if (isinstance(values, list) and isinstance(slots, list) and len(slots) == len(self.ontology.slots)
        and len(values) == sum(len(names) for names in self.ontology.values)):
      self.value_piece_ids, self.slot_piece_ids = values, slots

  def read_examples(self, data_dir: str, split: str) -> List[data.TurnExample]:
    path = find_split_file(data_dir, split, SPLIT_FILES[split], data.TASK_NAME, DATA_DIR_HOLDS)
    ontology_file = self.ontology_file or os.path.join(os.path.dirname(path), ONTOLOGY_FILE)
    self._set_ontology(data.read_ontology(ontology_file), ontology_file)
    return data.read_dialogues(path, self.ontology)

  def _require_ontology(self) -> data.Ontology:
    if self.ontology is None:
      raise TaskError("The tracker's ontology is unknown: it is read with the dialogues, or from the task.json "
                      "of --output_dir.")
    return self.ontology

  def encode(self, examples: List[data.TurnExample], tokenizer, max_seq_length: int,
             description: str) -> EncodedSplit:
    """`[CLS] the last two turns [SEP] the earlier turns [SEP]`, newest first, cut from the end of the longer segment;
    labels int32 `[turns, slots]`, each slot's value id."""
    ontology = self._require_ontology()
    value_ids = ontology.value_ids()
    segments = [data.turn_segments(example.turns) for example in examples]
    packed = pack_texts(tokenizer, [current for current, _ in segments], [history for _, history in segments],
                        max_seq_length, description)
    labels = np.array([data.state_label_ids(example, ontology, value_ids) for example in examples], np.int32)
    return EncodedSplit({"inputs": packed}, labels.reshape([len(examples), len(ontology.slots)]),
                        [example.guid for example in examples], max_seq_length, examples)

  def build_model(self, config: AlbertConfig, dropout_prob: float,
                  recompute_grad: bool = False) -> AlbertDialogueStateTracker:
    ontology = self._require_ontology()
    value_piece_ids, slot_piece_ids = self._pieces()
    return AlbertDialogueStateTracker(config, ontology.slots, ontology.values, value_piece_ids, slot_piece_ids,
                                      dropout_prob, recompute_grad)

  def replica_loss(self, model):
    """(batch, global turns) -> (this batch's share of the mean over turns of the per-slot loss, sums). A turn's
    loss: per slot, the gate's cross-entropy, plus the value's where the gold value is not a special one, averaged
    over the slots."""
    head = model.state_tracker_head

    def loss_and_sums(batch, normalizers):
      outputs = model(batch["inputs"], training=True)
      labels = batch["labels"]
      gate_loss, value_loss = head.losses(outputs, labels)
      predicted, _ = head.decide(outputs)
      right = tf.cast(tf.equal(predicted, labels), tf.float32)
      sums = tf.stack([tf.reduce_sum(tf.reduce_mean(gate_loss + value_loss, axis=1)), tf.reduce_sum(right),
                       tf.reduce_sum(tf.reduce_min(right, axis=1)), tf.cast(tf.shape(labels)[0], tf.float32),
                       tf.cast(tf.size(labels), tf.float32)])
      return sums[0] / tf.maximum(normalizers[0], 1.0), sums

    return loss_and_sums

  def metrics_from_sums(self, sums) -> Dict[str, float]:
    """Per turn: the loss, the share of right slots and of turns with every slot right."""
    values = dict(zip(self.sum_names, np.asarray(sums, np.float64)))
    return {"loss": safe_ratio(values["loss"], values["turns"]),
            "slot_accuracy": safe_ratio(values["right_slots"], values["slots"]),
            "joint_accuracy": safe_ratio(values["right_turns"], values["turns"])}

  def predict(self, model, batch) -> tf.Tensor:
    """Each slot's predicted value id, int32 `[batch, slots]`."""
    return model.state_tracker_head.decide(model(batch["inputs"], training=False))[0]

  def _states(self, outputs: np.ndarray) -> List[List[str]]:
    ontology = self._require_ontology()
    return [predicted_state(ontology, row) for row in outputs]

  def evaluation_metrics(self, outputs: np.ndarray, split: EncodedSplit) -> Dict[str, float]:
    """KLUE's `joint_goal_accuracy` and `slot_f1` (fractions; KLUE publishes them ×100) over the user turns."""
    scores = metrics.state_tracking_scores(self._states(outputs), [example.state for example in split.source])
    return dict(scores, turns=float(len(split.source)))

  def prediction_files(self, outputs: np.ndarray, split: EncodedSplit, output_dir: str) -> Dict[str, str]:
    """`state_predictions.json`: a JSON array, a user turn a line, with its guid ("<dialogue guid>-<k>"), the
    predicted state and the file's."""
    del output_dir
    records = [{"guid": example.guid, "dialogue": example.dialogue_guid, "state": state,
                "gold_state": list(example.state)}
               for example, state in zip(split.source, self._states(outputs))]
    return {PREDICTIONS: "[\n" + ",\n".join(json.dumps(record, ensure_ascii=False) for record in records) + "\n]\n"}
