"""`SlotValueHead`: per slot, attention of a learned slot query over the dialogue's token vectors, scored
against the vector of each of the slot's ontology values (a picklist tracker, as SUMBT's and DS-DST's
categorical slots), plus two lexical features: how much of a value's pieces and of its slot's name occur in
the dialogue, each with a learned weight (the copy signal of TRADE's pointer, which a small encoder does not
learn from the vectors alone within a short fine-tuning)."""

import numpy as np
import tensorflow as tf
import tf_keras

# The logit of a padding candidate (a slot with fewer values than the most): never the argmax, no loss.
MASKED_LOGIT = -1e9
INITIAL_MATCH_WEIGHT = 4.0


@tf_keras.utils.register_keras_serializable(package="albert_tf")
class SlotValueHead(tf_keras.layers.Layer):
  """Scores every value of every slot.

  A value's vector is a learned projection of the mean of its pieces' word embeddings (the encoder's table, so
  that a value seen rarely or never in training still matches its words in the dialogue) plus a learned
  embedding of its own (zero at first). A slot's vector is its query's attention over the token vectors.

  Args:
    candidates: int `[slots, max values]`, per slot the row in `value_pieces` of each of its values, -1 as
      padding (static shapes: every slot scores the same number of candidates).
    value_pieces: int `[values, max pieces]`, the piece ids of every value of every slot, -1 as padding.
    slot_pieces: int `[slots, max pieces]`, the piece ids of every slot's name, -1 as padding.
    vocab_size: the encoder's vocabulary size (the lexical features look the dialogue's ids up in it).
    hidden_size: H.
    dropout_rate: dropout on the slot vectors while training.
    initializer_range: stddev of the truncated-normal initializers.
  """

  def __init__(self, candidates, value_pieces, slot_pieces, vocab_size, hidden_size, dropout_rate=0.1,
               initializer_range=0.02, **kwargs):
    super().__init__(**kwargs)
    self.candidates = np.asarray(candidates, np.int32).tolist()
    self.value_pieces = np.asarray(value_pieces, np.int32).tolist()
    self.slot_pieces = np.asarray(slot_pieces, np.int32).tolist()
    self.vocab_size = vocab_size
    self.hidden_size = hidden_size
    self.dropout_rate = dropout_rate
    self.initializer_range = initializer_range
    self.num_slots = len(self.candidates)
    self.num_values = len(self.value_pieces)
    self.value_projection = tf_keras.layers.Dense(hidden_size, kernel_initializer=self._initializer(),
                                                  name="value_projection")
    self.dropout = tf_keras.layers.Dropout(dropout_rate)

  def _initializer(self):
    # One instance per weight: Keras warns that a reused unseeded initializer gives identical values.
    return tf_keras.initializers.TruncatedNormal(stddev=self.initializer_range)

  def build(self, input_shape):
    # Unit-variance queries: the token vectors leave LayerNorm at unit scale, so the scores start at unit
    # scale and the attention can move (queries at the encoder's 0.02 attend uniformly and learn slowly).
    self.slot_queries = self.add_weight("slot_queries", shape=[self.num_slots, self.hidden_size],
                                        initializer=tf_keras.initializers.TruncatedNormal(stddev=1.0))
    self.value_embeddings = self.add_weight("value_embeddings", shape=[self.num_values, self.hidden_size],
                                            initializer="zeros")
    self.value_bias = self.add_weight("value_bias", shape=[self.num_values], initializer="zeros")
    # Per slot, the weight of the share of a value's pieces found in the dialogue (at first 4 nats for a value
    # found whole: the prior that a value named is the value meant); per value, the weight of the share of its
    # slot's name found there.
    self.value_match_weight = self.add_weight("value_match_weight", shape=[self.num_slots],
                                              initializer=tf_keras.initializers.Constant(INITIAL_MATCH_WEIGHT))
    self.slot_match_weight = self.add_weight("slot_match_weight", shape=[self.num_values], initializer="zeros")
    super().build(input_shape)

  def _found(self, present, pieces):
    """Per row of `pieces` (-1 padded), the share of its pieces that `present` `[batch, vocab]` holds."""
    pieces = tf.constant(pieces, tf.int32)
    piece_mask = tf.cast(pieces >= 0, tf.float32)
    found = tf.gather(present, tf.maximum(pieces, 0), axis=1) * piece_mask
    return tf.reduce_sum(found, axis=-1) / tf.maximum(tf.reduce_sum(piece_mask, axis=-1), 1.0)

  def call(self, sequence_output, input_word_ids, input_mask, embedding_table, training=None):
    """float32 logits `[batch, slots, max values]` (padding candidates at `MASKED_LOGIT`)."""
    # Scores and logits in float32 (under mixed precision the projections run in float16).
    scores = tf.einsum("bth,sh->bst", tf.cast(sequence_output, tf.float32), tf.cast(self.slot_queries, tf.float32))
    scores = scores / float(np.sqrt(self.hidden_size))
    scores += (1.0 - tf.cast(input_mask, tf.float32))[:, tf.newaxis, :] * MASKED_LOGIT
    slot_vectors = tf.einsum("bst,bth->bsh", tf.nn.softmax(scores, axis=-1), tf.cast(sequence_output, tf.float32))
    slot_vectors = self.dropout(slot_vectors, training=training)
    pieces = tf.constant(self.value_pieces, tf.int32)
    piece_mask = tf.cast(pieces >= 0, tf.float32)[:, :, tf.newaxis]
    words = tf.gather(tf.cast(embedding_table, tf.float32), tf.maximum(pieces, 0)) * piece_mask
    mean_words = tf.reduce_sum(words, axis=1) / tf.maximum(tf.reduce_sum(piece_mask, axis=1), 1.0)
    value_vectors = (tf.cast(self.value_projection(mean_words), tf.float32)
                     + tf.cast(self.value_embeddings, tf.float32))
    candidates = tf.constant(self.candidates, tf.int32)
    rows = tf.maximum(candidates, 0)
    # Which pieces each dialogue holds, `[batch, vocab]` (padding and [CLS]/[SEP] are not values' pieces).
    batch = tf.shape(input_word_ids)[0]
    rows_of_ids = tf.broadcast_to(tf.range(batch)[:, tf.newaxis], tf.shape(input_word_ids))
    present = tf.scatter_nd(tf.stack([rows_of_ids, input_word_ids], axis=-1), tf.cast(input_mask, tf.float32),
                            tf.stack([batch, self.vocab_size]))
    present = tf.minimum(present, 1.0)
    value_found = tf.gather(self._found(present, self.value_pieces), rows, axis=1)  # [batch, slots, values]
    slot_found = self._found(present, self.slot_pieces)[:, :, tf.newaxis]  # [batch, slots, 1]
    logits = (tf.einsum("bsh,sch->bsc", slot_vectors, tf.gather(value_vectors, rows))
              + tf.gather(tf.cast(self.value_bias, tf.float32), rows)
              + tf.cast(self.value_match_weight, tf.float32)[:, tf.newaxis] * value_found
              + tf.gather(tf.cast(self.slot_match_weight, tf.float32), rows) * slot_found)
    return tf.where((candidates >= 0)[tf.newaxis], logits, MASKED_LOGIT)

  def get_config(self):
    config = super().get_config()
    config.update({"candidates": self.candidates, "value_pieces": self.value_pieces,
                   "slot_pieces": self.slot_pieces, "vocab_size": self.vocab_size,
                   "hidden_size": self.hidden_size, "dropout_rate": self.dropout_rate,
                   "initializer_range": self.initializer_range})
    return config
