"""Measures what whole-word and n-gram masking mask under each `--word_boundaries` rule, offline and dynamic.

  python benchmarks/benchmark_word_boundaries.py --morpheme_spm_model_file=vocab/kiwi.model --dupe_factor=5

For each corpus of --input_file (by default the shared Korean and English corpora) and each rule of
--word_boundaries, writes records twice, in this process: masked ones of --dupe_factor passes (offline
masking), and unmasked ones of one pass (--dynamic_masking) that `pretraining_dataset` masks, read for
--dupe_factor epochs as run_pretraining reads them (--masking=offline or dynamic: one of them). For each it
prints:

- the mask rate (masked tokens over tokens other than [CLS]/[SEP]) and the shares of masked tokens fed as
  [MASK], kept and replaced by a random piece;
- `eojeols_whole`: the share of the eojeols (text between two spaces) touched by a mask that are masked whole;
- `words_whole`: the same share for the rule's own words (the word starts `token_boundary` holds);
- the lengths of the runs of consecutive masked positions, in pieces and in eojeols: their mean, and the share
  of runs of each length (the last bucket: that length or more).

Korean corpora (mostly Hangul letters) run under every rule; `morpheme` needs a vocabulary learned within
morpheme boundaries (train_sentencepiece --pretokenizer=kiwi), so it runs only with
--morpheme_spm_model_file, which then tokenizes the Korean corpora under all three rules, so that they compare
on one vocabulary. Other corpora run `google` and `sentencepiece` with --spm_model_file, and the script counts
the corpus's tokens on which the two rules disagree (a word start under `google` only), by kind of piece.
"""

import collections
import os
import shutil
import tempfile
import unicodedata

from absl import flags
import numpy as np

# Before TensorFlow: it sets TensorFlow's log level, which TensorFlow reads once, on import.
from albert_tf import cli  # pylint: disable=g-bad-import-order

from albert_tf.data import masking_statistics
from albert_tf.data import pretraining_writer
from albert_tf.data import word_boundaries
from albert_tf.data.instances import InstanceOptions
from albert_tf.data.pretraining_dataset import pretraining_dataset
from albert_tf.data.record_files import check_pretraining_records, count_records
from albert_tf.errors import OptionError
from albert_tf.files import expand_input_patterns
from albert_tf.text import tokenizer_options
from albert_tf.text.tokenizer import SentencePieceTokenizer
import tensorflow as tf

FLAGS = flags.FLAGS

KINDS = ("offline", "dynamic")

# The shared corpora and vocabulary live beside the checkout (../shared).
SHARED = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "shared")
DEFAULT_CORPORA = [os.path.join(SHARED, "corpus", name)
                   for name in ("ko_libreoffice_help.txt", "ko_law.txt", "en_wiki.txt")]

flags.DEFINE_string("input_file", ",".join(DEFAULT_CORPORA), "Corpus text files or globs (comma-separated), each "
                    "measured on its own.")
flags.DEFINE_string("spm_model_file", os.path.join(SHARED, "reference", "sp8k_en_ko.model"),
                    "The SentencePiece model of the corpora (of the non-Korean ones, with --morpheme_spm_model_file).")
flags.DEFINE_string("morpheme_spm_model_file", None, "A vocabulary learned within morpheme boundaries "
                    "(train_sentencepiece --pretokenizer): the Korean corpora's, under every rule. Without it, "
                    "the morpheme rule is not run.")
flags.DEFINE_list("word_boundaries", list(word_boundaries.RULES), "The rules measured.")
flags.DEFINE_list("masking", list(KINDS), "The kinds of masking measured: offline (masked records), dynamic "
                  "(unmasked records masked by the input pipeline).")
flags.DEFINE_integer("max_seq_length", 128, "Sequence length.")
flags.DEFINE_integer("max_predictions_per_seq", 20, "Masked positions per sequence.")
flags.DEFINE_integer("dupe_factor", 5, "Masked passes written, and epochs of the unmasked pass read.")
flags.DEFINE_integer("random_seed", 12345, "Seed of the data runs.")
flags.DEFINE_integer("num_workers", os.cpu_count() or 1, "Worker processes of the data runs.")
flags.DEFINE_integer("batch_size", 64, "Examples per batch read.")

