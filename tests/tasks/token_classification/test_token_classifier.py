"""The token classifier's model side: a label per position, its checkpoints through the registry, Hugging
Face's `AlbertForTokenClassification` both ways, and its SavedModel."""

import json
import os

import numpy as np
import pytest
import tensorflow as tf
import torch
import transformers

from albert_tf.interop import conversion
from albert_tf.interop.huggingface import export_to_hf
from albert_tf.modeling import task_heads
from albert_tf.modeling.checkpoints import build_model_for_checkpoint, save_checkpoint
from albert_tf.serving import saved_model
from albert_tf.tasks.token_classification import data, serving
from albert_tf.tasks.token_classification.model import AlbertTokenClassifier
from albert_tf.text.graph_tokenizer import GraphTokenizer
from albert_tf.text.tokenizer import SentencePieceTokenizer
from tests.conftest import (SHARED, SP8K_MODEL, corpus_lines, padded_batch, randomize_text_sensitive, requires_shared,
                            tiny_config)
from tests.hf_torch import hf_logits

LABELS = ("O", "B-PER", "I-PER", "B-LOC", "I-LOC")
VOCAB_SIZE = 8000  # the shared SentencePiece model's, for the SavedModel
KLUE_NER_DEV = os.path.join(SHARED, "klue", "klue-ner-v1.1_dev.tsv")


@pytest.fixture(scope="module")
def tagger():
  """A token classifier with random weights that tell texts apart, and a padded batch of ids."""
  config = tiny_config(vocab_size=VOCAB_SIZE, num_hidden_groups=2)
  model = AlbertTokenClassifier(config, LABELS, dropout_rate=0.2)
  batch = padded_batch(VOCAB_SIZE)
  del batch["masked_lm_positions"]
  model(batch)
  randomize_text_sensitive(model, seed=3)
  return model, batch


def real(values, batch):
  """`values` `[batch, seq, ...]` at the positions that hold tokens, as one array."""
  return np.asarray(values)[batch["input_mask"].numpy().astype(bool)]


def test_the_head_labels_every_position_of_the_sequence_output(tagger):
  model, batch = tagger
  logits = model(batch, training=False)["logits"]
  assert logits.dtype == tf.float32 and logits.shape == (3, 11, len(LABELS))
  sequence_output = model.encoder(batch, training=False)["sequence_output"].numpy()
  head = model.token_classifier_head
  expected = sequence_output @ head.output_weights.numpy().T + head.output_bias.numpy()
  np.testing.assert_allclose(logits, expected, atol=1e-5, rtol=0)
  assert np.ptp(real(logits, batch).argmax(-1)) > 0  # positions get different labels, not one vector

  again = AlbertTokenClassifier.from_config(model.get_config())
  assert again.label_names == LABELS and again.dropout_rate == 0.2 and again.config == model.config
  with pytest.raises(ValueError, match="at least 2 distinct labels"):
    AlbertTokenClassifier(model.config, ["O", "B-PER", "O"])


def test_a_checkpoint_rebuilds_with_the_labels_of_its_task_json(tagger, tmp_path):
  model, batch = tagger
  for run, info in (("run", {"task": "ner", "label_list": list(LABELS)}), ("bare", None)):
    save_checkpoint(model, str(tmp_path / run / "model.ckpt-7"))
    if info is not None:
      (tmp_path / run / "task.json").write_text(json.dumps(info))
    restored, _ = build_model_for_checkpoint(model.config, str(tmp_path / run))
    assert type(restored) is AlbertTokenClassifier
    # Without task.json the number of labels comes from the head's shape, the names are transformers'.
    defaults = tuple(f"LABEL_{index}" for index in range(len(LABELS)))
    assert restored.label_names == (LABELS if info else defaults)
    np.testing.assert_allclose(restored(batch)["logits"], model(batch)["logits"], atol=1e-6, rtol=0)


