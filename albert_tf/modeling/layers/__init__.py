"""Keras layers of ALBERT: each idea of the paper in one file."""

from albert_tf.modeling.layers.activations import get_activation
from albert_tf.modeling.layers.factorized_embedding import FactorizedEmbedding
from albert_tf.modeling.layers.heads import ClassificationHead, MaskedLMHead, SentenceOrderHead
from albert_tf.modeling.layers.pooling import POOLING_MODES, SentenceEmbeddingHead, TokenPooling
from albert_tf.modeling.layers.transformer_block import AlbertTransformerBlock
