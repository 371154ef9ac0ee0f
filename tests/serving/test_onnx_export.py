"""ONNX exports of our SavedModels (`albert_tf.serving.onnx_export`, tools/export_onnx.py): ONNX Runtime, fed by the
folder's own tokenizer files, gives the SavedModel's outputs within 1e-4; a conversion that does not is refused,
and a user's mistake is one `error:` line with nothing left behind."""

import math
import os

import numpy as np
import onnx
import onnxruntime
import pytest
import tensorflow as tf
import tokenizers
import transformers

import albert_tf
from albert_tf import files
from albert_tf.errors import DataError
from albert_tf.serving import onnx_export, saved_model
from albert_tf.tasks.classification.model import AlbertClassifier
from tests.conftest import SP8K_MODEL, padded_batch, randomize_text_sensitive, run_tool, tiny_config

LABELS = ["entailment", "neutral", "contradiction"]
FOLDER_FILES = ["model.onnx", "special_tokens_map.json", "spiece.model", "spiece.tokenizer_options.json",
                "tokenizer.json", "tokenizer_config.json"]


def session(folder):
  return onnxruntime.InferenceSession(os.path.join(folder, "model.onnx"), providers=["CPUExecutionProvider"])


def listing(folder):
  """Every path under `folder`, hidden ones too, with each file's bytes: what a refused run must leave as it was."""
  found = {}
  for directory, _, names in os.walk(folder):
    found[os.path.relpath(directory, folder)] = None
    for name in names:
      path = os.path.join(directory, name)
      with open(path, "rb") as reader:
        found[os.path.relpath(path, folder)] = reader.read()
  return found


@pytest.fixture(scope="module")
def classifier_saved_model(tmp_path_factory):
  """A tiny three-class classifier's SavedModel (the 8k English-Korean vocabulary, Google's default options)."""
  model = AlbertClassifier(tiny_config(vocab_size=8000, num_hidden_layers=2), LABELS)
  model(model.dummy_inputs())
  randomize_text_sensitive(model, 3)
  return saved_model.export_saved_model(model, str(tmp_path_factory.mktemp("classifier") / "saved"), SP8K_MODEL, 64)


@pytest.fixture(scope="module")
def classifier(classifier_saved_model, tmp_path_factory):
  """The classifier's SavedModel, its ONNX folder (written by the library) and what the export reported."""
  folder = str(tmp_path_factory.mktemp("classifier_onnx") / "onnx")
  return classifier_saved_model, folder, onnx_export.export_onnx(classifier_saved_model, folder)


def test_text_pairs_tokenized_by_transformers_get_the_saved_models_probabilities_from_onnx_runtime(classifier):
  version_dir, folder, export = classifier
  assert sorted(os.listdir(folder)) == FOLDER_FILES  # no staging folder left
  assert sorted(export.paths) == FOLDER_FILES
  assert export.outputs == ["labels", "predictions", "probabilities"]  # the labels are ONNX strings
  assert export.max_abs_differences["probabilities"] <= 1e-4 and export.tokenizer_mismatches == []
  texts_a = ["The cat sat on the mat.", "서울은 한국의 수도입니다.", "Is it raining?", "오늘 날씨가 어때요?"]
  texts_b = ["A cat is sitting.", "부산은 바다가 아름다운 항구 도시이고, 해운대가 유명합니다.", "No.",
             "The weather in Seoul is sunny and warm today, with a light breeze from the west."]

  tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
  encoded = tokenizer(texts_a, texts_b, padding=True, return_tensors="np")
  assert 0 < encoded["input_ids"].shape[1] < 64 and encoded["attention_mask"].min() == 0  # padded to the longest
  assert encoded["token_type_ids"].max() == 1
  inputs = {"input_word_ids": encoded["input_ids"], "input_mask": encoded["attention_mask"],
            "input_type_ids": encoded["token_type_ids"]}
  outputs = onnx_export.run_onnx(session(folder), {name: ids.astype(np.int32) for name, ids in inputs.items()})
  served = tf.saved_model.load(version_dir).signatures["classify_text_pair"]
  expected = served(text_a=tf.constant(texts_a), text_b=tf.constant(texts_b))
  np.testing.assert_allclose(outputs["probabilities"], expected["probabilities"].numpy(), atol=1e-4, rtol=0)
  assert outputs["predictions"].tolist() == expected["predictions"].numpy().tolist()
  assert outputs["labels"].tolist() == [label.decode() for label in expected["labels"].numpy()]
  assert np.ptp(outputs["probabilities"], axis=0).max() > 100 * 1e-4  # the texts are told apart: the ids matter

  # Without transformers: the `tokenizers` library alone, from tokenizer.json, gives the same ids and segments.
  plain = tokenizers.Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
  for row, (text_a, text_b) in enumerate(zip(texts_a, texts_b)):
    length = encoded["attention_mask"][row].sum()
    ours = plain.encode(text_a, text_b)
    assert ours.ids == encoded["input_ids"][row, :length].tolist()
    assert ours.type_ids == encoded["token_type_ids"][row, :length].tolist()


