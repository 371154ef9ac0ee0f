"""Dynamic masking: Google's n-gram masking of unmasked records (`--dynamic_masking`), in the input pipeline.

The algorithm is `instances.create_masked_lm_predictions`, as tensors over a batch:

- candidates are the real tokens other than `[CLS]`/`[SEP]`; with whole-word masking a piece that does not
  start a word (`token_boundary` 0) joins the word before it, as in Google's code (even across a `[SEP]`);
- the budget is `min(max_predictions_per_seq, max(1, round(length × masked_lm_prob)))` tokens, the length
  counting `[CLS]`/`[SEP]` and rounded half to even, as Python's `round`;
- the words are visited in a random order; each visit draws an n-gram size (∝ 1/n up to `ngram`), shrinks
  it while the n-gram would overshoot the budget, and takes the n-gram unless it still does or touches a word
  already taken. The visits run as one loop over the batch, which stops when every sequence is done;
- each chosen token becomes `[MASK]` (80%), stays (10%) or becomes a random id of the vocabulary (10%).

Each example's random numbers are Philox blocks of its own: counter (its index in the epoch × the blocks an
example uses, the epoch) under a key drawn from the run's seed. They depend on the seed, the epoch and the
example's place in the epoch alone, not on the batch it lands in, so a resumed stream draws exactly what an
uninterrupted one did; and a batch of consecutive examples, as nearly all are, takes its numbers in one op.

tensorflow_text's masking ops are not used, because they do not compute this: `RandomItemSelector` selects
`ceil(rate × items)` whole items (a budget in words, not tokens, so n-grams of several pieces overshoot
`max_predictions_per_seq`) with no n-gram sizes or overlap rule, and `MaskValuesChooser` (which
`mask_language_model` calls) draws with the stateful `tf.random.uniform`, once per word rather than per
token, so its masks would depend on how many batches an iterator has drawn, not on the example.
"""

import tensorflow as tf

from albert_tf.data.instances import MaskingRecipe, check_max_predictions

# Rows of an example's random draws, one value per token position.
_WORD_ORDER, _NGRAM_SIZE, _MASK_TOKEN, _KEEP_OR_RANDOM, _RANDOM_ID = range(5)
_NUM_DRAWS = 5
_VALUES_PER_BLOCK = 4  # float32 values of one Philox block (one counter step)


