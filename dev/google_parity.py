"""Compares albert_tf's SQuAD and RACE code with Google's original ALBERT code, on generated data.

  git clone https://github.com/google-research/albert /tmp/google_albert
  python dev/google_parity.py --google_albert=/tmp/google_albert all
  python dev/google_parity.py --google_albert=DIR squad_features|squad_scoring|race_features|all \
      [--spm_model_file=../shared/reference/sp8k_en_ko.model] [--corpus_file=../shared/corpus/en_wiki.txt]

--google_albert is a checkout of https://github.com/google-research/albert, or a bare git directory of it (its
files are then read with `git show HEAD:<file>`). The checks:

  squad_features: `albert_tf.tasks.squad` (examples, features) against `squad_utils.read_squad_examples` and
    `convert_examples_to_features`: a SQuAD v2.0 file of en_wiki paragraphs (read by both readers), and examples
    whose texts are perturbed (odd whitespace, quotes, ligatures, accents, full-width letters, "[SEP]", contexts
    that cannot align), in training and prediction mode, with long and very short windows.
  squad_scoring: `albert_tf.tasks.squad` predictions and scoring against `squad_utils`'
    `write_predictions_v1`, `evaluate_v1`, `evaluate_v2` and the official v2.0 scores, on random windows, logits
    and answers.
  race_features: `albert_tf.tasks.race.data` against `race_utils.RaceProcessor` and `convert_single_example`, on RACE
    files of en_wiki articles, questions (some with "_" blanks) and options.

Google's modules are read from the checkout and run with stand-ins for their TF1-only imports (`tf.logging`,
`tf.gfile`, `tensorflow.contrib`, `tensorflow_hub`, the model modules): only their pure-Python functions run, and
nothing of Google's is copied here. This is a developer's check: the tests never depend on it or on Google's code.

The data are generated from the corpus with fixed seeds, so every run compares the same things. Each comparison
prints one line: what was compared, how many, how many are equal and the first difference. The deliberate
differences print as "known difference" lines instead: non-Latin text, which Google's `preprocess_text` leaves
decomposed (NFKD: Hangul as jamo) less its combining marks while ours recomposes it with them, is left out of the
data; texts with `` or '', which ours turns into " and Google's keeps, are compared with Google's preprocessing
given our rule. Exit status 1 if anything else differs. `all` takes about 2 minutes on 2 cores, most of it in
Google's character alignment of SQuAD contexts.
"""

import builtins
import collections
import contextlib
import io
import json
import math
import os
import random
import subprocess
import sys
import tempfile
import time
import types
import unicodedata

from absl import app
from absl import flags
import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
from albert_tf.tasks.race import data as race_data
from albert_tf.tasks.squad import examples as squad_examples
from albert_tf.tasks.squad import features as squad_features
from albert_tf.tasks.squad import predictions as squad_predictions
from albert_tf.tasks.squad import scoring as squad_scoring
from albert_tf.text.tokenizer import SentencePieceTokenizer, preprocess_text  # noqa: E402

SHARED = os.path.normpath(os.path.join(REPO, "..", "shared"))
CHECKS = ("squad_features", "squad_scoring", "race_features")

FLAGS = flags.FLAGS
flags.DEFINE_string("google_albert", None, "A checkout of github.com/google-research/albert, or a bare git directory.")
flags.DEFINE_string("spm_model_file", os.path.join(SHARED, "reference", "sp8k_en_ko.model"),
                    "The SentencePiece model both sides tokenize with.")
flags.DEFINE_string("corpus_file", os.path.join(SHARED, "corpus", "en_wiki.txt"),
                    "English text, one sentence a line: the paragraphs, questions and options of the generated data.")
flags.mark_flag_as_required("google_albert")

QUOTES_RULE = "ours turns `` and '' into \", Google's preprocess_text keeps them"


# Google's modules, run without TensorFlow 1.


class _Unavailable:
  """Stands in for a TF1-only module: its attributes are stand-ins too, and calling one is an error."""

  def __init__(self, name):
    self._name = name

  def __getattr__(self, attribute):
    if attribute.startswith("__"):
      raise AttributeError(attribute)
    return _Unavailable(f"{self._name}.{attribute}")

  def __call__(self, *args, **kwargs):
    raise RuntimeError(f"Google's code called {self._name}: only its pure-Python functions can run here.")


class _Silent:
  """`tf.logging`: every call does nothing."""

  def __getattr__(self, attribute):
    return lambda *args, **kwargs: None


def _read_google_file(checkout, name):
  """A file of Google's repository, from a work tree or (through git) from a bare repository."""
  path = os.path.join(checkout, name)
  if os.path.isfile(path):
    with open(path, encoding="utf-8") as reader:
      return reader.read()
  shown = subprocess.run(["git", "--git-dir", checkout, "show", f"HEAD:{name}"], capture_output=True, text=True)
  if shown.returncode:
    sys.exit(f"{name} is neither in {checkout} nor in its git HEAD ({shown.stderr.strip()}); pass a checkout of "
             "https://github.com/google-research/albert as --google_albert.")
  return shown.stdout


def _google_module(checkout, name, stand_ins):
  """Executes Google's `name`.py, its imports of `stand_ins`' top-level names answered by them."""

  def import_with_stand_ins(module_name, globals_=None, locals_=None, fromlist=(), level=0):
    top = module_name.split(".")[0]
    if top not in stand_ins:
      return builtins.__import__(module_name, globals_, locals_, fromlist, level)
    module = stand_ins[top]
    if fromlist:  # `from a.b import c` takes c from a.b; `import a.b` binds a
      for part in module_name.split(".")[1:]:
        module = getattr(module, part)
    return module

  module = types.ModuleType(f"google_albert_{name}")
  module.__file__ = os.path.join(checkout, f"{name}.py")
  module.__dict__["__builtins__"] = dict(vars(builtins), __import__=import_with_stand_ins)
  exec(compile(_read_google_file(checkout, f"{name}.py"), module.__file__, "exec"), module.__dict__)
  return module


