"""Sentence-BERT's objectives: each text encoded alone, pooled (mean, `[CLS]` or max), optionally projected,
L2-normalised. `SentenceSimilarityObjective` regresses the cosine of a pair onto its score scaled to [0, 1],
evaluated by Spearman correlation; `distillation.DistillationObjective` trains the same encoder from a
teacher's embeddings; both derive from `SentenceEncoderDefaults`."""

from typing import Dict, List, Optional, Tuple

import numpy as np
import tensorflow as tf
import tf_keras

from albert_tf.data.finetuning_dataset import EncodedSplit, PackedSequences, pack_texts
from albert_tf.data.task_readers import Example
from albert_tf.errors import OptionError, TaskError
from albert_tf.modeling.config import AlbertConfig
from albert_tf.modeling.layers.pooling import POOLING_MODES
from albert_tf.tasks.classification.catalogue import KNOWN_TASKS, get_task
from albert_tf.tasks.classification.task_types import Task
from albert_tf.tasks.similarity.head import SENTENCE_EMBEDDING_INFO, embedding_info
from albert_tf.tasks.similarity.model import AlbertSentenceEncoder
from albert_tf.text.graph_tokenizer import GraphTokenizer
from albert_tf.training import metrics as metrics_lib
from albert_tf.training.finetuning_objectives import (FineTuningDefaults, prediction_tables,
                                                      refuse_run_of_another_task, safe_ratio)


class SentenceEncoderDefaults(FineTuningDefaults):
  """What the sentence-encoder objectives share: an `AlbertSentenceEncoder` of the chosen pooling and
  projection (recorded in the run's task.json, so that later runs, exports and `build_model_for_checkpoint`
  rebuild the same model), a mean loss over examples, and the whole encoder exported.

  Args:
    pooling: "mean", "cls" or "max" (see `TokenPooling`).
    projection_dim: the width of a Dense + tanh projection after pooling; None for none.

  Raises:
    OptionError: an unknown pooling or a projection width that is not positive.
  """

  has_head = False
  sum_names = ("loss", "examples")
  progress_groups = (("loss",),)

  def __init__(self, pooling: str = "mean", projection_dim: Optional[int] = None):
    if pooling not in POOLING_MODES:
      raise OptionError(f"--pooling={pooling} is not one of {', '.join(POOLING_MODES)}.")
    if projection_dim is not None and projection_dim <= 0:
      raise OptionError(f"--projection_dim={projection_dim} must be positive.")
    self.pooling = pooling
    self.projection_dim = projection_dim

  def embedding_info(self) -> Dict:
    """The task.json entry that rebuilds the model (`head.embedding_info`)."""
    return embedding_info(self.pooling, self.projection_dim)

  def check_embedding_info(self, info: Dict, output_dir: str):
    """Refuses to go on with a run of `output_dir` whose model pools or projects otherwise."""
    # Runs from before pooling was a choice pooled by the mean, without projection.
    earlier = info.get(SENTENCE_EMBEDDING_INFO, {"pooling": "mean", "projection_dim": None})
    ours = self.embedding_info()[SENTENCE_EMBEDDING_INFO]
    if earlier != ours:
      raise TaskError(f"--output_dir {output_dir} holds a sentence encoder with pooling {earlier['pooling']} and "
                      f"projection_dim {earlier['projection_dim']}; this run asks for pooling {ours['pooling']} and "
                      f"projection_dim {ours['projection_dim']}. Use a new --output_dir.")

  def build_model(self, config: AlbertConfig, dropout_prob: float,
                  recompute_grad: bool = False) -> AlbertSentenceEncoder:
    del dropout_prob  # no task head: only the encoder's own dropout applies
    return AlbertSentenceEncoder(config, self.pooling, self.projection_dim, recompute_grad)

  def metrics_from_sums(self, sums) -> Dict[str, float]:
    values = dict(zip(self.sum_names, np.asarray(sums, np.float64)))
    return {"loss": safe_ratio(values["loss"], values["examples"])}

  def exported_model(self, model) -> tf_keras.Model:
    """What `--export_dir` serves: the sentence encoder, whose SavedModel embeds sentences with its head."""
    return model


