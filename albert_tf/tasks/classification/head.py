"""The classifier's head in the registry: Google's `run_classifier` layout and Hugging Face's
`AlbertForSequenceClassification`."""

from typing import Dict, List, Optional, Tuple

from albert_tf.modeling import task_heads
from albert_tf.modeling.config import AlbertConfig
from albert_tf.modeling.weight_names import top_level_head_weights
from albert_tf.tasks.classification import serving
from albert_tf.tasks.classification.model import AlbertClassifier

ATTRIBUTE = "classifier_head"


def label_names(task_info: Dict, num_outputs: int) -> Optional[Tuple[str, ...]]:
  """A classifier's labels: from its run's task.json, else the class ids ("0", "1", ...); None for regression."""
  if num_outputs == 1:
    return None
  labels = task_info.get("label_list")
  if labels and len(labels) == num_outputs:
    return tuple(labels)
  return tuple(str(index) for index in range(num_outputs))


def rebuild(config: AlbertConfig, shapes: Dict[str, List[int]], task_info: Dict) -> AlbertClassifier:
  """The classifier of a checkpoint: as many outputs as its head has, with the labels of its task.json."""
  num_outputs = shapes[f"{ATTRIBUTE}/output_weights"][0]
  model = AlbertClassifier(config, label_names(task_info, num_outputs))
  model(model.dummy_inputs(), training=False)
  return model


def hf_config(model: AlbertClassifier) -> Dict:
  names = model.label_names or ("LABEL_0",)  # a regression's one output
  return {"architectures": ["AlbertForSequenceClassification"],
          "id2label": {str(index): name for index, name in enumerate(names)},
          "label2id": {name: index for index, name in enumerate(names)},
          "problem_type": "regression" if model.is_regression else "single_label_classification",
          "classifier_dropout_prob": model.dropout_rate}


CLASSIFIER_HEAD = task_heads.register(task_heads.TaskHead(
    attribute=ATTRIBUTE, description="classifier head", model_class=AlbertClassifier,
    weight_names=top_level_head_weights, rebuild=rebuild, serving_module=serving.serving_module,
    hf_config=hf_config, serving_options_of_run=serving.run_serving_options))
