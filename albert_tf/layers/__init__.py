"""Keras layers of ALBERT: each idea of the paper in one file."""

from albert_tf.layers.activations import get_activation
from albert_tf.layers.factorized_embedding import FactorizedEmbedding
from albert_tf.layers.heads import ClassificationHead, MaskedLMHead, SentenceOrderHead
from albert_tf.layers.pooling import MeanPooling
from albert_tf.layers.transformer_block import AlbertTransformerBlock
