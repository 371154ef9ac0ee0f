"""The one place that names every ALBERT weight three ways: ours, Google's TF1 and Hugging Face's.

Our checkpoints are object-based (`model/encoder/groups/0/0/query/kernel`); Google's TF1 checkpoints use
`bert/encoder/transformer/group_0/inner_group_0/attention_1/self/query/kernel`; Hugging Face uses
`albert.encoder.albert_layer_groups.0.albert_layers.0.attention.query.weight`. Every converter and
exporter goes through `named_weights`, so none of them repeats a mapping.
"""

import dataclasses
from typing import List, Tuple

import tensorflow as tf


@dataclasses.dataclass(frozen=True)
class WeightNames:
  """How one variable is named outside this package.

  Attributes:
    google: the TF1 variable name in Google's checkpoints.
    hf: the key in a Hugging Face `AlbertForPreTraining` (or `AlbertForSequenceClassification`) state dict.
    transpose_for_hf: PyTorch `Linear` weights are [out, in]; TF kernels are [in, out].
  """

  google: str
  hf: str
  transpose_for_hf: bool = False


# Our block sublayers -> (Google's scope inside `inner_group_{i}`, HF's module inside `albert_layers.{i}`).
_BLOCK_DENSE = (
    ("query", "attention_1/self/query", "attention.query"),
    ("key", "attention_1/self/key", "attention.key"),
    ("value", "attention_1/self/value", "attention.value"),
    ("attention_output", "attention_1/output/dense", "attention.dense"),
    ("intermediate", "ffn_1/intermediate/dense", "ffn"),
    ("ffn_output", "ffn_1/intermediate/output/dense", "ffn_output"),
)
_BLOCK_LAYER_NORM = (
    ("attention_layer_norm", "LayerNorm", "attention.LayerNorm"),
    ("output_layer_norm", "LayerNorm_1", "full_layer_layer_norm"),
)


def _dense(layer, google: str, hf: str) -> List[Tuple[WeightNames, tf.Variable]]:
  return [(WeightNames(f"{google}/kernel", f"{hf}.weight", True), layer.kernel),
          (WeightNames(f"{google}/bias", f"{hf}.bias"), layer.bias)]


def _layer_norm(layer, google: str, hf: str) -> List[Tuple[WeightNames, tf.Variable]]:
  return [(WeightNames(f"{google}/gamma", f"{hf}.weight"), layer.gamma),
          (WeightNames(f"{google}/beta", f"{hf}.bias"), layer.beta)]


def _encoder_weights(encoder) -> List[Tuple[WeightNames, tf.Variable]]:
  embeddings = encoder.embeddings
  named = [
      (WeightNames("bert/embeddings/word_embeddings", "albert.embeddings.word_embeddings.weight"),
       embeddings.word_embeddings),
      (WeightNames("bert/embeddings/token_type_embeddings", "albert.embeddings.token_type_embeddings.weight"),
       embeddings.token_type_embeddings),
      (WeightNames("bert/embeddings/position_embeddings", "albert.embeddings.position_embeddings.weight"),
       embeddings.position_embeddings),
  ]
  named += _layer_norm(embeddings.layer_norm, "bert/embeddings/LayerNorm", "albert.embeddings.LayerNorm")
  if embeddings.projection is not None:
    named += _dense(embeddings.projection, "bert/encoder/embedding_hidden_mapping_in",
                    "albert.encoder.embedding_hidden_mapping_in")
  for group_index, group in enumerate(encoder.groups):
    for inner_index, block in enumerate(group):
      google = f"bert/encoder/transformer/group_{group_index}/inner_group_{inner_index}"
      hf = f"albert.encoder.albert_layer_groups.{group_index}.albert_layers.{inner_index}"
      for attribute, google_scope, hf_module in _BLOCK_DENSE:
        named += _dense(getattr(block, attribute), f"{google}/{google_scope}", f"{hf}.{hf_module}")
      for attribute, google_scope, hf_module in _BLOCK_LAYER_NORM:
        named += _layer_norm(getattr(block, attribute), f"{google}/{google_scope}", f"{hf}.{hf_module}")
  named += _dense(encoder.pooler, "bert/pooler/dense", "albert.pooler")
  return named


def _pretraining_head_weights(pretrainer) -> List[Tuple[WeightNames, tf.Variable]]:
  mlm = pretrainer.masked_lm_head
  sop = pretrainer.sentence_order_head
  named = _dense(mlm.dense, "cls/predictions/transform/dense", "predictions.dense")
  named += _layer_norm(mlm.layer_norm, "cls/predictions/transform/LayerNorm", "predictions.LayerNorm")
  named.append((WeightNames("cls/predictions/output_bias", "predictions.bias"), mlm.output_bias))
  if sop is not None:
    named += [
        # Both Google and HF store the SOP weight as [2, H]: no transpose.
        (WeightNames("cls/seq_relationship/output_weights", "sop_classifier.classifier.weight"),
         sop.output_weights),
        (WeightNames("cls/seq_relationship/output_bias", "sop_classifier.classifier.bias"), sop.output_bias),
    ]
  return named


def _classifier_head_weights(classifier) -> List[Tuple[WeightNames, tf.Variable]]:
  head = classifier.classifier_head
  # Google's run_classifier keeps [num_labels, H] at the top level, as HF's classifier.weight: no transpose.
  return [(WeightNames("output_weights", "classifier.weight"), head.output_weights),
          (WeightNames("output_bias", "classifier.bias"), head.output_bias)]


def named_weights(model) -> List[Tuple[WeightNames, tf.Variable]]:
  """Every variable of a built `AlbertEncoder`, `AlbertPretrainer` or `AlbertClassifier`, with its outside names.

  A pretrainer without its sentence-order head has no `cls/seq_relationship` (`sop_classifier`) names; a
  classifier's head is Google's `output_weights`/`output_bias` and HF's `classifier`
  (`AlbertForSequenceClassification`).
  """
  if not model.built:
    raise ValueError(f"Model {model.name} must be built (called once) before its weights are named.")
  named = _encoder_weights(getattr(model, "encoder", model))
  if getattr(model, "masked_lm_head", None) is not None:
    named += _pretraining_head_weights(model)
  if getattr(model, "classifier_head", None) is not None:
    named += _classifier_head_weights(model)
  return named
