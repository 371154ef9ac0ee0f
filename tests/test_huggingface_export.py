"""The exported folder loads in transformers and computes what our model computes."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from safetensors import numpy as safetensors_numpy
import torch
import transformers

import albert_tf
from albert_tf.interop.huggingface import export_to_hf
from albert_tf.modeling.checkpoints import build_model_for_checkpoint, save_checkpoint
from albert_tf.text.tokenizer import SentencePieceTokenizer
from conftest import REPO, SHARED, SP8K_MODEL, padded_batch, randomize, requires_shared, tiny_config

SHAPES = {
    "factorized": dict(embedding_size=16),
    "embedding_equals_hidden": dict(embedding_size=32),
    "two_groups": dict(num_hidden_groups=2),
    "two_inner_groups": dict(inner_group_num=2),
    "groups_and_inner_groups_relu": dict(num_hidden_groups=2, inner_group_num=2, hidden_act="relu"),
    "exact_gelu": dict(hidden_act="gelu_exact"),
}


def torch_inputs(batch):
  """Our padded batch as transformers' keyword inputs."""
  return {name: torch.tensor(batch[key].numpy(), dtype=torch.long) for name, key in (
      ("input_ids", "input_word_ids"), ("attention_mask", "input_mask"), ("token_type_ids", "input_type_ids"))}


def hf_logits(hf_model, batch):
  hf_model.eval()
  with torch.no_grad():
    return hf_model(**torch_inputs(batch)).logits.numpy()


def hf_outputs(folder, batch):
  model, info = transformers.AlbertForPreTraining.from_pretrained(folder, output_loading_info=True)
  assert not info["missing_keys"] and not info["unexpected_keys"] and not info["mismatched_keys"]
  model.eval()
  with torch.no_grad():
    out = model(**torch_inputs(batch), output_hidden_states=True)
    base = model.albert(**torch_inputs(batch))
  positions = batch["masked_lm_positions"].numpy()
  return {"sequence_output": out.hidden_states[-1].numpy(), "pooled_output": base.pooler_output.numpy(),
          "mlm_logits": np.take_along_axis(out.prediction_logits.numpy(), positions[:, :, None], axis=1),
          "sop_logits": out.sop_logits.numpy()}


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_hugging_face_outputs_equal_ours(tmp_path, shape):
  config = tiny_config(**SHAPES[shape])
  model = albert_tf.AlbertPretrainer(config)
  batch = padded_batch(config.vocab_size)
  model(batch)
  randomize(model)
  ours = dict(model(batch))
  ours.update(model.encoder(batch))
  export_to_hf(model, str(tmp_path))
  theirs = hf_outputs(str(tmp_path), batch)
  for key, value in theirs.items():
    np.testing.assert_allclose(value, ours[key], atol=1e-4, rtol=0, err_msg=key)


def test_safetensors_file_and_config(tmp_path):
  model = albert_tf.AlbertPretrainer(tiny_config())
  model(model.dummy_inputs())
  export_to_hf(model, str(tmp_path))
  from safetensors import safe_open
  with safe_open(str(tmp_path / "model.safetensors"), framework="numpy") as reader:
    assert reader.metadata() == {"format": "pt"}
    assert len(reader.keys()) == 32  # transformers' own save_pretrained writes the same 32 keys
  tensors = safetensors_numpy.load_file(str(tmp_path / "model.safetensors"))
  kernel = model.encoder.groups[0][0].query.kernel.numpy()
  np.testing.assert_array_equal(
      tensors["albert.encoder.albert_layer_groups.0.albert_layers.0.attention.query.weight"], kernel.T)
  config = json.loads((tmp_path / "config.json").read_text())
  assert config["model_type"] == "albert" and config["hidden_act"] == "gelu_new"
  assert (config["pad_token_id"], config["bos_token_id"], config["eos_token_id"]) == (0, 2, 3)
  assert config["embedding_size"] == 16 and config["num_hidden_groups"] == 1


def test_albert_model_loads_backbone_without_missing_weights(tmp_path):
  model = albert_tf.AlbertPretrainer(tiny_config())
  model(model.dummy_inputs())
  export_to_hf(model, str(tmp_path))
  _, info = transformers.AlbertModel.from_pretrained(str(tmp_path), output_loading_info=True)
  assert not info["missing_keys"] and not info["mismatched_keys"]
  # Only the pretraining heads are left over, exactly as for a folder transformers saved itself.
  assert all(key.startswith(("predictions.", "sop_classifier.")) for key in info["unexpected_keys"])


def run_export_hf(*flags):
  return subprocess.run([sys.executable, os.path.join(REPO, "tools", "export_hf.py"), *flags], capture_output=True,
                        text=True, timeout=300)


