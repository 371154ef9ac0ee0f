"""A fine-tuned dependency parser's SavedModel: `parse_text` takes raw text and returns its words' trees, and
`serving_default` takes the ids `[batch, seq]` and the word inputs `[batch, W]` (`features.parse_features`
builds them); beside the encoder's signatures.

Both decode each sentence's best projective tree with one word under the root (`decoding.projective_trees`, in
the graph) and take each word's best relation at its head: the trees of the tool's KLUE-DP predictions. A
CoNLL-U run's predictions are Chu-Liu/Edmonds' trees, which differ on the non-projective ones.

`parse_text` splits a text at whitespace into words (eojeols) and tokenizes each alone, cutting words as
`features.parse_features` does (after the run's `max_words` or once the pieces fill `max_seq_length`). A parser
trained with tag features (`--pos_embedding_size` > 0) also takes each word's tags, as KLUE-DP's POS column
writes them ("NNG+JKS"), one string per word separated by spaces; a parser trained without them reads the text
alone.
"""

import dataclasses
from typing import Optional, Tuple

import tensorflow as tf
import tensorflow_text as tf_text

from albert_tf.modeling import checkpoints as checkpoint_lib
from albert_tf.serving.saved_model import IDS, AlbertServingModule, TextPacking
from albert_tf.serving.tracing import graph_function
from albert_tf.tasks.dependency_parsing import data
from albert_tf.tasks.dependency_parsing.decoding import projective_trees
from albert_tf.tasks.dependency_parsing.features import FIRST_TAG_ID, PAD_TAG_ID, UNKNOWN_TAG_ID, WORD_START
from albert_tf.tasks.dependency_parsing.model import AlbertDependencyParser
from albert_tf.text.graph_tokenizer import PYTHON_WHITESPACE, GraphTokenizer

_POS_IDS = tf.TensorSpec([None, None, 2], tf.int32)
_TEXT = tf.TensorSpec([None], tf.string)
_POS_TEXT = tf.TensorSpec([None], tf.string, name="pos")


@dataclasses.dataclass(frozen=True)
class ParsingOptions:
  """What `parse_text` needs besides the model, from the run's task.json.

  Attributes:
    tags: the tag vocabulary in id order (tag i has id `features.FIRST_TAG_ID + i`).
    max_words: the words of a text the parser reads; the others are cut, as in training.
  """

  tags: Tuple[str, ...] = ()
  max_words: int = 64


def run_serving_options(checkpoint_prefix: str) -> Optional[ParsingOptions]:
  """`task_heads.TaskHead.serving_options_of_run`: the tags and word limit of the run that wrote the checkpoint
  (None for a checkpoint without a parser run's task.json)."""
  info = checkpoint_lib.read_task_info(checkpoint_prefix)
  if info.get("task") != data.TASK_NAME:
    return None
  return ParsingOptions(tuple(info.get("pos_tags") or ()), int(info.get("max_words", ParsingOptions.max_words)))


