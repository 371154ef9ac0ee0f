"""A model with an extended vocabulary: new word-table rows and MLM output-bias entries, the old ones bit for bit.

The word table is both the input embedding and, tied, the MLM output layer, so a new row is how a new piece
enters the model and how it is predicted. It starts as the mean of the rows of the pieces the old model split
the piece's text into, so that the model first reads the new piece about as it read that text; a piece
whose text was all `<unk>` to the old model starts as the mean of all rows. The output bias likewise. The
bare word-start piece `▁` does not count (see `vocab_extension.old_segmentations`): counted, it made every
word-initial piece of a new script a copy of the `▁` row and bias, and that raised the masked-LM loss before
any training, on the new language and on the old one (docs/benchmarks.md, "Vocabulary extension"). Every
other weight, the heads the source holds included, is copied unchanged, so text the old model covered gets
the same ids (see `albert_tf.text.vocab_extension`), the same encoder outputs and the same logits for the old
pieces.

`extend_vocabulary` is the whole job of `tools/extend_vocab.py`: merge the SentencePiece model, measure it on
the user's text, resize a checkpoint (albert-tf, Google's TF1 or a Hugging Face folder) and write the
output, after every input has been checked, so that bad input leaves nothing behind.
"""

import dataclasses
import os
from typing import Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
import tensorflow as tf

from albert_tf import files
from albert_tf.errors import DataError, OptionError
from albert_tf.interop import conversion
from albert_tf.interop.source_tensors import Conversion
from albert_tf.modeling import checkpoints as checkpoint_lib
from albert_tf.modeling import task_heads
from albert_tf.modeling.config import CONFIG_FILE
from albert_tf.modeling.weight_names import named_weights
from albert_tf.text import tokenizer_options as options_lib
from albert_tf.text import vocab_extension
from albert_tf.text.tokenizer import SentencePieceTokenizer, read_model_proto

SPM_PREFIX = "spiece"


def sub_piece_means(table: np.ndarray, segmentations: Sequence[Sequence[int]], unk_id: int) -> np.ndarray:
  """For each new piece, the mean of `table`'s rows (or entries) of its old ids other than `<unk>`; the mean of
  all of them where there is none.

  Args:
    table: the old word table `[V, E]`, or the old output bias `[V]`.
    segmentations: the old ids of each new piece's text (`vocab_extension.old_segmentations`).
    unk_id: the id of `<unk>`.

  Returns:
    `[len(segmentations), E]` (or `[len(segmentations)]`), in `table`'s dtype.
  """
  mean_row = table.mean(axis=0)
  rows = []
  for ids in segmentations:
    known = [piece_id for piece_id in ids if piece_id != unk_id]
    rows.append(table[known].mean(axis=0) if known else mean_row)
  return np.stack(rows).astype(table.dtype)


def resize_vocabulary(model: tf.Module, new_rows: np.ndarray, new_bias: Optional[np.ndarray]) -> tf.Module:
  """A copy of an `AlbertEncoder` or `AlbertPretrainer` (with the heads it has) with `len(new_rows)` more pieces.

  Args:
    model: the built model.
    new_rows: `[N, E]`, the word-table rows of the new pieces, appended after the old ones.
    new_bias: `[N]`, their MLM output-bias entries; None for a model without the masked-LM head.

  Returns:
    The new model, built, whose config has the new `vocab_size`; every old value is copied bit for bit.

  Raises:
    OptionError: the model is fine-tuned, with a task head (extend the pretrained model, then fine-tune).
  """
  _refuse_fine_tuned(model)
  encoder = getattr(model, "encoder", model)
  masked_lm_head = getattr(model, "masked_lm_head", None)
  if (new_bias is None) != (masked_lm_head is None):
    raise ValueError("new_bias goes with the masked-LM head, and only with it.")
  config = dataclasses.replace(encoder.config, vocab_size=encoder.config.vocab_size + len(new_rows))
  resized = checkpoint_lib.model_with_heads(config, {head for head in checkpoint_lib.HEADS
                                                     if getattr(model, head, None) is not None})
  # The same architecture names its weights in the same order.
  for (_, source), (_, target) in zip(named_weights(model), named_weights(resized)):
    value = source.numpy()
    if source is encoder.embeddings.word_embeddings:
      value = np.concatenate([value, new_rows.astype(value.dtype)])
    elif masked_lm_head is not None and source is masked_lm_head.output_bias:
      value = np.concatenate([value, new_bias.astype(value.dtype)])
    target.assign(value)
  return resized


