"""The tokenizer files of a Hugging Face folder, chosen by measuring that transformers gives our ids.

transformers 5's `AlbertTokenizer` (and `AutoTokenizer`, which picks it from `tokenizer_config.json`) does not
run `tokenizer.json`'s normaliser: it takes the vocabulary and the SentencePiece charsmap from it and rebuilds
its own steps from `keep_accents` and `do_lower_case`. With `keep_accents=False` those steps are NFKD and
dropping every combining mark, which leaves Hangul as jamo (all `<unk>`), turns が into か and drops Thai tone
marks and Devanagari viramas; our tokenizer strips Latin accents only (see `albert_tf.text.tokenizer`).

So a model trained with accents stripped is written as `keep_accents=True` with a charsmap whose rules do our
stripping (and lower-casing) and then the model's own normalisation, character by character: transformers
then prepares text as we do, in any script. The same charsmap goes into the folder's `spiece.model`, so
transformers 4's SentencePiece-based tokenizer agrees too, and the options the model was really trained with
are recorded in `spiece.tokenizer_options.json` for our tools. Each way of writing the files is measured
(the vocabulary's own pieces, probe lines in several scripts, the user's text) and the best is kept.
"""

import base64
import dataclasses
import functools
import os
import unicodedata
from typing import Dict, List, Optional, Sequence

import sentencepiece as spm
from sentencepiece import sentencepiece_model_pb2

from albert_tf import files
from albert_tf.text import tokenizer_options as options_lib
from albert_tf.text.tokenizer import (DIACRITICAL_MARKS, SPECIAL_TOKENS, SentencePieceTokenizer,
                                      google_segmentation_model, strip_accents)

SPM_FILE = "spiece.model"
TOKENIZER_FILES = (SPM_FILE, "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")
MODEL_INPUT_NAMES = ("input_ids", "token_type_ids", "attention_mask")  # what the tokenizer returns, segments included
# Lines in several scripts, each a way a tokenizer can go wrong: accents, a [MASK] glued to Hangul, Japanese
# voiced kana (dakuten), Thai tone marks, Devanagari viramas, compatibility forms, Google's quote rule.
PROBE_LINES = (
    "Café Zürich, naïve RÉSUMÉ façade; Ångström and Øresund.",
    "대한민국의 수도는[MASK]이다. 서울특별시는 한반도 중앙에 있다.",
    "ひらがなとカタカナ: がぎぐげご、パピプペポ。東京都で働いています。",
    "ภาษาไทยไม่ยากเกินไป ครับ",
    "क्या आप हिंदी बोलते हैं?",
    "Ｆｕｌｌｗｉｄｔｈ ﬁle ½ cup, It costs 1,000 or 3.0, won. ``quoted'' text",
)
# Lines beyond this many in a --parity_text file are not read: the measure is a sample.
MAX_PARITY_LINES = 20_000
# SentencePiece's log levels (glog's): compiling rules logs at INFO.
_SPM_INFO, _SPM_WARNING = 0, 1


# --- what transformers is told --------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class HfTokenizerSetting:
  """One way of writing the tokenizer files.

  Attributes:
    name: how it is described to the user.
    keep_accents: the `keep_accents` transformers is given.
    charsmap_prepares_text: whether the charsmap does our accent stripping (and lower-casing) before the
      model's own normalisation.
  """

  name: str
  keep_accents: bool
  charsmap_prepares_text: bool


def settings_for(options: options_lib.TokenizerOptions) -> List[HfTokenizerSetting]:
  """The settings worth measuring for a model trained with `options`, the one expected to be best first."""
  as_trained = HfTokenizerSetting(f"keep_accents={str(options.keep_accents).lower()}, the model's charsmap "
                                  "(as trained)", options.keep_accents, False)
  if options.keep_accents:
    return [as_trained]
  return [HfTokenizerSetting("keep_accents=true, accents stripped by the charsmap", True, True), as_trained]


