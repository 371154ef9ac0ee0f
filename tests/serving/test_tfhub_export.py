"""TF Hub-style export: hub.KerasLayer computes what our Keras models compute, tokenizes as our tokenizer does,
and fine-tunes; the tool reports bad input in one line."""

import os
import re
import shutil
import subprocess
import sys
import textwrap
import types

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_hub as hub
import tf_keras

import albert_tf
from albert_tf import files
from albert_tf.errors import OptionError
from albert_tf.modeling.checkpoints import save_checkpoint
from albert_tf.serving import tfhub
from albert_tf.text import tokenizer_options
from albert_tf.text.tokenizer import SentencePieceTokenizer
from tests.conftest import (SHARED, SP8K_MODEL, corpus_lines, padded_batch, python_pack, randomize, requires_shared,
                            run_tool, tiny_config)

MAX_SEQ_LENGTH = 40
# Recorded beside the fixture's copy of the vocabulary: not Google's defaults, so the export must read them.
RECORDED_OPTIONS = tokenizer_options.TokenizerOptions(do_lower_case=True, keep_accents=True)


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
  """A random pretrainer with dropout, exported with a vocabulary whose tokenizer options are recorded."""
  if not os.path.exists(SP8K_MODEL):
    pytest.skip(f"{SP8K_MODEL} not present")
  root = tmp_path_factory.mktemp("tfhub")
  model = albert_tf.AlbertPretrainer(tiny_config(vocab_size=8000, hidden_dropout_prob=0.1))
  model(model.dummy_inputs())
  randomize(model, scale=0.1)
  for variable in model.variables:
    if "gamma" in variable.name:
      # LayerNorm scales around 1, as a trained model's: near 0, every text would get the same pooled output,
      # and fine-tuning would have nothing to learn from.
      variable.assign_add(tf.ones_like(variable))
  spm_model_file = str(root / "spm" / "sp8k.model")
  os.makedirs(os.path.dirname(spm_model_file))
  shutil.copyfile(SP8K_MODEL, spm_model_file)
  tokenizer_options.write_options(spm_model_file, RECORDED_OPTIONS)
  export = tfhub.export_tfhub(model, str(root / "hub"), spm_model_file, MAX_SEQ_LENGTH)
  return types.SimpleNamespace(model=model, root=root, spm_model_file=spm_model_file, export=export,
                               encoder_dir=export.encoder_dir, preprocessor_dir=export.preprocessor_dir)


@pytest.fixture(scope="module")
def loaded_encoder(exported):
  """The encoder SavedModel loaded once for the tests that only read it (loading restores and wraps every traced
  function: seconds)."""
  return tf.saved_model.load(exported.encoder_dir)


def encoder_batch(seq_length=11):
  batch = padded_batch(8000, seq_length=seq_length)
  del batch["masked_lm_positions"]
  return batch


def test_export_writes_both_models_with_their_assets_and_the_recorded_options(exported):
  hub_dir = exported.root / "hub"
  assert exported.export == tfhub.HubExport(str(hub_dir / "encoder"), str(hub_dir / "preprocessor"), has_mlm=True,
                                            tokenizer_options=RECORDED_OPTIONS)
  assert sorted(os.listdir(exported.root)) == ["hub", "spm"]  # no staging directory left
  assert sorted(os.listdir(hub_dir)) == ["encoder", "preprocessor"]
  assert os.listdir(hub_dir / "encoder" / "assets") == ["albert_config.json"]
  assert albert_tf.AlbertConfig.from_json_file(str(hub_dir / "encoder" / "assets" / "albert_config.json")) == \
      exported.model.config
  assets = hub_dir / "preprocessor" / "assets"
  assert sorted(os.listdir(assets)) == ["spiece.model", "spiece.tokenizer_options.json"]
  assert tokenizer_options.read_options(str(assets / "spiece.model")) == RECORDED_OPTIONS
  assert (assets / "spiece.model").read_bytes() == open(SP8K_MODEL, "rb").read()


def test_export_refuses_an_existing_path_and_options_that_contradict_the_record(exported):
  with pytest.raises(OptionError, match="already exists"):
    tfhub.export_tfhub(exported.model, str(exported.root / "hub"), exported.spm_model_file)
  with pytest.raises(OptionError, match="--keep_accents=false contradicts"):
    tfhub.export_tfhub(exported.model, str(exported.root / "other"), exported.spm_model_file, MAX_SEQ_LENGTH,
                       keep_accents=False)
  with pytest.raises(OptionError, match="--max_seq_length=65 must be between 3"):
    tfhub.export_tfhub(exported.model, str(exported.root / "other"), exported.spm_model_file, 65)
  assert sorted(os.listdir(exported.root)) == ["hub", "spm"]


