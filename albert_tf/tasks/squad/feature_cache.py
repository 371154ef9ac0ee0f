"""SQuAD's feature files: a cache of the features, checked against the settings that made them.

The feature file holds Google's features (`unique_ids`, `input_ids`, `input_mask`, `segment_ids`, `p_mask`
and, for training, `start_positions`, `end_positions`, `is_impossible`), which Google's `input_fn_builder`
reads, plus what rebuilds a `SquadFeature` without tokenizing again (`example_index`, `doc_span_index`,
`query_length`, `token_start_to_char`, `token_end_to_char`, `token_is_max_context`).
"""

import hashlib
import json
import re
import sys
from typing import List, Optional

import numpy as np
import tensorflow as tf

from albert_tf import files
from albert_tf.errors import DataError
from albert_tf.tasks.squad.examples import SQUAD_LAYOUT, ExampleReader, QuestionLayout, SquadExample, read_examples
from albert_tf.tasks.squad.features import SquadFeature, SquadSplit, check_feature_options, convert_examples_to_features
from albert_tf.text.tokenizer import SentencePieceTokenizer

_CACHE_FORMAT = 1  # bump when the feature file's layout changes, so older caches are rebuilt
_READ_BATCH = 1024
# Read back from the cache (p_mask and segment_ids follow from the rest).
_SCALAR_RECORD_FEATURES = ("unique_ids", "example_index", "doc_span_index", "query_length")
_TRAINING_RECORD_FEATURES = ("start_positions", "end_positions", "is_impossible")
_TOKEN_RECORD_FEATURES = ("token_start_to_char", "token_end_to_char", "token_is_max_context")

def load_or_create_features(input_file: str, tokenizer: SentencePieceTokenizer, max_seq_length: int,
                            doc_stride: int, max_query_length: int, is_training: bool,
                            version_2_with_negative: bool, feature_file: str,
                            feature_left_file: Optional[str] = None,
                            layout: QuestionLayout = SQUAD_LAYOUT,
                            reader: Optional[ExampleReader] = None) -> SquadSplit:
  """Reads a SQuAD file, and its features from `feature_file` when that was made with the same settings.

  The examples are always read from the JSON (scoring needs them). The features are read from
  `feature_file` when `<feature_file>.json` records the same settings (the lengths, is_training, the SQuAD
  version, the tokenizer's options and model, the input's size and sha256: of every file, for a folder of
  shards); otherwise, or when the file is corrupt, they are made again and written, each file to a temporary
  name renamed into place.

  `feature_left_file` is Google's flag for the prediction features' metadata (Google pickles them). Here
  the feature file already holds everything, so it is only written, as JSON lines (one feature each:
  unique_id, example_index, doc_span_index, query_length and the per-token maps), for tools that read it.

  Args:
    input_file: the SQuAD JSON file.
    tokenizer: the model's tokenizer.
    max_seq_length: see `convert_examples_to_features`.
    doc_stride: see `convert_examples_to_features`.
    max_query_length: see `convert_examples_to_features`.
    is_training: see `read_squad_examples`.
    version_2_with_negative: see `read_squad_examples`.
    feature_file: the TFRecord file of the features (Google's `--train_feature_file` or
      `--predict_feature_file`).
    feature_left_file: optional JSON-lines file of the features' metadata (Google's
      `--predict_feature_left_file`).
    layout: the benchmark's question fields and rules (see `read_squad_examples`).
    reader: how the benchmark's input is read (default SQuAD's: one JSON file).

  Returns:
    The examples, the features, the number of training answers skipped and the file's "data" list.

  Raises:
    OptionError, InputFileError, DataError: as `read_squad_examples` and `convert_examples_to_features`
      raise them, before anything is written.
  """
  check_feature_options(max_seq_length, doc_stride, max_query_length)
  read = read_examples(input_file, is_training, version_2_with_negative, layout, reader)
  examples, dataset, skipped = read.examples, read.dataset, read.skipped
  settings = {
      "cache_format": _CACHE_FORMAT,
      "max_seq_length": max_seq_length,
      "doc_stride": doc_stride,
      "max_query_length": max_query_length,
      "is_training": is_training,
      "version_2_with_negative": version_2_with_negative,
      "do_lower_case": tokenizer.do_lower_case,
      "keep_accents": tokenizer.keep_accents,
      "spm_model_sha256": hashlib.sha256(tokenizer.sp_model.serialized_model_proto()).hexdigest(),
      "input_file_size": read.input_size,
      "input_file_sha256": read.input_sha256,
  }
  features = _cached_features(feature_file, settings, examples, max_seq_length, is_training)
  if features is None:
    features = convert_examples_to_features(examples, tokenizer, max_seq_length, doc_stride, max_query_length,
                                            is_training)
    _write_cache(feature_file, settings, features, max_seq_length, is_training)
    print(f"Wrote {len(features):,} features of {len(examples):,} examples to {feature_file}.", file=sys.stderr,
          flush=True)
    if feature_left_file:
      _write_left_file(feature_left_file, features)
  elif feature_left_file and not files.exists(feature_left_file):
    _write_left_file(feature_left_file, features)
  return SquadSplit(examples, features, skipped, dataset)


