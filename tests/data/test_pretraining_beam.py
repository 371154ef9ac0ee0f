"""create_pretraining_data on Apache Beam: the local run's bytes, errors that name the input, the missing extra."""

import os
import subprocess
import sys

import pytest

from albert_tf.data import beam_support
from albert_tf.data import pretraining_beam
from albert_tf.data.instances import InstanceOptions
from albert_tf.data.pretraining_corpus import TokenizerSpec
from albert_tf.errors import CorpusError, DataError, InputFileError
from tests.conftest import REPO, SHARED, SP8K_MODEL, requires_shared, run_tool

pytestmark = requires_shared(SP8K_MODEL)
CORPUS = os.path.join(SHARED, "corpus")
TOOL = os.path.join(REPO, "tools", "create_pretraining_data.py")
MULTI_PROCESS = ["--direct_num_workers=2", "--direct_running_mode=multi_processing"]


def tool(output_dir, *flags):
  inputs = ",".join(os.path.join(CORPUS, name) for name in ("ko_law.txt", "en_botchan.txt"))
  return run_tool(
      "create_pretraining_data", f"--input_file={inputs}", f"--spm_model_file={SP8K_MODEL}", "--max_seq_length=128",
      "--max_predictions_per_seq=20", "--dupe_factor=2", "--random_seed=3", "--eval_fraction=0.1",
      f"--output_file={output_dir}/train-0.tfrecord,{output_dir}/train-1.tfrecord",
      f"--eval_output_file={output_dir}/eval.tfrecord", *flags)


@pytest.mark.parametrize("masking", [[], ["--dynamic_masking", "--word_boundaries=sentencepiece"]],
                         ids=["masked", "unmasked-eojeols"])
def test_the_direct_runner_with_two_workers_writes_the_local_runs_bytes(tmp_path, masking):
  """The same records in the same shards in the same order: every seed, key and rank is defined by what it is
  about (pretraining_corpus), not by the engine. The Beam run has many shuffle buckets (--shuffle_memory_mb=1),
  the local run one. The unmasked records take eojeols as words (Google's rule is pinned in
  test_pretraining_writer)."""
  local = tool(tmp_path / "local", "--num_workers=2", *masking)
  assert local.returncode == 0, local.stderr
  beam = tool(tmp_path / "beam", "--runner=DirectRunner", *MULTI_PROCESS, "--shuffle_memory_mb=1", *masking)
  assert beam.returncode == 0, beam.stderr
  names = ["eval.tfrecord", "train-0.tfrecord", "train-1.tfrecord"]
  assert sorted(os.listdir(tmp_path / "beam")) == sorted(os.listdir(tmp_path / "local")) == names
  for name in names:
    assert (tmp_path / "beam" / name).read_bytes() == (tmp_path / "local" / name).read_bytes(), name
  # The summaries agree too (counted with Beam's metrics), but for the time taken (the last line).
  summary = lambda result: [line.replace("/beam/", "/local/") for line in result.stdout.splitlines()[:-1]]
  assert summary(beam) == summary(local) and "eval: instances:" in beam.stdout
  assert ("masking: none written" in beam.stdout) == bool(masking)
  assert beam.stdout.splitlines()[-1].startswith("done in ")


def test_a_non_utf8_file_is_named_with_its_line_and_nothing_is_written(tmp_path):
  broken = tmp_path / "broken.txt"
  broken.write_bytes("첫 줄입니다.\n둘째 줄.\n\n".encode() + b"bad \xff\xfe bytes\n")
  output = tmp_path / "out" / "train.tfrecord"
  for mode in ([], MULTI_PROCESS):
    with pytest.raises(DataError, match=r"broken\.txt, line 4: not UTF-8 \(invalid start byte b'\\xff' at byte 4 "
                                        r"of the line\)\.$"):
      pretraining_beam.create_pretraining_data_beam(
          [os.path.join(CORPUS, "ko_law.txt"), str(broken)], [str(output)], TokenizerSpec(SP8K_MODEL),
          InstanceOptions(max_seq_length=64, max_predictions_per_seq=10), dupe_factor=1,
          pipeline_args=["--runner=DirectRunner"] + mode)
    assert not output.parent.exists()  # the run made it, and removed it


def test_a_worker_that_cannot_read_its_file_names_it(tmp_path):
  link = tmp_path / "gone.txt"
  link.symlink_to(tmp_path / "deleted after the run started.txt")
  read = pretraining_beam._ReadDocuments(random_seed=1, eval_fraction=0.0)
  with pytest.raises(InputFileError, match=r"gone\.txt: cannot be read \(No such file or directory\)"):
    list(read.process((0, str(link))))
  # How a multi-process runner reports it: the worker's traceback as text.
  failure = RuntimeError("Pipeline failed:\nTraceback (most recent call last):\n  ...\nalbert_tf.errors."
                         f"InputFileError: {link}: cannot be read (No such file or directory). [while running "
                         "'ReadDocuments/ParDo(_ReadDocuments)']\n")
  error = beam_support.worker_error(failure, (CorpusError,))
  assert type(error) is InputFileError and str(error) == f"{link}: cannot be read (No such file or directory)."
  assert beam_support.worker_error(RuntimeError("OOM in a worker")) is None


def test_runner_without_apache_beam_is_one_line_naming_the_extra(tmp_path):
  # The tool as a user without the extra runs it: importing apache_beam fails.
  code = ("import runpy, sys; sys.modules['apache_beam'] = None; sys.argv = sys.argv[1:]; "
          "runpy.run_path(sys.argv[0], run_name='__main__')")
  result = subprocess.run([sys.executable, "-c", code, TOOL, f"--input_file={os.path.join(CORPUS, 'ko_law.txt')}",
                           f"--output_file={tmp_path}/out.tfrecord", f"--spm_model_file={SP8K_MODEL}",
                           "--runner=DataflowRunner", "--project=p"], capture_output=True, text=True, timeout=300)
  assert result.returncode == 2
  assert result.stderr.strip().splitlines()[-1].startswith("error: --runner needs Apache Beam")
  assert "pip install 'albert-tf[beam]'" in result.stderr and "Traceback" not in result.stderr
  assert os.listdir(tmp_path) == []


def test_beam_options_need_runner(tmp_path):
  result = tool(tmp_path, "--project=p", "--direct_num_workers=2")
  assert result.returncode == 2
  assert result.stderr.strip().splitlines()[-1] == (
      "error: Unknown flag(s): --project=p --direct_num_workers=2 (Beam's pipeline options need --runner).")
  assert os.listdir(tmp_path) == []
