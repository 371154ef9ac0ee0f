"""Fine-tuning input: examples tokenized once in the graph, then `tf.data` batches of static shape.

Texts go through `GraphTokenizer`, the tokenizer that exported SavedModels run, so training sees exactly
the ids that `classify_text` and `sentence_embedding` compute when serving. Packed sequences are kept
without padding (ragged ids and the length of `[CLS] a [SEP]`), so even MNLI at length 512 stays small in
memory; each batch is gathered and padded to `max_seq_length` as it is read.

The training stream is position-addressable, as pretraining's: epoch `e` visits the examples in a
stateless permutation of (seed, e), so a resumed run starts at example `step × global batch` exactly.
Evaluation reads every example once, in order, padded with weight-0 rows to whole global batches (static
shapes on TPU); each row carries its example index, so predictions can be put back in order whatever the
strategy.
"""

import dataclasses
import itertools
import math
import sys
import time
from typing import Any, Dict, List, Optional, Sequence

import numpy as np
import tensorflow as tf

from albert_tf.data import input_streams
from albert_tf.text.graph_tokenizer import GraphTokenizer

_CHUNK = 2048  # texts tokenized per graph call
_PROGRESS_SECONDS = 10.0


@dataclasses.dataclass(frozen=True)
class PackedSequences:
  """Packed `[CLS] a [SEP]` or `[CLS] a [SEP] b [SEP]` sequences, stored without padding.

  Attributes:
    word_ids: int32 `[examples, (length)]`.
    first_segment_lengths: int32 `[examples]`, the length of `[CLS] a [SEP]` (type id 0); the rest is type 1.
  """

  word_ids: tf.RaggedTensor
  first_segment_lengths: tf.Tensor

  def __len__(self) -> int:
    return int(self.first_segment_lengths.shape[0])


def packed_ids(sequences: List[Sequence[int]], first_segment_lengths: List[int]) -> PackedSequences:
  """Unpadded id sequences, packed already, as `PackedSequences` (built from flat arrays: SQuAD's train set has
  ~90k rows)."""
  lengths = np.array([len(ids) for ids in sequences], np.int64)
  values = np.fromiter(itertools.chain.from_iterable(sequences), np.int32, count=int(lengths.sum()))
  return PackedSequences(tf.RaggedTensor.from_row_lengths(values, lengths),
                         tf.constant(first_segment_lengths, tf.int32))


def pack_texts(tokenizer: GraphTokenizer, texts_a: Sequence[str], texts_b: Optional[Sequence[str]],
               max_seq_length: int, description: str = "texts") -> PackedSequences:
  """Tokenizes and packs texts as the exported signatures do (pairs cut as Google's `_truncate_seq_pair`).

  Args:
    tokenizer: the model's tokenizer.
    texts_a: the first (or only) segments.
    texts_b: the second segments (an empty string means none), or None for single segments.
    max_seq_length: the packed length.
    description: what is tokenized, for the progress lines on long inputs.
  """
  # Eager: tracing the tokenizer's few thousand ops costs seconds, more than eager chunks cost on GLUE's
  # largest sets (about 13,000 pairs/s on 2 cores).
  word_ids, first_lengths = [], []
  start = last_report = time.time()
  for begin in range(0, len(texts_a), _CHUNK):
    text_a = tf.constant(list(texts_a[begin:begin + _CHUNK]), tf.string)
    text_b = tf.constant(list(texts_b[begin:begin + _CHUNK]), tf.string) if texts_b is not None else None
    inputs = tokenizer.encode_and_pack(text_a, text_b, max_seq_length)
    lengths = tf.reduce_sum(inputs["input_mask"], axis=1)
    word_ids.append(tf.RaggedTensor.from_tensor(inputs["input_word_ids"], lengths=lengths))
    first_lengths.append(lengths - tf.reduce_sum(inputs["input_type_ids"], axis=1))
    done = min(begin + _CHUNK, len(texts_a))
    if time.time() - last_report > _PROGRESS_SECONDS and done < len(texts_a):
      last_report = time.time()
      print(f"Tokenized {done:,}/{len(texts_a):,} {description} ({done / (last_report - start):,.0f}/s)",
            file=sys.stderr, flush=True)
  return PackedSequences(tf.concat(word_ids, axis=0), tf.concat(first_lengths, axis=0))


