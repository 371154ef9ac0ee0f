"""Conversion from Google's TF1 checkpoints and Hugging Face folders computes what the source computes."""

import os
import re
import sys

import numpy as np
import pytest
import tensorflow as tf

import albert_tf
from albert_tf import files
from albert_tf.errors import CheckpointMismatchError, DataError
from albert_tf.interop import conversion
from albert_tf.interop import huggingface
from albert_tf.interop.hf_weight_files import read_hf_weights, read_safetensors
from albert_tf.interop.huggingface import export_to_hf, hf_state_dict
from albert_tf.modeling.checkpoints import build_model_for_checkpoint, restore_available_parts, save_checkpoint
from albert_tf.modeling.weight_names import named_weights
from albert_tf.text import tokenizer_options as options_lib
from albert_tf.training import pretraining
from tests.conftest import (SP8K_MODEL, damage_checkpoint, padded_batch, randomize, requires_shared, run_tool,
                            tiny_config)

TOLERANCE = 1e-4
OBSERVED_MAX_DIFFS = {}  # printed at the end of the module (pytest -s) for the record


@pytest.fixture(scope="module", autouse=True)
def report_max_diffs():
  yield
  for case, value in sorted(OBSERVED_MAX_DIFFS.items()):
    print(f"max |ours - reference| {case}: {value:.2e}")


def assert_close(case, ours, reference):
  diff = max(float(np.max(np.abs(np.asarray(ours[key]) - reference[key]))) for key in reference)
  OBSERVED_MAX_DIFFS[case] = diff
  assert diff <= TOLERANCE, (case, diff)


# --- Google TF1 checkpoints, written as Google's code names them (albert-anchors §1.1) -------------------

def google_shapes(config, with_heads):
  """Every variable of Google's `AlbertModel` (+ `cls/` heads), written out here, not from weight_names."""
  v, e, h, i = config.vocab_size, config.embedding_size, config.hidden_size, config.intermediate_size
  shapes = {
      "bert/embeddings/word_embeddings": [v, e],
      "bert/embeddings/token_type_embeddings": [config.type_vocab_size, e],
      "bert/embeddings/position_embeddings": [config.max_position_embeddings, e],
      "bert/embeddings/LayerNorm/gamma": [e],
      "bert/embeddings/LayerNorm/beta": [e],
      "bert/pooler/dense/kernel": [h, h],
      "bert/pooler/dense/bias": [h],
  }
  if e != h:
    shapes["bert/encoder/embedding_hidden_mapping_in/kernel"] = [e, h]
    shapes["bert/encoder/embedding_hidden_mapping_in/bias"] = [h]
  for group in range(config.num_hidden_groups):
    for inner in range(config.inner_group_num):
      block = f"bert/encoder/transformer/group_{group}/inner_group_{inner}"
      for dense, width_in, width_out in (("attention_1/self/query", h, h), ("attention_1/self/key", h, h),
                                         ("attention_1/self/value", h, h), ("attention_1/output/dense", h, h),
                                         ("ffn_1/intermediate/dense", h, i),
                                         ("ffn_1/intermediate/output/dense", i, h)):
        shapes[f"{block}/{dense}/kernel"] = [width_in, width_out]
        shapes[f"{block}/{dense}/bias"] = [width_out]
      for layer_norm in ("LayerNorm", "LayerNorm_1"):
        shapes[f"{block}/{layer_norm}/gamma"] = [h]
        shapes[f"{block}/{layer_norm}/beta"] = [h]
  if with_heads:
    shapes.update({
        "cls/predictions/transform/dense/kernel": [h, e],
        "cls/predictions/transform/dense/bias": [e],
        "cls/predictions/transform/LayerNorm/gamma": [e],
        "cls/predictions/transform/LayerNorm/beta": [e],
        "cls/predictions/output_bias": [v],
        "cls/seq_relationship/output_weights": [2, h],
        "cls/seq_relationship/output_bias": [2],
    })
  return shapes


def random_values(shapes, seed=0):
  rng = np.random.default_rng(seed)
  return {name: rng.normal(0.0, 0.3, shape).astype(np.float32) for name, shape in shapes.items()}


def write_google_checkpoint(directory, values, config, scope=""):
  """A TF1 checkpoint as Google's run_pretraining leaves it: weights, Adam slots and global_step."""
  with tf.Graph().as_default():
    for name, value in values.items():
      tf.compat.v1.get_variable(scope + name, initializer=value)
      for slot in ("adam_m", "adam_v"):
        tf.compat.v1.get_variable(f"{scope}{name}/{slot}", initializer=np.zeros_like(value))
    tf.compat.v1.train.get_or_create_global_step()
    with tf.compat.v1.Session() as session:
      session.run(tf.compat.v1.global_variables_initializer())
      prefix = tf.compat.v1.train.Saver().save(session, os.path.join(str(directory), "model.ckpt-best"))
  config.to_json_file(os.path.join(str(directory), "albert_config.json"))
  return prefix


