"""The tokenizer options a vocabulary was trained with, recorded beside its SentencePiece model.

`do_lower_case` and `keep_accents` change the ids of most lines, and nothing in a `.model` file says which
were used: passed by hand to every tool, a wrong default silently gives other ids than training saw. So
`train_sentencepiece` and `convert_checkpoint` write them to `<model>.tokenizer_options.json` beside
`<model>.model`, and every tool and export reads them from there. A Hugging Face folder's
`tokenizer_config.json` is read when there is no such file (its options are the model's, unless albert-tf
wrote the folder: then the file is there and says what the model was trained with).
"""

import dataclasses
import json
import os
from typing import Optional, Tuple

from albert_tf.errors import DataError, OptionError
from albert_tf.files import file_exists, read_bytes, write_atomically

OPTIONS_SUFFIX = ".tokenizer_options.json"
_HF_TOKENIZER_CONFIG = "tokenizer_config.json"


@dataclasses.dataclass(frozen=True)
class TokenizerOptions:
  """How text is prepared before SentencePiece: Google's defaults (uncased, accents stripped).

  Attributes:
    do_lower_case, keep_accents: what the tokenizer does to text before SentencePiece.
    pretokenizer: the Korean analyzer whose morpheme boundaries the vocabulary's pieces were learned within
      (`train_sentencepiece --pretokenizer`), or None. What the vocabulary is, for the record: tokenizing runs no
      analyzer, so it changes no ids and no tool checks it.
  """

  do_lower_case: bool = True
  keep_accents: bool = False
  pretokenizer: Optional[str] = None

  def as_flags(self) -> str:
    return f"--do_lower_case={str(self.do_lower_case).lower()} --keep_accents={str(self.keep_accents).lower()}"


def options_file(spm_model_file: str) -> str:
  """`<model path without .model>.tokenizer_options.json`: `spiece.model` → `spiece.tokenizer_options.json`."""
  stem = spm_model_file[:-len(".model")] if spm_model_file.endswith(".model") else spm_model_file
  return stem + OPTIONS_SUFFIX


def _options_in(path: str, values) -> TokenizerOptions:
  if not isinstance(values, dict):
    raise DataError(f"{path} is not a JSON object of tokenizer options.")
  fields = {}
  for name in ("do_lower_case", "keep_accents"):
    if not isinstance(values.get(name), bool):
      raise DataError(f"{path}: {name} must be true or false, got {values.get(name)!r}.")
    fields[name] = values[name]
  pretokenizer = values.get("pretokenizer")
  if pretokenizer is not None and not (isinstance(pretokenizer, str) and pretokenizer):
    raise DataError(f"{path}: pretokenizer must be the name of an analyzer, got {pretokenizer!r}.")
  return TokenizerOptions(**fields, pretokenizer=pretokenizer)


def _read_json(path: str):
  try:
    return json.loads(read_bytes(path).decode("utf-8"))
  except (UnicodeDecodeError, json.JSONDecodeError) as error:
    raise DataError(f"{path} is not valid JSON: {error}") from None


def recorded_options(spm_model_file: str) -> Optional[Tuple[str, TokenizerOptions]]:
  """The file that records `spm_model_file`'s options and the options it holds, each file read once; or None."""
  path = options_file(spm_model_file)
  if file_exists(path):
    return path, _options_in(path, _read_json(path))
  hf_config = os.path.join(os.path.dirname(spm_model_file), _HF_TOKENIZER_CONFIG)
  if file_exists(hf_config):
    values = _read_json(hf_config)
    if isinstance(values, dict) and all(name in values for name in ("do_lower_case", "keep_accents")):
      return hf_config, _options_in(hf_config, values)
  return None


def read_options(spm_model_file: str) -> Optional[TokenizerOptions]:
  """The options recorded for `spm_model_file`, or None when nothing records them.

  Read from `options_file(spm_model_file)`, else from a Hugging Face `tokenizer_config.json` beside it that
  sets both options.

  Raises:
    DataError: the record is not valid.
  """
  record = recorded_options(spm_model_file)
  return None if record is None else record[1]


def write_options(spm_model_file: str, options: TokenizerOptions) -> str:
  """Records `options` beside `spm_model_file` (a pretokenizer only when there is one); returns the file written."""
  values = {name: value for name, value in dataclasses.asdict(options).items() if value is not None}
  return write_atomically(options_file(spm_model_file), json.dumps(values, indent=2) + "\n")


def resolve_options(spm_model_file: str, do_lower_case: Optional[bool] = None,
                    keep_accents: Optional[bool] = None) -> TokenizerOptions:
  """The options to tokenize with: the recorded ones, else Google's defaults; `None` means not given.

  Raises:
    OptionError: a given option contradicts the record (the ids would not be the ones training saw).
    DataError: the record is not valid.
  """
  given = {name: value for name, value in (("do_lower_case", do_lower_case), ("keep_accents", keep_accents))
           if value is not None}
  record = recorded_options(spm_model_file)
  if record is None:
    return dataclasses.replace(TokenizerOptions(), **given)
  source, recorded = record
  contradictions = [f"--{name}={str(value).lower()}" for name, value in given.items()
                    if getattr(recorded, name) != value]
  if contradictions:
    raise OptionError(
        f"{' '.join(contradictions)} contradicts {source}, which records that "
        f"{os.path.basename(spm_model_file)} was trained with {recorded.as_flags()}: the ids would differ from "
        "the ones the model learned. Leave the flag out (the record is used), or fix the record if it is wrong.")
  return recorded