class SentenceSimilarityObjective(SentenceEncoderDefaults):
  """Sentence-BERT's siamese regression: the cosine of two embeddings fits the pair's scaled score.

  Args:
    task: a regression task of text pairs (`sts-b`, `klue-sts`, `korsts`, or `tsv` with a second text column
      and a score).
    score_range: the (lowest, highest) score, mapped to cosines 0 and 1; default the extremes of the train
      split (STS-B's are 0 and 5), or of an earlier run of the same output_dir.
    pooling, projection_dim: the sentence encoder's (see `SentenceEncoderDefaults`).

  Raises:
    TaskError: a task that is not a regression of pairs, or an empty score range.
  """

  primary_metric = "spearman"

  def __init__(self, task: Task, score_range: Optional[Tuple[float, float]] = None, pooling: str = "mean",
               projection_dim: Optional[int] = None):
    super().__init__(pooling, projection_dim)
    check_similarity_task(task)
    self.task = task
    self.score_range = None
    if score_range is not None:
      self._set_score_range(*score_range)

  def _set_score_range(self, low: float, high: float):
    if not high > low:
      raise TaskError(f"The score range must go from a lower to a higher score, not ({low}, {high}).")
    self.score_range = (float(low), float(high))

  def run_info(self) -> Dict:
    return dict(self.embedding_info(), task=self.task.name,
                score_range=list(self.score_range) if self.score_range else None)

  def adopt_run_info(self, info: Dict, output_dir: str):
    refuse_run_of_another_task(info, self.task.name, output_dir)
    self.check_embedding_info(info, output_dir)
    if info["score_range"] is None:
      return
    if self.score_range is None:
      self._set_score_range(*info["score_range"])
    elif list(self.score_range) != info["score_range"]:
      raise TaskError(f"--output_dir {output_dir} was trained with score range {info['score_range']}; this run's "
                      f"is {list(self.score_range)}. Use a new --output_dir.")

  def learn_from_train(self, examples: List[Example]):
    """Without a given (or an earlier run's) score range, takes the train split's lowest and highest score."""
    if self.score_range is None:
      scores = [example.label for example in examples]
      self._set_score_range(min(scores), max(scores))

  def encode(self, examples: List[Example], tokenizer: GraphTokenizer, max_seq_length: int,
             description: str) -> EncodedSplit:
    labels = np.array([example.label or 0.0 for example in examples], np.float32)
    return EncodedSplit(pack_pairs_apart(examples, tokenizer, max_seq_length, description), labels,
                        [example.guid for example in examples], max_seq_length)

  def _cosine(self, model, batch, training: bool):
    embedding_a = model(batch["inputs_a"], training=training)["embedding"]
    embedding_b = model(batch["inputs_b"], training=training)["embedding"]
    return tf.reduce_sum(embedding_a * embedding_b, axis=-1)

  def _target(self, scores):
    low, high = self.score_range
    return (scores - low) / (high - low)

  def replica_loss(self, model):
    """(batch, global examples) -> (this batch's share of the global-batch mean squared error, its sums)."""

    def loss_and_sums(batch, normalizers):
      squared_error = tf.square(self._cosine(model, batch, training=True) - self._target(batch["labels"]))
      sums = tf.stack([tf.reduce_sum(squared_error), tf.cast(tf.size(squared_error), tf.float32)])
      return sums[0] / normalizers[0], sums

    return loss_and_sums

  def predict(self, model, batch) -> tf.Tensor:
    """The cosine similarity of each pair, float32 `[batch]`."""
    return self._cosine(model, batch, training=False)

  def evaluation_metrics(self, outputs: np.ndarray, split: EncodedSplit) -> Dict[str, float]:
    labels = split.labels
    values = {"spearman": metrics_lib.spearman(outputs, labels), "pearson": metrics_lib.pearson(outputs, labels)}
    if self.score_range is not None:  # the training loss; a model never trained here has no score range
      values["loss"] = metrics_lib.mse(outputs, self._target(labels))
    return values

  def prediction_files(self, outputs: np.ndarray, split: EncodedSplit, output_dir: str) -> Dict[str, str]:
    """Per pair: its cosine similarity."""
    del output_dir
    return prediction_tables(split.guids, [repr(float(value)) for value in outputs], [[float(v)] for v in outputs])


def similarity_task_names() -> List[str]:
  """The known tasks whose examples are scored text pairs (besides `tsv`, which is one when laid out so)."""
  return [name for name in KNOWN_TASKS if name != "tsv" and get_task(name).is_regression and get_task(name).is_pair]


def check_similarity_task(task: Task):
  """Refuses a task whose examples are not scored text pairs (what STS training and evaluation need).

  Raises:
    TaskError: a classification, or a regression of single texts.
  """
  if task.is_regression and task.is_pair:
    return
  kind = "a regression of single texts" if task.is_regression else "a classification"
  raise TaskError(f"--task_name={task.name} is {kind}; sentence similarity needs scored text pairs: "
                  f"{', '.join(similarity_task_names())}, or tsv with --tsv_text_b_column and --tsv_is_regression.")


def pack_pairs_apart(examples: List[Example], tokenizer: GraphTokenizer, max_seq_length: int,
                     description: str) -> Dict[str, PackedSequences]:
  """Each text of each pair packed alone (`[CLS] text [SEP]`), as a siamese encoder reads them: `inputs_a`
  and `inputs_b`."""
  return {
      "inputs_a": pack_texts(tokenizer, [e.text_a for e in examples], None, max_seq_length, f"{description} (a)"),
      "inputs_b": pack_texts(tokenizer, [e.text_b or "" for e in examples], None, max_seq_length,
                             f"{description} (b)"),
  }
