"""Trees from arc scores: the highest-scoring dependency tree with one word under the root, by Chu-Liu/Edmonds
in NumPy (any tree) or by Eisner's algorithm in TensorFlow ops (projective trees, in a SavedModel's graph).

Arc scores are a matrix `[n + 1, n + 1]` for a sentence of n words: row = dependent, column = head, index 0
the root (row 0, the root as a dependent, and the diagonal, a word as its own head, are ignored). A tree gives
each word 1..n one head in 0..n, has no cycle, and (as KLUE's and Universal Dependencies' trees) exactly one
word whose head is the root.

`maximum_spanning_tree` is Chu-Liu/Edmonds' maximum spanning arborescence with that single-root constraint.
Unconstrained, the best arborescence may hang several words under the root (Zmigrod, Vieira and Cotterell
2020, "Please Mind the Root", discuss the constraint). It is handled by reweighting: every root arc loses a
penalty larger than the gap between any two trees' scores (n times the spread of the arc scores, plus 1), so a
tree with k root arcs loses k penalties. One Chu-Liu/Edmonds run then first minimises the number of root arcs
(to one: a single-root tree always exists) and among the trees with one root arc returns the best, since they
all lose the same penalty. That is exact (no search over root words) and O(n^3): at most n contractions of
O(n^2) each.

`projective_trees` is Eisner's dynamic program (1996) for the best projective tree (no two arcs cross), with
the single-root constraint, as graph ops over a padded batch: what a SavedModel can run. KLUE-DP's trees are
all projective (the 1,200 dev sentences of ../shared/klue), so for KLUE nothing is lost; Universal
Dependencies treebanks hold some non-projective trees, which only Chu-Liu/Edmonds can give.
"""

from typing import List, Sequence

import numpy as np
import tensorflow as tf


def find_cycle(heads: Sequence[int]) -> List[int]:
  """The words of a cycle of heads, starting at its smallest word and in head order, or [] when every word's
  heads lead to the root.

  Args:
    heads: the head of words 1..n (`heads[i]` is word i + 1's), each in 0..n.
  """
  state = [0] * (len(heads) + 1)  # 0: not seen, 1: on the current path, 2: leads to the root
  state[0] = 2
  for start in range(1, len(heads) + 1):
    path, word = [], start
    while state[word] == 0:
      state[word] = 1
      path.append(word)
      word = int(heads[word - 1])
    if state[word] == 1:  # back on this path: the cycle starts at `word`
      cycle = path[path.index(word):]
      first = cycle.index(min(cycle))
      return cycle[first:] + cycle[:first]
    for seen in path:
      state[seen] = 2
  return []


def is_single_root_tree(heads: Sequence[int]) -> bool:
  """Whether `heads` (of words 1..n, 0 for the root) is a tree: heads in 0..n, no cycle (a word as its own
  head is one), exactly one word under the root."""
  count = len(heads)
  if count == 0 or any(not 0 <= head <= count for head in heads):
    return False
  return sum(1 for head in heads if head == 0) == 1 and not find_cycle(heads)


def _chu_liu_edmonds(scores: np.ndarray) -> np.ndarray:
  """Heads `[m]` (entry 0 unused) of the maximum spanning arborescence from node 0, by Chu-Liu/Edmonds.

  `scores[dependent, head]` is float64 with -inf for the arcs that do not exist (row 0 and the diagonal).
  """
  size = scores.shape[0]
  heads = scores.argmax(axis=1)
  heads[0] = 0
  cycle = find_cycle(heads[1:])
  if not cycle:
    return heads
  # Contract the cycle into one node, the last of the smaller graph; the other nodes keep their order.
  members = np.array(cycle)
  in_cycle = np.zeros(size, bool)
  in_cycle[members] = True
  outside = np.flatnonzero(~in_cycle)
  node = len(outside)
  contracted = np.full((node + 1, node + 1), -np.inf)
  contracted[:node, :node] = scores[np.ix_(outside, outside)]
  # An arc from the cycle to a word outside it leaves from the cycle's word that scores it best.
  leaving = scores[np.ix_(outside, members)]
  contracted[:node, node] = leaving.max(axis=1)
  leaving_from = members[leaving.argmax(axis=1)]
  # An arc into the cycle replaces the cycle's arc into the word it enters: it scores the difference.
  entering = scores[np.ix_(members, outside)] - scores[members, heads[members]][:, np.newaxis]
  contracted[node, :node] = entering.max(axis=0)
  entering_at = members[entering.argmax(axis=0)]
  contracted_heads = _chu_liu_edmonds(contracted)
  # Expand: the cycle keeps its arcs but the one into the word where the chosen arc enters.
  for position, word in enumerate(outside[1:], 1):
    head = contracted_heads[position]
    heads[word] = leaving_from[position] if head == node else outside[head]
  head = contracted_heads[node]
  heads[entering_at[head]] = outside[head]
  return heads


