"""Where the tools write: a destination that cannot be written, or that already holds what a tool writes, is one
`error:` line (status 2) before any work, and nothing is left behind; `--overwrite` replaces it. Also the option
errors that used to leave empty folders (or hang a pool of workers) behind."""

import os

import pytest
import tensorflow as tf

import albert_tf
from albert_tf import workers
from albert_tf.data import pretraining_writer
from albert_tf.data.instances import InstanceOptions
from albert_tf.errors import DataError, InputFileError
from albert_tf.files import expand_input_patterns, read_utf8_lines
from albert_tf.interop.huggingface import export_to_hf
from albert_tf.modeling.checkpoints import save_checkpoint
from albert_tf.text.sentencepiece_training import train_sentencepiece
from tests.conftest import REPO, run_tool, tiny_config

SAMPLE = os.path.join(REPO, "albert_tf", "sample_data", "en_botchan.txt")
VOCAB_SIZE = 200


@pytest.fixture(scope="module")
def text(tmp_path_factory):
  """300 lines of the English sample, and beside them words.txt: words to add to a vocabulary (extend_vocab), and
  train.tsv: labelled sentences (run_classifier)."""
  path = tmp_path_factory.mktemp("text") / "small.txt"
  with open(SAMPLE, encoding="utf-8") as reader:
    path.write_text("".join(line for line, _ in zip(reader, range(300))), encoding="utf-8")
  (path.parent / "words.txt").write_text("알버트\n", encoding="utf-8")
  (path.parent / "train.tsv").write_text("good\tA fine day.\nbad\tA dull day.\n", encoding="utf-8")
  return str(path)


@pytest.fixture(scope="module")
def vocabulary(text, tmp_path_factory):
  return train_sentencepiece(text, str(tmp_path_factory.mktemp("spm") / "spiece"), vocab_size=VOCAB_SIZE,
                             num_threads=1)


@pytest.fixture(scope="module")
def records(text, vocabulary, tmp_path_factory):
  path = str(tmp_path_factory.mktemp("records") / "train.tfrecord")
  pretraining_writer.create_pretraining_data([text], [path], pretraining_writer.TokenizerSpec(vocabulary),
                                             InstanceOptions(max_seq_length=32, max_predictions_per_seq=5),
                                             dupe_factor=1, progress=False)
  return path


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
  """A tiny pretrainer's config and checkpoint, as `run_pretraining` leaves them, and its Hugging Face folder."""
  folder = tmp_path_factory.mktemp("run")
  config = tiny_config(vocab_size=VOCAB_SIZE, num_hidden_layers=1)
  model = albert_tf.AlbertPretrainer(config)
  model(model.dummy_inputs())
  config.to_json_file(str(folder / "albert_config.json"))
  hf_folder = str(tmp_path_factory.mktemp("hf"))
  export_to_hf(model, hf_folder)
  return str(folder / "albert_config.json"), save_checkpoint(model, str(folder / "model.ckpt-1")), hf_folder


def error_line(result) -> str:
  assert result.returncode == 2, result.stderr
  assert "Traceback" not in result.stderr, result.stderr
  return result.stderr.strip().splitlines()[-1]


def tool_runs(tmp_path, text, vocabulary, checkpoint, records=None):
  """Each writing tool with its destination flag last, as a function of that destination."""
  config_file, prefix, hf_folder = checkpoint
  return {
      "run_pretraining": lambda out: ("run_pretraining", f"--input_file={records}",
                                      f"--albert_config_file={config_file}", "--max_seq_length=32",
                                      "--max_predictions_per_seq=5", "--train_batch_size=2", "--num_train_steps=1",
                                      "--do_train", f"--output_dir={out}"),
      "prepare_corpus": lambda out: ("prepare_corpus", f"--input_file={text}", "--language=en", "--num_workers=1",
                                     f"--output_file={out}"),
      "create_pretraining_data": lambda out: (
          "create_pretraining_data", f"--input_file={text}", f"--spm_model_file={vocabulary}", "--max_seq_length=32",
          "--max_predictions_per_seq=5", "--dupe_factor=1", "--num_workers=1", f"--output_file={out}"),
      "train_sentencepiece": lambda out: ("train_sentencepiece", f"--input={text}", f"--vocab_size={VOCAB_SIZE}",
                                          "--num_threads=1", f"--model_prefix={out}"),
      "extend_vocab": lambda out: ("extend_vocab", f"--spm_model_file={vocabulary}",
                                   f"--new_pieces_file={os.path.join(os.path.dirname(text), 'words.txt')}",
                                   f"--output_dir={out}"),
      "export_hf": lambda out: ("export_hf", f"--albert_config_file={config_file}", f"--checkpoint={prefix}",
                                f"--output_dir={out}"),
      "convert_checkpoint": lambda out: ("convert_checkpoint", "--source_format=hf", f"--source={hf_folder}",
                                         f"--output_dir={out}"),
      "vocab_report": lambda out: ("vocab_report", f"--spm_model_file={vocabulary}", f"--input_file={text}",
                                   "--max_lines=50", f"--output_json={out}"),
      "demo": lambda out: ("albert_tf.cli.demo", f"--output_dir={out}"),
      # Its run directory in tmp_path: an --export_dir refused only once training is done would leave it there.
      "run_classifier": lambda out: ("run_classifier", "--task_name=tsv", f"--data_dir={os.path.dirname(text)}",
                                     "--tsv_label_column=0", "--tsv_text_a_column=1",
                                     f"--albert_config_file={config_file}", f"--spm_model_file={vocabulary}",
                                     "--max_seq_length=32", "--do_train", "--do_eval=false", "--train_step=1",
                                     f"--output_dir={tmp_path / 'run'}", f"--export_dir={out}"),
  }


