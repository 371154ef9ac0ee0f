"""Google's RACE fine-tuning (`run_race.py`) as an objective of `finetuning.FineTuning`: one `[CLS] article
[SEP] question+option [SEP]` per option; cross-entropy of the softmax over the options; accuracy over all
questions and per RACE level (middle, high)."""

import string
from typing import Dict, List

import numpy as np
import tensorflow as tf

from albert_tf.data.finetuning_dataset import EncodedSplit, packed_ids
from albert_tf.errors import OptionError
from albert_tf.modeling.config import AlbertConfig
from albert_tf.tasks.race import data as race_data
from albert_tf.tasks.race import metrics as race_metrics
from albert_tf.tasks.race.model import AlbertMultipleChoice
from albert_tf.text.tokenizer import SentencePieceTokenizer
from albert_tf.training.finetuning_objectives import ExampleSoftmaxDefaults


class MultipleChoiceObjective(ExampleSoftmaxDefaults):
  """Google's RACE fine-tuning: a score per option, cross-entropy of their softmax (`ExampleSoftmaxDefaults`),
  accuracy per RACE level too, answers written as letters.

  Args:
    tokenizer: the Python tokenizer of the model.
    max_qa_length: question+option pieces kept (the last ones; Google's `--max_qa_length`).
    high_only, middle_only: one RACE level only (Google's flags).
  """

  task_name = "race"
  label_names = string.ascii_uppercase  # an option's letter by its index

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

  def model_inputs(self, batch):
    """The model inputs `[batch, options, seq]` from the per-option sequences of a batch."""
    names = sorted((name for name in batch if name.startswith("choice_")), key=lambda name: int(name[7:]))
    return {key: tf.stack([batch[name][key] for name in names], axis=1) for key in batch[names[0]]}

  def evaluation_metrics(self, outputs: np.ndarray, split: EncodedSplit) -> Dict[str, float]:
    """Accuracy over all questions and per level, the loss, and Google's `eval_accuracy`, `eval_loss`."""
    per_level = race_metrics.race_accuracy(outputs.argmax(-1), split.labels, [e.level for e in split.source])
    return dict(super().evaluation_metrics(outputs, split), **{name: float(value) for name, value in per_level.items()})