def test_an_encoder_in_a_bucket_converts_to_a_bucket_and_matches_serving_default_at_two_lengths(tmp_path, bucket,
                                                                                               monkeypatch):
  """The SavedModel exported to a bucket and the tool over an earlier export there: refused without --overwrite (the
  old file stays), replaced with it; each folder uploaded whole, the file that marks it complete last, and nothing
  written to local disk instead. The ONNX model takes any batch and length, as serving_default does."""
  model = albert_tf.AlbertEncoder(tiny_config(vocab_size=8000, num_hidden_layers=2))
  model(model.dummy_inputs())
  randomize_text_sensitive(model, 4)
  written = []
  write = files.write_atomically
  monkeypatch.setattr(files, "write_atomically", lambda path, content: written.append(path) or write(path, content))
  (tmp_path / "work").mkdir()
  monkeypatch.chdir(tmp_path / "work")
  # keep_accents: the other tokenizer setting (one way of writing the files, nothing to compile).
  version_dir = saved_model.export_saved_model(model, f"{bucket}/saved", SP8K_MODEL, 64, keep_accents=True)
  assert version_dir == f"{bucket}/saved/1" and written[-1] == f"{version_dir}/saved_model.pb"
  assert {"assets", "saved_model.pb", "variables"} <= set(files.list_folder(version_dir))
  out = f"{bucket}/onnx"
  files.write_atomically(f"{out}/model.onnx", b"an earlier export")
  refused = run_tool("export_onnx", f"--saved_model_dir={version_dir}", f"--output_dir={out}")
  assert refused.returncode == 2 and "already holds model.onnx; pass --overwrite" in refused.stderr
  assert files.list_folder(out) == ["model.onnx"] and files.read_bytes(f"{out}/model.onnx") == b"an earlier export"

  del written[:]
  result = run_tool("export_onnx", f"--saved_model_dir={version_dir}", f"--output_dir={out}", "--overwrite")
  assert result.returncode == 0, result.stderr
  assert files.list_folder(out) == FOLDER_FILES
  uploaded = [path for path in written if path.startswith(out)]
  assert sorted(uploaded) == [f"{out}/{name}" for name in FOLDER_FILES] and uploaded[-1] == f"{out}/model.onnx"
  assert os.listdir(tmp_path / "work") == []
  assert "max |diff| pooled_output" in result.stdout and "AutoTokenizer 100.00%" in result.stdout
  assert "WARNING" not in result.stderr
  with files.local_copy(out) as local_out:
    inputs = onnx.load(os.path.join(local_out, "model.onnx")).graph.input
    onnx_session = session(local_out)
  assert {value.name: [dim.dim_param for dim in value.type.tensor_type.shape.dim] for value in inputs} == {
      name: ["batch", "sequence"] for name in ("input_word_ids", "input_mask", "input_type_ids")}

  serving_default = tf.saved_model.load(version_dir).signatures["serving_default"]
  for batch_size, seq_length in ((3, 11), (2, 40)):
    batch = padded_batch(8000, batch_size=batch_size, seq_length=seq_length, seed=seq_length)
    batch = {name: batch[name] for name in ("input_word_ids", "input_mask", "input_type_ids")}
    actual = onnx_export.run_onnx(onnx_session, {name: ids.numpy() for name, ids in batch.items()})
    expected = serving_default(**batch)
    assert actual["sequence_output"].shape == (batch_size, seq_length, 32)
    for name in ("sequence_output", "pooled_output"):
      np.testing.assert_allclose(actual[name], expected[name].numpy(), atol=1e-4, rtol=0, err_msg=name)


