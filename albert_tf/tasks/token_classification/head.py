"""The token classifier's head in the registry: `run_classifier`'s layout at every position (top-level
`output_weights` `[num_labels, H]`) and Hugging Face's `AlbertForTokenClassification`, both ways."""

from typing import Dict, List, Optional, Sequence, Tuple

from albert_tf.modeling import task_heads
from albert_tf.modeling.config import AlbertConfig
from albert_tf.modeling.weight_names import top_level_head_weights
from albert_tf.tasks.token_classification import serving
from albert_tf.tasks.token_classification.model import AlbertTokenClassifier

ATTRIBUTE = "token_classifier_head"
HF_ARCHITECTURE = "AlbertForTokenClassification"


def label_names(labels: Optional[Sequence[str]], num_labels: int) -> Tuple[str, ...]:
  """`labels` when there are `num_labels` distinct ones, else transformers' default names ("LABEL_0", ...)."""
  if labels and len(set(labels)) == len(labels) == num_labels:
    return tuple(labels)
  return tuple(f"LABEL_{index}" for index in range(num_labels))


def built(config: AlbertConfig, labels: Sequence[str], dropout_rate: float = 0.1) -> AlbertTokenClassifier:
  """The model with every variable created, ready to be restored or filled."""
  model = AlbertTokenClassifier(config, labels, dropout_rate)
  model(model.dummy_inputs(), training=False)
  return model


def rebuild(config: AlbertConfig, shapes: Dict[str, List[int]], task_info: Dict) -> AlbertTokenClassifier:
  """The token classifier of a checkpoint: as many labels as its head has, named by its run's task.json."""
  num_labels = shapes[f"{ATTRIBUTE}/output_weights"][0]
  return built(config, label_names(task_info.get("label_list"), num_labels))


def hf_rebuild(config: AlbertConfig, values: Dict) -> AlbertTokenClassifier:
  """The token classifier of an `AlbertForTokenClassification` folder, with its config.json's labels."""
  id2label = values.get("id2label") or {}
  num_labels = len(id2label) or values.get("num_labels", 2)
  labels = [id2label.get(str(index)) for index in range(num_labels)]
  dropout_rate = values.get("classifier_dropout_prob", 0.1)
  if dropout_rate is None:  # transformers' fallback
    dropout_rate = values.get("hidden_dropout_prob", 0.0)
  return built(config, label_names(labels if all(labels) else None, num_labels), dropout_rate)


def run_info(model: AlbertTokenClassifier) -> Dict:
  """The labels, as a run's task.json records them (`rebuild` names the head's outputs by them)."""
  return {"label_list": list(model.label_names)}


def hf_config(model: AlbertTokenClassifier) -> Dict:
  return {"architectures": [HF_ARCHITECTURE],
          "id2label": {str(index): name for index, name in enumerate(model.label_names)},
          "label2id": {name: index for index, name in enumerate(model.label_names)},
          "classifier_dropout_prob": model.dropout_rate}


# Google has no token classification script: its run_classifier layout, which classification and multiple
# choice share, cannot tell the head apart in a Google checkpoint (google_scope None).
TOKEN_CLASSIFIER_HEAD = task_heads.register(task_heads.TaskHead(
    attribute=ATTRIBUTE, description="token classifier head", model_class=AlbertTokenClassifier,
    weight_names=top_level_head_weights, rebuild=rebuild, serving_module=serving.serving_module,
    hf_config=hf_config,
    # AlbertForTokenClassification has no pooler (transformers builds it with add_pooling_layer=False).
    hf_dropped_prefixes=("albert.pooler.",), hf_architecture=HF_ARCHITECTURE, hf_rebuild=hf_rebuild,
    serving_options_of_run=serving.run_serving_options, run_info=run_info))
