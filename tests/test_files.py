"""The one module that touches files, on local disk and on a bucket (the `bucket` stand-in for gs://): what it
finds, writes whole or not at all, publishes with the folder's marker last, and how a bucket's errors read."""

import os

import pytest
import tensorflow as tf

from albert_tf import files
from albert_tf.errors import InputFileError, OptionError, OutputError
from albert_tf.modeling.config import AlbertConfig


def test_the_stand_in_answers_as_gcs_where_tensorflows_ram_file_system_does_not(bucket):
  files.make_folders(f"{bucket}/run/empty")
  files.write_atomically(f"{bucket}/run/model.ckpt-4.index", b"index")
  # ram:// itself calls a checkpoint prefix a folder, as GCS does not.
  assert tf.io.gfile.isdir(f"{bucket}/run/model.ckpt-4")
  assert not files.exists(f"{bucket}/run/model.ckpt-4")
  assert files.is_folder(f"{bucket}/run") and files.is_folder(f"{bucket}/run/empty")
  assert files.file_exists(f"{bucket}/run/model.ckpt-4.index")
  assert files.list_folder(f"{bucket}/run") == ["empty", "model.ckpt-4.index"]
  files.make_folders(f"{bucket}/run/eval")
  files.write_atomically(f"{bucket}/run/eval_results.txt", "global_step = 4\n")
  assert tf.io.gfile.listdir(f"{bucket}/run/eval") == ["_results.txt"]  # ram://'s listing by prefix
  assert files.paths_under(f"{bucket}/run") == {f"{bucket}/run/{name}" for name in (
      "empty", "eval", "eval_results.txt", "model.ckpt-4.index")}
  assert files.glob(f"{bucket}/run/*.index") == [f"{bucket}/run/model.ckpt-4.index"]


@pytest.mark.parametrize("where", ["local", "bucket"])
def test_text_bytes_and_json_are_written_whole_and_read_back(where, bucket, tmp_path):
  root = bucket if where == "bucket" else str(tmp_path)
  path = files.write_json(f"{root}/a/b.json", {"text": "서울에서"}) if files.is_remote(root) else None
  if path is None:
    files.make_folders(f"{root}/a")
    path = files.write_json(f"{root}/a/b.json", {"text": "서울에서"})
  assert files.read_json(path) == {"text": "서울에서"}
  assert files.list_folder(f"{root}/a") == ["b.json"]  # no partial file left beside it
  with files.open_file(f"{root}/a/lines.txt", "w") as writer:
    writer.write("하나\r\n둘\n")
  assert [line for _, line in files.read_utf8_lines(f"{root}/a/lines.txt")] == ["하나\r\n", "둘\n"]
  assert files.read_text(f"{root}/a/lines.txt") == "하나\r\n둘\n"
  files.write_atomically(f"{root}/a/bad.txt", b"ok\n\xff\n")
  with pytest.raises(Exception, match=r"bad.txt, line 2: not UTF-8"):
    files.read_text(f"{root}/a/bad.txt")
  with pytest.raises(InputFileError, match="missing.txt"):
    files.read_bytes(f"{root}/a/missing.txt")


@pytest.mark.parametrize("where", ["local", "bucket"])
def test_a_folder_where_a_file_is_expected_is_named_as_a_folder_not_as_missing(where, bucket, tmp_path):
  root = bucket if where == "bucket" else str(tmp_path)
  files.make_folders(f"{root}/train")
  files.write_atomically(f"{root}/train/a.json", b"{}")
  folder = f"{root}/train"
  with pytest.raises(InputFileError, match=f"^Input file {folder} is a folder, not a file.$"):
    files.check_inputs_and_outputs([folder], [f"{root}/out.txt"])
  with pytest.raises(InputFileError, match=f"^ALBERT config file {folder} is a folder, not a file.$"):
    AlbertConfig.from_json_file(folder)
  if where == "bucket":  # on local disk the system says so ("Is a directory")
    with pytest.raises(InputFileError, match=r"train: cannot be read \(a folder, not a file\)"):
      files.read_bytes(folder)