def _refuse_fine_tuned(model: tf.Module) -> None:
  """A task head has no place in a resized pretraining model: refused, not dropped."""
  head = task_heads.head_of(model)
  if head is not None:
    raise OptionError(f"The checkpoint is a fine-tuned model (it has a {head.description}): extend the vocabulary "
                      "of the pretrained model it came from, then fine-tune again.")


@dataclasses.dataclass
class VocabExtension:
  """What `extend_vocabulary` did.

  Attributes:
    old_size, new_size: the vocabulary sizes.
    new_pieces: the pieces added, in id order.
    notes: how the pieces were chosen.
    options: the tokenizer options of both models.
    comparisons: the old and the merged model on each `--parity_text` file.
    source: the checkpoint resized, with the parts it holds; None without one.
    rows_from_sub_pieces: new rows that are means of old rows (the others are the mean row).
    paths: the files written, by file name.
  """

  old_size: int
  new_size: int
  new_pieces: List[str]
  notes: List[str]
  options: options_lib.TokenizerOptions
  comparisons: List[vocab_extension.TextComparison]
  source: Optional[Conversion] = None
  rows_from_sub_pieces: int = 0
  paths: Dict[str, str] = dataclasses.field(default_factory=dict)

  def summary(self) -> str:
    """The lines the tool prints."""
    added = len(self.new_pieces)
    lines = [f"Vocabulary: {self.old_size:,} pieces → {self.new_size:,} ({added:,} new, ids {self.old_size:,}-"
             f"{self.new_size - 1:,})."] + self.notes
    shown = self.new_pieces if added <= 12 else self.new_pieces[:8] + ["..."] + self.new_pieces[-4:]
    lines.append(f"New pieces, most useful first: {' '.join(shown)}")
    lines.append(f"Tokenizer options {self.options.as_flags()}, as the old model's, recorded beside "
                 f"{SPM_PREFIX}.model.")
    if self.comparisons:
      lines += vocab_extension.comparison_lines(self.comparisons)
    else:
      lines.append("No --parity_text given: nothing was measured.")
    if self.source is not None:
      lines.append(f"Model from {self.source.source} ({', '.join(self.source.parts)}): {added:,} new word-table "
                   f"rows{' and MLM output-bias entries' if 'masked-LM head' in self.source.parts else ''}, "
                   f"{self.rows_from_sub_pieces:,} the mean of the old pieces that spelled them, "
                   f"{added - self.rows_from_sub_pieces:,} the mean of all old ones (the old model had only <unk> "
                   "for their text); every other weight as it was.")
    lines.append("Wrote:")
    lines += [f"  {self.paths[name]}" for name in sorted(self.paths)]
    return "\n".join(lines)


