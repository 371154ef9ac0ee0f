import os

import numpy as np
import pytest
import tensorflow as tf
import tf_keras
import torch
import transformers

import albert_tf
from albert_tf.modeling import layers
from albert_tf.tasks.squad import heads as squad_heads
from tests.conftest import REPO, padded_batch, randomize, tiny_config

# transformers.AlbertModel's parameter counts for Google's v2 configs (keras-hub presets agree).
V2_PARAMETER_COUNTS = {"base": 11_683_584, "large": 17_683_968, "xlarge": 58_724_864,
                       "xxlarge": 222_595_584}


@pytest.mark.parametrize("name", sorted(V2_PARAMETER_COUNTS))
def test_v2_parameter_counts_equal_hugging_face(name, monkeypatch):
  path = os.path.join(REPO, "configs", f"albert_{name}.json")
  # Zeros instead of 222M truncated-normal draws (most of the time): a count needs the variables, not their values.
  monkeypatch.setattr(tf_keras.initializers.TruncatedNormal, "__call__",
                      lambda self, shape, dtype=None, **kwargs: tf.zeros(shape, dtype or tf.float32))
  encoder = albert_tf.AlbertEncoder(albert_tf.AlbertConfig.from_json_file(path))
  encoder(encoder.dummy_inputs())
  with torch.device("meta"):  # counts shapes without allocating 222M weights
    hf_model = transformers.AlbertModel(transformers.AlbertConfig.from_json_file(path))
  hf_count = sum(p.numel() for p in hf_model.parameters())
  assert encoder.count_params() == hf_count == V2_PARAMETER_COUNTS[name]


def test_projection_only_when_embedding_and_hidden_widths_differ():
  for embedding_size, expect_projection in ((16, True), (32, False)):
    encoder = albert_tf.AlbertEncoder(tiny_config(embedding_size=embedding_size))
    encoder(encoder.dummy_inputs())
    assert (encoder.embeddings.projection is not None) == expect_projection
    names = [v.name for v in encoder.variables]
    assert any("embedding_hidden_mapping_in" in n for n in names) == expect_projection


def test_parameters_do_not_grow_with_layers():
  """Cross-layer sharing: 4 or 24 layers over one group have the same parameters."""
  counts = []
  for layers_count in (4, 24):
    encoder = albert_tf.AlbertEncoder(tiny_config(num_hidden_layers=layers_count))
    encoder(encoder.dummy_inputs())
    counts.append(encoder.count_params())
  assert counts[0] == counts[1]


def test_groups_and_inner_groups_are_applied_in_google_order():
  """Layer l runs every inner block of group int(l·G/L), in order."""
  config = tiny_config(num_hidden_layers=4, num_hidden_groups=2, inner_group_num=2)
  encoder = albert_tf.AlbertEncoder(config)
  batch = padded_batch(config.vocab_size)
  del batch["masked_lm_positions"]
  encoder(batch)
  randomize(encoder)
  outputs = encoder(batch)
  assert len(encoder.groups) == 2 and all(len(group) == 2 for group in encoder.groups)
  assert len(outputs["encoder_outputs"]) == 4

  hidden = encoder.embeddings(batch["input_word_ids"], batch["input_type_ids"])
  adder = (1.0 - tf.cast(batch["input_mask"][:, None, None, :], tf.float32)) * -10000.0
  for layer_index, group in enumerate([0, 0, 1, 1]):
    for block in encoder.groups[group]:
      hidden = block(hidden, adder)
    np.testing.assert_allclose(outputs["encoder_outputs"][layer_index], hidden, atol=1e-5)
  np.testing.assert_allclose(outputs["sequence_output"], hidden, atol=1e-5)
  np.testing.assert_allclose(outputs["pooled_output"], encoder.pooler(hidden[:, 0]), atol=1e-5)


def test_padding_does_not_change_real_positions():
  config = tiny_config()
  encoder = albert_tf.AlbertEncoder(config)
  ids = tf.constant([[5, 6, 7, 8, 0, 0]], tf.int32)
  mask = tf.constant([[1, 1, 1, 1, 0, 0]], tf.int32)
  inputs = {"input_word_ids": ids, "input_mask": mask, "input_type_ids": tf.zeros_like(ids)}
  encoder(inputs)
  randomize(encoder)
  padded = encoder(inputs)["sequence_output"][:, :4]
  other_padding = dict(inputs, input_word_ids=tf.constant([[5, 6, 7, 8, 99, 42]], tf.int32))
  np.testing.assert_allclose(padded, encoder(other_padding)["sequence_output"][:, :4], atol=1e-5)
  short = {key: value[:, :4] for key, value in inputs.items()}
  np.testing.assert_allclose(padded, encoder(short)["sequence_output"], atol=1e-5)


