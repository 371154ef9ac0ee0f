"""The one place that names every ALBERT weight three ways: ours, Google's TF1 and Hugging Face's.

Our checkpoints are object-based (`model/encoder/groups/0/0/query/kernel`); Google's TF1 checkpoints use
`bert/encoder/transformer/group_0/inner_group_0/attention_1/self/query/kernel`; Hugging Face uses
`albert.encoder.albert_layer_groups.0.albert_layers.0.attention.query.weight`. Every converter and
exporter goes through `named_weights`, so none of them repeats a mapping.
"""

import dataclasses
from typing import List, Optional, Tuple

import tensorflow as tf


@dataclasses.dataclass(frozen=True)
class WeightNames:
  """How one variable is named outside this package.

  Attributes:
    google: the TF1 variable name in Google's checkpoints.
    hf: the key in a Hugging Face `AlbertForPreTraining` (`AlbertForSequenceClassification`,
      `AlbertForQuestionAnswering`, `AlbertForMultipleChoice`) state dict; None where transformers has no
      such weight (SQuAD v2's XLNet-style head).
    transpose_for_hf: PyTorch `Linear` weights are [out, in]; TF kernels are [in, out].
  """

  google: str
  hf: Optional[str]
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


def _dense(layer, google: str, hf: Optional[str]) -> List[Tuple[WeightNames, tf.Variable]]:
  named = [(WeightNames(f"{google}/kernel", hf and f"{hf}.weight", True), layer.kernel)]
  if layer.use_bias:
    named.append((WeightNames(f"{google}/bias", hf and f"{hf}.bias"), layer.bias))
  return named


def _layer_norm(layer, google: str, hf: Optional[str]) -> List[Tuple[WeightNames, tf.Variable]]:
  return [(WeightNames(f"{google}/gamma", hf and f"{hf}.weight"), layer.gamma),
          (WeightNames(f"{google}/beta", hf and f"{hf}.bias"), layer.beta)]


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


def _top_level_head_weights(head) -> List[Tuple[WeightNames, tf.Variable]]:
  # Google's run_classifier and run_race keep [num_labels, H] at the top level, as HF's classifier.weight:
  # no transpose.
  return [(WeightNames("output_weights", "classifier.weight"), head.output_weights),
          (WeightNames("output_bias", "classifier.bias"), head.output_bias)]


def _squad_head_weights(head) -> List[Tuple[WeightNames, tf.Variable]]:
  # Google's [2, H] is HF's qa_outputs.weight as it is.
  return [(WeightNames("cls/squad/output_weights", "qa_outputs.weight"), head.output_weights),
          (WeightNames("cls/squad/output_bias", "qa_outputs.bias"), head.output_bias)]


def _squad_v2_head_weights(head) -> List[Tuple[WeightNames, tf.Variable]]:
  # Google's run_squad_v2 scopes; transformers has no ALBERT model with this head.
  named = _dense(head.start_dense, "start_logits/dense", None)
  named += _dense(head.end_dense_0, "end_logits/dense_0", None)
  named += _layer_norm(head.end_layer_norm, "end_logits/LayerNorm", None)
  named += _dense(head.end_dense_1, "end_logits/dense_1", None)
  named += _dense(head.answer_class_dense_0, "answer_class/dense_0", None)
  named += _dense(head.answer_class_dense_1, "answer_class/dense_1", None)
  return named


# Fine-tuning heads: the model attribute and its names.
_TASK_HEADS = (("classifier_head", _top_level_head_weights), ("choice_head", _top_level_head_weights),
               ("squad_head", _squad_head_weights), ("squad_v2_head", _squad_v2_head_weights))


def named_weights(model) -> List[Tuple[WeightNames, tf.Variable]]:
  """Every variable of a built model of this package, with its outside names.

  A pretrainer without its sentence-order head has no `cls/seq_relationship` (`sop_classifier`) names. A
  classifier's and a multiple-choice model's head is Google's top-level `output_weights`/`output_bias` and
  HF's `classifier`; SQuAD v1's is Google's `cls/squad` and HF's `qa_outputs`; SQuAD v2's keeps Google's
  `start_logits`, `end_logits` and `answer_class` scopes and has no HF name.
  """
  if not model.built:
    raise ValueError(f"Model {model.name} must be built (called once) before its weights are named.")
  named = _encoder_weights(getattr(model, "encoder", model))
  if getattr(model, "masked_lm_head", None) is not None:
    named += _pretraining_head_weights(model)
  for attribute, head_weights in _TASK_HEADS:
    if getattr(model, attribute, None) is not None:
      named += head_weights(getattr(model, attribute))
  return named