def extend_vocabulary(spm_model_file: str, output_dir: str, input_patterns: Union[None, str, Sequence[str]] = None,
                      new_pieces_file: Optional[str] = None, num_new_pieces: int = 10000,
                      do_lower_case: Optional[bool] = None, keep_accents: Optional[bool] = None,
                      init_checkpoint: Optional[str] = None, albert_config_file: Optional[str] = None,
                      parity_text_files: Sequence[str] = (), character_coverage: float = 0.9995,
                      input_sentence_size: int = 10_000_000, num_threads: Optional[int] = None,
                      overwrite: bool = False) -> VocabExtension:
  """Extends `spm_model_file` with pieces of a corpus or a list, and a checkpoint's vocabulary with it.

  Writes `<output_dir>/spiece.model`, `spiece.vocab` and the tokenizer options; with `init_checkpoint`
  also `model.ckpt` and `albert_config.json` with the new `vocab_size`, the directory a tool takes as
  `--init_checkpoint`. Every input is checked before anything is written.

  Args:
    spm_model_file: the old SentencePiece model.
    output_dir: the new directory (or one without a vocabulary or checkpoint in it).
    input_patterns: the corpus to learn new pieces from (see `vocab_extension.learn_pieces`); or
    new_pieces_file: a word or piece a line (see `vocab_extension.listed_pieces`).
    num_new_pieces: the most pieces learned from the corpus.
    do_lower_case, keep_accents: None, or what the user said (checked against the old model's record).
    init_checkpoint: an albert-tf checkpoint, one of Google's TF1 checkpoints or a Hugging Face folder.
    albert_config_file: its config (default: the one beside it; a Hugging Face folder has its own).
    parity_text_files: text files to measure the old and the merged model on.
    character_coverage, input_sentence_size, num_threads: for learning from the corpus.
    overwrite: replace the vocabulary and checkpoint `output_dir` holds (else they are refused before any work).

  Raises:
    OptionError: not exactly one of `input_patterns` and `new_pieces_file`; an output_dir already used (without
      `overwrite`) or that cannot be written;
      options contradicting the record.
    InputFileError: a file that does not exist.
    DataError: a bad pieces file, corpus or model; a checkpoint whose vocabulary is not `spm_model_file`'s.
  """
  if (input_patterns is None) == (new_pieces_file is None):
    raise OptionError("Give exactly one of --input_file (a corpus to learn new pieces from) and "
                      "--new_pieces_file (a word or piece a line).")
  if albert_config_file and not init_checkpoint:
    raise OptionError("--albert_config_file is the config of --init_checkpoint; give both or neither.")
  conversion.check_output_dir(output_dir, [f"{SPM_PREFIX}.model"], overwrite)
  options = options_lib.resolve_options(spm_model_file, do_lower_case, keep_accents)
  old_tokenizer = SentencePieceTokenizer(spm_model_file, options.do_lower_case, options.keep_accents)
  for path in parity_text_files:
    files.require_file(path, "--parity_text file")
  source = None
  if init_checkpoint:
    source = conversion.read_checkpoint(init_checkpoint, albert_config_file, spm_model_file)
    _refuse_fine_tuned(source.model)
    checkpoint_size = getattr(source.model, "encoder", source.model).config.vocab_size
    if checkpoint_size != old_tokenizer.vocab_size:
      raise DataError(f"{init_checkpoint} has a vocabulary of {checkpoint_size:,} pieces, {spm_model_file} one of "
                      f"{old_tokenizer.vocab_size:,}: they do not belong together. Nothing was written.")
  old_proto = read_model_proto(spm_model_file)
  if input_patterns is not None:
    new_pieces = vocab_extension.learn_pieces(old_proto, input_patterns, num_new_pieces, options, character_coverage,
                                              input_sentence_size, num_threads)
  else:
    new_pieces = vocab_extension.listed_pieces(old_proto, new_pieces_file, options)
  merged = vocab_extension.merged_model(old_proto, new_pieces.pieces)
  merged_tokenizer = SentencePieceTokenizer(f"the merged {SPM_PREFIX}.model", options.do_lower_case,
                                            options.keep_accents, model_proto=merged.SerializeToString())
  pieces = [piece.piece for piece in new_pieces.pieces]
  result = VocabExtension(old_tokenizer.vocab_size, merged_tokenizer.vocab_size, pieces, new_pieces.notes, options,
                          [vocab_extension.compare_on_text(old_tokenizer, merged_tokenizer, path)
                           for path in parity_text_files], source)
  resized = None
  if source is not None:
    resized, result.rows_from_sub_pieces = _resized_model(source.model, spm_model_file, pieces, old_tokenizer.unk_id)
  # Published whole (`files.staged_folder`), the file a reader looks for last: the checkpoint's index, or without a
  # checkpoint the SentencePiece model (`vocab_extension.write_model` writes it last for the same reason).
  marker = conversion.CHECKPOINT_MARKER if resized is not None else f"{SPM_PREFIX}.model"
  with files.staged_folder(output_dir, marker) as staging:
    names = []
    if resized is not None:
      checkpoint_lib.save_checkpoint(resized, os.path.join(staging, checkpoint_lib.CHECKPOINT_NAME))
      getattr(resized, "encoder", resized).config.to_json_file(os.path.join(staging, CONFIG_FILE))
      names += [checkpoint_lib.CHECKPOINT_NAME, CONFIG_FILE]
    model_file = vocab_extension.write_model(merged, os.path.join(staging, SPM_PREFIX), options)
    names += [os.path.basename(path) for path in (model_file, model_file[:-len(".model")] + ".vocab",
                                                  options_lib.options_file(model_file))]
  result.paths = {name: os.path.join(output_dir, name) for name in names}
  return result


def _resized_model(model: tf.Module, spm_model_file: str, pieces: Sequence[str],
                   unk_id: int) -> Tuple[tf.Module, int]:
  """The model with a row (and bias entry) per new piece, each the mean over its old sub-pieces; and how many
  had any."""
  segmentations = vocab_extension.old_segmentations(spm_model_file, pieces)
  encoder = getattr(model, "encoder", model)
  new_rows = sub_piece_means(encoder.embeddings.word_embeddings.numpy(), segmentations, unk_id)
  masked_lm_head = getattr(model, "masked_lm_head", None)
  new_bias = None
  if masked_lm_head is not None:
    new_bias = sub_piece_means(masked_lm_head.output_bias.numpy(), segmentations, unk_id)
  with_sub_pieces = sum(any(piece_id != unk_id for piece_id in ids) for ids in segmentations)
  return resize_vocabulary(model, new_rows, new_bias), with_sub_pieces