def _settings_file(feature_file: str) -> str:
  return feature_file + ".json"


def _cached_features(feature_file: str, settings: dict, examples: List[SquadExample], max_seq_length: int,
                     is_training: bool) -> Optional[List[SquadFeature]]:
  """The features of the cache when its settings are `settings`, else None (with a line saying why)."""
  settings_file = _settings_file(feature_file)
  if not (files.file_exists(settings_file) and files.file_exists(feature_file)):
    return None
  try:
    recorded = files.read_json(settings_file)
  except DataError:
    recorded = None
  if not isinstance(recorded, dict):
    print(f"{settings_file} cannot be read; rebuilding the features.", file=sys.stderr, flush=True)
    return None
  changed = [_describe_change(name, recorded.get(name), value) for name, value in settings.items()
             if recorded.get(name) != value]
  if changed:
    print(f"Rebuilding {feature_file}: {', '.join(changed)} changed.", file=sys.stderr, flush=True)
    return None
  try:
    features = _read_records(feature_file, examples, max_seq_length, is_training)
  except (tf.errors.OpError, ValueError) as error:
    # TF's message is wrapped in op details: "{{function_node ...}} corrupted record at 2296 [Op:...]".
    reason = re.sub(r"\{\{.*?\}\}\s*|\s*\[Op:.*$", "", str(error)) or type(error).__name__
    print(f"The cached features {feature_file} are corrupt ({reason}); rebuilding them.", file=sys.stderr,
          flush=True)
    return None
  if len(features) != recorded.get("num_features"):
    print(f"The cached features {feature_file} hold {len(features):,} features, not "
          f"{recorded.get('num_features')}; rebuilding them.", file=sys.stderr, flush=True)
    return None
  print(f"Read {len(features):,} features from {feature_file} (made with the same settings).", file=sys.stderr,
        flush=True)
  return features


def _describe_change(name: str, old: object, new: object) -> str:
  if name.endswith("sha256"):
    return name
  return f"{name} ({old} → {new})"


def _write_cache(feature_file: str, settings: dict, features: List[SquadFeature], max_seq_length: int,
                 is_training: bool) -> None:
  """Writes the feature file, then its settings: a crash in between leaves no settings, so no stale cache."""
  files.make_folders(files.parent(feature_file))
  settings_file = _settings_file(feature_file)
  files.remove(settings_file)
  partial = files.partial_path(feature_file)
  try:
    with tf.io.TFRecordWriter(partial) as writer:
      for feature in features:
        writer.write(_feature_record(feature, max_seq_length, is_training))
    files.rename(partial, feature_file)
  finally:
    files.remove(partial)
  files.write_json(settings_file, dict(settings, num_features=len(features)))


