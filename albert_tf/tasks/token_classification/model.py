"""`AlbertTokenClassifier`: the encoder with a label per position (named-entity recognition, tagging)."""

from typing import Any, Dict, Sequence, Union

import tf_keras

from albert_tf.modeling.config import AlbertConfig
from albert_tf.modeling.encoder import AlbertEncoder, as_config
from albert_tf.modeling.layers.heads import ClassificationHead


@tf_keras.utils.register_keras_serializable(package="albert_tf")
class AlbertTokenClassifier(tf_keras.Model):
  """ALBERT for token classification (Hugging Face's `AlbertForTokenClassification`).

  The head is `run_classifier`'s layer applied at every position: dropout on `sequence_output`, then
  `output_weights` `[num_labels, H]` and `output_bias` (Hugging Face's `classifier`). The pooler is not used.

  Inputs: the encoder's dict. Outputs: `logits`, float32 `[batch, seq, num_labels]`, at every position
  (padding included: the caller masks it).

  Args:
    config: an `AlbertConfig` or its dict.
    label_names: the labels in id order ("O", "B-PER", ...), at least 2, distinct.
    dropout_rate: dropout on the sequence output while training.
    recompute_grad: recompute the encoder's block activations in the backward pass (see `AlbertEncoder`).
  """

  def __init__(self, config: Union[AlbertConfig, Dict[str, Any]], label_names: Sequence[str],
               dropout_rate: float = 0.1, recompute_grad: bool = False, **kwargs):
    kwargs.setdefault("name", "albert_token_classifier")
    super().__init__(**kwargs)
    self.config = as_config(config)
    self.label_names = tuple(str(label) for label in label_names)
    # Distinct names: Hugging Face's label2id and the tagged output map names back to ids.
    if len(self.label_names) < 2 or len(set(self.label_names)) < len(self.label_names):
      raise ValueError(f"A token classifier needs at least 2 distinct labels, not {list(label_names)}.")
    self.dropout_rate = dropout_rate
    self.encoder = AlbertEncoder(self.config, recompute_grad=recompute_grad, name="encoder")
    self.encoder.pooler.trainable = False  # the tags read the token vectors only
    self.token_classifier_head = ClassificationHead(
        hidden_size=self.config.hidden_size, num_classes=len(self.label_names), dropout_rate=dropout_rate,
        initializer_range=self.config.initializer_range, name="token_classifier")

  def call(self, inputs, training=None):
    sequence_output = self.encoder(inputs, training=training)["sequence_output"]
    return {"logits": self.token_classifier_head(sequence_output, training=training)}

  def dummy_inputs(self, batch_size=1, seq_length=2):
    """Inputs that build every variable (used before restoring a checkpoint)."""
    return self.encoder.dummy_inputs(batch_size, seq_length)

  def get_config(self):
    return {"config": self.config.to_dict(), "label_names": self.label_names,
            "dropout_rate": self.dropout_rate, "recompute_grad": self.encoder.recompute_grad,
            "name": self.name}

  @classmethod
  def from_config(cls, config, custom_objects=None):
    return cls(**config)
