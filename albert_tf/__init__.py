"""albert-tf: ALBERT (A Lite BERT) in TensorFlow 2 / tf_keras."""

from albert_tf.classifier import AlbertClassifier
from albert_tf.config import AlbertConfig, AlbertConfigError
from albert_tf.encoder import AlbertEncoder
from albert_tf.pretrainer import AlbertPretrainer
from albert_tf.sentence_encoder import AlbertSentenceEncoder

__version__ = "0.1.0"
