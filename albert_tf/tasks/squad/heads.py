"""SQuAD's heads: Google's `run_squad_v1` span logits and `run_squad_v2`'s XLNet-style answer head."""

import tensorflow as tf
import tf_keras


@tf_keras.utils.register_keras_serializable(package="albert_tf")
class SpanLogitsHead(tf_keras.layers.Layer):
  """Google's SQuAD v1 head (`cls/squad`): a start and an end logit per token, from one linear layer.

  The weight is stored as `[2, H]` (Google's `cls/squad/output_weights`, Hugging Face's `qa_outputs.weight`)
  and applied transposed, so conversion copies it as it is.

  Args:
    hidden_size: H.
    initializer_range: stddev of the truncated-normal initializer.
  """

  def __init__(self, hidden_size, initializer_range=0.02, **kwargs):
    super().__init__(**kwargs)
    self.hidden_size = hidden_size
    self.initializer_range = initializer_range

  def build(self, input_shape):
    self.output_weights = self.add_weight(
        "output_weights", shape=[2, self.hidden_size],
        initializer=tf_keras.initializers.TruncatedNormal(stddev=self.initializer_range))
    self.output_bias = self.add_weight("output_bias", shape=[2], initializer="zeros")
    super().build(input_shape)

  def call(self, sequence_output):
    """Returns float32 `start_logits` and `end_logits`, each `[batch, seq]`."""
    logits = tf.einsum("bsh,nh->nbs", sequence_output, tf.cast(self.output_weights, sequence_output.dtype))
    logits = tf.cast(logits, tf.float32) + tf.cast(self.output_bias, tf.float32)[:, tf.newaxis, tf.newaxis]
    return logits[0], logits[1]

  def get_config(self):
    config = super().get_config()
    config.update({"hidden_size": self.hidden_size, "initializer_range": self.initializer_range})
    return config


def _masked(logits, p_mask):
  """Logits where `p_mask` is 1 (not a possible answer token) pushed to -1e30, in float32 (Google's masking)."""
  p_mask = tf.cast(p_mask, tf.float32)
  return logits * (1.0 - p_mask) - 1e30 * p_mask


