"""SavedModel export: the in-graph tokenizer against the Python one, and every signature against Keras."""

import json
import os
import re
import subprocess
import sys
import tempfile
import textwrap

import numpy as np
import pytest
import tensorflow as tf

import albert_tf
from albert_tf import files
from albert_tf.modeling.checkpoints import save_checkpoint
from albert_tf.serving import saved_model
from albert_tf.text.graph_tokenizer import PYTHON_WHITESPACE, GraphTokenizer
from albert_tf.text.tokenizer import SentencePieceTokenizer
from tests.conftest import (SHARED, SP8K_MODEL, corpus_lines, padded_batch, python_pack, randomize, requires_shared,
                            run_tool, tiny_config)

CORPUS = os.path.join(SHARED, "corpus")
MAX_SEQ_LENGTH = 40


def test_whitespace_pattern_is_exactly_what_str_split_splits_on():
  pattern = re.compile(PYTHON_WHITESPACE)
  for code_point in range(0x110000):
    char = chr(code_point)
    assert char.isspace() == bool(pattern.fullmatch(char)), hex(code_point)


@requires_shared(SP8K_MODEL)
@pytest.mark.parametrize("do_lower_case,keep_accents", [(True, False), (True, True), (False, False)])
def test_graph_tokenizer_gives_the_python_ids_on_korean_and_english(do_lower_case, keep_accents):
  python_tokenizer = SentencePieceTokenizer(SP8K_MODEL, do_lower_case, keep_accents)
  graph_tokenizer = GraphTokenizer(SP8K_MODEL, do_lower_case, keep_accents)
  lines = []
  for name in ("ko_law.txt", "ko_libreoffice_help.txt", "en_wiki.txt", "en_botchan.txt"):
    lines += corpus_lines(name)
  lines += ["대한민국의 수도는[MASK]이다.", "The capital of France is [MASK] .", "[CLS]x[SEP] y [SEP]",
            "It costs 1,000 or 3.0, won.", "  Café\u3000\u00a0``quoted''\u2028naïve ", "", "   "]
  graph_ids = graph_tokenizer.encode(tf.constant(lines)).to_list()
  scores = python_tokenizer.sp_model.GetScore
  differing = []
  for line, ids in zip(lines, graph_ids):
    expected = python_tokenizer.encode(line)
    if ids != expected:
      differing.append(line)
      # The only difference allowed: an exact tie of the unigram model (the same pieces in another order),
      # which tensorflow-text's SentencePiece build breaks differently from the Python package's.
      assert sorted(ids) == sorted(expected), (line, ids, expected)
      assert sum(map(scores, ids)) == pytest.approx(sum(map(scores, expected)), abs=1e-4)
  assert len(lines) > 40000
  assert len(differing) <= len(lines) // 5000, differing


@requires_shared(SP8K_MODEL)
def test_packing_truncates_pairs_as_google_does():
  python_tokenizer = SentencePieceTokenizer(SP8K_MODEL)
  graph_tokenizer = GraphTokenizer(SP8K_MODEL)
  rng = np.random.default_rng(0)
  words = corpus_lines("en_wiki.txt", 200)[50].split() + corpus_lines("ko_law.txt", 50)[10].split()
  texts_a = [" ".join(rng.choice(words, rng.integers(0, 12))) for _ in range(200)]
  texts_b = [" ".join(rng.choice(words, rng.integers(0, 12))) if i % 3 else "" for i in range(200)]
  for max_seq_length in (5, 16):
    packed = graph_tokenizer.encode_and_pack(tf.constant(texts_a), tf.constant(texts_b), max_seq_length)
    single = graph_tokenizer.encode_and_pack(tf.constant(texts_a), None, max_seq_length)  # no text_b at all
    for row, (text_a, text_b) in enumerate(zip(texts_a, texts_b)):
      for inputs, second in ((packed, text_b), (single, "")):
        ids, mask, types = python_pack(python_tokenizer, text_a, second, max_seq_length)
        assert inputs["input_word_ids"][row].numpy().tolist() == ids, (text_a, second)
        assert inputs["input_mask"][row].numpy().tolist() == mask
        assert inputs["input_type_ids"][row].numpy().tolist() == types


