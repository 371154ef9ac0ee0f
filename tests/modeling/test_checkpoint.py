import re

import numpy as np
import pytest
import tensorflow as tf

from albert_tf.errors import CheckpointMismatchError, DataError
from albert_tf.modeling.checkpoints import (build_model_for_checkpoint, read_task_info, resolve_checkpoint_path,
                                            restore_checkpoint, save_checkpoint, write_task_info)
import albert_tf
from tests.conftest import damage_checkpoint, padded_batch, randomize, tiny_config


def saved_pretrainer(tmp_path, **config_overrides):
  config = tiny_config(**config_overrides)
  model = albert_tf.AlbertPretrainer(config)
  model(model.dummy_inputs())
  randomize(model)
  prefix = save_checkpoint(model, str(tmp_path / "ckpt" / "model.ckpt-7"))
  return model, prefix


def test_round_trip_from_prefix_and_directory(tmp_path):
  model, prefix = saved_pretrainer(tmp_path)
  batch = padded_batch(model.config.vocab_size)
  expected = model(batch)
  for path in (prefix, str(tmp_path / "ckpt")):
    restored = albert_tf.AlbertPretrainer(model.config)
    assert restore_checkpoint(restored, path) == prefix
    outputs = restored(batch)
    for key in expected:
      np.testing.assert_array_equal(outputs[key], expected[key])


def test_encoder_restores_from_pretrainer_checkpoint(tmp_path):
  model, prefix = saved_pretrainer(tmp_path)
  encoder = albert_tf.AlbertEncoder(model.config)
  restore_checkpoint(encoder, prefix)
  for ours, theirs in zip(encoder.variables, model.encoder.variables):
    np.testing.assert_array_equal(ours, theirs)


def test_mismatched_config_lists_every_difference_and_restores_nothing(tmp_path):
  _, prefix = saved_pretrainer(tmp_path, num_hidden_groups=2)
  other = albert_tf.AlbertPretrainer(tiny_config(intermediate_size=40, embedding_size=32, hidden_size=32))
  other(other.dummy_inputs())
  before = [v.numpy().copy() for v in other.variables]
  with pytest.raises(CheckpointMismatchError) as error:
    restore_checkpoint(other, prefix)
  message = str(error.value)
  assert "Nothing was restored" in message
  assert "missing from the checkpoint" not in message  # the model needs nothing the checkpoint lacks
  assert "in the checkpoint but not in the model" in message
  assert "encoder/groups/1/0/query/kernel" in message  # the second group has no home here
  assert "encoder/embeddings/projection/kernel" in message  # E == H: no projection in the model
  assert "shape mismatches" in message
  assert "encoder/groups/0/0/intermediate/kernel: model [32, 40] vs checkpoint [32, 37]" in message
  for value, variable in zip(before, other.variables):
    np.testing.assert_array_equal(value, variable.numpy())


def test_missing_variables_are_listed(tmp_path):
  _, prefix = saved_pretrainer(tmp_path)
  bigger = albert_tf.AlbertPretrainer(tiny_config(num_hidden_groups=2))
  with pytest.raises(CheckpointMismatchError, match=r"missing from the checkpoint \(16\)"):
    restore_checkpoint(bigger, prefix)
  # restore_checkpoint is strict about heads too (restore_available_parts is the lenient one).
  masked_lm_only = albert_tf.AlbertPretrainer(tiny_config(), with_sentence_order_head=False)
  masked_lm_only(masked_lm_only.dummy_inputs())
  masked_lm_prefix = save_checkpoint(masked_lm_only, str(tmp_path / "masked_lm" / "model.ckpt"))
  with pytest.raises(CheckpointMismatchError, match=r"missing from the checkpoint \(2\):\n.*sentence_order_head/"):
    restore_checkpoint(albert_tf.AlbertPretrainer(tiny_config()), masked_lm_prefix)


def test_missing_checkpoint_and_foreign_checkpoints(tmp_path):
  model = albert_tf.AlbertPretrainer(tiny_config())
  with pytest.raises(FileNotFoundError, match="expected .*nothing.index"):
    restore_checkpoint(model, str(tmp_path / "nothing"))
  with pytest.raises(FileNotFoundError, match="No checkpoint found in directory"):
    restore_checkpoint(model, str(tmp_path))
  other = tf.train.Checkpoint(net=tf.Variable(1.0)).write(str(tmp_path / "other" / "ckpt"))
  with pytest.raises(CheckpointMismatchError, match="holds no 'model' object"):
    restore_checkpoint(model, other)
  with tf.Graph().as_default():  # a TF1 name-based checkpoint, as Google's are
    tf.compat.v1.get_variable("bert/embeddings/word_embeddings", [3, 2])
    with tf.compat.v1.Session() as session:
      session.run(tf.compat.v1.global_variables_initializer())
      tf1_prefix = tf.compat.v1.train.Saver().save(session, str(tmp_path / "tf1" / "model.ckpt"))
  with pytest.raises(CheckpointMismatchError, match="name-based \\(TF1\\) checkpoint"):
    restore_checkpoint(model, tf1_prefix)


