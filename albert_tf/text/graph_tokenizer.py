"""`SentencePieceTokenizer` inside the TensorFlow graph, for SavedModels that take raw text.

Every step of the Python tokenizer has a graph twin here, so an exported model gives the ids that
training saw: `[CLS]`/`[SEP]`/`[MASK]` written in the text are split out first, each chunk gets Google's
`preprocess_text` (whitespace collapsed exactly as `str.split()` does, quotes, accents, lower-casing), and
`tensorflow_text`'s SentencePiece op segments it with the model from `google_segmentation_model`, whose
lattice already excludes the "<digit>," pieces that Google's `encode_pieces` splits.

A process that loads the SavedModel must `import tensorflow_text` first: it registers the SentencePiece op.
"""

from typing import Optional

import tensorflow as tf
import tensorflow_text as tf_text

from albert_tf.errors import DataError
from albert_tf.text.tokenizer import DIACRITICAL_MARKS, SentencePieceTokenizer, google_segmentation_model

# The characters `str.split()` splits on (str.isspace()). RE2's `\s` is ASCII only. The pattern holds the
# characters themselves, which both RE2 and Python's `re` read.
PYTHON_WHITESPACE = ("[\t\n\x0b\x0c\r\x1c-\x1f \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f"
                     "\u3000]")
_SPECIAL_TOKENS_IN_TEXT = r"\[CLS\]|\[SEP\]|\[MASK\]"


