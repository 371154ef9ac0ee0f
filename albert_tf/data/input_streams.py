"""What the training streams of pretraining and fine-tuning share.

Both are position-addressable: a pure function of the data, the seed and the input pipeline, which can
start at any example, so that a resumed run reads exactly what an uninterrupted one would have read.
"""

from typing import Optional, Tuple

import tensorflow as tf


def input_pipeline(input_context: Optional[tf.distribute.InputContext]) -> Tuple[int, int]:
  """(the number of input pipelines, this one's index) of `distribute_datasets_from_function`'s context."""
  if input_context is None:
    return 1, 0
  return input_context.num_input_pipelines, input_context.input_pipeline_id


def sharding(num_files: int, num_pipelines: int) -> Tuple[bool, bool]:
  """(shard by file, shard by record): how `num_pipelines` input pipelines split `num_files` files.

  Each pipeline reads every `num_pipelines`-th file; with fewer files than pipelines, some pipeline would
  get none, so each reads every `num_pipelines`-th record of every file instead. One pipeline reads all.
  """
  by_file = num_pipelines > 1 and num_files >= num_pipelines
  return by_file, num_pipelines > 1 and not by_file


def stream_seed(seed: int, *indices) -> tf.Tensor:
  """A stateless-op seed derived from `seed` and `indices`; the same eagerly and in a `tf.data` graph."""
  derived = tf.constant([seed, 0], tf.int64)
  for index in indices:
    derived = tf.random.experimental.stateless_fold_in(derived, tf.cast(index, tf.int64))
  return derived