def model_inputs(sequences: PackedSequences, indices: tf.Tensor, max_seq_length: int,
                 pad_id: int = 0) -> Dict[str, tf.Tensor]:
  """The encoder inputs of the sequences at `indices` (a vector of static length), padded to `max_seq_length`."""
  batch_size = indices.shape[0]
  rows = tf.gather(sequences.word_ids, indices)
  positions = tf.range(max_seq_length)[tf.newaxis, :]
  # A gathered ragged tensor's row count has no static size; every input of a batch needs one (XLA on a TPU).
  lengths = tf.ensure_shape(tf.cast(rows.row_lengths(), tf.int32), [batch_size])
  input_mask = positions < lengths[:, tf.newaxis]
  first_segment = positions < tf.gather(sequences.first_segment_lengths, indices)[:, tf.newaxis]
  return {
      "input_word_ids": rows.to_tensor(pad_id, shape=[batch_size, max_seq_length]),
      "input_mask": tf.cast(input_mask, tf.int32),
      "input_type_ids": tf.cast(input_mask & ~first_segment, tf.int32),
  }


@dataclasses.dataclass
class EncodedSplit:
  """One split ready for the model.

  Attributes:
    sequences: packed sequences by model input name (e.g. "inputs"; "inputs_a" and "inputs_b" for a
      siamese model), one row per example.
    labels: one per example: int32 class ids or float32 values (zeros where the split is unlabeled).
    guids: the examples' ids, for prediction files.
    max_seq_length: the packed length.
    source: what the objective needs besides the rows to score or write predictions (SQuAD's examples
      and token maps, RACE's levels); None for the classification tasks.
  """

  sequences: Dict[str, PackedSequences]
  labels: np.ndarray
  guids: List[str]
  max_seq_length: int
  source: Any = None

  @property
  def num_examples(self) -> int:
    return len(self.guids)

  def batch(self, indices: tf.Tensor, weights: tf.Tensor) -> Dict[str, tf.Tensor]:
    """The batch of the examples at `indices`: model inputs by name, `labels`, `weights`, `example_index`."""
    batch = {name: model_inputs(packed, indices, self.max_seq_length) for name, packed in self.sequences.items()}
    batch["labels"] = tf.gather(tf.constant(self.labels), indices)
    batch["weights"] = weights
    batch["example_index"] = tf.cast(indices, tf.int32)
    return batch


def training_dataset(split: EncodedSplit, batch_size: int, seed: int, start_example: int = 0,
                     input_context: Optional[tf.distribute.InputContext] = None) -> tf.data.Dataset:
  """Endless shuffled batches, from example `start_example` of the global stream.

  Epoch `e` visits every example once in a stateless permutation of `(seed, e)`. With several input
  pipelines, pipeline `p` of `P` takes elements `p, p + P, ...` of the global stream, so a step consumes
  the next global batch whatever the number of hosts.

  Args:
    split: the training split.
    batch_size: the per-replica batch size.
    seed: the shuffling seed.
    start_example: where the global stream starts (steps done × global batch size, to resume).
    input_context: from `distribute_datasets_from_function`.
  """
  num_examples = split.num_examples
  start_epoch, offset = divmod(start_example, num_examples)

  def epoch_order(epoch):
    order = tf.random.experimental.stateless_shuffle(tf.range(num_examples), input_streams.stream_seed(seed, epoch))
    return tf.data.Dataset.from_tensor_slices(order)

  num_pipelines, pipeline_id = input_streams.input_pipeline(input_context)
  indices = tf.data.Dataset.range(start_epoch, np.iinfo(np.int64).max).flat_map(epoch_order).skip(offset)
  indices = indices.shard(num_pipelines, pipeline_id).batch(batch_size, drop_remainder=True)
  return indices.map(lambda batch: split.batch(batch, tf.ones([batch_size], tf.float32)),
                     num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)


def evaluation_steps(num_examples: int, global_batch_size: int) -> int:
  """Global batches of an evaluation: every example once, the last batch padded."""
  return math.ceil(num_examples / global_batch_size)


def evaluation_dataset(split: EncodedSplit, batch_size: int, global_batch_size: int,
                       input_context: Optional[tf.distribute.InputContext] = None) -> tf.data.Dataset:
  """Every example once, in order, then weight-0 copies of the last to fill the last global batch.

  Args:
    split: the split to evaluate or predict.
    batch_size: the per-replica batch size.
    global_batch_size: the batch size over all replicas.
    input_context: from `distribute_datasets_from_function`.
  """
  num_examples = split.num_examples
  padded = evaluation_steps(num_examples, global_batch_size) * global_batch_size
  num_pipelines, pipeline_id = input_streams.input_pipeline(input_context)
  indices = tf.data.Dataset.range(padded).shard(num_pipelines, pipeline_id).batch(batch_size, drop_remainder=True)

  def to_batch(batch):
    weights = tf.cast(batch < num_examples, tf.float32)
    return split.batch(tf.minimum(batch, num_examples - 1), weights)

  return indices.map(to_batch).prefetch(tf.data.AUTOTUNE)
