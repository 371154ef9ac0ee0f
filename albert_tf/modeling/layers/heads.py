"""The paper's heads: masked LM (tied to the word embeddings) and sentence order prediction, and the
classification layer that the sentence-order head is (Google's `output_weights` `[classes, H]`), which the task
heads of classification and multiple choice reuse. Each task's own heads live in its package (`albert_tf.tasks`)."""

import tensorflow as tf
import tf_keras

from albert_tf.modeling.layers.activations import get_activation


@tf_keras.utils.register_keras_serializable(package="albert_tf")
class MaskedLMHead(tf_keras.layers.Layer):
  """Google's `cls/predictions`: dense H→E, activation, LayerNorm, then logits through the word table.

  The output layer is the transposed word-embedding matrix (passed to `call`, not owned here) plus a bias
  of size V. Logits are computed only at the masked positions, which keeps the [batch, P, V] tensor small.

  Args:
    vocab_size: V.
    embedding_size: E, the width of the word table.
    hidden_act: activation name of the transform.
    initializer_range: stddev of the truncated-normal kernel initializer.
    layer_norm_epsilon: LayerNorm epsilon.
  """

  def __init__(self, vocab_size, embedding_size, hidden_act="gelu", initializer_range=0.02,
               layer_norm_epsilon=1e-12, **kwargs):
    super().__init__(**kwargs)
    self.vocab_size = vocab_size
    self.embedding_size = embedding_size
    self.hidden_act = hidden_act
    self.initializer_range = initializer_range
    self.layer_norm_epsilon = layer_norm_epsilon
    self.dense = tf_keras.layers.Dense(
        embedding_size, activation=get_activation(hidden_act), name="dense",
        kernel_initializer=tf_keras.initializers.TruncatedNormal(stddev=initializer_range))
    self.layer_norm = tf_keras.layers.LayerNormalization(
        epsilon=layer_norm_epsilon, dtype=tf.float32, name="LayerNorm")

  def build(self, input_shape):
    self.output_bias = self.add_weight("output_bias", shape=[self.vocab_size], initializer="zeros")
    super().build(input_shape)

  def call(self, sequence_output, masked_lm_positions, embedding_table):
    """Returns float32 logits `[batch, num_positions, V]` at `masked_lm_positions` `[batch, P]`."""
    selected = tf.gather(sequence_output, masked_lm_positions, batch_dims=1)
    transformed = tf.cast(self.layer_norm(self.dense(selected)), self.compute_dtype)
    logits = tf.matmul(transformed, tf.cast(embedding_table, self.compute_dtype), transpose_b=True)
    return tf.cast(logits, tf.float32) + tf.cast(self.output_bias, tf.float32)

  def get_config(self):
    config = super().get_config()
    config.update({
        "vocab_size": self.vocab_size,
        "embedding_size": self.embedding_size,
        "hidden_act": self.hidden_act,
        "initializer_range": self.initializer_range,
        "layer_norm_epsilon": self.layer_norm_epsilon,
    })
    return config


@tf_keras.utils.register_keras_serializable(package="albert_tf")
class ClassificationHead(tf_keras.layers.Layer):
  """One linear layer on the pooled output, after dropout: Google's fine-tuning head.

  The weight is stored as [num_classes, H] and applied transposed, Google's layout (`output_weights`,
  `output_bias`) and Hugging Face's (`classifier.weight`), so conversion copies it without a transpose.

  Args:
    hidden_size: H.
    num_classes: outputs; 1 for a regression.
    dropout_rate: dropout on the pooled output while training (Google's `run_classifier`: 0.1).
    initializer_range: stddev of the truncated-normal initializer.
  """

  def __init__(self, hidden_size, num_classes, dropout_rate=0.0, initializer_range=0.02, **kwargs):
    super().__init__(**kwargs)
    self.hidden_size = hidden_size
    self.num_classes = num_classes
    self.dropout_rate = dropout_rate
    self.initializer_range = initializer_range
    # No layer without dropout: the pretraining head's checkpoints hold just the two weights.
    self.dropout = tf_keras.layers.Dropout(dropout_rate) if dropout_rate else None

  def build(self, input_shape):
    self.output_weights = self.add_weight(
        "output_weights", shape=[self.num_classes, self.hidden_size],
        initializer=tf_keras.initializers.TruncatedNormal(stddev=self.initializer_range))
    self.output_bias = self.add_weight("output_bias", shape=[self.num_classes], initializer="zeros")
    super().build(input_shape)

  def call(self, pooled_output, training=None):
    """Returns float32 logits `[batch, num_classes]`."""
    if self.dropout is not None:
      pooled_output = self.dropout(pooled_output, training=training)
    logits = tf.matmul(pooled_output, self.output_weights, transpose_b=True) + self.output_bias
    return tf.cast(logits, tf.float32)

  def get_config(self):
    config = super().get_config()
    config.update({
        "hidden_size": self.hidden_size,
        "num_classes": self.num_classes,
        "dropout_rate": self.dropout_rate,
        "initializer_range": self.initializer_range,
    })
    return config


@tf_keras.utils.register_keras_serializable(package="albert_tf")
class SentenceOrderHead(ClassificationHead):
  """Google's `cls/seq_relationship`: the classification head with 2 classes and no dropout.

  Class 0: the segments in order; 1: swapped (or, for one-segment chunks, B from another document).
  """

  def __init__(self, hidden_size, num_classes=2, initializer_range=0.02, **kwargs):
    kwargs.pop("dropout_rate", None)  # always 0, as Google's pretraining head
    super().__init__(hidden_size, num_classes, dropout_rate=0.0, initializer_range=initializer_range, **kwargs)