def text_preparing_charsmap(proto: sentencepiece_model_pb2.ModelProto,
                            options: options_lib.TokenizerOptions) -> bytes:
  """SentencePiece's compiled normalisation rules for `strip_accents`, lower-casing, then `proto`'s own rules.

  A rule is written for every character these change and for every canonical sequence (a base and its
  combining marks, Hangul jamo) that our NFC composes, besides the model's own rules.
  """
  return _compiled_charsmap(proto.SerializeToString(), options)


# Compiling takes seconds (decompiling the model's rules, compiling some 200,000); an export compiles the same map
# for each tokenizer file it writes and checks, and a process that exports several models of one vocabulary
# compiles it once.
@functools.lru_cache(maxsize=8)
def _compiled_charsmap(serialized_proto: bytes, options: options_lib.TokenizerOptions) -> bytes:
  """`text_preparing_charsmap` of a serialized model."""
  model_rules = spm.SentencePieceNormalizer(model_proto=serialized_proto)
  keys = sorted(_characters_to_rewrite(options).union(source for source, _ in model_rules.Decompile()))
  targets = model_rules.Normalize(_each(functools.partial(_prepare, options=options), keys))
  rules = [(key, target) for key, target in zip(keys, targets) if key != target]
  spm.set_min_log_level(_SPM_WARNING)  # compiling logs each run at INFO; back to SentencePiece's default below
  try:
    compiled = spm.SentencePieceNormalizer(norm_map=rules)
  finally:
    spm.set_min_log_level(_SPM_INFO)
  spec = sentencepiece_model_pb2.NormalizerSpec()
  spec.ParseFromString(compiled.serialized_normalizer_spec())
  return spec.precompiled_charsmap


def _prepare(text: str, options: options_lib.TokenizerOptions) -> str:
  text = strip_accents(text) if not options.keep_accents else text
  return text.lower() if options.do_lower_case else text


# Walking every Unicode character (about 3 s) depends on the options alone: a process that exports models of
# several vocabularies trained with the same options walks once.
@functools.lru_cache(maxsize=4)
def _characters_to_rewrite(options: options_lib.TokenizerOptions) -> frozenset:
  """The characters `_prepare` changes and the canonical sequences (longer than one character) our NFC composes:
  with the model's own rules, the keys of every charsmap of `options`."""
  # Every character but the surrogates and the newline (which is left as it is).
  chars = [chr(code_point) for code_point in range(0x110000)
           if not 0xD800 <= code_point < 0xE000 and code_point != ord("\n")]
  keys = {char for char, prepared in zip(chars, _each(functools.partial(_prepare, options=options), chars))
          if prepared != char}
  keys.update(sequence for sequence in _each(lambda text: unicodedata.normalize("NFD", text), chars)
              if len(sequence) > 1)
  return frozenset(keys)


def _each(function, texts: Sequence[str]) -> List[str]:
  """`[function(text) for text in texts]`, in one call on newline-joined text where that gives the same.

  Normalising one long string is C-fast where a call per character is not; a newline neither changes nor
  composes with anything. Texts holding a newline themselves are done one by one.
  """
  joined = [text for text in texts if "\n" not in text]
  results = function("\n".join(joined)).split("\n")
  if len(results) != len(joined):
    raise RuntimeError("A normal form holds a newline; the charsmap cannot be built this way.")
  if len(joined) == len(texts):  # no text holds a newline: the results are in order
    return results
  done = dict(zip(joined, results))
  return [done[text] if text in done else function(text) for text in texts]


# --- the files ------------------------------------------------------------------------------------------

def _special_token(content: str) -> Dict:
  # Hugging Face's [MASK] strips the space before it; all are matched before normalisation.
  return {"content": content, "lstrip": content == "[MASK]", "normalized": False, "rstrip": False,
          "single_word": False, "special": True}