def test_a_folder_published_to_a_bucket_gets_its_marker_last_and_a_failure_leaves_nothing(bucket, monkeypatch):
  written = []
  real_write = files.write_atomically
  monkeypatch.setattr(files, "write_atomically", lambda path, content: written.append(path) or real_write(path,
                                                                                                            content))
  destination = f"{bucket}/export/1"
  with files.staged_folder(destination, "saved_model.pb") as staging:
    assert not files.is_remote(staging)
    for name in ("saved_model.pb", "variables/variables.index", "assets/spiece.model"):
      os.makedirs(os.path.dirname(os.path.join(staging, name)), exist_ok=True)
      with open(os.path.join(staging, name), "wb") as writer:
        writer.write(name.encode())
  assert written[-1] == f"{destination}/saved_model.pb" and len(written) == 3
  assert files.read_bytes(f"{destination}/variables/variables.index") == b"variables/variables.index"
  assert not os.path.exists(staging)

  def failing(path, content):
    if path.endswith("saved_model.pb"):
      raise OutputError("the bucket is full")
    return real_write(path, content)

  monkeypatch.setattr(files, "write_atomically", failing)
  with pytest.raises(OutputError, match="full"):
    with files.staged_folder(f"{bucket}/export/2", "saved_model.pb") as staging:
      for name in ("saved_model.pb", "variables.index"):
        with open(os.path.join(staging, name), "wb") as writer:
          writer.write(b"x")
  assert files.list_folder(f"{bucket}/export") == ["1"]


def test_a_folder_published_on_local_disk_is_renamed_into_place(tmp_path):
  with pytest.raises(KeyboardInterrupt):
    with files.staged_folder(str(tmp_path / "export" / "1"), "saved_model.pb") as staging:
      with open(os.path.join(staging, "saved_model.pb"), "wb") as writer:
        writer.write(b"x")
      raise KeyboardInterrupt
  assert os.listdir(tmp_path / "export") == []
  with files.staged_folder(str(tmp_path / "export" / "1"), "saved_model.pb") as staging:
    with open(os.path.join(staging, "saved_model.pb"), "wb") as writer:
      writer.write(b"x")
  assert os.listdir(tmp_path / "export") == ["1"]


def test_files_published_into_an_existing_folder_are_staged_inside_it_not_in_its_parent(tmp_path):
  """A user's existing output folder may be writable where its parent is not (a home directory's own folder)."""
  folder = tmp_path / "hf"
  folder.mkdir()
  (folder / "README.md").write_text("kept")
  with files.staged_folder(str(folder), "config.json") as staging:
    assert os.listdir(tmp_path) == ["hf"]
    for name in ("model.safetensors", "config.json"):
      with open(os.path.join(staging, name), "wb") as writer:
        writer.write(b"x")
  assert os.listdir(tmp_path) == ["hf"]
  assert sorted(os.listdir(folder)) == ["README.md", "config.json", "model.safetensors"]


def test_a_bucket_that_is_not_there_or_cannot_be_reached_is_one_message_naming_it_and_the_fix(bucket):
  with pytest.raises(OptionError, match=r"--output_dir ram://nowhere/run: the bucket ram://nowhere does not exist"):
    files.check_destination("ram://nowhere/run", "--output_dir")
  # No network here: TensorFlow's GCS client cannot resolve its host (with one, no credentials: access refused).
  with pytest.raises(InputFileError) as raised:
    files.read_bytes("gs://albert-tf-test-no-such-bucket/spiece.model")
  message = str(raised.value)
  assert message.startswith("gs://albert-tf-test-no-such-bucket/spiece.model: ")
  assert "gcloud auth application-default login" in message and "\n" not in message