def test_encoder_layer_equals_the_keras_encoder_and_holds_its_variables(exported, loaded_encoder):
  layer = hub.KerasLayer(loaded_encoder, trainable=True)
  encoder = exported.model.encoder
  for seq_length in (11, encoder.config.max_position_embeddings):
    batch = encoder_batch(seq_length)
    outputs = layer(batch)
    expected = encoder(batch, training=False)
    for name in ("pooled_output", "sequence_output"):
      np.testing.assert_allclose(outputs[name], expected[name], atol=1e-5, rtol=0)
    np.testing.assert_array_equal(outputs["default"], outputs["pooled_output"])
    assert len(outputs["encoder_outputs"]) == 4
    for ours, theirs in zip(outputs["encoder_outputs"], expected["encoder_outputs"]):
      np.testing.assert_allclose(ours, theirs, atol=1e-5, rtol=0)
  # Dropout (hidden_dropout_prob=0.1) only when training.
  batch = encoder_batch()
  assert not np.allclose(layer(batch, training=True)["pooled_output"], layer(batch)["pooled_output"])
  np.testing.assert_array_equal(layer(batch, training=False)["pooled_output"], layer(batch)["pooled_output"])

  assert len(layer.trainable_weights) == len(encoder.trainable_variables) == len(encoder.variables)
  assert not layer.non_trainable_weights and not layer.losses
  for ours, theirs in zip(encoder.trainable_variables, layer.trainable_weights):
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_mlm_logits_and_serving_signature_equal_the_keras_model(exported, loaded_encoder):
  batch = padded_batch(8000)
  outputs = loaded_encoder.mlm(batch)
  expected = exported.model(batch, training=False)["mlm_logits"]
  assert outputs["mlm_logits"].shape == (3, 4, 8000)
  np.testing.assert_allclose(outputs["mlm_logits"], expected, atol=1e-5, rtol=0)
  encoded = exported.model.encoder(encoder_batch(), training=False)
  np.testing.assert_allclose(outputs["sequence_output"], encoded["sequence_output"], atol=1e-5, rtol=0)
  head_variables = exported.model.masked_lm_head.variables
  assert len(loaded_encoder.mlm.trainable_variables) == len(exported.model.encoder.variables + head_variables)
  served = loaded_encoder.signatures["serving_default"](**encoder_batch())
  assert sorted(served) == ["pooled_output", "sequence_output"]
  np.testing.assert_allclose(served["pooled_output"], encoded["pooled_output"], atol=1e-5, rtol=0)


@requires_shared(os.path.join(SHARED, "corpus", "ko_law.txt"))
def test_preprocessor_tokenizes_and_packs_like_the_python_tokenizer_on_the_corpora(exported):
  preprocessor = tf.saved_model.load(exported.preprocessor_dir)
  tokenizer = SentencePieceTokenizer(SP8K_MODEL, RECORDED_OPTIONS.do_lower_case, RECORDED_OPTIONS.keep_accents)
  lines = []
  for name in ("ko_law.txt", "ko_libreoffice_help.txt", "en_wiki.txt", "en_botchan.txt"):
    lines += corpus_lines(name, 300)
  lines += ["Café naïve RÉSUMÉ", "", "서울은 [MASK]의 수도이다."]
  tokenized = preprocessor.tokenize(tf.constant(lines))
  assert tokenized.dtype == tf.int32 and tokenized.ragged_rank == 1
  assert tokenized.to_list() == [tokenizer.encode(line) for line in lines]
  assert preprocessor.do_lower_case.numpy() and preprocessor.keep_accents.numpy()
  special = {name: int(value) for name, value in preprocessor.tokenize.get_special_tokens_dict().items()}
  assert special == dict(vocab_size=8000, start_of_sequence_id=tokenizer.cls_id, end_of_segment_id=tokenizer.sep_id,
                         padding_id=tokenizer.pad_id, mask_id=tokenizer.mask_id)

  # Pairs of every kind of length, some with an empty second segment; the first 600 lines only, for time.
  texts_a, texts_b = lines[:600:2], [line if i % 7 else "" for i, line in enumerate(lines[1:600:2])]
  segments_a, segments_b = tokenized[:600:2], preprocessor.tokenize(tf.constant(texts_b))
  for seq_length in (5, 16, tf.constant(24), None):
    kwargs = {} if seq_length is None else {"seq_length": seq_length}
    length = MAX_SEQ_LENGTH if seq_length is None else int(seq_length)
    pair = preprocessor.bert_pack_inputs([segments_a, segments_b], **kwargs)
    single = preprocessor.bert_pack_inputs([segments_a], **kwargs)
    for inputs, seconds in ((pair, texts_b), (single, [None] * len(texts_a))):
      expected = [python_pack(tokenizer, a, b, length) for a, b in zip(texts_a, seconds)]
      for index, name in enumerate(("input_word_ids", "input_mask", "input_type_ids")):
        assert inputs[name].numpy().tolist() == [row[index] for row in expected], (seq_length, name)
  packed = preprocessor(tf.constant(texts_a))
  assert packed["input_word_ids"].numpy().tolist() == [python_pack(tokenizer, a, None, MAX_SEQ_LENGTH)[0]
                                                       for a in texts_a]


