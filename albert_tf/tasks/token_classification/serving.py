"""A fine-tuned token classifier's SavedModel: `serving_default` takes ids `[batch, seq]` → per position
`logits`, `probabilities`, `predictions` (label ids) and `labels` (their names); `tag_text` takes raw text →
its entities with their character offsets, labels and scores, tokenized and decoded in the graph; beside the
encoder's signatures."""

import dataclasses
from typing import Optional

import tensorflow as tf
import tensorflow_text as tf_text

from albert_tf.modeling import checkpoints as checkpoint_lib
from albert_tf.serving.saved_model import IDS, AlbertServingModule, TextPacking
from albert_tf.serving.tracing import graph_function
from albert_tf.tasks.token_classification.data import FORMATS
from albert_tf.tasks.token_classification.model import AlbertTokenClassifier
from albert_tf.text.graph_tokenizer import PYTHON_WHITESPACE, GraphTokenizer

_TEXT = tf.TensorSpec([None], tf.string)
UNITS = ("character", "word")


@dataclasses.dataclass(frozen=True)
class TaggingOptions:
  """What `tag_text` needs besides the model: the units the model was trained to tag.

  Attributes:
    units: "character" (KLUE-NER: every piece carries the tag of its first character) or "word" (CoNLL, tsv,
      and Hugging Face's convention: only a word's first piece carries a tag; its other pieces continue it).
  """

  units: str = "word"

  def __post_init__(self):
    if self.units not in UNITS:
      raise ValueError(f"Unknown tagging units {self.units!r}; known: {', '.join(UNITS)}.")


def options_for_task(task_name: Optional[str]) -> TaggingOptions:
  """The tagging units of a run's `--task_name` (words when unknown, e.g. a model read from Hugging Face)."""
  return TaggingOptions("character" if task_name == "klue-ner" else "word")


def run_serving_options(checkpoint_prefix: str) -> Optional[TaggingOptions]:
  """`task_heads.TaskHead.serving_options_of_run`: the units of the run that wrote the checkpoint."""
  task_name = checkpoint_lib.read_task_info(checkpoint_prefix).get("task")
  return options_for_task(task_name) if task_name in FORMATS else None


def _last_where(condition):
  """Per position j of `[batch, n]` booleans, the last k <= j where `condition` holds, else -1."""
  positions = tf.range(tf.shape(condition)[1])
  before = positions[tf.newaxis, :] <= positions[:, tf.newaxis]  # [j, k]: k <= j
  candidates = tf.where(before[tf.newaxis] & condition[:, tf.newaxis, :], positions[tf.newaxis, tf.newaxis],
                        -1)
  return tf.reduce_max(candidates, axis=-1)


