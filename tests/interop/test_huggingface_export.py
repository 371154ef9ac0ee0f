"""The exported folder loads in transformers and computes what our model computes."""

import json
import os

import numpy as np
import pytest
import tensorflow as tf
from safetensors import numpy as safetensors_numpy
import torch
import transformers

import albert_tf
from albert_tf import files
from albert_tf.errors import OptionError
from albert_tf.interop import hf_tokenizer
from albert_tf.interop.huggingface import export_to_hf
from albert_tf.modeling.checkpoints import build_model_for_checkpoint, save_checkpoint
from albert_tf.serving import saved_model
from albert_tf.tasks.classification import objective as classification_objective
from albert_tf.tasks.classification.model import AlbertClassifier
from albert_tf.tasks.race.model import AlbertMultipleChoice
from albert_tf.tasks.squad.model import AlbertQuestionAnswerer, AlbertQuestionAnswererV2
from albert_tf.text import tokenizer_options as options_lib
from albert_tf.text.sentencepiece_training import train_sentencepiece
from albert_tf.text.tokenizer import SentencePieceTokenizer
from tests.conftest import (SHARED, SP8K_MODEL, corpus_lines, damage_checkpoint, padded_batch, python_pack, randomize,
                            randomize_text_sensitive, requires_shared, run_tool, tiny_config)
from tests.hf_torch import hf_logits, torch_inputs

SHAPES = {
    "factorized": dict(embedding_size=16),
    "embedding_equals_hidden": dict(embedding_size=32),
    "two_groups": dict(num_hidden_groups=2),
    "two_inner_groups": dict(inner_group_num=2),
    "groups_and_inner_groups_relu": dict(num_hidden_groups=2, inner_group_num=2, hidden_act="relu"),
    "exact_gelu": dict(hidden_act="gelu_exact"),
}


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


@pytest.fixture(scope="module")
def tiny_export(tmp_path_factory):
  """A pretrainer of `tiny_config` with its initial weights and its folder, which the tests only read."""
  model = albert_tf.AlbertPretrainer(tiny_config())
  model(model.dummy_inputs())
  folder = tmp_path_factory.mktemp("tiny_hf")
  export_to_hf(model, str(folder))
  return model, folder


def test_safetensors_file_and_config(tiny_export):
  model, folder = tiny_export
  from safetensors import safe_open
  with safe_open(str(folder / "model.safetensors"), framework="numpy") as reader:
    assert reader.metadata() == {"format": "pt"}
    assert len(reader.keys()) == 32  # transformers' own save_pretrained writes the same 32 keys
  tensors = safetensors_numpy.load_file(str(folder / "model.safetensors"))
  kernel = model.encoder.groups[0][0].query.kernel.numpy()
  np.testing.assert_array_equal(
      tensors["albert.encoder.albert_layer_groups.0.albert_layers.0.attention.query.weight"], kernel.T)
  config = json.loads((folder / "config.json").read_text())
  assert config["model_type"] == "albert" and config["hidden_act"] == "gelu_new"
  assert (config["pad_token_id"], config["bos_token_id"], config["eos_token_id"]) == (0, 2, 3)
  assert config["embedding_size"] == 16 and config["num_hidden_groups"] == 1


def test_albert_model_loads_backbone_without_missing_weights(tiny_export):
  _, info = transformers.AlbertModel.from_pretrained(str(tiny_export[1]), output_loading_info=True)
  assert not info["missing_keys"] and not info["mismatched_keys"]
  # Only the pretraining heads are left over, exactly as for a folder transformers saved itself.
  assert all(key.startswith(("predictions.", "sop_classifier.")) for key in info["unexpected_keys"])


