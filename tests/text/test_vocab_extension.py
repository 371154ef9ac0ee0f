"""Vocabulary extension: an English vocabulary and model extended with Korean pieces keep every old id, score
and weight, cover Korean, and load in transformers."""

import dataclasses
import json
import os

import numpy as np
import pytest
import sentencepiece as spm
import tensorflow as tf
import torch
import transformers

import albert_tf
from albert_tf.errors import DataError, InputFileError, OptionError
from albert_tf.interop.huggingface import export_to_hf
from albert_tf.interop.vocab_resizing import extend_vocabulary, resize_vocabulary
from albert_tf.modeling.checkpoints import build_model_for_checkpoint, save_checkpoint
from albert_tf.modeling.weight_names import named_weights
from albert_tf.text import tokenizer_options as options_lib
from albert_tf.text import vocab_extension
from albert_tf.text.sentencepiece_training import train_sentencepiece
from albert_tf.text.tokenizer import SentencePieceTokenizer, read_model_proto
from tests.conftest import REPO, SHARED, corpus_lines, randomize, requires_shared, run_tool, write

KO_LAW = os.path.join(SHARED, "corpus", "ko_law.txt")
EN_BOTCHAN = os.path.join(SHARED, "corpus", "en_botchan.txt")
OLD_SIZE = 600
NEW_PIECES = 1000  # ko_law needs 509 for its characters alone
WORD_START = "\u2581"

pytestmark = requires_shared(KO_LAW)


def tiny_config(vocab_size):
  config = albert_tf.AlbertConfig.from_json_file(os.path.join(REPO, "configs", "albert_tiny.json"))
  return dataclasses.replace(config, vocab_size=vocab_size)


@pytest.fixture(scope="module")
def texts(tmp_path_factory):
  """The English vocabulary's corpus and a Korean text of another domain than ko_law."""
  folder = tmp_path_factory.mktemp("text")
  return {"en_wiki": write(folder / "en_wiki_head.txt", corpus_lines("en_wiki.txt", 4000)),
          "ko_help": write(folder / "ko_help_head.txt", corpus_lines("ko_libreoffice_help.txt", 2000))}


@pytest.fixture(scope="module")
def english_vocabulary(texts, tmp_path_factory):
  return train_sentencepiece(texts["en_wiki"], str(tmp_path_factory.mktemp("english") / "en"), vocab_size=OLD_SIZE,
                             num_threads=1)


@pytest.fixture(scope="module")
def english_model(tmp_path_factory):
  """A pretrainer of albert_tiny with both heads and random weights, in an albert-tf directory."""
  folder = tmp_path_factory.mktemp("english_model")
  model = albert_tf.AlbertPretrainer(tiny_config(OLD_SIZE))
  model(model.dummy_inputs())
  randomize(model, scale=0.1)
  save_checkpoint(model, str(folder / "model.ckpt"))
  model.config.to_json_file(str(folder / "albert_config.json"))
  return model, str(folder)


@pytest.fixture(scope="module")
def extended(english_vocabulary, english_model, texts, tmp_path_factory):
  """The tool's run: the English model extended with pieces learned from ko_law."""
  output = tmp_path_factory.mktemp("extended") / "out"
  result = run_tool("extend_vocab", f"--spm_model_file={english_vocabulary}", f"--input_file={KO_LAW}",
                    f"--num_new_pieces={NEW_PIECES}", f"--init_checkpoint={english_model[1]}", f"--output_dir={output}",
                    f"--parity_text={EN_BOTCHAN},{texts['ko_help']}", "--num_threads=1")
  assert result.returncode == 0, result.stderr
  return result, output


