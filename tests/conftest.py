"""Shared fixtures: tiny configs, deterministic random weights, and the shared corpora."""

import contextlib
import gc
import importlib.util
import io
import itertools
import os
import signal
import socket
import subprocess
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# Read once, at the first XLA compilation of a process (its tools' processes inherit it): LLVM's optimisation of
# the CPU code is three quarters of each compilation in tests/training/test_xla.py and changes no value (fast-math is off);
# the HLO, what a TPU compiles, is the same.
os.environ["XLA_FLAGS"] = " ".join([os.environ.get("XLA_FLAGS", ""), "--xla_backend_optimization_level=0"]).strip()

from absl import logging as absl_logging
import numpy as np
import pytest

# Before TensorFlow, as in a command: the environment the tools run with (tf_keras as tf.keras, the C++ log
# level), which the processes the tests start inherit.
from albert_tf import cli
import tensorflow as tf

# Two logical CPU devices, set before the runtime starts: MirroredStrategy then runs two replicas in the test
# process, so the tests of replicas start no process of their own (one-device runs use the first).
tf.config.set_logical_device_configuration(tf.config.list_physical_devices("CPU")[0],
                                           [tf.config.LogicalDeviceConfiguration()] * 2)

import albert_tf
from albert_tf import files as albert_files
from albert_tf.modeling import checkpoints as checkpoint_lib

# Tracing a tf.function allocates millions of small objects, and Python's default collector scans the young ones
# every 700 allocations (the whole heap every 100 such scans): up to a fifth of a tool test's time (docs/
# benchmarks.md, "The suite and CI"). A test process scans every 50,000 allocations and the whole heap rarely, and
# never the modules imported so far (TensorFlow's). The cycles traced graphs leave are still freed.
gc.freeze()
gc.set_threshold(50_000, 50, 1000)

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.join(os.path.dirname(REPO), "shared")
SP8K_MODEL = os.path.join(SHARED, "reference", "sp8k_en_ko.model")
TOOLS = os.path.join(REPO, "tools")


def run_tool(tool, *args, in_process=True, timeout=900, cwd=None, env=None) -> subprocess.CompletedProcess:
  """Runs a command of the project with `args` and returns its exit status, stdout and stderr.

  `tool` names a script of `tools/` ("run_classifier"), another script of the repository by its path without
  ".py" ("benchmarks/benchmark_pretraining"), or a module ("albert_tf.cli.demo"). By default it runs in this
  process, through the same `run()` as its command (absl's parsing into fresh flags, the `error:` line and exit
  status 2 of bad input), so a test pays no second TensorFlow import; `in_process=False` starts a Python process,
  for tests whose subject is the process itself (kill -9, signals, its environment, what it logs), with the
  variables of `env` set in its environment (None: unset).
  A bug's exception propagates as the test's failure, with its traceback.
  """
  if tool.startswith("albert_tf."):
    command = [sys.executable, "-m", tool, *args]
    spec = importlib.util.find_spec(tool)
  else:
    path = os.path.join(REPO if "/" in tool else TOOLS, f"{tool}.py")
    command = [sys.executable, path, *args]
    # A tool's module is named as installed; benchmarks/ is not installed.
    module = tool.replace("/", ".") if "/" in tool else f"albert_tf_tools.{tool}"
    spec = importlib.util.spec_from_file_location(module, path)
  if not in_process:
    environment = {name: value for name, value in {**os.environ, **(env or {})}.items() if value is not None}
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=cwd, env=environment)
  if env:
    raise ValueError("An environment applies to a new process: pass in_process=False.")
  stdout, stderr = io.StringIO(), io.StringIO()
  log_handler = absl_logging.get_absl_handler().python_handler
  log_stream = log_handler.stream
  with contextlib.ExitStack() as stack:
    stack.enter_context(contextlib.redirect_stdout(stdout))
    stack.enter_context(contextlib.redirect_stderr(stderr))
    if cwd is not None:
      stack.enter_context(contextlib.chdir(cwd))
    log_handler.stream = stderr
    try:
      returncode = cli.run_in_process(spec, [spec.origin, *args])
    finally:
      log_handler.stream = log_stream
  return subprocess.CompletedProcess(command, returncode, stdout.getvalue(), stderr.getvalue())


def onnx_export_refusal(saved_model_dir, output_dir) -> str:
  """export_onnx of a SavedModel it must refuse before converting: its `error:` line (status 2, nothing written)."""
  result = run_tool("export_onnx", f"--saved_model_dir={saved_model_dir}", f"--output_dir={output_dir}")
  assert result.returncode == 2 and not os.path.exists(output_dir), result.stderr[-2000:]
  return result.stderr.strip().splitlines()[-1]


def tiny_config(**overrides) -> albert_tf.AlbertConfig:
  values = dict(vocab_size=120, hidden_size=32, num_hidden_layers=4, num_attention_heads=4,
                intermediate_size=37, embedding_size=16, max_position_embeddings=64)
  values.update(overrides)
  return albert_tf.AlbertConfig(**values)


