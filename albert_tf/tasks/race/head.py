"""The multiple-choice head in the registry: Google's `run_race` layout (top-level `output_weights` `[1, H]`)
and Hugging Face's `AlbertForMultipleChoice`."""

from typing import Dict

from albert_tf.modeling import task_heads
from albert_tf.modeling.weight_names import top_level_head_weights
from albert_tf.tasks.race import serving
from albert_tf.tasks.race.model import AlbertMultipleChoice


def hf_config(model: AlbertMultipleChoice) -> Dict:
  return {"architectures": ["AlbertForMultipleChoice"], "classifier_dropout_prob": model.dropout_rate}


# Google's run_race keeps the head at the top level, as run_classifier does: its checkpoints are not told apart
# (google_scope None).
CHOICE_HEAD = task_heads.register(task_heads.TaskHead(
    attribute="choice_head", description="multiple-choice head", model_class=AlbertMultipleChoice,
    weight_names=top_level_head_weights, serving_module=serving.serving_module,
    hf_config=hf_config))
