"""ALBERT pretraining instances: sentence-order pairs and n-gram masking, as Google's original.

This module is the algorithm of Google's `create_pretraining_data.py` on token ids, in two steps:
`plan_segment_pairs` cuts a document into chunks of whole sentences and decides each chunk's segments A and B
and its sentence-order label (Google's `create_instances_from_document`), and `finish_instance` truncates a
pair and masks it (`truncate_seq_pair`, then `create_masked_lm_predictions`: n-gram sizes ∝ 1/n,
whole words (`word_boundaries`), 80/10/10 per token, Google's `num_to_predict`). With `dynamic_masking` an instance
is left unmasked and `data.dynamic_masking` masks it in the input pipeline, with the same algorithm.

The split lets segment B come from any document of the corpus without holding the corpus in memory: a plan
names the other document (`RandomSegment`) and the caller reads it, from a file on disk or through a join in
a distributed pipeline. Every random draw comes from the `random.Random` passed in; the plan draws nothing
that depends on the other document's text, so it is the same whenever and wherever that text is read.
Two things differ from Google on purpose, neither visible in the statistics: n-gram sizes are drawn from the
seeded generator (Google uses NumPy's unseeded global one), and the first sentence of a random segment is
drawn as a fraction of the other document's length, since a plan cannot know that length.
"""

import dataclasses
import random
from typing import List, NamedTuple, Optional, Sequence, Tuple

from albert_tf.data import word_boundaries
from albert_tf.errors import OptionError

SINGLE_SEGMENT_POLICIES = ("random_document", "split_sentence", "skip")


def check_max_predictions(max_seq_length: int, max_predictions_per_seq: int):
  """The masked positions a sequence can hold: at least one, at most its length (more are padding in every
  record, offline or dynamic)."""
  if not 1 <= max_predictions_per_seq <= max_seq_length:
    raise OptionError(f"--max_predictions_per_seq must be in [1, --max_seq_length={max_seq_length}], got "
                      f"{max_predictions_per_seq}; masked_lm_prob × max_seq_length is the usual value.")


@dataclasses.dataclass(frozen=True)
class InstanceOptions:
  """The flags of Google's tool that shape instances (same names and defaults).

  Attributes:
    max_seq_length: tokens per instance, including [CLS] and two [SEP].
    max_predictions_per_seq: most masked positions per instance (per masking pass).
    masked_lm_prob: fraction of tokens to mask.
    short_seq_prob: probability of a document using a random shorter target length.
    ngram: longest n-gram masked at once.
    favor_shorter_ngram: n-gram size probabilities ∝ 1/n (else reversed).
    do_whole_word_mask: mask whole words rather than single pieces.
    word_boundaries: what a word is for whole-word and n-gram masking (`word_boundaries.RULES`): Google's
      piece rule, eojeols, or eojeols and morphemes.
    do_permutation: also permute a second set of n-grams (Google's experimental option).
    random_next_sentence: NSP-style negatives (random document) instead of swapped segments.
    single_segment_policy: what a chunk of a single sentence becomes: "random_document" (Google: segment B
      from a random other document, label 1), "split_sentence" (split the sentence at a random token and
      swap with p=0.5), or "skip".
    sentence_order_prediction: swap segments for the sentence-order task; False keeps every pair in its
      original order (for MLM-only pretraining) while drawing the same random numbers, so that everything
      else (lengths, masks) is as with swaps.
    dynamic_masking: leave instances unmasked; training masks them afresh each epoch with this recipe
      (`MaskingRecipe`, written into every record), so `max_predictions_per_seq` is training's to set.
  """

  max_seq_length: int = 512
  max_predictions_per_seq: int = 20
  masked_lm_prob: float = 0.15
  short_seq_prob: float = 0.1
  ngram: int = 3
  favor_shorter_ngram: bool = True
  do_whole_word_mask: bool = True
  do_permutation: bool = False
  random_next_sentence: bool = False
  single_segment_policy: str = "random_document"
  sentence_order_prediction: bool = True
  dynamic_masking: bool = False
  word_boundaries: str = word_boundaries.GOOGLE

  def __post_init__(self):
    if self.max_seq_length < 8:
      raise OptionError(f"--max_seq_length must be at least 8 ([CLS] A [SEP] B [SEP] plus text), "
                       f"got {self.max_seq_length}.")
    check_max_predictions(self.max_seq_length, self.max_predictions_per_seq)
    if not 0.0 <= self.masked_lm_prob < 1.0:
      raise OptionError(f"--masked_lm_prob must be in [0, 1), got {self.masked_lm_prob}.")
    if not 0.0 <= self.short_seq_prob <= 1.0:
      raise OptionError(f"--short_seq_prob must be in [0, 1], got {self.short_seq_prob}.")
    if self.ngram < 1:
      raise OptionError(f"--ngram must be at least 1, got {self.ngram}.")
    if self.single_segment_policy not in SINGLE_SEGMENT_POLICIES:
      raise OptionError(f"--single_segment_policy must be one of {', '.join(SINGLE_SEGMENT_POLICIES)}, "
                       f"got {self.single_segment_policy!r}.")
    word_boundaries.check_rule(self.word_boundaries)
    if self.dynamic_masking and self.do_permutation:
      raise OptionError("--do_permutation cannot go with --dynamic_masking: the permuted second set of n-grams is "
                        "Google's experimental offline option, which training's masking does not reproduce. Write "
                        "masked records (--nodynamic_masking) for it.")

  @property
  def num_label_slots(self) -> int:
    """Length of the masked_lm_* features: doubled by `do_permutation`, as in Google's files; none when
    training masks."""
    if self.dynamic_masking:
      return 0
    return self.max_predictions_per_seq * (2 if self.do_permutation else 1)

  def ngram_cumulative_probabilities(self) -> List[float]:
    return ngram_cumulative_probabilities(self.ngram, self.favor_shorter_ngram)

  def masking_recipe(self, vocab: "Vocabulary") -> "MaskingRecipe":
    """The recipe of these flags with `vocab`'s ids: what `--dynamic_masking` records carry."""
    return MaskingRecipe(vocab.cls_id, vocab.sep_id, vocab.mask_id, vocab.size, self.masked_lm_prob, self.ngram,
                         self.favor_shorter_ngram, self.do_whole_word_mask)