@tf_keras.utils.register_keras_serializable(package="albert_tf")
class XLNetSpanHead(tf_keras.layers.Layer):
  """Google's SQuAD v2 head, from XLNet: start logits, end logits conditioned on the start, answerability.

  - `start_logits/dense`: one logit per token.
  - `end_logits`: `dense_0` (2H→H, tanh) on each token's vector beside the start token's, `LayerNorm`, then
    `dense_1` (H→1). Training conditions on the true start; inference on each of the `start_n_top` best
    starts, keeping the `end_n_top` best ends of each (a beam of start × end candidates).
  - `answer_class`: `dense_0` (2H→H, tanh) on the start-probability-weighted token vector beside `[CLS]`'s,
    dropout, `dense_1` (H→1, no bias): the logit that the question has no answer in this window.

  Tokens where `p_mask` is 1 (the question, `[SEP]`s, padding) are never a start or an end.

  Args:
    hidden_size: H.
    start_n_top, end_n_top: the beam at inference.
    dropout_rate: dropout before the answer-class logit while training (Google's `--dropout_prob`).
    initializer_range: stddev of the truncated-normal initializers.
  """

  def __init__(self, hidden_size, start_n_top=5, end_n_top=5, dropout_rate=0.1, initializer_range=0.02, **kwargs):
    super().__init__(**kwargs)
    self.hidden_size = hidden_size
    self.start_n_top = start_n_top
    self.end_n_top = end_n_top
    self.dropout_rate = dropout_rate
    self.initializer_range = initializer_range

    def dense(units, name, activation=None, use_bias=True):
      return tf_keras.layers.Dense(
          units, activation=activation, use_bias=use_bias, name=name,
          kernel_initializer=tf_keras.initializers.TruncatedNormal(stddev=initializer_range))

    self.start_dense = dense(1, "start_dense")
    self.end_dense_0 = dense(hidden_size, "end_dense_0", activation="tanh")
    self.end_layer_norm = tf_keras.layers.LayerNormalization(epsilon=1e-12, dtype=tf.float32, name="end_layer_norm")
    self.end_dense_1 = dense(1, "end_dense_1")
    self.answer_class_dense_0 = dense(hidden_size, "answer_class_dense_0", activation="tanh")
    self.answer_class_dropout = tf_keras.layers.Dropout(dropout_rate)
    self.answer_class_dense_1 = dense(1, "answer_class_dense_1", use_bias=False)

  def _end_logits(self, sequence_output, start_features):
    """End logits `[..., seq]` of each token beside `start_features` (broadcast against the tokens)."""
    start_features = tf.broadcast_to(start_features, tf.shape(sequence_output))
    hidden = self.end_dense_0(tf.concat([sequence_output, start_features], axis=-1))
    # Normalised as rows: the layer is built once, for training's rank 3 and the beam's rank 4 alike.
    normalized = self.end_layer_norm(tf.reshape(hidden, [-1, self.hidden_size]))
    hidden = tf.reshape(tf.cast(normalized, self.compute_dtype), tf.shape(hidden))
    return tf.cast(tf.squeeze(self.end_dense_1(hidden), -1), tf.float32)

  def call(self, sequence_output, p_mask, start_positions=None, training=None):
    """The head's outputs (float32 scores, int32 indices).

    Args:
      sequence_output: `[batch, seq, H]`.
      p_mask: `[batch, seq]`, 1 where a token cannot be part of an answer.
      start_positions: `[batch]`, the true starts; given when training, which then returns the full
        distributions.
      training: dropout on the answer-class features.

    Returns:
      With `start_positions`: `start_log_probs`, `end_log_probs` `[batch, seq]` and `cls_logits` `[batch]`.
      Without: `start_top_log_probs`, `start_top_index` `[batch, start_n_top]`, `end_top_log_probs`,
      `end_top_index` `[batch, start_n_top * end_n_top]` (start i's ends at i * end_n_top + j) and `cls_logits`.
    """
    start_logits = _masked(tf.cast(tf.squeeze(self.start_dense(sequence_output), -1), tf.float32), p_mask)
    start_log_probs = tf.nn.log_softmax(start_logits, -1)
    outputs = {}
    if start_positions is not None:
      start_features = tf.gather(sequence_output, start_positions, batch_dims=1)[:, tf.newaxis, :]
      end_logits = _masked(self._end_logits(sequence_output, start_features), p_mask)
      outputs.update(start_log_probs=start_log_probs, end_log_probs=tf.nn.log_softmax(end_logits, -1))
    else:
      start_top_log_probs, start_top_index = tf.math.top_k(start_log_probs, k=self.start_n_top)
      start_features = tf.gather(sequence_output, start_top_index, batch_dims=1)  # [batch, k, H]
      tokens = tf.tile(sequence_output[:, tf.newaxis], [1, self.start_n_top, 1, 1])  # [batch, k, seq, H]
      end_logits = _masked(self._end_logits(tokens, start_features[:, :, tf.newaxis, :]), p_mask[:, tf.newaxis])
      end_top_log_probs, end_top_index = tf.math.top_k(tf.nn.log_softmax(end_logits, -1), k=self.end_n_top)
      beam = self.start_n_top * self.end_n_top
      outputs.update(start_top_log_probs=start_top_log_probs, start_top_index=start_top_index,
                     end_top_log_probs=tf.reshape(end_top_log_probs, [-1, beam]),
                     end_top_index=tf.reshape(end_top_index, [-1, beam]))
    start_probs = tf.cast(tf.nn.softmax(start_logits, -1), sequence_output.dtype)
    start_summary = tf.einsum("bsh,bs->bh", sequence_output, start_probs)
    answer_features = self.answer_class_dense_0(tf.concat([start_summary, sequence_output[:, 0]], axis=-1))
    answer_features = self.answer_class_dropout(answer_features, training=training)
    outputs["cls_logits"] = tf.cast(tf.squeeze(self.answer_class_dense_1(answer_features), -1), tf.float32)
    return outputs

  def get_config(self):
    config = super().get_config()
    config.update({"hidden_size": self.hidden_size, "start_n_top": self.start_n_top, "end_n_top": self.end_n_top,
                   "dropout_rate": self.dropout_rate, "initializer_range": self.initializer_range})
    return config
