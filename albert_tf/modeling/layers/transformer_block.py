"""One ALBERT Transformer block: the unit whose parameters the encoder shares across layers."""

import math

import tensorflow as tf
import tf_keras

from albert_tf.modeling.layers.activations import get_activation


@tf_keras.utils.register_keras_serializable(package="albert_tf")
class AlbertTransformerBlock(tf_keras.layers.Layer):
  """Post-LN self-attention followed by a feed-forward layer (Google's `attention_ffn_block`).

  The encoder creates one such block per (group, inner group) and calls the same object in every layer
  routed to that group: that reuse is ALBERT's cross-layer parameter sharing.

  Query, key, value and output kernels are stored 2-D, [H, H], as in Google's checkpoints; heads are
  split by reshaping inside `call`.

  Args:
    hidden_size: H.
    num_attention_heads: N; H must be divisible by N.
    intermediate_size: width of the feed-forward layer.
    hidden_act: activation name of the feed-forward layer (see `albert_tf.modeling.layers.activations`).
    hidden_dropout_prob: dropout on the attention and feed-forward outputs.
    attention_probs_dropout_prob: dropout on the attention probabilities.
    initializer_range: stddev of the truncated-normal kernel initializer.
    layer_norm_epsilon: LayerNorm epsilon (1e-12 in Google's code).
  """

  def __init__(self, hidden_size, num_attention_heads, intermediate_size, hidden_act="gelu",
               hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, initializer_range=0.02,
               layer_norm_epsilon=1e-12, **kwargs):
    super().__init__(**kwargs)
    if hidden_size % num_attention_heads:
      raise ValueError(f"hidden_size {hidden_size} is not divisible by num_attention_heads "
                       f"{num_attention_heads}.")
    self.hidden_size = hidden_size
    self.num_attention_heads = num_attention_heads
    self.intermediate_size = intermediate_size
    self.hidden_act = hidden_act
    self.hidden_dropout_prob = hidden_dropout_prob
    self.attention_probs_dropout_prob = attention_probs_dropout_prob
    self.initializer_range = initializer_range
    self.layer_norm_epsilon = layer_norm_epsilon
    self.head_size = hidden_size // num_attention_heads

    def dense(units, name, activation=None):
      return tf_keras.layers.Dense(
          units, activation=activation, name=name,
          kernel_initializer=tf_keras.initializers.TruncatedNormal(stddev=initializer_range))

    def layer_norm(name):
      return tf_keras.layers.LayerNormalization(epsilon=layer_norm_epsilon, dtype=tf.float32, name=name)

    self.query = dense(hidden_size, "query")
    self.key = dense(hidden_size, "key")
    self.value = dense(hidden_size, "value")
    self.attention_output = dense(hidden_size, "attention_output")
    self.attention_layer_norm = layer_norm("attention_layer_norm")
    self.intermediate = dense(intermediate_size, "intermediate", activation=get_activation(hidden_act))
    self.ffn_output = dense(hidden_size, "ffn_output")
    self.output_layer_norm = layer_norm("output_layer_norm")
    self.attention_dropout = tf_keras.layers.Dropout(attention_probs_dropout_prob)
    self.hidden_dropout = tf_keras.layers.Dropout(hidden_dropout_prob)

  def _split_heads(self, x, batch_size):
    """[batch, seq, H] -> [batch, heads, seq, head_size]."""
    x = tf.reshape(x, [batch_size, -1, self.num_attention_heads, self.head_size])
    return tf.transpose(x, [0, 2, 1, 3])

  def _dropout(self, layer, x, training, dropout_seed, site: int):
    """`layer`'s dropout; with a `dropout_seed`, the same rate drawn statelessly from (seed, site), so that a
    recomputation draws the same mask as the forward pass did."""
    if dropout_seed is None:
      return layer(x, training=training)
    if not training or not layer.rate:
      return x
    return tf.nn.experimental.stateless_dropout(x, layer.rate, seed=dropout_seed + tf.constant([0, site]))

  def call(self, hidden_states, attention_mask_adder, training=None, dropout_seed=None):
    """Applies the block.

    Args:
      hidden_states: `[batch, seq, H]`.
      attention_mask_adder: `[batch, 1, 1, seq]`, 0 for real keys and -10000 for padding (Google's adder).
      training: enables dropout.
      dropout_seed: int32 `[2]`: draw the dropout masks from this seed (stateless), as activation
        recomputation needs; None uses the dropout layers' own random state.

    Returns:
      `[batch, seq, H]`.
    """
    batch_size = tf.shape(hidden_states)[0]
    query = self._split_heads(self.query(hidden_states), batch_size)
    key = self._split_heads(self.key(hidden_states), batch_size)
    value = self._split_heads(self.value(hidden_states), batch_size)

    scores = tf.matmul(query, key, transpose_b=True) * (1.0 / math.sqrt(self.head_size))
    # Softmax in float32 so that float16/bfloat16 training keeps the -10000 padding adder exact.
    scores = tf.cast(scores, tf.float32) + tf.cast(attention_mask_adder, tf.float32)
    probs = tf.cast(tf.nn.softmax(scores, axis=-1), self.compute_dtype)
    probs = self._dropout(self.attention_dropout, probs, training, dropout_seed, site=0)
    context = tf.transpose(tf.matmul(probs, value), [0, 2, 1, 3])
    context = tf.reshape(context, [batch_size, -1, self.hidden_size])

    attention = self._dropout(self.hidden_dropout, self.attention_output(context), training, dropout_seed, site=1)
    attention = tf.cast(self.attention_layer_norm(attention + hidden_states), self.compute_dtype)

    ffn = self.ffn_output(self.intermediate(attention))
    ffn = self._dropout(self.hidden_dropout, ffn, training, dropout_seed, site=2)
    return tf.cast(self.output_layer_norm(ffn + attention), self.compute_dtype)

  def get_config(self):
    config = super().get_config()
    config.update({
        "hidden_size": self.hidden_size,
        "num_attention_heads": self.num_attention_heads,
        "intermediate_size": self.intermediate_size,
        "hidden_act": self.hidden_act,
        "hidden_dropout_prob": self.hidden_dropout_prob,
        "attention_probs_dropout_prob": self.attention_probs_dropout_prob,
        "initializer_range": self.initializer_range,
        "layer_norm_epsilon": self.layer_norm_epsilon,
    })
    return config