def maximum_spanning_tree(scores: np.ndarray) -> np.ndarray:
  """The highest-scoring tree with exactly one word under the root (see the module's docstring).

  Args:
    scores: `[n + 1, n + 1]` arc scores, row = dependent, column = head, index 0 the root; row 0 and the
      diagonal are not read (they may hold a mask's large negative values). Slice a padded batch's matrix to
      the sentence's n + 1 first: the reweighting's penalty grows with the spread of the scores it sees.

  Returns:
    int64 heads `[n]` of words 1..n, each in 0..n, 0 for the root.

  Raises:
    ValueError: a matrix that is not square, of fewer than 2 rows, or with an arc score that is not finite.
  """
  scores = np.asarray(scores, np.float64)
  if scores.ndim != 2 or scores.shape[0] != scores.shape[1] or scores.shape[0] < 2:
    raise ValueError(f"Arc scores must be a square matrix [n + 1, n + 1] with n >= 1 words, not "
                     f"{scores.shape}.")
  count = scores.shape[0] - 1
  arcs = scores.copy()
  arcs[0] = -np.inf
  np.fill_diagonal(arcs, -np.inf)
  read = arcs[1:][~np.eye(count, count + 1, 1, dtype=bool)]
  if not np.isfinite(read).all():
    raise ValueError("Arc scores must be finite (but the diagonal and row 0, which are not read).")
  penalty = count * float(read.max() - read.min()) + 1.0
  arcs[1:, 0] -= penalty
  return _chu_liu_edmonds(arcs)[1:].astype(np.int64)


def decode_batch(arc_scores: np.ndarray, word_counts: Sequence[int]) -> List[np.ndarray]:
  """`maximum_spanning_tree` of each sentence of a padded batch.

  Args:
    arc_scores: `[batch, N + 1, N + 1]`, as `BiaffineArcScorer` gives them.
    word_counts: each sentence's number of words n (its matrix is the first n + 1 rows and columns).

  Returns:
    Each sentence's heads `[n]`.
  """
  arc_scores = np.asarray(arc_scores)
  return [maximum_spanning_tree(arc_scores[index, :count + 1, :count + 1])
          for index, count in enumerate(word_counts)]


def right_branching_heads(num_words: int) -> np.ndarray:
  """The baseline tree where each word's head is the next word and the last word is the root's child: Korean
  is head-final, so most eojeols depend on a word to their right, often the next."""
  heads = np.arange(2, num_words + 2, dtype=np.int64)
  heads[-1] = 0
  return heads



# The tables of `projective_trees`, by where the span's head is: complete spans headed at their right end (CL)
# or left end (CR), incomplete spans (the arc between the ends) whose right (IL) or left (IR) end is the head.
_CL, _CR, _IL, _IR = 0, 1, 2, 3


def _spans(span: tf.Tensor, tables: tf.Tensor) -> tf.Tensor:
  """The scatter indices `[tables, m, 2]` of the spans `span` `[m]` in each of `tables`."""
  return tf.stack([tf.repeat(tables[:, tf.newaxis], tf.size(span), axis=1),
                   tf.tile(span[tf.newaxis], [tf.size(tables), 1])], axis=-1)


