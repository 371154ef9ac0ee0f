"""run_pretraining: global-batch loss, distribution, exact resume, eval, and bad input."""

import dataclasses
import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

import albert_tf
from albert_tf import checkpoint as checkpoint_lib
from albert_tf import distribution, pretraining, training
from albert_tf.data import pretraining_data
from albert_tf.data.instances import InstanceOptions
from conftest import REPO, SHARED, SP8K_MODEL, free_ports, requires_shared

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
  pretraining_data.create_pretraining_data(
      [os.path.join(SHARED, "corpus", "ko_law.txt")], outputs, pretraining_data.TokenizerOptions(SP8K_MODEL),
      InstanceOptions(max_seq_length=SEQ, max_predictions_per_seq=PREDICTIONS), dupe_factor=2, progress=False)
  return outputs


def options(records, output_dir, **changes):
  values = dict(input_file=",".join(records), output_dir=str(output_dir), albert_config=albert_tf.AlbertConfig(**CONFIG),
                max_seq_length=SEQ, max_predictions_per_seq=PREDICTIONS, train_batch_size=8, eval_batch_size=8,
                learning_rate=1e-3, num_train_steps=6, num_warmup_steps=2, save_checkpoints_steps=3,
                iterations_per_loop=2, max_eval_steps=3)
  values.update(changes)
  return pretraining.PretrainingOptions(**values)


def run_worker(tmp_path, name, run_options, *flags):
  options_file = tmp_path / f"{name}.json"
  values = dataclasses.asdict(run_options)
  values["albert_config"] = run_options.albert_config.to_dict()
  options_file.write_text(json.dumps(values))
  result_file = tmp_path / f"{name}.npz"
  return subprocess.Popen([sys.executable, WORKER, "pretraining", str(options_file), str(result_file), *flags],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True), result_file


def finish(process, timeout=600):
  output, _ = process.communicate(timeout=timeout)
  assert process.returncode == 0, output
  return output


def test_loss_is_googles_formula():
  mlm_logits = tf.constant(np.random.default_rng(0).normal(size=[2, 3, 5]), tf.float32)
  sop_logits = tf.constant([[2.0, -1.0], [0.5, 0.5]])
  batch = {"masked_lm_ids": tf.constant([[1, 2, 0], [4, 0, 0]]),
           "masked_lm_weights": tf.constant([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]]),
           "sentence_order_labels": tf.constant([0, 1])}

  class Fixed:
    def __call__(self, batch, training):
      return {"mlm_logits": mlm_logits, "sop_logits": sop_logits}

  sums = pretraining.batch_sums(Fixed(), batch, training=False).numpy()
  log_probs = tf.nn.log_softmax(mlm_logits).numpy()
  expected_mlm = -(log_probs[0, 0, 1] + log_probs[0, 1, 2] + log_probs[1, 0, 4]) / (3 + 1e-5)
  sop_log_probs = tf.nn.log_softmax(sop_logits).numpy()
  metrics = pretraining.metrics_from_sums(sums)
  assert metrics["masked_lm_loss"] == pytest.approx(expected_mlm, rel=1e-5)
  assert metrics["sentence_order_loss"] == pytest.approx(-(sop_log_probs[0, 0] + sop_log_probs[1, 1]) / 2, rel=1e-5)
  assert metrics["sentence_order_accuracy"] == 0.5


def test_training_step_compiles_with_xla(records, tmp_path):
  strategy = tf.distribute.OneDeviceStrategy("/cpu:0")
  run = pretraining.Pretraining(options(records, tmp_path, jit_compile=True, num_train_steps=2), strategy)
  metrics = run.train()
  assert np.isfinite(metrics["loss"]) and int(run.step.numpy()) == 2


def test_mirrored_over_two_cpus_equals_one_device(records, tmp_path):
  one, one_result = run_worker(tmp_path, "one", options(records, tmp_path / "one"))
  finish(one)
  two, two_result = run_worker(tmp_path, "two", options(records, tmp_path / "two"), "--logical_cpus=2",
                               "--strategy_type=mirrored")
  finish(two)
  one_values, two_values = np.load(one_result), np.load(two_result)
  assert int(two_values["replicas"]) == 2 and int(one_values["replicas"]) == 1
  assert abs(float(one_values["loss"]) - float(two_values["loss"])) <= 1e-5
  for key in one_values.files:
    if key.startswith("w"):
      np.testing.assert_allclose(one_values[key], two_values[key], atol=1e-5, err_msg=key)


