"""The parser's layers: word vectors from the encoder's pieces, and Dozat and Manning's biaffine arc and
relation scorers ("Deep Biaffine Attention for Neural Dependency Parsing", 2017), and `DependencyParserHead`,
which puts them together with the words' tag embeddings on the encoder's output.

Positions: the scorers take the vectors of a sentence's words `[batch, n, D]` and put a learned root vector
before them, so that position 0 is the root and position i the i-th word, as heads are numbered in the data
and in `decoding`. The root is a vector of its own rather than the [CLS] position's: [CLS] is not a word, and
its vector serves the encoder's other objectives. Each scorer learns its own root vector, in its input space.
"""

from typing import Optional, Tuple

import tensorflow as tf
import tf_keras

# The score of an arc that cannot be: a padded word or the word itself as the head. Finite, so that a softmax
# over a row stays finite; far below any real score, so that its probability is 0 in float32.
MASKED_ARC_SCORE = -1e9


def word_representations(sequence_output: tf.Tensor, first_piece_index: tf.Tensor,
                         last_piece_index: tf.Tensor) -> tf.Tensor:
  """Each word's vector: its first and its last piece's encoder vectors side by side.

  Args:
    sequence_output: `[batch, seq, H]`.
    first_piece_index: int `[batch, words]`, each word's first piece position (a padded word any position in
      the sequence, e.g. 0).
    last_piece_index: int `[batch, words]`, each word's last piece position (the first for a one-piece word).

  Returns:
    `[batch, words, 2H]`.
  """
  first = tf.gather(sequence_output, first_piece_index, batch_dims=1)
  last = tf.gather(sequence_output, last_piece_index, batch_dims=1)
  return tf.concat([first, last], axis=-1)


class _RootedProjections(tf_keras.layers.Layer):
  """A learned root vector before the words, then a dependent and a head MLP (a Dense layer each, dropout on
  their outputs), shared by the two scorers."""

  def __init__(self, units: int, activation: str = "elu", dropout_rate: float = 0.1,
               initializer_range: float = 0.02, **kwargs):
    super().__init__(**kwargs)
    self.units = units
    self.activation = activation
    self.dropout_rate = dropout_rate
    self.initializer_range = initializer_range
    self.dependent_mlp = tf_keras.layers.Dense(units, activation=activation,
                                               kernel_initializer=self._initializer(), name="dependent_mlp")
    self.head_mlp = tf_keras.layers.Dense(units, activation=activation,
                                          kernel_initializer=self._initializer(), name="head_mlp")
    self.dropout = tf_keras.layers.Dropout(dropout_rate)

  def _initializer(self) -> tf_keras.initializers.Initializer:
    return tf_keras.initializers.TruncatedNormal(stddev=self.initializer_range)

  def build(self, input_shape):
    self.root = self.add_weight("root", shape=[int(input_shape[-1])], initializer=self._initializer())
    super().build(input_shape)

  def _projections(self, word_vectors: tf.Tensor, training: Optional[bool]) -> Tuple[tf.Tensor, tf.Tensor]:
    """The dependent and head vectors `[batch, n + 1, units]` of the root and the words."""
    # Keras has cast the words to the policy's compute dtype, and reads the root vector in it.
    root = tf.tile(self.root[tf.newaxis, tf.newaxis, :], [tf.shape(word_vectors)[0], 1, 1])
    positions = tf.concat([root, word_vectors], axis=1)
    return (self.dropout(self.dependent_mlp(positions), training=training),
            self.dropout(self.head_mlp(positions), training=training))

  def get_config(self):
    config = super().get_config()
    config.update({"units": self.units, "activation": self.activation, "dropout_rate": self.dropout_rate,
                   "initializer_range": self.initializer_range})
    return config