class DynamicMasker:
  """Masks batches of unmasked records with a `MaskingRecipe`.

  Args:
    recipe: the masking flags and ids the records carry.
    max_seq_length: the records' sequence length.
    max_predictions_per_seq: the most masked positions per sequence: the fixed length of `masked_lm_*`.
    seed: a stateless seed, shape `[2]`, of the run; with the epoch and the example's index it fixes every
      example's masks.
  """

  def __init__(self, recipe: MaskingRecipe, max_seq_length: int, max_predictions_per_seq: int, seed):
    check_max_predictions(max_seq_length, max_predictions_per_seq)
    self.recipe = recipe
    self.max_seq_length = max_seq_length
    self.max_predictions_per_seq = max_predictions_per_seq
    # Upper bounds of sizes 1..ngram-1 on a uniform draw: size = 1 + the bounds at or below it.
    self._size_bounds = tf.constant(recipe.ngram_cumulative_probabilities()[:-1], tf.float32)
    self._blocks_per_example = -(-_NUM_DRAWS * max_seq_length // _VALUES_PER_BLOCK)
    with tf.device("/CPU:0"):
      self._key, _ = tf.raw_ops.StatelessRandomGetKeyCounter(seed=tf.cast(seed, tf.int64))

  def draws(self, epochs: tf.Tensor, indices: tf.Tensor) -> tf.Tensor:
    """`[batch, 5, max_seq_length]` uniform numbers in [0, 1) of the examples at `indices` of `epochs`."""
    batch_size = tf.shape(indices)[0]

    def consecutive(epoch, first_index, count):
      """The numbers of `count` examples from `first_index` on in `epoch`: contiguous counters."""
      counter = tf.stack([tf.cast(first_index, tf.uint64) * self._blocks_per_example, tf.cast(epoch, tf.uint64)])
      values = tf.raw_ops.StatelessRandomUniformV2(
          shape=[count * self._blocks_per_example * _VALUES_PER_BLOCK], key=self._key, counter=counter,
          alg=tf.random.Algorithm.PHILOX.value)
      values = tf.reshape(values, [count, -1])[:, :_NUM_DRAWS * self.max_seq_length]
      return tf.reshape(values, [count, _NUM_DRAWS, self.max_seq_length])

    in_order = (tf.reduce_all(tf.equal(epochs, epochs[0]))
                & tf.reduce_all(tf.equal(indices, indices[0] + tf.range(batch_size, dtype=indices.dtype))))
    # A batch across the end of an epoch takes its numbers example by example.
    return tf.cond(in_order, lambda: consecutive(epochs[0], indices[0], batch_size),
                   lambda: tf.map_fn(lambda example: consecutive(example[0], example[1], 1)[0], (epochs, indices),
                                     fn_output_signature=tf.float32))

  def __call__(self, input_ids: tf.Tensor, input_mask: tf.Tensor, token_boundary: tf.Tensor, epochs: tf.Tensor,
               indices: tf.Tensor):
    """Masks a batch.

    Args:
      input_ids, input_mask, token_boundary: int32 `[batch, max_seq_length]`, unmasked.
      epochs, indices: int64 `[batch]`: each example's epoch and index in the epoch.

    Returns:
      (masked `input_ids`, `masked_lm_positions`, `masked_lm_ids` int32 and `masked_lm_weights` float32
      `[batch, max_predictions_per_seq]`), positions ascending, unused slots 0 as in Google's records.
    """
    draws = self.draws(epochs, indices)
    draws.set_shape([input_ids.shape[0], _NUM_DRAWS, self.max_seq_length])  # lost in draws' tf.cond
    recipe, length = self.recipe, self.max_seq_length
    candidate = ((input_mask > 0) & tf.not_equal(input_ids, recipe.cls_id) & tf.not_equal(input_ids, recipe.sep_id))
    candidate_count = tf.cast(candidate, tf.int32)
    starts = candidate
    if recipe.do_whole_word_mask:
      # A continuation piece starts a word only when no candidate precedes it (Google: an empty word list).
      first = tf.math.cumsum(candidate_count, axis=1, exclusive=True) == 0
      starts = candidate & ((token_boundary > 0) | first)
    word_of = tf.math.cumsum(tf.cast(starts, tf.int32), axis=1) - 1  # the word each candidate belongs to
    num_words = tf.reduce_sum(tf.cast(starts, tf.int32), axis=1)
    word_prefix = self._word_token_prefix(candidate, word_of)

    batch_size = tf.shape(input_ids)[0]
    word_index = tf.range(length)[tf.newaxis]
    keys = tf.where(word_index < num_words[:, tf.newaxis], draws[:, _WORD_ORDER], 2.0)
    order = tf.argsort(keys, axis=1, stable=True)  # the words in visiting order, then the unused slots
    sizes_drawn = 1 + tf.reduce_sum(
        tf.cast(draws[:, _NGRAM_SIZE, :, tf.newaxis] >= self._size_bounds, tf.int32), axis=2)
    budget = self._budget(tf.reduce_sum(input_mask, axis=1))

    sizes = tf.range(1, recipe.ngram + 1)[tf.newaxis]

    def visit(step, taken, chosen):
      start = order[:, step]
      ends = tf.minimum(start[:, tf.newaxis] + sizes, num_words[:, tf.newaxis])
      tokens = (tf.gather(word_prefix, ends, batch_dims=1)
                - tf.gather(word_prefix, start[:, tf.newaxis], batch_dims=1))  # [batch, ngram]
      # Sizes up to the drawn one whose tokens fit the budget left: a prefix, so its length is the size kept
      # (Google shrinks the drawn size until it fits).
      fits = (sizes <= tf.gather(sizes_drawn, step, axis=1)[:, tf.newaxis]) & (
          tokens <= (budget - chosen)[:, tf.newaxis])
      size = tf.reduce_sum(tf.cast(fits, tf.int32), axis=1)
      span = ((word_index >= start[:, tf.newaxis]) & (word_index < (start + size)[:, tf.newaxis])
              & (word_index < num_words[:, tf.newaxis]))
      accepted = (step < num_words) & (size > 0) & ~tf.reduce_any(span & taken, axis=1)
      taken = taken | (span & accepted[:, tf.newaxis])
      chosen += tf.where(accepted, tf.gather(tokens, tf.maximum(size - 1, 0), batch_dims=1), 0)
      return step + 1, taken, chosen

    def unfinished(step, taken, chosen):
      del taken
      return tf.reduce_any((step < num_words) & (chosen < budget))

    _, taken, _ = tf.while_loop(
        unfinished, visit, (tf.constant(0), tf.zeros([batch_size, length], tf.bool), tf.zeros([batch_size], tf.int32)),
        maximum_iterations=length)
    masked = candidate & tf.gather(taken, tf.maximum(word_of, 0), batch_dims=1)
    return (self._replace(input_ids, masked, draws),) + self._labels(input_ids, masked)

  def _word_token_prefix(self, candidate, word_of):
    """`[batch, max_seq_length + 1]`: the candidate tokens of the words before word w, at w."""
    length = self.max_seq_length
    rows = tf.range(tf.shape(word_of)[0])[:, tf.newaxis] * length
    # Non-candidates go to one extra segment, dropped.
    segments = tf.where(candidate, rows + word_of, tf.size(word_of))
    word_tokens = tf.math.unsorted_segment_sum(tf.ones([tf.size(word_of)], tf.int32), tf.reshape(segments, [-1]),
                                               tf.size(word_of) + 1)[:-1]
    word_tokens = tf.reshape(word_tokens, tf.shape(word_of))
    return tf.pad(tf.math.cumsum(word_tokens, axis=1), [[0, 0], [1, 0]])

  def _budget(self, lengths):
    """Google's num_to_predict of each sequence, in float64 as Python computes it."""
    if self.recipe.masked_lm_prob == 0:
      return tf.zeros_like(lengths)
    wanted = tf.cast(tf.round(tf.cast(lengths, tf.float64) * self.recipe.masked_lm_prob), tf.int32)
    return tf.minimum(self.max_predictions_per_seq, tf.maximum(1, wanted))

  def _replace(self, input_ids, masked, draws):
    """80% [MASK], 10% kept, 10% a random id, per masked token."""
    recipe = self.recipe
    random_ids = tf.minimum(tf.cast(draws[:, _RANDOM_ID] * recipe.vocab_size, tf.int32), recipe.vocab_size - 1)
    kept_or_random = tf.where(draws[:, _KEEP_OR_RANDOM] < 0.5, input_ids, random_ids)
    replacement = tf.where(draws[:, _MASK_TOKEN] < 0.8, recipe.mask_id, kept_or_random)
    return tf.where(masked, replacement, input_ids)

  def _labels(self, input_ids, masked):
    """The masked positions in ascending order, their original ids and weights, padded with zeros."""
    length, slots = self.max_seq_length, self.max_predictions_per_seq
    position = tf.range(length)[tf.newaxis]
    first_masked = tf.argsort(tf.where(masked, position, position + length), axis=1, stable=True)[:, :slots]
    used = tf.range(slots)[tf.newaxis] < tf.reduce_sum(tf.cast(masked, tf.int32), axis=1, keepdims=True)
    positions = tf.where(used, first_masked, 0)
    ids = tf.where(used, tf.gather(input_ids, positions, batch_dims=1), 0)
    return positions, ids, tf.cast(used, tf.float32)