def gelu_tanh(x):
  return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x ** 3)))


def layer_norm(x, w, scope):
  mean, variance = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
  return (x - mean) / np.sqrt(variance + 1e-12) * w[f"{scope}/gamma"] + w[f"{scope}/beta"]


def dense(x, w, scope):
  return x @ w[f"{scope}/kernel"] + w[f"{scope}/bias"]


def softmax(x):
  x = np.exp(x - x.max(-1, keepdims=True))
  return x / x.sum(-1, keepdims=True)


def google_forward(w, config, batch):
  """Google's `AlbertModel` and pretraining heads in float64 NumPy, from the TF1 variables."""
  w = {name: value.astype(np.float64) for name, value in w.items()}
  ids, mask, types, positions = (batch[k].numpy() for k in ("input_word_ids", "input_mask", "input_type_ids",
                                                             "masked_lm_positions"))
  batch_size, seq_length = ids.shape
  heads, head_size = config.num_attention_heads, config.hidden_size // config.num_attention_heads
  x = (w["bert/embeddings/word_embeddings"][ids] + w["bert/embeddings/token_type_embeddings"][types]
       + w["bert/embeddings/position_embeddings"][:seq_length])
  x = layer_norm(x, w, "bert/embeddings/LayerNorm")
  if "bert/encoder/embedding_hidden_mapping_in/kernel" in w:
    x = dense(x, w, "bert/encoder/embedding_hidden_mapping_in")
  adder = (1.0 - mask[:, None, None, :]) * -10000.0

  def split_heads(t):
    return t.reshape(batch_size, seq_length, heads, head_size).transpose(0, 2, 1, 3)

  for layer in range(config.num_hidden_layers):
    group = int(layer / config.num_hidden_layers * config.num_hidden_groups)
    for inner in range(config.inner_group_num):
      block = f"bert/encoder/transformer/group_{group}/inner_group_{inner}"
      q, k, v = (split_heads(dense(x, w, f"{block}/attention_1/self/{name}"))
                 for name in ("query", "key", "value"))
      probs = softmax(q @ k.transpose(0, 1, 3, 2) / np.sqrt(head_size) + adder)
      context = (probs @ v).transpose(0, 2, 1, 3).reshape(batch_size, seq_length, -1)
      attention = layer_norm(dense(context, w, f"{block}/attention_1/output/dense") + x, w,
                             f"{block}/LayerNorm")
      ffn = dense(gelu_tanh(dense(attention, w, f"{block}/ffn_1/intermediate/dense")), w,
                  f"{block}/ffn_1/intermediate/output/dense")
      x = layer_norm(ffn + attention, w, f"{block}/LayerNorm_1")
  pooled = np.tanh(dense(x[:, 0], w, "bert/pooler/dense"))
  outputs = {"sequence_output": x, "pooled_output": pooled}
  if "cls/predictions/output_bias" in w:
    selected = np.take_along_axis(x, positions[:, :, None], axis=1)
    transformed = layer_norm(gelu_tanh(dense(selected, w, "cls/predictions/transform/dense")), w,
                             "cls/predictions/transform/LayerNorm")
    outputs["mlm_logits"] = (transformed @ w["bert/embeddings/word_embeddings"].T
                             + w["cls/predictions/output_bias"])
    outputs["sop_logits"] = (pooled @ w["cls/seq_relationship/output_weights"].T
                             + w["cls/seq_relationship/output_bias"])
  return outputs


def our_outputs(model, batch):
  encoder = getattr(model, "encoder", model)
  outputs = dict(encoder(batch))
  if encoder is not model:
    outputs.update(model(batch))
  return {key: value.numpy() for key, value in outputs.items() if key != "encoder_outputs"}


GOOGLE_CASES = {
    "factorized_2_groups_2_inner_with_heads": (dict(num_hidden_groups=2, inner_group_num=2), True, ""),
    "embedding_equals_hidden_encoder_only": (dict(embedding_size=32), False, ""),
    "tf_hub_module_prefix": (dict(), True, "module/"),
}


@pytest.mark.parametrize("case", sorted(GOOGLE_CASES))
def test_google_checkpoint_computes_what_googles_model_computes(tmp_path, case):
  overrides, with_heads, scope = GOOGLE_CASES[case]
  config = tiny_config(**overrides)
  values = random_values(google_shapes(config, with_heads))
  write_google_checkpoint(tmp_path / "google", values, config, scope)
  result, paths = conversion.convert("google", str(tmp_path / "google"), str(tmp_path / "out"))

  assert result.parts == (["encoder", "masked-LM head", "sentence-order head"] if with_heads else ["encoder"])
  assert result.num_tensors == len(values)
  assert result.ignored == {"global_step": 1, "optimizer slots": 2 * len(values)}
  batch = padded_batch(config.vocab_size)
  assert_close(f"google {case}", our_outputs(result.model, batch), google_forward(values, config, batch))
  # The written checkpoint restores to the same model.
  restored, _ = build_model_for_checkpoint(albert_tf.AlbertConfig.from_json_file(paths["albert_config.json"]),
                                           str(tmp_path / "out"))
  for ours, theirs in zip(restored.variables, result.model.variables):
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


