"""`AlbertClassifier`: the encoder with Google's `run_classifier` head, for classification or regression."""

from typing import Any, Dict, Optional, Sequence, Union

import tf_keras

from albert_tf.modeling.config import AlbertConfig
from albert_tf.modeling.encoder import AlbertEncoder, as_config
from albert_tf.modeling.layers.heads import ClassificationHead


@tf_keras.utils.register_keras_serializable(package="albert_tf")
class AlbertClassifier(tf_keras.Model):
  """ALBERT for sequence classification or regression (Hugging Face's `AlbertForSequenceClassification`).

  Google's head: dropout on `pooled_output`, then `output_weights` `[num_classes, H]` and `output_bias`.

  Inputs: the encoder's dict. Outputs: `logits`, float32 `[batch, num_classes]` (`[batch, 1]` for regression).

  Args:
    config: an `AlbertConfig` or its dict.
    label_names: the class labels in id order; None for a regression (one output).
    dropout_rate: dropout on the pooled output while training.
    recompute_grad: recompute the encoder's block activations in the backward pass (see `AlbertEncoder`).
  """

  def __init__(self, config: Union[AlbertConfig, Dict[str, Any]], label_names: Optional[Sequence[str]] = None,
               dropout_rate: float = 0.1, recompute_grad: bool = False, **kwargs):
    kwargs.setdefault("name", "albert_classifier")
    super().__init__(**kwargs)
    self.config = as_config(config)
    if label_names is not None and len(label_names) < 2:
      raise ValueError(f"A classifier needs at least 2 labels, not {list(label_names)}; None means regression.")
    self.label_names = None if label_names is None else tuple(str(label) for label in label_names)
    self.dropout_rate = dropout_rate
    self.encoder = AlbertEncoder(self.config, recompute_grad=recompute_grad, name="encoder")
    self.classifier_head = ClassificationHead(
        hidden_size=self.config.hidden_size, num_classes=1 if self.is_regression else len(self.label_names),
        dropout_rate=dropout_rate, initializer_range=self.config.initializer_range, name="classifier")

  @property
  def is_regression(self) -> bool:
    return self.label_names is None

  def call(self, inputs, training=None):
    pooled_output = self.encoder(inputs, training=training)["pooled_output"]
    return {"logits": self.classifier_head(pooled_output, training=training)}

  def dummy_inputs(self, batch_size=1, seq_length=2):
    """Inputs that build every variable (used before restoring a checkpoint)."""
    return self.encoder.dummy_inputs(batch_size, seq_length)

  def get_config(self):
    return {"config": self.config.to_dict(), "label_names": self.label_names, "dropout_rate": self.dropout_rate,
            "recompute_grad": self.encoder.recompute_grad, "name": self.name}

  @classmethod
  def from_config(cls, config, custom_objects=None):
    return cls(**config)
