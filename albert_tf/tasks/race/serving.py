"""A fine-tuned multiple-choice model's SavedModel: `serving_default` takes ids `[batch, options, seq]` →
`probabilities` and `predictions` over the options."""

from typing import Optional

import tensorflow as tf

from albert_tf.serving.saved_model import AlbertServingModule, TextPacking
from albert_tf.serving.tracing import graph_function
from albert_tf.tasks.race.model import AlbertMultipleChoice
from albert_tf.text.graph_tokenizer import GraphTokenizer

_CHOICE_IDS = tf.TensorSpec([None, None, None], tf.int32)


class AlbertMultipleChoiceServingModule(AlbertServingModule):
  """A fine-tuned `AlbertMultipleChoice` whose `serving_default` scores the options, plus the encoder's signatures.

  Args:
    model: a restored `AlbertMultipleChoice`.
    tokenizer, packing, asset_files: as for `AlbertServingModule`.
  """

  @graph_function(input_signature=[_CHOICE_IDS, _CHOICE_IDS, _CHOICE_IDS])
  def choose(self, input_word_ids, input_mask, input_type_ids):
    logits = self.model({"input_word_ids": input_word_ids, "input_mask": input_mask,
                         "input_type_ids": input_type_ids}, training=False)["logits"]
    return {"probabilities": tf.nn.softmax(logits), "predictions": tf.argmax(logits, axis=-1, output_type=tf.int32)}

  def signatures(self):
    return dict(super().signatures(), serving_default=self.choose.get_concrete_function())


def serving_module(model: AlbertMultipleChoice, tokenizer: GraphTokenizer, packing: TextPacking,
                   asset_files: Optional[dict], task_options=None) -> AlbertMultipleChoiceServingModule:
  """`task_heads.TaskHead.serving_module`: multiple choice needs nothing besides its model."""
  del task_options
  return AlbertMultipleChoiceServingModule(model, tokenizer, packing, asset_files=asset_files)
