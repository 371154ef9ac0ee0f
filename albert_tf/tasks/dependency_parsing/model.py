"""`AlbertDependencyParser`: the encoder with Dozat and Manning's biaffine parser on the vectors of each
word's first and last pieces and the embeddings of its first and last morpheme tags (KLUE-DP's baseline
parser)."""

from typing import Any, Dict, Sequence, Union

import tensorflow as tf
import tf_keras

from albert_tf.modeling.config import AlbertConfig
from albert_tf.modeling.encoder import AlbertEncoder, as_config
from albert_tf.tasks.dependency_parsing.layers import DependencyParserHead

ENCODER_INPUTS = ("input_word_ids", "input_mask", "input_type_ids")
WORD_INPUTS = ("first_piece_index", "last_piece_index", "word_mask", "pos_ids")


@tf_keras.utils.register_keras_serializable(package="albert_tf")
class AlbertDependencyParser(tf_keras.Model):
  """ALBERT as a dependency parser.

  Inputs: the encoder's dict (`[batch, seq]`) plus the word inputs of `DependencyParserHead` for a fixed
  number of words W: `first_piece_index`, `last_piece_index`, `word_mask` `[batch, W]`, `pos_ids`
  `[batch, W, 2]`, and optionally `heads` `[batch, W]` (training's gold heads).

  Outputs: `arc_scores`, float32 `[batch, W + 1, W + 1]` (row = dependent, column = head, position 0 the
  root; padded heads and the word itself masked), and `label_scores`, float32 `[batch, W + 1, labels]` at the
  given heads, or `[batch, W + 1, W + 1, labels]` at every head without them.

  Args:
    config: an `AlbertConfig` or its dict.
    label_names: the relations in id order.
    pos_vocab_size: the number of tag ids (padding and the unknown tag included).
    pos_embedding_size: the size of a tag's embedding.
    arc_units: the arc scorer's MLP size.
    label_units: the relation scorer's MLP size.
    dropout_rate: dropout in the head while training.
    recompute_grad: recompute the encoder's block activations in the backward pass (see `AlbertEncoder`).
  """

  def __init__(self, config: Union[AlbertConfig, Dict[str, Any]], label_names: Sequence[str],
               pos_vocab_size: int, pos_embedding_size: int = 64, arc_units: int = 512,
               label_units: int = 128, dropout_rate: float = 0.1, recompute_grad: bool = False, **kwargs):
    kwargs.setdefault("name", "albert_dependency_parser")
    super().__init__(**kwargs)
    self.config = as_config(config)
    self.label_names = tuple(str(label) for label in label_names)
    if not self.label_names or len(set(self.label_names)) < len(self.label_names):
      raise ValueError(f"A dependency parser needs distinct relations, not {list(label_names)}.")
    self.pos_vocab_size = pos_vocab_size
    self.pos_embedding_size = pos_embedding_size
    self.arc_units = arc_units
    self.label_units = label_units
    self.dropout_rate = dropout_rate
    self.encoder = AlbertEncoder(self.config, recompute_grad=recompute_grad, name="encoder")
    self.encoder.pooler.trainable = False  # the parser reads the piece vectors only
    self.dependency_parser_head = DependencyParserHead(
        len(self.label_names), pos_vocab_size, pos_embedding_size, arc_units, label_units, dropout_rate,
        self.config.initializer_range, name="dependency_parser")

  def call(self, inputs, training=None):
    encoder_inputs = {name: inputs[name] for name in ENCODER_INPUTS if name in inputs}
    sequence_output = self.encoder(encoder_inputs, training=training)["sequence_output"]
    words = {name: inputs[name] for name in WORD_INPUTS + ("heads",) if name in inputs}
    return self.dependency_parser_head(sequence_output, words, training=training)

  def dummy_inputs(self, batch_size=1, seq_length=2, num_words=1):
    """Inputs that build every variable (used before restoring a checkpoint)."""
    inputs = self.encoder.dummy_inputs(batch_size, seq_length)
    positions = tf.zeros([batch_size, num_words], tf.int32)
    return dict(inputs, first_piece_index=positions, last_piece_index=positions,
                word_mask=tf.ones_like(positions), pos_ids=tf.zeros([batch_size, num_words, 2], tf.int32))

  def get_config(self):
    return {"config": self.config.to_dict(), "label_names": self.label_names,
            "pos_vocab_size": self.pos_vocab_size, "pos_embedding_size": self.pos_embedding_size,
            "arc_units": self.arc_units, "label_units": self.label_units, "dropout_rate": self.dropout_rate,
            "recompute_grad": self.encoder.recompute_grad, "name": self.name}

  @classmethod
  def from_config(cls, config, custom_objects=None):
    return cls(**config)