def korean_reader_config(directory, max_position_embeddings):
  """The albert_config.json (written in `directory`) of the small model that the Korean reading tests train over
  the shared 8k Korean-English vocabulary."""
  path = directory / "albert_config.json"
  tiny_config(vocab_size=8000, hidden_size=64, num_hidden_layers=2, intermediate_size=128, embedding_size=32,
              max_position_embeddings=max_position_embeddings).to_json_file(str(path))
  return path


def randomize(model, seed=0, scale=0.3):
  """Gives every variable (LayerNorms and biases too) random values, so parity tests see every weight."""
  rng = np.random.default_rng(seed)
  for variable in model.variables:
    variable.assign(rng.normal(0.0, scale, variable.shape).astype(np.float32))


def randomize_text_sensitive(model, seed):
  """`randomize`, then LayerNorm scales near 1 and offsets and biases near 0. With `randomize`'s one scale for every
  variable the LayerNorm offsets dominate and every text gets nearly the same embedding: parity would hold
  whatever the tokenization, and correlations would be noise."""
  randomize(model, seed=seed, scale=0.3)
  rng = np.random.default_rng(seed)
  for variable in model.variables:
    if "gamma" in variable.name:
      variable.assign((1 + rng.normal(0, 0.1, variable.shape)).astype(np.float32))
    elif "beta" in variable.name or "bias" in variable.name:
      variable.assign(rng.normal(0, 0.02, variable.shape).astype(np.float32))


