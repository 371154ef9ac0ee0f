"""albert-tf: ALBERT (A Lite BERT) in TensorFlow 2 / tf_keras."""

from albert_tf.config import AlbertConfig, AlbertConfigError
from albert_tf.encoder import AlbertEncoder
from albert_tf.pretrainer import AlbertPretrainer

__version__ = "0.1.0"
