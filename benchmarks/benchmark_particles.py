"""Measures `--trim_particles` of the Korean reading tasks: exact match and F1 of answers before and after their
trailing particles are cut, on spans of real Korean sentences whose gold answers leave the particles out, and the
analyzer's time per answer.

  python benchmarks/benchmark_particles.py --analyzer=kiwi   # or mecab

The data: the sentences of KLUE-DP's dev file (--dp_file; every word with its morphemes and Sejong POS tags,
annotated by hand). Every word whose morphemes are a noun phrase (nouns, numbers, foreign words, pronouns, with
their suffixes) is a gold answer, the phrase without the particles that follow it in the word, when those are
written as their own characters (서울|에서; 난 = 나+는 is left out). Four kinds of prediction, scored apart:

- overshoot: the whole word, the phrase with its particles (서울에서 for 서울), what a model that overshoots gives;
- copula: the phrase with a copula and its endings written out (서울이다 for 서울);
- correct: the gold phrase itself, in a word that goes on with particles (서울 in 서울에서: nothing to cut);
- look-alike: a word of nouns alone whose last syllable is also a particle (나이, 회의, 경기도): nothing to cut.

Each prediction is trimmed in its sentence and scored with KorQuAD 1.0's official functions (EM, character F1)
and KLUE-MRC's (EM, ROUGE-W). A model's answers are a mix: the "mixed" row weighs the overshoots (with the
copulas) at --overshoot_share and the answers already right (correct and look-alike, at their shares in the
data) at the rest; the break-even share is where cutting gains nothing.
"""

import collections
import random
import time
from typing import Dict, List, NamedTuple

from absl import flags

from albert_tf import cli
from albert_tf.files import read_text
from albert_tf.tasks.squad import korean_scoring
from albert_tf.tasks.squad.particles import ParticleTrimmer

FLAGS = flags.FLAGS

flags.DEFINE_string("dp_file", "../shared/klue/klue-dp-v1.1_dev.tsv", "KLUE-DP's TSV: words with morphemes and POS.")
flags.DEFINE_enum("analyzer", "kiwi", ["kiwi", "mecab"], "The analyzer that trims.")
flags.DEFINE_integer("max_cases", 3000, "At most this many cases of each kind (a random sample, --seed).")
flags.DEFINE_integer("seed", 1, "Seed of the sample.")
flags.DEFINE_float("overshoot_share", 0.1, "The share of a model's answers that overshoot in the mixed row.")

# The tags of a noun phrase's morphemes (Sejong's): nouns, pronouns, numerals, numbers, foreign words, suffixes.
_NOMINAL = ("NNG", "NNP", "NNB", "NP", "NR", "SN", "SL", "SH", "XSN", "XPN")
KINDS = ("overshoot", "copula", "correct", "look-alike")


class Case(NamedTuple):
  kind: str
  sentence: str
  start: int  # the prediction's span in the sentence
  end: int
  gold: str


def _sentences(text: str):
  """(sentence, [(word, lemmas, tags)]) of KLUE-DP's TSV."""
  sentence, words = None, []
  for line in text.splitlines() + [""]:
    if line.startswith("## klue-dp"):
      sentence, words = line.split("\t", 1)[1], []
    elif line.startswith("#"):
      continue
    elif not line.strip():
      if sentence is not None and words:
        yield sentence, words
      sentence, words = None, []
    else:
      columns = line.split("\t")
      words.append((columns[1], columns[2].split(" "), columns[3].split("+")))


def read_cases(text: str) -> List[Case]:
  """Every case of the four kinds in KLUE-DP's sentences (see the module's docstring)."""
  cases, particle_syllables = [], set()
  lookalike_candidates = []
  for sentence, words in _sentences(text):
    position = 0
    for word, lemmas, tags in words:
      start = sentence.find(word, position)
      if start < 0 or len(lemmas) != len(tags):
        continue
      position = start + len(word)
      stem = 0
      while stem < len(tags) and tags[stem] in _NOMINAL:
        stem += 1
      rest, rest_tags = "".join(lemmas[stem:]), tags[stem:]
      if not stem or tags[stem - 1] in ("XPN",) or not word.endswith(rest):
        continue
      gold = word[:len(word) - len(rest)]
      if not rest:
        lookalike_candidates.append((sentence, start, word))
      elif all(tag.startswith("J") for tag in rest_tags):
        particle_syllables.update(lemma for lemma, tag in zip(lemmas, tags) if tag.startswith("J") and len(lemma) == 1)
        cases.append(Case("overshoot", sentence, start, start + len(word), gold))
        cases.append(Case("correct", sentence, start, start + len(gold), gold))
      elif rest_tags[0] == "VCP" and all(tag.startswith("E") for tag in rest_tags[1:]) and len(rest_tags) > 1:
        cases.append(Case("copula", sentence, start, start + len(word), gold))
  cases += [Case("look-alike", sentence, start, start + len(word), word)
            for sentence, start, word in lookalike_candidates if word[-1] in particle_syllables]
  return cases