def _use_our_quote_rule(tokenization):
  """Makes Google's `preprocess_text` turn `` and '' into " (after collapsing whitespace, as ours does)."""
  google_preprocess_text = tokenization.preprocess_text

  def preprocess_text_with_our_quotes(inputs, remove_space=True, lower=False):
    if remove_space:  # whole texts; squad_utils' alignment also preprocesses single characters
      inputs = " ".join(inputs.strip().split()).replace("``", '"').replace("''", '"')
    return google_preprocess_text(inputs, remove_space=remove_space, lower=lower)

  tokenization.preprocess_text = preprocess_text_with_our_quotes


def load_google(checkout, quotes_as_ours=False):
  """Google's tokenization, squad_utils and race_utils (with classifier_utils), loaded from `checkout`.

  Args:
    checkout: a work tree or bare git directory of google-research/albert.
    quotes_as_ours: give Google's `preprocess_text` our rule for `` and '' (the known difference), to compare
      the rest of its processing on texts that hold them.
  """
  tf = _Unavailable("tf")
  tf.logging = _Silent()
  tf.gfile = types.SimpleNamespace(GFile=open, Open=open)
  tensorflow = _Unavailable("tensorflow")
  tensorflow.compat = types.SimpleNamespace(v1=tf)
  albert = _Unavailable("albert")
  stand_ins = {"tensorflow": tensorflow, "tensorflow_hub": _Unavailable("tensorflow_hub"), "albert": albert}
  albert.tokenization = _google_module(checkout, "tokenization", stand_ins)
  if quotes_as_ours:
    _use_our_quote_rule(albert.tokenization)
  albert.classifier_utils = _google_module(checkout, "classifier_utils", stand_ins)
  return types.SimpleNamespace(tokenization=albert.tokenization,
                               squad_utils=_google_module(checkout, "squad_utils", stand_ins),
                               race_utils=_google_module(checkout, "race_utils", stand_ins))


# Reporting.


class Report:
  """Prints one line per comparison and remembers those that differ."""

  def __init__(self):
    self.comparisons = 0
    self.differing = []

  def comparison(self, what, count, equal, first_difference=None, note=""):
    self.comparisons += 1
    line = f"{what}: {count:,} compared, {equal:,} equal"
    if note:
      line += f"; {note}"
    if first_difference:
      line += f"; first difference: {first_difference}"
    print(line, flush=True)
    if equal != count or first_difference:
      self.differing.append(what)

  def known_difference(self, text):
    print(f"known difference: {text}", flush=True)


def describe_difference(name, google, ours, show=None):
  """Where two values differ: the first differing position of two lists, with its neighbours."""
  if isinstance(google, list) and isinstance(ours, list):
    index = next((i for i, (a, b) in enumerate(zip(google, ours)) if a != b), min(len(google), len(ours)))
    around = slice(max(0, index - 3), index + 4)
    show = show or (lambda values: values)
    return (f"{name}[{index}]: Google {show(google[around])} (of {len(google)}), ours {show(ours[around])} "
            f"(of {len(ours)}), from [{around.start}]")
  return f"{name}: Google {google!r}, ours {ours!r}"


def _pieces(tokenizer):
  """Ids to their pieces, to show where sequences differ."""
  return lambda ids: [tokenizer.sp_model.IdToPiece(int(i)) for i in ids]


def dict_difference(name, google, ours):
  """The first key whose values differ between two dicts, or None."""
  for key in sorted(set(google) | set(ours), key=str):
    if google.get(key, "<missing>") != ours.get(key, "<missing>"):
      return f"{name}[{key!r}]: Google {google.get(key, '<missing>')!r}, ours {ours.get(key, '<missing>')!r}"
  return None


# The corpus.


def _decomposed_without_combining_marks(text):
  return "".join(char for char in unicodedata.normalize("NFKD", text) if not unicodedata.combining(char))


def read_corpus(path, google_with_our_quotes, report):
  """The corpus' lines, less those where our preprocessing differs from Google's as it deliberately does.

  Google's `preprocess_text` leaves a text decomposed (NFKD: Hangul as jamo) and deletes every combining mark; ours
  recomposes it (NFC) and deletes only the diacritical marks, so Korean and the marks of other scripts come through
  intact. Lines where Google's text is ours decomposed less its combining marks are left out of the data; Google's
  `preprocess_text` (given our quote rule) and ours are compared on the others.
  """
  with open(path, encoding="utf-8") as reader:
    lines = [line.strip() for line in reader if line.strip()]
  kept, equal, first_difference = [], 0, None
  for line in lines:
    google_text = google_with_our_quotes.tokenization.preprocess_text(line, lower=True)
    our_text = preprocess_text(line)
    if google_text != our_text and google_text == _decomposed_without_combining_marks(our_text):
      continue
    kept.append(line)
    if google_text == our_text:
      equal += 1
    elif first_difference is None:
      first_difference = describe_difference("line", google_text, our_text)
  name = os.path.basename(path)
  report.known_difference(f"{len(lines) - len(kept)} of the {len(lines):,} lines of {name} hold non-Latin text that "
                          "Google's preprocess_text leaves decomposed (Hangul as jamo) without its combining marks and "
                          "ours recomposes with them: left out of the generated data")
  report.comparison(f"preprocess_text, the other lines of {name} (Google's given our quote rule)", len(kept), equal,
                    first_difference)
  return kept


def _has_quotes(*texts):
  return any("``" in text or "''" in text for text in texts)


