"""What the fine-tuning objectives share: `FineTuningDefaults`, and the helpers of their metrics and files.

Each job's objective lives in its task package (`albert_tf.tasks`) and is a `finetuning.FineTuningObjective`:
`loop.Trainer`'s loss and metrics, and the driver's model, inputs, evaluation, prediction files and export.
"""

from typing import Dict, List

import tensorflow as tf
import tf_keras

from albert_tf.data.task_readers import Example

TEST_RESULTS = "test_results.tsv"
SUBMIT_RESULTS = "submit_results.tsv"
# Our metric names -> those of Google's run_classifier.py (and run_race.py), written beside ours in
# eval_results.txt for scripts that read Google's; STS-B's "pearson" is the same in both.
GOOGLE_METRIC_NAMES = {"accuracy": "eval_accuracy", "loss": "eval_loss", "mcc": "matthew_corr", "mse": "MSE"}


def safe_ratio(numerator: float, denominator: float) -> float:
  return float(numerator / denominator) if denominator else 0.0


def example_count(batch):
  """`loss_normalizers` of a mean over examples: the examples of a batch, `[1]` float32."""
  return tf.cast(tf.shape(batch["labels"])[:1], tf.float32)


def with_google_names(metrics: Dict[str, float]) -> Dict[str, float]:
  """`metrics` plus each under Google's name where Google's scripts name it otherwise."""
  google = {GOOGLE_METRIC_NAMES[name]: value for name, value in metrics.items() if name in GOOGLE_METRIC_NAMES}
  return dict(metrics, **google)


class FineTuningDefaults:
  """What objectives share unless they say otherwise: the examples of their `task`, nothing learned from the
  train split, a loss averaged over examples, and the fine-tuned model itself exported as a SavedModel."""

  loss_normalizers = staticmethod(example_count)

  def read_examples(self, data_dir: str, split: str) -> List[Example]:
    return self.task.read_examples(data_dir, split)

  def learn_from_train(self, examples):
    """Nothing to learn (a classifier's labels are its task's; a tsv task's come from its train split)."""
    del examples

  def exported_model(self, model) -> tf_keras.Model:
    """What `--export_dir` serves: the model with its head (a classifier classifies text, ...)."""
    return model

  def serving_options(self, output_dir: str):
    """Nothing that the SavedModel needs beyond the model (SQuAD's reading settings are an exception)."""
    del output_dir

  def export_files(self, model, export_path: str, max_seq_length: int) -> List[str]:
    """Nothing besides the SavedModel (SQuAD v1's TFLite model is an exception)."""
    del model, export_path, max_seq_length
    return []


def prediction_tables(guids: List[str], predictions: List[str], raw: List[List[float]]) -> Dict[str, str]:
  """Google's `test_results.tsv` (the raw outputs, a line an example) and GLUE's `submit_results.tsv`
  (`index  prediction`), as file name -> text."""
  return {
      SUBMIT_RESULTS: "index\tprediction\n" + "".join(f"{guid}\t{prediction}\n"
                                                     for guid, prediction in zip(guids, predictions)),
      TEST_RESULTS: "".join("\t".join(repr(value) for value in row) + "\n" for row in raw),
  }
