"""Shared fixtures: tiny configs, deterministic random weights, and the shared corpora."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np
import pytest
import tensorflow as tf

import albert_tf

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.join(os.path.dirname(REPO), "shared")
SP8K_MODEL = os.path.join(SHARED, "reference", "sp8k_en_ko.model")


def tiny_config(**overrides) -> albert_tf.AlbertConfig:
  values = dict(vocab_size=120, hidden_size=32, num_hidden_layers=4, num_attention_heads=4,
                intermediate_size=37, embedding_size=16, max_position_embeddings=64)
  values.update(overrides)
  return albert_tf.AlbertConfig(**values)


def randomize(model, seed=0, scale=0.3):
  """Gives every variable (LayerNorms and biases too) random values, so parity tests see every weight."""
  rng = np.random.default_rng(seed)
  for variable in model.variables:
    variable.assign(rng.normal(0.0, scale, variable.shape).astype(np.float32))


def padded_batch(vocab_size, batch_size=3, seq_length=11, max_predictions=4, seed=1):
  """Int32 inputs with padding in later rows, two segments, and masked positions."""
  rng = np.random.default_rng(seed)
  ids = rng.integers(5, vocab_size, (batch_size, seq_length))
  mask = np.ones_like(ids)
  for row in range(1, batch_size):
    mask[row, seq_length - 3 * row:] = 0
  ids = ids * mask
  types = np.zeros_like(ids)
  types[:, seq_length // 2:] = 1
  positions = np.stack([rng.choice(seq_length - 3 * (batch_size - 1), max_predictions, replace=False)
                        for _ in range(batch_size)])
  return {"input_word_ids": tf.constant(ids, tf.int32), "input_mask": tf.constant(mask, tf.int32),
          "input_type_ids": tf.constant(types, tf.int32),
          "masked_lm_positions": tf.constant(np.sort(positions), tf.int32)}


def requires_shared(path):
  return pytest.mark.skipif(not os.path.exists(path), reason=f"{path} not present")