# squad_features


def build_squad_file(path, lines, num_questions, rng):
  """A SQuAD v2.0 file: paragraphs of 3-12 corpus lines, questions from other lines, answers word spans (or none)."""
  articles, made, cursor = [], 0, 0
  while made < num_questions:
    size = rng.randint(3, 12)
    context = rng.choice([" ", " ", " ", "  "]).join(lines[cursor:cursor + size])
    cursor += size
    words = list(_word_offsets(context))
    questions = []
    for _ in range(rng.randint(1, 6)):
      question = rng.choice(lines)
      if rng.random() < 0.2:
        question = " ".join([question] * 4)  # long questions, cut at max_query_length
      if rng.random() < 0.15:
        questions.append({"id": f"q{made}", "question": question, "answers": [], "is_impossible": True})
      else:
        first = rng.randrange(len(words))
        last = min(len(words) - 1, first + rng.randint(0, 5))
        start, end = words[first][0], words[last][0] + len(words[last][1])
        if rng.random() < 0.3:  # without trailing punctuation, as annotators write answers
          while end > start + 1 and not context[end - 1].isalnum():
            end -= 1
        questions.append({"id": f"q{made}", "question": question, "is_impossible": False,
                          "answers": [{"text": context[start:end], "answer_start": start}]})
      made += 1
    articles.append({"title": f"t{len(articles)}", "paragraphs": [{"context": context, "qas": questions}]})
  with open(path, "w", encoding="utf-8") as writer:
    json.dump({"version": "v2.0", "data": articles}, writer)


def _word_offsets(text):
  offset = 0
  for word in text.split():
    offset = text.index(word, offset)
    yield offset, word
    offset += len(word)


PERTURBATIONS = ("\n", "\t", "\u00a0", "  ", "\ufb01", "e\u0301", "\u2163", "\uff21\uff22", "\u2026", "\u3000",
                 " \u200b", "caf\u00e9", "3,000,", " [SEP] ")
QUOTES = (" `` ", " '' ")


def perturbed_text(words, rng, rate=0.15, quotes=True):
  """The words joined by spaces, some of the spaces replaced by a perturbation (`` and '' too, with `quotes`)."""
  perturbations = PERTURBATIONS + QUOTES if quotes else PERTURBATIONS
  pieces = []
  for word in words:
    pieces.append(word)
    pieces.append(rng.choice(perturbations) if rng.random() < rate else " ")
  return "".join(pieces).rstrip()


def stress_examples(lines, num_questions, rng):
  """Examples made directly (no reader) of perturbed texts, with raw answers (spaces around some) and a few
  contexts of mostly combining marks that cannot align (Google's MISMATCH)."""
  examples, cursor = [], 0
  while len(examples) < num_questions:
    size = rng.randint(2, 8)
    context = perturbed_text(" ".join(lines[cursor:cursor + size]).split(" "), rng, quotes=rng.random() < 0.4)
    cursor += size
    if rng.random() < 0.05:
      context = "e\u0301" * 50 + context[:40]
    for _ in range(rng.randint(1, 5)):
      start = rng.randrange(len(context) - 1)
      end = min(len(context), start + rng.randint(1, 30))
      answer = context[start:end]
      if answer.strip():
        examples.append(squad_examples.SquadExample(f"s{len(examples)}", rng.choice(lines), context, answer, start,
                                                    False, (answer,)))
  return examples


def google_squad_features(google, google_tokenizer, examples, lengths, is_training):
  """Google's `convert_examples_to_features`, one example at a time so that one failing its assertion (an answer
  without a piece of its own) does not stop the rest; unique ids and example indices are renumbered as one call
  over all of them gives.

  Returns:
    (the features, the index of each feature's example, the indices of the examples that failed).
  """
  features, example_of_feature, failed = [], [], []
  for example_index, example in enumerate(examples):
    made = []
    try:
      google.squad_utils.convert_examples_to_features([example], google_tokenizer, *lengths, is_training,
                                                      made.append, True)
    except AssertionError:
      failed.append(example_index)
      continue
    first_unique_id_offset = len(features)
    for feature in made:
      feature.unique_id += first_unique_id_offset
      if not is_training:
        feature.example_index = example_index
      features.append(feature)
      example_of_feature.append(example_index)
  return features, example_of_feature, failed


def _squad_feature_fields(google_feature, our_feature, max_seq_length, is_training):
  """(Google's value, ours) of every field of a feature that Google's code sets."""
  google_max_context = sorted(google_feature.token_is_max_context.items())
  return {
      "unique_id": (google_feature.unique_id, our_feature.unique_id),
      "example_index": (google_feature.example_index, None if is_training else our_feature.example_index),
      "doc_span_index": (google_feature.doc_span_index, our_feature.doc_span_index),
      "input_ids": (list(google_feature.input_ids), our_feature.padded_input_ids(max_seq_length)),
      "input_mask": (list(google_feature.input_mask), our_feature.input_mask(max_seq_length)),
      "segment_ids": (list(google_feature.segment_ids), our_feature.segment_ids(max_seq_length)),
      "p_mask": (list(google_feature.p_mask), our_feature.p_mask(max_seq_length)),
      "tok_start_to_orig_index": (list(google_feature.tok_start_to_orig_index),
                                  list(our_feature.token_start_to_char)),
      "tok_end_to_orig_index": (list(google_feature.tok_end_to_orig_index), list(our_feature.token_end_to_char)),
      "token_is_max_context positions": ([position for position, _ in google_max_context],
                                         list(range(our_feature.context_offset, len(our_feature.input_ids) - 1))),
      "token_is_max_context": ([flag for _, flag in google_max_context], list(our_feature.token_is_max_context)),
      "start_position": (google_feature.start_position, our_feature.start_position if is_training else None),
      "end_position": (google_feature.end_position, our_feature.end_position if is_training else None),
      "is_impossible": ((google_feature.is_impossible, our_feature.is_impossible) if is_training else (None, None)),
  }


