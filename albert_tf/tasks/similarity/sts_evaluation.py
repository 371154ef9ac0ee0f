"""Semantic textual similarity of sentence embeddings, scored as sentence-transformers'
`EmbeddingSimilarityEvaluator` scores it.

Each text of a pair is embedded alone (each distinct text once); four similarities of a pair's two embeddings
(cosine, negative Manhattan distance, negative Euclidean distance, dot product) are each correlated with the
pairs' gold scores, Pearson and Spearman. The model is any `Embedder`: a SavedModel, an albert-tf checkpoint,
or a Hugging Face or sentence-transformers folder (`ModelSource`). `tools/evaluate_sts.py` runs it on a task's
split.
"""

import csv
import dataclasses
import io
from typing import Dict, List, Optional, Sequence

import numpy as np

from albert_tf.data import task_readers
from albert_tf.errors import OptionError, TaskError
from albert_tf.tasks.similarity import embedders
from albert_tf.tasks.similarity.embedders import Embedder
from albert_tf.training import metrics

# sentence-transformers' names, in its order.
SIMILARITIES = ("cosine", "manhattan", "euclidean", "dot")
CSV_COLUMNS = ("similarity", "pearson", "spearman")
# sentence-transformers' floor under a vector's norm (`torch.nn.functional.normalize`).
_NORM_EPSILON = 1e-12


@dataclasses.dataclass(frozen=True)
class Correlation:
  """How one similarity of the embeddings correlates with the gold scores."""

  similarity: str
  pearson: float
  spearman: float


@dataclasses.dataclass(frozen=True)
class StsEvaluation:
  """The correlations of each similarity of `SIMILARITIES`, in that order, and what was scored.

  Attributes:
    correlations: one per similarity.
    num_pairs: the pairs scored.
    num_texts: the distinct texts embedded.
  """

  correlations: List[Correlation]
  num_pairs: int
  num_texts: int

  def lines(self) -> List[str]:
    """As sentence-transformers logs them: `Cosine-Similarity:\\tPearson: 0.8512\\tSpearman: 0.8601`."""
    return [f"{result.similarity.capitalize()}-Similarity:\tPearson: {result.pearson:.4f}\t"
            f"Spearman: {result.spearman:.4f}" for result in self.correlations]

  def to_csv(self) -> str:
    """A header (`CSV_COLUMNS`), then one row per similarity, the correlations at full precision."""
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    writer.writerows((result.similarity, repr(result.pearson), repr(result.spearman))
                     for result in self.correlations)
    return text.getvalue()


def pair_similarities(embeddings_a, embeddings_b) -> Dict[str, np.ndarray]:
  """Each similarity of `SIMILARITIES` between row i of `embeddings_a` and row i of `embeddings_b`, float64.

  As sentence-transformers computes them: the cosine of the two vectors, the negative Manhattan and Euclidean
  distances, and the dot product (on the embeddings as given: unit vectors make it the cosine).
  """
  a, b = np.asarray(embeddings_a, np.float64), np.asarray(embeddings_b, np.float64)
  unit_a = a / np.maximum(np.linalg.norm(a, axis=1, keepdims=True), _NORM_EPSILON)
  unit_b = b / np.maximum(np.linalg.norm(b, axis=1, keepdims=True), _NORM_EPSILON)
  return {"cosine": np.sum(unit_a * unit_b, axis=1), "manhattan": -np.sum(np.abs(a - b), axis=1),
          "euclidean": -np.sqrt(np.sum(np.square(a - b), axis=1)), "dot": np.sum(a * b, axis=1)}


def evaluate(examples: Sequence[task_readers.Example], embed: Embedder) -> StsEvaluation:
  """The correlations of each similarity of the pairs' embeddings with their gold scores.

  Pearson and Spearman are `metrics.pearson` and `metrics.spearman`: SciPy's, except 0 where one side has no
  variance (SciPy gives NaN).

  Raises:
    TaskError: an example without a second text or a score (an unlabeled split), or fewer than two pairs.
  """
  for example in examples:
    if example.text_b is None or example.label is None:
      missing = "second text" if example.text_b is None else "score"
      raise TaskError(f"Example {example.guid} has no {missing}: STS evaluation needs scored pairs (is the "
                            "split unlabeled, as GLUE's test files?).")
  if len(examples) < 2:
    raise TaskError(f"{len(examples)} scored pair(s): a correlation needs at least two.")
  texts = list(dict.fromkeys(text for example in examples for text in (example.text_a, example.text_b)))
  row = {text: index for index, text in enumerate(texts)}
  embeddings = np.asarray(embed(texts))
  similarities = pair_similarities(embeddings[[row[example.text_a] for example in examples]],
                                   embeddings[[row[example.text_b] for example in examples]])
  scores = np.asarray([example.label for example in examples], np.float64)
  correlations = [Correlation(name, metrics.pearson(similarities[name], scores),
                              metrics.spearman(similarities[name], scores)) for name in SIMILARITIES]
  return StsEvaluation(correlations, len(examples), len(texts))


