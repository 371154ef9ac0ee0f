import json
import os

import pytest

from albert_tf import AlbertConfig
from albert_tf import files
from albert_tf.errors import AlbertConfigError
from tests.conftest import REPO

CONFIGS = os.path.join(REPO, "configs")


def write(tmp_path, values):
  path = tmp_path / "albert_config.json"
  path.write_text(json.dumps(values))
  return str(path)


def base_values(**changes):
  with open(os.path.join(CONFIGS, "albert_base.json")) as reader:
    values = json.load(reader)
  values.update(changes)
  return values


@pytest.mark.parametrize("name,hidden,layers,heads,intermediate", [
    ("base", 768, 12, 12, 3072), ("large", 1024, 24, 16, 4096),
    ("xlarge", 2048, 24, 16, 8192), ("xxlarge", 4096, 12, 64, 16384)])
def test_v2_configs_have_google_values(name, hidden, layers, heads, intermediate):
  config = AlbertConfig.from_json_file(os.path.join(CONFIGS, f"albert_{name}.json"))
  assert (config.hidden_size, config.num_hidden_layers, config.num_attention_heads,
          config.intermediate_size) == (hidden, layers, heads, intermediate)
  assert (config.embedding_size, config.vocab_size, config.hidden_dropout_prob,
          config.attention_probs_dropout_prob, config.hidden_act) == (128, 30000, 0, 0, "gelu")


def test_google_legacy_keys_are_kept_on_round_trip(tmp_path):
  values = base_values(layers_to_keep=[], net_structure_type=0, gap_size=0, num_memory_blocks=0,
                       down_scale_factor=1)
  config = AlbertConfig.from_json_file(write(tmp_path, values))
  assert config.extra["layers_to_keep"] == [] and config.extra["down_scale_factor"] == 1
  out = tmp_path / "out.json"
  config.to_json_file(str(out))
  assert json.loads(out.read_text()) == values
  assert AlbertConfig.from_json_file(str(out)) == config


def test_a_config_in_a_bucket_is_written_whole_and_read_back(bucket):
  config = AlbertConfig.from_dict(base_values())
  config.to_json_file(f"{bucket}/cfg.json")
  assert files.list_folder(bucket) == ["cfg.json"]  # no partial file left beside it
  assert AlbertConfig.from_json_file(f"{bucket}/cfg.json") == config
  with pytest.raises(FileNotFoundError, match=f"ALBERT config file not found: {bucket}/nope.json"):
    AlbertConfig.from_json_file(f"{bucket}/nope.json")


def test_reads_hugging_face_config_json(tmp_path):
  hf = base_values(model_type="albert", architectures=["AlbertForMaskedLM"], hidden_act="gelu_new",
                   layer_norm_eps=1e-12, pad_token_id=0, bos_token_id=2, eos_token_id=3,
                   classifier_dropout_prob=0.1, transformers_version="4.57.6")
  config = AlbertConfig.from_json_file(write(tmp_path, hf))
  assert config.hidden_act == "gelu_new" and config.hidden_size == 768
  assert config.extra["model_type"] == "albert"
  assert config.to_dict() == hf


def test_hugging_face_gelu_means_exact_gelu(tmp_path):
  """HF's "gelu" is the erf GELU; Google's "gelu" is the tanh approximation."""
  hf = AlbertConfig.from_json_file(write(tmp_path, base_values(model_type="albert", hidden_act="gelu")))
  google = AlbertConfig.from_json_file(write(tmp_path, base_values(hidden_act="gelu")))
  assert hf.hidden_act == "gelu_exact" and google.hidden_act == "gelu"


@pytest.mark.parametrize("changes,field", [
    (dict(hidden_size=770), "hidden_size"),
    (dict(num_hidden_layers=12, num_hidden_groups=5), "num_hidden_layers"),
    (dict(hidden_act="swishy"), "hidden_act"),
    (dict(hidden_size="768"), "hidden_size"),
    (dict(num_attention_heads=12.0), "num_attention_heads"),
    (dict(vocab_size=True), "vocab_size"),
    (dict(initializer_range="0.02"), "initializer_range"),
    (dict(hidden_dropout_prob=1.5), "hidden_dropout_prob"),
    (dict(embedding_size=0), "embedding_size"),
])
def test_bad_config_names_the_field(tmp_path, changes, field):
  with pytest.raises(AlbertConfigError, match=f"'{field}'"):
    AlbertConfig.from_json_file(write(tmp_path, base_values(**changes)))


@pytest.mark.parametrize("key", ["vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                                 "intermediate_size"])
def test_missing_required_key_is_named(tmp_path, key):
  values = base_values()
  del values[key]
  with pytest.raises(AlbertConfigError, match=f"missing required key.*{key}"):
    AlbertConfig.from_json_file(write(tmp_path, values))


def test_missing_and_malformed_files(tmp_path):
  with pytest.raises(FileNotFoundError, match="nope.json"):
    AlbertConfig.from_json_file(str(tmp_path / "nope.json"))
  bad = tmp_path / "bad.json"
  bad.write_text("{not json")
  with pytest.raises(AlbertConfigError, match="not valid JSON"):
    AlbertConfig.from_json_file(str(bad))
  bad.write_text("[1, 2]")
  with pytest.raises(AlbertConfigError, match="JSON object"):
    AlbertConfig.from_json_file(str(bad))


def test_group_routing_is_int_of_l_times_g_over_l():
  config = AlbertConfig(vocab_size=10, hidden_size=8, num_hidden_layers=12, num_attention_heads=2,
                        intermediate_size=8, num_hidden_groups=3)
  assert [config.group_of_layer(l) for l in range(12)] == [0] * 4 + [1] * 4 + [2] * 4