@tf_keras.utils.register_keras_serializable(package="albert_tf")
class BiaffineArcScorer(_RootedProjections):
  """Arc scores: for dependent i and head j, `dep_i U head_j^T + head_j . b`, dep and head the MLPs' vectors
  of size `units` (a term of the dependent alone would be the same for all its heads, so there is none).

  Args:
    units: the MLPs' size d (Dozat and Manning's arc MLPs have 500).
    activation: the MLPs' activation.
    dropout_rate: dropout on the MLPs' outputs while training.
    initializer_range: stddev of the truncated-normal initializers.
  """

  def build(self, input_shape):
    self.arc_weights = self.add_weight("arc_weights", shape=[self.units, self.units],
                                       initializer=self._initializer())
    self.head_bias = self.add_weight("head_bias", shape=[self.units], initializer="zeros")
    super().build(input_shape)

  def call(self, word_vectors, word_mask, training=None):
    """Float32 arc scores `[batch, n + 1, n + 1]`, row = dependent, column = head, position 0 the root.

    Args:
      word_vectors: `[batch, n, D]`, the words' vectors (`word_representations`).
      word_mask: `[batch, n]`, 1 for a word, 0 for padding.
      training: dropout.

    Returns:
      The scores, with `MASKED_ARC_SCORE` where the head is a padded word or the dependent itself. Row 0
      (the root as a dependent) and padded words' rows hold scores that mean nothing: the loss and decoding
      skip them.
    """
    dependents, heads = self._projections(word_vectors, training)
    scores = tf.einsum("bid,de,bje->bij", dependents, self.arc_weights, heads)
    scores += tf.einsum("bje,e->bj", heads, self.head_bias)[:, tf.newaxis, :]
    scores = tf.cast(scores, tf.float32)
    batch_size = tf.shape(word_mask)[0]
    real_heads = tf.concat([tf.ones([batch_size, 1], tf.bool), tf.cast(word_mask, tf.bool)], axis=1)
    other_word = tf.logical_not(tf.eye(tf.shape(scores)[1], dtype=tf.bool))
    allowed = tf.logical_and(real_heads[:, tf.newaxis, :], other_word[tf.newaxis])
    return tf.where(allowed, scores, MASKED_ARC_SCORE)


@tf_keras.utils.register_keras_serializable(package="albert_tf")
class BiaffineLabelScorer(_RootedProjections):
  """Relation scores: for dependent i, head j and relation l, `dep_i U_l head_j^T + dep_i . w_l +
  head_j . v_l + b_l`, a bilinear form per relation plus linear terms, on the MLPs' vectors of size `units`.

  Args:
    num_labels: the number of relations.
    units: the MLPs' size d (Dozat and Manning's relation MLPs have 100).
    activation: the MLPs' activation.
    dropout_rate: dropout on the MLPs' outputs while training.
    initializer_range: stddev of the truncated-normal initializers.
  """

  def __init__(self, num_labels: int, units: int, **kwargs):
    super().__init__(units, **kwargs)
    self.num_labels = num_labels

  def build(self, input_shape):
    self.label_weights = self.add_weight("label_weights", shape=[self.num_labels, self.units, self.units],
                                         initializer=self._initializer())
    self.dependent_weights = self.add_weight("dependent_weights", shape=[self.units, self.num_labels],
                                             initializer=self._initializer())
    self.head_weights = self.add_weight("head_weights", shape=[self.units, self.num_labels],
                                        initializer=self._initializer())
    self.label_bias = self.add_weight("label_bias", shape=[self.num_labels], initializer="zeros")
    super().build(input_shape)

  def call(self, word_vectors, heads=None, training=None):
    """Float32 relation scores, position 0 the root.

    Args:
      word_vectors: `[batch, n, D]`, the words' vectors.
      heads: int `[batch, n + 1]`, the head position of each position (training's gold heads, or decoded ones;
        entry 0, the root's, any position); None scores every head.
      training: dropout.

    Returns:
      With `heads`: `[batch, n + 1, labels]`, each dependent's relations to its head. Without:
      `[batch, n + 1, n + 1, labels]`, row = dependent, column = head. Padded positions hold scores that mean
      nothing: the loss skips them.
    """
    dependents, head_vectors = self._projections(word_vectors, training)
    by_label = tf.einsum("bid,lde->bile", dependents, self.label_weights)
    dependent_terms = tf.einsum("bid,dl->bil", dependents, self.dependent_weights)
    head_weights = self.head_weights
    if heads is None:
      bilinear = tf.einsum("bile,bje->bijl", by_label, head_vectors)
      head_terms = tf.einsum("bje,el->bjl", head_vectors, head_weights)
      scores = bilinear + dependent_terms[:, :, tf.newaxis, :] + head_terms[:, tf.newaxis, :, :]
    else:
      head_vectors = tf.gather(head_vectors, heads, batch_dims=1)
      bilinear = tf.einsum("bile,bie->bil", by_label, head_vectors)
      scores = bilinear + dependent_terms + tf.einsum("bie,el->bil", head_vectors, head_weights)
    return tf.cast(scores + self.label_bias, tf.float32)

  def get_config(self):
    config = super().get_config()
    config.update({"num_labels": self.num_labels})
    return config


