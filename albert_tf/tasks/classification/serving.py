"""A fine-tuned classifier's SavedModel: `classify_text` (`text_a`) and `classify_text_pair` (`text_a`,
`text_b`) → `probabilities`, `predictions` (class ids) and `labels` (their names), or `predictions` (the score)
for a regression; its `serving_default` classifies ids the same way, as Google's export did."""

from typing import Optional

import tensorflow as tf

from albert_tf.serving.saved_model import IDS, TEXT_A, TEXT_B, AlbertServingModule, TextPacking
from albert_tf.serving.tracing import graph_function
from albert_tf.text.graph_tokenizer import GraphTokenizer
from albert_tf.tasks.classification.model import AlbertClassifier


class AlbertClassifierServingModule(AlbertServingModule):
  """A fine-tuned `AlbertClassifier` behind text-in classification signatures, plus the encoder's.

  Args:
    model: a restored `AlbertClassifier`.
    tokenizer, packing, asset_files: as for `AlbertServingModule`.
  """

  def __init__(self, model: AlbertClassifier, tokenizer: GraphTokenizer, packing: TextPacking,
               asset_files: Optional[dict] = None):
    super().__init__(model, tokenizer, packing, asset_files=asset_files)
    self._untracked(classifier_head=model.classifier_head)
    self.label_names = None if model.is_regression else tf.constant(model.label_names)

  def _classify(self, inputs):
    logits = self.classifier_head(self.serve(**inputs)["pooled_output"], training=False)
    if self.label_names is None:
      return {"predictions": logits[:, 0]}
    predictions = tf.argmax(logits, axis=-1, output_type=tf.int32)
    return {"probabilities": tf.nn.softmax(logits), "predictions": predictions,
            "labels": tf.gather(self.label_names, predictions)}

  @graph_function(input_signature=[IDS, IDS, IDS])
  def classify(self, input_word_ids, input_mask, input_type_ids):
    return self._classify({"input_word_ids": input_word_ids, "input_mask": input_mask,
                           "input_type_ids": input_type_ids})

  @graph_function()
  def classify_text(self, text_a, text_b=None):
    return self.classify(**self._pack(text_a, text_b))

  def signatures(self):
    return dict(super().signatures(), serving_default=self.classify.get_concrete_function(),
                classify_text=self.classify_text.get_concrete_function(TEXT_A),
                classify_text_pair=self.classify_text.get_concrete_function(TEXT_A, TEXT_B))


def serving_module(model: AlbertClassifier, tokenizer: GraphTokenizer, packing: TextPacking, asset_files: dict,
                   task_options=None) -> AlbertClassifierServingModule:
  """`task_heads.TaskHead.serving_module`: a classifier needs nothing besides its model."""
  del task_options
  return AlbertClassifierServingModule(model, tokenizer, packing, asset_files)
