"""A sentence encoder's Hugging Face folder is a sentence-transformers model that computes our embedding, and
`hf_folder_embedder` reads it, and folders sentence-transformers wrote, back."""

import functools
import json
import os
import shutil

import numpy as np
import pytest
import tf_keras
import torch
from safetensors import numpy as safetensors_numpy

import albert_tf
from albert_tf import files
from albert_tf.errors import DataError, OptionError
from albert_tf.interop import hf_tokenizer
from albert_tf.interop import huggingface
from albert_tf.interop import sentence_transformers_folders as st_folders
from albert_tf.interop.huggingface import export_to_hf
from albert_tf.modeling.checkpoints import save_checkpoint
from albert_tf.modeling.layers.pooling import POOLING_MODES
from albert_tf.serving import saved_model
from albert_tf.tasks.similarity.embedders import hf_folder_embedder, saved_model_embedder
from albert_tf.text.graph_tokenizer import tokenizer_for_model
from tests.conftest import SHARED, SP8K_MODEL, randomize_text_sensitive, run_tool, tiny_config

# Short enough that the long review below is cut, as sentence-transformers cuts it.
MAX_SEQ_LENGTH = 24
PROJECTION_DIM = 24
CONFIG = tiny_config(vocab_size=8000)


def _texts():
  """English messages and their Korean translations, and a movie review longer than MAX_SEQ_LENGTH pieces."""
  with open(os.path.join(SHARED, "parallel", "en_ko_messages.tsv"), encoding="utf-8") as reader:
    rows = [line.rstrip("\n").split("\t") for line in reader][:12]
  with open(os.path.join(SHARED, "finetune", "movieReviewSnippets_GroundTruth.tsv"), encoding="utf-8") as reader:
    review = reader.readline().rstrip("\n").split("\t")[2]
  return [row[0] for row in rows] + [row[1] for row in rows] + [review]


TEXTS = _texts()


def sentence_transformers_package():
  """The package, imported by the tests that run it: its import takes seconds (it loads transformers' models), which
  a test process that collects this file without running these tests does not pay."""
  # pylint: disable=import-outside-toplevel
  import sentence_transformers.base.modules
  import sentence_transformers.sentence_transformer.modules
  return sentence_transformers


@functools.lru_cache(maxsize=None)
def packed_texts():
  """TEXTS packed by the in-graph tokenizer, as our SavedModels pack them."""
  return tokenizer_for_model(CONFIG, SP8K_MODEL).encode_and_pack(np.array(TEXTS), None, MAX_SEQ_LENGTH)


def our_embeddings(model):
  return model(packed_texts())["embedding"].numpy()


def sentence_encoder(pooling, projection_dim, seed):
  model = albert_tf.AlbertSentenceEncoder(CONFIG, pooling, projection_dim)
  model(model.dummy_inputs())
  randomize_text_sensitive(model, seed)
  return model


@pytest.fixture(scope="module")
def exports(tmp_path_factory):
  """Every pooling with and without a projection, each exported with export_to_hf.

  The first goes through tools/export_hf.py with the SentencePiece model; the others take its tokenizer files,
  which depend on the SentencePiece model alone: writing them measures transformers' parity on the 8,000
  pieces, some 8 s an export here, most of it building the accent-stripping charsmap.
  """
  root = tmp_path_factory.mktemp("st")
  cases = [(pooling, projection_dim) for pooling in POOLING_MODES for projection_dim in (None, PROJECTION_DIM)]
  models = {case: sentence_encoder(*case, seed=index) for index, case in enumerate(cases)}
  first = cases[-1]
  run = root / "run"
  save_checkpoint(models[first], str(run / "model.ckpt-1"))
  (run / "task.json").write_text(json.dumps({"sentence_embedding": {"pooling": first[0],
                                                                    "projection_dim": first[1]}}))
  CONFIG.to_json_file(str(run / "albert_config.json"))
  folders = {case: root / f"{case[0]}_{case[1]}" for case in cases}
  tool = run_tool("export_hf", f"--albert_config_file={run / 'albert_config.json'}", f"--checkpoint={run}",
                  f"--spm_model_file={SP8K_MODEL}", f"--max_seq_length={MAX_SEQ_LENGTH}",
                  f"--output_dir={folders[first]}")
  assert tool.returncode == 0, tool.stderr
  tokenizer_files = [name for name in os.listdir(folders[first])
                     if name in hf_tokenizer.TOKENIZER_FILES or name.startswith("spiece.")]
  for case in cases[:-1]:
    export_to_hf(models[case], str(folders[case]), max_seq_length=MAX_SEQ_LENGTH)
    for name in tokenizer_files:
      shutil.copyfile(folders[first] / name, folders[case] / name)
  return {case: (models[case], str(folders[case])) for case in cases}, tool.stdout


