"""A fine-tuned state tracker's SavedModel: `serving_default` takes ids `[batch, seq]` → per slot its value;
`track_state` takes each dialogue so far as one string (its turns in order, one a line, the last the user's) →
the dialogue state, packed in the graph as the tool packs its turns; beside the encoder's signatures."""

from typing import Optional

import tensorflow as tf

from albert_tf.serving.saved_model import IDS, AlbertServingModule, TextPacking
from albert_tf.serving.tracing import graph_function
from albert_tf.tasks.dialogue_state_tracking.data import NONE_VALUE, TURN_SEPARATOR
from albert_tf.tasks.dialogue_state_tracking.model import AlbertDialogueStateTracker
from albert_tf.text.graph_tokenizer import GraphTokenizer

_DIALOGUE = tf.TensorSpec([None], tf.string, name="dialogue")


def _joined_turns(turns: tf.RaggedTensor, starts, limits, step):
  """Per dialogue, its turns from `starts` towards `limits` (excluded) by `step`, joined by spaces."""
  positions = tf.ragged.range(starts, limits, step) + turns.row_starts()[:, tf.newaxis]
  return tf.strings.reduce_join(tf.gather(turns.flat_values, positions), axis=1, separator=" ")


def dialogue_segments(dialogue):
  """`data.turn_segments` of each dialogue string in the graph: the last two turns and the earlier ones, each
  newest first."""
  turns = tf.strings.split(dialogue, TURN_SEPARATOR)
  count = turns.row_lengths()
  current_start = tf.maximum(count - 2, 0)
  return (_joined_turns(turns, count - 1, current_start - 1, -1),
          _joined_turns(turns, current_start - 1, tf.fill(tf.shape(count), tf.constant(-1, count.dtype)), -1))


class AlbertDialogueStateTrackerServingModule(AlbertServingModule):
  """A fine-tuned `AlbertDialogueStateTracker` whose `serving_default` gives every slot's value and whose
  `track_state` gives the state of raw dialogues, plus the encoder's signatures.

  Args:
    model: a restored `AlbertDialogueStateTracker`.
    tokenizer, packing, asset_files: as for `AlbertServingModule`.
  """

  def __init__(self, model: AlbertDialogueStateTracker, tokenizer: GraphTokenizer, packing: TextPacking,
               asset_files: Optional[dict] = None):
    super().__init__(model, tokenizer, packing, asset_files=asset_files)
    self._untracked(state_tracker_head=model.state_tracker_head)
    width = max(len(values) for values in model.slot_values)
    self.slot_names = tf.constant(model.slot_names)
    self.value_names = tf.constant([list(values) + [""] * (width - len(values)) for values in model.slot_values])

  def _track(self, inputs):
    outputs = self.state_tracker_head(self.serve(**inputs)["sequence_output"], inputs["input_word_ids"],
                                      inputs["input_mask"], self.encoder.get_embedding_table(), training=False)
    value_ids, probabilities = self.state_tracker_head.decide(outputs)
    # value_names[s, value_ids[b, s]] of each row b.
    width = tf.shape(self.value_names)[1]
    values = tf.gather(tf.reshape(self.value_names, [-1]), tf.range(tf.shape(value_ids)[1]) * width + value_ids)
    return {"value_ids": value_ids, "values": values, "probabilities": probabilities}

  @graph_function(input_signature=[IDS, IDS, IDS])
  def track(self, input_word_ids, input_mask, input_type_ids):
    """Per slot (in `slot_names` order): `value_ids` (its value's position in the ontology's list), `values`
    and `probabilities`, `[batch, slots]`."""
    return self._track({"input_word_ids": input_word_ids, "input_mask": input_mask,
                        "input_type_ids": input_type_ids})

  @graph_function(input_signature=[_DIALOGUE])
  def track_state(self, dialogue):
    """The state after each dialogue's last turn: the per-slot outputs of `track`, and `state`, the
    "domain-slot-value" items of the slots not "none" (padded with "" to the batch's largest state),
    `num_state`. A dialogue longer than `max_seq_length` loses its oldest turns first, as in training."""
    current, history = dialogue_segments(dialogue)
    outputs = self._track(self._pack(current, history))
    items = tf.strings.join([tf.broadcast_to(self.slot_names, tf.shape(outputs["values"])), outputs["values"]],
                            separator="-")
    state = tf.ragged.boolean_mask(items, tf.not_equal(outputs["values"], NONE_VALUE))
    return dict(outputs, state=state.to_tensor(""), num_state=tf.cast(state.row_lengths(), tf.int32))

  def signatures(self):
    return dict(super().signatures(), serving_default=self.track.get_concrete_function(),
                track_state=self.track_state.get_concrete_function())


def serving_module(model: AlbertDialogueStateTracker, tokenizer: GraphTokenizer, packing: TextPacking,
                   asset_files: Optional[dict], task_options=None) -> AlbertDialogueStateTrackerServingModule:
  """`task_heads.TaskHead.serving_module`: the ontology travels in the model."""
  del task_options
  return AlbertDialogueStateTrackerServingModule(model, tokenizer, packing, asset_files)
