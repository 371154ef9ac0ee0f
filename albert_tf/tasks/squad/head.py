"""SQuAD's two heads in the registry: v1's span logits (Google's `cls/squad`, Hugging Face's
`AlbertForQuestionAnswering`) and v2's XLNet-style head (Google's `start_logits`, `end_logits`, `answer_class`
scopes; transformers has no ALBERT class for it)."""

from typing import Dict, List, Tuple

import tensorflow as tf

from albert_tf.modeling import task_heads
from albert_tf.modeling.config import AlbertConfig
from albert_tf.modeling.weight_names import WeightNames, dense_weights, layer_norm_weights
from albert_tf.tasks.squad import serving
from albert_tf.tasks.squad.model import AlbertQuestionAnswerer, AlbertQuestionAnswererV2


def v1_weight_names(head) -> List[Tuple[WeightNames, tf.Variable]]:
  # Google's [2, H] is HF's qa_outputs.weight as it is.
  return [(WeightNames("cls/squad/output_weights", "qa_outputs.weight"), head.output_weights),
          (WeightNames("cls/squad/output_bias", "qa_outputs.bias"), head.output_bias)]


def v2_weight_names(head) -> List[Tuple[WeightNames, tf.Variable]]:
  named = dense_weights(head.start_dense, "start_logits/dense", None)
  named += dense_weights(head.end_dense_0, "end_logits/dense_0", None)
  named += layer_norm_weights(head.end_layer_norm, "end_logits/LayerNorm", None)
  named += dense_weights(head.end_dense_1, "end_logits/dense_1", None)
  named += dense_weights(head.answer_class_dense_0, "answer_class/dense_0", None)
  named += dense_weights(head.answer_class_dense_1, "answer_class/dense_1", None)
  return named


def rebuild_v2(config: AlbertConfig, shapes: Dict[str, List[int]], task_info: Dict) -> AlbertQuestionAnswererV2:
  """The run's beam (its task.json), else Google's 5 × 5."""
  del shapes
  model = AlbertQuestionAnswererV2(config, task_info.get("start_n_top", 5), task_info.get("end_n_top", 5))
  model(model.dummy_inputs(), training=False)
  return model


SQUAD_V1_HEAD = task_heads.register(task_heads.TaskHead(
    attribute="squad_head", description="SQuAD v1 head", model_class=AlbertQuestionAnswerer,
    weight_names=v1_weight_names, serving_module=serving.serving_module,
    hf_config=lambda model: {"architectures": ["AlbertForQuestionAnswering"], "num_labels": 2},
    # AlbertForQuestionAnswering has no pooler (transformers builds it with add_pooling_layer=False).
    hf_dropped_prefixes=("albert.pooler.",), google_scope="cls/squad",
    serving_options_of_run=serving.run_serving_options))
SQUAD_V2_HEAD = task_heads.register(task_heads.TaskHead(
    attribute="squad_v2_head", description="SQuAD v2 head", model_class=AlbertQuestionAnswererV2,
    weight_names=v2_weight_names, rebuild=rebuild_v2, serving_module=serving.serving_module,
    google_scope="start_logits", serving_options_of_run=serving.run_serving_options))