@requires_shared(SP8K_MODEL)
def test_graph_tokenizer_defaults_are_googles_lower_case_without_accents():
  ids = GraphTokenizer(SP8K_MODEL).encode(tf.constant(["Café NAÏVE"])).to_list()[0]
  assert ids == SentencePieceTokenizer(SP8K_MODEL).sp_model.EncodeAsIds("cafe naive")


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
  """A randomly initialised pretrainer on the 8k Korean+English vocabulary, its checkpoint exported as version 1
  by the export tool: the model, the export's path and the tool's result."""
  if not os.path.exists(SP8K_MODEL):
    pytest.skip(f"{SP8K_MODEL} not present")
  root = tmp_path_factory.mktemp("serving")
  model = albert_tf.AlbertPretrainer(tiny_config(vocab_size=8000))
  model(model.dummy_inputs())
  randomize(model, scale=0.1)
  model.config.to_json_file(str(root / "albert_config.json"))
  save_checkpoint(model, str(root / "pretrained" / "model.ckpt-9"))
  result = run_tool("export_saved_model", f"--albert_config_file={root / 'albert_config.json'}",
                    f"--checkpoint={root / 'pretrained'}", f"--spm_model_file={SP8K_MODEL}",
                    f"--export_dir={root / 'albert'}", f"--max_seq_length={MAX_SEQ_LENGTH}", "--fill_mask_top_k=4")
  assert result.returncode == 0, result.stderr[-3000:]
  return model, str(root / "albert" / "1"), result


@pytest.fixture(scope="module")
def loaded(exported):
  """The export loaded once: the tests only call its functions."""
  return tf.saved_model.load(exported[1])


def sample_texts():
  return (corpus_lines("ko_libreoffice_help.txt", 30)[-6:] + corpus_lines("en_wiki.txt", 30)[-6:] +
          ["짧은 문장", "A much longer English sentence that will certainly need to be truncated " * 3])


def test_export_writes_a_versioned_directory_with_assets(exported):
  model, path, _ = exported
  assert os.path.basename(path) == "1"
  assert sorted(os.listdir(os.path.join(path, "assets"))) == ["albert_config.json", "spiece.model",
                                                               "spiece.tokenizer_options.json"]
  with open(os.path.join(path, "assets", "spiece.tokenizer_options.json"), encoding="utf-8") as reader:
    assert json.load(reader) == {"do_lower_case": True, "keep_accents": False}
  assert albert_tf.AlbertConfig.from_json_file(os.path.join(path, "assets", "albert_config.json")) == model.config
  assert saved_model.next_version(os.path.dirname(path)) == 2
  with pytest.raises(ValueError, match="already exists"):
    saved_model.export_saved_model(model, os.path.dirname(path), SP8K_MODEL, MAX_SEQ_LENGTH, version=1)
  assert sorted(os.listdir(os.path.dirname(path))) == ["1"]


def test_serving_default_equals_the_keras_encoder(exported, loaded):
  model = exported[0]
  batch = padded_batch(8000)
  del batch["masked_lm_positions"]
  served = loaded.signatures["serving_default"](**batch)
  expected = model.encoder(batch, training=False)
  for name in ("sequence_output", "pooled_output"):
    np.testing.assert_allclose(served[name], expected[name], atol=1e-5)