def tokenizer_json(proto: sentencepiece_model_pb2.ModelProto, options: options_lib.TokenizerOptions,
                   charsmap: bytes) -> Dict:
  """A `tokenizers` definition that gives exactly `SentencePieceTokenizer`'s ids, loaded as it is.

  `tokenizers.Tokenizer.from_file`, `PreTrainedTokenizerFast` and servers such as text-embeddings-inference
  run this file's steps, which are ours one for one; transformers' `AlbertTokenizer` takes only its
  vocabulary and charsmap (see the module's docstring).

  Args:
    proto: the segmentation model of `google_segmentation_model` (its scores are the vocabulary's).
    options: the options the model was trained with.
    charsmap: the charsmap transformers is to use.
  """
  vocab = [[piece.piece, piece.score] for piece in proto.pieces]
  unk_id = next(i for i, piece in enumerate(proto.pieces) if piece.type == piece.UNKNOWN)
  normalizers = [
      {"type": "Strip", "strip_left": True, "strip_right": True},
      {"type": "Replace", "pattern": {"Regex": r"\s+"}, "content": " "},
      {"type": "Replace", "pattern": {"String": "``"}, "content": '"'},
      {"type": "Replace", "pattern": {"String": "''"}, "content": '"'},
  ]
  if not options.keep_accents:
    normalizers += [{"type": "NFKD"}, {"type": "Replace", "pattern": {"Regex": DIACRITICAL_MARKS}, "content": ""},
                    {"type": "NFC"}]
  if options.do_lower_case:
    normalizers.append({"type": "Lowercase"})
  if charsmap:
    normalizers.append({"type": "Precompiled", "precompiled_charsmap": base64.b64encode(charsmap).decode()})
  normalizers += [{"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "},
                  {"type": "Strip", "strip_left": True, "strip_right": True}]
  ids = {piece.piece: i for i, piece in enumerate(proto.pieces) if piece.piece in SPECIAL_TOKENS}

  def template(*parts):
    return [{"SpecialToken": {"id": part, "type_id": type_id}} if part.startswith("[") else
            {"Sequence": {"id": part, "type_id": type_id}} for part, type_id in parts]

  return {
      "version": "1.0",
      "truncation": None,
      "padding": None,
      "added_tokens": [dict(_special_token(token), id=ids[token]) for token in SPECIAL_TOKENS],
      "normalizer": {"type": "Sequence", "normalizers": normalizers},
      "pre_tokenizer": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": False},
      "post_processor": {
          "type": "TemplateProcessing",
          "single": template(("[CLS]", 0), ("A", 0), ("[SEP]", 0)),
          "pair": template(("[CLS]", 0), ("A", 0), ("[SEP]", 0), ("B", 1), ("[SEP]", 1)),
          "special_tokens": {token: {"id": token, "ids": [ids[token]], "tokens": [token]}
                             for token in ("[CLS]", "[SEP]")},
      },
      "decoder": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": True},
      "model": {"type": "Unigram", "unk_id": unk_id, "vocab": vocab, "byte_fallback": False},
  }


def charsmap_for(segmentation: sentencepiece_model_pb2.ModelProto, options: options_lib.TokenizerOptions,
                 setting: HfTokenizerSetting) -> bytes:
  """The charsmap transformers is given under `setting`."""
  if setting.charsmap_prepares_text:
    return text_preparing_charsmap(segmentation, options)
  return segmentation.normalizer_spec.precompiled_charsmap


