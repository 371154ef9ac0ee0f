"""Google's RACE fine-tuning (`run_race.py`) as an objective of `finetuning.FineTuning`: one `[CLS] article
[SEP] question+option [SEP]` per option; cross-entropy of the softmax over the options; accuracy over all
questions and per RACE level (middle, high)."""

from typing import Dict, List

import numpy as np
import tensorflow as tf

from albert_tf.data.finetuning_dataset import EncodedSplit, packed_ids
from albert_tf.errors import OptionError, TaskError
from albert_tf.modeling.config import AlbertConfig
from albert_tf.tasks.race import data as race_data
from albert_tf.tasks.race import metrics as race_metrics
from albert_tf.tasks.race.model import AlbertMultipleChoice
from albert_tf.text.tokenizer import SentencePieceTokenizer
from albert_tf.training.finetuning_objectives import (FineTuningDefaults, prediction_tables, safe_ratio,
                                                      with_google_names)


class MultipleChoiceObjective(FineTuningDefaults):
  """Google's RACE fine-tuning: a score per option, cross-entropy of their softmax.

  Args:
    tokenizer: the Python tokenizer of the model.
    max_qa_length: question+option pieces kept (the last ones; Google's `--max_qa_length`).
    high_only, middle_only: one RACE level only (Google's flags).
  """

  has_head = True
  primary_metric = "accuracy"
  sum_names = ("loss", "correct", "examples")
  progress_groups = (("loss", "accuracy"),)
  task_name = "race"

  def __init__(self, tokenizer: SentencePieceTokenizer, max_qa_length: int = 128, high_only: bool = False,
               middle_only: bool = False):
    if high_only and middle_only:
      raise OptionError("--high_only and --middle_only exclude each other.")
    self.tokenizer = tokenizer
    self.max_qa_length = max_qa_length
    self.high_only = high_only
    self.middle_only = middle_only

  def run_info(self) -> Dict:
    return {"task": self.task_name, "max_qa_length": self.max_qa_length}

  def adopt_run_info(self, info: Dict, output_dir: str):
    if info.get("task") != self.task_name:
      raise TaskError(f"--output_dir {output_dir} holds a run of task {info.get('task')!r}, not {self.task_name!r}.")

  def read_examples(self, data_dir: str, split: str) -> List[race_data.RaceExample]:
    return race_data.read_race_examples(data_dir, split, self.high_only, self.middle_only)

  def encode(self, examples: List[race_data.RaceExample], tokenizer, max_seq_length: int,
             description: str) -> EncodedSplit:
    """One row per question; each option's sequence under `choice_<k>`."""
    del tokenizer, description
    features = race_data.race_features(examples, self.tokenizer, max_seq_length, self.max_qa_length)
    num_options = len(features[0].choice_ids)
    sequences = {f"choice_{k}": packed_ids([f.choice_ids[k] for f in features],
                                           [f.first_segment_lengths[k] for f in features])
                 for k in range(num_options)}
    labels = np.array([max(example.label, 0) for example in examples], np.int32)
    return EncodedSplit(sequences, labels, [example.example_id for example in examples], max_seq_length, examples)

  def build_model(self, config: AlbertConfig, dropout_prob: float, recompute_grad: bool = False):
    return AlbertMultipleChoice(config, dropout_prob, recompute_grad)

  @staticmethod
  def _options(batch):
    """The model inputs `[batch, options, seq]` from the per-option sequences of a batch."""
    names = sorted((name for name in batch if name.startswith("choice_")), key=lambda name: int(name[7:]))
    return {key: tf.stack([batch[name][key] for name in names], axis=1) for key in batch[names[0]]}

  def replica_loss(self, model):
    """(batch, global examples) -> (this batch's share of the mean cross-entropy, its sums)."""

    def loss_and_sums(batch, normalizers):
      logits = model(self._options(batch), training=True)["logits"]
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
    return model(self._options(batch), training=False)["logits"]

  def evaluation_metrics(self, outputs: np.ndarray, split: EncodedSplit) -> Dict[str, float]:
    """Accuracy over all questions and per level, the loss, and Google's `eval_accuracy`, `eval_loss`."""
    loss = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=split.labels, logits=outputs).numpy()
    metrics = race_metrics.race_accuracy(outputs.argmax(-1), split.labels, [e.level for e in split.source])
    return with_google_names(dict({name: float(value) for name, value in metrics.items()}, loss=float(loss.mean())))

  def prediction_files(self, outputs: np.ndarray, split: EncodedSplit, output_dir: str) -> Dict[str, str]:
    """`submit_results.tsv` (question id, answer letter) and `test_results.tsv` (the options' probabilities)."""
    del output_dir
    probabilities = tf.nn.softmax(outputs).numpy()
    letters = [chr(ord("A") + index) for index in probabilities.argmax(-1)]
    return prediction_tables(split.guids, letters, probabilities.tolist())
