"""A fine-tuned classifier's SavedModel: `classify_text` (`text_a`) and `classify_text_pair` (`text_a`,
`text_b`) → `probabilities`, `predictions` (class ids) and `labels` (their names), or `predictions` (the score)
for a regression; its `serving_default` classifies ids the same way, as Google's export did. A relation
classifier (KLUE-RE) also has `classify_relation`: the sentence and its two entities' spans and types, marked in
the graph as its training marked them."""

import dataclasses
from typing import Optional

import tensorflow as tf

from albert_tf.modeling import checkpoints as checkpoint_lib
from albert_tf.serving.saved_model import IDS, TEXT_A, TEXT_B, AlbertServingModule, TextPacking
from albert_tf.serving.tracing import graph_function
from albert_tf.text.graph_tokenizer import GraphTokenizer
from albert_tf.tasks.classification import relation_extraction
from albert_tf.tasks.classification.model import AlbertClassifier

_SENTENCES = tf.TensorSpec([None], tf.string)
_OFFSETS = tf.TensorSpec([None], tf.int32)
_TYPES = tf.TensorSpec([None], tf.string)


@dataclasses.dataclass(frozen=True)
class ClassifierServingOptions:
  """What a classifier's signatures need besides the model.

  Attributes:
    entity_markers: a relation classifier's `--entity_markers` (a key of `relation_extraction.ENTITY_MARKERS`),
      which adds `classify_relation`; None for other classifiers.
  """

  entity_markers: Optional[str] = None


def run_serving_options(checkpoint_prefix: str) -> Optional[ClassifierServingOptions]:
  """`task_heads.TaskHead.serving_options_of_run`: the entity markers a relation run recorded, else None."""
  markers = checkpoint_lib.read_task_info(checkpoint_prefix).get("entity_markers")
  return ClassifierServingOptions(markers) if markers else None


def mark_entities(sentences, subject_start, subject_end, subject_type, object_start, object_end, object_type,
                  markers: str):
  """`relation_extraction.mark_entities` as graph ops on a batch: inclusive character spans, as KLUE writes them.

  Raises (when run):
    InvalidArgumentError: a span outside its sentence, ending before it starts, or both entities on one span.
  """
  style = relation_extraction.ENTITY_MARKERS[markers]
  lengths = tf.strings.length(sentences, unit="UTF8_CHAR")
  checks = []
  for name, start, end in (("subject", subject_start, subject_end), ("object", object_start, object_end)):
    checks.append(tf.debugging.assert_equal(
        (start >= 0) & (start <= end) & (end < lengths), True,
        message=f"each {name} span must lie in its sentence, 0 <= start <= end < its length in characters"))
  checks.append(tf.debugging.assert_equal(
      (subject_start != object_start) | (subject_end != object_end), True,
      message="the subject and the object must be different spans"))
  with tf.control_dependencies(checks):
    lengths = tf.identity(lengths)

  def marker(template, entity_type):
    before_type, _, after_type = template.partition("{type}")
    if not _:
      return tf.fill(tf.shape(entity_type), template)
    return tf.strings.join([before_type, entity_type, after_type])

  # The four insertions, ordered as the Python marking orders them: by position, then ends before starts, then
  # of two starts the longer span first and of two ends the shorter first (nested markers nest).
  positions = tf.stack([subject_start, subject_end + 1, object_start, object_end + 1], axis=1)
  is_start = tf.constant([1, 0, 1, 0], tf.int64)
  subject_length = tf.cast(subject_end - subject_start + 1, tf.int64)
  object_length = tf.cast(object_end - object_start + 1, tf.int64)
  by_length = tf.stack([-subject_length, subject_length, -object_length, object_length], axis=1)
  limit = tf.constant(2 ** 31, tf.int64)
  keys = (tf.cast(positions, tf.int64) * 2 + is_start) * 2 * limit + by_length + limit
  order = tf.argsort(keys, axis=1, stable=True)
  texts = tf.stack([marker(style.subject[0], subject_type), marker(style.subject[1], subject_type),
                    marker(style.object[0], object_type), marker(style.object[1], object_type)], axis=1)
  positions = tf.gather(positions, order, batch_dims=1)
  texts = tf.gather(texts, order, batch_dims=1)
  cuts = tf.concat([tf.zeros_like(positions[:, :1]), positions, lengths[:, tf.newaxis]], axis=1)
  parts = []
  for index in range(5):
    parts.append(tf.strings.substr(sentences, cuts[:, index], cuts[:, index + 1] - cuts[:, index],
                                   unit="UTF8_CHAR"))
    if index < 4:
      parts.append(texts[:, index])
  return tf.strings.join(parts)


class AlbertClassifierServingModule(AlbertServingModule):
  """A fine-tuned `AlbertClassifier` behind text-in classification signatures, plus the encoder's.

  Args:
    model: a restored `AlbertClassifier`.
    tokenizer, packing, asset_files: as for `AlbertServingModule`.
  """

  def __init__(self, model: AlbertClassifier, tokenizer: GraphTokenizer, packing: TextPacking,
               asset_files: Optional[dict] = None, options: Optional[ClassifierServingOptions] = None):
    super().__init__(model, tokenizer, packing, asset_files=asset_files)
    self._untracked(classifier_head=model.classifier_head)
    self.options = options or ClassifierServingOptions()
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

  @graph_function()  # traced only for a relation classifier (`signatures`)
  def classify_relation(self, sentence, subject_start, subject_end, subject_type, object_start, object_end,
                        object_type):
    """The relation of each sentence's subject to its object, given as inclusive character spans and types."""
    marked = mark_entities(sentence, subject_start, subject_end, subject_type, object_start, object_end,
                           object_type, self.options.entity_markers)
    return self.classify(**self._pack(marked, None))

  def signatures(self):
    signatures = dict(super().signatures(), serving_default=self.classify.get_concrete_function(),
                      classify_text=self.classify_text.get_concrete_function(TEXT_A),
                      classify_text_pair=self.classify_text.get_concrete_function(TEXT_A, TEXT_B))
    if self.options.entity_markers:
      signatures["classify_relation"] = self.classify_relation.get_concrete_function(
          _SENTENCES, _OFFSETS, _OFFSETS, _TYPES, _OFFSETS, _OFFSETS, _TYPES)
    return signatures


def serving_module(model: AlbertClassifier, tokenizer: GraphTokenizer, packing: TextPacking, asset_files: dict,
                   task_options: Optional[ClassifierServingOptions] = None) -> AlbertClassifierServingModule:
  """`task_heads.TaskHead.serving_module`: `task_options` holds a relation classifier's entity markers."""
  return AlbertClassifierServingModule(model, tokenizer, packing, asset_files, task_options)