class AlbertTokenClassifierServingModule(AlbertServingModule):
  """A fine-tuned `AlbertTokenClassifier` whose `serving_default` labels every position and whose `tag_text`
  finds the entities of raw texts, plus the encoder's signatures.

  Args:
    model: a restored `AlbertTokenClassifier`.
    tokenizer, packing, asset_files: as for `AlbertServingModule`.
    options: the units the model tags (`TaggingOptions`).
  """

  def __init__(self, model: AlbertTokenClassifier, tokenizer: GraphTokenizer, packing: TextPacking,
               asset_files: Optional[dict] = None, options: Optional[TaggingOptions] = None):
    super().__init__(model, tokenizer, packing, asset_files=asset_files)
    self._untracked(token_classifier_head=model.token_classifier_head)
    self.options = options or TaggingOptions()
    names = list(model.label_names)
    types = sorted({name[2:] for name in names if name[:2] in ("B-", "I-")})
    self.label_names = tf.constant(names)
    self.entity_types = tf.constant(types + [""])  # "" for O, and for padding
    self.label_is_begin = tf.constant([name.startswith("B-") for name in names])
    self.label_is_inside = tf.constant([name.startswith("I-") for name in names])
    self.label_type = tf.constant([types.index(name[2:]) if name[:2] in ("B-", "I-") else len(types)
                                   for name in names], tf.int32)

  def _tag(self, inputs):
    """The per-position outputs of packed inputs."""
    # Through the encoder's traced `serve`: the encoder is traced once for every signature.
    logits = self.token_classifier_head(self.serve(**inputs)["sequence_output"], training=False)
    predictions = tf.argmax(logits, axis=-1, output_type=tf.int32)
    return {"logits": logits, "probabilities": tf.nn.softmax(logits), "predictions": predictions,
            "labels": tf.gather(self.label_names, predictions)}

  @graph_function(input_signature=[IDS, IDS, IDS])
  def tag(self, input_word_ids, input_mask, input_type_ids):
    return self._tag({"input_word_ids": input_word_ids, "input_mask": input_mask,
                      "input_type_ids": input_type_ids})

  @graph_function(input_signature=[_TEXT])
  def tag_text(self, text):
    """The entities of each text, as the Python predictions find them (strict IOB2 over the units' tags).

    A text longer than `max_seq_length` - 2 pieces is tagged on its first pieces (`truncated`); the tool's
    windows are for files. Outputs, per text, padded to the batch's most entities: `entity_labels` (types,
    "" as padding), `entity_starts`, `entity_ends` (character offsets in the text, end exclusive; -1 as
    padding), `entity_texts`, `entity_scores` (the mean probability of the tags that make the entity), and
    `num_entities`, `truncated`.
    """
    ids, begin, end = self.tokenizer.encode_with_offsets(text)
    inputs = self.packing.pack(self.tokenizer, ids, ids[:, :0])
    outputs = self._tag(inputs)
    # Per piece: position 1 onwards, the pieces that the packing kept.
    width = tf.shape(inputs["input_word_ids"])[1] - 1
    dense_shape = tf.stack([-1, width])
    kept = tf.minimum(tf.cast(ids.row_lengths(), tf.int32), self.packing.max_seq_length - 2)
    valid = tf.range(width)[tf.newaxis, :] < kept[:, tf.newaxis]
    begin = begin.to_tensor(0, shape=dense_shape)
    end = end.to_tensor(0, shape=dense_shape)
    tags = outputs["predictions"][:, 1:]
    tag_probability = tf.gather(outputs["probabilities"][:, 1:], tags, batch_dims=2)
    # The pieces that carry a tag: any piece with characters (not a bare "▁"), or only a word's first one.
    carries = valid & (end > begin)
    if self.options.units == "word":
      _, word_begin, _ = tf_text.regex_split_with_offsets(text, f"{PYTHON_WHITESPACE}+")
      word_begin = tf.cast(word_begin, tf.int64).to_tensor(-1)
      carries &= tf.reduce_any(begin[:, :, tf.newaxis] == word_begin[:, tf.newaxis, :], axis=-1)
    starts = carries & tf.gather(self.label_is_begin, tags)
    last_start = _last_where(starts)
    entity_type = tf.gather(tf.gather(self.label_type, tags), tf.maximum(last_start, 0), batch_dims=1)
    # A piece continues the entity begun last if it carries no tag of its own, or the I- tag of its type.
    same_type = tf.equal(tf.gather(self.label_type, tags), entity_type)
    continues = starts | (valid & ~carries) | (carries & tf.gather(self.label_is_inside, tags) & same_type)
    member = valid & (last_start >= 0) & (_last_where(~continues) < last_start)
    # Per start i: its last member piece and the mean probability of its members' tags.
    of_start = member[:, tf.newaxis, :] & tf.equal(last_start[:, tf.newaxis, :],
                                                   tf.range(width)[tf.newaxis, :, tf.newaxis])
    # The entity ends with its last member that has characters (a bare "▁" before the next word has none).
    spans = of_start & (end > begin)[:, tf.newaxis, :]
    last_piece = tf.reduce_max(tf.where(spans, tf.range(width)[tf.newaxis, tf.newaxis, :], -1), axis=-1)
    scored = of_start & carries[:, tf.newaxis, :]
    score = (tf.reduce_sum(tf.where(scored, tag_probability[:, tf.newaxis, :], 0.0), axis=-1) /
             tf.maximum(tf.reduce_sum(tf.cast(scored, tf.float32), axis=-1), 1.0))
    entity_begin = tf.ragged.boolean_mask(begin, starts)
    entity_end = tf.ragged.boolean_mask(tf.gather(end, tf.maximum(last_piece, 0), batch_dims=1), starts)
    # Byte offsets -> character offsets: the characters that begin before the byte.
    _, char_bytes = tf.strings.unicode_decode_with_offsets(text, "UTF-8")
    char_bytes = char_bytes.to_tensor(tf.int64.max)

    def characters(byte_offsets):
      dense = byte_offsets.to_tensor(0)
      return tf.cast(tf.searchsorted(char_bytes, dense, side="left"), tf.int32), dense

    starts_chars, begin_bytes = characters(entity_begin)
    ends_chars, end_bytes = characters(entity_end)
    present = tf.sequence_mask(entity_begin.row_lengths(), tf.shape(begin_bytes)[1])
    texts = tf.strings.substr(tf.broadcast_to(text[:, tf.newaxis], tf.shape(begin_bytes)), begin_bytes,
                              end_bytes - begin_bytes)
    labels = tf.ragged.boolean_mask(tf.gather(self.entity_types, tf.gather(self.label_type, tags)), starts)
    return {
        "entity_labels": labels.to_tensor(""),
        "entity_starts": tf.where(present, starts_chars, -1),
        "entity_ends": tf.where(present, ends_chars, -1),
        "entity_texts": tf.where(present, texts, ""),
        "entity_scores": tf.ragged.boolean_mask(score, starts).to_tensor(0.0),
        "num_entities": tf.cast(entity_begin.row_lengths(), tf.int32),
        "truncated": tf.cast(ids.row_lengths(), tf.int32) > kept,
    }

  def signatures(self):
    return dict(super().signatures(), serving_default=self.tag.get_concrete_function(),
                tag_text=self.tag_text.get_concrete_function())


def serving_module(model: AlbertTokenClassifier, tokenizer: GraphTokenizer, packing: TextPacking,
                   asset_files: Optional[dict], task_options: Optional[TaggingOptions] = None
                   ) -> AlbertTokenClassifierServingModule:
  """`task_heads.TaskHead.serving_module`: `task_options` says the units the model tags."""
  return AlbertTokenClassifierServingModule(model, tokenizer, packing, asset_files, task_options)
