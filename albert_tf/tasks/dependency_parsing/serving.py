"""A fine-tuned dependency parser's SavedModel: `serving_default` takes the ids `[batch, seq]` and the word
inputs `[batch, W]` (`features.parse_features` builds them), and returns `arc_scores`
`[batch, W + 1, W + 1]`, each word's greedy head (`heads`, its best-scoring head: -1 for padding) and its best
relation at that head (`relation_ids`, `relations`: -1 and "" for padding), beside the encoder's signatures.

The greedy heads need not form a tree (a cycle, several words under the root): the exact trees are Python's
(`decoding.decode_batch` on the `arc_scores`, as evaluation and the prediction files decode them), which has
no graph equivalent here.
"""

from typing import Optional

import tensorflow as tf

from albert_tf.serving.saved_model import IDS, AlbertServingModule, TextPacking
from albert_tf.serving.tracing import graph_function
from albert_tf.tasks.dependency_parsing.model import AlbertDependencyParser
from albert_tf.text.graph_tokenizer import GraphTokenizer

_POS_IDS = tf.TensorSpec([None, None, 2], tf.int32)


class AlbertDependencyParserServingModule(AlbertServingModule):
  """A fine-tuned `AlbertDependencyParser` whose `serving_default` scores arcs and picks greedy heads and
  their relations, plus the encoder's signatures.

  Args:
    model: a restored `AlbertDependencyParser`.
    tokenizer, packing, asset_files: as for `AlbertServingModule`.
  """

  def __init__(self, model: AlbertDependencyParser, tokenizer: GraphTokenizer, packing: TextPacking,
               asset_files: Optional[dict] = None):
    super().__init__(model, tokenizer, packing, asset_files=asset_files)
    self.label_names = tf.constant(model.label_names)

  @graph_function(input_signature=[IDS, IDS, IDS, IDS, IDS, IDS, _POS_IDS])
  def parse(self, input_word_ids, input_mask, input_type_ids, first_piece_index, last_piece_index, word_mask,
            pos_ids):
    outputs = self.model({"input_word_ids": input_word_ids, "input_mask": input_mask,
                          "input_type_ids": input_type_ids, "first_piece_index": first_piece_index,
                          "last_piece_index": last_piece_index, "word_mask": word_mask, "pos_ids": pos_ids},
                         training=False)
    heads = tf.argmax(outputs["arc_scores"][:, 1:], axis=-1, output_type=tf.int32)
    at_heads = tf.gather(outputs["label_scores"][:, 1:], heads, axis=2, batch_dims=2)
    relation_ids = tf.argmax(at_heads, axis=-1, output_type=tf.int32)
    is_word = tf.cast(word_mask, tf.bool)
    return {"arc_scores": outputs["arc_scores"], "heads": tf.where(is_word, heads, -1),
            "relation_ids": tf.where(is_word, relation_ids, -1),
            "relations": tf.where(is_word, tf.gather(self.label_names, relation_ids), "")}

  def signatures(self):
    return dict(super().signatures(), serving_default=self.parse.get_concrete_function())


def serving_module(model: AlbertDependencyParser, tokenizer: GraphTokenizer, packing: TextPacking,
                   asset_files: Optional[dict], task_options=None) -> AlbertDependencyParserServingModule:
  """`task_heads.TaskHead.serving_module`: the parser needs nothing besides its model."""
  del task_options
  return AlbertDependencyParserServingModule(model, tokenizer, packing, asset_files)
