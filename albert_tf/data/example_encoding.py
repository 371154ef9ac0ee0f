"""Serializes pretraining instances as `tf.train.Example` bytes, without TensorFlow.

The data workers run in plain Python processes (no TensorFlow import, no protobuf objects per record),
so the few features of an instance are written straight in protobuf's wire format:
Example{features=1: Features{feature=1: map<string, Feature>}}, Feature{float_list=2 | int64_list=3},
each list a packed `value=1`. `tf.train.Example.FromString` reads the result (tested); the feature names,
dtypes and lengths are those of Google's `create_pretraining_data.py`. Unmasked records (`--dynamic_masking`)
have no `masked_lm_*` features and carry their `MaskingRecipe` instead. Records whose words are not Google's also
carry their `word_boundaries` rule.
"""

import struct
from typing import List, Optional

from albert_tf.data import word_boundaries as word_boundary_rules
from albert_tf.data.instances import MASKING_RECIPE_FEATURE, Instance, MaskingRecipe

# Names and order of Google's features.
FEATURE_NAMES = ("input_ids", "input_mask", "segment_ids", "token_boundary", "masked_lm_positions",
                 "masked_lm_ids", "masked_lm_weights", "next_sentence_labels")
UNMASKED_FEATURE_NAMES = ("input_ids", "input_mask", "segment_ids", "token_boundary", "next_sentence_labels",
                          MASKING_RECIPE_FEATURE)


def _varint(value: int) -> bytes:
  out = bytearray()
  while value > 0x7F:
    out.append((value & 0x7F) | 0x80)
    value >>= 7
  out.append(value)
  return bytes(out)


class ExampleEncoder:
  """Encodes `Instance`s padded to fixed lengths: `max_seq_length` and `num_label_slots`.

  Args:
    max_seq_length: length of the token features.
    num_label_slots: length of the masked_lm_* features (Google: max_predictions_per_seq, doubled with
      do_permutation).
    vocab_size: largest id + 1, for the varint table.
    masking_recipe: write unmasked records carrying this recipe (then `num_label_slots` is 0).
    word_boundaries: the rule of the word starts in `token_boundary`, written as the `word_boundaries` feature
      when it is not Google's (so Google's records stay as they were).
  """

  def __init__(self, max_seq_length: int, num_label_slots: int, vocab_size: int,
               masking_recipe: Optional[MaskingRecipe] = None, word_boundaries: str = word_boundary_rules.GOOGLE):
    self.max_seq_length = max_seq_length
    self.num_label_slots = num_label_slots
    self._varints = [_varint(i) for i in range(max(vocab_size, max_seq_length) + 1)]
    self._keys = {name: b"\x0a" + _varint(len(name)) + name.encode()
                  for name in FEATURE_NAMES + UNMASKED_FEATURE_NAMES + (word_boundary_rules.FEATURE,)}
    rule_value = word_boundary_rules.feature_value(word_boundaries)
    self._rule = b"" if rule_value is None else self._entry(word_boundary_rules.FEATURE, self._message(
        b"\x1a", self._message(b"\x0a", _varint(rule_value))))
    self._recipe = None
    if masking_recipe is not None:
      values = masking_recipe.to_values()
      self._recipe = self._entry(MASKING_RECIPE_FEATURE, self._message(b"\x1a", self._message(
          b"\x0a", b"".join(_varint(v) for v in values))))
    self._one = struct.pack("<f", 1.0)
    self._zero = struct.pack("<f", 0.0)

  def _message(self, tag: bytes, payload: bytes) -> bytes:
    size = len(payload)
    return tag + (self._varints[size] if size < len(self._varints) else _varint(size)) + payload

  def _entry(self, name: str, feature: bytes) -> bytes:
    """One map<string, Feature> entry: key=1, value=2."""
    return self._message(b"\x0a", self._keys[name] + self._message(b"\x12", feature))

  def _int_feature(self, name: str, values: List[int], length: int) -> bytes:
    table = self._varints
    packed = b"".join([table[v] for v in values]) + b"\x00" * (length - len(values))
    return self._entry(name, self._message(b"\x1a", self._message(b"\x0a", packed)))

  def _bit_feature(self, name: str, values: List[int], length: int) -> bytes:
    """0/1 values: each varint is the byte itself."""
    packed = bytes(values) + b"\x00" * (length - len(values))
    return self._entry(name, self._message(b"\x1a", self._message(b"\x0a", packed)))

  def encode(self, instance: Instance) -> bytes:
    seq, slots = self.max_seq_length, self.num_label_slots
    num_tokens, num_labels = len(instance.input_ids), len(instance.masked_lm_positions)
    if num_tokens > seq or num_labels > slots:
      raise ValueError(f"Instance of {num_tokens} tokens / {num_labels} labels exceeds {seq} / {slots}.")
    tokens = [
        self._int_feature("input_ids", instance.input_ids, seq),
        self._bit_feature("input_mask", [1] * num_tokens, seq),
        self._bit_feature("segment_ids", instance.segment_ids, seq),
        self._bit_feature("token_boundary", instance.token_boundary, seq),
    ]
    if self._recipe is not None:
      return self._message(b"\x0a", b"".join(tokens + [
          self._bit_feature("next_sentence_labels", [instance.sentence_order_label], 1), self._recipe, self._rule]))
    weights = self._one * num_labels + self._zero * (slots - num_labels)
    features = b"".join(tokens + [
        self._int_feature("masked_lm_positions", instance.masked_lm_positions, slots),
        self._int_feature("masked_lm_ids", instance.masked_lm_ids, slots),
        self._entry("masked_lm_weights", self._message(b"\x12", self._message(b"\x0a", weights))),
        self._bit_feature("next_sentence_labels", [instance.sentence_order_label], 1),
        self._rule,
    ])
    return self._message(b"\x0a", features)