def test_export_loads_as_token_classification_with_our_labels_and_logits(tagger, tmp_path):
  model, batch = tagger
  export_to_hf(model, str(tmp_path))
  written = json.loads((tmp_path / "config.json").read_text())
  assert written["architectures"] == ["AlbertForTokenClassification"]
  hf_model, info = transformers.AlbertForTokenClassification.from_pretrained(str(tmp_path),
                                                                            output_loading_info=True)
  assert not info["missing_keys"] and not info["unexpected_keys"] and not info["mismatched_keys"]
  assert [hf_model.config.id2label[index] for index in range(len(LABELS))] == list(LABELS)
  assert hf_model.config.label2id == {name: index for index, name in enumerate(LABELS)}
  assert hf_model.config.classifier_dropout_prob == 0.2
  np.testing.assert_allclose(real(hf_logits(hf_model, batch), batch), real(model(batch)["logits"], batch),
                             atol=1e-4, rtol=0)


def random_hf_token_classifier(labels, seed=0):
  """A transformers `AlbertForTokenClassification` of the tiny shape, its weights random but text-sensitive
  (as `randomize_text_sensitive`)."""
  torch.manual_seed(seed)
  config = transformers.AlbertConfig(
      vocab_size=120, hidden_size=32, num_hidden_layers=4, num_attention_heads=4, intermediate_size=37,
      embedding_size=16, max_position_embeddings=64, num_hidden_groups=2, classifier_dropout_prob=0.3,
      id2label=dict(enumerate(labels)), label2id={name: index for index, name in enumerate(labels)})
  model = transformers.AlbertForTokenClassification(config)
  with torch.no_grad():
    for name, parameter in model.named_parameters():
      if "LayerNorm" in name or "layer_norm" in name:
        parameter.copy_(1 + 0.1 * torch.randn_like(parameter) if name.endswith("weight") else
                        0.02 * torch.randn_like(parameter))
      else:
        parameter.normal_(0.0, 0.02 if name.endswith("bias") else 0.3)
  return model.eval()


def test_a_transformers_token_classifier_converts_to_ours_with_its_logits(tmp_path):
  labels = ("O", "B-ORG", "I-ORG")
  hf_model = random_hf_token_classifier(labels)
  hf_model.save_pretrained(str(tmp_path / "hf"))
  result, _ = conversion.convert("hf", str(tmp_path / "hf"), str(tmp_path / "out"))
  model = result.model
  assert type(model) is AlbertTokenClassifier and result.parts == ["encoder", "token classifier head"]
  assert model.label_names == labels and model.dropout_rate == 0.3
  assert any("no pooler" in note for note in result.notes)  # AlbertForTokenClassification has none
  batch = padded_batch(120)
  expected = real(hf_logits(hf_model, batch), batch)
  np.testing.assert_allclose(real(model(batch)["logits"], batch), expected, atol=1e-4, rtol=0)
  restored, _ = build_model_for_checkpoint(model.config, str(tmp_path / "out"))
  assert type(restored) is AlbertTokenClassifier
  np.testing.assert_allclose(real(restored(batch)["logits"], batch), expected, atol=1e-4, rtol=0)


def test_a_converted_transformers_token_classifier_exports_with_its_labels(tmp_path):
  # The converted folder has no run: the task.json conversion writes is what names the head's outputs later.
  labels = ("O", "B-ORG", "I-ORG")
  random_hf_token_classifier(labels).save_pretrained(str(tmp_path / "hf"))
  result, paths = conversion.convert("hf", str(tmp_path / "hf"), str(tmp_path / "out"))
  assert json.loads((tmp_path / "out" / "task.json").read_text()) == {"label_list": list(labels)}
  assert "task.json" in paths  # listed in the tool's summary
  restored, prefix = build_model_for_checkpoint(result.model.config, str(tmp_path / "out"))
  assert restored.label_names == labels
  assert saved_model.run_task_options(restored, prefix) is None  # no task name: Hugging Face's word units
  export_to_hf(restored, str(tmp_path / "exported"))
  written = json.loads((tmp_path / "exported" / "config.json").read_text())
  assert written["id2label"] == {str(index): name for index, name in enumerate(labels)}
  # Overwritten by an encoder, the folder keeps no task.json of the tagger that was there.
  random_hf_token_classifier(labels).albert.save_pretrained(str(tmp_path / "encoder"))
  _, paths = conversion.convert("hf", str(tmp_path / "encoder"), str(tmp_path / "out"), overwrite=True)
  assert not (tmp_path / "out" / "task.json").exists() and "task.json" not in paths