def write_tokenizer_files(spm_model_file: str, output_dir: str, options: options_lib.TokenizerOptions,
                          setting: HfTokenizerSetting, charsmap: bytes, model_max_length: int) -> Dict[str, str]:
  """Writes `TOKENIZER_FILES` and `spiece.tokenizer_options.json` for `setting`; returns the paths by name.

  Args:
    charsmap: `charsmap_for(...)` of the setting.
  """
  model_bytes = files.read_bytes(spm_model_file)
  segmentation = google_segmentation_model(spm_model_file)
  if setting.charsmap_prepares_text:
    proto = sentencepiece_model_pb2.ModelProto()
    proto.ParseFromString(model_bytes)
    proto.normalizer_spec.precompiled_charsmap = charsmap
    proto.normalizer_spec.name = f"{proto.normalizer_spec.name or 'identity'}_after_albert_tf_preprocessing"
    model_bytes = proto.SerializeToString()
  paths = {name: os.path.join(output_dir, name) for name in TOKENIZER_FILES}
  files.write_atomically(paths[SPM_FILE], model_bytes)
  tokenizer = tokenizer_json(segmentation, options, charsmap)
  files.write_json(paths["tokenizer.json"], tokenizer)
  files.write_json(paths["tokenizer_config.json"], {
      "added_tokens_decoder": {str(token["id"]): {k: v for k, v in token.items() if k != "id"}
                               for token in tokenizer["added_tokens"]},
      "bos_token": "[CLS]", "cls_token": "[CLS]", "eos_token": "[SEP]", "sep_token": "[SEP]",
      "unk_token": "<unk>", "pad_token": "<pad>", "mask_token": "[MASK]",
      "do_lower_case": options.do_lower_case, "keep_accents": setting.keep_accents, "remove_space": True,
      "sp_model_kwargs": {}, "model_max_length": model_max_length, "clean_up_tokenization_spaces": False,
      "tokenizer_class": "AlbertTokenizer",
      # transformers 5's AlbertTokenizer leaves token_type_ids out by default: `tokenizer(a, b)` and the pipelines
      # would then feed segment B as segment 0, and a pair model would answer another question.
      "model_input_names": list(MODEL_INPUT_NAMES),
  })
  files.write_json(paths["special_tokens_map.json"], {
      "bos_token": "[CLS]", "cls_token": "[CLS]", "eos_token": "[SEP]", "sep_token": "[SEP]",
      "unk_token": "<unk>", "pad_token": "<pad>",
      "mask_token": {k: v for k, v in _special_token("[MASK]").items() if k != "special"},
  })
  options_path = options_lib.write_options(paths[SPM_FILE], options)
  paths[os.path.basename(options_path)] = options_path
  return paths


# --- measuring ------------------------------------------------------------------------------------------

@dataclasses.dataclass
class TokenizerParity:
  """How many texts a transformers tokenizer class, loaded from the folder, turns into our ids."""

  tokenizer_class: str
  texts: int
  matching: int
  example: Optional[str] = None  # a text it tokenizes otherwise

  @property
  def rate(self) -> float:
    return self.matching / self.texts if self.texts else 1.0


@dataclasses.dataclass
class ParityReport:
  """What was measured for each setting, and the setting written."""

  chosen: HfTokenizerSetting
  measured: Dict[str, List[TokenizerParity]]  # by setting name; empty when transformers is not installed
  num_pieces: int = 0
  num_probe_lines: int = 0
  num_user_lines: int = 0
  transformers_version: Optional[str] = None

  def worst(self, setting: HfTokenizerSetting) -> Optional[TokenizerParity]:
    results = self.measured.get(setting.name)
    return min(results, key=lambda result: result.rate) if results else None

  def lines(self) -> List[str]:
    """The report to print: the parity of the chosen setting and of the others."""
    if not self.measured:
      return [f"transformers is not installed, so tokenizer parity was not measured; wrote "
              f"{self.chosen.name}."]
    texts = (f"{self.num_pieces:,} vocabulary pieces, {self.num_probe_lines} probe lines in six scripts, "
             f"{self.num_user_lines:,} --parity_text lines")
    lines = [f"Tokenizer parity with transformers {self.transformers_version} ({texts}):"]
    for name, results in self.measured.items():
      marker = "wrote" if name == self.chosen.name else "     "
      figures = ", ".join(f"{result.tokenizer_class} {100 * result.rate:.2f}%" for result in results)
      lines.append(f"  {marker} {name}: {figures}")
    return lines

  def warning(self) -> Optional[str]:
    """A loud message when even the chosen setting does not give our ids on every text measured."""
    worst = self.worst(self.chosen)
    if worst is None or worst.matching == worst.texts:
      return None
    return (f"WARNING: transformers' {worst.tokenizer_class} from this folder gives other ids than albert-tf on "
            f"{worst.texts - worst.matching:,} of {worst.texts:,} texts ({100 * (1 - worst.rate):.3f}%), with "
            f"every setting tried; for example: {worst.example!r}")