def test_encode_text_packs_like_the_python_tokenizer_and_encodes_like_keras(exported, loaded):
  model = exported[0]
  tokenizer = SentencePieceTokenizer(SP8K_MODEL)
  texts_a = sample_texts()
  texts_b = list(reversed(texts_a))
  single = loaded.signatures["encode_text"](text_a=tf.constant(texts_a))
  pair = loaded.signatures["encode_text_pair"](text_a=tf.constant(texts_a), text_b=tf.constant(texts_b))
  for outputs, seconds in ((single, [None] * len(texts_a)), (pair, texts_b)):
    for row, (text_a, text_b) in enumerate(zip(texts_a, seconds)):
      ids, mask, types = python_pack(tokenizer, text_a, text_b, MAX_SEQ_LENGTH)
      assert outputs["input_word_ids"][row].numpy().tolist() == ids
      assert outputs["input_mask"][row].numpy().tolist() == mask
      assert outputs["input_type_ids"][row].numpy().tolist() == types
    expected = model.encoder({name: outputs[name] for name in ("input_word_ids", "input_mask", "input_type_ids")})
    np.testing.assert_allclose(outputs["sequence_output"], expected["sequence_output"], atol=1e-5)
    np.testing.assert_allclose(outputs["pooled_output"], expected["pooled_output"], atol=1e-5)
  # The restored function also takes the optional second text directly.
  np.testing.assert_array_equal(loaded.encode_text(tf.constant(texts_a))["input_word_ids"],
                                single["input_word_ids"])
  np.testing.assert_array_equal(loaded.encode_text(tf.constant(texts_a), tf.constant(texts_b))["input_type_ids"],
                                pair["input_type_ids"])


def test_fill_mask_gives_the_top_k_of_the_keras_mlm_head(exported, loaded):
  model = exported[0]
  tokenizer = SentencePieceTokenizer(SP8K_MODEL)
  texts = ["대한민국의 수도는 [MASK]이다.", "The [MASK] sat on the [MASK] .", "No mask at all."]
  outputs = loaded.signatures["fill_mask"](text=tf.constant(texts))
  assert outputs["num_masks"].numpy().tolist() == [1, 2, 0]
  for row, text in enumerate(texts):
    ids, mask, types = python_pack(tokenizer, text, None, MAX_SEQ_LENGTH)
    positions = [i for i, token in enumerate(ids) if token == tokenizer.mask_id]
    count = len(positions)
    assert outputs["mask_positions"][row, :count].numpy().tolist() == positions
    assert np.all(outputs["mask_positions"][row, count:] == -1)
    assert np.all(outputs["top_k_ids"][row, count:] == -1) and np.all(outputs["top_k_scores"][row, count:] == 0)
    if not count:
      continue
    inputs = {"input_word_ids": [ids], "input_mask": [mask], "input_type_ids": [types],
              "masked_lm_positions": [positions]}
    logits = model({name: tf.constant(value, tf.int32) for name, value in inputs.items()})["mlm_logits"][0]
    probabilities = tf.nn.softmax(logits).numpy()
    expected_ids = np.argsort(-probabilities, axis=-1)[:, :4]
    np.testing.assert_array_equal(outputs["top_k_ids"][row, :count], expected_ids)
    np.testing.assert_allclose(outputs["top_k_scores"][row, :count],
                               np.take_along_axis(probabilities, expected_ids, axis=-1), atol=1e-6)
    tokens = [[token.decode() for token in candidates] for candidates in outputs["top_k_tokens"][row, :count].numpy()]
    assert tokens == [tokenizer.convert_ids_to_tokens(candidates) for candidates in expected_ids]


def test_a_process_without_albert_tf_serves_the_export(exported, tmp_path):
  model, path, _ = exported
  texts = sample_texts()
  script = textwrap.dedent(f"""
      import sys
      sys.modules["albert_tf"] = None  # importing albert_tf in here would fail
      import numpy as np
      import tensorflow as tf
      import tensorflow_text  # registers the SentencePiece op
      loaded = tf.saved_model.load({path!r})
      texts = tf.constant({texts!r})
      encoded = loaded.signatures["encode_text"](text_a=texts)
      filled = loaded.signatures["fill_mask"](text=tf.constant(["서울은 [MASK]의 수도이다."]))
      np.savez({str(tmp_path / "served.npz")!r}, pooled_output=encoded["pooled_output"].numpy(),
               input_word_ids=encoded["input_word_ids"].numpy(), top_k_ids=filled["top_k_ids"].numpy())
      """)
  result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                          cwd=str(tmp_path))
  assert result.returncode == 0, result.stderr[-3000:]
  served = np.load(tmp_path / "served.npz")
  tokenizer = SentencePieceTokenizer(SP8K_MODEL)
  expected_ids = np.array([python_pack(tokenizer, text, None, MAX_SEQ_LENGTH)[0] for text in texts])
  np.testing.assert_array_equal(served["input_word_ids"], expected_ids)
  expected = model.encoder({"input_word_ids": expected_ids, "input_mask": (expected_ids > 0).astype(np.int32),
                            "input_type_ids": np.zeros_like(expected_ids)})
  np.testing.assert_allclose(served["pooled_output"], expected["pooled_output"], atol=1e-5)
  assert served["top_k_ids"].shape == (1, 1, 4)


