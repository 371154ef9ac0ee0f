"""The shared training machinery on its own: best-checkpoint choice, clipping, loss scaling, loop stops."""

import json
import os

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

import albert_tf
from albert_tf import files
from albert_tf.errors import OptionError, TrainingError
from albert_tf.modeling import checkpoints as checkpoint_lib
from albert_tf.training import loop
from albert_tf.training import run_directory
from tests.conftest import damage_checkpoint, tiny_config


class Weights(tf.Module):
  """A stand-in model: one variable whose value says which step it came from."""

  def __init__(self):
    super().__init__()
    self.kernel = tf.Variable(tf.zeros([3]))


def best_value(output_dir):
  model = Weights()
  tf.train.Checkpoint(**{checkpoint_lib.MODEL_KEY: model}).read(
      str(output_dir / run_directory.BEST_CHECKPOINT)).assert_consumed()
  return model.kernel.numpy()


@pytest.mark.parametrize("higher_is_better,scores,best_step", [
    (True, [0.5, 0.7, 0.6, 0.7, 0.2], 2),   # a tie does not replace the first best
    (False, [0.5, 0.7, 0.3, 0.3, 0.9], 3),  # e.g. a loss
])
def test_keep_if_best_keeps_the_first_best_in_its_direction(tmp_path, higher_is_better, scores, best_step):
  model = Weights()
  kept = []
  for step, score in enumerate(scores, 1):
    model.kernel.assign(tf.fill([3], float(step)))
    kept.append(run_directory.keep_if_best(str(tmp_path), model, {"global_step": step, "score": score}, "score",
                                      higher_is_better))
  expected_kept = []
  best = None
  for score in scores:
    better = best is None or (score > best if higher_is_better else score < best)
    expected_kept.append(better)
    best = score if better else best
  assert kept == expected_kept
  assert json.loads((tmp_path / run_directory.BEST_CHECKPOINT_INFO).read_text()) == {
      "global_step": best_step, "score": scores[best_step - 1]}
  np.testing.assert_array_equal(best_value(tmp_path), [best_step] * 3)


STRATEGY = tf.distribute.OneDeviceStrategy("/cpu:0")


class FixedLoss:
  """An objective whose loss is `loss_fn(batch)`, reporting nothing."""
  sum_names = ("nothing",)

  def __init__(self, loss_fn):
    self.loss_fn = loss_fn

  def loss_normalizers(self, batch):
    del batch
    return tf.ones([1])

  def replica_loss(self, model):
    del model
    return lambda batch, normalizers: (self.loss_fn(batch), tf.zeros([1]))


def one_device_step(model, optimizer, loss_fn, loss_scaling=False):
  """One `loop.replica_train_step` of `loss_fn` (model and optimizer made in STRATEGY's scope)."""
  step = loop.replica_train_step(model, optimizer, FixedLoss(loss_fn), loss_scaling)
  STRATEGY.run(tf.function(step), args=(tf.constant(1.0),))


def test_gradients_are_clipped_to_global_norm_one():
  """Two variables with gradients 30 and 40 (norm 50): plain SGD at rate 1 moves them by 0.6 and 0.8."""
  with STRATEGY.scope():
    model = tf.Module()
    model.a, model.b = tf.Variable([0.0]), tf.Variable([0.0])
    optimizer = tf_keras.optimizers.legacy.SGD(1.0)
  one_device_step(model, optimizer, lambda batch: batch * (30.0 * model.a[0] + 40.0 * model.b[0]))
  np.testing.assert_allclose([model.a.numpy()[0], model.b.numpy()[0]], [-0.6, -0.8], rtol=1e-6)

  # Below the norm nothing changes: gradients 0.3 and 0.4 are applied as they are.
  model.a.assign([0.0])
  model.b.assign([0.0])
  one_device_step(model, optimizer, lambda _: 0.3 * model.a[0] + 0.4 * model.b[0])
  np.testing.assert_allclose([model.a.numpy()[0], model.b.numpy()[0]], [-0.3, -0.4], rtol=1e-6)