# A corpus is Korean when more than this share of its letters (in its first characters read) is Hangul.
KOREAN_LETTER_SHARE = 0.5
SAMPLED_CHARACTERS = 200_000
# Kinds of the pieces that start a word under `google` but not under `sentencepiece` (the first that applies).
DISAGREEMENT_KINDS = ("digit", "non-ASCII letter", "one-character punctuation or symbol", "other")
EXAMPLES_PER_KIND = 5


def is_korean(path: str) -> bool:
  with open(path, encoding="utf-8") as text:
    letters = [char for char in text.read(SAMPLED_CHARACTERS) if char.isalpha()]
  hangul = sum(unicodedata.name(char, "").startswith("HANGUL") for char in letters)
  return hangul > KOREAN_LETTER_SHARE * max(1, len(letters))


class MaskingFigures:
  """What was masked in the batches `add`ed: rates, replacement shares, and spans in eojeols and in words."""

  def __init__(self, tokenizer: SentencePieceTokenizer):
    self.tokenizer = tokenizer
    self.eojeol_starts = masking_statistics.eojeol_start_table(tokenizer.sp_model)
    self.eojeols = masking_statistics.MaskedSpans(tokenizer.cls_id, tokenizer.sep_id)
    self.words = masking_statistics.MaskedSpans(tokenizer.cls_id, tokenizer.sep_id)
    self.counts = collections.Counter()

  def add(self, input_ids, input_mask, positions, labels, weights, token_boundary):
    """Counts a batch of masked examples: their ids as fed, the `masked_lm_*` features and the word starts."""
    original = masking_statistics.original_ids(input_ids, positions, labels, weights)
    masked = masking_statistics.masked_positions(positions, weights, input_ids.shape[1])
    lengths = input_mask.sum(axis=1)
    used = weights > 0
    fed = np.take_along_axis(input_ids, positions, axis=1)
    special = (original == self.tokenizer.cls_id) | (original == self.tokenizer.sep_id)
    self.counts.update(examples=len(input_ids), maskable=int((input_mask.astype(bool) & ~special).sum()),
                       masked=int(used.sum()), as_mask=int((used & (fed == self.tokenizer.mask_id)).sum()),
                       kept=int((used & (fed == labels)).sum()))
    self.eojeols.add(original, lengths, masked, self.eojeol_starts[original])
    self.words.add(original, lengths, masked, token_boundary)

  def row(self):
    """The figures printed: (examples, mask rate, [MASK], kept, random, eojeols whole, words whole, spans)."""
    masked = max(1, self.counts["masked"])
    as_mask, kept = self.counts["as_mask"] / masked, self.counts["kept"] / masked
    return (self.counts["examples"], self.counts["masked"] / max(1, self.counts["maskable"]), as_mask, kept,
            1 - as_mask - kept, self.eojeols.whole_share, self.words.whole_share, self.eojeols.summary())


def write_records(corpus, path, tokenizer_spec, rule, dynamic):
  options = InstanceOptions(max_seq_length=FLAGS.max_seq_length, max_predictions_per_seq=FLAGS.max_predictions_per_seq,
                            dynamic_masking=dynamic, word_boundaries=rule)
  pretraining_writer.create_pretraining_data([corpus], [path], tokenizer_spec, options,
                                             dupe_factor=1 if dynamic else FLAGS.dupe_factor,
                                             random_seed=FLAGS.random_seed, num_workers=FLAGS.num_workers,
                                             progress=False)


def record_batches(path, features):
  spec = {name: tf.io.FixedLenFeature([length], tf.float32 if name == "masked_lm_weights" else tf.int64)
          for name, length in features.items()}
  return (tf.data.TFRecordDataset(path).batch(FLAGS.batch_size)
          .map(lambda serialized: tf.io.parse_example(serialized, spec)).as_numpy_iterator())