class GraphTokenizer(tf.Module):
  """Text to ALBERT ids and packed model inputs, as graph ops.

  Args:
    spm_model_file: the SentencePiece model (embedded in the graph; the file is not needed afterwards).
    do_lower_case, keep_accents: as for `SentencePieceTokenizer`, whose ids this reproduces.
  """

  def __init__(self, spm_model_file: str, do_lower_case: bool = True, keep_accents: bool = False,
               name: str = "graph_tokenizer"):
    super().__init__(name=name)
    python_tokenizer = SentencePieceTokenizer(spm_model_file, do_lower_case, keep_accents)
    self.do_lower_case = do_lower_case
    self.keep_accents = keep_accents
    self.vocab_size = python_tokenizer.vocab_size
    self.cls_id = python_tokenizer.cls_id
    self.sep_id = python_tokenizer.sep_id
    self.mask_id = python_tokenizer.mask_id
    self.pad_id = python_tokenizer.pad_id
    self.unk_id = python_tokenizer.unk_id
    self._special_ids = {"[CLS]": self.cls_id, "[SEP]": self.sep_id, "[MASK]": self.mask_id}
    self._sentencepiece = tf_text.SentencepieceTokenizer(
        model=google_segmentation_model(spm_model_file).SerializeToString(), out_type=tf.int32)
    self.vocabulary = tf.constant(python_tokenizer.convert_ids_to_tokens(range(self.vocab_size)))

  def preprocess(self, text: tf.Tensor) -> tf.Tensor:
    """Google's `preprocess_text` on a string tensor of any shape."""
    text = tf.strings.regex_replace(text, f"{PYTHON_WHITESPACE}+", " ")
    text = tf.strings.regex_replace(text, "^ | $", "")
    text = tf.strings.regex_replace(text, "``|''", '"')
    if not self.keep_accents:
      text = tf_text.normalize_utf8(text, "NFKD")
      text = tf.strings.regex_replace(text, DIACRITICAL_MARKS, "")
      text = tf_text.normalize_utf8(text, "NFC")
    if self.do_lower_case:
      text = tf.strings.lower(text, encoding="utf-8")
    return text

  def encode(self, text: tf.Tensor) -> tf.RaggedTensor:
    """Ids of each string of a `[batch]` tensor, `[batch, (ids)]`, without `[CLS]`/`[SEP]` around them.

    As `SentencePieceTokenizer.encode`: `[CLS]`, `[SEP]` and `[MASK]` written in the text are their ids.
    """
    chunks = tf_text.regex_split(text, _SPECIAL_TOKENS_IN_TEXT, _SPECIAL_TOKENS_IN_TEXT)
    flat_chunks = chunks.flat_values
    special_id = tf.fill(tf.shape(flat_chunks), -1)
    for token, token_id in self._special_ids.items():
      special_id = tf.where(tf.equal(flat_chunks, token), token_id, special_id)
    is_special = special_id >= 0
    text_ids = self.encode_plain(tf.where(is_special, "", flat_chunks))
    special_ids = tf.RaggedTensor.from_row_lengths(tf.boolean_mask(special_id, is_special),
                                                   tf.cast(is_special, tf.int64))
    chunk_ids = tf.concat([text_ids, special_ids], axis=1)
    return chunks.with_flat_values(chunk_ids).merge_dims(1, 2)

  def encode_plain(self, text: tf.Tensor) -> tf.RaggedTensor:
    """Ids of each string of a `[batch]` tensor as plain text, `[batch, (ids)]`: `[CLS]` written in it is text
    (`SentencePieceTokenizer.encode(text, special_tokens_in_text=False)`)."""
    return tf.cast(self._sentencepiece.tokenize(self.preprocess(text)), tf.int32)

  def encode_with_offsets(self, text: tf.Tensor):
    """Ids of each string of a `[batch]` tensor, with each piece's byte span in the string as given.

    Whitespace-separated words are tokenized one by one: SentencePiece never joins pieces across
    whitespace, so the ids are those of `encode` (without its `[CLS]`/`[SEP]`/`[MASK]` handling: the text
    is plain text). Where preprocessing keeps a word's number of characters (lower-casing, accents stripped
    from precomposed letters, Hangul), a piece's span is exact: its characters are the word's characters at
    the same places. Where it does not (a decomposed accent), every piece of the word spans the word.

    Returns:
      `ids` int32, `begin` and `end` int64 byte offsets (end exclusive), each `[batch, (pieces)]`.
    """
    words, word_begin, _ = tf_text.regex_split_with_offsets(text, f"{PYTHON_WHITESPACE}+")
    original = words.flat_values
    preprocessed = self.preprocess(original)
    piece_ids, piece_begin, piece_end = self._sentencepiece.tokenize_with_offsets(preprocessed)
    _, preprocessed_chars = tf.strings.unicode_decode_with_offsets(preprocessed, "UTF-8")
    _, original_chars = tf.strings.unicode_decode_with_offsets(original, "UTF-8")
    original_length = tf.cast(tf.strings.length(original), tf.int64)
    # On flat values, with the word of each piece (`rows`): ragged batch ops build graphs many times larger,
    # whose tracing dominated the export of every text signature that reads offsets.
    rows = piece_ids.value_rowids()
    # A piece's byte offset in its preprocessed word -> the index of the character there, found by one search
    # over every word's character starts, keyed by word (word * stride + byte sorts word by word).
    stride = tf.cast(tf.reduce_max(tf.concat([tf.strings.length(preprocessed), [0]], axis=0)), tf.int64) + 1
    char_keys = preprocessed_chars.value_rowids() * stride + preprocessed_chars.flat_values
    first_char = tf.gather(preprocessed_chars.row_starts(), rows)
    original_count = tf.gather(original_chars.row_lengths(), rows)
    original_first = tf.gather(original_chars.row_starts(), rows)
    word_start = tf.gather(tf.cast(word_begin.flat_values, tf.int64), rows)
    word_end = word_start + tf.gather(original_length, rows)
    same_chars = tf.equal(tf.gather(preprocessed_chars.row_lengths(), rows), original_count)

    def to_original(offsets: tf.Tensor) -> tf.Tensor:
      """Byte offsets in the preprocessed words -> byte offsets in the string as given (same character)."""
      found = tf.searchsorted(char_keys[tf.newaxis], (rows * stride + offsets)[tf.newaxis], side="left",
                              out_type=tf.int64)[0]
      char_index = tf.minimum(found - first_char, original_count)
      in_word = char_index < original_count  # else the word's end
      char_start = tf.gather(original_chars.flat_values, tf.where(in_word, original_first + char_index, 0))
      return tf.where(in_word, word_start + char_start, word_end)

    begin = tf.where(same_chars, to_original(piece_begin.flat_values), word_start)
    end = tf.where(same_chars, to_original(piece_end.flat_values), word_end)
    return tuple(words.with_flat_values(piece_ids.with_flat_values(values)).merge_dims(1, 2)
                 for values in (tf.cast(piece_ids.flat_values, tf.int32), begin, end))

  def pack(self, ids_a: tf.RaggedTensor, ids_b: tf.RaggedTensor, max_seq_length,
           pad_to_multiple_of: Optional[int] = None):
    """`[CLS] a [SEP] b [SEP]` (or `[CLS] a [SEP]` where b is empty), padded to `max_seq_length` or shorter.

    `max_seq_length` is a Python int or a scalar int32 tensor (as TF Hub's `bert_pack_inputs(..., seq_length)`
    passes it). Pairs that are too long for it are cut as Google's `_truncate_seq_pair` cuts them: tokens come off
    the end of the longer segment (b on a tie) until the pair fits.

    Args:
      pad_to_multiple_of: None pads every row to `max_seq_length` (a static width when it is an int: what TPUs
        and fixed-shape servers need); k pads the batch only to its longest packed row rounded up to a multiple
        of k (at most `max_seq_length`), so a short text does not pay for `max_seq_length` positions, and the
        widths a server sees are few. Padding changes no output at the real positions.

    Returns:
      `input_word_ids`, `input_mask`, `input_type_ids`: int32 `[batch, width]`.
    """
    length_a = tf.cast(ids_a.row_lengths(), tf.int32)
    length_b = tf.cast(ids_b.row_lengths(), tf.int32)
    has_b = length_b > 0
    budget = max_seq_length - tf.where(has_b, 3, 2)
    # Closed form of the pop-from-the-longer loop: a keeps ceil(budget/2) unless b is shorter than that.
    keep_a = tf.minimum(length_a, tf.maximum((budget + 1) // 2, budget - length_b))
    keep_b = tf.minimum(length_b, budget - keep_a)
    end_a = (keep_a + 1)[:, tf.newaxis]  # the position of a's [SEP]
    end_b = end_a + 1 + keep_b[:, tf.newaxis]  # the position of b's [SEP], when there is a b
    has_b = has_b[:, tf.newaxis]
    length = tf.where(has_b, end_b, end_a) + 1

    if pad_to_multiple_of is None:
      width = max_seq_length
    else:
      longest = tf.reduce_max(tf.concat([length[:, 0], [1]], axis=0))  # 1: an empty batch still has a width
      width = tf.minimum(max_seq_length, -(-longest // pad_to_multiple_of) * pad_to_multiple_of)
    # Dense ops only (a few dozen, where ragged concatenation takes a thousand): each position reads from
    # the segment it falls in. Rows of a and b longer than the sequence are cut by `to_tensor` first.
    shape = [None, width] if isinstance(width, int) else tf.stack([-1, width])
    dense_a = ids_a.to_tensor(self.pad_id, shape=shape)
    dense_b = ids_b.to_tensor(self.pad_id, shape=shape)
    positions = tf.range(width)[tf.newaxis, :]
    index_a = tf.broadcast_to(tf.clip_by_value(positions - 1, 0, width - 1), tf.shape(dense_a))
    from_a = tf.gather(dense_a, index_a, batch_dims=1)
    from_b = tf.gather(dense_b, tf.clip_by_value(positions - end_a - 1, 0, width - 1), batch_dims=1)
    in_a = (positions >= 1) & (positions < end_a)
    in_b = has_b & (positions > end_a) & (positions < end_b)
    is_sep = (positions == end_a) | (has_b & (positions == end_b))
    word_ids = tf.where(in_a, from_a, tf.where(in_b, from_b, tf.where(is_sep, self.sep_id, self.pad_id)))
    word_ids = tf.where(positions == 0, self.cls_id, word_ids)
    input_mask = positions < length
    return {
        "input_word_ids": word_ids,
        "input_mask": tf.cast(input_mask, tf.int32),
        "input_type_ids": tf.cast(input_mask & (positions > end_a), tf.int32),
    }

  def encode_and_pack(self, text_a: tf.Tensor, text_b: tf.Tensor = None, max_seq_length: int = 128,
                      pad_to_multiple_of: Optional[int] = None):
    """`pack` of the encoded texts; `text_b` None (or empty strings) means single segments."""
    ids_a = self.encode(text_a)
    ids_b = self.encode(text_b) if text_b is not None else ids_a[:, :0]
    return self.pack(ids_a, ids_b, max_seq_length, pad_to_multiple_of)


def tokenizer_for_model(config, spm_model_file: str, do_lower_case: bool = True,
                        keep_accents: bool = False) -> GraphTokenizer:
  """The `GraphTokenizer` of a model, refused when its vocabulary is not the model's (another size).

  Raises:
    FileNotFoundError: no SentencePiece model; ValueError: it is not the model's vocabulary.
  """
  tokenizer = GraphTokenizer(spm_model_file, do_lower_case, keep_accents)
  if tokenizer.vocab_size != config.vocab_size:
    raise DataError(f"The SentencePiece model {spm_model_file} has {tokenizer.vocab_size} pieces but the "
                     f"model's vocab_size is {config.vocab_size}: it is not the model's vocabulary.")
  return tokenizer
