"""Cross-lingual distillation of sentence embeddings (Reimers & Gurevych 2020, "Making Monolingual Sentence
Embeddings Multilingual using Knowledge Distillation").

A fixed teacher embeds the source side of a parallel file once; the student, an `AlbertSentenceEncoder`
(typically with a vocabulary of both languages), learns to map a source sentence AND its translation to the
teacher's embedding of the source: the loss is the mean squared error of both student embeddings against it.
Teacher embeddings are L2-normalised before use, as the student's are, so that the target is a direction.

Each checkpoint is scored on held-out pairs by translation retrieval (top-1 accuracy of source → translation
and translation → source among the dev pairs; `retrieval_accuracy`, their mean, picks the best checkpoint),
the distillation MSE, and, given an STS dev set, its Spearman and Pearson correlations.
"""

import dataclasses
import io
from typing import Dict, List, Optional, Sequence

import numpy as np
import tensorflow as tf

from albert_tf import files
from albert_tf.data.finetuning_dataset import EncodedSplit
from albert_tf.data.task_readers import Example
from albert_tf.errors import DataError, OptionError
from albert_tf.tasks.classification.task_types import Task
from albert_tf.tasks.similarity import embedders
from albert_tf.tasks.similarity.objective import SentenceEncoderDefaults, check_similarity_task, pack_pairs_apart
from albert_tf.tasks.similarity.parallel_text import ParallelPair, split_pairs
from albert_tf.text.graph_tokenizer import GraphTokenizer
from albert_tf.training import metrics as metrics_lib
from albert_tf.training.finetuning_objectives import refuse_run_of_another_task

TASK_NAME = "distillation"


@dataclasses.dataclass(frozen=True)
class ParallelExample(Example):
  """A pair of a parallel file (`text_a` the source, `text_b` its translation) and its teacher embedding's row."""

  teacher_row: int = -1


def teacher_embeddings(teacher: str, sources: Sequence[str], student_size: int, projection_dim: Optional[int],
                       batch_size: int = 64) -> np.ndarray:
  """The teacher's unit-length embeddings of `sources`, float32 `[len(sources), D]`.

  Args:
    teacher: a SavedModel with a `sentence_embedding` signature, or a `.npy` of precomputed embeddings, one
      row per pair of the parallel file, in file order.
    sources: the source sentences of every pair of the parallel file, in file order.
    student_size: the student's embedding width (its projection's, else its hidden size).
    projection_dim: the student's --projection_dim, for the message when the widths differ.

  Raises:
    InputFileError: no such teacher.
    DataError: a `.npy` that is not a finite 2-D float array with a row per pair.
    OptionError: the teacher's width differs from the student's (checked on the first batch, before the rest).
  """
  if teacher.endswith(".npy"):
    files.require_file(teacher, "--teacher file")
    try:
      embeddings = np.load(io.BytesIO(files.read_bytes(teacher)), allow_pickle=False)
    except ValueError as error:
      raise DataError(f"--teacher {teacher}: not a NumPy array file ({error}).") from None
    if embeddings.ndim != 2 or embeddings.dtype.kind != "f" or len(embeddings) != len(sources):
      raise DataError(f"--teacher {teacher} holds a {embeddings.dtype} array of shape {list(embeddings.shape)}; "
                      f"distillation needs floats of shape [{len(sources)}, D]: one embedding per pair of the "
                      "parallel file, in file order.")
    _check_width(embeddings.shape[1], student_size, projection_dim, teacher)
  else:
    embed = embedders.saved_model_embedder(teacher, batch_size)
    first = embed(sources[:1])
    _check_width(first.shape[1], student_size, projection_dim, teacher)
    embeddings = np.concatenate([first, embed(sources[1:])]) if len(sources) > 1 else first
  embeddings = np.asarray(embeddings, np.float32)
  if not np.isfinite(embeddings).all():
    raise DataError(f"--teacher {teacher}: the embeddings hold NaN or infinite values.")
  norms = np.linalg.norm(embeddings, axis=1, keepdims=True)
  if not norms.all():
    raise DataError(f"--teacher {teacher}: embedding {int(np.argmin(norms[:, 0]))} is all zeros.")
  return embeddings / norms


def _check_width(teacher_size: int, student_size: int, projection_dim: Optional[int], teacher: str):
  if teacher_size == student_size:
    return
  if projection_dim is not None:
    raise OptionError(f"The teacher {teacher} gives embeddings of size {teacher_size}; the student's "
                      f"--projection_dim={projection_dim} must equal it.")
  raise OptionError(f"The teacher {teacher} gives embeddings of size {teacher_size}; the student's are of size "
                    f"{student_size} (its hidden_size). Set --projection_dim={teacher_size} to project them.")


def retrieval_accuracy(queries: np.ndarray, candidates: np.ndarray, candidate_texts: Sequence[str]) -> float:
  """Top-1 accuracy of finding each query's own candidate (row i for query i) by dot product among all.

  Retrieving another candidate of the same text (two sources with one translation) counts as found.
  """
  best = np.argmax(queries @ candidates.T, axis=1)
  texts = np.asarray(candidate_texts, dtype=object)
  return float(np.mean(texts[best] == texts))


_NO_TEST_SPLIT = ("Distillation has no test split to predict (--do_predict); score an STS test set with "
                  "tools/evaluate_sts.py.")


