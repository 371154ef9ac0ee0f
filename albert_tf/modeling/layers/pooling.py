"""Sentence embeddings from token vectors, as Sentence-BERT makes them: pool the tokens, optionally project, normalise.

`TokenPooling` is sentence-transformers' `Pooling` module (mean, `[CLS]` or max over real tokens);
`SentenceEmbeddingHead` adds its `Dense` (tanh) and `Normalize` modules, so an exported folder runs the same
function in PyTorch.
"""

from typing import Optional

import tensorflow as tf
import tf_keras

POOLING_MODES = ("mean", "cls", "max")


@tf_keras.utils.register_keras_serializable(package="albert_tf")
class TokenPooling(tf_keras.layers.Layer):
  """One vector per sequence from the token vectors where `input_mask` is 1 (`[CLS]` and `[SEP]` included).

  - `mean`: the mean of the real tokens' vectors.
  - `cls`: the vector of the first token, `[CLS]` (the encoder's output, not its tanh pooler).
  - `max`: the element-wise maximum over real tokens.

  Padding never counts, so a sentence gets the same vector whatever it is padded to.

  Args:
    mode: one of `POOLING_MODES`.
  """

  def __init__(self, mode: str = "mean", **kwargs):
    super().__init__(**kwargs)
    if mode not in POOLING_MODES:
      raise ValueError(f"Pooling mode {mode!r} is not one of {', '.join(POOLING_MODES)}.")
    self.mode = mode

  def call(self, sequence_output, input_mask):
    """Returns float32 `[batch, H]` from `sequence_output` `[batch, seq, H]` and `input_mask` `[batch, seq]`."""
    sequence_output = tf.cast(sequence_output, tf.float32)
    if self.mode == "cls":
      return sequence_output[:, 0]
    is_real = tf.cast(input_mask, tf.bool)[:, :, tf.newaxis]
    if self.mode == "max":
      # sentence-transformers' fill value for padding: a sequence of padding alone still gets finite values.
      return tf.reduce_max(tf.where(is_real, sequence_output, -1e9), axis=1)
    weights = tf.cast(is_real, tf.float32)
    summed = tf.reduce_sum(sequence_output * weights, axis=1)
    return summed / tf.maximum(tf.reduce_sum(weights, axis=1), 1.0)

  def get_config(self):
    return dict(super().get_config(), mode=self.mode)


@tf_keras.utils.register_keras_serializable(package="albert_tf")
class SentenceEmbeddingHead(tf_keras.layers.Layer):
  """Pooling, an optional `Dense` + tanh projection, then L2 normalisation: unit vectors whose dot product is
  their cosine similarity.

  The projection changes the embedding size (e.g. to a distillation teacher's) and holds the head's only
  weights; without it the head adds no variable to the encoder.

  Args:
    pooling: one of `POOLING_MODES`.
    projection_dim: the size of the projected embedding; None for no projection (the embedding is H wide).
    initializer_range: the stddev of the projection's truncated-normal initialisation.
  """

  def __init__(self, pooling: str = "mean", projection_dim: Optional[int] = None, initializer_range: float = 0.02,
               **kwargs):
    super().__init__(**kwargs)
    if projection_dim is not None and projection_dim <= 0:
      raise ValueError(f"projection_dim must be positive, not {projection_dim}.")
    self.pooling = TokenPooling(pooling, name="pooling")
    self.projection_dim = projection_dim
    self.initializer_range = initializer_range
    self.projection = None
    if projection_dim is not None:
      self.projection = tf_keras.layers.Dense(
          projection_dim, activation="tanh", name="projection", dtype=tf.float32,
          kernel_initializer=tf_keras.initializers.TruncatedNormal(stddev=initializer_range))

  def call(self, sequence_output, input_mask):
    """Returns the unit-length float32 embedding `[batch, projection_dim or H]`."""
    pooled = self.pooling(sequence_output, input_mask)
    if self.projection is not None:
      pooled = self.projection(pooled)
    return tf.math.l2_normalize(pooled, axis=-1)

  def get_config(self):
    return dict(super().get_config(), pooling=self.pooling.mode, projection_dim=self.projection_dim,
                initializer_range=self.initializer_range)