def test_a_process_without_albert_tf_loads_both_models(exported, tmp_path):
  script = textwrap.dedent(f"""
      import sys
      sys.modules["albert_tf"] = None  # importing albert_tf in here would fail
      import numpy as np
      import tensorflow as tf
      import tensorflow_hub as hub
      import tensorflow_text  # registers the SentencePiece op
      texts = tf.constant(["서울은 한국의 수도이다.", "Hi there"])
      inputs = hub.KerasLayer({exported.preprocessor_dir!r})(texts)
      outputs = hub.KerasLayer({exported.encoder_dir!r})(inputs)
      np.savez({str(tmp_path / "outputs.npz")!r}, pooled_output=outputs["pooled_output"].numpy(),
               **{{name: value.numpy() for name, value in inputs.items()}})
      """)
  result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                          cwd=str(tmp_path))
  assert result.returncode == 0, result.stderr[-3000:]
  served = np.load(tmp_path / "outputs.npz")
  inputs = {name: served[name] for name in ("input_word_ids", "input_mask", "input_type_ids")}
  assert inputs["input_word_ids"].shape == (2, MAX_SEQ_LENGTH)
  expected = exported.model.encoder(inputs, training=False)["pooled_output"]
  np.testing.assert_allclose(served["pooled_output"], expected, atol=1e-5, rtol=0)


def sentiment_model(exported):
  """Raw text → the preprocessor → the trainable encoder → a 2-class dense layer."""
  text = tf_keras.Input(shape=(), dtype=tf.string)
  encoder_inputs = hub.KerasLayer(exported.preprocessor_dir)(text)
  pooled_output = hub.KerasLayer(exported.encoder_dir, trainable=True)(encoder_inputs)["pooled_output"]
  model = tf_keras.Model(text, tf_keras.layers.Dense(2)(pooled_output))
  model.compile(tf_keras.optimizers.Adam(3e-3),
                tf_keras.losses.SparseCategoricalCrossentropy(from_logits=True))
  return model


def test_fine_tuning_through_the_hub_layers_trains_the_encoder_and_saves(exported, tmp_path):
  tf_keras.utils.set_random_seed(0)
  texts = tf.constant(["a wonderful, moving film", "정말 재미있는 영화", "I loved every minute", "최고의 배우들",
                       "a dull and tedious mess", "지루하고 뻔한 이야기", "I want my money back", "최악의 결말"])
  labels = tf.constant([1, 1, 1, 1, 0, 0, 0, 0])
  model = sentiment_model(exported)
  encoder_layer = model.layers[2]
  before = [variable.numpy() for variable in encoder_layer.trainable_weights]
  history = model.fit(texts, labels, batch_size=8, epochs=20, verbose=0).history["loss"]
  assert history[-1] < 0.25 * history[0], history
  changed = [not np.array_equal(old, new.numpy()) for old, new in zip(before, encoder_layer.trainable_weights)]
  assert all(changed)
  predictions = model.predict(texts, verbose=0)

  # The SavedModel holds the preprocessor and the fine-tuned encoder: it needs no hub directory to serve text.
  model.save(str(tmp_path / "classifier"))
  reloaded = tf.saved_model.load(str(tmp_path / "classifier"))
  np.testing.assert_allclose(reloaded(texts), predictions, atol=1e-5, rtol=0)


