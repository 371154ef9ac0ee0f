"""run_pretraining: global-batch loss, distribution, exact resume, eval, and bad input. Fine-tuning's replicas and
workers are tested here too, on pretraining's pair of worker processes."""

import dataclasses
import json
import os
import shutil
import signal
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from albert_tf.data import pretraining_dataset, pretraining_writer
from albert_tf.data.instances import InstanceOptions
from albert_tf.errors import CheckpointMismatchError, OptionError, TrainingError
from albert_tf.modeling import checkpoints as checkpoint_lib
from albert_tf.training import distribution, finetuning, pretraining, run_directory
from albert_tf.training.pretraining_objective import PretrainingObjective
import albert_tf
from tests.conftest import (REPO, SHARED, SP8K_MODEL, assert_same_pretrainer_weights, damage_checkpoint, free_ports,
                            requires_shared, run_tool)
from tests.tasks.classification.glue_data import GLUE_FILES, write_glue_data
from tests.training import strategy_worker

pytestmark = requires_shared(SP8K_MODEL)
WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "strategy_worker.py")
TOOL = os.path.join(REPO, "tools", "run_pretraining.py")
SEQ, PREDICTIONS = 64, 10
CONFIG = dict(vocab_size=8000, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
              embedding_size=16, max_position_embeddings=SEQ)


@pytest.fixture(scope="module")
def records(tmp_path_factory):
  """Two shards of real Korean pretraining records."""
  directory = tmp_path_factory.mktemp("records")
  outputs = [str(directory / "train-0.tfrecord"), str(directory / "train-1.tfrecord")]
  pretraining_writer.create_pretraining_data(
      [os.path.join(SHARED, "corpus", "ko_law.txt")], outputs, pretraining_writer.TokenizerSpec(SP8K_MODEL),
      InstanceOptions(max_seq_length=SEQ, max_predictions_per_seq=PREDICTIONS), dupe_factor=2, progress=False)
  return outputs


@pytest.fixture(scope="module")
def record_sets(records, tmp_path_factory):
  """`records` (Korean, 2 files) and English records (1 file) from a separate data run: every training batch
  draws from the three files, in proportion."""
  english = str(tmp_path_factory.mktemp("english") / "train-en.tfrecord")
  pretraining_writer.create_pretraining_data(
      [os.path.join(SHARED, "corpus", "en_botchan.txt")], [english], pretraining_writer.TokenizerSpec(SP8K_MODEL),
      InstanceOptions(max_seq_length=SEQ, max_predictions_per_seq=PREDICTIONS), dupe_factor=1, progress=False)
  return records + [english]


def options(records, output_dir, **changes):
  values = dict(input_file=",".join(records), output_dir=str(output_dir),
                albert_config=albert_tf.AlbertConfig(**CONFIG),
                max_seq_length=SEQ, max_predictions_per_seq=PREDICTIONS, train_batch_size=8, eval_batch_size=8,
                learning_rate=1e-3, num_train_steps=6, num_warmup_steps=2, save_checkpoints_steps=3,
                iterations_per_loop=2, max_eval_steps=3)
  values.update(changes)
  return pretraining.PretrainingOptions(**values)


# The tests of strategies train one layer: how replicas and workers share the batch is the subject, not depth.
ONE_LAYER = albert_tf.AlbertConfig(**dict(CONFIG, num_hidden_layers=1))


def options_file(tmp_path, name, run_options):
  return strategy_worker.write_options(tmp_path / f"{name}.json", run_options)


def classifier_options(data_dir, output_dir, **changes):
  """3 steps of MNLI (mismatched) fine-tuning, global batch 4, with evaluation and prediction, dropout off."""
  return finetuning.FineTuningOptions(
      data_dir=str(data_dir), output_dir=str(output_dir), albert_config=ONE_LAYER, spm_model_file=SP8K_MODEL,
      max_seq_length=32, do_train=True, do_eval=True, do_predict=True, train_batch_size=4, eval_batch_size=4,
      predict_batch_size=2, learning_rate=1e-3, train_step=3, save_checkpoints_steps=3, iterations_per_loop=3,
      dropout_prob=0.0, **changes)