def squad_feature_comparison(google, google_tokenizer, tokenizer, google_examples, examples, lengths, is_training):
  """Google's features of `google_examples` against ours of `examples` (the same questions).

  Returns:
    (the number of features compared, how many are equal, the first difference or None, a note or "").
  """
  max_seq_length = lengths[0]
  google_features, google_example_of, failed = google_squad_features(google, google_tokenizer, google_examples,
                                                                     lengths, is_training)
  with contextlib.redirect_stderr(io.StringIO()):  # ours counts the examples it skips on stderr
    ours = squad_features.convert_examples_to_features(examples, tokenizer, *lengths, is_training)
  equal, first_difference = 0, None
  for index, (google_feature, our_feature) in enumerate(zip(google_features, ours)):
    fields = _squad_feature_fields(google_feature, our_feature, max_seq_length, is_training)
    if google_example_of[index] != our_feature.example_index:
      fields["question"] = (examples[google_example_of[index]].qas_id, examples[our_feature.example_index].qas_id)
    different = [name for name, (google_value, our_value) in fields.items() if google_value != our_value]
    if not different:
      equal += 1
    elif first_difference is None:
      name = different[0]
      show = _pieces(tokenizer) if name == "input_ids" else None
      first_difference = (f"feature {our_feature.unique_id} (question {examples[our_feature.example_index].qas_id}, "
                          f"window {our_feature.doc_span_index}; differing: {', '.join(different)}): " +
                          describe_difference(name, *fields[name], show=show))
  if len(google_features) != len(ours) and first_difference is None:
    first_difference = f"Google made {len(google_features):,} features, ours {len(ours):,}"
  skipped = len(examples) - len(set(google_example_of)) - len(failed)
  note = f"{skipped} questions without features (Google's MISMATCH)" if skipped else ""
  if failed:
    note += (f"{'; ' if note else ''}Google's assertion fails on {len(failed)} questions (answers without a piece of "
             "their own), which ours skips (known difference)")
    featured = {feature.example_index for feature in ours} & set(failed)
    if featured and first_difference is None:
      first_difference = f"ours has features of the questions Google fails on: {sorted(featured)}"
  return max(len(google_features), len(ours)), equal, first_difference, note


def compare_squad_features(report, what, google, google_tokenizer, tokenizer, google_examples, examples, lengths,
                           is_training):
  """Reports Google's features of `google_examples` against ours of `examples`."""
  max_seq_length, doc_stride, max_query_length = lengths
  report.comparison(f"squad_features, {what}, {'training' if is_training else 'prediction'}, max_seq_length "
                    f"{max_seq_length}, doc_stride {doc_stride}, max_query_length {max_query_length}",
                    *squad_feature_comparison(google, google_tokenizer, tokenizer, google_examples, examples, lengths,
                                              is_training))


def compare_squad_readers(report, google_examples, examples, is_training):
  """Google's `read_squad_examples` against ours on the same file."""
  equal, first_difference = 0, None
  for google_example, example in zip(google_examples, examples):
    fields = {"qas_id": (google_example.qas_id, example.qas_id),
              "question_text": (google_example.question_text, example.question_text),
              "paragraph_text": (google_example.paragraph_text, example.context_text)}
    if is_training:
      fields.update(orig_answer_text=(google_example.orig_answer_text, example.answer_text),
                    start_position=(google_example.start_position, example.answer_start),
                    is_impossible=(google_example.is_impossible, example.is_impossible))
    different = [name for name, (google_value, our_value) in fields.items() if google_value != our_value]
    if not different:
      equal += 1
    elif first_difference is None:
      first_difference = f"question {example.qas_id}: " + describe_difference(different[0], *fields[different[0]])
  if len(google_examples) != len(examples) and first_difference is None:
    first_difference = f"Google read {len(google_examples):,} questions, ours {len(examples):,}"
  report.comparison(f"squad_features, read_squad_examples (SQuAD v2.0), {'training' if is_training else 'prediction'}",
                    max(len(google_examples), len(examples)), equal, first_difference)


def _google_squad_example(google, example):
  return google.squad_utils.SquadExample(qas_id=example.qas_id, question_text=example.question_text,
                                         paragraph_text=example.context_text, orig_answer_text=example.answer_text,
                                         start_position=example.answer_start, is_impossible=example.is_impossible)


