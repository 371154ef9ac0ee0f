"""`AlbertSentenceEncoder`: one L2-normalised embedding per text, for semantic search and STS (Sentence-BERT)."""

from typing import Any, Dict, Union

import tf_keras

from albert_tf.modeling.config import AlbertConfig
from albert_tf.modeling.encoder import AlbertEncoder, as_config
from albert_tf.modeling.layers.pooling import MeanPooling


@tf_keras.utils.register_keras_serializable(package="albert_tf")
class AlbertSentenceEncoder(tf_keras.Model):
  """The encoder followed by mean pooling over real tokens and L2 normalisation.

  It adds no weights to the encoder, so its checkpoints restore into an `AlbertEncoder` and export with
  `tools/export_saved_model.py` like any other; the `sentence_embedding` signature computes this output.
  Trained siamese-style (Sentence-BERT): the cosine of two embeddings regresses a similarity score.

  Inputs: the encoder's dict of one segment per text. Outputs: `embedding`, float32 `[batch, H]`, unit length.

  Args:
    config: an `AlbertConfig` or its dict.
    recompute_grad: recompute the encoder's block activations in the backward pass (see `AlbertEncoder`).
  """

  def __init__(self, config: Union[AlbertConfig, Dict[str, Any]], recompute_grad: bool = False, **kwargs):
    kwargs.setdefault("name", "albert_sentence_encoder")
    super().__init__(**kwargs)
    self.config = as_config(config)
    self.encoder = AlbertEncoder(self.config, recompute_grad=recompute_grad, name="encoder")
    # The embedding never reads the [CLS] pooler: it gets no gradient, so it is not trained (it is still
    # saved, so that checkpoints stay encoder checkpoints).
    self.encoder.pooler.trainable = False
    self.pooling = MeanPooling(l2_normalize=True, name="mean_pooling")

  def call(self, inputs, training=None):
    sequence_output = self.encoder(inputs, training=training)["sequence_output"]
    return {"embedding": self.pooling(sequence_output, inputs["input_mask"])}

  def dummy_inputs(self, batch_size=1, seq_length=2):
    """Inputs that build every variable (used before restoring a checkpoint)."""
    return self.encoder.dummy_inputs(batch_size, seq_length)

  def get_config(self):
    return {"config": self.config.to_dict(), "recompute_grad": self.encoder.recompute_grad, "name": self.name}

  @classmethod
  def from_config(cls, config, custom_objects=None):
    return cls(**config)