def test_pretrainer_output_shapes_and_tied_embeddings():
  config = tiny_config()
  pretrainer = albert_tf.AlbertPretrainer(config)
  outputs = pretrainer(padded_batch(config.vocab_size, batch_size=3, max_predictions=4))
  assert outputs["mlm_logits"].shape == [3, 4, config.vocab_size]
  assert outputs["sop_logits"].shape == [3, 2]
  assert outputs["mlm_logits"].dtype == tf.float32
  word_tables = [v for v in pretrainer.variables if v.shape == [config.vocab_size, config.embedding_size]]
  assert len(word_tables) == 1  # the MLM decoder is the word table, not a copy


def test_activations_match_their_formulas():
  x = tf.constant(np.linspace(-4, 4, 33), tf.float32)
  tanh_form = 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))
  np.testing.assert_allclose(layers.get_activation("gelu")(x), tanh_form, atol=1e-6)
  np.testing.assert_allclose(layers.get_activation("gelu_new")(x), tanh_form, atol=1e-6)
  exact = 0.5 * x * (1 + tf.math.erf(x / np.sqrt(2.0)))
  np.testing.assert_allclose(layers.get_activation("gelu_exact")(x), exact, atol=1e-6)


@pytest.mark.parametrize("layer", [
    layers.FactorizedEmbedding(vocab_size=50, embedding_size=8, hidden_size=16, max_position_embeddings=20,
                               type_vocab_size=3, initializer_range=0.05, dropout_rate=0.1),
    layers.AlbertTransformerBlock(hidden_size=16, num_attention_heads=2, intermediate_size=20,
                                  hidden_act="relu", hidden_dropout_prob=0.1),
    layers.MaskedLMHead(vocab_size=50, embedding_size=8, hidden_act="gelu"),
    layers.SentenceOrderHead(hidden_size=16),
    layers.ClassificationHead(hidden_size=16, num_classes=3, dropout_rate=0.1),
    layers.TokenPooling("max"),
    layers.SentenceEmbeddingHead("cls", projection_dim=8, initializer_range=0.05),
    squad_heads.SpanLogitsHead(hidden_size=16, initializer_range=0.05),
    squad_heads.XLNetSpanHead(hidden_size=16, start_n_top=3, end_n_top=2, dropout_rate=0.2),
], ids=lambda layer: type(layer).__name__)
def test_layer_get_config_round_trips(layer):
  config = layer.get_config()
  clone = type(layer).from_config(config)
  assert clone.get_config() == config
  assert tf_keras.utils.get_registered_object(f"albert_tf>{type(layer).__name__}") is type(layer)


@pytest.mark.parametrize("model_class", [albert_tf.AlbertEncoder, albert_tf.AlbertPretrainer,
                                         albert_tf.AlbertClassifier, albert_tf.AlbertSentenceEncoder,
                                         albert_tf.AlbertQuestionAnswerer, albert_tf.AlbertQuestionAnswererV2,
                                         albert_tf.AlbertMultipleChoice])
def test_model_get_config_round_trips(model_class):
  model = model_class(tiny_config(num_hidden_groups=2))
  clone = model_class.from_config(model.get_config())
  assert clone.config == model.config and clone.get_config() == model.get_config()