# Hugging Face's own TF1 -> PyTorch renaming (`load_tf_weights_in_albert`, albert-anchors §3.3).
HF_REWRITES = (
    ("module/", ""), ("ffn_1", "ffn"), ("bert/", "albert/"), ("attention_1", "attention"), ("transform/", ""),
    ("LayerNorm_1", "full_layer_layer_norm"), ("LayerNorm", "attention/LayerNorm"), ("transformer/", ""),
    ("intermediate/dense/", ""), ("ffn/intermediate/output/dense/", "ffn_output/"), ("/output/", "/"),
    ("/self/", "/"), ("pooler/dense", "pooler"), ("cls/predictions", "predictions"),
    ("predictions/attention", "predictions"), ("embeddings/attention", "embeddings"),
    ("inner_group_", "albert_layers/"), ("group_", "albert_layer_groups/"),
    ("seq_relationship/output_", "sop_classifier/classifier/"))
HF_LAST_PARTS = {"kernel": "weight", "gamma": "weight", "weights": "weight", "beta": "bias",
                 "output_bias": "bias"}


def hf_name_of_google(name):
  for old, new in HF_REWRITES:
    name = name.replace(old, new)
  parts = [part for part in name.split("/") if part != "cls"]
  if parts[-1].endswith("_embeddings"):
    parts.append("weight")
  parts[-1] = HF_LAST_PARTS.get(parts[-1], parts[-1])
  return ".".join(parts)


@pytest.mark.parametrize("case", ["factorized_2_groups_2_inner_with_heads",
                                  "embedding_equals_hidden_encoder_only"])
def test_google_to_ours_to_hugging_face_keeps_every_tensor(tmp_path, case):
  overrides, with_heads, scope = GOOGLE_CASES[case]
  config = tiny_config(**overrides)
  values = random_values(google_shapes(config, with_heads), seed=3)
  write_google_checkpoint(tmp_path, values, config, scope)
  tensors = hf_state_dict(conversion.convert_google_checkpoint(str(tmp_path)).model)
  expected = {hf_name_of_google(name): value.T if name.endswith("kernel") else value
              for name, value in values.items()}
  if config.embedding_size == config.hidden_size:
    expected["albert.encoder.embedding_hidden_mapping_in.weight"] = np.eye(config.hidden_size)
    expected["albert.encoder.embedding_hidden_mapping_in.bias"] = np.zeros(config.hidden_size)
  assert sorted(tensors) == sorted(expected)
  for name, value in expected.items():
    np.testing.assert_array_equal(tensors[name], value, err_msg=name)


def google_problem(values, config):
  """A checkpoint with one thing wrong, by case: (values, config, name the message must show)."""
  return {
      "unmapped_fine_tuning_head": (dict(values, output_weights=np.zeros([3, 32], np.float32),
                                         **{"layer_normalization_3/gamma": np.ones([32], np.float32)}),
                                    config, "output_weights [3, 32]"),
      "missing_variable": ({k: v for k, v in values.items() if not k.endswith("group_0/LayerNorm_1/beta")},
                           config, "bert/encoder/transformer/group_0/inner_group_0/LayerNorm_1/beta [32]"),
      "other_intermediate_size": (values, tiny_config(intermediate_size=40),
                                  "ffn_1/intermediate/dense/kernel: source [32, 37] vs model [32, 40]"),
  }


@pytest.mark.parametrize("case", ["unmapped_fine_tuning_head", "missing_variable", "other_intermediate_size"])
def test_google_checkpoint_that_does_not_fit_is_reported_and_nothing_written(tmp_path, case):
  config = tiny_config()
  values, albert_config, expected = google_problem(random_values(google_shapes(config, True)), config)[case]
  write_google_checkpoint(tmp_path / "google", values, albert_config)
  with pytest.raises(CheckpointMismatchError) as error:
    conversion.convert("google", str(tmp_path / "google"), str(tmp_path / "out"))
  message = str(error.value)
  assert expected in message and "Nothing was written" in message and "albert_config.json match" in message
  if case == "unmapped_fine_tuning_head":
    assert "layer_normalization_3/gamma [32]" in message
  assert not (tmp_path / "out").exists()