def test_a_directory_without_a_state_file_means_its_highest_numbered_checkpoint(tmp_path):
  model = albert_tf.AlbertEncoder(tiny_config())
  model(model.dummy_inputs())
  for step in (2, 10, 9):  # 10 sorts before 2 and 9 as text
    model.pooler.bias.assign(tf.fill(model.pooler.bias.shape, float(step)))
    tf.train.Checkpoint(model=model).write(str(tmp_path / f"model.ckpt-{step}"))
  assert not (tmp_path / "checkpoint").exists()
  restored = albert_tf.AlbertEncoder(tiny_config())
  assert restore_checkpoint(restored, str(tmp_path)) == str(tmp_path / "model.ckpt-10")
  np.testing.assert_array_equal(restored.pooler.bias.numpy(), 10.0)
  # save_checkpoint marks what it writes as the directory's latest, whatever the numbers.
  model.pooler.bias.assign(tf.fill(model.pooler.bias.shape, 3.0))
  assert save_checkpoint(model, str(tmp_path / "model.ckpt-3")) == str(tmp_path / "model.ckpt-3")
  assert restore_checkpoint(restored, str(tmp_path)) == str(tmp_path / "model.ckpt-3")
  np.testing.assert_array_equal(restored.pooler.bias.numpy(), 3.0)
  assert tf.train.get_checkpoint_state(str(tmp_path)).all_model_checkpoint_paths == [str(tmp_path / "model.ckpt-3")]


def test_a_checkpoint_in_a_bucket_is_found_by_its_prefix_or_its_run_folder(bucket):
  model = albert_tf.AlbertEncoder(tiny_config())
  model(model.dummy_inputs())
  run = f"{bucket}/run"
  for step in (4, 10):
    tf.train.Checkpoint(model=model).write(f"{run}/model.ckpt-{step}")
  # GCS calls run/model.ckpt-4 no folder (only the run): a prefix is a prefix, the folder means its latest.
  assert resolve_checkpoint_path(f"{run}/model.ckpt-4") == f"{run}/model.ckpt-4"
  assert resolve_checkpoint_path(run) == f"{run}/model.ckpt-10"
  prefix = save_checkpoint(model, f"{run}/model.ckpt-3")  # named the latest by the folder's `checkpoint` file
  assert restore_checkpoint(albert_tf.AlbertEncoder(tiny_config()), run) == prefix
  with pytest.raises(FileNotFoundError, match=f"expected {run}/model.ckpt-5.index"):
    resolve_checkpoint_path(f"{run}/model.ckpt-5")
  with pytest.raises(FileNotFoundError, match=f"No checkpoint found in directory {bucket}"):
    resolve_checkpoint_path(bucket)
  assert read_task_info(prefix) == {}
  write_task_info(run, {"label_list": ["정치", "경제"]})
  assert read_task_info(prefix) == {"label_list": ["정치", "경제"]}


@pytest.mark.parametrize("damage", ["data cut", "data missing", "index garbage"])
def test_a_damaged_checkpoint_is_one_data_error_naming_it(tmp_path, damage):
  _, prefix = saved_pretrainer(tmp_path)
  damage_checkpoint(prefix, damage)
  message = f"Checkpoint {re.escape(prefix)} cannot be read: its files are truncated or corrupt \\(.+\\)\\.$"
  with pytest.raises(DataError, match=message):
    restore_checkpoint(albert_tf.AlbertPretrainer(tiny_config()), prefix)
  with pytest.raises(DataError, match=message):
    build_model_for_checkpoint(tiny_config(), prefix)


def test_a_classifier_checkpoint_is_built_with_its_labels(tmp_path):
  import json
  for labels, task_labels, expected in ((("b", "a", "c"), ["b", "a", "c"], ("b", "a", "c")),
                                        (("x", "y"), None, ("0", "1")),  # no task.json: the class ids
                                        (("x", "y"), ["p", "q", "r"], ("0", "1")),  # task.json of another head
                                        (None, None, None)):  # one output: a regression
    directory = tmp_path / str(len(list(tmp_path.iterdir())))
    model = albert_tf.AlbertClassifier(tiny_config(), labels)
    model(model.dummy_inputs())
    randomize(model)
    prefix = save_checkpoint(model, str(directory / "model.ckpt-4"))
    if task_labels:
      (directory / "task.json").write_text(json.dumps({"task": "tsv", "label_list": task_labels}))
    restored, restored_prefix = albert_tf.modeling.checkpoints.build_model_for_checkpoint(tiny_config(), str(directory))
    assert isinstance(restored, albert_tf.AlbertClassifier) and restored_prefix == prefix
    assert restored.label_names == expected
    batch = padded_batch(120)
    np.testing.assert_array_equal(restored(batch)["logits"], model(batch)["logits"])


def test_a_long_list_of_differences_is_cut_and_counted():
  error = albert_tf.modeling.checkpoints.mismatch_error(
      "Summary.", [("missing", [f"v{i}" for i in range(30)]), ("empty", []), ("few", ["a", "b"])], "A hint.")
  lines = str(error).split("\n")
  assert lines[:3] == ["Summary.", "  missing (30):", "    v0"]
  assert lines[26:] == ["    v24", "    ... and 5 more", "  few (2):", "    a", "    b", "A hint."]