@requires_shared(SP8K_MODEL)
def test_export_tool_writes_a_folder_to_a_bucket_that_transformers_loads_with_tokenizer(tmp_path, bucket,
                                                                                       monkeypatch):
  config = albert_tf.AlbertConfig(vocab_size=8000, hidden_size=32, num_hidden_layers=2,
                                  num_attention_heads=2, intermediate_size=40, embedding_size=16)
  config_file = tmp_path / "albert_config.json"
  config.to_json_file(str(config_file))
  model = albert_tf.AlbertPretrainer(config)
  model(model.dummy_inputs())
  randomize(model, scale=0.1)
  save_checkpoint(model, str(tmp_path / "run" / "ckpt-3"))
  written = []
  write = files.write_atomically
  monkeypatch.setattr(files, "write_atomically", lambda path, content: written.append(path) or write(path, content))
  (tmp_path / "work").mkdir()
  result = run_tool("export_hf", f"--albert_config_file={config_file}", f"--checkpoint={tmp_path / 'run'}",
                    f"--spm_model_file={SP8K_MODEL}", "--keep_accents", f"--output_dir={bucket}/hf",
                    cwd=tmp_path / "work")
  assert result.returncode == 0, result.stderr
  names = ["config.json", "model.safetensors", "special_tokens_map.json", "spiece.model",
           "spiece.tokenizer_options.json", "tokenizer.json", "tokenizer_config.json"]
  assert files.list_folder(f"{bucket}/hf") == names
  # Uploaded whole, the file transformers reads first last; nothing written to local disk instead.
  uploaded = [path for path in written if path.startswith(bucket)]
  assert sorted(uploaded) == [f"{bucket}/hf/{name}" for name in names] and uploaded[-1] == f"{bucket}/hf/config.json"
  assert os.listdir(tmp_path / "work") == []

  with files.local_copy(f"{bucket}/hf") as out:
    ours = SentencePieceTokenizer(SP8K_MODEL, do_lower_case=True, keep_accents=True)
    theirs = transformers.AlbertTokenizer.from_pretrained(out)
    lines = corpus_lines("en_wiki.txt", 400) + corpus_lines("ko_libreoffice_help.txt", 400)
    lines += ["대한민국의 수도는[MASK]이다.", "The capital of France is [MASK].", "It costs 1,000 or 3.0, won."]
    for line in lines:
      assert theirs(line, add_special_tokens=False)["input_ids"] == ours.encode(line), line
    pair = theirs("첫 문장", "second one")["input_ids"]
    assert pair == [ours.cls_id] + ours.encode("첫 문장") + [ours.sep_id] + ours.encode("second one") + [ours.sep_id]

    batch = padded_batch(config.vocab_size)
    ours = dict(model(batch), **model.encoder(batch))
    for key, value in hf_outputs(out, batch).items():
      np.testing.assert_allclose(value, ours[key], atol=1e-4, rtol=0, err_msg=key)
    assert transformers.AlbertConfig.from_pretrained(out).vocab_size == 8000


def train_vocabulary(tmp_path, name, lines, vocab_size, **options):
  corpus = tmp_path / f"{name}.txt"
  corpus.write_text("\n".join(lines) + "\n", encoding="utf-8")
  return train_sentencepiece([str(corpus)], str(tmp_path / name), vocab_size=vocab_size, character_coverage=1.0,
                             num_threads=2, **options)


def transformers_ids(folder, lines):
  """Ids of `AlbertTokenizer` and `AutoTokenizer` loaded from `folder`, by class name."""
  return {tokenizer_class.__name__: tokenizer_class.from_pretrained(folder)(lines, add_special_tokens=False)["input_ids"]
          for tokenizer_class in (transformers.AlbertTokenizer, transformers.AutoTokenizer)}


@requires_shared(os.path.join(SHARED, "corpus", "ko_law.txt"))
def test_default_export_of_a_korean_model_gives_our_ids_in_transformers(tmp_path):
  """The issue's case: Korean corpus → train_sentencepiece → export_hf, all with default flags."""
  korean = corpus_lines("ko_law.txt") + corpus_lines("ko_libreoffice_help.txt")
  spm_model = train_vocabulary(tmp_path, "ko", korean, vocab_size=4000)
  config = tiny_config(vocab_size=4000)
  config.to_json_file(str(tmp_path / "albert_config.json"))
  model = albert_tf.AlbertEncoder(config)
  model(model.dummy_inputs())
  save_checkpoint(model, str(tmp_path / "run" / "model.ckpt"))
  out = tmp_path / "hf"
  result = run_tool("export_hf", f"--albert_config_file={tmp_path / 'albert_config.json'}",
                    f"--checkpoint={tmp_path / 'run'}", f"--spm_model_file={spm_model}", f"--output_dir={out}")
  assert result.returncode == 0, result.stderr
  assert "WARNING" not in result.stderr
  assert "wrote keep_accents=true, accents stripped by the charsmap: AlbertTokenizer 100.00%, AutoTokenizer 100.00%" \
      in result.stdout, result.stdout
  # The options the model was trained with stay on record for our tools; transformers is told keep_accents.
  assert options_lib.read_options(str(out / "spiece.model")) == options_lib.TokenizerOptions()
  assert json.loads((out / "tokenizer_config.json").read_text())["keep_accents"] is True

  ours = SentencePieceTokenizer(spm_model)
  for name in ("ko_law.txt", "ko_libreoffice_help.txt"):
    lines = corpus_lines(name)
    expected = [ours.encode(line) for line in lines]
    for tokenizer_name, ids in transformers_ids(str(out), lines).items():
      matching = sum(a == b for a, b in zip(ids, expected))
      assert matching >= 0.999 * len(lines), (tokenizer_name, name, matching, len(lines))
      unknown = [sum(i == ours.unk_id for row in rows for i in row) for rows in (ids, expected)]
      assert unknown[0] == unknown[1], (tokenizer_name, name, unknown)
  glued = "대한민국의 수도는[MASK]이다."
  for ids in transformers_ids(str(out), [glued]).values():
    assert ids[0] == ours.encode(glued) and ids[0].count(ours.mask_id) == 1


