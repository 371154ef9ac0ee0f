"""The encoder with Google's SQuAD heads: SQuAD v1 spans, SQuAD v2 spans with no-answer.

- `AlbertQuestionAnswerer` (`run_squad_v1.py`; Hugging Face's `AlbertForQuestionAnswering`): a start and an
  end logit per token.
- `AlbertQuestionAnswererV2` (`run_squad_v2.py`): XLNet's head (see `XLNetSpanHead`), which also scores
  whether the window holds no answer.
"""

from typing import Any, Dict, Union

import tensorflow as tf
import tf_keras

from albert_tf.modeling.config import AlbertConfig
from albert_tf.modeling.encoder import AlbertEncoder, as_config
from albert_tf.tasks.squad.heads import SpanLogitsHead, XLNetSpanHead


@tf_keras.utils.register_keras_serializable(package="albert_tf")
class AlbertQuestionAnswerer(tf_keras.Model):
  """ALBERT for extractive question answering, Google's SQuAD v1 model.

  Inputs: the encoder's dict of `[CLS] question [SEP] context [SEP]`. Outputs: float32 `start_logits` and
  `end_logits`, `[batch, seq]`, unmasked (as Google's and Hugging Face's).

  Args:
    config: an `AlbertConfig` or its dict.
    recompute_grad: recompute the encoder's block activations in the backward pass (see `AlbertEncoder`).
  """

  def __init__(self, config: Union[AlbertConfig, Dict[str, Any]], recompute_grad: bool = False, **kwargs):
    kwargs.setdefault("name", "albert_question_answerer")
    super().__init__(**kwargs)
    self.config = as_config(config)
    self.encoder = AlbertEncoder(self.config, recompute_grad=recompute_grad, name="encoder")
    self.encoder.pooler.trainable = False  # spans read the token vectors only
    self.squad_head = SpanLogitsHead(self.config.hidden_size, self.config.initializer_range, name="squad_head")

  def call(self, inputs, training=None):
    sequence_output = self.encoder(inputs, training=training)["sequence_output"]
    start_logits, end_logits = self.squad_head(sequence_output)
    return {"start_logits": start_logits, "end_logits": end_logits}

  def dummy_inputs(self, batch_size=1, seq_length=2):
    """Inputs that build every variable (used before restoring a checkpoint)."""
    return self.encoder.dummy_inputs(batch_size, seq_length)

  def get_config(self):
    return {"config": self.config.to_dict(), "recompute_grad": self.encoder.recompute_grad, "name": self.name}

  @classmethod
  def from_config(cls, config, custom_objects=None):
    return cls(**config)


def squad_p_mask(inputs) -> tf.Tensor:
  """Google's SQuAD `p_mask` of `[CLS] question [SEP] context [SEP]` inputs: int32 `[batch, seq]`, 0 at `[CLS]` and
  the context tokens (segment 1 before the closing `[SEP]`), where an answer may start or end; 1 elsewhere."""
  positions = tf.range(tf.shape(inputs["input_word_ids"])[1])[tf.newaxis, :]
  closing_sep = tf.reduce_sum(inputs["input_mask"], axis=1, keepdims=True) - 1
  is_context = tf.equal(inputs["input_type_ids"], 1) & (positions < closing_sep)
  return tf.cast(~is_context & (positions > 0), tf.int32)


@tf_keras.utils.register_keras_serializable(package="albert_tf")
class AlbertQuestionAnswererV2(tf_keras.Model):
  """ALBERT for questions that may have no answer, Google's SQuAD v2 model (XLNet's head).

  Inputs: the encoder's dict of `[CLS] question [SEP] context [SEP]`; `p_mask` int32 `[batch, seq]` (1 where a
  token cannot be part of an answer), by default Google's, `squad_p_mask`; and, when training,
  `start_positions` int32 `[batch]`.

  Outputs: those of `XLNetSpanHead`: with `start_positions`, the start and end log-probabilities and the
  no-answer logit; without, the beam of the `start_n_top` best starts and their `end_n_top` best ends.

  Args:
    config: an `AlbertConfig` or its dict.
    start_n_top, end_n_top: the beam at inference (Google's flags, 5 and 5).
    dropout_rate: dropout before the answer-class logit (Google's `--dropout_prob`, 0.1).
    recompute_grad: recompute the encoder's block activations in the backward pass (see `AlbertEncoder`).
  """

  def __init__(self, config: Union[AlbertConfig, Dict[str, Any]], start_n_top: int = 5, end_n_top: int = 5,
               dropout_rate: float = 0.1, recompute_grad: bool = False, **kwargs):
    kwargs.setdefault("name", "albert_question_answerer_v2")
    super().__init__(**kwargs)
    self.config = as_config(config)
    self.encoder = AlbertEncoder(self.config, recompute_grad=recompute_grad, name="encoder")
    self.encoder.pooler.trainable = False
    self.squad_v2_head = XLNetSpanHead(self.config.hidden_size, start_n_top, end_n_top, dropout_rate,
                                       self.config.initializer_range, name="squad_v2_head")

  def call(self, inputs, training=None):
    sequence_output = self.encoder(inputs, training=training)["sequence_output"]
    p_mask = inputs["p_mask"] if "p_mask" in inputs else squad_p_mask(inputs)
    return self.squad_v2_head(sequence_output, p_mask, inputs.get("start_positions"), training=training)

  def dummy_inputs(self, batch_size=1, seq_length=None):
    """Inputs that build every variable (used before restoring a checkpoint): the beam needs that many tokens."""
    seq_length = seq_length or max(2, self.squad_v2_head.start_n_top, self.squad_v2_head.end_n_top)
    return self.encoder.dummy_inputs(batch_size, seq_length)

  def get_config(self):
    head = self.squad_v2_head
    return {"config": self.config.to_dict(), "start_n_top": head.start_n_top, "end_n_top": head.end_n_top,
            "dropout_rate": head.dropout_rate, "recompute_grad": self.encoder.recompute_grad, "name": self.name}

  @classmethod
  def from_config(cls, config, custom_objects=None):
    return cls(**config)