@pytest.fixture(scope="module")
def two_workers(records, tmp_path_factory):
  """Two MultiWorkerMirrored worker processes (hosts on 127.0.0.1) that pretrain, then fine-tune a classifier:
  one pair of processes for both jobs, so that each worker's TensorFlow import and cluster setup is paid once.
  While they run, this process computes the references: pretraining on one device, and the classifier on one
  device and on two mirrored replicas. Returns the directory of the runs and of their `<job>-<name>.npz`."""
  root = tmp_path_factory.mktemp("two_workers")
  cluster = {"worker": [f"127.0.0.1:{port}" for port in free_ports(2)]}
  # Pretraining with evaluation after each checkpoint, which every worker must take part in. The classifier's
  # workers split each replica's batch into 2 micro-batches, recomputed: workers and micro-batches at once.
  data_dir = write_glue_data(root)
  jobs = {"pretraining": options_file(root, "pretraining", options(records, root / "run", do_eval=True,
                                                                   albert_config=ONE_LAYER)),
          "classifier": strategy_worker.write_options(
              root / "classifier.json", classifier_options(data_dir, root / "workers", gradient_accumulation_steps=2,
                                                           recompute_grad=True), task_name="mnli-mm")}
  processes = []
  for index in range(2):
    job_arguments = [argument for job, options_json in jobs.items()
                     for argument in (job, options_json, str(root / f"{job}-worker{index}.npz"))]
    # A file, not a pipe: a full pipe would stall the process while this one computes.
    with open(root / f"worker{index}.log", "w") as log:
      processes.append(subprocess.Popen(
          [sys.executable, WORKER, *job_arguments, "--strategy_type=multi_worker_mirrored"],
          stdout=log, stderr=subprocess.STDOUT,
          env=dict(os.environ, TF_CONFIG=json.dumps({"cluster": cluster, "task": {"type": "worker", "index": index}}))))
  try:
    # One device fed the global batches of both input pipelines (each worker reads every other file).
    strategy_worker.main("pretraining", options_file(root, "pretraining-one_device", options(
        records, root / "reference", albert_config=ONE_LAYER)), str(root / "pretraining-one_device.npz"),
                         input_pipelines=2)
    for strategy_type in ("one_device", "mirrored"):
      strategy_worker.main("classifier", strategy_worker.write_options(
          root / f"{strategy_type}.json", classifier_options(data_dir, root / strategy_type),
          task_name="mnli-mm"), str(root / f"classifier-{strategy_type}.npz"), strategy_type)
  finally:
    for process in processes:
      process.wait(timeout=600)
  for index, process in enumerate(processes):
    assert process.returncode == 0, (root / f"worker{index}.log").read_text()
  return root


class FixedOutputs:
  """A stand-in model with given outputs; it records the `training` flag it was called with."""

  def __init__(self, **outputs):
    self.outputs = outputs
    self.training = "not called"

  def __call__(self, batch, training):
    self.training = training
    return self.outputs


def test_loss_is_googles_formula():
  mlm_logits = tf.constant(np.random.default_rng(0).normal(size=[2, 3, 5]), tf.float32)
  sop_logits = tf.constant([[2.0, -1.0], [0.5, 0.5]])
  batch = {"masked_lm_ids": tf.constant([[1, 2, 0], [4, 0, 0]]),
           "masked_lm_weights": tf.constant([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]]),
           "sentence_order_labels": tf.constant([0, 1])}
  sums = PretrainingObjective().batch_sums(FixedOutputs(mlm_logits=mlm_logits, sop_logits=sop_logits), batch,
                                training=False).numpy()
  log_probs = tf.nn.log_softmax(mlm_logits).numpy()
  expected_mlm = -(log_probs[0, 0, 1] + log_probs[0, 1, 2] + log_probs[1, 0, 4]) / (3 + 1e-5)
  sop_log_probs = tf.nn.log_softmax(sop_logits).numpy()
  metrics = PretrainingObjective().metrics_from_sums(sums)
  assert metrics["masked_lm_loss"] == pytest.approx(expected_mlm, rel=1e-5)
  assert metrics["sentence_order_loss"] == pytest.approx(-(sop_log_probs[0, 0] + sop_log_probs[1, 1]) / 2, rel=1e-5)
  assert metrics["sentence_order_accuracy"] == 0.5