def test_reading_comprehension_heads_are_googles():
  """SQuAD v2's head masks p_mask tokens, conditions the end on the start and beams at inference; RACE's scores
  each option alone."""
  config = tiny_config()
  batch = padded_batch(config.vocab_size)
  p_mask = tf.cast(batch["input_type_ids"] == 0, tf.int32) * tf.constant([[0] + [1] * 10])
  v2 = albert_tf.AlbertQuestionAnswererV2(config, start_n_top=3, end_n_top=2)
  beam = v2(dict(batch, p_mask=p_mask))
  assert beam["start_top_index"].shape == (3, 3) and beam["end_top_index"].shape == (3, 6)
  # No start or end falls on a masked token: [CLS] and the second segment only.
  for name in ("start_top_index", "end_top_index"):
    assert not tf.reduce_any(tf.gather(p_mask, beam[name], batch_dims=1) > 0)
  training = v2(dict(batch, p_mask=p_mask, start_positions=tf.constant([0, 0, 0])), training=True)
  np.testing.assert_allclose(tf.reduce_sum(tf.exp(training["end_log_probs"]), -1), 1.0, atol=1e-5)
  # The end distribution depends on the start it is conditioned on.
  moved = v2(dict(batch, p_mask=p_mask, start_positions=tf.constant([5, 5, 5])), training=False)
  other = v2(dict(batch, p_mask=p_mask, start_positions=tf.constant([0, 0, 0])), training=False)
  assert not np.allclose(moved["end_log_probs"], other["end_log_probs"])

  choices = albert_tf.AlbertMultipleChoice(config, dropout_rate=0.0)
  stacked = {key: tf.stack([batch[key], batch[key][::-1]], axis=1) for key in ("input_word_ids", "input_mask",
                                                                              "input_type_ids")}
  logits = choices(stacked)["logits"]
  assert logits.shape == (3, 2)
  np.testing.assert_allclose(logits[:, 0], logits[::-1, 1], atol=1e-5)  # each option scored on its own


def test_classifier_outputs_and_labels():
  config = tiny_config()
  classifier = albert_tf.AlbertClassifier(config, ["entailment", "neutral", "contradiction"], dropout_rate=0.2)
  clone = albert_tf.AlbertClassifier.from_config(classifier.get_config())
  assert clone.label_names == ("entailment", "neutral", "contradiction") and clone.dropout_rate == 0.2
  batch = padded_batch(config.vocab_size)
  assert classifier(batch)["logits"].shape == (3, 3) and classifier(batch)["logits"].dtype == tf.float32
  regression = albert_tf.AlbertClassifier(config)
  assert regression.is_regression and regression(batch)["logits"].shape == (3, 1)
  with pytest.raises(ValueError, match="at least 2 labels"):
    albert_tf.AlbertClassifier(config, ["only"])
  # Google's head: logits = dropout(pooled) · output_weightsᵀ + output_bias, weights stored [classes, H].
  head = classifier.classifier_head
  pooled = classifier.encoder(batch)["pooled_output"]
  np.testing.assert_allclose(classifier(batch)["logits"], pooled @ tf.transpose(head.output_weights) +
                             head.output_bias, atol=1e-6)
  assert head.output_weights.shape == (3, config.hidden_size)


def _unit(vectors):
  return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


@pytest.mark.parametrize("pooling", ["mean", "cls", "max"])
def test_sentence_embedding_pools_real_tokens_projects_and_normalises(pooling):
  config = tiny_config()
  batch = padded_batch(config.vocab_size)
  mask = batch["input_mask"].numpy()[:, :, None]
  model = albert_tf.AlbertSentenceEncoder(config, pooling)
  sequence_output = model.encoder(batch)["sequence_output"].numpy()
  pooled = {"mean": (sequence_output * mask).sum(1) / mask.sum(1), "cls": sequence_output[:, 0],
            "max": np.where(mask > 0, sequence_output, -np.inf).max(1)}[pooling]
  np.testing.assert_allclose(model(batch)["embedding"], _unit(pooled), atol=1e-6)
  # Padding never counts: the last row alone, unpadded, gets the same embedding.
  length = int(mask[-1].sum())
  alone = {name: value[-1:, :length] for name, value in batch.items() if name != "masked_lm_positions"}
  np.testing.assert_allclose(model(alone)["embedding"], model(batch)["embedding"][-1:], atol=1e-5)
  assert not model.encoder.pooler.trainable
  assert all(variable is not model.encoder.pooler.kernel for variable in model.trainable_variables)

  projected = albert_tf.AlbertSentenceEncoder(config, pooling, projection_dim=7)
  projected(batch)
  projected.encoder.set_weights(model.encoder.get_weights())
  head = projected.sentence_head.projection
  expected = np.tanh(pooled @ head.kernel.numpy() + head.bias.numpy())
  np.testing.assert_allclose(projected(batch)["embedding"], _unit(expected), atol=1e-6)
  assert projected.embedding_size == 7 and model.embedding_size == config.hidden_size
  with pytest.raises(ValueError, match="'sum' is not one of mean, cls, max"):
    albert_tf.AlbertSentenceEncoder(config, "sum")


