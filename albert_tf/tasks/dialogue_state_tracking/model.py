"""`AlbertDialogueStateTracker`: the encoder with a `SlotValueHead` that decides, per slot, TRADE's gate among
WoS's special values ("none", "dontcare", "yes", "no") and "another value", and that value among the
ontology's."""

from typing import Any, Dict, Sequence, Union

import tf_keras

from albert_tf.modeling.config import AlbertConfig
from albert_tf.modeling.encoder import AlbertEncoder, as_config
from albert_tf.tasks.dialogue_state_tracking.layers import SlotValueHead

# The values a slot's gate decides (those of them its ontology lists); its other values are the candidates.
GATE_VALUES = ("none", "dontcare", "yes", "no")


def padded(rows: Sequence[Sequence[int]]):
  """Rows of ids, -1 padded to the longest (at least 1)."""
  width = max(1, max(len(row) for row in rows))
  return [list(row) + [-1] * (width - len(row)) for row in rows]


def gate_positions(slot_values: Sequence[Sequence[str]]):
  """Per slot, the position among its values of each of `GATE_VALUES`, -1 where it lacks it."""
  return [[list(values).index(value) if value in values else -1 for value in GATE_VALUES]
          for values in slot_values]


@tf_keras.utils.register_keras_serializable(package="albert_tf")
class AlbertDialogueStateTracker(tf_keras.Model):
  """ALBERT as a dialogue state tracker.

  Inputs: the encoder's dict (`[batch, seq]`). Outputs: `gate_logits`, float32 `[batch, slots, 5]` (each slot's
  "none", "dontcare", "yes", "no" and "another value"), and `value_logits`, float32 `[batch, slots, max
  candidates]` (each of its other values); `state_tracker_head.decide` gives each slot's value.

  Args:
    config: an `AlbertConfig` or its dict.
    slot_names: the slots ("domain-slot") in the head's order.
    slot_values: per slot, its values (a value's position is its class id).
    value_piece_ids: per value of every slot, in slot order, its SentencePiece ids.
    slot_piece_ids: per slot, the SentencePiece ids of its name (domain and slot, as words).
    dropout_rate: dropout on the slot vectors while training.
    recompute_grad: recompute the encoder's block activations in the backward pass (see `AlbertEncoder`).
  """

  def __init__(self, config: Union[AlbertConfig, Dict[str, Any]], slot_names: Sequence[str],
               slot_values: Sequence[Sequence[str]], value_piece_ids: Sequence[Sequence[int]],
               slot_piece_ids: Sequence[Sequence[int]], dropout_rate: float = 0.1, recompute_grad: bool = False,
               **kwargs):
    kwargs.setdefault("name", "albert_dialogue_state_tracker")
    super().__init__(**kwargs)
    self.config = as_config(config)
    self.slot_names = tuple(str(slot) for slot in slot_names)
    self.slot_values = tuple(tuple(str(value) for value in values) for values in slot_values)
    self.value_piece_ids = tuple(tuple(int(piece) for piece in pieces) for pieces in value_piece_ids)
    self.slot_piece_ids = tuple(tuple(int(piece) for piece in pieces) for pieces in slot_piece_ids)
    if (not self.slot_names or len(self.slot_names) != len(self.slot_values) or not all(self.slot_values)
        or len(self.slot_piece_ids) != len(self.slot_names)):
      raise ValueError(f"A state tracker needs slots, each with values; got {len(self.slot_names)} slots and "
                       f"{len(self.slot_values)} value lists.")
    if sum(len(values) for values in self.slot_values) != len(self.value_piece_ids):
      raise ValueError(f"{len(self.value_piece_ids)} piece lists for "
                       f"{sum(len(values) for values in self.slot_values)} values.")
    self.dropout_rate = dropout_rate
    self.encoder = AlbertEncoder(self.config, recompute_grad=recompute_grad, name="encoder")
    self.encoder.pooler.trainable = False  # the slots attend over the token vectors only
    self.state_tracker_head = SlotValueHead(
        padded(self.value_piece_ids), padded(self.slot_piece_ids), [len(values) for values in self.slot_values],
        gate_positions(self.slot_values), self.config.vocab_size, self.config.hidden_size, dropout_rate,
        self.config.initializer_range, name="state_tracker")

  def call(self, inputs, training=None):
    sequence_output = self.encoder(inputs, training=training)["sequence_output"]
    return self.state_tracker_head(sequence_output, inputs["input_word_ids"], inputs["input_mask"],
                                   self.encoder.get_embedding_table(), training=training)

  def dummy_inputs(self, batch_size=1, seq_length=2):
    """Inputs that build every variable (used before restoring a checkpoint)."""
    return self.encoder.dummy_inputs(batch_size, seq_length)

  def ontology(self) -> Dict[str, list]:
    """"domain-slot" -> its values, as the ontology file maps them."""
    return {slot: list(values) for slot, values in zip(self.slot_names, self.slot_values)}

  def get_config(self):
    return {"config": self.config.to_dict(), "slot_names": self.slot_names, "slot_values": self.slot_values,
            "value_piece_ids": self.value_piece_ids, "slot_piece_ids": self.slot_piece_ids,
            "dropout_rate": self.dropout_rate,
            "recompute_grad": self.encoder.recompute_grad, "name": self.name}

  @classmethod
  def from_config(cls, config, custom_objects=None):
    return cls(**config)
