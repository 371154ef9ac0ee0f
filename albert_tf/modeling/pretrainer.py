"""`AlbertPretrainer`: the encoder with its masked-LM and (optionally) sentence-order heads."""

from typing import Any, Dict, Union

import tensorflow as tf
import tf_keras

from albert_tf.modeling.config import AlbertConfig
from albert_tf.modeling.encoder import LAYER_NORM_EPSILON, AlbertEncoder, as_config
from albert_tf.modeling.layers.heads import MaskedLMHead, SentenceOrderHead


@tf_keras.utils.register_keras_serializable(package="albert_tf")
class AlbertPretrainer(tf_keras.Model):
  """ALBERT for pretraining (Google's `run_pretraining` model, Hugging Face's `AlbertForPreTraining`).

  Without the sentence-order head it is Hugging Face's `AlbertForMaskedLM`, the head set of the Hub's
  `albert-base-v2` and friends.

  Inputs: the encoder's dict plus `masked_lm_positions` int32 `[batch, max_predictions_per_seq]`.
  Outputs: `mlm_logits` `[batch, max_predictions_per_seq, V]` and, with the sentence-order head,
  `sop_logits` `[batch, 2]`, float32.

  Args:
    config: an `AlbertConfig` or its dict.
    with_sentence_order_head: False leaves `sentence_order_head` None and `sop_logits` out of the outputs.
    recompute_grad: recompute the encoder's block activations in the backward pass (see `AlbertEncoder`).
  """

  def __init__(self, config: Union[AlbertConfig, Dict[str, Any]], with_sentence_order_head: bool = True,
               recompute_grad: bool = False, **kwargs):
    kwargs.setdefault("name", "albert_pretrainer")
    super().__init__(**kwargs)
    self.config = as_config(config)
    cfg = self.config
    self.encoder = AlbertEncoder(cfg, recompute_grad=recompute_grad, name="encoder")
    self.masked_lm_head = MaskedLMHead(
        vocab_size=cfg.vocab_size, embedding_size=cfg.embedding_size, hidden_act=cfg.hidden_act,
        initializer_range=cfg.initializer_range, layer_norm_epsilon=LAYER_NORM_EPSILON, name="predictions")
    self.sentence_order_head = SentenceOrderHead(
        hidden_size=cfg.hidden_size, num_classes=2, initializer_range=cfg.initializer_range,
        name="seq_relationship") if with_sentence_order_head else None
    if not with_sentence_order_head:
      # Only the sentence-order head reads the pooler: without it the pooler gets no gradient, so it is not
      # trained (it is still saved, so that checkpoints keep the whole encoder).
      self.encoder.pooler.trainable = False

  def call(self, inputs, training=None):
    encoder_outputs = self.encoder(inputs, training=training)
    mlm_logits = self.masked_lm_head(
        encoder_outputs["sequence_output"], inputs["masked_lm_positions"],
        embedding_table=self.encoder.get_embedding_table())
    outputs = {"mlm_logits": mlm_logits}
    if self.sentence_order_head is not None:
      outputs["sop_logits"] = self.sentence_order_head(encoder_outputs["pooled_output"])
    return outputs

  def dummy_inputs(self, batch_size=1, seq_length=2):
    """Inputs that build every variable (used before restoring a checkpoint)."""
    inputs = self.encoder.dummy_inputs(batch_size, seq_length)
    inputs["masked_lm_positions"] = tf.zeros([batch_size, 1], tf.int32)
    return inputs

  def get_config(self):
    return {"config": self.config.to_dict(), "with_sentence_order_head": self.sentence_order_head is not None,
            "recompute_grad": self.encoder.recompute_grad, "name": self.name}

  @classmethod
  def from_config(cls, config, custom_objects=None):
    return cls(**config)
