"""What the tools print: our progress lines, results, warnings and errors, not the C++ logs of TensorFlow and
SentencePiece, which --verbosity=1 (or a TF_CPP_MIN_LOG_LEVEL of the user's) brings back."""

import os
import re

from absl import logging as absl_logging
import pytest
import sentencepiece as spm

from albert_tf import cli
from albert_tf.cli import _debug_verbosity
from albert_tf.text.sentencepiece_training import train_sentencepiece
from tests.conftest import REPO, run_tool

SAMPLE = os.path.join(REPO, "albert_tf", "sample_data", "en_botchan.txt")
VOCAB_SIZE = 300
SEQ, PREDICTIONS = 64, 5  # 5 is below 0.15 × 64: the data tool warns, and that warning must stay
CONFIG = ('{"vocab_size": %d, "hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2, '
          '"intermediate_size": 32, "embedding_size": 8, "max_position_embeddings": %d}' % (VOCAB_SIZE, SEQ))

# A line of the libraries' own logs:
LIBRARY_LOG = re.compile(
    # TensorFlow's C++ logging: "2026-11-25 16:29:37.624183: I tensorflow/core/framework/local_rendezvous.cc:407] ..."
    r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+: [IWEF] \S+:\d+\] "
    # absl's C++ logging (SentencePiece, XLA): "I0000 00:00:1795624156.949243    5077 trainer_interface.cc:466] ..."
    # (absl's Python logging has the same shape, with a .py file: our own lines).
    r"|^[IWEF]\d{4} [\d:.]+ +\d+ \S+\.(cc|h):\d+\] "
    r"|^WARNING: All log messages before absl::InitializeLog\(\)", re.M)


def run_as_user(tool, *flags, environment=None):
  """A process of its own, as a user runs it: what its C++ libraries print is the subject. conftest sets
  TF_CPP_MIN_LOG_LEVEL for the test process; a user's has none unless they set it."""
  return run_tool(tool, *flags, in_process=False, env={"TF_CPP_MIN_LOG_LEVEL": None, **(environment or {})})


def library_lines(stderr):
  return [match.group(0) for match in LIBRARY_LOG.finditer(stderr)]


def vocabulary_tool(prefix, *flags, vocab_size=VOCAB_SIZE, text=SAMPLE):
  return run_as_user("train_sentencepiece", f"--input={text}", f"--model_prefix={prefix}",
                     f"--vocab_size={vocab_size}", "--num_threads=1", *flags)


@pytest.fixture(scope="module")
def vocabulary(tmp_path_factory):
  prefix = str(tmp_path_factory.mktemp("spm") / "sample")
  return vocabulary_tool(prefix), prefix + ".model"


@pytest.fixture(scope="module")
def small_text(tmp_path_factory):
  path = tmp_path_factory.mktemp("text") / "small.txt"
  with open(SAMPLE, encoding="utf-8") as reader:
    path.write_text("".join(line for line, _ in zip(reader, range(300))), encoding="utf-8")
  return str(path)


@pytest.fixture(scope="module")
def records(vocabulary, small_text, tmp_path_factory):
  """The data tool's run (it imports TensorFlow to write) and its records."""
  output = str(tmp_path_factory.mktemp("records") / "train.tfrecord")
  result = run_as_user("create_pretraining_data", f"--input_file={small_text}", f"--output_file={output}",
                       f"--spm_model_file={vocabulary[1]}", f"--max_seq_length={SEQ}",
                       f"--max_predictions_per_seq={PREDICTIONS}", "--dupe_factor=1", "--num_workers=2")
  return result, output


@pytest.fixture(scope="module")
def config_file(tmp_path_factory):
  path = tmp_path_factory.mktemp("config") / "albert_config.json"
  path.write_text(CONFIG)
  return str(path)


def test_vocabulary_tool_prints_our_lines_not_sentencepieces(vocabulary):
  result, model_file = vocabulary
  assert result.returncode == 0, result.stderr
  assert f"Wrote {model_file}" in result.stdout
  assert f"Training a {VOCAB_SIZE}-piece unigram SentencePiece model" in result.stderr
  assert "Read 2378 lines" in result.stderr
  assert library_lines(result.stderr) == []
  assert "trainer_spec {" not in result.stderr and "normalizer_spec {" not in result.stderr


def test_verbosity_shows_sentencepieces_log(tmp_path):
  # The other spellings of the flag (-v 1, --v=1, ...) are test_debug_verbosity_is_read_from_the_command_line's.
  result = vocabulary_tool(str(tmp_path / "sample"), "--verbosity=1")
  assert result.returncode == 0, result.stderr
  assert "trainer_spec {" in result.stderr
  assert any("trainer_interface.cc" in line for line in library_lines(result.stderr))
  assert f"Training a {VOCAB_SIZE}-piece unigram SentencePiece model" in result.stderr


def test_vocabulary_error_is_one_line(small_text, tmp_path):
  result = vocabulary_tool(str(tmp_path / "sample"), vocab_size=30000, text=small_text)
  assert result.returncode == 2
  assert result.stderr.splitlines()[-1].startswith("error: vocab_size 30000 is too high")
  assert library_lines(result.stderr) == []