def projective_trees(arc_scores: tf.Tensor, word_counts: tf.Tensor) -> tf.Tensor:
  """The highest-scoring projective tree with exactly one word under the root, per sentence of a padded batch:
  Eisner's algorithm, O(n^3), as TensorFlow ops with no Python control flow on tensors (SavedModel-ready).

  A complete span [i, j] headed at j holds words i..j, all below j (headed at i: all below i). An incomplete
  span [i, j] is the arc between i and j with complete spans below each end between them. Spans grow by width
  over the words 1..n; a tree is the root's arc to a word k with the complete spans [1, k] and [k, n] headed at
  k, which is the single-root constraint. The best split of each span is kept and followed back from the root.

  Args:
    arc_scores: float `[batch, N + 1, N + 1]`, row = dependent, column = head, index 0 the root (row 0, the
      diagonal, and the rows and columns beyond a sentence's words are not read).
    word_counts: int `[batch]`, each sentence's number of words n <= N.

  Returns:
    int32 heads `[batch, N]`: word i's head at column i - 1, 0 for the root; -1 beyond a sentence's words.
  """
  scores = tf.convert_to_tensor(arc_scores)
  word_counts = tf.cast(word_counts, tf.int32)
  batch_size, size = tf.shape(scores)[0], tf.shape(scores)[1]  # size: the N + 1 positions, root included
  # Span (i, j) is row i * size + j of each table, a column per sentence: one gather or scatter serves them all.
  by_arc = tf.transpose(tf.reshape(scores, [batch_size, size * size]))  # row d * size + h: dependent d, head h
  table_shape = tf.stack([4, size * size, batch_size])

  def grow(width, tables, splits):
    """The spans [i, i + width], i = 1..N - width, from the narrower ones."""
    starts = tf.range(1, size - width)
    ends = starts + width
    split = starts[:, tf.newaxis] + tf.range(width)[tf.newaxis, :]  # k = i..j-1, [spans, width]
    span = starts * size + ends
    # The arc between i and j over complete [i, k] headed at i and [k + 1, j] headed at j.
    inside = (tf.gather(tables[_CR], starts[:, tf.newaxis] * size + split) +
              tf.gather(tables[_CL], (split + 1) * size + ends[:, tf.newaxis]))
    best_inside = tf.reduce_max(inside, axis=1)
    incomplete = tf.stack([best_inside + tf.gather(by_arc, starts * size + ends),  # j heads i
                           best_inside + tf.gather(by_arc, ends * size + starts)])  # i heads j
    tables = tf.tensor_scatter_nd_update(tables, _spans(span, tf.constant([_IL, _IR])), incomplete)
    # Headed at j: complete [i, k] headed at k, and the arc j -> k with its inside (k = i..j-1).
    right_headed = (tf.gather(tables[_CL], starts[:, tf.newaxis] * size + split) +
                    tf.gather(tables[_IL], split * size + ends[:, tf.newaxis]))
    # Headed at i: the arc i -> k with its inside, and complete [k, j] headed at k (k = i+1..j).
    left_headed = (tf.gather(tables[_IR], starts[:, tf.newaxis] * size + split + 1) +
                   tf.gather(tables[_CR], (split + 1) * size + ends[:, tf.newaxis]))
    complete = tf.stack([tf.reduce_max(right_headed, axis=1), tf.reduce_max(left_headed, axis=1)])
    tables = tf.tensor_scatter_nd_update(tables, _spans(span, tf.constant([_CL, _CR])), complete)
    # Each table's best split word k (the two incomplete tables share theirs, kept in IL's place).
    first = starts[:, tf.newaxis]
    best = tf.stack([tf.argmax(right_headed, axis=1, output_type=tf.int32) + first,
                     tf.argmax(left_headed, axis=1, output_type=tf.int32) + first + 1,
                     tf.argmax(inside, axis=1, output_type=tf.int32) + first])
    splits = tf.tensor_scatter_nd_update(splits, _spans(span, tf.constant([_CL, _CR, _IL])), best)
    return width + 1, tables, splits

  # A word alone is a complete span of score 0 (width 0); every other cell is written before it is read.
  _, tables, splits = tf.while_loop(
      lambda width, tables, splits: (width < size - 1) & (batch_size > 0), grow,  # scatters need a sentence
      (tf.constant(1), tf.zeros(table_shape, scores.dtype), tf.zeros(table_shape, tf.int32)))

  # The root's child k of each sentence: its arc to the root and complete [1, k] and [k, n] headed at k.
  words = tf.broadcast_to(tf.range(1, size)[tf.newaxis, :], tf.stack([batch_size, size - 1]))
  count = word_counts[:, tf.newaxis]
  below_left = tf.gather(tf.transpose(tables[_CL]), size + words, batch_dims=1)
  below_right = tf.gather(tf.transpose(tables[_CR]), words * size + tf.maximum(count, 1), batch_dims=1)
  rooted = tf.gather(tf.transpose(by_arc), words * size, batch_dims=1) + below_left + below_right
  # Position 0 leads, never chosen but where a sentence has no word (and keeps the arg-max of N = 0 defined).
  rooted = tf.concat([tf.fill([batch_size, 1], rooted.dtype.min), tf.where(words <= count, rooted, -np.inf)], 1)
  root_child = tf.argmax(rooted, axis=1, output_type=tf.int32)
  has_words = word_counts > 0
  heads = tf.where(words <= count, 0, -1)
  heads = tf.concat([tf.fill([batch_size, 1], -1), heads], axis=1)  # position 0, the root's, is not a word

  # Follow the splits back: a stack of spans (kind, i, j) per sentence, all sentences popped together.
  capacity = 4 * size + 2  # a tree of n words has fewer than 4n spans to follow
  ones = tf.ones_like(word_counts)
  first_spans = tf.stack([tf.stack([_CL * ones, ones, root_child], axis=1),
                          tf.stack([_CR * ones, root_child, word_counts], axis=1)], axis=1)
  stack = tf.concat([first_spans, tf.zeros(tf.stack([batch_size, capacity - 2, 3]), tf.int32)], axis=1)
  pointer = tf.where(has_words, 2, 0)
  rows = tf.range(batch_size)
  batch_splits = tf.transpose(splits, [2, 0, 1])  # [batch, table, span]

  def follow(stack, pointer, heads):
    active = pointer > 0
    kind, start, end = tf.unstack(tf.gather(stack, tf.maximum(pointer - 1, 0), batch_dims=1), axis=1)
    incomplete = kind >= _IL
    table = tf.where(incomplete, _IL, kind)
    split = tf.gather_nd(batch_splits, tf.stack([rows, table, start * size + end], axis=1))
    writes = active & incomplete
    dependent = tf.where(kind == _IL, start, end)
    heads = tf.tensor_scatter_nd_update(heads, tf.stack([rows, tf.where(writes, dependent, 0)], axis=1),
                                        tf.where(writes, tf.where(kind == _IL, end, start), -1))
    # The two spans a span splits into (a complete span of one word has none).
    first = tf.stack([tf.where(incomplete, _CR, tf.where(kind == _CL, _CL, _IR)), start, split], axis=1)
    second = tf.stack([tf.where(incomplete, _CL, tf.where(kind == _CL, _IL, _CR)),
                       tf.where(incomplete, split + 1, split), end], axis=1)
    splits_into_two = active & (incomplete | (start < end))
    popped = pointer - tf.cast(active, tf.int32)
    for offset, child in ((0, first), (1, second)):
      stack = tf.tensor_scatter_nd_update(stack, tf.stack([rows, popped + offset], axis=1),
                                          tf.where(splits_into_two[:, tf.newaxis], child,
                                                   tf.gather(stack, popped + offset, batch_dims=1)))
    return stack, popped + 2 * tf.cast(splits_into_two, tf.int32), heads

  heads = tf.tensor_scatter_nd_update(heads, tf.stack([rows, tf.where(has_words, root_child, 0)], axis=1),
                                      tf.where(has_words, 0, -1))
  _, _, heads = tf.while_loop(lambda stack, pointer, heads: tf.reduce_any(pointer > 0), follow,
                              (stack, pointer, heads))
  return heads[:, 1:]