class AlbertDependencyParserServingModule(AlbertServingModule):
  """A fine-tuned `AlbertDependencyParser` whose `parse_text` parses raw text and whose `serving_default`
  parses packed inputs, plus the encoder's signatures.

  Args:
    model: a restored `AlbertDependencyParser`.
    tokenizer, packing, asset_files: as for `AlbertServingModule`.
    options: the run's tags and word limit (`ParsingOptions`).
  """

  def __init__(self, model: AlbertDependencyParser, tokenizer: GraphTokenizer, packing: TextPacking,
               asset_files: Optional[dict] = None, options: Optional[ParsingOptions] = None):
    super().__init__(model, tokenizer, packing, asset_files=asset_files)
    self._untracked(dependency_parser_head=model.dependency_parser_head)
    self.options = options or ParsingOptions()
    self.label_names = tf.constant(model.label_names)
    pieces = [piece.decode("utf-8") for piece in tokenizer.vocabulary.numpy()]
    self.word_start_id = pieces.index(WORD_START) if WORD_START in pieces else tokenizer.unk_id
    tags = list(self.options.tags) or [""]  # a table needs a key; "" is no tag a reader keeps
    self.tag_ids = tf.lookup.StaticHashTable(
        tf.lookup.KeyValueTensorInitializer(tf.constant(tags), tf.range(FIRST_TAG_ID, FIRST_TAG_ID + len(tags))),
        UNKNOWN_TAG_ID)
    # One parse_text per export (saving traces every function the module holds): with a tags input when the
    # parser reads tags.
    if model.dependency_parser_head.reads_tags:
      self.parse_text = graph_function(self._parse_words, input_signature=[_TEXT, _POS_TEXT])
    else:
      self.parse_text = graph_function(self._parse_words, input_signature=[_TEXT])

  def _parse(self, inputs, words):
    """Trees and relations of packed inputs and their word inputs."""
    # Through the encoder's traced `serve`: the encoder is traced once for every signature.
    sequence_output = self.serve(**inputs)["sequence_output"]
    outputs = self.dependency_parser_head(sequence_output, words, training=False)
    is_word = tf.cast(words["word_mask"], tf.bool)
    heads = projective_trees(outputs["arc_scores"], tf.reduce_sum(tf.cast(is_word, tf.int32), axis=1))
    at_heads = tf.gather(outputs["label_scores"][:, 1:], tf.maximum(heads, 0), axis=2, batch_dims=2)
    relation_ids = tf.argmax(at_heads, axis=-1, output_type=tf.int32)
    return {"arc_scores": outputs["arc_scores"], "heads": heads,
            "relation_ids": tf.where(is_word, relation_ids, -1),
            "relations": tf.where(is_word, tf.gather(self.label_names, relation_ids), "")}

  @graph_function(input_signature=[IDS, IDS, IDS, IDS, IDS, IDS, _POS_IDS])
  def parse(self, input_word_ids, input_mask, input_type_ids, first_piece_index, last_piece_index, word_mask,
            pos_ids):
    return self._parse({"input_word_ids": input_word_ids, "input_mask": input_mask,
                        "input_type_ids": input_type_ids},
                       {"first_piece_index": first_piece_index, "last_piece_index": last_piece_index,
                        "word_mask": word_mask, "pos_ids": pos_ids})

  def _parse_words(self, text, pos=None):
    """`parse_text`: each text's words (`words`, "" as padding), their heads in the best projective
    single-root tree (`heads`: word numbers from 1, 0 for the root, -1 as padding), their relations
    (`relations`, `relation_ids`), how many words were parsed (`num_words`) and whether words were cut
    (`truncated`). `pos`, for a parser with tag features: one "+"-joined tag string per word of the text."""
    words = tf_text.regex_split(text, f"{PYTHON_WHITESPACE}+")
    pieces = self.tokenizer.encode_plain(words.flat_values)  # a row per word of the batch
    # A word with nothing left once preprocessed reads as one <unk>, as in training: every word has a piece.
    piece_counts = tf.maximum(tf.cast(pieces.row_lengths(), tf.int32), 1)
    widest = tf.reduce_max(tf.concat([piece_counts, [1]], 0))
    padded_pieces = pieces.to_tensor(self.tokenizer.unk_id, shape=tf.stack([-1, widest]))
    pieces = tf.RaggedTensor.from_tensor(padded_pieces, lengths=piece_counts)
    # Words are kept while their pieces fit beside [CLS] and [SEP] and they are at most max_words; the first
    # is always kept, its pieces cut to the room (as `features.parse_features`).
    counts = words.with_flat_values(piece_counts).to_tensor(0)  # [batch, words]
    room = self.packing.max_seq_length - 2
    position = tf.range(tf.shape(counts)[1])[tf.newaxis, :]
    is_word = position < tf.cast(words.row_lengths(), tf.int32)[:, tf.newaxis]
    fits = (tf.cumsum(counts, axis=1) <= room) & (position < self.options.max_words)
    kept = is_word & (fits | (position == 0))
    kept_counts = tf.where(kept, tf.where(position == 0, tf.minimum(counts, room), counts), 0)
    num_words = tf.reduce_sum(tf.cast(kept, tf.int32), axis=1)
    width = tf.reduce_max(tf.concat([num_words, [0]], 0))
    # Per word of the batch: its kept pieces (0 for a cut word), and whether its first piece is a bare "▁"
    # before others (the word's vector then starts at the next one).
    flat_kept_counts = tf.RaggedTensor.from_tensor(kept_counts, lengths=words.row_lengths()).flat_values
    skips = tf.cast((padded_pieces[:, 0] == self.word_start_id) & (flat_kept_counts > 1), tf.int32)
    skips = words.with_flat_values(skips).to_tensor(0, shape=tf.stack([-1, width]))
    kept_counts = kept_counts[:, :width]
    starts = 1 + tf.cumsum(kept_counts, axis=1, exclusive=True)  # position 0 is [CLS]
    word_mask = tf.sequence_mask(num_words, width, tf.int32)
    first_piece_index = tf.where(word_mask > 0, starts + skips, 0)
    last_piece_index = tf.where(word_mask > 0, starts + kept_counts - 1, 0)
    # The kept pieces of each text, in order.
    piece_kept = tf.ragged.range(piece_counts).flat_values < tf.gather(flat_kept_counts, pieces.value_rowids())
    text_of_piece = tf.gather(words.value_rowids(), pieces.value_rowids())
    ids = tf.RaggedTensor.from_value_rowids(tf.boolean_mask(pieces.flat_values, piece_kept),
                                            tf.boolean_mask(text_of_piece, piece_kept), nrows=words.nrows())
    inputs = self.packing.pack(self.tokenizer, ids, ids[:, :0])
    if pos is None:
      pos_ids = tf.fill(tf.stack([tf.shape(word_mask)[0], width, 2]), PAD_TAG_ID)
    else:
      pos_ids = self._pos_ids(pos, words, width)
    outputs = self._parse(inputs, {"first_piece_index": first_piece_index, "last_piece_index": last_piece_index,
                                   "word_mask": word_mask, "pos_ids": pos_ids})
    return {"words": words.to_tensor("", shape=tf.stack([-1, width])), "heads": outputs["heads"],
            "relations": outputs["relations"], "relation_ids": outputs["relation_ids"],
            "num_words": num_words, "truncated": num_words < tf.cast(words.row_lengths(), tf.int32)}

  def _pos_ids(self, pos, words, width):
    """The ids of each word's first and last morpheme tags `[batch, width, 2]`, from a string of "+"-joined
    tags per word; a text whose number of tag strings is not its number of words is refused."""
    word_tags = tf_text.regex_split(pos, f"{PYTHON_WHITESPACE}+")
    check = tf.debugging.assert_equal(
        word_tags.row_lengths(), words.row_lengths(),
        message="parse_text: pos must hold one tag string (e.g. NNG+JKS) per whitespace-separated word of text")
    with tf.control_dependencies([check]):
      morphemes = tf.strings.split(word_tags.flat_values, "+")
    # A word's tag string is never empty (split at whitespace), so it has a first and a last morpheme tag.
    first = tf.gather(morphemes.flat_values, morphemes.row_starts())
    last = tf.gather(morphemes.flat_values, morphemes.row_limits() - 1)
    ids = self.tag_ids.lookup(tf.stack([first, last], axis=1))
    return word_tags.with_flat_values(ids).to_tensor(PAD_TAG_ID, shape=tf.stack([-1, width, 2]))

  def signatures(self):
    return dict(super().signatures(), serving_default=self.parse.get_concrete_function(),
                parse_text=self.parse_text.get_concrete_function())


def serving_module(model: AlbertDependencyParser, tokenizer: GraphTokenizer, packing: TextPacking,
                   asset_files: Optional[dict], task_options: Optional[ParsingOptions] = None
                   ) -> AlbertDependencyParserServingModule:
  """`task_heads.TaskHead.serving_module`: `task_options` holds the run's tags and word limit."""
  return AlbertDependencyParserServingModule(model, tokenizer, packing, asset_files, task_options)