@pytest.mark.parametrize("verbose", [False, True])
def test_library_call_quiets_sentencepiece_for_itself_only(verbose, small_text, tmp_path, capfd):
  """SentencePiece writes to file descriptor 2 from C++; capfd sees it. Its log level is global: the call
  must put it back."""
  train_sentencepiece(small_text, str(tmp_path / "a"), vocab_size=200, num_threads=1, verbose=verbose)
  assert ("trainer_interface.cc" in capfd.readouterr().err) == verbose
  spm.SentencePieceTrainer.train(input=small_text, model_prefix=str(tmp_path / "b"), vocab_size=200,
                                 num_threads=1)
  assert "trainer_interface.cc" in capfd.readouterr().err


def test_library_call_follows_absl_debug_verbosity(small_text, tmp_path, capfd):
  verbosity = absl_logging.get_verbosity()
  absl_logging.set_verbosity(absl_logging.DEBUG)
  try:
    train_sentencepiece(small_text, str(tmp_path / "a"), vocab_size=200, num_threads=1)
  finally:
    absl_logging.set_verbosity(verbosity)
  assert "trainer_interface.cc" in capfd.readouterr().err


def test_data_tool_prints_our_lines_not_tensorflows(records):
  result, output = records
  assert result.returncode == 0, result.stderr
  assert os.path.getsize(output) > 0
  assert "instances:" in result.stdout and output in result.stdout
  assert f"--max_predictions_per_seq={PREDICTIONS} is below" in result.stderr  # our warning stays
  assert library_lines(result.stderr) == []


def test_pretraining_prints_progress_not_tensorflows_log(records, config_file, tmp_path):
  """A run reads TFRecords with tf.data, whose C++ side logs at every end of input."""
  result = run_as_user("run_pretraining", f"--input_file={records[1]}", f"--output_dir={tmp_path / 'run'}",
                       f"--albert_config_file={config_file}", f"--max_seq_length={SEQ}",
                       f"--max_predictions_per_seq={PREDICTIONS}", "--train_batch_size=4", "--eval_batch_size=4",
                       "--num_train_steps=2", "--num_warmup_steps=1", "--save_checkpoints_steps=2",
                       "--iterations_per_loop=2", "--do_eval", "--max_eval_steps=1")
  assert result.returncode == 0, result.stderr
  for progress in ("step 2/2 | loss", f"Saved {tmp_path / 'run' / 'model.ckpt-2'}", "eval: eval_steps 1"):
    assert progress in result.stderr
  assert library_lines(result.stderr) == []


@pytest.mark.parametrize("flags, environment, shown", [
    # The user's error level keeps TensorFlow's C++ errors, but not "failed call to cuInit", which TensorFlow logs
    # in every run on a machine without an NVIDIA driver when it first lists its devices: no library line at all.
    # Without a level of the user's: the progress test above.
    ([], {"TF_CPP_MIN_LOG_LEVEL": "2"}, False),
    (["--verbosity=1"], {}, True),
    ([], {"TF_CPP_MIN_LOG_LEVEL": "0"}, True),  # the user's own setting is kept
])
def test_tensorflow_log_only_when_asked(flags, environment, shown, records, config_file, tmp_path):
  """Records shorter than the flags say: the tool lists its devices, reads the first record with tf.data, then
  stops with one line and writes nothing."""
  result = run_as_user("run_pretraining", f"--input_file={records[1]}", f"--output_dir={tmp_path / 'run'}",
                       f"--albert_config_file={config_file}", f"--max_seq_length={SEQ}",
                       f"--max_predictions_per_seq={PREDICTIONS + 1}", *flags, environment=environment)
  assert result.returncode == 2
  assert result.stderr.splitlines()[-1].startswith(f"error: {records[1]}: feature 'masked_lm_positions' has")
  assert not (tmp_path / "run").exists()
  tensorflow_lines = [line for line in library_lines(result.stderr) if "local_rendezvous.cc" in line]
  assert bool(tensorflow_lines) == shown
  if not shown:
    assert library_lines(result.stderr) == []


def test_only_the_cuinit_line_is_dropped_of_what_device_discovery_logs(capfd):
  """What C++ code writes to stderr while TensorFlow lists its devices is written after, but the cuInit line."""
  lines = [b"2026-11-27 14:21:35.694554: E external/local_xla/xla/stream_executor/cuda/cuda_platform.cc:51] failed "
           b"call to cuInit: INTERNAL: CUDA error: Failed call to cuInit: UNKNOWN ERROR (303)\n",
           b"2026-11-27 14:21:35.694601: E tensorflow/core/some_device.cc:12] another error, which stays\n"]
  cli._without_cuinit_line(lambda: os.write(2, b"".join(lines)))
  assert capfd.readouterr().err == lines[1].decode()


@pytest.mark.parametrize("argv, debug", [
    (["tool"], False),
    (["tool", "--verbosity=1"], True),
    (["tool", "--verbosity", "2"], True),
    (["tool", "-v", "1"], True),
    (["tool", "-v=1"], True),
    (["tool", "--v=1"], True),
    (["tool", "--verbosity=0"], False),
    (["tool", "--verbosity=-1"], False),
    (["tool", "--verbosity=1", "--verbosity=0"], False),  # absl keeps the last
    (["tool", "--", "--verbosity=1"], False),  # not a flag after "--"
    (["tool", "--input=--verbosity=1"], False),
])
def test_debug_verbosity_is_read_from_the_command_line(argv, debug):
  assert _debug_verbosity(argv) == debug
