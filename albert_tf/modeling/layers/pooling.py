"""Mean pooling: a sentence embedding from the token vectors, as Sentence-BERT pools them."""

import tensorflow as tf
import tf_keras


@tf_keras.utils.register_keras_serializable(package="albert_tf")
class MeanPooling(tf_keras.layers.Layer):
  """The mean of the token vectors where `input_mask` is 1 (`[CLS]` and `[SEP]` included), optionally L2-normalised.

  Padding never counts, so a sentence gets the same embedding whatever it is padded to.

  Args:
    l2_normalize: scale each embedding to unit length, so that a dot product is the cosine similarity.
  """

  def __init__(self, l2_normalize=True, **kwargs):
    super().__init__(**kwargs)
    self.l2_normalize = l2_normalize

  def call(self, sequence_output, input_mask):
    """Returns float32 `[batch, H]` from `sequence_output` `[batch, seq, H]` and `input_mask` `[batch, seq]`."""
    weights = tf.cast(input_mask, tf.float32)[:, :, tf.newaxis]
    summed = tf.reduce_sum(tf.cast(sequence_output, tf.float32) * weights, axis=1)
    mean = summed / tf.maximum(tf.reduce_sum(weights, axis=1), 1.0)
    return tf.math.l2_normalize(mean, axis=-1) if self.l2_normalize else mean

  def get_config(self):
    config = super().get_config()
    config["l2_normalize"] = self.l2_normalize
    return config