def check_squad_features(report, google, google_with_our_quotes, tokenizer, lines):
  """Google's SQuAD reader and features against ours, on a SQuAD file and on perturbed examples."""
  google_tokenizer = google.tokenization.FullTokenizer(None, True, FLAGS.spm_model_file)
  rng = random.Random(0)
  with tempfile.TemporaryDirectory() as folder:
    path = os.path.join(folder, "train-v2.0.json")
    build_squad_file(path, lines[:4000], 150, rng)
    for is_training, all_lengths in ((True, ((384, 128, 64), (64, 16, 12), (48, 7, 20))),
                                     (False, ((384, 128, 64), (48, 7, 20)))):
      google_examples = google.squad_utils.read_squad_examples(path, is_training)
      examples = squad_examples.read_squad_examples(path, is_training, version_2_with_negative=True)[0]
      compare_squad_readers(report, google_examples, examples, is_training)
      for lengths in all_lengths:
        compare_squad_features(report, "en_wiki SQuAD v2.0 file", google, google_tokenizer, tokenizer, google_examples,
                               examples, lengths, is_training)
  examples = stress_examples(lines[4000:6000], 200, rng)
  quoted = [_has_quotes(example.context_text, example.question_text) for example in examples]
  with_quotes = [example for example, has in zip(examples, quoted) if has]
  without_quotes = [example for example, has in zip(examples, quoted) if not has]
  report.known_difference(f"{len(with_quotes)} of the {len(examples)} perturbed questions hold `` or '' "
                          f"({QUOTES_RULE}): compared with Google's preprocess_text given our rule")
  for what, google_code, subset in (("perturbed questions", google, without_quotes),
                                    ("perturbed questions with `` or '' (Google given our quote rule)",
                                     google_with_our_quotes, with_quotes)):
    google_examples = [_google_squad_example(google_code, example) for example in subset]
    for is_training in (True, False):
      for lengths in ((384, 128, 64), (64, 16, 12)):
        compare_squad_features(report, what, google_code, google_tokenizer, tokenizer, google_examples, subset,
                               lengths, is_training)
  count, equal, _, _ = squad_feature_comparison(google, google_tokenizer, tokenizer,
                                                [_google_squad_example(google, e) for e in with_quotes],
                                                with_quotes, (384, 128, 64), True)
  report.known_difference(f"with Google's preprocess_text as it is, {count - equal} of the {count} features of "
                          "perturbed questions with `` or '' differ (training, max_seq_length 384)")


# squad_scoring


SCORING_WORDS = ("the", "a", "an", "The", "Paris", "paris", "Tower", "tower,", "1889", "of", "in", "big", ".", "!",
                 "cat", "dog", "x-y", "Seoul", "서울의", "한강.", "(b)", "A", "an")


def _scoring_example(rng, index, unanswerable_rate):
  """A context of random words with their character offsets, and 1-3 gold answers (word spans) or none."""
  words = list(rng.choice(SCORING_WORDS, rng.integers(1, 16)))
  context = " ".join(words)
  starts, position = [], 0
  for word in words:
    starts.append(position)
    position += len(word) + 1
  ends = [start + len(word) - 1 for start, word in zip(starts, words)]
  golds = []
  if rng.random() >= unanswerable_rate:
    for _ in range(rng.integers(1, 4)):
      first = rng.integers(len(words))
      last = min(len(words) - 1, first + rng.integers(0, 3))
      golds.append(context[starts[first]:ends[last] + 1])
  return dict(qas_id=f"q{index}", context=context, words=words, starts=starts, ends=ends, golds=golds)


def _scoring_windows(google, rng, example, example_index, first_unique_id):
  """Random windows of one word a token (Google's feature objects and our SquadFeatures); max-context flags are
  Google's `_check_is_max_context`'s."""
  num_words = len(example["words"])
  max_tokens, stride, query_length = int(rng.integers(2, 8)), int(rng.integers(1, 5)), int(rng.integers(1, 4))
  Span = collections.namedtuple("Span", "start length")
  spans, start = [], 0
  while start < num_words:
    length = min(num_words - start, max_tokens)
    spans.append(Span(start, length))
    if start + length == num_words:
      break
    start += min(length, stride)
  google_features, our_features = [], []
  for span_index, span in enumerate(spans):
    tokens = ["[CLS]"] + ["q"] * query_length + ["[SEP]"]
    max_context, max_context_flags = {}, []
    for i in range(span.length):
      flag = google.squad_utils._check_is_max_context(spans, span_index, span.start + i)
      max_context[len(tokens)] = flag
      max_context_flags.append(flag)
      tokens.append(example["words"][span.start + i])
    tokens.append("[SEP]")
    start_chars = [example["starts"][span.start + i] for i in range(span.length)]
    end_chars = [example["ends"][span.start + i] for i in range(span.length)]
    unique_id = first_unique_id + span_index
    google_features.append(types.SimpleNamespace(unique_id=unique_id, example_index=example_index, tokens=tokens,
                                                 token_is_max_context=max_context,
                                                 tok_start_to_orig_index=start_chars,
                                                 tok_end_to_orig_index=end_chars))
    our_features.append(squad_features.SquadFeature(unique_id=unique_id, example_index=example_index,
                                                    doc_span_index=span_index, input_ids=tuple(range(len(tokens))),
                                                    query_length=query_length, token_start_to_char=tuple(start_chars),
                                                    token_end_to_char=tuple(end_chars),
                                                    token_is_max_context=tuple(max_context_flags), start_position=0,
                                                    end_position=0, is_impossible=False))
  return google_features, our_features


def _scoring_set(google, rng, count, unanswerable_rate, skip_rate=0.0):
  """Examples, their windows (some examples without any) and the SQuAD "data" list, Google's and ours."""
  raw = [_scoring_example(rng, index, unanswerable_rate) for index in range(count)]
  google_examples = [types.SimpleNamespace(qas_id=e["qas_id"], paragraph_text=e["context"]) for e in raw]
  examples = [squad_examples.SquadExample(e["qas_id"], "?", e["context"], "", -1, not e["golds"], tuple(e["golds"]))
              for e in raw]
  google_features, features = [], []
  for index, example in enumerate(raw):
    if rng.random() < skip_rate:
      continue
    google_windows, our_windows = _scoring_windows(google, rng, example, index, 1000 + len(google_features))
    google_features += google_windows
    features += our_windows
  dataset = [{"title": "t", "paragraphs": [
      {"context": e["context"], "qas": [{"id": e["qas_id"], "answers": [{"text": text} for text in e["golds"]]}]}
      for e in raw]}]
  return raw, google_examples, examples, google_features, features, dataset