@requires_shared(SP8K_MODEL)
def test_tool_on_an_encoder_checkpoint_to_a_bucket_and_on_bad_input(tmp_path, bucket, monkeypatch):
  config = tiny_config(vocab_size=8000)
  config.to_json_file(str(tmp_path / "albert_config.json"))
  encoder = albert_tf.AlbertEncoder(config)
  encoder(encoder.dummy_inputs())
  prefix = save_checkpoint(encoder, str(tmp_path / "encoder" / "model.ckpt"))
  # A model whose vocabulary is not sp8k's.
  small_config = tiny_config()
  small_config.to_json_file(str(tmp_path / "small_config.json"))
  small_encoder = albert_tf.AlbertEncoder(small_config)
  small_encoder(small_encoder.dummy_inputs())
  save_checkpoint(small_encoder, str(tmp_path / "small" / "model.ckpt"))

  (tmp_path / "earlier" / "encoder").mkdir(parents=True)  # an earlier export
  (tmp_path / "work").mkdir()
  hub_dir = f"{bucket}/hub"
  flags = [f"--albert_config_file={tmp_path / 'albert_config.json'}", f"--checkpoint={tmp_path / 'encoder'}",
           f"--spm_model_file={SP8K_MODEL}", "--max_seq_length=16"]
  bad_inputs = {
      "Checkpoint not found": [flags[0], f"--checkpoint={tmp_path / 'missing'}", *flags[2:],
                               f"--export_path={tmp_path / 'a'}"],
      f"The SentencePiece model {SP8K_MODEL} has 8000 pieces but the model's vocab_size is 120": [
          f"--albert_config_file={tmp_path / 'small_config.json'}", f"--checkpoint={tmp_path / 'small'}",
          *flags[2:], f"--export_path={tmp_path / 'b'}"],
      f"{tmp_path / 'earlier'} already exists": [*flags, f"--export_path={tmp_path / 'earlier'}"],
  }
  before = sorted(os.listdir(tmp_path))
  written = []
  write = files.write_atomically
  monkeypatch.setattr(files, "write_atomically", lambda path, content: written.append(path) or write(path, content))
  result = run_tool("export_tfhub", *flags, f"--export_path={hub_dir}", cwd=tmp_path / "work")
  monkeypatch.setattr(files, "write_atomically", write)
  failures = [run_tool("export_tfhub", *bad_flags) for bad_flags in bad_inputs.values()]

  assert result.returncode == 0, result.stderr[-3000:]
  lines = result.stdout.splitlines()
  assert lines[0].startswith(f"Exported {prefix} (AlbertEncoder) for TF Hub to {hub_dir} in ")
  size = re.fullmatch(rf"  {hub_dir}/encoder: __call__, serving_default; 4 layers of width 32; ([0-9.]+) MB",
                      lines[1])
  assert size and float(size.group(1)) > 0  # summed over the bucket's files
  assert lines[2].startswith(f"  {hub_dir}/preprocessor: __call__ (to 16 tokens), tokenize, bert_pack_inputs; "
                             "--do_lower_case=true --keep_accents=false; ")
  assert lines[3:] == [f"{prefix} has no masked-LM head, so the encoder has no mlm sub-object."]
  # Uploaded whole, the encoder's saved_model.pb last; nothing written to local disk instead.
  uploaded = [path for path in written if path.startswith(bucket)]
  assert uploaded[-1] == f"{hub_dir}/encoder/saved_model.pb" and f"{hub_dir}/preprocessor/saved_model.pb" in uploaded
  assert files.list_folder(bucket) == ["hub"] and os.listdir(tmp_path / "work") == []
  assert not hasattr(tf.saved_model.load(f"{hub_dir}/encoder"), "mlm")
  preprocessor = tf.saved_model.load(f"{hub_dir}/preprocessor")
  assert preprocessor(tf.constant(["한 문장"]))["input_word_ids"].shape == (1, 16)

  for message, failure in zip(bad_inputs, failures):
    errors = [line for line in failure.stderr.splitlines() if line.startswith("error:")]
    assert failure.returncode == 2 and len(errors) == 1 and message in errors[0], failure.stderr
    assert "Traceback" not in failure.stderr
  assert sorted(os.listdir(tmp_path)) == before  # the failed runs wrote nothing
  assert os.listdir(tmp_path / "earlier") == ["encoder"]


@requires_shared(SP8K_MODEL)
def test_an_interrupted_export_leaves_nothing_behind(tmp_path, monkeypatch):
  model = albert_tf.AlbertEncoder(tiny_config(vocab_size=8000))
  model(model.dummy_inputs())
  save = tf.saved_model.save
  seen_while_saving = []

  def save_then_stop(module, path, signatures=None, options=None):
    save(module, path, signatures=signatures, options=options)
    seen_while_saving.append(sorted(os.listdir(tmp_path)))
    raise KeyboardInterrupt("stopped while exporting")

  monkeypatch.setattr(tf.saved_model, "save", save_then_stop)
  with pytest.raises(KeyboardInterrupt):
    tfhub.export_tfhub(model, str(tmp_path / "hub"), SP8K_MODEL, 16)
  assert [[name.split("-")[0] for name in names] for names in seen_while_saving] == [[".hub.incomplete"]]  # aside
  assert os.listdir(tmp_path) == []  # and removed