def corpus_lines(name, limit):
  with open(os.path.join(SHARED, "corpus", name), encoding="utf-8") as reader:
    return [line.strip() for line, _ in zip(reader, range(limit)) if line.strip()]


@requires_shared(SP8K_MODEL)
def test_export_tool_writes_a_folder_transformers_loads_with_tokenizer(tmp_path):
  config = albert_tf.AlbertConfig(vocab_size=8000, hidden_size=32, num_hidden_layers=2,
                                  num_attention_heads=2, intermediate_size=40, embedding_size=16)
  config_file = tmp_path / "albert_config.json"
  config.to_json_file(str(config_file))
  model = albert_tf.AlbertPretrainer(config)
  model(model.dummy_inputs())
  randomize(model, scale=0.1)
  save_checkpoint(model, str(tmp_path / "run" / "ckpt-3"))
  out = tmp_path / "hf"
  result = run_export_hf(f"--albert_config_file={config_file}", f"--checkpoint={tmp_path / 'run'}",
                         f"--spm_model_file={SP8K_MODEL}", "--keep_accents", f"--output_dir={out}")
  assert result.returncode == 0, result.stderr
  assert sorted(os.listdir(out)) == ["config.json", "model.safetensors", "special_tokens_map.json",
                                     "spiece.model", "tokenizer.json", "tokenizer_config.json"]

  ours = SentencePieceTokenizer(SP8K_MODEL, do_lower_case=True, keep_accents=True)
  theirs = transformers.AlbertTokenizer.from_pretrained(str(out))
  lines = corpus_lines("en_wiki.txt", 400) + corpus_lines("ko_libreoffice_help.txt", 400)
  lines += ["대한민국의 수도는[MASK]이다.", "The capital of France is [MASK].", "It costs 1,000 or 3.0, won."]
  for line in lines:
    assert theirs(line, add_special_tokens=False)["input_ids"] == ours.encode(line), line
  pair = theirs("첫 문장", "second one")["input_ids"]
  assert pair == [ours.cls_id] + ours.encode("첫 문장") + [ours.sep_id] + ours.encode("second one") + [ours.sep_id]

  batch = padded_batch(config.vocab_size)
  ours = dict(model(batch), **model.encoder(batch))
  for key, value in hf_outputs(str(out), batch).items():
    np.testing.assert_allclose(value, ours[key], atol=1e-4, rtol=0, err_msg=key)
  assert transformers.AlbertConfig.from_pretrained(str(out)).vocab_size == 8000


@requires_shared(SP8K_MODEL)
def test_export_tool_tokenizer_with_default_flags_matches_ours_on_latin_text(tmp_path):
  """Default flags (lower-case, accents stripped, Google's): transformers' two tokenizers give our ids.
  Hangul under the default flags is not covered: transformers' NFKD decomposes it (see BUILD_NOTES)."""
  config = tiny_config(vocab_size=8000)
  config.to_json_file(str(tmp_path / "albert_config.json"))
  model = albert_tf.AlbertEncoder(config)
  model(model.dummy_inputs())
  save_checkpoint(model, str(tmp_path / "run" / "model.ckpt"))
  out = tmp_path / "hf"
  result = run_export_hf(f"--albert_config_file={tmp_path / 'albert_config.json'}", f"--checkpoint={tmp_path / 'run'}",
                         f"--spm_model_file={SP8K_MODEL}", f"--output_dir={out}")
  assert result.returncode == 0, result.stderr
  ours = SentencePieceTokenizer(SP8K_MODEL)
  lines = corpus_lines("en_wiki.txt", 600) + corpus_lines("en_botchan.txt", 300)
  lines += ["Café Zürich, naïve RÉSUMÉ façade.", "The capital of France is [MASK].",
            "It costs 1,000 or 3.0, won.", "  Extra   spaces\tand ``quotes'' here "]
  assert any(any(char in line for char in "éüïç") for line in lines)
  slow = transformers.AlbertTokenizer.from_pretrained(str(out))
  fast = transformers.AutoTokenizer.from_pretrained(str(out))
  for tokenizer in (slow, fast):
    for line in lines:
      assert tokenizer(line, add_special_tokens=False)["input_ids"] == ours.encode(line), (type(tokenizer), line)