def test_two_multi_worker_processes_train_checkpoint_and_agree(records, tmp_path):
  ports = free_ports(2)
  cluster = {"worker": [f"127.0.0.1:{port}" for port in ports]}
  # With evaluation after each checkpoint, which every worker must take part in.
  run_options = options(records, tmp_path / "run", do_eval=True)
  processes = []
  for task_id in range(2):
    os.environ["TF_CONFIG"] = json.dumps({"cluster": cluster, "task": {"type": "worker", "index": task_id}})
    try:
      processes.append(run_worker(tmp_path, f"worker{task_id}", run_options, "--strategy_type=multi_worker_mirrored"))
    finally:
      del os.environ["TF_CONFIG"]
  for process, _ in processes:
    finish(process)
  first, second = (np.load(result) for _, result in processes)
  assert int(first["replicas"]) == 2
  for key in first.files:
    if key.startswith("w"):
      np.testing.assert_array_equal(first[key], second[key], err_msg=key)
  assert tf.train.latest_checkpoint(str(tmp_path / "run")).endswith("model.ckpt-6")
  assert "global_step = 6" in (tmp_path / "run" / training.EVAL_RESULTS).read_text()
  assert not [name for name in os.listdir(tmp_path / "run") if name.startswith(".worker")]


def tool_command(records, output_dir, *extra):
  return [sys.executable, TOOL, f"--input_file={','.join(records)}", f"--output_dir={output_dir}",
          f"--albert_config_file={output_dir}.json", f"--max_seq_length={SEQ}",
          f"--max_predictions_per_seq={PREDICTIONS}", "--train_batch_size=8", "--learning_rate=1e-3",
          "--num_train_steps=40", "--num_warmup_steps=4", "--save_checkpoints_steps=5", "--iterations_per_loop=1",
          "--keep_checkpoint_max=20", *extra]


def final_weights(output_dir, config):
  model = albert_tf.AlbertPretrainer(config)
  checkpoint_lib.restore_checkpoint(model, str(output_dir))
  return {v.name: v.numpy() for v in model.variables}


