"""`AlbertConfig`: the model hyperparameters, in the keys of Google's `albert_config.json`.

The JSON file is the contract between every tool of the package, as in Google's code. The same class reads
Hugging Face `config.json` files, which share Google's keys and add a few of their own.
"""

import copy
import dataclasses
import json
from typing import Any, Dict, Optional

from albert_tf import files
from albert_tf.errors import AlbertConfigError, OptionError

# The config's file name in a run, export or conversion directory (Google's).
CONFIG_FILE = "albert_config.json"

# Activation names accepted in `hidden_act`. Google's "gelu" is the tanh approximation (HF calls it
# "gelu_new"); the exact erf GELU, which Hugging Face calls "gelu", is "gelu_exact" here so that one name
# never means two functions inside this package.
ACTIVATIONS = ("gelu", "gelu_new", "gelu_pytorch_tanh", "gelu_exact", "relu", "tanh", "linear")

# Keys Google's released files carry but its model never reads. Kept on a round trip, otherwise ignored.
GOOGLE_LEGACY_KEYS = ("down_scale_factor", "gap_size", "net_structure_type", "num_memory_blocks",
                      "layers_to_keep")


@dataclasses.dataclass
class AlbertConfig:
  """Hyperparameters of an ALBERT model (Google's `AlbertConfig` fields and meanings).

  Attributes:
    vocab_size: number of SentencePiece pieces, V.
    hidden_size: width of the Transformer, H.
    num_hidden_layers: number of layers L the shared blocks are applied for.
    num_attention_heads: attention heads; must divide `hidden_size`.
    intermediate_size: width of the feed-forward layer.
    embedding_size: width E of the factorized embedding (V×E, then E→H).
    num_hidden_groups: G groups of parameters; layer l uses group int(l·G/L).
    inner_group_num: Transformer blocks inside one group, applied one after another in each layer.
    hidden_act: activation of the feed-forward and MLM-transform layers (see `ACTIVATIONS`).
    hidden_dropout_prob: dropout on embeddings and block outputs.
    attention_probs_dropout_prob: dropout on attention probabilities.
    max_position_embeddings: longest sequence the position table covers.
    type_vocab_size: number of segment (token type) ids.
    initializer_range: stddev of the truncated-normal initializer.
    extra: every other key of the file (Google's unused legacy keys, Hugging Face keys), written back
      unchanged by `to_dict`.
  """

  vocab_size: int
  hidden_size: int
  num_hidden_layers: int
  num_attention_heads: int
  intermediate_size: int
  embedding_size: int = 128
  num_hidden_groups: int = 1
  inner_group_num: int = 1
  hidden_act: str = "gelu"
  hidden_dropout_prob: float = 0.0
  attention_probs_dropout_prob: float = 0.0
  max_position_embeddings: int = 512
  type_vocab_size: int = 2
  initializer_range: float = 0.02
  extra: Dict[str, Any] = dataclasses.field(default_factory=dict)

  def __post_init__(self):
    self.validate()

  # Google's constructor defaults every size to xxlarge, so a file that forgets `hidden_size` silently
  # builds a 4096-wide model. Here the sizes that define the architecture must be written out.
  REQUIRED_KEYS = ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                   "intermediate_size")

  @classmethod
  def from_dict(cls, values: Dict[str, Any], source: Optional[str] = None) -> "AlbertConfig":
    """Builds a config from a dict of Google's or Hugging Face's keys.

    Args:
      values: the parsed JSON object.
      source: where it came from, for error messages.
    """
    where = f" in {source}" if source else ""
    if not isinstance(values, dict):
      raise AlbertConfigError(f"An ALBERT config must be a JSON object{where}, got {type(values).__name__}.")
    missing = [key for key in cls.REQUIRED_KEYS if key not in values]
    if missing:
      raise AlbertConfigError(f"ALBERT config{where} is missing required key(s): {', '.join(missing)}.")
    field_names = {f.name for f in dataclasses.fields(cls)} - {"extra"}
    known = {key: value for key, value in values.items() if key in field_names}
    extra = {key: copy.deepcopy(value) for key, value in values.items() if key not in field_names}
    # A Hugging Face config.json names the exact erf GELU "gelu"; Google's "gelu" is the tanh form.
    if values.get("model_type") == "albert" and known.get("hidden_act") == "gelu":
      known["hidden_act"] = "gelu_exact"
    try:
      return cls(**known, extra=extra)
    except AlbertConfigError as error:
      raise AlbertConfigError(f"{error}{' (' + source + ')' if source else ''}") from None

  @classmethod
  def from_json_file(cls, path: str) -> "AlbertConfig":
    """Reads Google's `albert_config.json` or a Hugging Face `config.json`."""
    files.require_file(path, "ALBERT config file")  # a folder is told as one, not as missing
    try:
      values = json.loads(files.read_text(path))
    except json.JSONDecodeError as error:
      raise AlbertConfigError(f"ALBERT config {path} is not valid JSON: {error}") from None
    return cls.from_dict(values, source=path)

  def to_dict(self) -> Dict[str, Any]:
    """Google's keys, followed by every extra key read from the source file."""
    values = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "extra"}
    values.update(copy.deepcopy(self.extra))
    return values

  def to_json_string(self) -> str:
    return json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n"

  def to_json_file(self, path: str) -> None:
    """Writes the config to a local or remote `path`, whole or not at all."""
    files.write_atomically(path, self.to_json_string())

  @property
  def attention_head_size(self) -> int:
    return self.hidden_size // self.num_attention_heads

  def group_of_layer(self, layer_index: int) -> int:
    """The parameter group layer `layer_index` uses: int(l·G/L), Google's and Hugging Face's routing."""
    return layer_index * self.num_hidden_groups // self.num_hidden_layers

  def check_max_seq_length(self, max_seq_length: int, source: str = "--max_seq_length") -> None:
    """Refuses a packed length below `[CLS] a [SEP]` or beyond the position table.

    Raises:
      OptionError: naming `source` (the flag or file that gave the length) and both bounds.
    """
    if not 3 <= max_seq_length <= self.max_position_embeddings:
      raise OptionError(f"{source}={max_seq_length} must be between 3 ([CLS] a [SEP]) and the model's "
                        f"max_position_embeddings={self.max_position_embeddings}.")

  def validate(self) -> None:
    """Raises `AlbertConfigError` naming the first field that is not valid."""
    for name in ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                 "intermediate_size", "embedding_size", "num_hidden_groups", "inner_group_num",
                 "max_position_embeddings", "type_vocab_size"):
      value = getattr(self, name)
      if isinstance(value, bool) or not isinstance(value, int):
        raise AlbertConfigError(f"ALBERT config field '{name}' must be an integer, got {value!r}.")
      if value <= 0:
        raise AlbertConfigError(f"ALBERT config field '{name}' must be positive, got {value}.")
    for name in ("hidden_dropout_prob", "attention_probs_dropout_prob", "initializer_range"):
      value = getattr(self, name)
      if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise AlbertConfigError(f"ALBERT config field '{name}' must be a number, got {value!r}.")
    for name in ("hidden_dropout_prob", "attention_probs_dropout_prob"):
      if not 0.0 <= getattr(self, name) < 1.0:
        raise AlbertConfigError(f"ALBERT config field '{name}' must be in [0, 1), got {getattr(self, name)}.")
    if self.initializer_range <= 0:
      raise AlbertConfigError(
          f"ALBERT config field 'initializer_range' must be positive, got {self.initializer_range}.")
    if not isinstance(self.hidden_act, str) or self.hidden_act not in ACTIVATIONS:
      raise AlbertConfigError(
          f"ALBERT config field 'hidden_act' has unknown activation {self.hidden_act!r}; "
          f"expected one of {', '.join(ACTIVATIONS)}.")
    if self.hidden_size % self.num_attention_heads:
      raise AlbertConfigError(
          f"ALBERT config field 'hidden_size' ({self.hidden_size}) must be divisible by "
          f"'num_attention_heads' ({self.num_attention_heads}).")
    if self.num_hidden_layers % self.num_hidden_groups:
      raise AlbertConfigError(
          f"ALBERT config field 'num_hidden_layers' ({self.num_hidden_layers}) must be divisible by "
          f"'num_hidden_groups' ({self.num_hidden_groups}).")
    if not isinstance(self.extra, dict):
      raise AlbertConfigError(f"ALBERT config 'extra' must be a dict, got {type(self.extra).__name__}.")