def nbest_difference(google, ours):
  """The first question whose n-best lists differ (texts, log-probabilities exactly, probabilities to 1e-12)."""
  if google.keys() != ours.keys():
    return f"questions: Google {sorted(google)}, ours {sorted(ours)}"
  for qas_id in google:
    google_entries, our_entries = google[qas_id], ours[qas_id]
    same = [entry["text"] for entry in google_entries] == [entry["text"] for entry in our_entries] and all(
        a["start_log_prob"] == b["start_log_prob"] and a["end_log_prob"] == b["end_log_prob"] and
        math.isclose(a["probability"], b["probability"], rel_tol=1e-12, abs_tol=1e-15)
        for a, b in zip(google_entries, our_entries))
    if not same:
      return f"nbest[{qas_id!r}]: Google {google_entries}, ours {our_entries}"
  return None


def _google_quietly(function, *args):
  with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    return function(*args)


def v1_case(google, seed):
  """One random SQuAD v1.1 case: {comparison: [first difference or None, ...]}."""
  utils = google.squad_utils
  rng = np.random.default_rng(seed)
  raw, google_examples, examples, google_features, features, dataset = _scoring_set(google, rng,
                                                                                    int(rng.integers(1, 8)), 0.0)
  sequence = max(len(feature.tokens) for feature in google_features) + int(rng.integers(0, 4))
  start_logits = np.round(rng.normal(size=(len(google_features), sequence)), 1).astype(np.float32)
  end_logits = np.round(rng.normal(size=(len(google_features), sequence)), 1).astype(np.float32)
  n_best_size, max_answer_length = int(rng.integers(1, 8)), int(rng.integers(1, 6))
  results = [utils.RawResult(feature.unique_id, [float(x) for x in start_logits[row]],
                             [float(x) for x in end_logits[row]]) for row, feature in enumerate(google_features)]
  with tempfile.TemporaryDirectory() as folder:
    result_dict = {}
    utils.accumulate_predictions_v1(result_dict, google_examples, google_features, results, n_best_size,
                                    max_answer_length)
    google_answers = _google_quietly(utils.write_predictions_v1, result_dict, google_examples, google_features,
                                     results, n_best_size, max_answer_length, f"{folder}/predictions.json",
                                     f"{folder}/nbest_predictions.json")
    with open(f"{folder}/nbest_predictions.json", encoding="utf-8") as reader:
      google_nbest = json.load(reader)
  order = rng.permutation(len(features))  # ours takes the features in any order
  ours = squad_predictions.v1_predictions(examples, [features[i] for i in order], start_logits[order],
                                          end_logits[order], n_best_size, max_answer_length)
  predictions = (dict_difference("answers", dict(google_answers), ours.answers) or
                 nbest_difference(google_nbest, ours.nbest))
  random_answers = {e["qas_id"]: " ".join(rng.choice(SCORING_WORDS, rng.integers(0, 4)))
                    for e in raw if rng.random() < 0.9}  # some questions unanswered
  scores = []
  for answers in (ours.answers, random_answers):
    with contextlib.redirect_stderr(io.StringIO()):
      scores.append(dict_difference("scores", _google_quietly(utils.evaluate_v1, dataset, answers),
                                    squad_scoring.squad_v1_scores(dataset, answers)))
  return {"write_predictions_v1": [predictions], "evaluate_v1": scores}


def official_v2_scores(google, dataset, answers, null_odds, threshold=1.0):
  """SQuAD v2.0's official evaluation (evaluate-v2.0.py's main), made of squad_utils' functions."""
  utils = google.squad_utils
  has_answer = utils.make_qid_to_has_ans(dataset)
  answerable = [qas_id for qas_id, has in has_answer.items() if has]
  unanswerable = [qas_id for qas_id, has in has_answer.items() if not has]
  exact_raw, f1_raw = utils.get_raw_scores(dataset, answers)
  exact = utils.apply_no_ans_threshold(exact_raw, null_odds, has_answer, threshold)
  f1 = utils.apply_no_ans_threshold(f1_raw, null_odds, has_answer, threshold)
  scores = utils.make_eval_dict(exact, f1)
  if answerable:
    utils.merge_eval(scores, utils.make_eval_dict(exact, f1, qid_list=answerable), "HasAns")
  if unanswerable:
    utils.merge_eval(scores, utils.make_eval_dict(exact, f1, qid_list=unanswerable), "NoAns")
  utils.find_all_best_thresh(scores, answers, exact_raw, f1_raw, null_odds, has_answer)
  return dict(scores)