def test_two_multi_worker_processes_train_checkpoint_and_agree(records, two_workers):
  first, second, one_device = (np.load(two_workers / f"pretraining-{name}.npz")
                               for name in ("worker0", "worker1", "one_device"))
  assert int(first["replicas"]) == 2 and int(one_device["replicas"]) == 1
  assert abs(float(first["loss"]) - float(one_device["loss"])) <= 1e-5
  weights = [key for key in first.files if key.startswith("w")]
  assert weights and weights == [key for key in one_device.files if key.startswith("w")]
  for key in weights:
    np.testing.assert_array_equal(first[key], second[key], err_msg=key)
    np.testing.assert_allclose(first[key], one_device[key], atol=1e-5, rtol=0, err_msg=key)
  assert tf.train.latest_checkpoint(str(two_workers / "run")).endswith("model.ckpt-6")
  assert "global_step = 6" in (two_workers / "run" / run_directory.EVAL_RESULTS).read_text()
  assert not [name for name in os.listdir(two_workers / "run") if name.startswith(".worker")]
  # Each host read its own files: over an epoch, the two together read every record once.
  records_read = [record_keys(result["epoch_input_ids"], result["epoch_masked_positions"])
                  for result in (first, second)]
  assert records_read[0] and records_read[1] and not set(records_read[0]) & set(records_read[1])
  every_record = pretraining_dataset.pretraining_dataset(records, SEQ, PREDICTIONS, 1, is_training=False)
  assert sorted(records_read[0] + records_read[1]) == sorted(record_keys(
      np.concatenate([batch["input_word_ids"] for batch in every_record]),
      np.concatenate([batch["masked_lm_positions"] for batch in every_record])))


def test_two_replicas_two_workers_and_micro_batches_equal_one_device(two_workers):
  """Fine-tuning: two mirrored replicas in this process, and two workers with 2 micro-batches each, against
  one device."""
  one = np.load(two_workers / "classifier-one_device.npz")
  assert int(one["replicas"]) == 1
  for name in ("mirrored", "worker0", "worker1"):
    other = np.load(two_workers / f"classifier-{name}.npz")
    assert int(other["replicas"]) == 2
    assert float(one["loss"]) == pytest.approx(float(other["loss"]), abs=1e-5)
    # Predictions come back in example order whatever the replica or worker that computed them.
    np.testing.assert_allclose(one["test_outputs"], other["test_outputs"], atol=1e-5)
    assert float(one["eval_accuracy"]) == float(other["eval_accuracy"])
    for key in one.files:
      if key.startswith("w"):
        np.testing.assert_allclose(one[key], other[key], atol=1e-5, err_msg=f"{name} {key}")
  # Each host read its own share of the examples: over an epoch, the two together read each one once.
  shares = [list(np.load(two_workers / f"classifier-worker{index}.npz")["epoch_examples"]) for index in range(2)]
  num_examples = len(GLUE_FILES["MNLI/train.tsv"]) - 1  # after its header
  assert shares[0] and shares[1] and sorted(shares[0] + shares[1]) == list(range(num_examples))
  assert "accuracy = " in (two_workers / "workers" / run_directory.EVAL_RESULTS).read_text()
  assert not [name for name in os.listdir(two_workers / "workers") if name.startswith(".worker")]


def record_keys(input_ids, masked_positions):
  """A record's ids and masked positions, which tell it from every other record (a masked copy of a sequence
  differs from the others in its positions)."""
  return [ids.tobytes() + positions.tobytes() for ids, positions in zip(input_ids, masked_positions)]


def tool_flags(records, output_dir, *extra):
  # Two micro-batches per step: a resume must be exact with gradient accumulation too (one batch per step
  # is the path of every other test here).
  return ["--gradient_accumulation_steps=2", f"--input_file={','.join(records)}", f"--output_dir={output_dir}",
          f"--albert_config_file={output_dir.parent / 'albert_config.json'}", f"--max_seq_length={SEQ}",
          f"--max_predictions_per_seq={PREDICTIONS}", "--train_batch_size=8", "--learning_rate=1e-3",
          "--num_train_steps=20", "--num_warmup_steps=4", "--save_checkpoints_steps=5", "--iterations_per_loop=1",
          "--keep_checkpoint_max=20", *extra]


@pytest.fixture(scope="module")
def straight_run(record_sets, tmp_path_factory):
  """The tool's 20 steps on both record sets without interruption (keeping only the last 3 of its 4
  checkpoints)."""
  directory = tmp_path_factory.mktemp("tool")
  albert_tf.AlbertConfig(**CONFIG).to_json_file(str(directory / "albert_config.json"))
  result = run_tool("run_pretraining", *tool_flags(record_sets, directory / "straight", "--keep_checkpoint_max=3"))
  assert result.returncode == 0, result.stderr
  assert "Records: masked; their words follow --word_boundaries=google (Google's piece rule" in result.stderr
  return directory / "straight"