def test_export_tool_says_the_folder_is_a_sentence_transformers_model(exports):
  folders, stdout = exports
  folder = folders[("max", PROJECTION_DIM)][1]
  assert (f"The folder is also a sentence-transformers model (max pooling, Dense 32→{PROJECTION_DIM} tanh, "
          f"normalised; texts cut to {MAX_SEQ_LENGTH} tokens).") in stdout
  assert f"Load it with: SentenceTransformer({folder!r}).encode(texts)" in stdout
  assert sorted(os.listdir(folder)) == [
      "1_Pooling", "2_Dense", "3_Normalize", "config.json", "config_sentence_transformers.json", "model.safetensors",
      "modules.json", "sentence_bert_config.json", "special_tokens_map.json", "spiece.model",
      "spiece.tokenizer_options.json", "tokenizer.json", "tokenizer_config.json"]


@pytest.mark.parametrize("projection_dim", [None, PROJECTION_DIM], ids=["no_projection", "projection"])
@pytest.mark.parametrize("pooling", POOLING_MODES)
def test_sentence_transformers_computes_our_embedding(exports, pooling, projection_dim):
  model, folder = exports[0][(pooling, projection_dim)]
  ours = our_embeddings(model)
  loaded = sentence_transformers_package().SentenceTransformer(folder, device="cpu")
  assert loaded.max_seq_length == MAX_SEQ_LENGTH
  assert packed_texts()["input_mask"].numpy()[-1].all()  # the review is cut
  theirs = loaded.encode(TEXTS, convert_to_numpy=True)
  assert theirs.shape == (len(TEXTS), projection_dim or CONFIG.hidden_size)
  np.testing.assert_allclose(theirs, ours, atol=1e-5, rtol=0)
  # The round trip: our reading of the folder computes the same.
  np.testing.assert_allclose(hf_folder_embedder(folder)(TEXTS), ours, atol=1e-5, rtol=0)

  modules = json.loads(open(os.path.join(folder, "modules.json"), encoding="utf-8").read())
  expected = ["Transformer", "Pooling"] + ["Dense"] * bool(projection_dim) + ["Normalize"]
  assert [module["type"] for module in modules] == [f"sentence_transformers.models.{kind}" for kind in expected]
  assert modules[0]["path"] == "" and modules[1]["path"] == "1_Pooling"
  pooling_config = json.loads(open(os.path.join(folder, "1_Pooling", "config.json"), encoding="utf-8").read())
  assert pooling_config["word_embedding_dimension"] == CONFIG.hidden_size
  assert [name for name, value in pooling_config.items() if value is True] == [
      {"mean": "pooling_mode_mean_tokens", "cls": "pooling_mode_cls_token", "max": "pooling_mode_max_tokens"}[pooling]]
  # The projection is sentence-transformers' Dense, never a weight of the AlbertModel.
  assert all(name.startswith("albert.") and "projection" not in name
             for name in safetensors_numpy.load_file(os.path.join(folder, "model.safetensors")))
  if projection_dim:
    dense = safetensors_numpy.load_file(os.path.join(folder, "2_Dense", "model.safetensors"))
    np.testing.assert_array_equal(dense["linear.weight"], model.sentence_head.projection.kernel.numpy().T)
    np.testing.assert_array_equal(dense["linear.bias"], model.sentence_head.projection.bias.numpy())


def test_sentence_transformers_equals_our_saved_model(exports, tmp_path):
  model, folder = exports[0][("max", PROJECTION_DIM)]
  path = saved_model.export_saved_model(model, str(tmp_path / "export"), SP8K_MODEL, MAX_SEQ_LENGTH)
  served = saved_model_embedder(path)(TEXTS)
  loaded = sentence_transformers_package().SentenceTransformer(folder, device="cpu")
  theirs = loaded.encode(TEXTS, convert_to_numpy=True)
  np.testing.assert_allclose(theirs, served, atol=1e-5, rtol=0)
  np.testing.assert_allclose(served, our_embeddings(model), atol=1e-5, rtol=0)


def test_hf_folder_embedder_reads_a_folder_sentence_transformers_wrote(exports, tmp_path):
  """sentence-transformers' own layout (5.x types and `pooling_mode`), mean pooling, a Dense without tanh and no
  Normalize, whose embeddings are not unit length: computed as the library computes it."""
  _, folder = exports[0][("mean", None)]
  torch.manual_seed(0)
  package = sentence_transformers_package()
  dense = package.base.modules.Dense(CONFIG.hidden_size, 16, activation_function=torch.nn.Identity())
  written = package.SentenceTransformer(
      modules=[package.base.modules.Transformer(folder, max_seq_length=MAX_SEQ_LENGTH),
               package.sentence_transformer.modules.Pooling(CONFIG.hidden_size, "mean"), dense], device="cpu")
  written.save(str(tmp_path / "st"))
  assert not os.path.exists(tmp_path / "st" / "spiece.model")  # transformers 5 saves tokenizer.json alone
  with pytest.raises(OptionError, match="has no spiece.model: pass the SentencePiece model"):
    hf_folder_embedder(str(tmp_path / "st"))
  embedder = hf_folder_embedder(str(tmp_path / "st"), spm_model_file=SP8K_MODEL)
  assert embedder.sentence_transformers.describe() == "mean pooling, Dense 32→16 linear, not normalised"
  theirs = package.SentenceTransformer(str(tmp_path / "st"), device="cpu").encode(TEXTS, convert_to_numpy=True)
  ours = embedder(TEXTS)
  assert np.abs(np.linalg.norm(theirs, axis=1) - 1).max() > 0.1
  np.testing.assert_allclose(ours, theirs, atol=1e-5, rtol=0)