@dataclasses.dataclass(frozen=True)
class ModelSource:
  """The model to evaluate, as `tools/evaluate_sts.py`'s flags give it: exactly one of a SavedModel, an
  albert-tf checkpoint and a Hugging Face folder, with what that one needs.

  Attributes:
    saved_model: a SavedModel with a `sentence_embedding` signature (it tokenizes and packs by itself).
    checkpoint: an albert-tf checkpoint prefix or directory; needs `albert_config_file` and `spm_model_file`.
    hf_folder: a Hugging Face or sentence-transformers folder (see `embedders.hf_folder_embedder`).
    albert_config_file: the checkpoint's config.
    spm_model_file: the checkpoint's SentencePiece model, or that of a folder without `spiece.model`.
    max_seq_length: the length texts are cut to; default, a checkpoint's
      `embedders.DEFAULT_MAX_SEQ_LENGTH` (at most its max_position_embeddings), a folder's own.
    do_lower_case, keep_accents: the checkpoint's tokenizer options; None: what is recorded beside
      `spm_model_file`.
  """

  saved_model: Optional[str] = None
  checkpoint: Optional[str] = None
  hf_folder: Optional[str] = None
  albert_config_file: Optional[str] = None
  spm_model_file: Optional[str] = None
  max_seq_length: Optional[int] = None
  do_lower_case: Optional[bool] = None
  keep_accents: Optional[bool] = None

  def check(self):
    """Refuses flags that name no model, several, or what the model given does not take.

    Raises:
      OptionError: naming the flags.
    """
    given = [f"--{name}" for name in ("saved_model", "checkpoint", "hf_folder") if getattr(self, name) is not None]
    if not given:
      raise OptionError("No model to evaluate: give --saved_model, --checkpoint (with --albert_config_file and "
                        "--spm_model_file) or --hf_folder.")
    if len(given) > 1:
      raise OptionError(f"{' and '.join(given)} each name a model; evaluate one at a time.")
    tokenizer_flags = [f"--{name}" for name in ("do_lower_case", "keep_accents") if getattr(self, name) is not None]
    if self.saved_model is not None:
      extra = [f"--{name}" for name in ("albert_config_file", "spm_model_file", "max_seq_length")
               if getattr(self, name) is not None] + tokenizer_flags
      if extra:
        raise OptionError(f"{', '.join(extra)}: a SavedModel holds its config and tokenizer and packs texts to "
                          "the length it was exported with; leave them out with --saved_model.")
    elif self.checkpoint is not None:
      missing = [f"--{name}" for name in ("albert_config_file", "spm_model_file") if getattr(self, name) is None]
      if missing:
        raise OptionError(f"--checkpoint needs {' and '.join(missing)}.")
    else:
      extra = ["--albert_config_file"] * (self.albert_config_file is not None) + tokenizer_flags
      if extra:
        raise OptionError(f"{', '.join(extra)}: a Hugging Face folder has its config.json and records its "
                          "tokenizer options; leave them out with --hf_folder.")

  def describe(self) -> str:
    if self.saved_model is not None:
      return f"the SavedModel {self.saved_model}"
    if self.checkpoint is not None:
      return f"the checkpoint {self.checkpoint}"
    return f"the Hugging Face folder {self.hf_folder}"

  def embedder(self, batch_size: int = 64) -> Embedder:
    """The embedder of the model (see `albert_tf.tasks.similarity.embedders`), after `check`."""
    self.check()
    if self.saved_model is not None:
      return embedders.saved_model_embedder(self.saved_model, batch_size)
    if self.hf_folder is not None:
      return embedders.hf_folder_embedder(self.hf_folder, self.max_seq_length, self.spm_model_file,
                                                   batch_size)
    return embedders.checkpoint_embedder(self.albert_config_file, self.checkpoint, self.spm_model_file,
                                                  self.max_seq_length, self.do_lower_case, self.keep_accents,
                                                  batch_size)
