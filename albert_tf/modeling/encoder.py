"""`AlbertEncoder`: the factorized embedding, shared Transformer blocks routed by group, and the pooler."""

from typing import Any, Dict, Union

import tensorflow as tf
import tf_keras

from albert_tf.modeling.config import AlbertConfig
from albert_tf.modeling.layers.factorized_embedding import FactorizedEmbedding
from albert_tf.modeling.layers.transformer_block import AlbertTransformerBlock

LAYER_NORM_EPSILON = 1e-12


def as_config(config: Union[AlbertConfig, Dict[str, Any]]) -> AlbertConfig:
  return config if isinstance(config, AlbertConfig) else AlbertConfig.from_dict(config)


@tf_keras.utils.register_keras_serializable(package="albert_tf")
class AlbertEncoder(tf_keras.Model):
  """The ALBERT encoder (Google's `AlbertModel`, Hugging Face's `AlbertModel`).

  Parameters are shared across layers: there are `num_hidden_groups` groups of `inner_group_num` blocks,
  layer `l` uses group `int(l·G/L)` and applies every block of that group in turn. With the released
  configs (G = 1, inner = 1) all layers run one block.

  Inputs: a dict of int32 `[batch, seq]` tensors, `input_word_ids`, `input_mask` (1 for real tokens) and
  `input_type_ids` (the Model Garden / TF-Hub names).

  Outputs: a dict with `sequence_output` `[batch, seq, H]`, `pooled_output` `[batch, H]` (tanh dense on
  the first token) and `encoder_outputs`, one `[batch, seq, H]` tensor per layer.

  Args:
    config: an `AlbertConfig` or its dict.
    recompute_grad: while training, keep only each block application's input for the backward pass and
      recompute the block's activations there (`tf.recompute_grad`): the same gradients for less activation
      memory and about one more forward pass of compute. Dropout masks are then drawn from a seed per
      application, so that the recomputation draws the same ones.
  """

  def __init__(self, config: Union[AlbertConfig, Dict[str, Any]], recompute_grad: bool = False, **kwargs):
    kwargs.setdefault("name", "albert_encoder")
    super().__init__(**kwargs)
    self.config = as_config(config)
    self.recompute_grad = recompute_grad
    cfg = self.config
    initializer = lambda: tf_keras.initializers.TruncatedNormal(stddev=cfg.initializer_range)
    self.embeddings = FactorizedEmbedding(
        vocab_size=cfg.vocab_size, embedding_size=cfg.embedding_size, hidden_size=cfg.hidden_size,
        max_position_embeddings=cfg.max_position_embeddings, type_vocab_size=cfg.type_vocab_size,
        initializer_range=cfg.initializer_range, dropout_rate=cfg.hidden_dropout_prob,
        layer_norm_epsilon=LAYER_NORM_EPSILON, name="embeddings")
    self.groups = [[
        AlbertTransformerBlock(
            hidden_size=cfg.hidden_size, num_attention_heads=cfg.num_attention_heads,
            intermediate_size=cfg.intermediate_size, hidden_act=cfg.hidden_act,
            hidden_dropout_prob=cfg.hidden_dropout_prob,
            attention_probs_dropout_prob=cfg.attention_probs_dropout_prob,
            initializer_range=cfg.initializer_range, layer_norm_epsilon=LAYER_NORM_EPSILON,
            name=f"group_{group}_inner_{inner}")
        for inner in range(cfg.inner_group_num)] for group in range(cfg.num_hidden_groups)]
    self.pooler = tf_keras.layers.Dense(
        cfg.hidden_size, activation="tanh", kernel_initializer=initializer(), name="pooler")

  def call(self, inputs, training=None):
    input_word_ids = inputs["input_word_ids"]
    input_mask = inputs.get("input_mask")
    if input_mask is None:
      input_mask = tf.ones_like(input_word_ids)
    input_type_ids = inputs.get("input_type_ids")
    if input_type_ids is None:
      input_type_ids = tf.zeros_like(input_word_ids)

    hidden = self.embeddings(input_word_ids, input_type_ids, training=training)
    # Google's adder: padded keys get -10000 before the softmax.
    attention_mask_adder = (1.0 - tf.cast(input_mask[:, tf.newaxis, tf.newaxis, :], hidden.dtype)) * -10000.0

    encoder_outputs = []
    for layer_index in range(self.config.num_hidden_layers):
      for block in self.groups[self.config.group_of_layer(layer_index)]:
        if self.recompute_grad and training:
          hidden = self._recomputed_block(block, attention_mask_adder)(hidden)
        else:
          hidden = block(hidden, attention_mask_adder, training=training)
      encoder_outputs.append(hidden)

    pooled_output = self.pooler(hidden[:, 0])
    return {"sequence_output": hidden, "pooled_output": pooled_output, "encoder_outputs": encoder_outputs}

  def _recomputed_block(self, block, attention_mask_adder):
    """One training application of `block` as a function of its input, recomputed in the backward pass."""
    # Drawn once, outside the recomputed function: the forward pass and its recomputation share it.
    dropout_seed = self._dropout_seed()
    return tf.recompute_grad(
        lambda hidden: block(hidden, attention_mask_adder, training=True, dropout_seed=dropout_seed))

  @staticmethod
  def _dropout_seed():
    """A new seed for the dropout masks of one recomputed block application."""
    return tf.random.uniform([2], maxval=tf.int32.max, dtype=tf.int32)

  def dummy_inputs(self, batch_size=1, seq_length=2):
    """Inputs that build every variable (used before restoring a checkpoint)."""
    ids = tf.zeros([batch_size, seq_length], tf.int32)
    return {"input_word_ids": ids, "input_mask": tf.ones_like(ids), "input_type_ids": ids}

  def get_embedding_table(self):
    return self.embeddings.word_embeddings

  def get_config(self):
    return {"config": self.config.to_dict(), "recompute_grad": self.recompute_grad, "name": self.name}

  @classmethod
  def from_config(cls, config, custom_objects=None):
    return cls(**config)