def test_tool_writes_a_model_directory_and_reports(extended):
  result, output = extended
  assert sorted(os.listdir(output)) == ["albert_config.json", "checkpoint", "model.ckpt.data-00000-of-00001",
                                        "model.ckpt.index", "spiece.model", "spiece.tokenizer_options.json",
                                        "spiece.vocab"]
  new_size = spm.SentencePieceProcessor(model_file=str(output / "spiece.model")).GetPieceSize()
  assert json.loads((output / "albert_config.json").read_text())["vocab_size"] == new_size
  assert f"Vocabulary: {OLD_SIZE} pieces → {new_size:,} ({new_size - OLD_SIZE:,} new" in result.stdout
  assert "en_botchan.txt: 0 of " in result.stdout  # no covered line changed
  assert "encoder, masked-LM head, sentence-order head" in result.stdout
  # Rerun into the same directory: refused in one line, and nothing in it changes.
  before = {name: (output / name).read_bytes() for name in os.listdir(output)}
  again = run_tool("extend_vocab", f"--spm_model_file={output / 'spiece.model'}", f"--input_file={KO_LAW}",
                   f"--output_dir={output}")
  assert again.returncode == 2
  assert again.stderr.splitlines()[-1] == (f"error: {output} already holds spiece.model; pass --overwrite to "
                                           "replace what it holds, or choose another --output_dir (nothing was "
                                           "written).")
  assert {name: (output / name).read_bytes() for name in os.listdir(output)} == before


def test_old_pieces_keep_id_and_score_and_new_pieces_follow(english_vocabulary, extended):
  output = extended[1]
  old, merged = read_model_proto(english_vocabulary), read_model_proto(str(output / "spiece.model"))
  assert len(merged.pieces) > OLD_SIZE + NEW_PIECES // 2
  for old_piece, merged_piece in zip(old.pieces, merged.pieces):
    assert (merged_piece.piece, merged_piece.score, merged_piece.type) == (old_piece.piece, old_piece.score,
                                                                           old_piece.type)
  new_pieces = merged.pieces[OLD_SIZE:]
  assert all(piece.type == piece.NORMAL for piece in new_pieces)
  old_characters = {char for piece in old.pieces[5:] for char in piece.piece}
  assert all(set(piece.piece) - old_characters for piece in new_pieces)  # each holds a character old text lacks
  # Characters first: they are what takes <unk> away.
  lengths = [len(piece.piece) for piece in new_pieces]
  assert lengths[0] == 1 and lengths == sorted(lengths, key=lambda length: length > 1)
  assert {"법", "를", "▁대한민국"} <= {piece.piece for piece in new_pieces}

  sp_model = spm.SentencePieceProcessor(model_file=str(output / "spiece.model"))
  tokenizer = SentencePieceTokenizer(str(output / "spiece.model"))
  assert sp_model.PieceToId("를") == tokenizer.convert_tokens_to_ids(["를"])[0] >= OLD_SIZE
  assert options_lib.read_options(str(output / "spiece.model")) == options_lib.read_options(english_vocabulary)
  vocab_lines = (output / "spiece.vocab").read_text(encoding="utf-8").splitlines()
  assert [line.split("\t")[0] for line in vocab_lines] == [piece.piece for piece in merged.pieces]


def test_english_keeps_its_ids_and_korean_loses_its_unk(english_vocabulary, extended, texts):
  old, merged = SentencePieceTokenizer(english_vocabulary), SentencePieceTokenizer(str(extended[1] / "spiece.model"))
  english = corpus_lines("en_botchan.txt")
  old_ids = [old.encode(line) for line in english]
  changed = [line for line, ids in zip(english, old_ids) if merged.encode(line) != ids]
  assert len(changed) <= 0.001 * len(english), changed[:3]
  assert all(old.unk_id in old.encode(line) for line in changed)  # only lines with an <unk> may change

  def unknown_rate(tokenizer, lines):
    ids = [piece_id for line in lines for piece_id in tokenizer.encode(line)]
    return ids.count(tokenizer.unk_id) / len(ids)

  korean = corpus_lines("ko_libreoffice_help.txt", 2000)
  before, after = unknown_rate(old, korean), unknown_rate(merged, korean)
  assert before > 0.3 and after < 0.1, (before, after)
  pieces = merged.tokenize("대한민국 헌법")
  assert pieces[0] == "▁대한민국" and "<unk>" not in pieces, pieces