def v2_case(google, seed):
  """One random SQuAD v2.0 case (beam-search outputs): {comparison: [first difference or None]}, or None when
  no example got a window."""
  utils = google.squad_utils
  rng = np.random.default_rng(seed)
  raw, google_examples, examples, google_features, features, dataset = _scoring_set(
      google, rng, int(rng.integers(1, 10)), 0.4, skip_rate=0.1)
  if not google_features:
    return None
  sequence = max(len(feature.tokens) for feature in google_features) + int(rng.integers(0, 4))
  start_n_top = min(int(rng.integers(1, 5)), sequence)
  end_n_top = min(int(rng.integers(1, 5)), sequence)
  count = len(google_features)
  start_index = np.stack([rng.permutation(sequence)[:start_n_top] for _ in range(count)]).astype(np.int32)
  start_log_probs = -np.sort(np.round(rng.exponential(size=(count, start_n_top)), 1), axis=1).astype(np.float32)
  end_index = np.stack([np.concatenate([rng.permutation(sequence)[:end_n_top] for _ in range(start_n_top)])
                        for _ in range(count)]).astype(np.int32)
  end_log_probs = np.concatenate([-np.sort(np.round(rng.exponential(size=(count, end_n_top)), 1), axis=1)
                                  for _ in range(start_n_top)], 1).astype(np.float32)
  cls_logits = np.round(rng.normal(size=count), 1).astype(np.float32)
  n_best_size, max_answer_length = int(rng.integers(1, 8)), int(rng.integers(1, 6))
  results = [utils.RawResultV2(feature.unique_id, [float(v) for v in start_log_probs[row]],
                               [int(v) for v in start_index[row]], [float(v) for v in end_log_probs[row]],
                               [int(v) for v in end_index[row]], float(cls_logits[row]))
             for row, feature in enumerate(google_features)]
  names = ("predictions", "null_odds", "nbest_predictions")
  with tempfile.TemporaryDirectory() as folder:
    result_dict, cls_dict = {}, {}
    utils.accumulate_predictions_v2(result_dict, cls_dict, google_examples, google_features, results, n_best_size,
                                    max_answer_length, start_n_top, end_n_top)
    google_scores = _google_quietly(utils.evaluate_v2, result_dict, cls_dict, dataset, google_examples,
                                    google_features, results, n_best_size, max_answer_length,
                                    f"{folder}/predictions.json", f"{folder}/nbest_predictions.json",
                                    f"{folder}/null_odds.json")
    google_files = {}
    for name in names:
      with open(f"{folder}/{name}.json", encoding="utf-8") as reader:
        google_files[name] = reader.read()
  order = rng.permutation(count)
  our_predictions, our_scores = squad_scoring.evaluate_v2(
      examples, [features[i] for i in order], start_log_probs[order], start_index[order], end_log_probs[order],
      end_index[order], cls_logits[order], dataset, n_best_size, max_answer_length)
  our_files = {os.path.splitext(name)[0]: text
               for name, text in squad_predictions.prediction_file_texts(our_predictions).items()}
  evaluation = dict_difference("evaluate_v2", google_scores, {key: our_scores.get(key) for key in google_scores})
  google_json, our_json = ({name: json.loads(text) for name, text in files.items()}
                           for files in (google_files, our_files))
  files = (dict_difference("predictions.json", google_json["predictions"], our_json["predictions"]) or
           dict_difference("null_odds.json", google_json["null_odds"], our_json["null_odds"]) or
           nbest_difference(google_json["nbest_predictions"], our_json["nbest_predictions"]))
  if not files and google_files["predictions"] != our_files["predictions"]:
    files = "predictions.json: the same answers, written differently"
  # The official scores alone, on random answers and null odds (with ties), every question answered.
  answers = {e["qas_id"]: "" if rng.random() < 0.4 else " ".join(rng.choice(SCORING_WORDS, rng.integers(1, 4)))
             for e in raw}
  null_odds = {e["qas_id"]: float(np.round(rng.normal(), 1)) for e in raw}
  threshold = float(rng.choice([1.0, 0.0, -0.5]))
  google_official = _google_quietly(official_v2_scores, google, dataset, answers, null_odds, threshold)
  scores = dict_difference("scores", google_official, squad_scoring.squad_v2_scores(dataset, answers, null_odds,
                                                                                   threshold))
  return {"evaluate_v2": [evaluation], "v2 prediction files": [files], "official v2.0 scores": [scores]}


def check_squad_scoring(report, google, num_cases=300):
  """Google's n-best assembly and SQuAD scoring against ours, on `num_cases` random cases of each version."""
  counts = collections.Counter()
  first_differences = {}
  for seed in range(num_cases):
    for case in (v1_case, v2_case):
      outcome = case(google, seed)
      for name, differences in (outcome or {}).items():
        for difference in differences:
          counts[name, "compared"] += 1
          counts[name, "equal"] += difference is None
          if difference is not None:
            first_differences.setdefault(name, f"seed {seed}: {difference}")
  for name, what in (("write_predictions_v1", "answers and n-best lists"),
                     ("evaluate_v1", "scores of the answers and of random answers"),
                     ("evaluate_v2", "scores with the best null threshold"),
                     ("v2 prediction files", "predictions, null odds and n-best lists"),
                     ("official v2.0 scores", "random answers, null odds and thresholds")):
    report.comparison(f"squad_scoring, {name} ({what})", counts[name, "compared"], counts[name, "equal"],
                      first_differences.get(name))


# race_features


def build_race_folder(data_dir, lines, num_articles, rng):
  """RACE/dev/{middle,high}/all.txt (Google's layout) of articles of 1-40 corpus lines, questions (some with a "_"
  blank, some shouting or padded with whitespace) and options cut from corpus lines, some texts perturbed."""
  for level in race_data.RACE_LEVELS:
    os.makedirs(os.path.join(data_dir, "RACE", "dev", level))
    with open(os.path.join(data_dir, "RACE", "dev", level, "all.txt"), "w", encoding="utf-8") as writer:
      for number in range(num_articles):
        first_line = rng.randrange(len(lines) - 60)
        article = "  ".join(lines[first_line:first_line + rng.randint(1, 40)])
        if rng.random() < 0.3:
          article = perturbed_text(article.split(" "), rng, rate=0.01)
        questions, options, answers = [], [], []
        for _ in range(rng.randint(1, 6)):
          words = rng.choice(lines).split()
          cut = rng.randrange(len(words))
          question = " ".join(words[:cut] + (["_"] if rng.random() < 0.4 else []) + words[cut:cut + rng.randint(0, 30)])
          if rng.random() < 0.2:
            question = "  " + question.upper() + "\t"
          elif rng.random() < 0.2:
            question = perturbed_text(question.split(" "), rng, rate=0.1)
          questions.append(question)
          options.append([perturbed_text(rng.choice(lines).split()[:rng.randint(1, 60)], rng,
                                         rate=0.02 if rng.random() < 0.3 else 0.0) for _ in range(4)])
          answers.append(rng.choice(race_data.RACE_ANSWERS))
        writer.write(json.dumps({"article": article, "questions": questions, "options": options, "answers": answers,
                                 "id": f"{level}{number}.txt"}) + "\n")