def _write_left_file(path: str, features: List[SquadFeature]) -> None:
  lines = [json.dumps({"unique_id": feature.unique_id, "example_index": feature.example_index,
                       "doc_span_index": feature.doc_span_index, "query_length": feature.query_length,
                       "token_start_to_char": feature.token_start_to_char,
                       "token_end_to_char": feature.token_end_to_char,
                       "token_is_max_context": feature.token_is_max_context}) + "\n" for feature in features]
  files.write_atomically(path, "".join(lines))


def _feature_record(feature: SquadFeature, max_seq_length: int, is_training: bool) -> bytes:
  values = {
      "unique_ids": [feature.unique_id],
      "input_ids": feature.padded_input_ids(max_seq_length),
      "input_mask": feature.input_mask(max_seq_length),
      "segment_ids": feature.segment_ids(max_seq_length),
      "p_mask": feature.p_mask(max_seq_length),
  }
  if is_training:
    values.update(start_positions=[feature.start_position], end_positions=[feature.end_position],
                  is_impossible=[int(feature.is_impossible)])
  values.update(example_index=[feature.example_index], doc_span_index=[feature.doc_span_index],
                query_length=[feature.query_length], token_start_to_char=feature.token_start_to_char,
                token_end_to_char=feature.token_end_to_char,
                token_is_max_context=[int(flag) for flag in feature.token_is_max_context])
  example = tf.train.Example(features=tf.train.Features(feature={
      name: tf.train.Feature(int64_list=tf.train.Int64List(value=value)) for name, value in values.items()}))
  return example.SerializeToString()


def _read_records(feature_file: str, examples: List[SquadExample], max_seq_length: int,
                  is_training: bool) -> List[SquadFeature]:
  """The features of a feature file; tf.errors for a corrupt one, ValueError for one that does not fit."""
  spec = {name: tf.io.FixedLenFeature([max_seq_length], tf.int64) for name in ("input_ids", "input_mask")}
  scalars = _SCALAR_RECORD_FEATURES + (_TRAINING_RECORD_FEATURES if is_training else ())
  spec.update({name: tf.io.FixedLenFeature([], tf.int64) for name in scalars})
  spec.update({name: tf.io.RaggedFeature(tf.int64) for name in _TOKEN_RECORD_FEATURES})

  def parse(records):
    parsed = tf.io.parse_example(records, spec)
    for name in _TOKEN_RECORD_FEATURES:
      ragged = parsed.pop(name)
      parsed[name], parsed[name + "_splits"] = ragged.values, ragged.row_splits
    return parsed

  features = []
  for batch in tf.data.TFRecordDataset(feature_file).batch(_READ_BATCH).map(parse).as_numpy_iterator():
    lengths = batch["input_mask"].sum(axis=1)
    token_maps = {name: np.split(batch[name], batch[name + "_splits"][1:-1]) for name in _TOKEN_RECORD_FEATURES}
    for row in range(len(lengths)):
      example_index = int(batch["example_index"][row])
      if not 0 <= example_index < len(examples):
        raise ValueError(f"example_index {example_index} is not that of an example of the file")
      features.append(SquadFeature(
          unique_id=int(batch["unique_ids"][row]),
          example_index=example_index,
          doc_span_index=int(batch["doc_span_index"][row]),
          input_ids=tuple(batch["input_ids"][row, :lengths[row]].tolist()),
          query_length=int(batch["query_length"][row]),
          token_start_to_char=tuple(token_maps["token_start_to_char"][row].tolist()),
          token_end_to_char=tuple(token_maps["token_end_to_char"][row].tolist()),
          token_is_max_context=tuple(bool(flag) for flag in token_maps["token_is_max_context"][row]),
          start_position=int(batch["start_positions"][row]) if is_training else 0,
          end_position=int(batch["end_positions"][row]) if is_training else 0,
          is_impossible=(bool(batch["is_impossible"][row]) if is_training else
                         examples[example_index].is_impossible)))
  return features