def test_bpe_merges_of_new_pieces_come_after_the_old_ones(texts, tmp_path):
  old_file = train_sentencepiece(texts["en_wiki"], str(tmp_path / "bpe"), vocab_size=OLD_SIZE, model_type="bpe",
                                 num_threads=1)
  old_proto = read_model_proto(old_file)
  added = vocab_extension.learn_pieces(old_proto, KO_LAW, NEW_PIECES, options_lib.TokenizerOptions(), num_threads=1)
  merged = vocab_extension.merged_model(old_proto, added.pieces)
  old_scores = [piece.score for piece in old_proto.pieces if piece.type == piece.NORMAL]
  assert max(piece.score for piece in added.pieces) < min(old_scores)
  old = SentencePieceTokenizer(old_file)
  new = SentencePieceTokenizer("merged", model_proto=merged.SerializeToString())
  for line in corpus_lines("en_botchan.txt", 2000):
    if old.unk_id not in old.encode(line):
      assert new.encode(line) == old.encode(line), line
  assert new.unk_id not in new.encode("대한민국 헌법을 공포한다")


def test_listed_words_cover_the_forms_with_particles_and_endings(english_vocabulary, tmp_path):
  words = write(tmp_path / "words.txt", ["법률", "을", "", "공포", "하였다", "▁국회"])
  output = tmp_path / "out"
  result = extend_vocabulary(english_vocabulary, str(output), new_pieces_file=words)
  merged = SentencePieceTokenizer(str(output / "spiece.model"))
  assert merged.tokenize("법률을 공포하였다") == ["▁법률", "을", "▁공포", "하였다"]
  assert merged.tokenize("국회") == ["▁국회"]
  assert {"▁법률", "법률", "법", "률", "▁을", "을", "▁국회", "국", "회"} <= set(result.new_pieces)
  # The published recipe: every word as ▁word with score 0. The particle attached to a word stays <unk>.
  old_proto = read_model_proto(english_vocabulary)
  naive = vocab_extension.merged_model(old_proto, [vocab_extension.NewPiece(WORD_START + word, 0.0)
                                                   for word in ("법률", "을", "공포", "하였다")])
  naive_tokenizer = SentencePieceTokenizer("naive", model_proto=naive.SerializeToString())
  assert naive_tokenizer.convert_ids_to_tokens(naive_tokenizer.encode("법률을 공포하였다")) == [
      "▁법률", "<unk>", "▁공포", "<unk>"]


def expected_rows(table, pieces, old_tokenizer):
  """Each new piece's row: the mean over the old pieces of its text (not <unk>, not the bare ▁ of the space),
  computed here from SentencePiece's own segmentation of the text after a space (▁ pieces) or of text the old
  model cannot spell at all."""
  rows = []
  left_out = (old_tokenizer.unk_id, old_tokenizer.sp_model.PieceToId(WORD_START))
  for piece in pieces:
    if piece.startswith(WORD_START):
      ids = [i for i in old_tokenizer.sp_model.EncodeAsIds(piece[1:]) if i not in left_out]
    else:  # characters the old model has no piece for (see the caller)
      assert all(old_tokenizer.sp_model.PieceToId(char) == old_tokenizer.unk_id for char in piece), piece
      ids = []
    rows.append(table[ids].mean(axis=0) if ids else table.mean(axis=0))
  return np.stack(rows)