def padded_batch(vocab_size, batch_size=3, seq_length=11, max_predictions=4, seed=1):
  """Int32 inputs with padding in later rows, two segments, and masked positions."""
  rng = np.random.default_rng(seed)
  ids = rng.integers(5, vocab_size, (batch_size, seq_length))
  mask = np.ones_like(ids)
  for row in range(1, batch_size):
    mask[row, seq_length - 3 * row:] = 0
  ids = ids * mask
  types = np.zeros_like(ids)
  types[:, seq_length // 2:] = 1
  positions = np.stack([rng.choice(seq_length - 3 * (batch_size - 1), max_predictions, replace=False)
                        for _ in range(batch_size)])
  return {"input_word_ids": tf.constant(ids, tf.int32), "input_mask": tf.constant(mask, tf.int32),
          "input_type_ids": tf.constant(types, tf.int32),
          "masked_lm_positions": tf.constant(np.sort(positions), tf.int32)}


def free_ports(count):
  """Local TCP ports free now, for the hosts of a multi-worker test."""
  sockets = [socket.socket() for _ in range(count)]
  for sock in sockets:
    sock.bind(("127.0.0.1", 0))
  ports = [sock.getsockname()[1] for sock in sockets]
  for sock in sockets:
    sock.close()
  return ports


def kill_once_a_checkpoint_is_written(command, run_dir, last_checkpoint):
  """Starts `command`, sends SIGKILL as soon as its first checkpoint is complete (the `checkpoint` state file
  is written last), and checks that the run had not reached `last_checkpoint` by then."""
  process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
  deadline = time.time() + 300
  while not (run_dir / "checkpoint").exists() and process.poll() is None and time.time() < deadline:
    time.sleep(0.01)
  process.send_signal(signal.SIGKILL)
  process.wait()
  assert not (run_dir / f"{last_checkpoint}.index").exists(), "the run finished before it could be killed"


def damage_checkpoint(prefix, damage):
  """Damages the checkpoint `prefix` as a crash, a full disk or a bad copy does: "gone" removes its files, "data
  cut" cuts its data file to half, "data missing" removes its data file, "index garbage" overwrites its index."""
  data = f"{prefix}.data-00000-of-00001"
  if damage == "gone":
    for path in (data, f"{prefix}.index"):
      os.remove(path)
  elif damage == "data cut":
    with open(data, "r+b") as writer:
      writer.truncate(os.path.getsize(data) // 2)
  elif damage == "data missing":
    os.remove(data)
  elif damage == "index garbage":
    with open(f"{prefix}.index", "wb") as writer:
      writer.write(np.random.default_rng(0).integers(0, 256, 4096, dtype=np.uint8).tobytes())
  else:
    raise ValueError(f"Unknown damage {damage!r}.")


def assert_same_pretrainer_weights(expected_dir, actual_dir, config: dict):
  """The latest checkpoints of two pretraining runs of `config` hold the same weights, within 1e-6."""

  def weights(directory):
    model = albert_tf.AlbertPretrainer(albert_tf.AlbertConfig(**config))
    checkpoint_lib.restore_checkpoint(model, str(directory))
    return {v.name: v.numpy() for v in model.variables}

  expected, actual = weights(expected_dir), weights(actual_dir)
  for name, value in expected.items():
    np.testing.assert_allclose(actual[name], value, atol=1e-6, rtol=0, err_msg=name)


def gcs_kind(path):
  """What GCS answers for a `ram://` path: "file", "folder" or None. TensorFlow's in-memory file system calls a path
  a folder when any file name starts with it (`model.ckpt-4` beside `model.ckpt-4.index`); GCS only when a folder
  object is at the path (what makedirs writes) or an object lies under the path and "/"."""
  gfile = tf.io.gfile
  path = path.rstrip("/")
  if not gfile.exists(path):
    return None
  if not gfile.isdir(path):
    return "file"  # a file of exactly this name
  head, _, name = path.rpartition("/")
  if head.endswith(":/") or name in gfile.listdir(head):  # the bucket, or a folder object at the path
    return "folder"
  # ram:// lists a path's "children" by prefix: `model.ckpt-4` lists ".index"; only a name under "path/" counts.
  return "folder" if any(gfile.exists(f"{path}/{child}") for child in gfile.listdir(path)) else None


@pytest.fixture
def bucket(monkeypatch):
  """A stand-in for a `gs://` bucket, on the same `tf.io.gfile` code path without a network: a new folder of
  TensorFlow's in-memory file system (this process's), whose folder tests and listings `albert_tf.files` sees as
  GCS answers them (`gcs_kind`). Yields its root, `ram://bucket-<n>/`; what the test wrote there is removed after it."""
  root = f"ram://bucket-{next(_BUCKET_NUMBERS)}"
  tf.io.gfile.makedirs(root)
  real_kind, real_children = albert_files._remote_kind, albert_files._remote_children
  monkeypatch.setattr(albert_files, "_remote_kind",
                      lambda path: gcs_kind(path) if path.startswith("ram://") else real_kind(path))
  monkeypatch.setattr(albert_files, "_remote_children", lambda folder: [
      name for name in real_children(folder) if not folder.startswith("ram://") or gcs_kind(f"{folder}/{name}")])
  yield root
  albert_files.remove_tree(root)


_BUCKET_NUMBERS = itertools.count()


def requires_shared(path):
  return pytest.mark.skipif(not os.path.exists(path), reason=f"{path} not present")


def write(path, lines, encoding="utf-8"):
  path.parent.mkdir(parents=True, exist_ok=True)
  path.write_bytes("".join(line + "\n" for line in lines).encode(encoding))
  return str(path)


def _skipped(session):
  reporter = session.config.pluginmanager.get_plugin("terminalreporter")
  return [] if reporter is None else reporter.stats.get("skipped", [])


def pytest_sessionfinish(session, exitstatus):
  """Prints the skip count; on CI (CI=true) a skipped test fails the run: every test must run there."""
  if hasattr(session.config, "workerinput"):  # an xdist worker: the controller counts for all
    return
  skipped = _skipped(session)
  print(f"\nskipped tests: {len(skipped)}")
  if skipped and os.environ.get("CI", "").lower() in ("1", "true") and exitstatus == 0:
    print("CI=true: skipped tests fail the run (the test extra and ../shared provide what every test needs).")
    session.exitstatus = pytest.ExitCode.TESTS_FAILED


def corpus_lines(name, limit=None):
  """The first `limit` non-blank lines of a shared corpus (all of them by default)."""
  with open(os.path.join(SHARED, "corpus", name), encoding="utf-8") as reader:
    lines = [line.rstrip("\n") for line in reader if line.strip()]
  return lines[:limit]


def python_pack(tokenizer, text_a, text_b, max_seq_length):
  """Google's run_classifier packing with `_truncate_seq_pair`, written out as its loop."""
  ids_a = tokenizer.encode(text_a)
  ids_b = tokenizer.encode(text_b) if text_b else []
  budget = max_seq_length - (3 if ids_b else 2)
  while len(ids_a) + len(ids_b) > budget:
    (ids_a if len(ids_a) > len(ids_b) else ids_b).pop()
  ids = [tokenizer.cls_id] + ids_a + [tokenizer.sep_id]
  types = [0] * len(ids)
  if ids_b:
    ids += ids_b + [tokenizer.sep_id]
    types += [1] * (len(ids_b) + 1)
  padding = [0] * (max_seq_length - len(ids))
  return ids + padding, [1] * len(ids) + padding, types + padding


def read_tsv(path):
  with open(path, encoding="utf-8") as reader:
    return [line.rstrip("\n").split("\t") for line in reader]


def eval_results(output_dir):
  """A run's eval_results.txt as {name: value}."""
  with open(os.path.join(output_dir, "eval_results.txt"), encoding="utf-8") as reader:
    return {name: float(value) for name, _, value in (line.rstrip("\n").partition(" = ") for line in reader)}


def write_config(tmp_path, **config):
  """An albert_config.json of `config` in `tmp_path`; its path."""
  path = tmp_path / "albert_config.json"
  albert_tf.AlbertConfig(**config).to_json_file(str(path))
  return str(path)


@pytest.fixture(scope="module")
def tokenizer():
  """The Python tokenizer of the shared 8k English-Korean SentencePiece model."""
  from albert_tf.text.tokenizer import SentencePieceTokenizer
  return SentencePieceTokenizer(SP8K_MODEL)
