"""The one place that names every ALBERT weight three ways: ours, Google's TF1 and Hugging Face's.

Our checkpoints are object-based (`model/encoder/groups/0/0/query/kernel`); Google's TF1 checkpoints use
`bert/encoder/transformer/group_0/inner_group_0/attention_1/self/query/kernel`; Hugging Face uses
`albert.encoder.albert_layer_groups.0.albert_layers.0.attention.query.weight`. Every converter and
exporter goes through `named_weights`, so none of them repeats a mapping. The encoder's and the paper's heads
are named here; a task head names its own weights in its `task_heads.TaskHead`.
"""

import dataclasses
from typing import List, Optional, Tuple

import tensorflow as tf

from albert_tf.modeling import task_heads


@dataclasses.dataclass(frozen=True)
class WeightNames:
  """How one variable is named outside this package.

  Attributes:
    google: the TF1 variable name in Google's checkpoints.
    hf: the key in a Hugging Face `AlbertForPreTraining` state dict (or a task model's: each task head says);
      None where transformers has no such weight.
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


def dense_weights(layer, google: str, hf: Optional[str]) -> List[Tuple[WeightNames, tf.Variable]]:
  named = [(WeightNames(f"{google}/kernel", hf and f"{hf}.weight", True), layer.kernel)]
  if layer.use_bias:
    named.append((WeightNames(f"{google}/bias", hf and f"{hf}.bias"), layer.bias))
  return named


def layer_norm_weights(layer, google: str, hf: Optional[str]) -> List[Tuple[WeightNames, tf.Variable]]:
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
  named += layer_norm_weights(embeddings.layer_norm, "bert/embeddings/LayerNorm", "albert.embeddings.LayerNorm")
  if embeddings.projection is not None:
    named += dense_weights(embeddings.projection, "bert/encoder/embedding_hidden_mapping_in",
                    "albert.encoder.embedding_hidden_mapping_in")
  for group_index, group in enumerate(encoder.groups):
    for inner_index, block in enumerate(group):
      google = f"bert/encoder/transformer/group_{group_index}/inner_group_{inner_index}"
      hf = f"albert.encoder.albert_layer_groups.{group_index}.albert_layers.{inner_index}"
      for attribute, google_scope, hf_module in _BLOCK_DENSE:
        named += dense_weights(getattr(block, attribute), f"{google}/{google_scope}", f"{hf}.{hf_module}")
      for attribute, google_scope, hf_module in _BLOCK_LAYER_NORM:
        named += layer_norm_weights(getattr(block, attribute), f"{google}/{google_scope}", f"{hf}.{hf_module}")
  named += dense_weights(encoder.pooler, "bert/pooler/dense", "albert.pooler")
  return named


def _pretraining_head_weights(pretrainer) -> List[Tuple[WeightNames, tf.Variable]]:
  mlm = pretrainer.masked_lm_head
  sop = pretrainer.sentence_order_head
  named = dense_weights(mlm.dense, "cls/predictions/transform/dense", "predictions.dense")
  named += layer_norm_weights(mlm.layer_norm, "cls/predictions/transform/LayerNorm", "predictions.LayerNorm")
  named.append((WeightNames("cls/predictions/output_bias", "predictions.bias"), mlm.output_bias))
  if sop is not None:
    named += [
        # Both Google and HF store the SOP weight as [2, H]: no transpose.
        (WeightNames("cls/seq_relationship/output_weights", "sop_classifier.classifier.weight"),
         sop.output_weights),
        (WeightNames("cls/seq_relationship/output_bias", "sop_classifier.classifier.bias"), sop.output_bias),
    ]
  return named


def top_level_head_weights(head) -> List[Tuple[WeightNames, tf.Variable]]:
  """A `ClassificationHead` as Google's `run_classifier` and `run_race` keep it, at the top level
  (`output_weights` `[num_labels, H]`, `output_bias`), and as Hugging Face's `classifier`."""
  # Google's [num_labels, H] is HF's classifier.weight as it is: no transpose.
  return [(WeightNames("output_weights", "classifier.weight"), head.output_weights),
          (WeightNames("output_bias", "classifier.bias"), head.output_bias)]


def own_head_weights(head, attribute: str) -> List[Tuple[WeightNames, tf.Variable]]:
  """`TaskHead.weight_names`' default, for a head that neither Google nor Hugging Face has: each variable under
  `attribute`/its path inside the head layer, with no Hugging Face name."""
  named = []
  for variable in head.weights:
    path = variable.name.split(":")[0].partition(f"{head.name}/")[2] or variable.name.split(":")[0]
    named.append((WeightNames(f"{attribute}/{path}", None), variable))
  return named


def named_weights(model) -> List[Tuple[WeightNames, tf.Variable]]:
  """Every variable of a built model of this package, with its outside names.

  A pretrainer without its sentence-order head has no `cls/seq_relationship` (`sop_classifier`) names. A
  fine-tuned model's head is named as its `task_heads.TaskHead` says.
  """
  if not model.built:
    raise ValueError(f"Model {model.name} must be built (called once) before its weights are named.")
  named = _encoder_weights(getattr(model, "encoder", model))
  if getattr(model, "masked_lm_head", None) is not None:
    named += _pretraining_head_weights(model)
  head = task_heads.head_of(model)
  if head is not None:
    layer = getattr(model, head.attribute)
    named += head.weight_names(layer) if head.weight_names else own_head_weights(layer, head.attribute)
  return named