def test_old_rows_are_bit_identical_and_new_rows_are_sub_piece_means(english_vocabulary, english_model, extended):
  old_model, output = english_model[0], extended[1]
  config = albert_tf.AlbertConfig.from_json_file(str(output / "albert_config.json"))
  new_model, _ = build_model_for_checkpoint(config, str(output))
  assert new_model.sentence_order_head is not None
  old_table = old_model.encoder.embeddings.word_embeddings.numpy()
  old_bias = old_model.masked_lm_head.output_bias.numpy()
  new_table = new_model.encoder.embeddings.word_embeddings.numpy()
  new_bias = new_model.masked_lm_head.output_bias.numpy()
  assert np.array_equal(new_table[:OLD_SIZE], old_table) and np.array_equal(new_bias[:OLD_SIZE], old_bias)
  for (names, old_variable), (_, new_variable) in zip(named_weights(old_model), named_weights(new_model)):
    if names.google not in ("bert/embeddings/word_embeddings", "cls/predictions/output_bias"):
      assert np.array_equal(old_variable.numpy(), new_variable.numpy()), names.google

  pieces = [piece.piece for piece in read_model_proto(str(output / "spiece.model")).pieces[OLD_SIZE:]]
  old_tokenizer = SentencePieceTokenizer(english_vocabulary)
  # Pieces after a space, and glued pieces of Korean alone: SentencePiece's plain encoding says their old pieces.
  checked = [index for index, piece in enumerate(pieces)
             if piece.startswith(WORD_START) or all("\uac00" <= char <= "\ud7a3" for char in piece)]
  assert len(checked) > 0.9 * len(pieces)
  rows = expected_rows(old_table, [pieces[i] for i in checked], old_tokenizer)
  np.testing.assert_allclose(new_table[OLD_SIZE:][checked], rows, rtol=1e-6, atol=1e-7)
  biases = expected_rows(old_bias[:, None], [pieces[i] for i in checked], old_tokenizer)[:, 0]
  np.testing.assert_allclose(new_bias[OLD_SIZE:][checked], biases, rtol=1e-6, atol=1e-7)
  # "를" and "▁대한민국" (▁ and <unk> to the old model: the space says nothing of the word) take the mean row.
  for piece in ("를", "▁대한민국"):
    np.testing.assert_allclose(new_table[OLD_SIZE + pieces.index(piece)], old_table.mean(axis=0), rtol=1e-6)


def write_google_checkpoint(model, directory):
  """The model under Google's TF1 names, as Google's run_pretraining saves it."""
  values = {names.google: variable.numpy() for names, variable in named_weights(model)}
  with tf.Graph().as_default():
    for name, value in values.items():
      tf.compat.v1.get_variable(name, initializer=value)
    with tf.compat.v1.Session() as session:
      session.run(tf.compat.v1.global_variables_initializer())
      tf.compat.v1.train.Saver().save(session, os.path.join(directory, "model.ckpt"))