def test_default_export_gives_our_ids_on_accents_japanese_and_thai(tmp_path):
  """Accents stripped (Google's default) on Latin text, and kept whole in Japanese kana and Thai."""
  english = corpus_lines("en_botchan.txt", 3000)
  japanese = ["ひらがなとカタカナで書かれた文章です。", "ガギグゲゴとパピプペポは濁音と半濁音です。",
              "東京都で働いています。", "がっこうへいきます。"] * 5
  thai = ["ภาษาไทยไม่ยากเกินไป", "ผมชอบกินข้าวผัดมาก", "วันนี้อากาศดีจังเลย", "น้ำแข็งใส่แก้วนี้"] * 5
  spm_model = train_vocabulary(tmp_path, "mixed", english + japanese + thai, vocab_size=1000)
  model = albert_tf.AlbertEncoder(tiny_config(vocab_size=1000))
  model(model.dummy_inputs())
  export = export_to_hf(model, str(tmp_path / "hf"), spm_model_file=spm_model)
  lines = ["Café Zürich, naïve RÉSUMÉ façade.", "a naïve café", "ÉCOLE"] + english[:300] + japanese + thai
  ours = SentencePieceTokenizer(spm_model)
  assert ours.encode("café") == ours.encode("cafe") and ours.encode("が") != ours.encode("か")
  for tokenizer_name, ids in transformers_ids(str(tmp_path / "hf"), lines).items():
    for line, row in zip(lines, ids):
      assert row == ours.encode(line), (tokenizer_name, line)
  assert all(result.rate == 1.0 for result in export.tokenizer_parity.measured[export.tokenizer_parity.chosen.name])
  # Told keep_accents=false, as trained, transformers decomposes kana and drops the voicing marks.
  as_trained = export.tokenizer_parity.measured[hf_tokenizer.settings_for(options_lib.TokenizerOptions())[1].name]
  assert all(result.rate < 1.0 for result in as_trained)


def test_cased_model_keeping_accents_exports_as_trained(tmp_path):
  lines = corpus_lines("en_botchan.txt", 2000) + ["Café Zürich, naïve RÉSUMÉ façade."] * 20
  spm_model = train_vocabulary(tmp_path, "cased", lines, vocab_size=800, do_lower_case=False, keep_accents=True)
  model = albert_tf.AlbertEncoder(tiny_config(vocab_size=800))
  model(model.dummy_inputs())
  export = export_to_hf(model, str(tmp_path / "hf"), spm_model_file=spm_model)
  assert export.tokenizer_parity.chosen.keep_accents and not export.tokenizer_parity.chosen.charsmap_prepares_text
  ours = SentencePieceTokenizer(spm_model, do_lower_case=False, keep_accents=True)
  probe = ["Café Zürich, naïve RÉSUMÉ façade.", "The CAPITAL of France is [MASK]."] + lines[:200]
  for tokenizer_name, ids in transformers_ids(str(tmp_path / "hf"), probe).items():
    assert ids == [ours.encode(line) for line in probe], tokenizer_name


