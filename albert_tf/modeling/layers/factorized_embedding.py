"""ALBERT's factorized embedding: V×E tables, LayerNorm at width E, then one E→H projection."""

import tensorflow as tf
import tf_keras


@tf_keras.utils.register_keras_serializable(package="albert_tf")
class FactorizedEmbedding(tf_keras.layers.Layer):
  """Word, position and token-type embeddings at width E, projected to the hidden width H.

  This is the first idea of the paper: the vocabulary costs V·E + E·H parameters instead of V·H. As in
  Google's `embedding_postprocessor`, the three embeddings are summed, normalised and dropped out at width E,
  and only then projected; when E == H no projection is created (Google's checkpoints have none).

  Args:
    vocab_size: V, rows of the word table (tied to the MLM output layer).
    embedding_size: E.
    hidden_size: H, the width of the Transformer the output feeds.
    max_position_embeddings: rows of the position table; inputs may be shorter.
    type_vocab_size: rows of the token-type (segment) table.
    initializer_range: stddev of the truncated-normal initializer.
    dropout_rate: dropout after the LayerNorm.
    layer_norm_epsilon: LayerNorm epsilon (1e-12 in Google's code).
  """

  def __init__(self, vocab_size, embedding_size, hidden_size, max_position_embeddings=512,
               type_vocab_size=2, initializer_range=0.02, dropout_rate=0.0, layer_norm_epsilon=1e-12,
               **kwargs):
    super().__init__(**kwargs)
    self.vocab_size = vocab_size
    self.embedding_size = embedding_size
    self.hidden_size = hidden_size
    self.max_position_embeddings = max_position_embeddings
    self.type_vocab_size = type_vocab_size
    self.initializer_range = initializer_range
    self.dropout_rate = dropout_rate
    self.layer_norm_epsilon = layer_norm_epsilon
    self.layer_norm = tf_keras.layers.LayerNormalization(
        epsilon=layer_norm_epsilon, dtype=tf.float32, name="LayerNorm")
    self.dropout = tf_keras.layers.Dropout(dropout_rate)
    self.projection = None
    if embedding_size != hidden_size:
      self.projection = tf_keras.layers.Dense(
          hidden_size, kernel_initializer=self._initializer(), name="embedding_hidden_mapping_in")

  def _initializer(self):
    return tf_keras.initializers.TruncatedNormal(stddev=self.initializer_range)

  def build(self, input_shape):
    self.word_embeddings = self.add_weight(
        "word_embeddings", shape=[self.vocab_size, self.embedding_size], initializer=self._initializer())
    self.position_embeddings = self.add_weight(
        "position_embeddings", shape=[self.max_position_embeddings, self.embedding_size],
        initializer=self._initializer())
    self.token_type_embeddings = self.add_weight(
        "token_type_embeddings", shape=[self.type_vocab_size, self.embedding_size],
        initializer=self._initializer())
    super().build(input_shape)

  def call(self, input_word_ids, input_type_ids, training=None):
    """Maps int ids `[batch, seq]` to hidden states `[batch, seq, H]`."""
    seq_length = tf.shape(input_word_ids)[1]
    word = tf.gather(self.word_embeddings, input_word_ids)
    # One-hot matmul for the tiny type table: cheaper than a gather on TPUs, identical in value.
    token_type = tf.matmul(tf.one_hot(input_type_ids, self.type_vocab_size, dtype=word.dtype),
                           self.token_type_embeddings)
    position = self.position_embeddings[:seq_length]
    embeddings = self.layer_norm(word + token_type + position[tf.newaxis])
    embeddings = self.dropout(tf.cast(embeddings, self.compute_dtype), training=training)
    if self.projection is not None:
      embeddings = self.projection(embeddings)
    return embeddings

  def get_config(self):
    config = super().get_config()
    config.update({
        "vocab_size": self.vocab_size,
        "embedding_size": self.embedding_size,
        "hidden_size": self.hidden_size,
        "max_position_embeddings": self.max_position_embeddings,
        "type_vocab_size": self.type_vocab_size,
        "initializer_range": self.initializer_range,
        "dropout_rate": self.dropout_rate,
        "layer_norm_epsilon": self.layer_norm_epsilon,
    })
    return config