def google_race_features(google, google_tokenizer, max_seq_length, max_qa_length, google_examples):
  """Google's features of each question: per option, the unpadded ids and the length of the first segment."""
  features = []
  for example_index, google_example in enumerate(google_examples):
    feature = google.race_utils.convert_single_example(example_index, google_example, race_data.NUM_OPTIONS,
                                                       max_seq_length, google_tokenizer, max_qa_length)
    ids = tuple(tuple(i for i, mask in zip(choice_ids, choice_mask) if mask)
                for choice_ids, choice_mask in zip(feature.input_ids, feature.input_mask))
    first_segment_lengths = tuple(segments.index(1) for segments in feature.segment_ids)
    features.append((ids, first_segment_lengths, feature.label_id))
  return features


def _race_difference(example, google_feature, our_feature, tokenizer):
  google_ids, google_lengths, google_label = google_feature
  if google_label != example.label:
    return f"question {example.example_id}: label: Google {google_label}, ours {example.label}"
  if google_lengths != our_feature.first_segment_lengths:
    return (f"question {example.example_id}: first segment lengths: Google {google_lengths}, "
            f"ours {our_feature.first_segment_lengths}")
  choice = next(c for c in range(len(google_ids)) if google_ids[c] != our_feature.choice_ids[c])
  return f"question {example.example_id}, option {choice}: " + describe_difference(
      "ids", list(google_ids[choice]), list(our_feature.choice_ids[choice]), show=_pieces(tokenizer))


def check_race_features(report, google, google_with_our_quotes, tokenizer, lines):
  """Google's RACE reader and features against ours, on generated RACE files."""
  google_tokenizer = google.tokenization.FullTokenizer(None, True, FLAGS.spm_model_file)
  with tempfile.TemporaryDirectory() as data_dir:
    build_race_folder(data_dir, lines, 60, random.Random(0))
    examples = race_data.read_race_examples(data_dir, "dev")
    google_examples, google_examples_with_our_quotes = [
        code.race_utils.RaceProcessor(use_spm=True, do_lower_case=True, high_only=False,
                                      middle_only=False).read_examples(os.path.join(data_dir, "RACE", "dev"))
        for code in (google, google_with_our_quotes)]
  if len(google_examples) != len(examples):
    report.comparison("race_features, read_examples", max(len(google_examples), len(examples)), 0,
                      f"Google read {len(google_examples):,} questions, ours {len(examples):,}")
    return
  with_quotes = [_has_quotes(e.article, e.question, *e.options) for e in examples]
  report.known_difference(f"{sum(with_quotes)} of the {len(examples)} RACE questions hold `` or '' ({QUOTES_RULE}): "
                          "compared with Google's preprocess_text given our rule")
  differ_as_known = 0
  settings = ((512, 128), (128, 32), (64, 40))
  for max_seq_length, max_qa_length in settings:
    ours = race_data.race_features(examples, tokenizer, max_seq_length, max_qa_length)
    google_features = google_race_features(google, google_tokenizer, max_seq_length, max_qa_length, google_examples)
    google_features_with_our_quotes = google_race_features(
        google_with_our_quotes, google_tokenizer, max_seq_length, max_qa_length,
        [g for g, quotes in zip(google_examples_with_our_quotes, with_quotes) if quotes])
    compared = iter(google_features_with_our_quotes)
    equal, first_difference = 0, None
    for index, (example, our_feature) in enumerate(zip(examples, ours)):
      google_feature = next(compared) if with_quotes[index] else google_features[index]
      if with_quotes[index]:
        differ_as_known += google_features[index][:2] != (our_feature.choice_ids, our_feature.first_segment_lengths)
      if google_feature == (our_feature.choice_ids, our_feature.first_segment_lengths, example.label):
        equal += 1
      elif first_difference is None:
        first_difference = _race_difference(example, google_feature, our_feature, tokenizer)
    report.comparison(f"race_features, max_seq_length {max_seq_length}, max_qa_length {max_qa_length} (questions "
                      "with `` or '' against Google given our quote rule)", len(ours), equal, first_difference)
  report.known_difference(f"with Google's preprocess_text as it is, {differ_as_known} of the "
                          f"{len(settings) * sum(with_quotes)} features of questions with `` or '' differ (all "
                          "settings)")


def main(argv):
  checks = argv[1:]
  if not checks or any(check not in CHECKS + ("all",) for check in checks):
    sys.exit(f"Name the checks to run: {', '.join(CHECKS)} or all (got {' '.join(checks) or 'none'}).")
  if "all" in checks:
    checks = CHECKS
  started = time.time()
  google = load_google(FLAGS.google_albert)
  google_with_our_quotes = load_google(FLAGS.google_albert, quotes_as_ours=True)
  report = Report()
  if "squad_features" in checks or "race_features" in checks:
    tokenizer = SentencePieceTokenizer(FLAGS.spm_model_file)
    lines = read_corpus(FLAGS.corpus_file, google_with_our_quotes, report)
  if "squad_features" in checks:
    check_squad_features(report, google, google_with_our_quotes, tokenizer, lines)
  if "squad_scoring" in checks:
    check_squad_scoring(report, google)
  if "race_features" in checks:
    check_race_features(report, google, google_with_our_quotes, tokenizer, lines)
  seconds = time.time() - started
  if report.differing:
    print(f"{len(report.differing)} of {report.comparisons} comparisons differ ({seconds:.0f} s): "
          f"{'; '.join(report.differing)}")
    sys.exit(1)
  print(f"all {report.comparisons} comparisons equal ({seconds:.0f} s)")


if __name__ == "__main__":
  app.run(main)