@requires_shared(SP8K_MODEL)
def test_export_tool_on_an_encoder_checkpoint_has_no_fill_mask(tmp_path):
  config = tiny_config(vocab_size=8000)
  config_file = tmp_path / "albert_config.json"
  config.to_json_file(str(config_file))
  encoder = albert_tf.AlbertEncoder(config)
  encoder(encoder.dummy_inputs())
  save_checkpoint(encoder, str(tmp_path / "encoder" / "model.ckpt"))
  export_dir = tmp_path / "export"
  common = [f"--albert_config_file={config_file}", f"--checkpoint={tmp_path / 'encoder'}",
            f"--spm_model_file={SP8K_MODEL}", f"--export_dir={export_dir}"]
  result = run_tool("export_saved_model", *common, "--max_seq_length=16", "--export_version=7",
                    "--text_padding=max_seq_length")
  assert result.returncode == 0, result.stderr[-3000:]
  assert "no fill_mask signature" in result.stdout
  loaded = tf.saved_model.load(str(export_dir / "7"))
  assert sorted(loaded.signatures) == ["encode_text", "encode_text_pair", "sentence_embedding", "serving_default"]
  assert loaded.signatures["encode_text"](text_a=tf.constant(["한 문장"]))["input_word_ids"].shape == (1, 16)

  too_long = run_tool("export_saved_model", *common, "--max_seq_length=65")
  assert too_long.returncode == 2 and "error: --max_seq_length=65" in too_long.stderr
  other_model = os.path.join(CORPUS, "botchan_en_unigram_1000.model")
  wrong_vocab = run_tool("export_saved_model", *common[:2], f"--spm_model_file={other_model}", common[3],
                         "--max_seq_length=16")
  assert wrong_vocab.returncode == 2 and f"error: SentencePiece model {other_model}" in wrong_vocab.stderr
  assert sorted(os.listdir(export_dir)) == ["7"]


@requires_shared(SP8K_MODEL)
def test_export_refuses_a_vocabulary_that_is_not_the_models(tmp_path):
  model = albert_tf.AlbertEncoder(tiny_config())
  model(model.dummy_inputs())
  with pytest.raises(ValueError, match="has 8000 pieces but the model's vocab_size is 120"):
    saved_model.export_saved_model(model, str(tmp_path / "export"), SP8K_MODEL, 16)
  assert not (tmp_path / "export").exists()


def test_encode_text_pair_with_an_empty_text_b_is_one_segment(loaded):
  texts_a = ["첫 문장입니다.", "The first sentence.", "세 번째"]
  pair = loaded.signatures["encode_text_pair"](text_a=tf.constant(texts_a), text_b=tf.constant(["", "second", ""]))
  single = loaded.signatures["encode_text"](text_a=tf.constant(texts_a))
  width = single["input_word_ids"].shape[1]  # each batch is padded to its own longest text
  tokenizer = SentencePieceTokenizer(SP8K_MODEL)
  for row in (0, 2):
    for name in ("input_word_ids", "input_mask", "input_type_ids"):
      np.testing.assert_array_equal(pair[name][row, :width], single[name][row], err_msg=name)
    np.testing.assert_allclose(pair["pooled_output"][row], single["pooled_output"][row], atol=1e-5)
    assert pair["input_type_ids"][row].numpy().sum() == 0
  ids, _, types = python_pack(tokenizer, texts_a[1], "second", MAX_SEQ_LENGTH)
  packed_width = pair["input_word_ids"].shape[1]
  assert pair["input_word_ids"][1].numpy().tolist() == ids[:packed_width] and set(ids[packed_width:]) <= {0}
  assert pair["input_type_ids"][1].numpy().tolist() == types[:packed_width]
  assert sum(types) > 0