def test_tool_keeps_keep_checkpoint_max_checkpoints(straight_run):
  assert sorted(p.name for p in straight_run.glob("model.ckpt-*.index")) == [
      "model.ckpt-10.index", "model.ckpt-15.index", "model.ckpt-20.index"]
  state = tf.train.get_checkpoint_state(str(straight_run))
  assert [os.path.basename(path) for path in state.all_model_checkpoint_paths] == [
      "model.ckpt-10", "model.ckpt-15", "model.ckpt-20"]


# Runs the tool, but dies by SIGKILL in the middle of writing checkpoint 10: its files are on disk, its data
# file cut to half, and the `checkpoint` state file still names checkpoint 5.
TORN_WRITE = """
import glob, os, runpy, signal, sys
from tensorflow.python.checkpoint import checkpoint_management
record_state = checkpoint_management.update_checkpoint_state_internal

def torn_write(*args, **kwargs):
  if kwargs["model_checkpoint_path"].endswith("model.ckpt-10"):
    for path in glob.glob(kwargs["model_checkpoint_path"] + ".data-*"):
      with open(path, "r+b") as data:
        data.truncate(os.path.getsize(path) // 2)
    os.kill(os.getpid(), signal.SIGKILL)
  return record_state(*args, **kwargs)

checkpoint_management.update_checkpoint_state_internal = torn_write
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def test_kill_9_during_a_checkpoint_write_resumes_from_the_last_complete_one(record_sets, straight_run):
  # A kill -9 at any other moment leaves a subset of this: complete checkpoints, none torn. The rerun restarts
  # 40 examples into the first shuffle window of the interleaved sets; starts in later windows and rounds are
  # checked on the dataset alone (tests/data/test_pretraining_dataset.py), which here would take too many steps.
  torn_dir = straight_run.parent / "torn"
  killed = subprocess.run([sys.executable, "-c", TORN_WRITE, TOOL, *tool_flags(record_sets, torn_dir)],
                          capture_output=True, text=True, timeout=600)
  assert killed.returncode == -signal.SIGKILL, killed.stderr
  assert (torn_dir / "model.ckpt-10.index").exists()
  assert tf.train.latest_checkpoint(str(torn_dir)).endswith("model.ckpt-5")
  resumed = run_tool("run_pretraining", *tool_flags(record_sets, torn_dir))
  assert resumed.returncode == 0, resumed.stderr
  assert "Resuming from" in resumed.stderr and "model.ckpt-5 at step 5" in resumed.stderr
  assert_same_pretrainer_weights(straight_run, torn_dir, CONFIG)


def test_resume_from_a_cut_latest_checkpoint_takes_the_one_before_and_says_so(record_sets, straight_run):
  damaged_dir = straight_run.parent / "damaged"
  shutil.copytree(straight_run, damaged_dir)
  damage_checkpoint(str(damaged_dir / "model.ckpt-20"), "data cut")
  # Up to step 15 only: resuming is the subject, not training.
  resumed = run_tool("run_pretraining", *tool_flags(record_sets, damaged_dir, "--num_train_steps=15"))
  assert resumed.returncode == 0, resumed.stderr
  assert (f"Checkpoint {damaged_dir / 'model.ckpt-20'} cannot be read: its files are truncated or corrupt (Read less "
          f"bytes than requested). Resuming from {damaged_dir / 'model.ckpt-15'} instead, the newest complete "
          f"checkpoint in {damaged_dir}.\n") in resumed.stderr
  assert f"Resuming from {damaged_dir / 'model.ckpt-15'} at step 15." in resumed.stderr


def test_eval_writes_results_and_keeps_the_best_checkpoint(records, tmp_path, monkeypatch):
  run_options = options(records, tmp_path, do_eval=True, eval_input_file=records[1], num_train_steps=9,
                        learning_rate=3e-3)
  evaluations = []
  write_eval_results = run_directory.write_eval_results
  monkeypatch.setattr(run_directory, "write_eval_results",
                      lambda output_dir, metrics, names: (evaluations.append(dict(metrics)),
                                                          write_eval_results(output_dir, metrics, names)))
  results = pretraining.run(run_options, distribution.get_strategy("one_device"))
  monkeypatch.undo()
  text = (tmp_path / run_directory.EVAL_RESULTS).read_text()
  for key in ("masked_lm_accuracy", "masked_lm_loss", "sentence_order_accuracy", "sentence_order_loss",
              "global_step = 9"):
    assert key in text
  assert results["eval"]["eval_steps"] == 3
  # The first checkpoint with the highest masked-LM accuracy, as evaluated after each checkpoint.
  assert [e["global_step"] for e in evaluations] == [3, 6, 9]
  accuracies = [e["masked_lm_accuracy"] for e in evaluations]
  assert len(set(accuracies)) > 1, accuracies  # otherwise any choice would pass
  best_step = evaluations[int(np.argmax(accuracies))]["global_step"]
  best_info = run_directory.read_best_info(str(tmp_path))
  assert best_info["global_step"] == best_step and best_info["masked_lm_accuracy"] == max(accuracies)
  assert best_info == {key: value for key, value in evaluations[int(np.argmax(accuracies))].items()
                       if isinstance(value, (int, float))}  # every metric of that evaluation
  best_weights = tf.train.load_checkpoint(str(tmp_path / run_directory.BEST_CHECKPOINT))
  step_weights = tf.train.load_checkpoint(str(tmp_path / f"model.ckpt-{best_step}"))
  model_keys = [key for key in best_weights.get_variable_to_shape_map() if key.startswith("model/")]
  assert model_keys
  for key in model_keys:
    np.testing.assert_array_equal(best_weights.get_tensor(key), step_weights.get_tensor(key), err_msg=key)
  assert os.listdir(tmp_path / "train") and os.listdir(tmp_path / "eval")  # TensorBoard events
  encoder = albert_tf.AlbertEncoder(albert_tf.AlbertConfig(**CONFIG))
  checkpoint_lib.restore_checkpoint(encoder, str(tmp_path / "model.ckpt-best"))
  # An eval-only run reads the last checkpoint of the directory, and scores the batches every evaluation does.
  evaluation = pretraining.run(dataclasses.replace(run_options, do_train=False),
                               distribution.get_strategy("one_device"))
  assert evaluation["eval"]["global_step"] == 9
  for name in ("masked_lm_loss", "masked_lm_accuracy", "sentence_order_loss"):
    assert evaluation["eval"][name] == pytest.approx(evaluations[-1][name], rel=1e-6), name


def test_non_finite_loss_stops_with_a_clear_error(records, tmp_path):
  model = albert_tf.AlbertPretrainer(albert_tf.AlbertConfig(**CONFIG))
  model(model.dummy_inputs())
  model.encoder.pooler.kernel.assign(tf.fill(model.encoder.pooler.kernel.shape, np.nan))
  checkpoint_lib.save_checkpoint(model, str(tmp_path / "nan" / "ckpt"))
  with pytest.raises(TrainingError, match="non-finite.*no checkpoint was written yet"):
    pretraining.run(options(records, tmp_path / "run", init_checkpoint=str(tmp_path / "nan")),
                    distribution.get_strategy("one_device"))
  assert not (tmp_path / "run").exists()  # stopped before its first checkpoint: nothing of it is left


def test_init_from_group0(records, tmp_path):
  source = albert_tf.AlbertPretrainer(albert_tf.AlbertConfig(**CONFIG))
  source(source.dummy_inputs())
  checkpoint_lib.save_checkpoint(source, str(tmp_path / "one_group" / "ckpt"))
  run = pretraining.Pretraining(
      options(records, tmp_path / "run", albert_config=albert_tf.AlbertConfig(**dict(CONFIG, num_hidden_groups=2)),
              init_checkpoint=str(tmp_path / "one_group"), init_from_group0=True),
      distribution.get_strategy("one_device"))
  for group in run.model.encoder.groups:
    for target, reference in zip(group[0].variables, source.encoder.groups[0][0].variables):
      np.testing.assert_array_equal(target.numpy(), reference.numpy())
  np.testing.assert_array_equal(run.model.encoder.embeddings.word_embeddings.numpy(),
                                source.encoder.embeddings.word_embeddings.numpy())


def four_steps(records, output_dir, **changes):
  """Initial and final trainable weights and the last loss of 4 steps (2 of warmup, so 2 with updates)."""
  try:
    run = pretraining.Pretraining(options(records, output_dir, num_train_steps=4, iterations_per_loop=1, **changes),
                                  distribution.get_strategy("one_device"))
    initial = [v.numpy().copy() for v in run.model.trainable_variables]
    loss = run.train()["loss"]
  finally:
    tf_keras.mixed_precision.set_global_policy("float32")  # the policy is global: restore it for other tests
  return initial, [v.numpy() for v in run.model.trainable_variables], loss


@pytest.fixture(scope="module")
def float32_run(records, tmp_path_factory):
  return four_steps(records, tmp_path_factory.mktemp("float32"))


# Distance of the final weights from the float32 run's, relative to the float32 run's own update. Measured
# here: bfloat16 (8-bit significand, rounding 2^-9 = 2e-3) 4.4e-3; float16 (11-bit, 5e-4) 1.8e-4 with loss
# scaling and 2.1e-3 without it (its small gradients lose their low bits, or all of them, in float16);
# XLA reorders float32 sums only (~1e-6).
# float16 and XLA also run 2 micro-batches per step: loss scaling and compilation with gradient accumulation.
@pytest.mark.parametrize("changes,tolerance", [
    (dict(mixed_precision="bfloat16"), 2e-2),
    (dict(mixed_precision="float16", gradient_accumulation_steps=2), 6e-4),
    (dict(jit_compile=True, gradient_accumulation_steps=2), 1e-4),
], ids=["bfloat16", "float16-accumulated", "xla-accumulated"])
def test_mixed_precision_and_xla_follow_the_float32_run(records, tmp_path, float32_run, changes, tolerance):
  initial, expected, expected_loss = float32_run
  initial_here, actual, loss = four_steps(records, tmp_path, **changes)
  for a, b in zip(initial, initial_here):
    np.testing.assert_array_equal(a, b)  # same start: the variables stay float32
  update = np.concatenate([(b - a).ravel() for a, b in zip(initial, expected)])
  difference = np.concatenate([(b - a).ravel() for a, b in zip(expected, actual)])
  assert np.linalg.norm(difference) <= tolerance * np.linalg.norm(update)
  assert loss == pytest.approx(expected_loss, rel=tolerance)


def test_bad_input_fails_before_any_step_and_overwrites_nothing(records, tmp_path):
  strategy = distribution.get_strategy("one_device")
  with pytest.raises(FileNotFoundError, match="No input file matches"):
    pretraining.Pretraining(options(records, tmp_path / "a", input_file=str(tmp_path / "none-*.tfrecord")), strategy)
  with pytest.raises(OptionError, match="Nothing to do: set --do_train, --do_eval or both"):
    pretraining.Pretraining(options(records, tmp_path / "e", do_train=False, do_eval=False), strategy)
  with pytest.raises(OptionError, match=r"^--learning_rate=nan must be a finite number, 0 or more"):
    pretraining.Pretraining(options(records, tmp_path / "e", learning_rate=float("nan")), strategy)
  with pytest.raises(ValueError, match="'input_ids' has 64 values, expected --max_seq_length=128"):
    pretraining.Pretraining(options(records, tmp_path / "b", max_seq_length=128, albert_config=albert_tf.AlbertConfig(
        **dict(CONFIG, max_position_embeddings=128))), strategy)
  other = albert_tf.AlbertPretrainer(albert_tf.AlbertConfig(**dict(CONFIG, intermediate_size=40)))
  other(other.dummy_inputs())
  checkpoint_lib.save_checkpoint(other, str(tmp_path / "other" / "ckpt"))
  with pytest.raises(CheckpointMismatchError, match="intermediate/kernel: model \\[32, 64\\]"):
    pretraining.Pretraining(options(records, tmp_path / "c", init_checkpoint=str(tmp_path / "other")), strategy)
  # A run directory of another config: refused, its files untouched.
  pretraining.run(options(records, tmp_path / "d", num_train_steps=3), strategy)
  before = {name: os.path.getmtime(tmp_path / "d" / name) for name in os.listdir(tmp_path / "d")}
  with pytest.raises(TrainingError, match="holds a run of another config.*hidden_size"):
    pretraining.Pretraining(options(records, tmp_path / "d", albert_config=albert_tf.AlbertConfig(
        **dict(CONFIG, hidden_size=64))), strategy)
  assert before == {name: os.path.getmtime(tmp_path / "d" / name) for name in os.listdir(tmp_path / "d")}
  for directory in ("a", "b", "c", "e"):
    assert not (tmp_path / directory).exists()


def test_records_the_config_cannot_embed_or_cut_short_fail_before_anything_is_written(records, tmp_path):
  albert_tf.AlbertConfig(**CONFIG).to_json_file(str(tmp_path / "config.json"))
  albert_tf.AlbertConfig(**dict(CONFIG, vocab_size=1000)).to_json_file(str(tmp_path / "small_vocabulary.json"))
  run = lambda input_file, config_file: run_tool(
      "run_pretraining", f"--input_file={input_file}", f"--output_dir={tmp_path / 'run'}",
      f"--albert_config_file={tmp_path / config_file}", f"--max_seq_length={SEQ}",
      f"--max_predictions_per_seq={PREDICTIONS}", "--train_batch_size=8", "--num_train_steps=2")
  result = run(records[0], "small_vocabulary.json")
  assert result.returncode == 2
  features = [tf.train.Example.FromString(record).features.feature
              for record in tf.data.TFRecordDataset(records[0]).as_numpy_iterator()]
  largest = max(max(feature[name].int64_list.value) for feature in features for name in ("input_ids", "masked_lm_ids"))
  assert largest >= 1000
  assert result.stderr.splitlines()[-1] == (
      f"error: The input records hold token ids up to {largest} ({records[0]}); the config's vocab_size is 1000. Use "
      "the albert_config.json of the vocabulary the records were written with.")
  assert not (tmp_path / "run").exists()
  cut = tmp_path / "cut.tfrecord"
  cut.write_bytes(open(records[0], "rb").read()[:os.path.getsize(records[0]) // 2])
  result = run(cut, "config.json")
  assert result.returncode == 2
  assert result.stderr.splitlines()[-1].startswith(f"error: {cut}: corrupt record, damaged or not a TFRecord file ("
                                                   "truncated record at ")
  assert not (tmp_path / "run").exists()


def test_replica_loss_is_a_share_of_the_global_batch_loss_and_metrics_are_ratios():
  mlm_logits = tf.constant(np.random.default_rng(1).normal(size=[2, 3, 5]), tf.float32)
  sop_logits = tf.constant([[2.0, -1.0], [0.5, 0.25]])
  batch = {"masked_lm_ids": tf.constant([[1, 2, 0], [4, 0, 0]]),
           "masked_lm_weights": tf.constant([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]]),
           "sentence_order_labels": tf.constant([1, 0])}
  model = FixedOutputs(mlm_logits=mlm_logits, sop_logits=sop_logits)
  objective = PretrainingObjective()
  np.testing.assert_array_equal(objective.loss_normalizers(batch).numpy(), [3.0, 2.0])
  # This batch holds 2 of a global batch of 8 examples and 6 masked positions: its SOP term is over 8, its MLM
  # term over 6, so that the shares of the replicas and micro-batches add up to the loss of the whole batch.
  loss, sums = objective.replica_loss(model)(batch, tf.constant([6.0, 8.0]))
  assert model.training is True
  log_probs = tf.nn.log_softmax(mlm_logits).numpy()
  mlm_ce = -(log_probs[0, 0, 1] + log_probs[0, 1, 2] + log_probs[1, 0, 4])
  sop_log_probs = tf.nn.log_softmax(sop_logits).numpy()
  sop_ce = -(sop_log_probs[0, 1] + sop_log_probs[1, 0])
  assert float(loss) == pytest.approx(mlm_ce / (6 + 1e-5) + sop_ce / 8, rel=1e-6)
  mlm_correct = sum(np.argmax(log_probs[row, slot]) == label for row, slot, label in ((0, 0, 1), (0, 1, 2), (1, 0, 4)))
  np.testing.assert_allclose(sums.numpy(), [mlm_ce, 3.0, mlm_correct, sop_ce, 1.0, 2.0], rtol=1e-6)

  # One example, one weight of 0.5 (a partly weighted position) and one right prediction.
  metrics = PretrainingObjective().metrics_from_sums([6.0, 0.5, 0.5, 0.9, 1.0, 1.0])
  assert metrics == pytest.approx({"masked_lm_loss": 6.0 / 0.50001, "masked_lm_accuracy": 1.0,
                                   "sentence_order_loss": 0.9, "sentence_order_accuracy": 1.0,
                                   "loss": 6.0 / 0.50001 + 0.9}, rel=1e-9)
  # Nothing masked: no division by 0.
  assert PretrainingObjective().metrics_from_sums([0.0] * 6)["masked_lm_accuracy"] == 0.0
