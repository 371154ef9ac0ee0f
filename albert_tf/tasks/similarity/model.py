"""`AlbertSentenceEncoder`: one L2-normalised embedding per text, for semantic search and STS (Sentence-BERT)."""

from typing import Any, Dict, Optional, Union

import tf_keras

from albert_tf.modeling.config import AlbertConfig
from albert_tf.modeling.encoder import AlbertEncoder, as_config
from albert_tf.modeling.layers.pooling import SentenceEmbeddingHead


@tf_keras.utils.register_keras_serializable(package="albert_tf")
class AlbertSentenceEncoder(tf_keras.Model):
  """The encoder followed by a `SentenceEmbeddingHead`: mean, `[CLS]` or max pooling over real tokens, an
  optional Dense + tanh projection, and L2 normalisation.

  Without a projection it adds no weights to the encoder, so its checkpoints restore into an `AlbertEncoder`;
  fine-tuning records the pooling and projection in the `task.json` beside them, which
  `checkpoints.build_model_for_checkpoint` reads back. Exported, the `sentence_embedding` signature computes
  this output. Trained siamese-style (Sentence-BERT: the cosine of two embeddings regresses a similarity
  score) or by distillation from a teacher's embeddings.

  Inputs: the encoder's dict of one segment per text. Outputs: `embedding`, float32 `[batch, projection_dim or
  H]`, unit length.

  Args:
    config: an `AlbertConfig` or its dict.
    pooling: "mean", "cls" or "max" (see `TokenPooling`).
    projection_dim: the size of a Dense + tanh projection after pooling; None for none.
    recompute_grad: recompute the encoder's block activations in the backward pass (see `AlbertEncoder`).
  """

  def __init__(self, config: Union[AlbertConfig, Dict[str, Any]], pooling: str = "mean",
               projection_dim: Optional[int] = None, recompute_grad: bool = False, **kwargs):
    kwargs.setdefault("name", "albert_sentence_encoder")
    super().__init__(**kwargs)
    self.config = as_config(config)
    self.encoder = AlbertEncoder(self.config, recompute_grad=recompute_grad, name="encoder")
    # The embedding never reads the [CLS] pooler (cls pooling takes the token vector, as sentence-transformers
    # does): it gets no gradient, so it is not trained (it is still saved: checkpoints stay encoder checkpoints).
    self.encoder.pooler.trainable = False
    self.sentence_head = SentenceEmbeddingHead(pooling, projection_dim, self.config.initializer_range,
                                               name="sentence_head")

  @property
  def pooling(self) -> str:
    return self.sentence_head.pooling.mode

  @property
  def projection_dim(self) -> Optional[int]:
    return self.sentence_head.projection_dim

  @property
  def embedding_size(self) -> int:
    """The width of the embedding: the projection's, else the hidden size."""
    return self.projection_dim or self.config.hidden_size

  def call(self, inputs, training=None):
    sequence_output = self.encoder(inputs, training=training)["sequence_output"]
    return {"embedding": self.sentence_head(sequence_output, inputs["input_mask"])}

  def dummy_inputs(self, batch_size=1, seq_length=2):
    """Inputs that build every variable (used before restoring a checkpoint)."""
    return self.encoder.dummy_inputs(batch_size, seq_length)

  def get_config(self):
    return {"config": self.config.to_dict(), "pooling": self.pooling, "projection_dim": self.projection_dim,
            "recompute_grad": self.encoder.recompute_grad, "name": self.name}

  @classmethod
  def from_config(cls, config, custom_objects=None):
    return cls(**config)