# The feature of unmasked records that holds their `MaskingRecipe`, and the scale of its masked_lm_prob.
MASKING_RECIPE_FEATURE = "masking_recipe"
MASKING_RECIPE_VALUES = 8
_PROBABILITY_SCALE = 1_000_000


@dataclasses.dataclass(frozen=True)
class MaskingRecipe:
  """How training masks unmasked (`--dynamic_masking`) records: the data tool's masking flags and the ids
  masking needs. Every such record carries it as the int64 feature `masking_recipe`, so that files say
  which kind they are and how to mask them (about 30 bytes a record).
  """

  cls_id: int
  sep_id: int
  mask_id: int
  vocab_size: int  # random replacements are drawn from [0, vocab_size), as Google's are
  masked_lm_prob: float
  ngram: int
  favor_shorter_ngram: bool
  do_whole_word_mask: bool

  def to_values(self) -> List[int]:
    return [self.cls_id, self.sep_id, self.mask_id, self.vocab_size,
            round(self.masked_lm_prob * _PROBABILITY_SCALE), self.ngram, int(self.favor_shorter_ngram),
            int(self.do_whole_word_mask)]

  @classmethod
  def from_values(cls, values: Sequence[int]) -> "MaskingRecipe":
    if len(values) != MASKING_RECIPE_VALUES:
      raise ValueError(f"a masking recipe has {MASKING_RECIPE_VALUES} values, got {len(values)}")
    cls_id, sep_id, mask_id, vocab_size, probability, ngram, favor_shorter, whole_word = (int(v) for v in values)
    if not (max(cls_id, sep_id, mask_id) < vocab_size and min(cls_id, sep_id, mask_id) >= 0 and ngram >= 1
            and 0 <= probability < _PROBABILITY_SCALE):
      raise ValueError(f"values out of range: {list(values)}")
    return cls(cls_id, sep_id, mask_id, vocab_size, probability / _PROBABILITY_SCALE, ngram, bool(favor_shorter),
               bool(whole_word))

  def ngram_cumulative_probabilities(self) -> List[float]:
    return ngram_cumulative_probabilities(self.ngram, self.favor_shorter_ngram)


def ngram_cumulative_probabilities(ngram: int, favor_shorter_ngram: bool) -> List[float]:
  """Cumulative probabilities of n-gram sizes 1..ngram: ∝ 1/n, or reversed."""
  weights = [1.0 / n for n in range(1, ngram + 1)]
  if not favor_shorter_ngram:
    weights.reverse()
  total, running, cumulative = sum(weights), 0.0, []
  for weight in weights:
    running += weight / total
    cumulative.append(running)
  return cumulative


class Vocabulary(NamedTuple):
  """What masking needs to know of the SentencePiece vocabulary, by id."""

  size: int
  cls_id: int
  sep_id: int
  mask_id: int
  starts_word: Sequence[bool]  # whether each piece starts a word, under the run's `word_boundaries` rule


class Instance(NamedTuple):
  """One training example before padding."""

  input_ids: List[int]
  segment_ids: List[int]
  token_boundary: List[int]
  masked_lm_positions: List[int]
  masked_lm_ids: List[int]
  sentence_order_label: int  # 1: B before A (swapped) or B from another document