def measure_offline(path, figures):
  seq, predictions = FLAGS.max_seq_length, FLAGS.max_predictions_per_seq
  features = {"input_ids": seq, "input_mask": seq, "token_boundary": seq, "masked_lm_positions": predictions,
              "masked_lm_ids": predictions, "masked_lm_weights": predictions}
  for batch in record_batches(path, features):
    figures.add(batch["input_ids"], batch["input_mask"], batch["masked_lm_positions"], batch["masked_lm_ids"],
                batch["masked_lm_weights"], batch["token_boundary"])


def measure_dynamic(path, figures):
  """Reads the unmasked records for --dupe_factor epochs through `pretraining_dataset`."""
  seq = FLAGS.max_seq_length
  # The pipeline's batches do not carry `token_boundary`: each example's is found by its ids, read from the
  # records (two records with the same ids are the same text, so have the same word starts).
  word_starts = {}
  for batch in record_batches(path, {"input_ids": seq, "token_boundary": seq}):
    for ids, starts in zip(batch["input_ids"], batch["token_boundary"]):
      word_starts[ids.tobytes()] = starts
  counts = count_records([path])
  recipe = check_pretraining_records([path], seq, FLAGS.max_predictions_per_seq).masking_recipe
  steps = FLAGS.dupe_factor * sum(counts.values()) // FLAGS.batch_size
  batches = pretraining_dataset([path], seq, FLAGS.max_predictions_per_seq, FLAGS.batch_size, seed=1,
                                record_counts=counts, masking_recipe=recipe).take(steps)
  for batch in batches.as_numpy_iterator():
    input_ids = batch["input_word_ids"].astype(np.int64)
    positions, labels = batch["masked_lm_positions"], batch["masked_lm_ids"].astype(np.int64)
    weights = batch["masked_lm_weights"]
    original = masking_statistics.original_ids(input_ids, positions, labels, weights)
    token_boundary = np.stack([word_starts[ids.tobytes()] for ids in original])
    figures.add(input_ids, batch["input_mask"], positions, labels, weights, token_boundary)


def disagreements(corpus, tokenizer):
  """Per kind of piece, the tokens of `corpus` that start a word under `google` and not under `sentencepiece`,
  with the most frequent such pieces; and the number of tokens."""
  frequencies = np.zeros(tokenizer.vocab_size, np.int64)
  with open(corpus, encoding="utf-8") as lines:
    for line in lines:
      if line.strip():
        frequencies += np.bincount(tokenizer.encode(line, special_tokens_in_text=False),
                                   minlength=tokenizer.vocab_size)
  google = word_boundaries.piece_starts(tokenizer.sp_model, "google")
  sentencepiece = word_boundaries.piece_starts(tokenizer.sp_model, "sentencepiece")
  by_kind = {kind: [] for kind in DISAGREEMENT_KINDS}
  for piece_id in np.flatnonzero(frequencies):
    if google[piece_id] != sentencepiece[piece_id]:
      piece = tokenizer.sp_model.IdToPiece(int(piece_id))
      by_kind[disagreement_kind(piece)].append((int(frequencies[piece_id]), piece))
  return {kind: sorted(pieces, reverse=True) for kind, pieces in by_kind.items()}, int(frequencies.sum())


def disagreement_kind(piece: str) -> str:
  if any(char.isdigit() for char in piece):
    return "digit"
  if any(char.isalpha() and not char.isascii() for char in piece):
    return "non-ASCII letter"
  if len(piece) == 1 and not piece.isalnum():
    return "one-character punctuation or symbol"
  return "other"


def shares(distribution):
  return " ".join(f"{share:.3f}" for share in distribution.values())