def test_float16_loss_scaling_keeps_gradients_that_float16_cannot_hold():
  """A float32 loss 1e-8 · y of a float16 output y: its gradient 1e-8 underflows to 0 on its way back into
  float16 (smallest value 6e-8) unless the loss is scaled first."""
  tf_keras.mixed_precision.set_global_policy("mixed_float16")
  try:
    updates = {}
    for loss_scaling in (True, False):
      with STRATEGY.scope():
        model = tf.Module()
        model.layer = tf_keras.layers.Dense(1, use_bias=False, kernel_initializer="ones")
        model.layer.build([None, 1])
        optimizer = tf_keras.mixed_precision.LossScaleOptimizer(tf_keras.optimizers.legacy.SGD(1e6))
      assert model.layer.compute_dtype == "float16"
      one_device_step(model, optimizer, lambda _: 1e-8 * tf.cast(model.layer(tf.ones([1, 1]))[0, 0], tf.float32),
                      loss_scaling)
      updates[loss_scaling] = 1.0 - float(model.layer.kernel.numpy()[0, 0])
  finally:
    tf_keras.mixed_precision.set_global_policy("float32")
  assert updates[True] == pytest.approx(1e6 * 1e-8, rel=1e-2)
  assert updates[False] == 0.0  # what a float16 run without loss scaling does to every such gradient


def test_loop_schedule_stops_for_logs_checkpoints_and_the_end():
  schedule = loop.LoopSchedule(num_train_steps=25, iterations_per_loop=10, save_checkpoints_steps=7,
                                   log_steps=4)
  stops, step = [], 0
  while step < schedule.num_train_steps:
    step += schedule.steps_to_next_stop(step)
    stops.append(step)
  assert stops == [4, 7, 8, 12, 14, 16, 20, 21, 24, 25]
  assert [s for s in stops if schedule.is_checkpoint_step(s)] == [7, 14, 21, 25]
  # Without log_steps, a line every iterations_per_loop steps.
  default = loop.LoopSchedule(num_train_steps=25, iterations_per_loop=10, save_checkpoints_steps=7)
  stops, step = [], 0
  while step < default.num_train_steps:
    step += default.steps_to_next_stop(step)
    stops.append(step)
  assert stops == [7, 10, 14, 20, 21, 25]
  # A host loop never runs more than iterations_per_loop steps.
  short_loops = loop.LoopSchedule(num_train_steps=9, iterations_per_loop=2, save_checkpoints_steps=5,
                                      log_steps=4)
  assert [short_loops.steps_to_next_stop(s) for s in (0, 2, 4, 5, 7, 8)] == [2, 2, 1, 2, 1, 1]


@pytest.mark.parametrize("where", ["local", "bucket"])
def test_run_directory_of_another_config_is_refused(where, tmp_path, bucket):
  output_dir = f"{bucket}/run" if where == "bucket" else str(tmp_path / "run")
  run_directory.write_config(output_dir, tiny_config())
  assert files.list_folder(output_dir) == ["albert_config.json"]
  run_directory.check_run_directory(output_dir, tiny_config())  # the same config resumes
  with pytest.raises(TrainingError, match="hidden_size: 32 there vs 64 now"):
    run_directory.check_run_directory(output_dir, tiny_config(hidden_size=64))
  run_directory.write_config(output_dir, tiny_config(hidden_size=64))  # never rewritten
  run_directory.check_run_directory(output_dir, tiny_config())
  # A key that only one of the two configs has is a difference too.
  extra = tiny_config()
  extra.extra["classifier_dropout_prob"] = 0.2
  with pytest.raises(TrainingError, match="classifier_dropout_prob: None there vs 0.2 now"):
    run_directory.check_run_directory(output_dir, extra)
  with pytest.raises(OptionError, match=f"--output_dir {output_dir}/albert_config.json is a file, not a folder"):
    run_directory.check_run_directory(f"{output_dir}/albert_config.json", tiny_config())


