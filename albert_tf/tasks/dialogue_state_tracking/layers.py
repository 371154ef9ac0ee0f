"""`SlotValueHead`: TRADE's two decisions per slot, over a closed ontology.

Per slot, a learned query attends over the dialogue's token vectors. A gate (TRADE's) reads the attended vector
and three lexical features (`LEXICAL_FEATURES`) and says whether the slot is "none", "dontcare", "yes", "no"
(where the slot's ontology has them) or holds one of its other values; only then is the value picked among
those others, by the attended vector scored against each value's vector, by how much of the value's pieces the
dialogue holds, and by TRADE's pointer: the share of the slot's attention that lies on the value's pieces. Each
decision has its own cross-entropy, the value's only on the slots that hold one: a single softmax over "none"
and every value let "none" (94% of the slot labels on the synthetic dialogues) swamp the rest, and the pointer
binds a value to the slot whose query attends to it, where a mere "its pieces are in the text" feature fires for
every slot that lists the same words (WoS's 지역 values in three domains, its times in four slots) and, with
Korean cut into syllables, for many values never named (docs/korean-benchmarks.md)."""

import numpy as np
import tensorflow as tf
import tf_keras

# The logit of a padding candidate or of a gate the slot lacks: never the argmax, no loss.
MASKED_LOGIT = -1e9
# At first, a value found whole in the dialogue gains 4 nats over one absent (the prior that a value named is the
# value meant); the pointer's log share of attention counts once.
INITIAL_MATCH_WEIGHT = 4.0
INITIAL_POINTER_WEIGHT = 1.0
# The default gate's (column 0 of `gate_positions`: "none") initial bias over the others' zero.
INITIAL_DEFAULT_GATE_BIAS = 2.0
# The pointer's floor: log(1e-3) for a value none of whose pieces the slot attends to.
POINTER_FLOOR = 1e-3
# Gates 0 .. n-1 are the special values of `gate_positions`' columns; gate n: the slot holds another value.
# The gate's lexical features: the share of the slot name's pieces found, of its best candidate's, and the pointer's
# largest share of the slot's attention on one candidate.
LEXICAL_FEATURES = 3