def parity_texts(tokenizer: SentencePieceTokenizer, parity_text_files: Sequence[str] = ()) -> Dict[str, List[str]]:
  """The texts parity is measured on: the vocabulary's pieces as text, `PROBE_LINES`, the users' lines."""
  pieces = []
  for piece_id in range(tokenizer.vocab_size):
    sp_model = tokenizer.sp_model
    if sp_model.IsControl(piece_id) or sp_model.IsUnknown(piece_id) or sp_model.IsUnused(piece_id):
      continue
    text = sp_model.IdToPiece(piece_id).replace("\u2581", " ").strip()
    if text:
      pieces.append(text)
  user_lines = []
  for path in parity_text_files:
    for number, line in files.read_utf8_lines(path):
      if number > MAX_PARITY_LINES:
        break
      if line.strip():
        user_lines.append(line.strip())
  return {"pieces": pieces, "probes": list(PROBE_LINES), "user": user_lines}


def measure_parity(folder: str, reference: SentencePieceTokenizer, texts: Sequence[str]) -> List[TokenizerParity]:
  """Parity of transformers' `AlbertTokenizer` and `AutoTokenizer` loaded from `folder` with `reference`."""
  import transformers  # pylint: disable=import-outside-toplevel; an optional dependency
  expected = [reference.encode(text) for text in texts]
  results = []
  for tokenizer_class in (transformers.AlbertTokenizer, transformers.AutoTokenizer):
    tokenizer = tokenizer_class.from_pretrained(folder)
    ids = tokenizer(list(texts), add_special_tokens=False)["input_ids"] if texts else []
    differing = [text for text, ours, theirs in zip(texts, expected, ids) if ours != theirs]
    results.append(TokenizerParity(tokenizer_class.__name__, len(texts), len(texts) - len(differing),
                                   differing[0] if differing else None))
  return results


def _transformers_version() -> Optional[str]:
  try:
    import transformers  # pylint: disable=import-outside-toplevel
  except ImportError:
    return None
  return transformers.__version__


def write_measured_tokenizer_files(spm_model_file: str, output_dir: str, options: options_lib.TokenizerOptions,
                                   model_max_length: int,
                                   parity_text_files: Sequence[str] = ()) -> (Dict[str, str], ParityReport):
  """Writes the tokenizer files with the setting under which transformers best reproduces our ids.

  Every setting of `settings_for(options)` is written to a local scratch folder (transformers reads local files
  only; never the user's folder, which may be a bucket) and measured with `measure_parity` on `parity_texts`; the
  best (the first on a tie) is written to `output_dir`. Without transformers installed, the first setting is
  written unmeasured.

  Returns:
    The paths written by file name, and the report.
  """
  reference = SentencePieceTokenizer(spm_model_file, options.do_lower_case, options.keep_accents)
  texts = parity_texts(reference, parity_text_files)
  settings = settings_for(options)
  report = ParityReport(chosen=settings[0], measured={}, num_pieces=len(texts["pieces"]),
                        num_probe_lines=len(texts["probes"]), num_user_lines=len(texts["user"]),
                        transformers_version=_transformers_version())
  segmentation = google_segmentation_model(spm_model_file)
  if report.transformers_version is None:
    charsmaps = {report.chosen.name: charsmap_for(segmentation, options, report.chosen)}
  else:
    charsmaps = {setting.name: charsmap_for(segmentation, options, setting) for setting in settings}
    all_texts = texts["pieces"] + texts["probes"] + texts["user"]
    with files.local_temp_folder(prefix="albert_tf.tokenizer_parity.") as scratch:
      for setting in settings:
        write_tokenizer_files(spm_model_file, scratch, options, setting, charsmaps[setting.name], model_max_length)
        report.measured[setting.name] = measure_parity(scratch, reference, all_texts)
    report.chosen = max(settings, key=lambda setting: report.worst(setting).rate)
  paths = write_tokenizer_files(spm_model_file, output_dir, options, report.chosen, charsmaps[report.chosen.name],
                                model_max_length)
  return paths, report