def test_google_checkpoints_cannot_mark_the_head():
  # Google has no token classification script, and its run_classifier layout is shared with other heads.
  [head] = [head for head in task_heads.registered_heads() if head.model_class is AlbertTokenClassifier]
  assert head.google_scope is None


@requires_shared(SP8K_MODEL)
def test_saved_model_serves_the_keras_labels_at_every_position(tagger, tmp_path):
  model, batch = tagger
  path = saved_model.export_saved_model(model, str(tmp_path), SP8K_MODEL, max_seq_length=16)
  loaded = tf.saved_model.load(path)
  assert {"serving_default", "encode_text", "encode_text_pair"} <= set(loaded.signatures)
  served = loaded.signatures["serving_default"](**batch)
  logits = model(batch, training=False)["logits"].numpy()
  np.testing.assert_allclose(served["logits"], logits, atol=1e-5, rtol=0)
  np.testing.assert_allclose(served["probabilities"], tf.nn.softmax(logits), atol=1e-5, rtol=0)
  np.testing.assert_array_equal(served["predictions"], logits.argmax(-1))
  assert served["labels"].numpy().astype(str).tolist() == np.asarray(LABELS)[logits.argmax(-1)].tolist()


def python_entities(module, tokenizer, sentences):
  """The entities the Python predictions find in each (units, separator): the pieces' tags from
  `serving_default`, back to the units (`PieceAlignment.unit_tags`), strict IOB2 spans, as character spans of
  the joined text."""
  alignments = [data.align_units(units, separator, tokenizer) for units, separator in sentences]
  width = max(len(alignment.pieces) for alignment in alignments) + 2
  ids = tf.constant([[2, *alignment.token_ids, 3] + [0] * (width - len(alignment.pieces) - 2)
                     for alignment in alignments], tf.int32)
  mask = tf.cast(ids > 0, tf.int32)
  piece_tags = module.tag(ids, mask, tf.zeros_like(ids))["labels"].numpy()
  found = []
  for row, ((units, separator), alignment) in enumerate(zip(sentences, alignments)):
    tags = alignment.unit_tags([tag.decode() for tag in piece_tags[row, 1:1 + len(alignment.pieces)]])
    offsets = np.cumsum([0] + [len(unit) + len(separator) for unit in units])
    found.append([(kind, int(offsets[start]), int(offsets[end - 1] + len(units[end - 1])))
                  for kind, start, end in data.entity_spans(tags)])
  return found


@pytest.mark.parametrize("units", ["character", "word"])
def test_tag_text_finds_the_entities_of_the_python_predictions(tagger, units):
  model, _ = tagger
  tokenizer = SentencePieceTokenizer(SP8K_MODEL)
  module = serving.serving_module(model, GraphTokenizer(SP8K_MODEL), saved_model.TextPacking(64), None,
                                  serving.TaggingOptions(units))
  if units == "character":  # KLUE's sentences, spaces and <unk> runs included, tagged per character
    sentences = [(example.units, "") for example in data.read_klue_ner(KLUE_NER_DEV)[:60]]
  else:  # words of Korean and English lines, tagged per word
    sentences = [(line.split(), " ") for line in corpus_lines("ko_libreoffice_help.txt", 30)
                 + corpus_lines("en_wiki.txt", 30)]
  sentences = [(units_, separator) for units_, separator in sentences
               if len(data.align_units(units_, separator, tokenizer).pieces) <= 62]
  texts = [separator.join(units_) for units_, separator in sentences]
  found = module.tag_text(tf.constant(texts))
  entities = 0
  for row, (text, expected) in enumerate(zip(texts, python_entities(module, tokenizer, sentences))):
    count = int(found["num_entities"][row])
    served = [(found["entity_labels"][row, k].numpy().decode(), int(found["entity_starts"][row, k]),
               int(found["entity_ends"][row, k])) for k in range(count)]
    assert served == expected, text
    for k, (_, start, end) in enumerate(served):
      assert found["entity_texts"][row, k].numpy().decode() == text[start:end]
      assert 0 < float(found["entity_scores"][row, k]) <= 1
    assert not found["truncated"][row]
    entities += count
  assert entities > 50, entities  # random weights tag plenty, across every rule of the decoding