@tf_keras.utils.register_keras_serializable(package="albert_tf")
class SlotValueHead(tf_keras.layers.Layer):
  """Per slot, a gate over its special values and "a value", and a score of each of its other values.

  A value's vector is a learned projection of the mean of its pieces' word embeddings (the encoder's table, so
  that a value seen rarely or never in training still matches its words in the dialogue) plus a learned
  embedding of its own (zero at first). A slot's vector is its query's attention over the token vectors.

  Args:
    value_pieces: int `[values, max pieces]`, the piece ids of every value of every slot (slot by slot, each
      slot's in its ontology order), -1 as padding.
    slot_pieces: int `[slots, max pieces]`, the piece ids of every slot's name, -1 as padding.
    value_counts: per slot, how many values it has (its rows of `value_pieces`, in order).
    gate_positions: int `[slots, gates]`, per slot the position among its values of each special value ("none",
      "dontcare", ...; the first, "none", is the default: its gate starts ahead), -1 where the slot lacks it.
    vocab_size: the encoder's vocabulary size (the lexical features look the dialogue's ids up in it).
    hidden_size: H.
    dropout_rate: dropout on the slot vectors while training.
    initializer_range: stddev of the truncated-normal initializers.

  Call: `(sequence_output, input_word_ids, input_mask, embedding_table)` → `{"gate_logits": [batch, slots,
  gates + 1], "value_logits": [batch, slots, max candidates]}`, float32, `MASKED_LOGIT` where a slot lacks the
  gate or the candidate. `decide` turns them into the value of each slot, `losses` scores them against labels.
  """

  def __init__(self, value_pieces, slot_pieces, value_counts, gate_positions, vocab_size, hidden_size,
               dropout_rate=0.1, initializer_range=0.02, **kwargs):
    super().__init__(**kwargs)
    self.value_pieces = np.asarray(value_pieces, np.int32).tolist()
    self.slot_pieces = np.asarray(slot_pieces, np.int32).tolist()
    self.value_counts = [int(count) for count in value_counts]
    self.gate_positions = np.asarray(gate_positions, np.int32).tolist()
    self.vocab_size = vocab_size
    self.hidden_size = hidden_size
    self.dropout_rate = dropout_rate
    self.initializer_range = initializer_range
    self.num_slots = len(self.value_counts)
    self.num_values = len(self.value_pieces)
    if sum(self.value_counts) != self.num_values or len(self.slot_pieces) != self.num_slots:
      raise ValueError(f"{self.num_values} value piece lists for {sum(self.value_counts)} values; "
                       f"{len(self.slot_pieces)} slot piece lists for {self.num_slots} slots.")
    self.num_gates = len(self.gate_positions[0]) + 1
    self._build_tables()
    self.value_projection = tf_keras.layers.Dense(hidden_size, kernel_initializer=self._initializer(),
                                                  name="value_projection")
    self.gate = tf_keras.layers.Dense(self.num_gates, kernel_initializer=self._initializer(), name="gate")
    # float32 as the scores it drops from: under a mixed policy a bfloat16 layer would cast the slot vectors down,
    # which the float32 einsums after it refuse.
    self.dropout = tf_keras.layers.Dropout(dropout_rate, dtype="float32")

  def _build_tables(self):
    """The static tables of the candidates (each slot's values but its special ones), of the labels' gates and
    candidates, and of the pieces' compact ids."""
    offsets = np.cumsum([0] + self.value_counts[:-1])
    gates = np.asarray(self.gate_positions, np.int32).reshape([self.num_slots, self.num_gates - 1])
    width = max(self.value_counts)
    ordinary = [[position for position in range(count) if position not in set(gates[slot])]
                for slot, count in enumerate(self.value_counts)]
    candidates = max(1, max(len(positions) for positions in ordinary))
    # Per slot: each candidate's position among its values and its row of value_pieces (-1 padding).
    self._candidate_positions = np.full([self.num_slots, candidates], -1, np.int32)
    self._candidate_rows = np.full([self.num_slots, candidates], -1, np.int32)
    # Per slot and position among its values: the gold gate, and the gold candidate (0 for a special value).
    self._label_gates = np.full([self.num_slots, width], self.num_gates - 1, np.int32)
    self._label_candidates = np.zeros([self.num_slots, width], np.int32)
    for slot, positions in enumerate(ordinary):
      self._candidate_positions[slot, :len(positions)] = positions
      self._candidate_rows[slot, :len(positions)] = offsets[slot] + np.asarray(positions, np.int32)
      self._label_candidates[slot, positions] = np.arange(len(positions))
      for gate, position in enumerate(gates[slot]):
        if position >= 0:
          self._label_gates[slot, position] = gate
    self._gate_available = np.concatenate(
        [gates >= 0, np.asarray([[bool(positions)] for positions in ordinary])], axis=1)
    self._gate_positions = np.concatenate([gates, np.full([self.num_slots, 1], -1, np.int32)], axis=1)
    # The lexical features look at the pieces of values and slot names only: each gets a compact id, every other
    # piece the last one (`present` and the pointer's mass are [batch, pieces + 1], not [batch, vocab]).
    pieces = np.asarray(self.value_pieces, np.int32).reshape([self.num_values, -1])
    names = np.asarray(self.slot_pieces, np.int32).reshape([self.num_slots, -1])
    used = np.unique(np.concatenate([pieces[pieces >= 0], names[names >= 0]]))
    if used.size and used[-1] >= self.vocab_size:
      raise ValueError(f"Piece id {used[-1]} is outside the vocabulary of {self.vocab_size}.")
    self._num_pieces = len(used)
    self._compact = np.full([self.vocab_size], len(used), np.int32)
    self._compact[used] = np.arange(len(used), dtype=np.int32)
    self._value_compact = np.where(pieces >= 0, self._compact[np.maximum(pieces, 0)], len(used)).astype(np.int32)
    self._slot_compact = np.where(names >= 0, self._compact[np.maximum(names, 0)], len(used)).astype(np.int32)
    # Each value's slot, for the pointer (the mass of the value's pieces under its own slot's attention).
    self._value_slots = np.repeat(np.arange(self.num_slots, dtype=np.int32), self.value_counts)

  def _initializer(self):
    # One instance per weight: Keras warns that a reused unseeded initializer gives identical values.
    return tf_keras.initializers.TruncatedNormal(stddev=self.initializer_range)

  def build(self, input_shape):
    # Unit-variance queries: the token vectors leave LayerNorm at unit scale, so the scores start at unit
    # scale and the attention can move (queries at the encoder's 0.02 attend uniformly and learn slowly).
    self.slot_queries = self.add_weight("slot_queries", shape=[self.num_slots, self.hidden_size],
                                        initializer=tf_keras.initializers.TruncatedNormal(stddev=1.0))
    # The gate: a kernel shared by the slots (`gate`) plus each slot's own (zero at first), a bias per slot and
    # gate, and per slot and gate the weights of the lexical features.
    self.slot_gate_kernel = self.add_weight("slot_gate_kernel", shape=[self.num_slots, self.hidden_size,
                                                                       self.num_gates], initializer="zeros")
    # The first gate (the default value, "none") starts ahead: most slots of most turns hold it.
    initial_bias = np.zeros([self.num_slots, self.num_gates], np.float32)
    initial_bias[:, 0] = INITIAL_DEFAULT_GATE_BIAS
    self.gate_bias = self.add_weight("gate_bias", shape=[self.num_slots, self.num_gates],
                                     initializer=lambda shape, dtype=None: tf.constant(initial_bias, dtype))
    self.gate_feature_weight = self.add_weight("gate_feature_weight",
                                               shape=[self.num_slots, LEXICAL_FEATURES, self.num_gates],
                                               initializer="zeros")
    self.value_embeddings = self.add_weight("value_embeddings", shape=[self.num_values, self.hidden_size],
                                            initializer="zeros")
    self.value_bias = self.add_weight("value_bias", shape=[self.num_values], initializer="zeros")
    # Per slot, the weight of the share of a value's pieces found in the dialogue, and of the pointer.
    self.value_match_weight = self.add_weight("value_match_weight", shape=[self.num_slots],
                                              initializer=tf_keras.initializers.Constant(INITIAL_MATCH_WEIGHT))
    self.pointer_weight = self.add_weight("pointer_weight", shape=[self.num_slots],
                                          initializer=tf_keras.initializers.Constant(INITIAL_POINTER_WEIGHT))
    super().build(input_shape)

  @staticmethod
  def _share(table, compact):
    """Per row of `compact` (compact piece ids, the last id as padding), the mean of `table` `[batch, pieces + 1]`
    over its pieces."""
    padding = table.shape[-1] - 1
    mask = tf.cast(compact < padding, tf.float32)
    found = tf.gather(table, compact, axis=1) * mask
    return tf.reduce_sum(found, axis=-1) / tf.maximum(tf.reduce_sum(mask, axis=-1), 1.0)

  def call(self, sequence_output, input_word_ids, input_mask, embedding_table, training=None):
    # Scores and logits in float32 (under mixed precision the projections run in float16).
    tokens = tf.cast(sequence_output, tf.float32)
    mask = tf.cast(input_mask, tf.float32)
    scores = tf.einsum("bth,sh->bst", tokens, tf.cast(self.slot_queries, tf.float32))
    scores = scores / float(np.sqrt(self.hidden_size))
    scores += (1.0 - mask)[:, tf.newaxis, :] * MASKED_LOGIT
    attention = tf.nn.softmax(scores, axis=-1)
    slot_vectors = self.dropout(tf.einsum("bst,bth->bsh", attention, tokens), training=training)

    # Which value and slot-name pieces each dialogue holds, and how much of each slot's attention lies on each.
    batch = tf.shape(input_word_ids)[0]
    width = self._num_pieces + 1
    segments = tf.gather(tf.constant(self._compact), input_word_ids) + tf.range(batch)[:, tf.newaxis] * width
    present = tf.reshape(tf.math.unsorted_segment_sum(mask, segments, batch * width), [batch, width])
    present = tf.minimum(present, 1.0)
    mass = tf.math.unsorted_segment_sum(tf.transpose(attention, [0, 2, 1]), segments, batch * width)
    mass = tf.reshape(mass, [batch, width * self.num_slots])  # [batch, piece * slots + slot]
    value_compact = tf.constant(self._value_compact)
    piece_mask = tf.cast(value_compact < self._num_pieces, tf.float32)
    own_slot = tf.constant(self._value_slots)[:, tf.newaxis]
    own_mass = tf.gather(mass, value_compact * self.num_slots + own_slot, axis=1)  # [batch, values, pieces]
    pointer = tf.minimum(tf.reduce_sum(own_mass * piece_mask, axis=-1), 1.0)  # [batch, values]
    value_found = self._share(present, value_compact)  # [batch, values]
    slot_found = self._share(present, tf.constant(self._slot_compact))  # [batch, slots]

    # The candidates' scores.
    rows = tf.constant(np.maximum(self._candidate_rows, 0))
    candidate_mask = tf.constant(self._candidate_rows >= 0)
    pieces = tf.constant(np.maximum(np.asarray(self.value_pieces, np.int32).reshape([self.num_values, -1]), 0))
    words = tf.gather(tf.cast(embedding_table, tf.float32), pieces) * piece_mask[:, :, tf.newaxis]
    mean_words = tf.reduce_sum(words, axis=1) / tf.maximum(tf.reduce_sum(piece_mask, axis=1), 1.0)[:, tf.newaxis]
    value_vectors = (tf.cast(self.value_projection(mean_words), tf.float32)
                     + tf.cast(self.value_embeddings, tf.float32))
    candidate_found = tf.gather(value_found, rows, axis=1)  # [batch, slots, candidates]
    candidate_pointer = tf.gather(pointer, rows, axis=1)
    value_logits = (tf.einsum("bsh,sch->bsc", slot_vectors, tf.gather(value_vectors, rows))
                    + tf.gather(tf.cast(self.value_bias, tf.float32), rows)
                    + tf.cast(self.value_match_weight, tf.float32)[:, tf.newaxis] * candidate_found
                    + tf.cast(self.pointer_weight, tf.float32)[:, tf.newaxis]
                    * tf.math.log(POINTER_FLOOR + candidate_pointer))
    value_logits = tf.where(candidate_mask[tf.newaxis], value_logits, MASKED_LOGIT)

    # The gate.
    best_found = tf.reduce_max(tf.where(candidate_mask[tf.newaxis], candidate_found, 0.0), axis=-1)
    best_pointer = tf.reduce_max(tf.where(candidate_mask[tf.newaxis], candidate_pointer, 0.0), axis=-1)
    features = tf.stack([slot_found, best_found, best_pointer], axis=-1)  # [batch, slots, LEXICAL_FEATURES]
    gate_logits = (tf.cast(self.gate(slot_vectors), tf.float32)
                   + tf.einsum("bsh,shg->bsg", slot_vectors, tf.cast(self.slot_gate_kernel, tf.float32))
                   + tf.cast(self.gate_bias, tf.float32)
                   + tf.einsum("bsf,sfg->bsg", features, tf.cast(self.gate_feature_weight, tf.float32)))
    gate_logits = tf.where(tf.constant(self._gate_available)[tf.newaxis], gate_logits, MASKED_LOGIT)
    return {"gate_logits": gate_logits, "value_logits": value_logits}

  def _per_slot(self, table, indices):
    """`table[s, indices[b, s]]` of a numpy table `[slots, width]` and int32 `indices` `[batch, slots]`."""
    width = table.shape[1]
    return tf.gather(tf.constant(table.reshape([-1])), tf.range(self.num_slots) * width + indices)

  def decide(self, outputs):
    """(each slot's value, its position among the slot's values, int32 `[batch, slots]`; its probability, the
    gate's times, for another value than a special one, the candidate's)."""
    gate_probabilities = tf.nn.softmax(outputs["gate_logits"])
    value_probabilities = tf.nn.softmax(outputs["value_logits"])
    gates = tf.argmax(outputs["gate_logits"], axis=-1, output_type=tf.int32)
    candidates = tf.argmax(outputs["value_logits"], axis=-1, output_type=tf.int32)
    holds_value = tf.equal(gates, self.num_gates - 1)
    special = self._per_slot(self._gate_positions, gates)
    candidate = self._per_slot(self._candidate_positions, candidates)
    probabilities = tf.gather(gate_probabilities, gates, batch_dims=2)
    probabilities *= tf.where(holds_value, tf.gather(value_probabilities, candidates, batch_dims=2), 1.0)
    return tf.where(holds_value, candidate, special), probabilities

  def losses(self, outputs, labels):
    """Per turn and slot, float32 `[batch, slots]`: the gate's cross-entropy, and the candidate's where the gold
    value is not a special one (zero elsewhere). `labels`: each slot's gold position among its values."""
    gate_labels = self._per_slot(self._label_gates, labels)
    candidate_labels = self._per_slot(self._label_candidates, labels)
    gate_loss = tf.nn.sparse_softmax_cross_entropy_with_logits(gate_labels, outputs["gate_logits"])
    value_loss = tf.nn.sparse_softmax_cross_entropy_with_logits(candidate_labels, outputs["value_logits"])
    return gate_loss, tf.where(tf.equal(gate_labels, self.num_gates - 1), value_loss, 0.0)

  def get_config(self):
    config = super().get_config()
    config.update({"value_pieces": self.value_pieces, "slot_pieces": self.slot_pieces,
                   "value_counts": self.value_counts, "gate_positions": self.gate_positions,
                   "vocab_size": self.vocab_size, "hidden_size": self.hidden_size,
                   "dropout_rate": self.dropout_rate, "initializer_range": self.initializer_range})
    return config