def test_kill_9_then_rerun_ends_with_the_uninterrupted_weights(records, tmp_path):
  # Wide enough that a step takes a few milliseconds, so the kill lands mid-run.
  config = albert_tf.AlbertConfig(**dict(CONFIG, hidden_size=128, intermediate_size=512, num_attention_heads=4))
  for name in ("straight", "killed"):
    config.to_json_file(str(tmp_path / f"{name}.json"))
  straight = subprocess.run(tool_command(records, tmp_path / "straight"), capture_output=True, text=True,
                            timeout=600)
  assert straight.returncode == 0, straight.stderr
  killed_dir = tmp_path / "killed"
  process = subprocess.Popen(tool_command(records, killed_dir), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
  deadline = time.time() + 300
  # The `checkpoint` state file is written last: once it exists, a checkpoint is complete.
  while not (killed_dir / "checkpoint").exists() and process.poll() is None and time.time() < deadline:
    time.sleep(0.01)
  process.send_signal(signal.SIGKILL)
  process.wait()
  assert not (killed_dir / "model.ckpt-40.index").exists(), "the run finished before it could be killed"
  resumed = subprocess.run(tool_command(records, killed_dir), capture_output=True, text=True, timeout=600)
  assert resumed.returncode == 0, resumed.stderr
  assert "Resuming from" in resumed.stderr
  expected, actual = final_weights(tmp_path / "straight", config), final_weights(killed_dir, config)
  for name, value in expected.items():
    np.testing.assert_allclose(actual[name], value, atol=1e-6, rtol=0, err_msg=name)


def test_eval_writes_results_and_keeps_the_best_checkpoint(records, tmp_path):
  run_options = options(records, tmp_path, do_eval=True, eval_input_file=records[1])
  results = pretraining.run(run_options, distribution.get_strategy("one_device"))
  text = (tmp_path / training.EVAL_RESULTS).read_text()
  for key in ("masked_lm_accuracy", "masked_lm_loss", "sentence_order_accuracy", "sentence_order_loss",
              "global_step = 6"):
    assert key in text
  assert results["eval"]["eval_steps"] == 3
  assert (tmp_path / "model.ckpt-best.index").exists()
  best = json.loads((tmp_path / "best_checkpoint.json").read_text())
  assert best["global_step"] in (3, 6)
  assert os.listdir(tmp_path / "train") and os.listdir(tmp_path / "eval")  # TensorBoard events
  encoder = albert_tf.AlbertEncoder(albert_tf.AlbertConfig(**CONFIG))
  checkpoint_lib.restore_checkpoint(encoder, str(tmp_path / "model.ckpt-best"))
  # An eval-only run reads the last checkpoint of the directory.
  evaluation = pretraining.run(dataclasses.replace(run_options, do_train=False), distribution.get_strategy("one_device"))
  assert evaluation["eval"]["global_step"] == 6


def test_non_finite_loss_stops_with_a_clear_error(records, tmp_path):
  model = albert_tf.AlbertPretrainer(albert_tf.AlbertConfig(**CONFIG))
  model(model.dummy_inputs())
  model.encoder.pooler.kernel.assign(tf.fill(model.encoder.pooler.kernel.shape, np.nan))
  checkpoint_lib.save_checkpoint(model, str(tmp_path / "nan" / "ckpt"))
  with pytest.raises(training.TrainingError, match="non-finite.*no checkpoint was written yet"):
    pretraining.run(options(records, tmp_path / "run", init_checkpoint=str(tmp_path / "nan")),
                    distribution.get_strategy("one_device"))
  assert tf.train.latest_checkpoint(str(tmp_path / "run")) is None


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


@pytest.mark.parametrize("precision", ["bfloat16", "float16"])
def test_mixed_precision_trains(records, tmp_path, precision):
  try:
    metrics = pretraining.run(options(records, tmp_path, mixed_precision=precision, num_train_steps=2),
                              distribution.get_strategy("one_device"))["train"]
  finally:
    tf_keras.mixed_precision.set_global_policy("float32")  # the policy is global: restore it for other tests
  assert np.isfinite(metrics["loss"])


def test_bad_input_fails_before_any_step_and_overwrites_nothing(records, tmp_path):
  strategy = distribution.get_strategy("one_device")
  with pytest.raises(FileNotFoundError, match="No input file matches"):
    pretraining.Pretraining(options(records, tmp_path / "a", input_file=str(tmp_path / "none-*.tfrecord")), strategy)
  with pytest.raises(ValueError, match="'input_ids' has 64 values, expected --max_seq_length=128"):
    pretraining.Pretraining(options(records, tmp_path / "b", max_seq_length=128, albert_config=albert_tf.AlbertConfig(
        **dict(CONFIG, max_position_embeddings=128))), strategy)
  other = albert_tf.AlbertPretrainer(albert_tf.AlbertConfig(**dict(CONFIG, intermediate_size=40)))
  other(other.dummy_inputs())
  checkpoint_lib.save_checkpoint(other, str(tmp_path / "other" / "ckpt"))
  with pytest.raises(checkpoint_lib.CheckpointMismatchError, match="intermediate/kernel: model \\[32, 64\\]"):
    pretraining.Pretraining(options(records, tmp_path / "c", init_checkpoint=str(tmp_path / "other")), strategy)
  # A run directory of another config: refused, its files untouched.
  pretraining.run(options(records, tmp_path / "d", num_train_steps=3), strategy)
  before = {name: os.path.getmtime(tmp_path / "d" / name) for name in os.listdir(tmp_path / "d")}
  with pytest.raises(training.TrainingError, match="holds a run of another config.*hidden_size"):
    pretraining.Pretraining(options(records, tmp_path / "d", albert_config=albert_tf.AlbertConfig(
        **dict(CONFIG, hidden_size=64))), strategy)
  assert before == {name: os.path.getmtime(tmp_path / "d" / name) for name in os.listdir(tmp_path / "d")}
  for directory in ("a", "b", "c"):
    assert not (tmp_path / directory).exists()