def test_missing_sources_and_existing_output_are_refused(tmp_path):
  with pytest.raises(FileNotFoundError, match="No checkpoint found in directory"):
    conversion.convert("google", str(tmp_path), str(tmp_path / "out"))
  values = random_values(google_shapes(tiny_config(), False))
  write_google_checkpoint(tmp_path / "google", values, tiny_config())
  os.remove(tmp_path / "google" / "albert_config.json")
  with pytest.raises(FileNotFoundError, match="albert_config.json .*--albert_config_file"):
    conversion.convert("google", str(tmp_path / "google"), str(tmp_path / "out"))
  with pytest.raises(FileNotFoundError, match="config.json"):
    conversion.convert("hf", str(tmp_path), str(tmp_path / "out"))
  tiny_config().to_json_file(str(tmp_path / "config.json"))
  with pytest.raises(FileNotFoundError, match="No weights in .*model.safetensors"):
    conversion.convert("hf", str(tmp_path), str(tmp_path / "out"))
  assert not (tmp_path / "out").exists()
  (tmp_path / "out").mkdir()
  (tmp_path / "out" / "model.ckpt.index").write_bytes(b"kept")
  with pytest.raises(ValueError, match="already holds model.ckpt"):
    conversion.convert("google", str(tmp_path / "google"), str(tmp_path / "out"),
                       albert_config_file=str(tmp_path / "config.json"))
  assert (tmp_path / "out" / "model.ckpt.index").read_bytes() == b"kept"


def test_corrupt_sources_are_one_error_line_naming_the_file(tmp_path):
  random_bytes = np.random.default_rng(0).integers(0, 256, 5000, dtype=np.uint8).tobytes()
  encoder = albert_tf.AlbertEncoder(tiny_config())
  encoder(encoder.dummy_inputs())
  export_to_hf(encoder, str(tmp_path / "hf"))
  weights = tmp_path / "hf" / "model.safetensors"
  weights.write_bytes(weights.read_bytes()[:-100])  # a download cut short
  with pytest.raises(DataError, match=f"^{re.escape(str(weights))}: .* the file is cut short or corrupt"):
    read_safetensors(str(weights))
  weights.write_bytes(random_bytes)  # its first 8 bytes, the header's size, are garbage too
  (tmp_path / "google").mkdir()
  tiny_config().to_json_file(str(tmp_path / "google" / "albert_config.json"))
  for name in ("model.ckpt.index", "model.ckpt.data-00000-of-00001"):
    (tmp_path / "google" / name).write_bytes(random_bytes)
  for source_format, message in (
      ("hf", f"error: {weights}: not a safetensors file, or cut short (the header its first 8 bytes announce does "
             "not fit in its 5000 bytes)."),
      ("google", f"error: Checkpoint {tmp_path / 'google' / 'model.ckpt'} cannot be read: its files are truncated "
                 "or corrupt (not an sstable (bad magic number)).")):
    result = run_tool("convert_checkpoint", f"--source_format={source_format}",
                      f"--source={tmp_path / source_format}", f"--output_dir={tmp_path / 'out'}")
    assert result.returncode == 2
    assert result.stderr.splitlines()[-1].startswith(message)
    assert not (tmp_path / "out").exists()
  prefix = write_google_checkpoint(tmp_path / "cut", random_values(google_shapes(tiny_config(), False)), tiny_config())
  damage_checkpoint(prefix, "data cut")
  with pytest.raises(DataError, match=f"^Checkpoint {re.escape(prefix)} cannot be read: its files are truncated"):
    conversion.convert("google", str(tmp_path / "cut"), str(tmp_path / "out"))
  assert not (tmp_path / "out").exists()
  # A sharded index that is not JSON, and a pytorch_model.bin that is not torch's.
  (tmp_path / "sharded").mkdir()
  (tmp_path / "sharded" / "model.safetensors.index.json").write_text('{"weight_map": {"a": "b",}}')
  with pytest.raises(DataError, match=r"model\.safetensors\.index\.json: not valid JSON \(Expecting property name "
                                      r"enclosed in double quotes at line 1, column 26\)\.$"):
    read_hf_weights(str(tmp_path / "sharded"))
  (tmp_path / "torch").mkdir()
  (tmp_path / "torch" / "pytorch_model.bin").write_bytes(random_bytes)
  with pytest.raises(DataError, match=r"pytorch_model\.bin: not a PyTorch weights file, or cut short \("):
    read_hf_weights(str(tmp_path / "torch"))