class DistillationObjective(SentenceEncoderDefaults):
  """The student learns the teacher's embedding of each source for the source and for its translation.

  Args:
    pairs: every pair of the parallel file, in file order.
    teacher: `teacher_embeddings` of their sources.
    dev_size: pairs held out (drawn by `seed`) to score checkpoints; the others are trained on.
    seed: the seed of the held-out draw.
    sts_task: an STS task whose dev split is scored too (Spearman, Pearson); None for none.
    pooling, projection_dim: the student's (see `SentenceEncoderDefaults`).

  Raises:
    DataError: a teacher without a row per pair.
    OptionError: a hold-out leaving nothing to train on.
    TaskError: an `sts_task` that is not a regression of pairs.
  """

  primary_metric = "retrieval_accuracy"

  def __init__(self, pairs: List[ParallelPair], teacher: np.ndarray, dev_size: int, seed: int,
               sts_task: Optional[Task] = None, pooling: str = "mean", projection_dim: Optional[int] = None):
    super().__init__(pooling, projection_dim)
    if len(teacher) != len(pairs):
      raise DataError(f"{len(teacher)} teacher embeddings for {len(pairs)} parallel pairs.")
    if sts_task is not None:
      check_similarity_task(sts_task)
    self.pairs = pairs
    self.teacher = teacher
    self.sts_task = sts_task
    self.dev_size = dev_size
    self.rows = dict(zip(("train", "dev"), split_pairs(len(pairs), dev_size, seed)))

  def run_info(self) -> Dict:
    return dict(self.embedding_info(), task=TASK_NAME, teacher_size=int(self.teacher.shape[1]))

  def adopt_run_info(self, info: Dict, output_dir: str):
    refuse_run_of_another_task(info, TASK_NAME, output_dir)
    self.check_embedding_info(info, output_dir)

  def read_examples(self, data_dir: Optional[str], split: str) -> List[Example]:
    """The parallel pairs of `split`; for dev, then the STS task's dev examples when there is one."""
    if split == "test":
      raise OptionError(_NO_TEST_SPLIT)
    if split == "dev" and not self.dev_size:
      raise OptionError("--do_eval scores held-out pairs: set --parallel_dev_size above 0.")
    examples = [ParallelExample(f"line-{self.pairs[row].line_number}", self.pairs[row].source,
                                self.pairs[row].translation, teacher_row=int(row)) for row in self.rows[split]]
    if split == "dev" and self.sts_task is not None:
      if not data_dir:
        raise OptionError(f"--task_name={self.sts_task.name} scores its dev split: give its --data_dir.")
      examples += self.sts_task.read_examples(data_dir, "dev")
    return examples

  def encode(self, examples: List[Example], tokenizer: GraphTokenizer, max_seq_length: int,
             description: str) -> EncodedSplit:
    """Source and translation packed apart; labels: the teacher embeddings (zeros for STS rows). `source`
    holds which rows are pairs, the pairs' texts (retrieval counts a hit on another copy of a text) and the STS
    rows' scores."""
    pairs = [example for example in examples if isinstance(example, ParallelExample)]
    is_pair = np.array([isinstance(example, ParallelExample) for example in examples])
    labels = np.zeros([len(examples), self.teacher.shape[1]], np.float32)
    labels[is_pair] = self.teacher[[pair.teacher_row for pair in pairs]]
    source = {"is_pair": is_pair, "sources": [pair.text_a for pair in pairs],
              "translations": [pair.text_b for pair in pairs],
              "scores": np.array([example.label for example in examples if not isinstance(example, ParallelExample)],
                                 np.float64)}
    return EncodedSplit(pack_pairs_apart(examples, tokenizer, max_seq_length, description), labels,
                        [example.guid for example in examples], max_seq_length, source)

  def replica_loss(self, model):
    """(batch, global examples) -> (this batch's share of the global-batch mean of both columns' MSE, its sums)."""

    def loss_and_sums(batch, normalizers):
      target = batch["labels"]
      squared_error = sum(tf.reduce_mean(tf.square(model(batch[name], training=True)["embedding"] - target), -1)
                          for name in ("inputs_a", "inputs_b"))
      sums = tf.stack([tf.reduce_sum(squared_error), tf.cast(tf.size(squared_error), tf.float32)])
      return sums[0] / normalizers[0], sums

    return loss_and_sums

  def predict(self, model, batch) -> Dict[str, tf.Tensor]:
    """The embeddings of both texts, float32 `[batch, D]` each."""
    return {name: model(batch[name], training=False)["embedding"] for name in ("inputs_a", "inputs_b")}

  def evaluation_metrics(self, outputs: Dict[str, np.ndarray], split: EncodedSplit) -> Dict[str, float]:
    source, pairs = split.source, split.source["is_pair"]
    embedding_a, embedding_b = outputs["inputs_a"], outputs["inputs_b"]
    a, b, target = embedding_a[pairs], embedding_b[pairs], split.labels[pairs]
    values = {
        "retrieval_source_to_translation": retrieval_accuracy(a, b, source["translations"]),
        "retrieval_translation_to_source": retrieval_accuracy(b, a, source["sources"]),
        "mse": float(np.mean(np.square(a - target)) + np.mean(np.square(b - target))) / 2,
        "dev_pairs": int(pairs.sum()),
    }
    values["retrieval_accuracy"] = (values["retrieval_source_to_translation"] +
                                    values["retrieval_translation_to_source"]) / 2
    values["loss"] = 2 * values["mse"]  # as training's: the sum of both columns' mean squared error
    if not pairs.all():
      cosines = np.sum(embedding_a[~pairs] * embedding_b[~pairs], axis=1)
      values["sts_spearman"] = metrics_lib.spearman(cosines, source["scores"])
      values["sts_pearson"] = metrics_lib.pearson(cosines, source["scores"])
    return values

  def prediction_files(self, outputs, split: EncodedSplit, output_dir: str) -> Dict[str, str]:
    """None: a run refuses --do_predict when it reads its splits, before anything is built."""
    del outputs, split, output_dir
    raise OptionError(_NO_TEST_SPLIT)