def _scores(predictions: Dict[str, str], golds: Dict[str, str]) -> Dict[str, float]:
  """KorQuAD 1.0's and KLUE-MRC's official EM and F1 (percent) of `predictions` against one gold answer each."""
  korquad = [{"paragraphs": [{"context": "", "qas": [{"id": key, "answers": [{"text": gold}]}]}]}
             for key, gold in golds.items()]
  klue = [{"paragraphs": [{"context": "", "qas": [{"guid": key, "question_type": 1, "answers": [{"text": gold}]}]}]}
          for key, gold in golds.items()]
  korquad_scores = korean_scoring.korquad_v1_scores(korquad, predictions)
  klue_scores = korean_scoring.klue_mrc_scores(klue, predictions)
  return {"KorQuAD EM": korquad_scores["exact_match"], "KorQuAD F1": korquad_scores["f1"],
          "KLUE EM": klue_scores["exact_match"], "KLUE ROUGE-W": klue_scores["rouge_w"]}


def main(argv):
  del argv
  by_kind = collections.defaultdict(list)
  for case in read_cases(read_text(FLAGS.dp_file)):
    by_kind[case.kind].append(case)
  available = {kind: len(by_kind[kind]) for kind in KINDS}
  rng = random.Random(FLAGS.seed)
  for kind in KINDS:
    rng.shuffle(by_kind[kind])
    del by_kind[kind][FLAGS.max_cases:]
  started = time.perf_counter()
  trimmers = {"J": ParticleTrimmer(FLAGS.analyzer, copula=False), "J+VCP": ParticleTrimmer(FLAGS.analyzer)}
  print(f"{FLAGS.analyzer} loaded in {time.perf_counter() - started:.2f} s; cases in {FLAGS.dp_file} (sampled: at "
        f"most {FLAGS.max_cases}): " + ", ".join(f"{kind} {count:,}" for kind, count in available.items()))
  results, seconds, count = {}, collections.Counter(), 0
  for kind in KINDS:
    golds = {str(index): case.gold for index, case in enumerate(by_kind[kind])}
    results[kind, "untrimmed"] = _scores({str(index): case.sentence[case.start:case.end]
                                          for index, case in enumerate(by_kind[kind])}, golds)
    for name, trimmer in trimmers.items():
      started = time.perf_counter()
      trimmed = {str(index): trimmer.trim(case.sentence, case.start, case.end)
                 for index, case in enumerate(by_kind[kind])}
      seconds[name] += time.perf_counter() - started
      results[kind, name] = _scores(trimmed, golds)
    count += len(by_kind[kind])
  # The mix: overshoots (the copulas at their share of them in the data) at --overshoot_share, answers already right
  # at the rest, each kind at its share in the data.
  wrong, right = ("overshoot", "copula"), ("correct", "look-alike")
  weights = {kind: FLAGS.overshoot_share * available[kind] / sum(available[k] for k in wrong) for kind in wrong}
  weights.update({kind: (1 - FLAGS.overshoot_share) * available[kind] / sum(available[k] for k in right)
                  for kind in right})
  metrics = list(results[KINDS[0], "untrimmed"])
  header = f"| prediction | n | trimmed | {' | '.join(metrics)} |"
  print(header + "\n|" + "---|" * (header.count("|") - 1))
  for kind in KINDS + ("mixed",):
    for name in ("untrimmed",) + tuple(trimmers):
      values = (results[kind, name] if kind != "mixed" else
                {metric: sum(weight * results[k, name][metric] for k, weight in weights.items()) for metric in metrics})
      n = f"{len(by_kind[kind]):,}" if kind != "mixed" else f"{FLAGS.overshoot_share:.0%} overshoot"
      print(f"| {kind} | {n} | {name} | " + " | ".join(f"{values[metric]:.1f}" for metric in metrics) + " |")
  for name in trimmers:
    gain = sum(weights[kind] / FLAGS.overshoot_share * (results[kind, name]["KorQuAD EM"] -
                                                        results[kind, "untrimmed"]["KorQuAD EM"]) for kind in wrong)
    loss = sum(weights[kind] / (1 - FLAGS.overshoot_share) * (results[kind, "untrimmed"]["KorQuAD EM"] -
                                                              results[kind, name]["KorQuAD EM"]) for kind in right)
    print(f"{name}: {seconds[name] / count * 1000:.2f} ms an answer; EM gained on overshoots {gain:.1f} points, lost "
          f"on right answers {loss:.2f}: cutting pays when more than {loss / (gain + loss):.2%} of the answers "
          "overshoot.")


def run():
  """The benchmark's command line, `python benchmarks/benchmark_particles.py`."""
  cli.run(main)


if __name__ == "__main__":
  run()