def test_a_folder_in_a_bucket_reads_as_its_modules_and_weights(exports, bucket):
  model, folder = exports[0][("max", PROJECTION_DIM)]
  for directory, _, names in os.walk(folder):
    for name in names:
      path = os.path.join(directory, name)
      files.copy_file(path, f"{bucket}/st/{os.path.relpath(path, folder)}")
  modules = st_folders.read_sentence_transformers_head(f"{bucket}/st")
  assert modules.describe() == f"max pooling, Dense 32→{PROJECTION_DIM} tanh, normalised"
  assert modules.max_seq_length == MAX_SEQ_LENGTH
  np.testing.assert_array_equal(modules.dense[0].kernel, model.sentence_head.projection.kernel.numpy())
  converted = huggingface.convert_hf_folder(f"{bucket}/st")
  assert converted.spm_model_file == f"{bucket}/st/spiece.model"
  for ours, read in zip(model.encoder.variables, converted.model.variables, strict=True):
    np.testing.assert_array_equal(read.numpy(), ours.numpy(), err_msg=ours.name)


def test_a_folder_without_modules_is_mean_pooled_and_normalised(exports, tmp_path):
  model, folder = exports[0][("mean", None)]
  shutil.copytree(folder, tmp_path / "plain")
  (tmp_path / "plain" / "modules.json").unlink()
  np.testing.assert_allclose(hf_folder_embedder(str(tmp_path / "plain"), MAX_SEQ_LENGTH)(TEXTS),
                             our_embeddings(model), atol=1e-5, rtol=0)


def test_modules_albert_tf_does_not_compute_are_refused(exports, tmp_path):
  _, folder = exports[0][("mean", PROJECTION_DIM)]
  cases = {
      "weightedmean": ("1_Pooling/config.json", {"word_embedding_dimension": 32, "pooling_mode": "weightedmean"},
                       r"pooling weightedmean; albert-tf computes one of mean, cls, max"),
      "two_poolings": ("1_Pooling/config.json", {"pooling_mode_mean_tokens": True, "pooling_mode_max_tokens": True},
                       r"pooling mean \+ max"),
      "relu": ("2_Dense/config.json", {"in_features": 32, "out_features": 24,
                                       "activation_function": "torch.nn.modules.activation.ReLU"},
               r"activation torch.nn.modules.activation.ReLU; albert-tf computes a Dense module with"),
      "shapes": ("2_Dense/config.json", {"in_features": 32, "out_features": 20},
                 r"the Dense weights are .*'linear.weight': \[24, 32\].*its config.json means"),
      "order": ("modules.json", [{"type": "sentence_transformers.models.Transformer", "path": ""},
                                 {"type": "sentence_transformers.models.LayerNorm", "path": "1_LayerNorm"}],
                r"the modules are .*LayerNorm; albert-tf computes a Transformer, a Pooling"),
  }
  for name, (path, values, message) in cases.items():
    shutil.copytree(folder, tmp_path / name)
    (tmp_path / name / path).write_text(json.dumps(values), encoding="utf-8")
    with pytest.raises(DataError, match=message):
      hf_folder_embedder(str(tmp_path / name))


def test_export_refuses_what_sentence_transformers_cannot_hold_before_writing(exports, tmp_path):
  model = exports[0][("cls", None)][0]
  with pytest.raises(OptionError, match="--max_seq_length=65 must be between 3 .* max_position_embeddings=64"):
    export_to_hf(model, str(tmp_path / "long"), max_seq_length=65)
  pretrainer = albert_tf.AlbertPretrainer(CONFIG)
  pretrainer(pretrainer.dummy_inputs())
  with pytest.raises(OptionError, match="--max_seq_length is the length sentence-transformers cuts texts to"):
    export_to_hf(pretrainer, str(tmp_path / "pretrainer"), max_seq_length=32)
  assert not (tmp_path / "long").exists() and not (tmp_path / "pretrainer").exists()
  # Another model into a sentence-transformers folder would leave its modules.json describing the old one: refused
  # even with overwrite, which replaces a model's files, not the modules around them.
  shutil.copytree(exports[0][("cls", None)][1], tmp_path / "st")
  with pytest.raises(OptionError, match="already holds config.json; pass --overwrite"):
    export_to_hf(pretrainer, str(tmp_path / "st"))
  with pytest.raises(OptionError, match="holds a sentence-transformers model"):
    export_to_hf(pretrainer, str(tmp_path / "st"), overwrite=True)
  with_relu = sentence_encoder("cls", PROJECTION_DIM, seed=9)
  with_relu.sentence_head.projection.activation = tf_keras.activations.relu
  with pytest.raises(OptionError, match="projection has the activation 'relu'"):
    export_to_hf(with_relu, str(tmp_path / "relu"))
  assert not (tmp_path / "relu").exists()
