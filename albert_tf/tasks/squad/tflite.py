"""TensorFlow Lite export of a SQuAD v1 model, as Google's `run_squad_v1.py --export_dir` writes it.

`albert_model.tflite` takes int32 `[1, max_seq_length]` `input_ids`, `input_mask`, `segment_ids` (Google's
names) and gives `start_logits` and `end_logits`. The file is checked before it is kept: the TFLite
interpreter must give the Keras model's logits on sample inputs.
"""

import warnings
from typing import List, Sequence, Tuple

import numpy as np
import tensorflow as tf

from albert_tf.errors import OutputError
from albert_tf.files import write_output_file

TFLITE_TOLERANCE = 1e-4  # largest |logit difference| accepted between TFLite and the model


def _signature_function(model, max_seq_length: int):
  spec = tf.TensorSpec([1, max_seq_length], tf.int32)

  @tf.function(input_signature=[spec, spec, spec])
  def squad_logits(input_ids, input_mask, segment_ids):
    outputs = model({"input_word_ids": input_ids, "input_mask": input_mask, "input_type_ids": segment_ids},
                    training=False)
    return {"start_logits": outputs["start_logits"], "end_logits": outputs["end_logits"]}

  return squad_logits


def _sample_inputs(samples: Sequence[Tuple[Sequence[int], int]], max_seq_length: int) -> List[dict]:
  """Padded single-row inputs of (unpadded ids, length of segment 0) samples; a minimal one without samples."""
  rows = []
  for ids, first_segment_length in samples or [([2, 3, 3], 2)]:
    ids = list(ids)[:max_seq_length]
    padding = [0] * (max_seq_length - len(ids))
    rows.append({"input_ids": np.array([ids + padding], np.int32),
                 "input_mask": np.array([[1] * len(ids) + padding], np.int32),
                 "segment_ids": np.array([[0] * first_segment_length + [1] * (len(ids) - first_segment_length)
                                          + padding], np.int32)})
  return rows


def export_checked_tflite(model, path: str, max_seq_length: int,
                          samples: Sequence[Tuple[Sequence[int], int]] = ()) -> str:
  """Converts a built `AlbertQuestionAnswerer` to TFLite at `path`, checked against the model; returns `path`.

  Args:
    model: the model with its weights.
    path: the `.tflite` file to write.
    max_seq_length: the fixed input length.
    samples: (unpadded ids of `[CLS] question [SEP] context [SEP]`, length of `[CLS] question [SEP]`) to
      compare on (a minimal sequence when empty).

  Raises:
    OutputError: TFLite's logits differ from the model's by more than `TFLITE_TOLERANCE` (nothing is kept).
  """
  function = _signature_function(model, max_seq_length)
  converter = tf.lite.TFLiteConverter.from_concrete_functions([function.get_concrete_function()], model)
  # Builtin ops where they exist, TensorFlow's own (the Flex delegate, in the tensorflow pip) for the rest.
  converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS, tf.lite.OpsSet.SELECT_TF_OPS]
  flatbuffer = converter.convert()
  with warnings.catch_warnings():
    # TF 2.20 points to ai_edge_litert's interpreter, which the pinned stack does not ship; this one works.
    warnings.filterwarnings("ignore", message=".*tf.lite.Interpreter is deprecated", category=UserWarning)
    interpreter = tf.lite.Interpreter(model_content=flatbuffer)
  runner = interpreter.get_signature_runner()
  worst = 0.0
  for inputs in _sample_inputs(samples, max_seq_length):
    expected = function(**{name: tf.constant(value) for name, value in inputs.items()})
    got = runner(**inputs)
    worst = max(worst, *(float(np.max(np.abs(got[name] - expected[name].numpy()))) for name in expected))
  if worst > TFLITE_TOLERANCE:
    raise OutputError(f"The TFLite model's logits differ from the model's by up to {worst:.2e} (more than "
                      f"{TFLITE_TOLERANCE:g}); {path} was not written.")
  return write_output_file(path, flatbuffer)
