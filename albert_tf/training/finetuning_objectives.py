"""What the fine-tuning objectives share: `FineTuningDefaults`, `ExampleSoftmaxDefaults`, and the helpers of
their metrics and files.

Each job's objective lives in its task package (`albert_tf.tasks`) and is a `finetuning.FineTuningObjective`:
`loop.Trainer`'s loss and metrics, and the driver's model, inputs, evaluation, prediction files and export.
Of its 19 members a task must say only what is its own: its reading (`read_examples`, `encode`), its model
(`build_model`) and its name (`task_name`); a task that picks one of several answers per example
(`ExampleSoftmaxDefaults`) gets its loss, metrics and prediction files too. docs/adding-a-task.md counts them.
"""

from typing import Dict, List

import numpy as np
import tensorflow as tf
import tf_keras

from albert_tf.data.finetuning_dataset import EncodedSplit
from albert_tf.data.task_readers import Example
from albert_tf.errors import TaskError

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


def refuse_run_of_another_task(info: Dict, task_name: str, output_dir: str) -> None:
  """Raises `TaskError` unless the task.json `info` of `output_dir` is a run of `task_name`."""
  if info.get("task") != task_name:
    raise TaskError(f"--output_dir {output_dir} holds a run of task {info.get('task')!r}, not {task_name!r}.")


class FineTuningDefaults:
  """What objectives share unless they say otherwise: a task head, the examples of their `task`, nothing learned
  from the train split, a loss averaged over examples, a task.json that records the task's name (`task_name`)
  and refuses a run of another, and the fine-tuned model itself exported as a SavedModel."""

  has_head = True
  loss_normalizers = staticmethod(example_count)

  def run_info(self) -> Dict:
    return {"task": self.task_name}

  def adopt_run_info(self, info: Dict, output_dir: str) -> None:
    refuse_run_of_another_task(info, self.task_name, output_dir)

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


class ExampleSoftmaxDefaults(FineTuningDefaults):
  """The training and evaluation of a task that picks one of several answers per example (a class, an option):
  cross-entropy of the softmax of the model's `logits` against the example's label id, accuracy as the metric
  that picks the best checkpoint, and Google's `test_results.tsv` (probabilities) and `submit_results.tsv`
  (the predicted id, or its name from `label_names` when the task has them)."""

  primary_metric = "accuracy"
  sum_names = ("loss", "correct", "examples")
  progress_groups = (("loss", "accuracy"),)
  label_names = None  # the answers' names by id, for `submit_results.tsv`; None writes the ids

  def model_inputs(self, batch) -> Dict[str, tf.Tensor]:
    """What the model is called on, of a batch: by default the split's one packed sequence ("inputs")."""
    return batch["inputs"]

  def replica_loss(self, model):
    """(batch, global examples) -> (this batch's share of the mean cross-entropy, its sums)."""

    def loss_and_sums(batch, normalizers):
      logits = tf.cast(model(self.model_inputs(batch), training=True)["logits"], tf.float32)
      loss = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=batch["labels"], logits=logits)
      correct = tf.cast(tf.equal(tf.argmax(logits, -1, output_type=tf.int32), batch["labels"]), tf.float32)
      sums = tf.stack([tf.reduce_sum(loss), tf.reduce_sum(correct), tf.cast(tf.size(loss), tf.float32)])
      return sums[0] / normalizers[0], sums

    return loss_and_sums

  def metrics_from_sums(self, sums) -> Dict[str, float]:
    values = dict(zip(self.sum_names, np.asarray(sums, np.float64)))
    return {"loss": safe_ratio(values["loss"], values["examples"]),
            "accuracy": safe_ratio(values["correct"], values["examples"])}

  def predict(self, model, batch) -> tf.Tensor:
    return tf.cast(model(self.model_inputs(batch), training=False)["logits"], tf.float32)

  def evaluation_metrics(self, outputs: np.ndarray, split: EncodedSplit) -> Dict[str, float]:
    """Accuracy and the loss, and Google's `eval_accuracy`, `eval_loss`."""
    loss = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=split.labels, logits=outputs).numpy()
    accuracy = float(np.mean(outputs.argmax(-1) == split.labels)) if len(split.labels) else 0.0
    return with_google_names({"accuracy": accuracy, "loss": float(loss.mean()) if len(loss) else 0.0})

  def prediction_files(self, outputs: np.ndarray, split: EncodedSplit, output_dir: str) -> Dict[str, str]:
    del output_dir
    probabilities = tf.nn.softmax(outputs).numpy()
    ids = probabilities.argmax(-1)
    predictions = [str(self.label_names[i]) if self.label_names is not None else str(i) for i in ids]
    return prediction_tables(split.guids, predictions, probabilities.tolist())
