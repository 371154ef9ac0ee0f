"""The dependency parser's head in the registry. Google has no parser script and transformers no ALBERT parser
class: the head's TF1 names are our own, under `dependency_parser/`, and it has no Hugging Face names (export
to Hugging Face refuses it)."""

from typing import Dict, List, Sequence, Tuple

import tensorflow as tf

from albert_tf.modeling import task_heads
from albert_tf.modeling.config import AlbertConfig
from albert_tf.modeling.weight_names import WeightNames, dense_weights
from albert_tf.tasks.dependency_parsing import serving
from albert_tf.tasks.dependency_parsing.model import AlbertDependencyParser

ATTRIBUTE = "dependency_parser_head"
GOOGLE_SCOPE = "dependency_parser"


def weight_names(head) -> List[Tuple[WeightNames, tf.Variable]]:
  """Every variable of a `DependencyParserHead`, named
  `dependency_parser/{pos_embeddings,arc/...,relation/...}`."""
  named = [(WeightNames(f"{GOOGLE_SCOPE}/pos_embeddings", None), head.pos_embeddings)] if head.reads_tags else []
  arc, label = head.arc_scorer, head.label_scorer
  for scorer, scope, own_weights in (
      (arc, "arc", ("arc_weights", "head_bias")),
      (label, "relation", ("label_weights", "dependent_weights", "head_weights", "label_bias"))):
    prefix = f"{GOOGLE_SCOPE}/{scope}"
    named += dense_weights(scorer.dependent_mlp, f"{prefix}/dependent_mlp", None)
    named += dense_weights(scorer.head_mlp, f"{prefix}/head_mlp", None)
    named += [(WeightNames(f"{prefix}/{name}", None), getattr(scorer, name))
              for name in ("root",) + own_weights]
  return named


def label_names(labels: Sequence[str], num_labels: int) -> Tuple[str, ...]:
  """The run's relations when they are as many as the head's, else "LABEL_0", "LABEL_1", ..."""
  if labels and len(labels) == num_labels:
    return tuple(labels)
  return tuple(f"LABEL_{index}" for index in range(num_labels))


def rebuild(config: AlbertConfig, shapes: Dict[str, List[int]], task_info: Dict) -> AlbertDependencyParser:
  """The parser of a checkpoint: its sizes from the head's variables, its relations' names from task.json."""
  # A parser trained without tag features has no tag embeddings.
  pos_vocab_size, pos_embedding_size = shapes.get(f"{ATTRIBUTE}/pos_embeddings", (0, 0))
  num_labels, label_units, _ = shapes[f"{ATTRIBUTE}/label_scorer/label_weights"]
  arc_units = shapes[f"{ATTRIBUTE}/arc_scorer/arc_weights"][0]
  model = AlbertDependencyParser(config, label_names(task_info.get("label_list"), num_labels), pos_vocab_size,
                                 pos_embedding_size, arc_units, label_units)
  model(model.dummy_inputs(), training=False)
  return model


# Google's checkpoints hold no parser, so there is no scope to look for in them (google_scope None).
DEPENDENCY_PARSER_HEAD = task_heads.register(task_heads.TaskHead(
    attribute=ATTRIBUTE, description="dependency parser head", model_class=AlbertDependencyParser,
    weight_names=weight_names, rebuild=rebuild, serving_module=serving.serving_module,
    serving_options_of_run=serving.run_serving_options,
    onnx_refusal_signature="parse_text"))  # serving_default takes word features and decodes trees in a loop