@requires_shared(SP8K_MODEL)
def test_export_warns_loudly_when_no_setting_gives_our_ids(tmp_path):
  """Python lower-cases a word-final Σ to ς, transformers to σ: measured on --parity_text and reported."""
  model = albert_tf.AlbertEncoder(tiny_config(vocab_size=8000))
  model(model.dummy_inputs())
  text = tmp_path / "greek.txt"
  text.write_text("The inscription reads ΑΧΙΛΛΕΥΣ here.\nPlain text.\n", encoding="utf-8")
  report = export_to_hf(model, str(tmp_path / "hf"), SP8K_MODEL, parity_text_files=[str(text)]).tokenizer_parity
  assert "2 --parity_text lines" in report.lines()[0]
  assert report.warning().startswith("WARNING: transformers' AlbertTokenizer from this folder gives other ids than "
                                     "albert-tf on 1 of ")
  assert "ΑΧΙΛΛΕΥΣ" in report.warning()
  with pytest.raises(OptionError, match="--parity_text checks the tokenizer files"):
    export_to_hf(model, str(tmp_path / "hf2"), parity_text_files=[str(text)])
  assert not (tmp_path / "hf2").exists()


@requires_shared(SP8K_MODEL)
def test_export_tool_on_a_run_classifier_directory(tmp_path):
  from albert_tf.tasks.classification.user_tsv import TsvFormat
  from albert_tf.tasks.classification.catalogue import get_task
  from albert_tf.training import distribution, finetuning
  data = tmp_path / "data"
  data.mkdir()
  (data / "train.tsv").write_text("a good film\tgood\na bad film\tbad\nso so\tmeh\n", encoding="utf-8")
  config = albert_tf.AlbertConfig(vocab_size=8000, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                  intermediate_size=40, embedding_size=16, max_position_embeddings=32)
  task = get_task("tsv", TsvFormat(text_a_column=0, label_column=1, label_list=("meh", "good", "bad")))
  finetuning.run(finetuning.FineTuningOptions(
      data_dir=str(data), output_dir=str(tmp_path / "run"), albert_config=config, spm_model_file=SP8K_MODEL,
      max_seq_length=32, do_train=True, train_batch_size=2, train_step=2, save_checkpoints_steps=2,
      iterations_per_loop=2, learning_rate=1e-3), classification_objective.ClassifierObjective(task),
      distribution.get_strategy("one_device"))
  result = run_tool("export_hf", f"--albert_config_file={tmp_path / 'run' / 'albert_config.json'}",
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
  result = run_tool("export_hf", f"--albert_config_file={config_file}", f"--checkpoint={tmp_path / 'missing'}",
                    f"--output_dir={tmp_path / 'hf'}")
  assert result.returncode == 2
  assert "error: Checkpoint not found" in result.stderr and "Traceback" not in result.stderr
  assert not (tmp_path / "hf").exists()


def test_export_tool_reports_a_damaged_checkpoint(tmp_path):
  config_file = tmp_path / "albert_config.json"
  tiny_config().to_json_file(str(config_file))
  model = albert_tf.AlbertPretrainer(tiny_config())
  model(model.dummy_inputs())
  prefix = save_checkpoint(model, str(tmp_path / "run" / "model.ckpt-3"))
  damage_checkpoint(prefix, "data cut")
  result = run_tool("export_hf", f"--albert_config_file={config_file}", f"--checkpoint={tmp_path / 'run'}",
                    f"--output_dir={tmp_path / 'hf'}")
  assert result.returncode == 2
  assert result.stderr.splitlines()[-1] == (f"error: Checkpoint {prefix} cannot be read: its files are truncated or "
                                            "corrupt (Read less bytes than requested).")
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


def test_squad_model_loads_as_question_answering_with_our_logits(tmp_path):
  config = tiny_config()
  model = AlbertQuestionAnswerer(config)
  batch = padded_batch(config.vocab_size)
  model(batch)
  randomize(model)
  save_checkpoint(model, str(tmp_path / "run" / "model.ckpt-3"))
  restored, _ = build_model_for_checkpoint(config, str(tmp_path / "run"))
  assert isinstance(restored, AlbertQuestionAnswerer)
  export_to_hf(restored, str(tmp_path / "hf"))
  hf_model, info = transformers.AlbertForQuestionAnswering.from_pretrained(str(tmp_path / "hf"),
                                                                          output_loading_info=True)
  assert not info["missing_keys"] and not info["unexpected_keys"] and not info["mismatched_keys"]
  hf_model.eval()
  with torch.no_grad():
    out = hf_model(**torch_inputs(batch))
  ours = model(batch)
  np.testing.assert_allclose(out.start_logits.numpy(), ours["start_logits"], atol=1e-4, rtol=0)
  np.testing.assert_allclose(out.end_logits.numpy(), ours["end_logits"], atol=1e-4, rtol=0)


def test_multiple_choice_model_loads_as_multiple_choice_with_our_logits(tmp_path):
  config = tiny_config(num_hidden_groups=2)
  model = AlbertMultipleChoice(config, dropout_rate=0.0)
  flat = padded_batch(config.vocab_size, batch_size=8, seq_length=30)
  batch = {key: tf.reshape(flat[key], [2, 4, -1]) for key in ("input_word_ids", "input_mask", "input_type_ids")}
  model(batch)
  randomize(model)
  save_checkpoint(model, str(tmp_path / "run" / "model.ckpt-3"))
  restored, _ = build_model_for_checkpoint(config, str(tmp_path / "run"))
  assert isinstance(restored, AlbertMultipleChoice)
  export_to_hf(restored, str(tmp_path / "hf"))
  hf_model, info = transformers.AlbertForMultipleChoice.from_pretrained(str(tmp_path / "hf"),
                                                                       output_loading_info=True)
  assert not info["missing_keys"] and not info["unexpected_keys"] and not info["mismatched_keys"]
  np.testing.assert_allclose(hf_logits(hf_model, batch), model(batch)["logits"], atol=1e-4, rtol=0)


def test_squad_v2_model_is_refused_before_anything_is_written(tmp_path):
  model = AlbertQuestionAnswererV2(tiny_config())
  model(model.dummy_inputs())
  with pytest.raises(OptionError, match="no ALBERT class for this model's head"):
    export_to_hf(model, str(tmp_path / "hf"))
  assert not (tmp_path / "hf").exists()


@requires_shared(SP8K_MODEL)
def test_text_pairs_get_their_segments_in_transformers_as_in_our_saved_model(tmp_path):
  """transformers 5's AlbertTokenizer leaves token_type_ids out unless the tokenizer config names them: the
  pipeline then fed segment B as segment 0 (0.28 apart in probabilities here). Every pair export (classifier, SQuAD,
  RACE) writes these tokenizer files: the ids and segments are checked on sentence pairs and on a question with
  its passage, the pipeline on the classifier against `classify_text_pair`."""
  config = albert_tf.AlbertConfig(vocab_size=8000, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                  intermediate_size=40, embedding_size=16, max_position_embeddings=64)
  model = AlbertClassifier(config, ["a", "b", "c"])
  model(model.dummy_inputs())
  randomize_text_sensitive(model, 3)
  export_to_hf(model, str(tmp_path / "hf"), spm_model_file=SP8K_MODEL)
  texts_a = ["The cat sat on the mat.", "서울은 한국의 수도입니다.", "When did the third series begin?"]
  texts_b = ["A cat is sitting.", "부산은 항구 도시입니다.", "Unlike the two series before it, it began in 2004."]
  tokenizer = transformers.AutoTokenizer.from_pretrained(str(tmp_path / "hf"))
  options = options_lib.resolve_options(SP8K_MODEL)
  ours = SentencePieceTokenizer(SP8K_MODEL, options.do_lower_case, options.keep_accents)
  for text_a, text_b in zip(texts_a, texts_b):
    ids, _, types = python_pack(ours, text_a, text_b, 64)
    encoded = tokenizer(text_a, text_b)
    assert encoded["input_ids"] == ids[:len(encoded["input_ids"])]
    assert encoded["token_type_ids"] == types[:len(encoded["input_ids"])]
  served = tf.saved_model.load(saved_model.export_saved_model(model, str(tmp_path / "saved"), SP8K_MODEL, 64))
  expected = served.signatures["classify_text_pair"](text_a=tf.constant(texts_a),
                                                     text_b=tf.constant(texts_b))["probabilities"].numpy()
  pipeline = transformers.pipeline("text-classification", model=str(tmp_path / "hf"), device="cpu")
  scores = pipeline([{"text": a, "text_pair": b} for a, b in zip(texts_a, texts_b)], top_k=None)
  actual = [[next(score["score"] for score in row if score["label"] == label) for label in "abc"] for row in scores]
  np.testing.assert_allclose(actual, expected, atol=1e-4, rtol=0)