def test_pytorch_weights_without_pytorch_installed_are_a_clear_error(tmp_path, monkeypatch):
  tiny_config().to_json_file(str(tmp_path / "config.json"))
  (tmp_path / "pytorch_model.bin").write_bytes(b"")
  monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` now raises ImportError
  with pytest.raises(ValueError, match="pytorch_model.bin needs PyTorch"):
    huggingface.convert_hf_folder(str(tmp_path))


# --- Hugging Face folders ----------------------------------------------------------------------------------

def hf_model(architecture, hidden_act="gelu_new", embedding_size=16, seed=0):
  """A random tiny transformers ALBERT, every weight drawn wide enough for parity to see it."""
  import transformers
  import torch
  torch.manual_seed(seed)
  config = transformers.AlbertConfig(
      vocab_size=120, hidden_size=32, num_hidden_layers=4, num_attention_heads=4, intermediate_size=37,
      embedding_size=embedding_size, max_position_embeddings=64, hidden_act=hidden_act, num_hidden_groups=2)
  model = getattr(transformers, architecture)(config)
  with torch.no_grad():
    for parameter in model.parameters():
      parameter.normal_(0.0, 0.3)
  return model.eval()


def hf_outputs(model, batch):
  import torch
  names = {"input_ids": "input_word_ids", "attention_mask": "input_mask", "token_type_ids": "input_type_ids"}
  inputs = {name: torch.tensor(batch[key].numpy(), dtype=torch.long) for name, key in names.items()}
  positions = batch["masked_lm_positions"].numpy()[:, :, None]
  with torch.no_grad():
    out = model(**inputs, output_hidden_states=True)
    outputs = {"sequence_output": out.hidden_states[-1].numpy()}
    if hasattr(out, "pooler_output"):
      outputs["pooled_output"] = out.pooler_output.numpy()
    elif hasattr(out, "sop_logits"):
      outputs["pooled_output"] = model.albert(**inputs).pooler_output.numpy()
      outputs["sop_logits"] = out.sop_logits.numpy()
    logits = getattr(out, "prediction_logits", getattr(out, "logits", None))
    if logits is not None:
      outputs["mlm_logits"] = np.take_along_axis(logits.numpy(), positions, axis=1)
  return outputs


HF_CASES = {
    "pretraining_gelu_new_safetensors": ("AlbertForPreTraining", "gelu_new", 16, "safetensors"),
    "pretraining_exact_gelu_pytorch_bin": ("AlbertForPreTraining", "gelu", 16, "pytorch_model.bin"),
    "masked_lm_sharded_safetensors": ("AlbertForMaskedLM", "gelu_new", 16, "sharded"),
    "bare_model_embedding_equals_hidden": ("AlbertModel", "gelu_new", 32, "safetensors"),
}


def save_hf(model, folder, weights_format):
  import torch
  if model.config.embedding_size == model.config.hidden_size:  # as albert-tf and Google: no projection
    with torch.no_grad():
      model.encoder.embedding_hidden_mapping_in.weight.copy_(torch.eye(model.config.hidden_size))
      model.encoder.embedding_hidden_mapping_in.bias.zero_()
  if weights_format == "pytorch_model.bin":  # transformers 5 writes safetensors only; older ones wrote this
    model.config.save_pretrained(folder)
    torch.save(model.state_dict(), os.path.join(folder, "pytorch_model.bin"))
  else:
    model.save_pretrained(folder, max_shard_size="40KB" if weights_format == "sharded" else "5GB")


@pytest.mark.parametrize("case", sorted(HF_CASES))
def test_hugging_face_folder_computes_what_transformers_computes(tmp_path, case):
  architecture, hidden_act, embedding_size, weights_format = HF_CASES[case]
  model = hf_model(architecture, hidden_act, embedding_size)
  save_hf(model, str(tmp_path), weights_format)
  if weights_format == "sharded":
    assert (tmp_path / "model.safetensors.index.json").exists()
  result = huggingface.convert_hf_folder(str(tmp_path))
  config = result.model.config
  assert config.hidden_act == ("gelu_exact" if hidden_act == "gelu" else "gelu") and not config.extra
  expected_parts = {"AlbertForPreTraining": ["encoder", "masked-LM head", "sentence-order head"],
                    "AlbertForMaskedLM": ["encoder", "masked-LM head"], "AlbertModel": ["encoder"]}
  assert result.parts == expected_parts[architecture]
  batch = padded_batch(config.vocab_size)
  assert_close(f"hf {case}", our_outputs(result.model, batch), hf_outputs(model, batch))
  if architecture == "AlbertForMaskedLM":
    assert any("no pooler" in note for note in result.notes)
  if weights_format == "pytorch_model.bin":
    assert result.ignored["tied decoder copies"] == 2


def test_hugging_face_problems_are_all_reported(tmp_path):
  import torch
  import transformers
  model = hf_model("AlbertModel", embedding_size=32)
  model.save_pretrained(str(tmp_path))  # E == H with a trained (random) projection
  with pytest.raises(CheckpointMismatchError, match="embedding_hidden_mapping_in: with embedding_size == "):
    huggingface.convert_hf_folder(str(tmp_path))
  classifier = transformers.AlbertForSequenceClassification(model.config)
  with torch.no_grad():
    classifier.albert.encoder.embedding_hidden_mapping_in.weight.copy_(torch.eye(32))
    classifier.albert.encoder.embedding_hidden_mapping_in.bias.zero_()
  classifier.save_pretrained(str(tmp_path))
  with pytest.raises(CheckpointMismatchError) as error:
    conversion.convert("hf", str(tmp_path), str(tmp_path / "out"))
  assert "classifier.weight [2, 32]" in str(error.value) and "classifier.bias [2]" in str(error.value)
  assert not (tmp_path / "out").exists()


def test_safetensors_reader_widens_half_precision_and_keeps_integers(tmp_path):
  import torch
  from safetensors import torch as safetensors_torch
  values = torch.tensor([[1.5, -2.25, 3.0e-3], [65504.0, -0.0, 7.0]])
  tensors = {"bf16": values.to(torch.bfloat16), "f16": values.to(torch.float16), "f32": values,
             "i64": torch.arange(6, dtype=torch.int64).reshape(2, 3)}
  safetensors_torch.save_file(tensors, str(tmp_path / "model.safetensors"))
  read = read_safetensors(str(tmp_path / "model.safetensors"))
  for name, tensor in tensors.items():
    expected = tensor.float().numpy() if tensor.is_floating_point() else tensor.numpy()
    assert read[name].dtype == expected.dtype
    np.testing.assert_array_equal(read[name], expected, err_msg=name)


OURS_CASES = {
    "pretrainer_factorized": dict(config=dict(), with_sentence_order_head=True),
    "masked_lm_embedding_equals_hidden": dict(config=dict(embedding_size=32, num_hidden_groups=2),
                                              with_sentence_order_head=False),
    "encoder": dict(config=dict(inner_group_num=2), with_sentence_order_head=None),
}


@pytest.mark.parametrize("case", sorted(OURS_CASES))
def test_ours_to_hugging_face_to_ours_keeps_every_weight(tmp_path, case):
  spec = OURS_CASES[case]
  config = tiny_config(**spec["config"])
  if spec["with_sentence_order_head"] is None:
    model = albert_tf.AlbertEncoder(config)
  else:
    model = albert_tf.AlbertPretrainer(config, with_sentence_order_head=spec["with_sentence_order_head"])
  model(model.dummy_inputs())
  randomize(model)
  export_to_hf(model, str(tmp_path))
  converted = huggingface.convert_hf_folder(str(tmp_path)).model
  assert type(converted) is type(model) and converted.get_config() == model.get_config()
  originals = named_weights(model)
  assert [names for names, _ in named_weights(converted)] == [names for names, _ in originals]
  for (names, ours), (_, theirs) in zip(named_weights(converted), originals):
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy(), err_msg=names.hf)


def test_masked_lm_only_pretrainer_exports_as_albert_for_masked_lm(tmp_path):
  import transformers
  model = albert_tf.AlbertPretrainer(tiny_config(), with_sentence_order_head=False)
  assert set(model(model.dummy_inputs())) == {"mlm_logits"} and model.sentence_order_head is None
  assert albert_tf.AlbertPretrainer.from_config(model.get_config()).sentence_order_head is None
  export_to_hf(model, str(tmp_path))
  loaded, info = transformers.AlbertForMaskedLM.from_pretrained(str(tmp_path), output_loading_info=True)
  assert loaded.config.architectures == ["AlbertForMaskedLM"]
  assert not info["missing_keys"] and not info["mismatched_keys"]


def test_build_model_for_checkpoint_builds_what_the_checkpoint_holds(tmp_path):
  config = tiny_config()
  for name, model in (("encoder", albert_tf.AlbertEncoder(config)),
                      ("masked_lm", albert_tf.AlbertPretrainer(config, with_sentence_order_head=False)),
                      ("full", albert_tf.AlbertPretrainer(config))):
    model(model.dummy_inputs())
    randomize(model)
    save_checkpoint(model, str(tmp_path / name / "model.ckpt"))
    restored, _ = build_model_for_checkpoint(config, str(tmp_path / name))
    assert type(restored) is type(model) and restored.get_config() == model.get_config()
    for ours, theirs in zip(restored.variables, model.variables):
      np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


# --- The tool, and pretraining from a converted checkpoint ------------------------------------------------

@requires_shared(SP8K_MODEL)
@pytest.mark.parametrize("where", ["local", "bucket"])
def test_tool_converts_googles_release_layout_and_refuses_to_overwrite(tmp_path, bucket, where):
  config = tiny_config(vocab_size=8000)
  values = random_values(google_shapes(config, True))
  root = str(tmp_path) if where == "local" else bucket
  write_google_checkpoint(f"{root}/albert_base", values, config)
  files.copy_file(SP8K_MODEL, f"{root}/albert_base/30k-clean.model")
  out = f"{root}/out"
  flags = ["--source_format=google", f"--source={root}/albert_base", f"--output_dir={out}"]
  (tmp_path / "work").mkdir()
  result = run_tool("convert_checkpoint", *flags, cwd=tmp_path / "work")
  assert result.returncode == 0, result.stderr
  assert f"encoder, masked-LM head, sentence-order head ({len(values)} tensors)" in result.stdout
  assert f"Ignored: 1 global_step, {2 * len(values)} optimizer slots." in result.stdout
  assert files.list_folder(out) == ["albert_config.json", "checkpoint", "model.ckpt.data-00000-of-00001",
                                    "model.ckpt.index", "spiece.model", "spiece.tokenizer_options.json"]
  assert os.listdir(tmp_path / "work") == []
  # Google's release has no record of its options: its defaults are recorded, and said to be.
  assert ("Tokenizer options --do_lower_case=true --keep_accents=false (from Google's defaults), recorded beside "
          "spiece.model") in result.stdout
  assert options_lib.read_options(f"{out}/spiece.model") == options_lib.TokenizerOptions()
  written_config = albert_tf.AlbertConfig.from_json_file(f"{out}/albert_config.json")
  model, _ = build_model_for_checkpoint(written_config, out)
  query = "bert/encoder/transformer/group_0/inner_group_0/attention_1/self/query/kernel"
  np.testing.assert_array_equal(model.encoder.groups[0][0].query.kernel.numpy(), values[query])
  np.testing.assert_array_equal(model.masked_lm_head.output_bias.numpy(),
                                values["cls/predictions/output_bias"])

  again = run_tool("convert_checkpoint", *flags)
  assert again.returncode == 2 and "error: " in again.stderr and "already holds model.ckpt" in again.stderr
  assert "Traceback" not in again.stderr


def write_pretraining_record(path, seq_length, predictions):
  ints = lambda values: tf.train.Feature(int64_list=tf.train.Int64List(value=values))
  features = {"input_ids": ints([5] * seq_length), "input_mask": ints([1] * seq_length),
              "segment_ids": ints([0] * seq_length), "masked_lm_positions": ints([1] * predictions),
              "masked_lm_ids": ints([6] * predictions), "next_sentence_labels": ints([0]),
              "masked_lm_weights": tf.train.Feature(float_list=tf.train.FloatList(value=[1.0] * predictions))}
  with tf.io.TFRecordWriter(str(path)) as writer:
    writer.write(tf.train.Example(features=tf.train.Features(feature=features)).SerializeToString())


@pytest.mark.parametrize("source", ["encoder", "masked_lm"])
def test_pretraining_init_from_a_checkpoint_without_heads_says_which_start_fresh(tmp_path, capsys, source):
  config = tiny_config()
  model = (albert_tf.AlbertEncoder(config) if source == "encoder"
           else albert_tf.AlbertPretrainer(config, with_sentence_order_head=False))
  model(model.dummy_inputs())
  randomize(model)
  save_checkpoint(model, str(tmp_path / "init" / "model.ckpt"))
  write_pretraining_record(tmp_path / "train.tfrecord", 16, 2)
  options = pretraining.PretrainingOptions(
      input_file=str(tmp_path / "train.tfrecord"), output_dir=str(tmp_path / "run"), albert_config=config,
      init_checkpoint=str(tmp_path / "init"), max_seq_length=16, max_predictions_per_seq=2,
      train_batch_size=2)
  run = pretraining.Pretraining(options, tf.distribute.OneDeviceStrategy("/cpu:0"))
  stderr = capsys.readouterr().err
  if source == "encoder":
    assert "Initialised the encoder from" in stderr
    assert "fresh initialisation: the masked-LM head and the sentence-order head." in stderr
  else:
    assert "Initialised the encoder and the masked-LM head from" in stderr
    assert "fresh initialisation: the sentence-order head." in stderr
    np.testing.assert_array_equal(run.model.masked_lm_head.output_bias.numpy(),
                                  model.masked_lm_head.output_bias.numpy())
  encoder = getattr(model, "encoder", model)
  np.testing.assert_array_equal(run.model.encoder.pooler.kernel.numpy(), encoder.pooler.kernel.numpy())


def test_init_with_a_mismatch_inside_the_parts_present_restores_nothing(tmp_path):
  source = albert_tf.AlbertEncoder(tiny_config(intermediate_size=40))
  source(source.dummy_inputs())
  save_checkpoint(source, str(tmp_path / "model.ckpt"))
  target = albert_tf.AlbertPretrainer(tiny_config())
  target(target.dummy_inputs())
  before = [v.numpy().copy() for v in target.variables]
  with pytest.raises(CheckpointMismatchError, match=r"intermediate/kernel: model \[32, 37\] vs checkpoint"):
    restore_available_parts(target, str(tmp_path))
  for value, variable in zip(before, target.variables):
    np.testing.assert_array_equal(value, variable.numpy())


@pytest.mark.parametrize("where", ["local", "bucket"])
def test_tool_converts_a_hugging_face_folder(tmp_path, bucket, monkeypatch, where):
  """On local disk, and from a folder in a bucket to a folder in a bucket: published whole, the checkpoint's index
  last, with nothing written to local disk instead."""
  model = hf_model("AlbertForPreTraining")
  model.save_pretrained(str(tmp_path / "hf"))
  root = str(tmp_path) if where == "local" else bucket
  if where == "bucket":
    for name in os.listdir(tmp_path / "hf"):
      files.copy_file(str(tmp_path / "hf" / name), f"{bucket}/hf/{name}")
  written = []
  write = files.write_atomically
  monkeypatch.setattr(files, "write_atomically", lambda path, content: written.append(path) or write(path, content))
  (tmp_path / "work").mkdir()
  out = f"{root}/out"
  flags = ["--source_format=hf", f"--source={root}/hf", f"--output_dir={out}"]
  result = run_tool("convert_checkpoint", *flags, cwd=tmp_path / "work")
  assert result.returncode == 0, result.stderr
  assert "encoder, masked-LM head, sentence-order head" in result.stdout
  names = ["albert_config.json", "checkpoint", "model.ckpt.data-00000-of-00001", "model.ckpt.index"]
  assert files.list_folder(out) == names and os.listdir(tmp_path / "work") == []
  if where == "bucket":
    uploaded = [path for path in written if path.startswith(bucket)]
    assert sorted(uploaded) == [f"{out}/{name}" for name in names] and uploaded[-1] == f"{out}/model.ckpt.index"
  with files.local_copy(out) as local_out:
    # The `checkpoint` file names the checkpoint relative to its folder, wherever the folder was written or copied.
    assert tf.train.latest_checkpoint(local_out) == os.path.join(local_out, "model.ckpt")
    config = albert_tf.AlbertConfig.from_json_file(os.path.join(local_out, "albert_config.json"))
    converted, _ = build_model_for_checkpoint(config, local_out)
  assert (config.num_hidden_groups, config.embedding_size, config.vocab_size) == (2, 16, 120)
  batch = padded_batch(config.vocab_size)
  assert_close(f"hf tool ({where})", our_outputs(converted, batch), hf_outputs(model, batch))
  again = run_tool("convert_checkpoint", *flags)
  assert again.returncode == 2 and "already holds model.ckpt" in again.stderr and "Traceback" not in again.stderr


def google_squad_v2_head(values, sequence_output, p_mask):
  """Google's `create_v2_model` start log-probabilities and no-answer logit in NumPy (all tokens' vectors)."""
  w = {name: value.astype(np.float64) for name, value in values.items()}
  start_logits = (sequence_output @ w["start_logits/dense/kernel"] + w["start_logits/dense/bias"])[..., 0]
  start_logits = start_logits * (1 - p_mask) - 1e30 * p_mask
  start_log_probs = start_logits - np.log(np.exp(start_logits - start_logits.max(-1, keepdims=True)).sum(
      -1, keepdims=True)) - start_logits.max(-1, keepdims=True)
  start_summary = np.einsum("bsh,bs->bh", sequence_output, softmax(start_logits))
  features = np.tanh(dense(np.concatenate([start_summary, sequence_output[:, 0]], -1), w, "answer_class/dense_0"))
  return start_log_probs, (features @ w["answer_class/dense_1/kernel"])[:, 0]


@pytest.mark.parametrize("version", [1, 2])
def test_google_squad_checkpoint_converts_to_our_question_answerer(tmp_path, version):
  config = tiny_config()
  shapes = google_shapes(config, with_heads=False)
  h = config.hidden_size
  if version == 1:  # run_squad_v1.py's head
    shapes.update({"cls/squad/output_weights": [2, h], "cls/squad/output_bias": [2]})
  else:  # run_squad_v2.py's XLNet-style head
    shapes.update({"start_logits/dense/kernel": [h, 1], "start_logits/dense/bias": [1],
                   "end_logits/dense_0/kernel": [2 * h, h], "end_logits/dense_0/bias": [h],
                   "end_logits/LayerNorm/gamma": [h], "end_logits/LayerNorm/beta": [h],
                   "end_logits/dense_1/kernel": [h, 1], "end_logits/dense_1/bias": [1],
                   "answer_class/dense_0/kernel": [2 * h, h], "answer_class/dense_0/bias": [h],
                   "answer_class/dense_1/kernel": [h, 1]})
  values = random_values(shapes, seed=version)
  write_google_checkpoint(tmp_path / "google", values, config)
  result, _ = conversion.convert("google", str(tmp_path / "google"), str(tmp_path / "out"))
  assert result.parts == ["encoder", "SQuAD v1 head" if version == 1 else "SQuAD v2 head"]
  assert result.num_tensors == len(values)
  batch = padded_batch(config.vocab_size)
  sequence_output = google_forward(values, config, batch)["sequence_output"]
  if version == 1:
    logits = sequence_output @ values["cls/squad/output_weights"].T.astype(np.float64) + values["cls/squad/output_bias"]
    ours = result.model(batch)
    assert_close("google squad v1", {"start": ours["start_logits"], "end": ours["end_logits"]},
                 {"start": logits[..., 0], "end": logits[..., 1]})
  else:
    p_mask = (batch["input_type_ids"].numpy() == 0).astype(np.float64)
    p_mask[:, 0] = 0
    expected_start, expected_no_answer = google_squad_v2_head(values, sequence_output, p_mask)
    inputs = dict(batch, p_mask=tf.constant(p_mask, tf.int32), start_positions=tf.zeros([3], tf.int32))
    ours = result.model(inputs)
    assert_close("google squad v2", {"start": np.where(p_mask > 0, 0, ours["start_log_probs"]),
                                     "no_answer": ours["cls_logits"]},
                 {"start": np.where(p_mask > 0, 0, expected_start), "no_answer": expected_no_answer})
  restored, _ = build_model_for_checkpoint(config, str(tmp_path / "out"))
  assert type(restored) is type(result.model)
