"""The parser's inputs: each sentence as `[CLS] pieces of its words [SEP]`, where each word's pieces start and
end, the ids of its tags, and its gold tree, padded to a fixed number of words (static shapes for TPUs).

Pieces: each word (a KLUE eojeol, a CoNLL-U word) is tokenized alone with the model's
`SentencePieceTokenizer`. SentencePiece splits a text at its spaces first, so these are the sentence's pieces,
word by word. A word whose tokenization is empty (nothing left once preprocessed) gets one `<unk>` piece:
every word has a position. A word's first piece is its first that is not the bare word-boundary piece "▁"
(SentencePiece writes one before a character that starts no piece of its own, as a quote or a rare letter):
its vector says more of the word. Special tokens written in a word stay text.

Tags: the KLUE baseline embeds each word's part-of-speech. A word here has two tag ids, those of its first and
last morpheme tags ("NNG+JKS": the noun, then the particle that marks its role), from a vocabulary of the
train split's morpheme tags (`tag_vocabulary`, recorded in the run's task.json). The whole "+"-joined string
would be a class of its own for each of KLUE's 1,000 combinations, most of them rare; the first and last tags
are the content and the ending that mark a word's function. Id 0 pads, id 1 is a tag the train split lacks.

Truncation: a sentence keeps its words in order while their pieces fit `max_seq_length` with [CLS] and [SEP]
and they are at most `max_words`; the words after the first that does not fit are cut (a first word longer
than the whole sequence keeps its first pieces, so that every sentence has a word). A cut word has no input
and no gold arc; a kept word whose gold head was cut keeps its gold relation but no gold arc (its head is
outside the input): neither counts in the loss.
"""

import dataclasses
from typing import Dict, List, Sequence, Tuple

import numpy as np

from albert_tf.errors import OptionError
from albert_tf.tasks.dependency_parsing.data import ParseExample
from albert_tf.text.tokenizer import SentencePieceTokenizer

PAD_TAG_ID = 0
UNKNOWN_TAG_ID = 1
FIRST_TAG_ID = 2
# A head or relation the loss does not read: padding, a head outside the input, a relation without an id.
NOT_SCORED = -1
WORD_START = "\u2581"  # SentencePiece's word-boundary piece


def morpheme_tags(pos: str) -> Tuple[str, str]:
  """A word's first and last morpheme tags ("NNG+JKS" -> ("NNG", "JKS"); "NNG" -> ("NNG", "NNG"))."""
  tags = pos.split("+")
  return tags[0], tags[-1]


def tag_vocabulary(examples: Sequence[ParseExample]) -> List[str]:
  """The morpheme tags of `examples` (first and last of each word), sorted: tag i has id
  `FIRST_TAG_ID + i`."""
  return sorted({tag for example in examples for pos in example.pos_tags for tag in morpheme_tags(pos)})


@dataclasses.dataclass(frozen=True)
class ParseFeatures:
  """The inputs and gold trees of sentences, a row per sentence, words padded to `max_words`.

  Attributes:
    piece_ids: per sentence, the ids of `[CLS] pieces [SEP]`, unpadded.
    first_piece_index, last_piece_index: int32 `[sentences, max_words]`, each word's first and last piece
      positions in its sequence (0, [CLS]'s, for padding).
    word_mask: int32 `[sentences, max_words]`, 1 for a kept word.
    pos_ids: int32 `[sentences, max_words, 2]`, the ids of each word's first and last morpheme tags.
    heads: int32 `[sentences, max_words]`, each kept word's gold head, `NOT_SCORED` where the gold arc is not
      in the input (padding, a head that was cut).
    relation_ids: int32 `[sentences, max_words]`, each kept word's gold relation id, `NOT_SCORED` for padding
      and a relation without an id (one that the label list lacks).
    kept_words: int64 `[sentences]`, how many words of each sentence the input holds.
  """

  piece_ids: List[List[int]]
  first_piece_index: np.ndarray
  last_piece_index: np.ndarray
  word_mask: np.ndarray
  pos_ids: np.ndarray
  heads: np.ndarray
  relation_ids: np.ndarray
  kept_words: np.ndarray

  def word_inputs(self) -> Dict[str, np.ndarray]:
    """The model's word inputs by name."""
    return {"first_piece_index": self.first_piece_index, "last_piece_index": self.last_piece_index,
            "word_mask": self.word_mask, "pos_ids": self.pos_ids}


def _word_pieces(tokenizer: SentencePieceTokenizer, word: str) -> List[int]:
  return tokenizer.encode(word, special_tokens_in_text=False) or [tokenizer.unk_id]


def parse_features(examples: Sequence[ParseExample], tokenizer: SentencePieceTokenizer, max_seq_length: int,
                   max_words: int, label_list: Sequence[str], tags: Sequence[str]) -> ParseFeatures:
  """The inputs of `examples`, truncated and padded as the module's docstring says.

  Args:
    examples: the sentences.
    tokenizer: the model's tokenizer.
    max_seq_length: the longest sequence, [CLS] and [SEP] included.
    max_words: the words per sentence the input holds.
    label_list: the relations in id order.
    tags: the tag vocabulary (`tag_vocabulary` of the train split).

  Raises:
    OptionError: `max_seq_length` below 3 or `max_words` below 1.
  """
  if max_seq_length < 3 or max_words < 1:
    raise OptionError(f"A parser's input needs max_seq_length >= 3 and max_words >= 1, not {max_seq_length} "
                      f"and {max_words}.")
  word_start_id = tokenizer.sp_model.PieceToId(WORD_START)
  relation_ids = {label: index for index, label in enumerate(label_list)}
  tag_ids = {tag: index for index, tag in enumerate(tags, FIRST_TAG_ID)}
  shape = (len(examples), max_words)
  first = np.zeros(shape, np.int32)
  last = np.zeros(shape, np.int32)
  pos_ids = np.full(shape + (2,), PAD_TAG_ID, np.int32)
  heads = np.full(shape, NOT_SCORED, np.int32)
  relations = np.full(shape, NOT_SCORED, np.int32)
  kept = np.zeros(len(examples), np.int64)
  piece_ids = []
  for row, example in enumerate(examples):
    ids = [tokenizer.cls_id]
    for index, word in enumerate(example.words[:max_words]):
      pieces = _word_pieces(tokenizer, word)
      room = max_seq_length - 1 - len(ids)  # [SEP] must fit after the word
      if len(pieces) > room:
        if index:
          break
        pieces = pieces[:room]
      skip = 1 if len(pieces) > 1 and pieces[0] == word_start_id else 0
      first[row, index] = len(ids) + skip
      last[row, index] = len(ids) + len(pieces) - 1
      ids.extend(pieces)
      word_tags = morpheme_tags(example.pos_tags[index])
      pos_ids[row, index] = [tag_ids.get(tag, UNKNOWN_TAG_ID) for tag in word_tags]
      relations[row, index] = relation_ids.get(example.deprels[index], NOT_SCORED)
      kept[row] = index + 1
    count = kept[row]
    gold = np.array(example.heads[:count], np.int32)
    heads[row, :count] = np.where(gold <= count, gold, NOT_SCORED)
    piece_ids.append(ids + [tokenizer.sep_id])
  word_mask = (np.arange(max_words)[np.newaxis, :] < kept[:, np.newaxis]).astype(np.int32)
  return ParseFeatures(piece_ids, first, last, word_mask, pos_ids, heads, relations, kept)
