"""Trees from arc scores: the highest-scoring dependency tree with one word under the root, in NumPy.

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
"""

from typing import List, Sequence

import numpy as np


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