@pytest.mark.parametrize("tool", ["prepare_corpus", "create_pretraining_data", "train_sentencepiece", "extend_vocab",
                                  "export_hf", "convert_checkpoint", "vocab_report", "demo", "run_pretraining",
                                  "run_classifier"])
def test_a_destination_under_a_regular_file_is_refused_before_any_work(tool, tmp_path, text, vocabulary, checkpoint,
                                                                       records):
  (tmp_path / "blocker").write_text("a file\n")
  destination = str(tmp_path / "blocker" / "out" / "name")
  line = error_line(run_tool(*tool_runs(tmp_path, text, vocabulary, checkpoint, records)[tool](destination)))
  # train_sentencepiece names the first file of its prefix: name.model.
  assert destination in line and line.endswith(f"cannot be written: {tmp_path / 'blocker'} is a file, not a folder.")
  assert os.listdir(tmp_path) == ["blocker"]


@pytest.mark.parametrize("tool", ["prepare_corpus", "create_pretraining_data", "train_sentencepiece", "extend_vocab",
                                  "export_hf", "convert_checkpoint", "vocab_report", "demo", "run_pretraining",
                                  "run_classifier"])
def test_a_destination_in_a_bucket_that_does_not_exist_is_refused_before_any_work(tool, tmp_path, text, vocabulary,
                                                                                   checkpoint, records, bucket):
  destination = "ram://no-such-bucket/out/name"  # `bucket` patches in GCS's answers; this one was never made
  command = tool_runs(tmp_path, text, vocabulary, checkpoint, records)[tool](destination)
  line = error_line(run_tool(*command, cwd=tmp_path))
  assert destination in line and "the bucket ram://no-such-bucket does not exist (or this account cannot see it); " \
      "create it, or correct the path, or authenticate with `gcloud auth application-default login`" in line, line
  assert not tf.io.gfile.exists("ram://no-such-bucket") and os.listdir(tmp_path) == []


def test_a_bucket_that_refuses_the_credentials_or_cannot_be_reached_is_one_line_before_any_work(
    tmp_path, text, vocabulary, checkpoint, records, bucket, monkeypatch):
  exists = tf.io.gfile.exists

  def refusing(path):
    if path.startswith("ram://locked"):  # what GCS answers a caller without the bucket's permission
      raise tf.errors.PermissionDeniedError(None, None, "Error executing an HTTP request: HTTP response code 403 "
                                            "with body 'caller does not have storage.objects.get access'")
    return exists(path)

  monkeypatch.setattr(tf.io.gfile, "exists", refusing)
  runs = tool_runs(tmp_path, text, vocabulary, checkpoint, records)
  line = error_line(run_tool(*runs["run_pretraining"]("ram://locked/run"), cwd=tmp_path))
  assert line.startswith("error: --output_dir ram://locked/run: access refused (Error executing an HTTP request: "
                         "HTTP response code 403") and line.endswith(
      "authenticate with `gcloud auth application-default login` (or set GOOGLE_APPLICATION_CREDENTIALS to a "
      "service account's key file) with an account that may use the bucket."), line
  # No network here: the name of TensorFlow's GCS endpoint cannot be looked up (with one and no credentials, the
  # bucket refuses, as above). An input is read before any work.
  command = [flag if not flag.startswith("--input_file=") else "--input_file=gs://albert-tf-test-no-such-bucket/a.txt"
             for flag in runs["create_pretraining_data"](str(tmp_path / "out.tfrecord"))]
  line = error_line(run_tool(*command, cwd=tmp_path))
  assert line.startswith("error: gs://albert-tf-test-no-such-bucket/a.txt: ") and "gcloud auth" in line, line
  assert os.listdir(tmp_path) == []


# What each tool finds already there, and the one file of its output that stands for the rest.
EXISTING = {
    "prepare_corpus": ("corpus.txt", "corpus.txt"),
    "create_pretraining_data": ("train.tfrecord", "train.tfrecord"),
    "train_sentencepiece": ("sp.model", "sp"),
    "extend_vocab": ("new/spiece.model", "new"),
    "export_hf": ("hf/config.json", "hf"),
    "convert_checkpoint": ("converted/albert_config.json", "converted"),
    "vocab_report": ("report.json", "report.json"),
}