def test_variable_names_carry_what_the_optimizer_excludes_from_weight_decay():
  """LAMB skips weight decay and the trust ratio for names holding LayerNorm, layer_norm or bias."""
  encoder = albert_tf.AlbertEncoder(tiny_config(num_hidden_groups=2))
  encoder(encoder.dummy_inputs())
  block = [f"{layer}/{weight}" for layer in ("query", "key", "value", "attention_output") for weight in
           ("kernel", "bias")] + ["attention_layer_norm/gamma", "attention_layer_norm/beta", "intermediate/kernel",
                                  "intermediate/bias", "ffn_output/kernel", "ffn_output/bias",
                                  "output_layer_norm/gamma", "output_layer_norm/beta"]
  expected = [f"albert_encoder/embeddings/{name}:0" for name in (
      "word_embeddings", "position_embeddings", "token_type_embeddings", "LayerNorm/gamma", "LayerNorm/beta",
      "embedding_hidden_mapping_in/kernel", "embedding_hidden_mapping_in/bias")]
  expected += [f"albert_encoder/group_{group}_inner_0/{name}:0" for group in (0, 1) for name in block]
  expected += ["albert_encoder/pooler/kernel:0", "albert_encoder/pooler/bias:0"]
  assert [v.name for v in encoder.variables] == expected


def test_pooled_output_is_tanh_of_the_first_token():
  """A small pooler kernel keeps tanh away from ±1, where every position would look alike (and one layer
  keeps the positions apart: random shared layers stacked four deep make them nearly equal)."""
  config = tiny_config(num_hidden_layers=1)
  encoder = albert_tf.AlbertEncoder(config)
  batch = padded_batch(config.vocab_size)
  del batch["masked_lm_positions"]
  encoder(batch)
  randomize(encoder)
  encoder.pooler.kernel.assign(encoder.pooler.kernel * 0.1)
  outputs = encoder(batch)
  first = outputs["sequence_output"][:, 0]
  dense = tf.matmul(first, encoder.pooler.kernel) + encoder.pooler.bias
  assert np.abs(dense).max() < 1.0  # tanh is far from saturation
  np.testing.assert_allclose(outputs["pooled_output"], np.tanh(dense), atol=1e-6)
  second = np.tanh(tf.matmul(outputs["sequence_output"][:, 1], encoder.pooler.kernel) + encoder.pooler.bias)
  assert np.abs(outputs["pooled_output"] - second).max() > 1e-3


def test_missing_mask_and_segment_ids_mean_all_real_and_segment_0():
  config = tiny_config()
  encoder = albert_tf.AlbertEncoder(config)
  ids = tf.constant([[5, 6, 7, 8]], tf.int32)
  encoder({"input_word_ids": ids})
  randomize(encoder)
  full = encoder({"input_word_ids": ids, "input_mask": tf.ones_like(ids), "input_type_ids": tf.zeros_like(ids)})
  bare = encoder({"input_word_ids": ids})
  np.testing.assert_allclose(bare["sequence_output"], full["sequence_output"], atol=1e-6)
  assert set(encoder.dummy_inputs()) == {"input_word_ids", "input_mask", "input_type_ids"}


@pytest.mark.parametrize("dropout", ["hidden_dropout_prob", "attention_probs_dropout_prob"])
def test_dropout_applies_in_training_only(dropout):
  config = tiny_config(**{dropout: 0.5})
  encoder = albert_tf.AlbertEncoder(config)
  batch = padded_batch(config.vocab_size)
  del batch["masked_lm_positions"]
  encoder(batch)
  randomize(encoder, scale=0.1)
  inference = encoder(batch, training=False)["sequence_output"]
  np.testing.assert_array_equal(encoder(batch, training=False)["sequence_output"], inference)
  assert np.abs(encoder(batch, training=True)["sequence_output"] - inference).max() > 1e-3


def test_initializer_range_reaches_every_weight_matrix():
  encoder = albert_tf.AlbertEncoder(tiny_config(initializer_range=0.2, hidden_size=64, intermediate_size=64))
  encoder(encoder.dummy_inputs())
  checked = 0
  for variable in encoder.variables:
    # Kernels and embedding tables: truncated normal, std 0.88 × 0.2 = 0.176. Tables of 1,000 values or more
    # (the sample std then within ±0.005 of it, 3 sigma); the 2 × 16 segment table is too small to tell.
    if variable.shape.rank == 2 and variable.shape.num_elements() >= 1000:
      assert 0.15 < float(np.std(variable.numpy())) < 0.2, variable.name
      checked += 1
  assert checked == 10  # word and position tables, projection, 6 block kernels, pooler
