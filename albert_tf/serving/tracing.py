"""Tracing the functions of an exported module once: without autograph, and under saving's own context."""

import contextlib
import functools

import tensorflow as tf
# The context `tf.saved_model.save` traces under has no public API; `tracing_as_saving` enters it.
from tensorflow.python.saved_model import save_context

# The exported functions hold no Python control flow on tensors: autograph's conversion of them (and of
# tensorflow_text underneath) would only cost time, over a third of a question-answering export's.
graph_function = functools.partial(tf.function, autograph=False)


@contextlib.contextmanager
def tracing_as_saving():
  """Functions traced inside are traced as `tf.saved_model.save` traces them; yields the options to save with.

  Saving traces every function of a module again under a context of its own, which is part of each function's
  cache key: a signature, or a variant traced so that saving keeps it, would be traced twice and stored twice
  (a tiny SQuAD v2 model's export: 20.7 CPU s and a 7.9 MB graph; traced here, 9.1 s and 4.4 MB). Build the
  module and its signatures inside, and save with the yielded options after the block (saving cannot nest).
  """
  options = tf.saved_model.SaveOptions()
  with save_context.save_context(options):
    yield options