def truncate_seq_pair(tokens_a: List[int], tokens_b: List[int], max_num_tokens: int, rng: random.Random):
  """Trims the longer segment one token at a time, from the front or the back at random, until both fit."""
  while len(tokens_a) + len(tokens_b) > max_num_tokens:
    longer = tokens_a if len(tokens_a) > len(tokens_b) else tokens_b
    if rng.random() < 0.5:
      del longer[0]
    else:
      longer.pop()


class RandomSegment(NamedTuple):
  """Segment B taken from another document: whole sentences from its sentence ⌊start_fraction × its number of
  sentences⌋ on, until they hold `target_length` tokens."""

  document_index: int
  start_fraction: float
  target_length: int


class SegmentPair(NamedTuple):
  """Segments A and B of one instance before truncation and masking."""

  tokens_a: List[int]
  tokens_b: List[int]  # empty while B is a `random_segment` still to be read
  sentence_order_label: int  # 1: B before A (swapped) or B from another document
  random_segment: Optional[RandomSegment] = None


def _sentence_order_pair(chunk: List[List[int]], document_index: int, num_documents: int, target_seq_length: int,
                         options: InstanceOptions, rng: random.Random) -> Tuple[Optional[SegmentPair], int]:
  """Splits a chunk of sentences into segments A and B with the sentence-order label.

  Returns the pair (None when the chunk yields no instance) and the number of the chunk's sentences it leaves
  unused, which go back to the document, as Google does for random-document pairs.
  """
  a_end = rng.randint(1, len(chunk) - 1) if len(chunk) >= 2 else 1
  tokens_a = [token for sentence in chunk[:a_end] for token in sentence]
  single = len(chunk) == 1
  if single and options.single_segment_policy != "random_document" and not options.random_next_sentence:
    if options.single_segment_policy == "skip" or len(tokens_a) < 2:
      return None, 0
    split = rng.randint(1, len(tokens_a) - 1)
    tokens_a, tokens_b = tokens_a[:split], tokens_a[split:]
    if rng.random() < 0.5 and options.sentence_order_prediction:
      return SegmentPair(tokens_b, tokens_a, 1), 0
    return SegmentPair(tokens_a, tokens_b, 0), 0
  if single or (options.random_next_sentence and rng.random() < 0.5):
    # Segment B from another document of the whole corpus; the sentences of this chunk after A go back.
    for _ in range(10):
      random_index = rng.randint(0, num_documents - 1)
      if random_index != document_index:
        break
    segment = RandomSegment(random_index, rng.random(), target_seq_length - len(tokens_a))
    return SegmentPair(tokens_a, [], 1, segment), len(chunk) - a_end
  tokens_b = [token for sentence in chunk[a_end:] for token in sentence]
  if not options.random_next_sentence and rng.random() < 0.5 and options.sentence_order_prediction:
    return SegmentPair(tokens_b, tokens_a, 1), 0  # sentence order swapped
  return SegmentPair(tokens_a, tokens_b, 0), 0


def plan_segment_pairs(document: Sequence[List[int]], document_index: int, num_documents: int,
                       options: InstanceOptions, rng: random.Random) -> List[SegmentPair]:
  """Google's `create_instances_from_document` up to the segments: chunks of whole sentences → (A, B, label).

  Args:
    document: the document's sentences of token ids.
    document_index: its index among the `num_documents` documents random segments are drawn from.
    num_documents: how many documents there are to draw a random segment B from.
    options: the instance flags.
    rng: the source of every random choice.
  """
  max_num_tokens = options.max_seq_length - 3
  target_seq_length = max_num_tokens
  if rng.random() < options.short_seq_prob:
    target_seq_length = rng.randint(2, max_num_tokens)

  pairs = []
  chunk, chunk_length, i = [], 0, 0
  while i < len(document):
    chunk.append(document[i])
    chunk_length += len(document[i])
    if i == len(document) - 1 or chunk_length >= target_seq_length:
      pair, unused_sentences = _sentence_order_pair(chunk, document_index, num_documents, target_seq_length,
                                                    options, rng)
      if pair is not None:
        pairs.append(pair)
        i -= unused_sentences
      chunk, chunk_length = [], 0
    i += 1
  return pairs


def random_segment_tokens(document: Sequence[List[int]], segment: RandomSegment) -> List[int]:
  """The tokens of `segment`, read from its document (Google's loop over the random document's sentences)."""
  tokens = []
  for sentence in document[int(segment.start_fraction * len(document)):]:
    tokens.extend(sentence)
    if len(tokens) >= segment.target_length:
      break
  return tokens


