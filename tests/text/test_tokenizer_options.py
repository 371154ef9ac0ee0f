"""The tokenizer options travel with the vocabulary: recorded beside the SentencePiece model, read by every tool."""

import json
import os
import shutil

import pytest

from albert_tf.errors import DataError, OptionError
from albert_tf.text import tokenizer_options as options_lib
from albert_tf.text.sentencepiece_training import train_sentencepiece
from tests.conftest import SHARED, SP8K_MODEL, requires_shared, run_tool

CASED = options_lib.TokenizerOptions(do_lower_case=False, keep_accents=True)


def recorded_copy(tmp_path, options, name="vocab"):
  """SP8K_MODEL copied with `options` recorded beside it."""
  model = str(tmp_path / f"{name}.model")
  shutil.copyfile(SP8K_MODEL, model)
  options_lib.write_options(model, options)
  return model


def test_options_file_sits_beside_the_model():
  assert options_lib.options_file("out/spiece.model") == "out/spiece.tokenizer_options.json"
  assert options_lib.options_file("gs://bucket/30k-clean.model") == "gs://bucket/30k-clean.tokenizer_options.json"


@requires_shared(os.path.join(SHARED, "corpus", "en_botchan.txt"))
def test_train_sentencepiece_records_its_options(tmp_path):
  model = train_sentencepiece([os.path.join(SHARED, "corpus", "en_botchan.txt")], str(tmp_path / "spiece"),
                              vocab_size=500, do_lower_case=False, keep_accents=True, num_threads=2)
  assert json.loads((tmp_path / "spiece.tokenizer_options.json").read_text()) == {"do_lower_case": False,
                                                                                 "keep_accents": True}
  assert options_lib.read_options(model) == CASED


@requires_shared(SP8K_MODEL)
def test_resolve_uses_the_record_and_refuses_a_contradiction_by_name(tmp_path):
  model = recorded_copy(tmp_path, CASED)
  assert options_lib.resolve_options(model) == CASED
  assert options_lib.resolve_options(model, do_lower_case=False, keep_accents=True) == CASED
  with pytest.raises(OptionError) as error:
    options_lib.resolve_options(model, do_lower_case=True)
  message = str(error.value)
  assert message.startswith("--do_lower_case=true contradicts ") and "vocab.tokenizer_options.json" in message
  assert "--do_lower_case=false --keep_accents=true" in message
  # Without a record: Google's defaults, overridden by what is given.
  assert options_lib.resolve_options(SP8K_MODEL) == options_lib.TokenizerOptions(True, False)
  assert options_lib.resolve_options(SP8K_MODEL, keep_accents=True) == options_lib.TokenizerOptions(True, True)


def test_a_hugging_face_folder_without_a_record_gives_its_tokenizer_config(tmp_path):
  (tmp_path / "tokenizer_config.json").write_text(json.dumps({"do_lower_case": False, "keep_accents": True}))
  assert options_lib.read_options(str(tmp_path / "spiece.model")) == CASED
  # Our record wins over tokenizer_config.json, which albert-tf's exports write for transformers' sake.
  options_lib.write_options(str(tmp_path / "spiece.model"), options_lib.TokenizerOptions())
  assert options_lib.read_options(str(tmp_path / "spiece.model")) == options_lib.TokenizerOptions()


def test_a_broken_record_is_a_clear_error(tmp_path):
  (tmp_path / "spiece.tokenizer_options.json").write_text('{"do_lower_case": "yes", "keep_accents": false}')
  with pytest.raises(DataError, match=r"spiece.tokenizer_options.json: do_lower_case must be true or false"):
    options_lib.read_options(str(tmp_path / "spiece.model"))
  (tmp_path / "spiece.tokenizer_options.json").write_text("{not json")
  with pytest.raises(DataError, match="is not valid JSON"):
    options_lib.read_options(str(tmp_path / "spiece.model"))


def test_the_pretokenizer_is_recorded_when_there_is_one_and_checked_by_no_tool(tmp_path):
  model = str(tmp_path / "spiece.model")
  options_lib.write_options(model, options_lib.TokenizerOptions(pretokenizer="kiwi"))
  assert json.loads((tmp_path / "spiece.tokenizer_options.json").read_text()) == {
      "do_lower_case": True, "keep_accents": False, "pretokenizer": "kiwi"}
  assert options_lib.resolve_options(model, do_lower_case=True).pretokenizer == "kiwi"
  with pytest.raises(OptionError, match="--do_lower_case=true --keep_accents=false: the ids"):
    options_lib.resolve_options(model, keep_accents=True)
  (tmp_path / "spiece.tokenizer_options.json").write_text('{"do_lower_case": true, "keep_accents": false, '
                                                          '"pretokenizer": 3}')
  with pytest.raises(DataError, match="pretokenizer must be the name of an analyzer, got 3"):
    options_lib.read_options(model)


def run_data_tool(tmp_path, name, spm_model, *flags):
  """The data tool on a few hundred lines (accents and capitals among them); returns its result and output."""
  corpus = tmp_path / "corpus.txt"
  if not corpus.exists():
    with open(os.path.join(SHARED, "corpus", "en_wiki.txt"), encoding="utf-8") as reader:
      corpus.write_text("".join(line for line, _ in zip(reader, range(400))) + "\nCafé Zürich. Naïve RÉSUMÉ.\n",
                        encoding="utf-8")
  output = tmp_path / f"{name}.tfrecord"
  result = run_tool("create_pretraining_data", f"--input_file={corpus}", f"--output_file={output}",
                    f"--spm_model_file={spm_model}", "--max_seq_length=64", "--max_predictions_per_seq=10",
                    "--dupe_factor=1", "--num_workers=1", *flags)
  return result, output


@requires_shared(SP8K_MODEL)
def test_data_tool_reads_the_record_and_refuses_a_contradicting_flag(tmp_path):
  recorded = recorded_copy(tmp_path, CASED, "recorded")
  unrecorded = str(tmp_path / "unrecorded.model")
  shutil.copyfile(SP8K_MODEL, unrecorded)
  results = [run_data_tool(tmp_path, "from_record", recorded),
             run_data_tool(tmp_path, "from_flags", unrecorded, "--nodo_lower_case", "--keep_accents"),
             run_data_tool(tmp_path, "refused", recorded, "--do_lower_case")]
  (record_run, from_record), (flags_run, from_flags), (refused_run, refused) = results
  assert record_run.returncode == 0 and flags_run.returncode == 0, results
  assert from_record.read_bytes() == from_flags.read_bytes()
  assert refused_run.returncode == 2 and "Traceback" not in refused_run.stderr
  assert refused_run.stderr.startswith("error: --do_lower_case=true contradicts "), refused_run.stderr
  assert not refused.exists()
