"""`AlbertMultipleChoice`: the encoder with Google's RACE head (`run_race.py`; Hugging Face's
`AlbertForMultipleChoice`): one score per option from the pooled output of `[CLS] article [SEP] question+option
[SEP]`, a softmax over the options."""

from typing import Any, Dict, Union

import tensorflow as tf
import tf_keras

from albert_tf.modeling.config import AlbertConfig
from albert_tf.modeling.encoder import AlbertEncoder, as_config
from albert_tf.modeling.layers.heads import ClassificationHead


@tf_keras.utils.register_keras_serializable(package="albert_tf")
class AlbertMultipleChoice(tf_keras.Model):
  """ALBERT for multiple choice, Google's RACE model.

  Each option is its own sequence; the head (Google's top-level `output_weights` `[1, H]` and `output_bias`,
  Hugging Face's `classifier`) scores its pooled output after dropout, and a softmax runs over the options.

  Inputs: the encoder's dict with int32 `[batch, options, seq]` tensors. Outputs: `logits`, float32
  `[batch, options]`.

  Args:
    config: an `AlbertConfig` or its dict.
    dropout_rate: dropout on the pooled output while training (Google's `--dropout_prob`, 0.1).
    recompute_grad: recompute the encoder's block activations in the backward pass (see `AlbertEncoder`).
  """

  def __init__(self, config: Union[AlbertConfig, Dict[str, Any]], dropout_rate: float = 0.1,
               recompute_grad: bool = False, **kwargs):
    kwargs.setdefault("name", "albert_multiple_choice")
    super().__init__(**kwargs)
    self.config = as_config(config)
    self.dropout_rate = dropout_rate
    self.encoder = AlbertEncoder(self.config, recompute_grad=recompute_grad, name="encoder")
    self.choice_head = ClassificationHead(self.config.hidden_size, num_classes=1, dropout_rate=dropout_rate,
                                          initializer_range=self.config.initializer_range, name="choice_head")

  def call(self, inputs, training=None):
    word_ids = inputs["input_word_ids"]
    # Static sizes where known: TPUs need them.
    num_options = word_ids.shape[1] or tf.shape(word_ids)[1]
    seq_length = word_ids.shape[2] or tf.shape(word_ids)[2]
    flat = {name: tf.reshape(inputs[name], [-1, seq_length])
            for name in ("input_word_ids", "input_mask", "input_type_ids") if name in inputs}
    pooled_output = self.encoder(flat, training=training)["pooled_output"]
    scores = self.choice_head(pooled_output, training=training)
    return {"logits": tf.reshape(scores, [-1, num_options])}

  def dummy_inputs(self, batch_size=1, seq_length=2, num_options=2):
    """Inputs that build every variable (used before restoring a checkpoint)."""
    ids = tf.zeros([batch_size, num_options, seq_length], tf.int32)
    return {"input_word_ids": ids, "input_mask": tf.ones_like(ids), "input_type_ids": ids}

  def get_config(self):
    return {"config": self.config.to_dict(), "dropout_rate": self.dropout_rate,
            "recompute_grad": self.encoder.recompute_grad, "name": self.name}

  @classmethod
  def from_config(cls, config, custom_objects=None):
    return cls(**config)