@tf_keras.utils.register_keras_serializable(package="albert_tf")
class DependencyParserHead(tf_keras.layers.Layer):
  """The parser on the encoder's output: each word's vector (`word_representations`, then the embeddings of
  its first and last morpheme tags), dropout, and the biaffine arc and relation scorers.

  The word inputs, a dict of int tensors:
    first_piece_index, last_piece_index: `[batch, words]`, where each word's pieces start and end.
    word_mask: `[batch, words]`, 1 for a word, 0 for padding.
    pos_ids: `[batch, words, 2]`, the ids of each word's first and last morpheme tags (0 for padding); not read
      when `pos_embedding_size` is 0.
    heads (optional): `[batch, words]`, each word's head (training's gold heads; anything >= 0 for padding).

  Args:
    num_labels: the number of relations.
    pos_vocab_size: the number of tag ids (padding and the unknown tag included).
    pos_embedding_size: the size of a tag's embedding (a word has two); 0: the tags are not features.
    arc_units: the arc scorer's MLP size.
    label_units: the relation scorer's MLP size.
    dropout_rate: dropout on the word vectors and on the scorers' MLP outputs while training.
    initializer_range: stddev of the truncated-normal initializers.
  """

  def __init__(self, num_labels: int, pos_vocab_size: int, pos_embedding_size: int = 64, arc_units: int = 512,
               label_units: int = 128, dropout_rate: float = 0.1, initializer_range: float = 0.02, **kwargs):
    super().__init__(**kwargs)
    self.num_labels = num_labels
    self.pos_vocab_size = pos_vocab_size
    self.pos_embedding_size = pos_embedding_size
    self.arc_units = arc_units
    self.label_units = label_units
    self.dropout_rate = dropout_rate
    self.initializer_range = initializer_range
    self.dropout = tf_keras.layers.Dropout(dropout_rate)
    scorer_options = {"dropout_rate": dropout_rate, "initializer_range": initializer_range}
    self.arc_scorer = BiaffineArcScorer(arc_units, name="arc_scorer", **scorer_options)
    self.label_scorer = BiaffineLabelScorer(num_labels, label_units, name="label_scorer", **scorer_options)

  @property
  def reads_tags(self) -> bool:
    """Whether the words' tags are features (`pos_embedding_size` > 0): a parser without them reads text only."""
    return self.pos_embedding_size > 0

  def build(self, input_shape):
    if self.reads_tags:
      self.pos_embeddings = self.add_weight(
          "pos_embeddings", shape=[self.pos_vocab_size, self.pos_embedding_size],
          initializer=tf_keras.initializers.TruncatedNormal(stddev=self.initializer_range))
    super().build(input_shape)

  def call(self, sequence_output, words, training=None):
    """`arc_scores` `[batch, n + 1, n + 1]`, and `label_scores` at the given heads `[batch, n + 1, labels]`
    or, without heads, at every head `[batch, n + 1, n + 1, labels]`; float32, position 0 the root."""
    vectors = word_representations(sequence_output, words["first_piece_index"], words["last_piece_index"])
    if self.reads_tags:
      tags = tf.gather(tf.cast(self.pos_embeddings, vectors.dtype), words["pos_ids"])
      tags = tf.reshape(tags, tf.concat([tf.shape(tags)[:2], [2 * self.pos_embedding_size]], axis=0))
      vectors = tf.concat([vectors, tags], axis=-1)
    vectors = self.dropout(vectors, training=training)
    heads = words.get("heads")
    if heads is not None:
      # The root's own entry: the scorer reads a head for every position.
      heads = tf.concat([tf.zeros_like(heads[:, :1]), heads], axis=1)
    return {"arc_scores": self.arc_scorer(vectors, words["word_mask"], training=training),
            "label_scores": self.label_scorer(vectors, heads, training=training)}

  def get_config(self):
    config = super().get_config()
    config.update({"num_labels": self.num_labels, "pos_vocab_size": self.pos_vocab_size,
                   "pos_embedding_size": self.pos_embedding_size, "arc_units": self.arc_units,
                   "label_units": self.label_units, "dropout_rate": self.dropout_rate,
                   "initializer_range": self.initializer_range})
    return config