def test_text_signatures_pad_to_the_longest_text_with_the_outputs_of_the_fixed_length_form(exported, loaded,
                                                                                           tmp_path):
  """The default export pads a batch to its longest packed text, rounded up to a multiple of 8; the
  fixed-length form (--text_padding=max_seq_length) pads to max_seq_length. Same ids where both have them,
  padding beyond, and the same outputs (1e-5) from every text signature."""
  model = exported[0]
  fixed = tf.saved_model.load(saved_model.export_saved_model(model, str(tmp_path), SP8K_MODEL, MAX_SEQ_LENGTH,
                                                             fill_mask_top_k=4, text_padding="max_seq_length"))
  short = corpus_lines("ko_libreoffice_help.txt", 12)[2:5] + corpus_lines("en_wiki.txt", 12)[2:4]
  short = [text[:30] for text in short]
  batches = [(["짧은 문장"], None), (short, None), (short, list(reversed(short))),
             (short[:2] + ["word " * MAX_SEQ_LENGTH], short[2:4] + ["x"])]  # the last reaches max_seq_length
  tokenizer = SentencePieceTokenizer(SP8K_MODEL)
  widths = []
  for texts_a, texts_b in batches:
    inputs = {"text_a": tf.constant(texts_a)}
    name = "encode_text"
    if texts_b is not None:
      inputs["text_b"], name = tf.constant(texts_b), "encode_text_pair"
    dynamic, full = loaded.signatures[name](**inputs), fixed.signatures[name](**inputs)
    longest = max(sum(python_pack(tokenizer, a, b, MAX_SEQ_LENGTH)[1])
                  for a, b in zip(texts_a, texts_b or [None] * len(texts_a)))
    width = dynamic["input_word_ids"].shape[1]
    widths.append(width)
    assert width == min(MAX_SEQ_LENGTH, -(-longest // 8) * 8) and full["input_word_ids"].shape[1] == MAX_SEQ_LENGTH
    for key in ("input_word_ids", "input_mask", "input_type_ids"):
      np.testing.assert_array_equal(dynamic[key], full[key][:, :width], err_msg=key)
      assert not full[key][:, width:].numpy().any()
    np.testing.assert_allclose(dynamic["pooled_output"], full["pooled_output"], atol=1e-5)
    real = dynamic["input_mask"].numpy().astype(bool)
    np.testing.assert_allclose(dynamic["sequence_output"].numpy()[real],
                               full["sequence_output"].numpy()[:, :width][real], atol=1e-5)
  assert widths[0] == 8 and widths[-1] == MAX_SEQ_LENGTH and len(set(widths)) > 2

  texts = tf.constant(short + ["The [MASK] sat on the [MASK] ."])
  np.testing.assert_allclose(loaded.signatures["sentence_embedding"](text=texts)["embedding"],
                             fixed.signatures["sentence_embedding"](text=texts)["embedding"], atol=1e-5)
  dynamic, full = loaded.signatures["fill_mask"](text=texts), fixed.signatures["fill_mask"](text=texts)
  np.testing.assert_array_equal(dynamic["top_k_ids"], full["top_k_ids"])
  np.testing.assert_allclose(dynamic["top_k_scores"], full["top_k_scores"], atol=1e-5)


def test_export_refuses_an_unknown_text_padding(exported, tmp_path):
  for padding, multiple, message in (("dynamic", 8, "Text padding 'dynamic'"), ("longest", 0, "pad_to_multiple_of=0")):
    with pytest.raises(ValueError, match=message):
      saved_model.export_saved_model(exported[0], str(tmp_path), SP8K_MODEL, MAX_SEQ_LENGTH, text_padding=padding,
                                     pad_to_multiple_of=multiple)
  assert not os.listdir(tmp_path)


def test_a_multiple_choice_export_carries_its_tokenizer_and_scores_the_options_as_keras(tmp_path):
  """RACE's serving module once took its asset files as `fill_mask_top_k`: its SavedModel had no tokenizer."""
  model = albert_tf.AlbertMultipleChoice(tiny_config(vocab_size=8000), dropout_rate=0.0)
  batch = padded_batch(8000)
  del batch["masked_lm_positions"]
  options = {key: tf.stack([batch[key], batch[key][::-1]], axis=1) for key in batch}
  model(options)
  randomize(model, scale=0.1)
  path = saved_model.export_saved_model(model, str(tmp_path), SP8K_MODEL, MAX_SEQ_LENGTH)
  assert sorted(os.listdir(os.path.join(path, "assets"))) == ["albert_config.json", "spiece.model",
                                                               "spiece.tokenizer_options.json"]
  served = tf.saved_model.load(path).signatures["serving_default"](**options)
  np.testing.assert_allclose(served["probabilities"], tf.nn.softmax(model(options)["logits"]), atol=1e-5)


def test_fill_mask_counts_only_the_masks_that_fit_in_max_seq_length(exported, loaded):
  model = exported[0]
  tokenizer = SentencePieceTokenizer(SP8K_MODEL)
  long_text = "[MASK] " + " ".join(["word"] * MAX_SEQ_LENGTH) + " [MASK] [MASK]"
  outputs = loaded.signatures["fill_mask"](text=tf.constant([long_text, "The [MASK] ."]))
  assert outputs["num_masks"].numpy().tolist() == [1, 1]  # the two masks past the cut are gone
  assert outputs["mask_positions"].numpy()[0].tolist() == [1] and outputs["mask_positions"].shape == (2, 1)
  ids, mask, types = python_pack(tokenizer, long_text, None, MAX_SEQ_LENGTH)
  assert ids.count(tokenizer.mask_id) == 1 and ids[1] == tokenizer.mask_id
  logits = model({"input_word_ids": tf.constant([ids]), "input_mask": tf.constant([mask]),
                  "input_type_ids": tf.constant([types]), "masked_lm_positions": tf.constant([[1]])})["mlm_logits"]
  np.testing.assert_array_equal(outputs["top_k_ids"][0, 0], np.argsort(-logits[0, 0].numpy())[:4])


@requires_shared(SP8K_MODEL)
def test_a_version_directory_appears_only_once_complete(tmp_path, monkeypatch):
  model = albert_tf.AlbertEncoder(tiny_config(vocab_size=8000))
  model(model.dummy_inputs())
  export_dir = tmp_path / "albert"
  save = tf.saved_model.save
  seen_while_saving = []

  def save_then_fail(module, path, signatures, options):
    save(module, path, signatures=signatures, options=options)
    seen_while_saving.append(sorted(os.listdir(export_dir)))
    raise KeyboardInterrupt("stopped while exporting")

  monkeypatch.setattr(tf.saved_model, "save", save_then_fail)
  with pytest.raises(KeyboardInterrupt):
    saved_model.export_saved_model(model, str(export_dir), SP8K_MODEL, 16)
  # Written aside, under a name TF Serving ignores.
  assert [[name.split("-")[0] for name in names] for names in seen_while_saving] == [[".1.incomplete"]]
  assert os.listdir(export_dir) == []  # and removed on failure
  monkeypatch.setattr(tf.saved_model, "save", save)
  path = saved_model.export_saved_model(model, str(export_dir), SP8K_MODEL, 16)
  assert os.listdir(export_dir) == ["1"] and path == str(export_dir / "1")
  assert "serving_default" in tf.saved_model.load(path).signatures


@requires_shared(SP8K_MODEL)
def test_an_export_to_a_bucket_that_fails_leaves_nothing_there_or_on_local_disk(bucket, tmp_path, monkeypatch):
  """The export is staged on local disk, not beside its place in the bucket (a bucket cannot rename a folder into
  place), and removed when the saving fails. (tests/serving/test_onnx_export.py exports to a bucket whole.)"""
  model = albert_tf.AlbertEncoder(tiny_config(vocab_size=8000))
  model(model.dummy_inputs())
  (tmp_path / "temp").mkdir()
  (tmp_path / "work").mkdir()
  monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "temp"))
  monkeypatch.chdir(tmp_path / "work")
  monkeypatch.setattr(saved_model.AlbertServingModule, "signatures", lambda module: {})  # nothing to trace

  def save_cut_short(module, path, signatures, options):
    with open(os.path.join(path, "saved_model.pb"), "wb") as writer:
      writer.write(b"the first bytes")
    raise KeyboardInterrupt("stopped while exporting")

  monkeypatch.setattr(tf.saved_model, "save", save_cut_short)
  with pytest.raises(KeyboardInterrupt):
    saved_model.export_saved_model(model, f"{bucket}/albert", SP8K_MODEL, 16)
  assert files.list_folder(bucket) == []
  assert os.listdir(tmp_path / "temp") == [] and os.listdir(tmp_path / "work") == []


