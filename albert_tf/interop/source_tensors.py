"""What converting a source's tensors into one of our models shares: the model's variables filled all or nothing,
and the `Conversion` that the Google and Hugging Face readers return.

Every source tensor must fill a variable, apart from a few ignored by design (the step counter, optimizer slots,
Hugging Face's tied decoder copies and buffers). Variables left unfilled, source tensors left over and shapes
that differ are reported together in one `CheckpointMismatchError`, and nothing is assigned: Hugging Face's own
TF1 converter only logs unmatched names and leaves those weights random.
"""

import dataclasses
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import tensorflow as tf

from albert_tf.modeling import checkpoints as checkpoint_lib
from albert_tf.modeling import task_heads
from albert_tf.text import tokenizer_options as options_lib

SPM_FILE = "spiece.model"  # the SentencePiece model's name beside a converted checkpoint (Google's and HF's)


@dataclasses.dataclass
class Conversion:
  """A converted model and what became of the source.

  Attributes:
    source: the checkpoint prefix or folder converted.
    model: the built model (an `AlbertEncoder`, `AlbertPretrainer` or SQuAD model) with the converted weights.
    num_tensors: source tensors converted into variables.
    ignored: source tensors left out by design, counted by reason.
    notes: what the user should know about the result.
    spm_model_file: the SentencePiece model to copy beside the checkpoint, if any.
    tokenizer_options: the options the vocabulary was trained with, recorded beside the copied model.
    tokenizer_options_source: where they come from, for the summary.
  """

  source: str
  model: tf.Module
  num_tensors: int
  ignored: Dict[str, int]
  notes: List[str] = dataclasses.field(default_factory=list)
  spm_model_file: Optional[str] = None
  tokenizer_options: options_lib.TokenizerOptions = options_lib.TokenizerOptions()
  tokenizer_options_source: str = "Google's defaults"

  @property
  def parts(self) -> List[str]:
    """The parts converted: the encoder, then the heads."""
    heads = [name for head, name in checkpoint_lib.HEADS.items() if getattr(self.model, head, None) is not None]
    task_head = task_heads.head_of(self.model)
    return ["encoder"] + heads + ([task_head.description] if task_head is not None else [])


def fill_variables(targets: Dict[str, Tuple[tf.Variable, bool]], shapes: Dict[str, List[int]],
                   load: Callable[[str], np.ndarray], source: str, hint: str,
                   problems: Sequence[str] = ()) -> int:
  """Assigns every target variable its source tensor, or raises one error listing every problem.

  Args:
    targets: source name -> (variable, whether the source stores it transposed).
    shapes: every source tensor still to place, by name.
    load: reads one source tensor.
    source: the source's path, for the message.
    hint: the likely cause, for the message.
    problems: problems found before, reported with the others.

  Returns:
    The number of tensors assigned.
  """
  expected = {name: variable.shape.as_list()[::-1] if transposed else variable.shape.as_list()
              for name, (variable, transposed) in targets.items()}
  unmapped = sorted(f"{name} {list(shape)}" for name, shape in shapes.items() if name not in expected)
  missing = sorted(f"{name} {shape}" for name, shape in expected.items() if name not in shapes)
  mismatched = sorted(f"{name}: source {list(shapes[name])} vs model {shape}"
                      for name, shape in expected.items() if name in shapes and list(shapes[name]) != shape)
  if unmapped or missing or mismatched or problems:
    raise checkpoint_lib.mismatch_error(
        f"Cannot convert {source}: it does not fit the model of the config. Nothing was written.",
        [("in the source but not in the model", unmapped), ("missing from the source", missing),
         ("shape mismatches (source layout)", mismatched), ("not convertible", list(problems))], hint)
  for name, (variable, transposed) in targets.items():
    value = np.asarray(load(name), np.float32)
    variable.assign(value.T if transposed else value)
  return len(targets)


def recorded_tokenizer_options(spm_model_file: Optional[str]) -> Dict:
  """`Conversion`'s tokenizer fields from the record beside `spm_model_file`; empty when there is none."""
  record = options_lib.recorded_options(spm_model_file) if spm_model_file else None
  if record is None:
    return {}
  source, recorded = record
  return {"tokenizer_options": recorded, "tokenizer_options_source": source}