def test_google_and_hugging_face_sources_give_the_same_model_and_the_export_loads_in_transformers(
    english_vocabulary, english_model, extended, tmp_path):
  words = write(tmp_path / "words.txt", ["대한민국", "헌법", "을", "하였다", "▁wi-fi존"])
  old_model = english_model[0]
  write_google_checkpoint(old_model, str(tmp_path / "google"))
  mlm_only = albert_tf.AlbertPretrainer(old_model.config, with_sentence_order_head=False)
  mlm_only(mlm_only.dummy_inputs())
  for source, target in zip(mlm_only.variables, old_model.variables):
    source.assign(target)
  export_to_hf(mlm_only, str(tmp_path / "hf"))
  tables = {}
  for name, checkpoint, config_file in (
      ("ours", english_model[1], None),
      ("google", str(tmp_path / "google"), os.path.join(english_model[1], "albert_config.json")),
      ("hf", str(tmp_path / "hf"), None)):
    output = tmp_path / f"{name}_extended"
    extend_vocabulary(english_vocabulary, str(output), new_pieces_file=words, init_checkpoint=checkpoint,
                      albert_config_file=config_file)
    config = albert_tf.AlbertConfig.from_json_file(str(output / "albert_config.json"))
    model, _ = build_model_for_checkpoint(config, str(output))
    assert (model.sentence_order_head is None) == (name == "hf")
    tables[name] = (model.encoder.embeddings.word_embeddings.numpy(), model.masked_lm_head.output_bias.numpy())
  for name in ("google", "hf"):
    assert all(np.array_equal(ours, theirs) for ours, theirs in zip(tables["ours"], tables[name])), name
  # "▁wi-fi존" is the mean of the old pieces that spell "▁wi-fi", "▁대한민국" the mean of all rows.
  tokenizer = SentencePieceTokenizer(str(tmp_path / "hf_extended" / "spiece.model"))
  old_ids = [i for i in SentencePieceTokenizer(english_vocabulary).encode("wi-fi존") if i != tokenizer.unk_id]
  assert len(old_ids) > 1 and tokenizer.sp_model.PieceToId(WORD_START) not in old_ids
  old_table = old_model.encoder.embeddings.word_embeddings.numpy()
  for piece, expected in (("▁wi-fi존", old_table[old_ids].mean(axis=0)), ("▁대한민국", old_table.mean(axis=0))):
    np.testing.assert_allclose(tables["ours"][0][tokenizer.sp_model.PieceToId(piece)], expected, rtol=1e-6)

  # The extended Hugging Face model exported again: transformers loads it and agrees on ids and logits.
  extended_model, _ = build_model_for_checkpoint(config, str(tmp_path / "hf_extended"))
  export = export_to_hf(extended_model, str(tmp_path / "hf_export"),
                        spm_model_file=str(tmp_path / "hf_extended" / "spiece.model"))
  assert export.tokenizer_parity.warning() is None
  hf_model, info = transformers.AlbertForMaskedLM.from_pretrained(str(tmp_path / "hf_export"),
                                                                   output_loading_info=True)
  # AlbertForMaskedLM has no pooler (transformers drops it); every other weight is there.
  assert not info["missing_keys"] and not info["mismatched_keys"], info
  assert info["unexpected_keys"] <= {"albert.pooler.weight", "albert.pooler.bias"}, info
  hf_tokenizer = transformers.AlbertTokenizer.from_pretrained(str(tmp_path / "hf_export"))
  lines = ["대한민국 헌법을 공포하였다", "The wi-fi존 of the 헌법.", "It was a fine day."]
  lines += corpus_lines("en_botchan.txt", 50)
  assert hf_tokenizer(lines, add_special_tokens=False)["input_ids"] == [tokenizer.encode(line) for line in lines]
  ids = [tokenizer.cls_id] + tokenizer.encode(lines[0]) + [tokenizer.sep_id]
  assert max(ids) >= OLD_SIZE
  hf_model.eval()
  with torch.no_grad():
    theirs = hf_model(input_ids=torch.tensor([ids])).logits.numpy()
  inputs = {"input_word_ids": tf.constant([ids]), "input_mask": tf.ones([1, len(ids)], tf.int32),
            "input_type_ids": tf.zeros([1, len(ids)], tf.int32),
            "masked_lm_positions": tf.constant([list(range(len(ids)))])}
  np.testing.assert_allclose(theirs, extended_model(inputs)["mlm_logits"].numpy(), atol=1e-4, rtol=0)


# --- Bad input: one clear error each, and nothing written -------------------------------------------------

@pytest.fixture(scope="module")
def bad_inputs(english_vocabulary, tmp_path_factory):
  folder = tmp_path_factory.mktemp("bad")
  encoder = albert_tf.AlbertEncoder(tiny_config(500))
  encoder(encoder.dummy_inputs())
  save_checkpoint(encoder, str(folder / "model_500" / "model.ckpt"))
  encoder.config.to_json_file(str(folder / "model_500" / "albert_config.json"))
  (folder / "not_utf8.txt").write_bytes("법률\n공포\n".encode("utf-8") + b"\xff\xfe\n")
  write(folder / "used_dir" / "spiece.model", ["not a model"])
  return {"spm": english_vocabulary, "already_there": write(folder / "already_there.txt", ["헌법", "the", "에서"]),
          "empty": write(folder / "empty.txt", ["", "  "]), "not_utf8": str(folder / "not_utf8.txt"),
          "two_words": write(folder / "two_words.txt", ["대한 민국"]), "model_500": str(folder / "model_500"),
          "missing": str(folder / "missing.txt"), "used_dir": str(folder / "used_dir")}