def classifier_run_directory(tmp_path, labels):
  """A fine-tuned classifier as run_classifier leaves it: checkpoints, task.json and albert_config.json."""
  config = tiny_config(vocab_size=8000)
  model = albert_tf.AlbertClassifier(config, labels)
  model(model.dummy_inputs())
  randomize(model, scale=0.2)
  model.classifier_head.output_bias.assign([3.0, 0.0, -3.0])  # class 0 wins: any other label order shows
  save_checkpoint(model, str(tmp_path / "run" / "model.ckpt-4"))
  (tmp_path / "run" / "task.json").write_text(json.dumps({"task": "tsv", "label_list": list(labels)}))
  config.to_json_file(str(tmp_path / "run" / "albert_config.json"))
  return model


@requires_shared(SP8K_MODEL)
def test_export_tool_on_a_pretrainer_and_on_a_classifier_directory(exported, loaded, tmp_path):
  pretrainer, _, result = exported  # the module's export: the tool's run on the pretrainer's checkpoint
  assert result.returncode == 0, result.stderr[-3000:]
  assert "fill_mask" in result.stdout
  tokenizer = SentencePieceTokenizer(SP8K_MODEL)
  text = "서울은 [MASK]의 수도이다."
  filled = loaded.signatures["fill_mask"](text=tf.constant([text]))
  ids, mask, types = python_pack(tokenizer, text, None, MAX_SEQ_LENGTH)
  position = ids.index(tokenizer.mask_id)
  logits = pretrainer({"input_word_ids": tf.constant([ids]), "input_mask": tf.constant([mask]),
                       "input_type_ids": tf.constant([types]), "masked_lm_positions": tf.constant([[position]])})
  assert filled["top_k_ids"].shape == (1, 1, 4)
  np.testing.assert_array_equal(filled["top_k_ids"][0, 0], np.argsort(-logits["mlm_logits"][0, 0].numpy())[:4])

  labels = ("positive", "negative", "neutral")  # not sorted: the head's order is task.json's
  classifier = classifier_run_directory(tmp_path, labels)
  result = run_tool("export_saved_model", f"--albert_config_file={tmp_path / 'run' / 'albert_config.json'}",
                    f"--checkpoint={tmp_path / 'run'}", f"--spm_model_file={SP8K_MODEL}",
                    f"--export_dir={tmp_path / 'classifier'}", "--max_seq_length=16")
  assert result.returncode == 0, result.stderr[-3000:]
  loaded = tf.saved_model.load(str(tmp_path / "classifier" / "1"))
  texts = ["좋은 영화", "a dull film", "그저 그런 편"]
  served = loaded.signatures["classify_text"](text_a=tf.constant(texts))
  inputs = GraphTokenizer(SP8K_MODEL).encode_and_pack(tf.constant(texts), None, 16)
  probabilities = tf.nn.softmax(classifier(inputs, training=False)["logits"]).numpy()
  np.testing.assert_allclose(served["probabilities"], probabilities, atol=1e-5)
  assert [label.decode() for label in served["labels"].numpy()] == ["positive"] * 3
