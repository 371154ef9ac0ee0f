"""The registry of task heads: every head converts to Google's and Hugging Face's names and back, and through a
checkpoint. (That only the task packages name them is tests/test_layout.py's.)"""

import numpy as np
import pytest

import albert_tf
from albert_tf.interop import huggingface
from albert_tf.modeling import checkpoints as checkpoint_lib
from albert_tf.modeling import task_heads
from albert_tf.modeling.weight_names import named_weights
from albert_tf.tasks.dependency_parsing.model import AlbertDependencyParser
from albert_tf.tasks.dialogue_state_tracking.model import AlbertDialogueStateTracker
from albert_tf.tasks.token_classification.model import AlbertTokenClassifier
from tests.conftest import randomize, tiny_config

# One model of each registered head. A new head fails `test_every_head_has_an_example` until it is added here.
EXAMPLES = {
    "classifier_head": lambda config: albert_tf.AlbertClassifier(config, ["a", "b", "c"]),
    "choice_head": albert_tf.AlbertMultipleChoice,
    "squad_head": albert_tf.AlbertQuestionAnswerer,
    "squad_v2_head": lambda config: albert_tf.AlbertQuestionAnswererV2(config, start_n_top=3, end_n_top=2),
    "token_classifier_head": lambda config: AlbertTokenClassifier(config, ["O", "B-PER", "I-PER"]),
    "dependency_parser_head": lambda config: AlbertDependencyParser(
        config, ["NP", "VP", "AP"], pos_vocab_size=5, pos_embedding_size=4, arc_units=8, label_units=6),
    "state_tracker_head": lambda config: AlbertDialogueStateTracker(
        config, ["a-b", "a-c"], [["none", "x"], ["none", "dontcare", "y"]], [[5], [6, 7], [5], [8], [9, 10]],
        [[3, 4], [3]]),
    # Without a projection: that has no place in Google's or transformers' names (a sentence-transformers module).
    "sentence_head": lambda config: albert_tf.AlbertSentenceEncoder(config, "cls"),
}


def built_example(head, seed):
  model = EXAMPLES[head.attribute](tiny_config())
  model(model.dummy_inputs(), training=False)
  randomize(model, seed)
  return model


def test_every_head_has_an_example():
  heads = task_heads.registered_heads()
  assert sorted(head.attribute for head in heads) == sorted(EXAMPLES)
  for head in heads:
    assert head.model_class.__module__.startswith(f"{task_heads.TASKS_PACKAGE}."), head.model_class


@pytest.mark.parametrize("attribute", sorted(EXAMPLES))
def test_a_head_converts_to_google_and_hugging_face_names_and_back(attribute, tmp_path):
  [head] = [head for head in task_heads.registered_heads() if head.attribute == attribute]
  model = built_example(head, seed=1)
  assert task_heads.head_of(model) is head
  named = named_weights(model)
  assert len(named) == len(model.variables)
  head_variables = {id(weight) for weight in getattr(model, attribute).weights}
  head_names = [names for names, variable in named if id(variable) in head_variables]
  assert len(head_names) == len(head_variables)
  if head.google_scope is not None:  # conversion finds the head by its scope, which nothing else uses
    scope = f"{head.google_scope}/"
    assert any(names.google.startswith(scope) for names in head_names), head_names
    assert not any(names.google.startswith(scope) for names, _ in named if names not in head_names)

  # Google's names, out and back into a model of other weights.
  google = {names.google: variable.numpy() for names, variable in named}
  assert len(google) == len(named)
  other = built_example(head, seed=2)
  for names, variable in named_weights(other):
    variable.assign(google[names.google])
  for expected, actual in zip(model.variables, other.variables):
    np.testing.assert_array_equal(expected.numpy(), actual.numpy())

  # Hugging Face's, through the state dict export writes (transposed, without what transformers lacks).
  if head.hf_config is None:  # export refuses it
    assert all(names.hf is None for names in head_names)
  else:
    assert head.hf_config(model)["architectures"]
    tensors = huggingface.hf_state_dict(model)
    other = built_example(head, seed=3)
    for names, variable in named_weights(other):
      if names.hf.startswith(head.hf_dropped_prefixes or ("\0",)):
        assert names.hf not in tensors
        continue
      value = tensors.pop(names.hf)
      variable.assign(value.T if names.transpose_for_hf else value)
    assert not set(tensors) - {"albert.encoder.embedding_hidden_mapping_in.weight",
                               "albert.encoder.embedding_hidden_mapping_in.bias"}
    for (names, expected), actual in zip(named, named_weights(other)):
      if not names.hf.startswith(head.hf_dropped_prefixes or ("\0",)):
        np.testing.assert_array_equal(expected.numpy(), actual[1].numpy())

  # Through a checkpoint: the registry rebuilds the model from the head's variables.
  prefix = checkpoint_lib.save_checkpoint(model, str(tmp_path / "model.ckpt"))
  if head.run_info is not None:  # what rebuilds it beside the variables, as a run or a conversion writes it
    checkpoint_lib.write_task_info(str(tmp_path), head.run_info(model))
  restored, _ = checkpoint_lib.build_model_for_checkpoint(model.config, prefix)
  assert type(restored) is type(model)
  for expected, actual in zip(model.variables, restored.variables):
    np.testing.assert_array_equal(expected.numpy(), actual.numpy())