BAD_INPUTS = {
    "piece already in the old model": (
        dict(new_pieces_file="already_there"), DataError,
        r"already_there.txt: line 2: ▁the is already a piece of the old model \(id \d+\)"),
    "empty pieces file": (dict(new_pieces_file="empty"), DataError, "holds no words or pieces: every line is blank"),
    "pieces file not UTF-8": (dict(new_pieces_file="not_utf8"), DataError, "not_utf8.txt, line 3: not UTF-8"),
    "more than one word a line": (dict(new_pieces_file="two_words"), DataError,
                                  "line 1: '대한 민국' is more than one word"),
    "checkpoint of another vocabulary": (dict(input_patterns=KO_LAW, init_checkpoint="model_500"), DataError,
                                         "has a vocabulary of 500 pieces, .* one of 600"),
    "missing pieces file": (dict(new_pieces_file="missing"), InputFileError, "missing.txt: cannot be read"),
    "missing corpus": (dict(input_patterns="missing"), InputFileError, "No input file matches .*missing.txt"),
    "missing parity text": (dict(input_patterns=KO_LAW, parity_text_files=["missing"]), InputFileError,
                            "--parity_text file not found"),
    "missing checkpoint": (dict(input_patterns=KO_LAW, init_checkpoint="missing"), InputFileError,
                           "Checkpoint not found"),
    "missing old model": (dict(input_patterns=KO_LAW, spm_model_file="missing"), InputFileError,
                          "SentencePiece model not found"),
    "corpus and pieces file": (dict(input_patterns=KO_LAW, new_pieces_file="empty"), OptionError,
                               "Give exactly one of --input_file"),
    "neither": (dict(), OptionError, "Give exactly one of --input_file"),
    "output_dir with a vocabulary": (dict(input_patterns=KO_LAW, output_dir="used_dir"), OptionError,
                                     "already holds spiece.model"),
}


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_input_is_one_clear_error_and_writes_nothing(case, bad_inputs, tmp_path):
  arguments, error_type, message = BAD_INPUTS[case]
  arguments = {name: [bad_inputs.get(item, item) for item in value] if isinstance(value, list)
               else bad_inputs.get(value, value) for name, value in arguments.items()}
  arguments.setdefault("spm_model_file", bad_inputs["spm"])
  arguments.setdefault("output_dir", str(tmp_path / "out"))
  before = sorted(os.listdir(arguments["output_dir"])) if os.path.isdir(arguments["output_dir"]) else None
  with pytest.raises(error_type, match=message):
    extend_vocabulary(**arguments)
  after = sorted(os.listdir(arguments["output_dir"])) if os.path.isdir(arguments["output_dir"]) else None
  assert after == before


@pytest.mark.parametrize("fine_tuned", ["classifier", "squad_v1", "squad_v2", "multiple_choice"])
def test_fine_tuned_models_are_refused_not_stripped_of_their_head(fine_tuned):
  config = tiny_config(50)
  model = {"classifier": lambda: albert_tf.AlbertClassifier(config, ["a", "b"]),
           "squad_v1": lambda: albert_tf.AlbertQuestionAnswerer(config),
           "squad_v2": lambda: albert_tf.AlbertQuestionAnswererV2(config),
           "multiple_choice": lambda: albert_tf.AlbertMultipleChoice(config)}[fine_tuned]()
  model(model.dummy_inputs())
  with pytest.raises(OptionError, match="fine-tuned model .* extend the vocabulary of the pretrained model"):
    resize_vocabulary(model, np.zeros([2, config.embedding_size], np.float32), None)