@pytest.mark.parametrize("mistake, message", [
    ("occupied", "already holds model.onnx; pass --overwrite to replace what it holds"),
    ("missing", "error: SavedModel not found: "),
    ("export_dir", "is an export directory holding version 1, not a SavedModel: name a version folder, e.g. "),
    ("not_a_saved_model", "holds no SavedModel (no saved_model.pb)"),
    ("inside", "is inside the SavedModel"),
    ("opset", "error: --opset must be from 11 to 18 (tf2onnx's newest), not 9."),
])
def test_the_tools_mistakes_are_one_error_line_and_leave_nothing(classifier_saved_model, tmp_path, mistake, message):
  version_dir = classifier_saved_model
  occupied = tmp_path / "occupied"
  occupied.mkdir()
  (occupied / "model.onnx").write_bytes(b"an earlier export")
  saved_model_dir, output_dir, flags = version_dir, str(tmp_path / "out" / "onnx"), []
  if mistake == "occupied":
    output_dir = str(occupied)
  elif mistake == "missing":
    saved_model_dir = str(tmp_path / "no_such_export" / "1")
  elif mistake == "export_dir":
    saved_model_dir = os.path.dirname(version_dir)
  elif mistake == "not_a_saved_model":
    saved_model_dir = str(tmp_path / "empty")
    os.mkdir(saved_model_dir)
  elif mistake == "inside":
    output_dir = os.path.join(version_dir, "onnx")
  else:
    flags = ["--opset=9"]
  before = listing(str(occupied)), listing(version_dir)
  result = run_tool("export_onnx", f"--saved_model_dir={saved_model_dir}", f"--output_dir={output_dir}", *flags)
  assert result.returncode == 2, result.stderr
  last_line = result.stderr.strip().splitlines()[-1]
  assert last_line.startswith("error: ") and message in last_line and "Traceback" not in result.stderr
  assert (listing(str(occupied)), listing(version_dir)) == before
  assert not (tmp_path / "out").exists()


def test_an_onnx_model_with_other_outputs_is_refused_and_nothing_is_written(classifier_saved_model, tmp_path,
                                                                            monkeypatch):
  """A conversion whose outputs differ (here one weight of the converted model changed) is refused after the check,
  before any file or folder is made."""
  convert = onnx_export.convert_signature

  def changed_conversion(*args):
    model = convert(*args)
    weights = max(model.graph.initializer, key=lambda tensor: len(tensor.raw_data))  # the embedding table
    values = onnx.numpy_helper.to_array(weights)
    weights.CopyFrom(onnx.numpy_helper.from_array(values * 1.5, weights.name))
    return model

  monkeypatch.setattr(onnx_export, "convert_signature", changed_conversion)
  with pytest.raises(DataError, match=r"does not give its serving_default outputs: .*probabilities by up to .*"
                                      r"more than 0.0001 apart; nothing was written"):
    onnx_export.export_onnx(classifier_saved_model, str(tmp_path / "out" / "onnx"))
  assert not (tmp_path / "out").exists()


def test_difference_compares_floats_within_a_tolerance_and_anything_else_exactly():
  assert onnx_export.difference(np.array([1.0, 2.0]), np.array([1.0, 2.00003])) == pytest.approx(3e-5, abs=1e-9)
  assert onnx_export.difference(np.array([b"good", b"bad"]), np.array(["good", "bad"], dtype=object)) == 0.0
  assert onnx_export.difference(np.array([b"good"]), np.array(["bad"], dtype=object)) == math.inf
  assert onnx_export.difference(np.array([1, 2]), np.array([1, 3])) == math.inf
  assert onnx_export.difference(np.array([-np.inf, 1.0]), np.array([-np.inf, 1.0])) == 0.0
  assert onnx_export.difference(np.array([np.nan, 1.0]), np.array([0.0, 1.0])) == math.inf
  assert onnx_export.difference(np.zeros([2, 3]), np.zeros([3, 2])) == math.inf