@pytest.mark.parametrize("tool", sorted(EXISTING))
def test_an_existing_destination_is_refused_and_replaced_with_overwrite(tool, tmp_path, text, vocabulary,
                                                                        checkpoint):
  existing, destination = EXISTING[tool]
  (tmp_path / existing).parent.mkdir(parents=True, exist_ok=True)
  (tmp_path / existing).write_text("written before\n")
  before = sorted(os.listdir(tmp_path / existing.split("/")[0])) if "/" in existing else None
  command = tool_runs(tmp_path, text, vocabulary, checkpoint)[tool](str(tmp_path / destination))
  line = error_line(run_tool(*command))
  assert "already" in line and "pass --overwrite to replace" in line, line
  assert (tmp_path / existing).read_text() == "written before\n"
  if before is not None:
    assert sorted(os.listdir(tmp_path / existing.split("/")[0])) == before
  result = run_tool(*command, "--overwrite")
  assert result.returncode == 0, result.stderr
  assert (tmp_path / existing).read_bytes() != b"written before\n"


def test_the_demo_refuses_an_earlier_run_before_any_work(tmp_path):
  (tmp_path / "spm").mkdir()
  line = error_line(run_tool("albert_tf.cli.demo", f"--output_dir={tmp_path}"))
  assert line == (f"error: {tmp_path} already holds spm; pass --overwrite to replace what it holds, or choose "
                  "another --output_dir (nothing was written).")
  assert os.listdir(tmp_path) == ["spm"]


def test_an_output_file_that_is_a_folder_is_refused_before_any_work(tmp_path, text, vocabulary, checkpoint):
  (tmp_path / "records").mkdir()
  command = tool_runs(tmp_path, text, vocabulary, checkpoint)["create_pretraining_data"](str(tmp_path / "records"))
  assert error_line(run_tool(*command)) == (
      f"error: --output_file {tmp_path / 'records'} is a folder; name a file (in it, or elsewhere).")
  assert os.listdir(tmp_path / "records") == []


def test_more_prediction_slots_than_positions_are_refused(tmp_path, text, vocabulary):
  result = run_tool("create_pretraining_data", f"--input_file={text}", f"--spm_model_file={vocabulary}",
                    "--max_seq_length=64", "--max_predictions_per_seq=100", f"--output_file={tmp_path}/out/x.tfrecord")
  assert error_line(result) == ("error: --max_predictions_per_seq must be in [1, --max_seq_length=64], got 100; "
                                "masked_lm_prob × max_seq_length is the usual value.")
  assert os.listdir(tmp_path) == []


def test_option_errors_found_late_leave_no_folder_behind(tmp_path, text, vocabulary):
  # A bad language is an option error before any work, with a pool of workers too (it used to hang there).
  result = run_tool("prepare_corpus", f"--input_file={text}", "--language=english", "--num_workers=2",
                    f"--output_file={tmp_path}/a/corpus.txt")
  assert error_line(result).startswith("error: --language must be ko, auto or an ISO 639 language code")
  # An input of zero bytes is found empty only once read: the folders made for the output go again.
  (tmp_path / "empty.txt").write_bytes(b"")
  result = run_tool("create_pretraining_data", f"--input_file={tmp_path}/empty.txt",
                    f"--spm_model_file={vocabulary}", "--max_seq_length=32", "--max_predictions_per_seq=5",
                    f"--output_file={tmp_path}/b/c/train.tfrecord")
  assert error_line(result) == f"error: No text in {tmp_path}/empty.txt: the corpus is empty (or only blank lines)."
  assert os.listdir(tmp_path) == ["empty.txt"]


def test_a_worker_initializer_error_reaches_the_caller():
  """A pool replaces a worker whose initializer fails, forever: the error must come back instead. (Built-ins as
  the initializer and the task: the workers then import no test module, and no TensorFlow.)"""
  with pytest.raises(ValueError, match="invalid literal for int"):
    with workers.ordered_workers(2, int, ("not a number",)) as tasks:
      list(tasks.submit(abs, -1))
      list(tasks.drain())


def test_inputs_that_are_folders_or_not_gzip_are_named(tmp_path):
  """(A gzip file cut short: tests/data/test_prepare_corpus.py.)"""
  with pytest.raises(InputFileError, match=f"^{tmp_path} is a folder; name the files in it, e.g. {tmp_path}/\\*.txt."):
    expand_input_patterns(str(tmp_path))
  (tmp_path / "plain.txt.gz").write_text("Not compressed.\n")
  with pytest.raises(DataError, match=r"plain\.txt\.gz: not a gzip file \(.*\); only names ending in \.gz are read "
                                      r"as gzip\.$"):
    list(read_utf8_lines(str(tmp_path / "plain.txt.gz")))