def print_corpus(rows):
  print(f"{'rule':<14} {'masking':<8} {'examples':>9} {'mask_rate':>9} {'[MASK]':>7} {'kept':>6} {'random':>6} "
        f"{'eojeols_whole':>13} {'words_whole':>11} {'mean_span_pieces':>16} {'mean_span_eojeols':>17}")
  for (rule, kind), (examples, rate, as_mask, kept, random, eojeols, words, spans) in rows.items():
    print(f"{rule:<14} {kind:<8} {examples:>9,} {rate:>9.4f} {as_mask:>7.3f} {kept:>6.3f} {random:>6.3f} "
          f"{eojeols:>13.3f} {words:>11.3f} {spans['mean_span_pieces']:>16.2f} {spans['mean_span_units']:>17.2f}")
  last = masking_statistics.LONGEST_COUNTED
  buckets = " ".join(f"{length}" for length in range(1, last)) + f" {last}+"
  print(f"span lengths, share of masked runs of {buckets}:")
  for (rule, kind), row in rows.items():
    spans = row[-1]
    print(f"{rule:<14} {kind:<8} pieces {shares(spans['span_pieces'])}   eojeols {shares(spans['span_units'])}")


def print_disagreements(by_kind, tokens):
  total = sum(count for pieces in by_kind.values() for count, _ in pieces)
  print(f"google_vs_sentencepiece: {total:,} of {tokens:,} tokens ({total / max(1, tokens):.2%}) start a word under "
        "google only")
  for kind, pieces in by_kind.items():
    count = sum(count for count, _ in pieces)
    examples = ", ".join(f"{piece!r} {count:,}" for count, piece in pieces[:EXAMPLES_PER_KIND])
    print(f"  {kind}: {count:,} tokens ({count / max(1, tokens):.2%} of tokens, {count / max(1, total):.1%} of the "
          f"differences), {len(pieces):,} pieces; most frequent: {examples}")


def main(argv):
  del argv
  # Bad input is refused before the minutes of data runs.
  corpora = expand_input_patterns(FLAGS.input_file)
  for name, known in (("word_boundaries", word_boundaries.RULES), ("masking", KINDS)):
    unknown = [value for value in FLAGS[name].value if value not in known]
    if unknown:
      raise OptionError(f"--{name}: unknown value(s) {', '.join(unknown)}; known: {', '.join(known)}.")
  print(f"{FLAGS.dupe_factor} masked passes (offline) and {FLAGS.dupe_factor} epochs of one unmasked pass "
        f"(dynamic); seq {FLAGS.max_seq_length}, {FLAGS.max_predictions_per_seq} predictions")
  work = tempfile.mkdtemp(prefix="albert_word_boundaries_benchmark-")
  try:
    for corpus in corpora:
      korean = is_korean(corpus)
      vocabulary = FLAGS.morpheme_spm_model_file if korean and FLAGS.morpheme_spm_model_file else FLAGS.spm_model_file
      text_options = tokenizer_options.resolve_options(vocabulary)
      tokenizer_spec = pretraining_writer.TokenizerSpec(vocabulary, text_options.do_lower_case,
                                                        text_options.keep_accents, text_options.pretokenizer)
      tokenizer = SentencePieceTokenizer(vocabulary, text_options.do_lower_case, text_options.keep_accents)
      print(f"\ncorpus: {os.path.basename(corpus)} ({'Korean' if korean else 'not Korean'}), vocabulary "
            f"{os.path.basename(vocabulary)}")
      rows = {}
      for rule in FLAGS.word_boundaries:
        if rule == word_boundaries.MORPHEME and not (korean and FLAGS.morpheme_spm_model_file):
          print(f"{rule}: not run ({'needs --morpheme_spm_model_file' if korean else 'Korean corpora only'})")
          continue
        for kind in FLAGS.masking:
          path = os.path.join(work, f"{rule}-{kind}.tfrecord")
          write_records(corpus, path, tokenizer_spec, rule, kind == "dynamic")
          figures = MaskingFigures(tokenizer)
          (measure_dynamic if kind == "dynamic" else measure_offline)(path, figures)
          rows[rule, kind] = figures.row()
          os.remove(path)
      print_corpus(rows)
      if not korean:
        print_disagreements(*disagreements(corpus, tokenizer))
  finally:
    shutil.rmtree(work, ignore_errors=True)


def run():
  """The benchmark's command line, `python benchmarks/benchmark_word_boundaries.py`."""
  cli.run(main)


if __name__ == "__main__":
  run()