@pytest.mark.parametrize("where", ["local", "bucket"])
def test_restore_latest_restores_the_run_state_of_the_newest_checkpoint(where, tmp_path, bucket):
  output_dir = bucket if where == "bucket" else str(tmp_path)
  model = albert_tf.AlbertEncoder(tiny_config())
  model(model.dummy_inputs())
  bias = model.pooler.bias
  step = tf.Variable(0, dtype=tf.int64)
  checkpoint = tf.train.Checkpoint(**{checkpoint_lib.MODEL_KEY: model}, step=step)
  assert run_directory.restore_latest(output_dir, model, checkpoint) is None
  manager = tf.train.CheckpointManager(checkpoint, output_dir, max_to_keep=3,
                                       checkpoint_name=checkpoint_lib.CHECKPOINT_NAME)
  for value in (4, 8):
    bias.assign(tf.fill(bias.shape, float(value)))
    step.assign(value)
    run_directory.save_run_checkpoint(manager, value, is_chief=True)
  bias.assign(tf.zeros(bias.shape))
  step.assign(0)
  assert run_directory.restore_latest(output_dir, model, checkpoint) == f"{output_dir}/model.ckpt-8"
  assert int(step.numpy()) == 8
  np.testing.assert_array_equal(bias.numpy(), 8.0)
  # Another worker's copy goes once saved: only the chief's is kept.
  worker_dir = f"{output_dir}/.worker_worker_1"
  worker_manager = tf.train.CheckpointManager(checkpoint, worker_dir, max_to_keep=1,
                                              checkpoint_name=checkpoint_lib.CHECKPOINT_NAME)
  run_directory.save_run_checkpoint(worker_manager, 8, is_chief=False)
  assert not files.exists(worker_dir)


def run_with_checkpoints(output_dir, steps):
  """A run directory whose checkpoints hold the run state at `steps` (a tiny encoder and its step); returns the
  model, its checkpoint object and the step variable, reset to 0, to restore into."""
  model = albert_tf.AlbertEncoder(tiny_config())
  model(model.dummy_inputs())
  step = tf.Variable(0, dtype=tf.int64)
  checkpoint = tf.train.Checkpoint(**{checkpoint_lib.MODEL_KEY: model}, step=step)
  manager = tf.train.CheckpointManager(checkpoint, str(output_dir), max_to_keep=len(steps),
                                       checkpoint_name=checkpoint_lib.CHECKPOINT_NAME)
  for value in steps:
    step.assign(value)
    run_directory.save_run_checkpoint(manager, value, is_chief=True)
  step.assign(0)
  return model, checkpoint, step


@pytest.mark.parametrize("damage", ["gone", "data cut", "index garbage"])
def test_resume_from_a_damaged_latest_checkpoint_takes_the_newest_complete_one_and_says_so(tmp_path, capsys, damage):
  model, checkpoint, step = run_with_checkpoints(tmp_path, (4, 8, 12))
  damage_checkpoint(str(tmp_path / "model.ckpt-12"), damage)
  capsys.readouterr()
  assert run_directory.restore_latest(str(tmp_path), model, checkpoint) == str(tmp_path / "model.ckpt-8")
  assert int(step.numpy()) == 8
  message, = capsys.readouterr().err.splitlines()
  reason = "Checkpoint not found" if damage == "gone" else "cannot be read: its files are truncated or corrupt"
  assert reason in message and str(tmp_path / "model.ckpt-12") in message
  assert message.endswith(f"Resuming from {tmp_path / 'model.ckpt-8'} instead, the newest complete checkpoint in "
                          f"{tmp_path}.")


def test_resume_never_starts_again_from_step_0_in_a_directory_with_checkpoints(tmp_path, capsys):
  model, checkpoint, step = run_with_checkpoints(tmp_path, (4, 8))
  os.remove(tmp_path / run_directory.STATE_FILE)  # lost: the highest-numbered complete checkpoint is the latest
  capsys.readouterr()
  assert run_directory.restore_latest(str(tmp_path), model, checkpoint) == str(tmp_path / "model.ckpt-8")
  assert int(step.numpy()) == 8 and not capsys.readouterr().err
  (tmp_path / run_directory.STATE_FILE).write_text("not a checkpoint list\n")
  for refused in (lambda: run_directory.restore_latest(str(tmp_path), model, checkpoint),
                  lambda: run_directory.check_run_directory(str(tmp_path), tiny_config())):
    with pytest.raises(TrainingError, match=f"^{tmp_path / 'checkpoint'} cannot be read: .* Remove it to resume"):
      refused()
  os.remove(tmp_path / run_directory.STATE_FILE)
  damage_checkpoint(str(tmp_path / "model.ckpt-8"), "data cut")
  damage_checkpoint(str(tmp_path / "model.ckpt-4"), "index garbage")
  with pytest.raises(TrainingError, match=f"^--output_dir {tmp_path} holds no complete checkpoint to resume from: "
                                          f"Checkpoint {tmp_path / 'model.ckpt-8'} cannot be read: .* The 1 older "
                                          r"one\(s\) cannot be read either\. Remove its checkpoint files"):
    run_directory.restore_latest(str(tmp_path), model, checkpoint)
  assert run_directory.has_checkpoints(str(tmp_path)) and not run_directory.has_checkpoints(str(tmp_path / "new"))


