"""Activation functions by their config name (`AlbertConfig.hidden_act`)."""

import tensorflow as tf


def gelu_tanh(x):
  """Google's `gelu`: 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))); Hugging Face's `gelu_new`."""
  return tf.nn.gelu(x, approximate=True)


def gelu_exact(x):
  """The erf GELU, which Hugging Face calls `gelu`."""
  return tf.nn.gelu(x, approximate=False)


_ACTIVATIONS = {
    "gelu": gelu_tanh,
    "gelu_new": gelu_tanh,
    "gelu_pytorch_tanh": gelu_tanh,
    "gelu_exact": gelu_exact,
    "relu": tf.nn.relu,
    "tanh": tf.math.tanh,
    "linear": tf.identity,
}


def get_activation(name: str):
  """Returns the function for an `AlbertConfig.ACTIVATIONS` name."""
  try:
    return _ACTIVATIONS[name]
  except KeyError:
    raise ValueError(f"Unknown activation {name!r}; expected one of {', '.join(_ACTIVATIONS)}.") from None