@requires_shared(SP8K_MODEL)
def test_export_tool_on_a_run_classifier_directory(tmp_path):
  from albert_tf.data.tasks import TsvFormat, get_task
  from albert_tf.training import distribution, finetuning, finetuning_objectives
  data = tmp_path / "data"
  data.mkdir()
  (data / "train.tsv").write_text("a good film\tgood\na bad film\tbad\nso so\tmeh\n", encoding="utf-8")
  config = albert_tf.AlbertConfig(vocab_size=8000, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                  intermediate_size=40, embedding_size=16, max_position_embeddings=32)
  task = get_task("tsv", TsvFormat(text_a_column=0, label_column=1, label_list=("meh", "good", "bad")))
  finetuning.run(finetuning.FineTuningOptions(
      data_dir=str(data), output_dir=str(tmp_path / "run"), albert_config=config, spm_model_file=SP8K_MODEL,
      max_seq_length=32, do_train=True, train_batch_size=2, train_step=2, save_checkpoints_steps=2,
      iterations_per_loop=2, learning_rate=1e-3), finetuning_objectives.ClassifierObjective(task),
      distribution.get_strategy("one_device"))
  result = run_export_hf(f"--albert_config_file={tmp_path / 'run' / 'albert_config.json'}",
                         f"--checkpoint={tmp_path / 'run'}", f"--spm_model_file={SP8K_MODEL}",
                         f"--output_dir={tmp_path / 'hf'}")
  assert result.returncode == 0, result.stderr
  hf_model, info = transformers.AlbertForSequenceClassification.from_pretrained(str(tmp_path / "hf"),
                                                                               output_loading_info=True)
  assert not info["missing_keys"] and not info["unexpected_keys"] and not info["mismatched_keys"]
  assert [hf_model.config.id2label[i] for i in range(3)] == ["meh", "good", "bad"]  # the run's order, not sorted
  model, _ = build_model_for_checkpoint(config, str(tmp_path / "run"))
  batch = padded_batch(config.vocab_size)
  np.testing.assert_allclose(hf_logits(hf_model, batch), model(batch)["logits"], atol=1e-4, rtol=0)


def test_export_tool_reports_bad_input(tmp_path):
  config_file = tmp_path / "albert_config.json"
  tiny_config().to_json_file(str(config_file))
  result = run_export_hf(f"--albert_config_file={config_file}", f"--checkpoint={tmp_path / 'missing'}",
                         f"--output_dir={tmp_path / 'hf'}")
  assert result.returncode == 2
  assert "error: Checkpoint not found" in result.stderr and "Traceback" not in result.stderr
  assert not (tmp_path / "hf").exists()


@pytest.mark.parametrize("labels", [("entailment", "neutral", "contradiction"), None], ids=["classes", "regression"])
def test_fine_tuned_classifier_loads_as_sequence_classification(tmp_path, labels):
  config = tiny_config(num_hidden_groups=2)
  model = albert_tf.AlbertClassifier(config, labels, dropout_rate=0.2)
  batch = padded_batch(config.vocab_size)
  model(batch)
  randomize(model)
  # As run_classifier leaves it: checkpoints and task.json in one directory; the tool path rebuilds the model.
  save_checkpoint(model, str(tmp_path / "run" / "model.ckpt-9"))
  (tmp_path / "run" / "task.json").write_text(json.dumps({"task": "mnli", "label_list": labels}))
  restored, _ = build_model_for_checkpoint(config, str(tmp_path / "run"))
  assert isinstance(restored, albert_tf.AlbertClassifier) and restored.label_names == labels
  export_to_hf(restored, str(tmp_path / "hf"))

  hf_model, info = transformers.AlbertForSequenceClassification.from_pretrained(str(tmp_path / "hf"),
                                                                               output_loading_info=True)
  assert not info["missing_keys"] and not info["unexpected_keys"] and not info["mismatched_keys"]
  assert hf_model.config.problem_type == ("regression" if labels is None else "single_label_classification")
  if labels:
    assert [hf_model.config.id2label[i] for i in range(3)] == list(labels)
  assert hf_model.config.classifier_dropout_prob == restored.dropout_rate
  np.testing.assert_allclose(hf_logits(hf_model, batch), model(batch)["logits"], atol=1e-4, rtol=0)


def test_sentence_encoder_exports_as_albert_model(tmp_path):
  config = tiny_config()
  model = albert_tf.AlbertSentenceEncoder(config)
  batch = padded_batch(config.vocab_size)
  model(batch)
  randomize(model)
  export_to_hf(model, str(tmp_path))
  assert json.loads((tmp_path / "config.json").read_text())["architectures"] == ["AlbertModel"]
  hf_model = transformers.AlbertModel.from_pretrained(str(tmp_path))
  hf_model.eval()
  with torch.no_grad():
    hidden = hf_model(**torch_inputs(batch)).last_hidden_state
  # Sentence-transformers' mean pooling over the attention mask, normalised, is our embedding.
  mask = batch["input_mask"].numpy()[:, :, None]
  mean = (hidden.numpy() * mask).sum(1) / mask.sum(1)
  np.testing.assert_allclose(mean / np.linalg.norm(mean, axis=1, keepdims=True), model(batch)["embedding"],
                             atol=1e-4, rtol=0)