def finish_instance(tokens_a: List[int], tokens_b: List[int], sentence_order_label: int, options: InstanceOptions,
                    vocab: Vocabulary, rng: random.Random) -> Optional[Instance]:
  """Truncates the pair to `max_seq_length - 3` tokens, lays it out as `[CLS] A [SEP] B [SEP]` and masks it.

  Returns None when truncation leaves a segment empty.
  """
  tokens_a, tokens_b = list(tokens_a), list(tokens_b)
  truncate_seq_pair(tokens_a, tokens_b, options.max_seq_length - 3, rng)
  if not tokens_a or not tokens_b:
    return None
  tokens = [vocab.cls_id] + tokens_a + [vocab.sep_id] + tokens_b + [vocab.sep_id]
  segment_ids = [0] * (len(tokens_a) + 2) + [1] * (len(tokens_b) + 1)
  return create_masked_lm_predictions(tokens, segment_ids, sentence_order_label, options, vocab, rng)


def _word_groups(tokens: List[int], marked: Sequence[bool], options: InstanceOptions, vocab: Vocabulary):
  """Candidate words (lists of positions) and the token_boundary feature, skipping [CLS]/[SEP]; a `marked` position
  starts a morpheme (`word_boundaries.split_marks`)."""
  words, boundary = [], [0] * len(tokens)
  is_start, specials, whole_words = vocab.starts_word, (vocab.cls_id, vocab.sep_id), options.do_whole_word_mask
  for position, token in enumerate(tokens):
    if token in specials:
      boundary[position] = 1
    elif is_start[token] or marked[position]:
      words.append([position])
      boundary[position] = 1
    elif whole_words and words:
      words[-1].append(position)  # a continuation piece joins the previous word, as in Google's code
    else:
      words.append([position])
  return words, boundary


def _select_ngrams(words: List[List[int]], budget: int, covered: set, cumulative: List[float],
                   rng: random.Random) -> List[int]:
  """Picks whole-word n-grams in random order until `budget` positions are chosen (Google's loop).

  For each word start, in a random order, an n-gram size is drawn with probabilities ∝ 1/n; sizes that
  would overshoot the budget fall back to shorter n-grams, and n-grams touching a covered position are
  skipped. The random order is a lazy Fisher-Yates shuffle: only the prefix that is used gets drawn.
  """
  chosen = []
  order = list(range(len(words)))
  for step in range(len(order)):
    if len(chosen) >= budget:
      break
    swap = rng.randint(step, len(order) - 1)
    order[step], order[swap] = order[swap], order[step]
    start = order[step]
    draw = rng.random()
    n = next((size for size, bound in enumerate(cumulative, 1) if draw < bound), len(cumulative))
    positions = [p for word in words[start:start + n] for p in word]
    while len(chosen) + len(positions) > budget and n > 1:
      n -= 1
      positions = [p for word in words[start:start + n] for p in word]
    if len(chosen) + len(positions) > budget or any(p in covered for p in positions):
      continue
    covered.update(positions)
    chosen.extend(positions)
  return chosen


def create_masked_lm_predictions(tokens: List[int], segment_ids: List[int], sentence_order_label: int,
                                 options: InstanceOptions, vocab: Vocabulary, rng: random.Random) -> Instance:
  """Google's `create_masked_lm_predictions`: n-gram masking with 80% [MASK], 10% kept, 10% random. `tokens` may
  hold morpheme-start marks (`word_boundaries`); the instance holds ids."""
  if options.word_boundaries == word_boundaries.MORPHEME:
    tokens, marked = word_boundaries.split_marks(tokens)
  else:
    marked = [False] * len(tokens)
  words, boundary = _word_groups(tokens, marked, options, vocab)
  output = list(tokens)
  if options.masked_lm_prob == 0 or options.dynamic_masking:
    return Instance(output, segment_ids, boundary, [], [], sentence_order_label)
  num_to_predict = min(options.max_predictions_per_seq,
                       max(1, int(round(len(tokens) * options.masked_lm_prob))))
  cumulative = options.ngram_cumulative_probabilities()
  covered = set()
  masked = _select_ngrams(words, num_to_predict, covered, cumulative, rng)
  for position in masked:
    if rng.random() < 0.8:
      output[position] = vocab.mask_id
    elif rng.random() >= 0.5:  # else: keep the original token
      output[position] = rng.randint(0, vocab.size - 1)
  predictions = [(position, tokens[position]) for position in masked]

  if options.do_permutation:
    # A second, disjoint set of n-grams whose tokens are shuffled among themselves; labels are the tokens
    # that stood there before.
    selected = sorted(_select_ngrams(words, num_to_predict, covered, cumulative, rng))
    sources = list(selected)
    rng.shuffle(sources)
    before = list(output)
    for target, source in zip(selected, sources):
      output[target] = before[source]
    predictions += [(position, before[position]) for position in selected]

  predictions.sort()
  return Instance(output, segment_ids, boundary, [p for p, _ in predictions], [label for _, label in predictions],
                  sentence_order_label)