def test_a_run_that_fails_before_its_first_checkpoint_removes_what_it_created(tmp_path):
  new_dir, old_dir = tmp_path / "new", tmp_path / "old"
  with pytest.raises(KeyboardInterrupt):
    with run_directory.removed_on_failure_before_checkpoint(str(new_dir), lambda: False):
      (new_dir / "train").mkdir(parents=True)
      (new_dir / "train" / "events").write_text("")
      raise KeyboardInterrupt
  assert not new_dir.exists()
  (old_dir / "train").mkdir(parents=True)
  (old_dir / "train" / "events.1").write_text("")
  (old_dir / "eval_results.txt").write_text("before")
  with pytest.raises(TrainingError):
    with run_directory.removed_on_failure_before_checkpoint(str(old_dir), lambda: False):
      (old_dir / "train" / "events.2").write_text("")
      (old_dir / "eval").mkdir()
      (old_dir / "eval" / "events.3").write_text("")
      (old_dir / "eval_results.txt").write_text("changed")  # a file it changed stays
      raise TrainingError("stopped")
  assert sorted(str(path.relative_to(old_dir)) for path in old_dir.rglob("*")) == [
      "eval_results.txt", "train", "train/events.1"]
  checkpointed = []
  with pytest.raises(TrainingError):
    with run_directory.removed_on_failure_before_checkpoint(str(new_dir), lambda: bool(checkpointed)):
      new_dir.mkdir()
      checkpointed.append(True)
      raise TrainingError("stopped after a checkpoint")
  assert new_dir.exists()


def test_a_run_in_a_bucket_that_fails_before_its_first_checkpoint_leaves_nothing_there(bucket):
  new_dir, old_dir = f"{bucket}/new", f"{bucket}/old"
  with pytest.raises(KeyboardInterrupt):
    with run_directory.removed_on_failure_before_checkpoint(new_dir, lambda: False):
      run_directory.write_config(new_dir, tiny_config())
      files.make_folders(f"{new_dir}/train")
      files.write_atomically(f"{new_dir}/train/events", b"1")
      raise KeyboardInterrupt
  assert files.list_folder(bucket) == []
  files.make_folders(f"{old_dir}/train")
  files.write_atomically(f"{old_dir}/train/events.1", b"1")
  with pytest.raises(TrainingError):
    with run_directory.removed_on_failure_before_checkpoint(old_dir, lambda: False):
      files.write_atomically(f"{old_dir}/train/events.2", b"2")
      files.make_folders(f"{old_dir}/eval")
      files.write_atomically(f"{old_dir}/eval/events.3", b"3")
      raise TrainingError("stopped")
  assert files.paths_under(old_dir) == {f"{old_dir}/train", f"{old_dir}/train/events.1"}


@pytest.mark.parametrize("where", ["local", "bucket"])
def test_last_evaluated_step_and_best_info_read_what_evaluation_wrote(where, tmp_path, bucket):
  output_dir = f"{bucket}/run" if where == "bucket" else str(tmp_path / "run")
  assert run_directory.last_evaluated_step(output_dir) is None
  assert run_directory.read_best_info(output_dir) is None
  metrics = {"global_step": 12, "accuracy": 0.5, "loss": 0.7}
  run_directory.write_eval_results(output_dir, metrics, ["accuracy"])
  assert run_directory.last_evaluated_step(output_dir) == 12
  assert run_directory.read_eval_results(output_dir) == metrics  # what run_klue's table reads
  eval_results = f"{output_dir}/{run_directory.EVAL_RESULTS}"
  assert files.read_text(eval_results) == "accuracy = 0.5\nglobal_step = 12\nloss = 0.7\n"
  assert not run_directory.awaits_evaluation(output_dir, "model.ckpt-12", 12)  # scored before the stop
  assert run_directory.awaits_evaluation(output_dir, "model.ckpt-15", 15)  # written, then the run died
  assert not run_directory.awaits_evaluation(output_dir, None, 0)  # a new run: nothing to score
  assert run_directory.keep_if_best(output_dir, Weights(), metrics, "accuracy")
  assert run_directory.read_best_info(output_dir) == metrics
  assert files.file_exists(f"{output_dir}/{run_directory.BEST_CHECKPOINT}.index")
  files.write_atomically(eval_results, "accuracy = 0.5\n")
  assert run_directory.last_evaluated_step(output_dir) is None
