"""A KLUE-DP parser's `parse_text` on raw sentences: with the file's gold tags, and with Kiwi's, as a user
without gold tags would serve it.

  python benchmarks/benchmark_parse_text.py --export_dir=serving/klue-dp/1 \
      --input_file=dp/klue-dp-v1.1_dev.tsv

reads the KLUE-DP file's sentences, tags each eojeol with Kiwi (kiwipiepy, the `[korean]` extra: each morpheme
goes to the eojeol its first character is in, its tag without Kiwi's "-R"/"-I" suffixes, joined by "+" as
KLUE writes them), prints how often Kiwi's first and last tags of an eojeol are KLUE's, and the parser's KLUE
scores on the file with each set of tags. A quality check, not a timing; the figures are in
docs/tagging-and-parsing.md.
"""

from typing import List, Sequence

import tensorflow as tf
import tensorflow_text  # noqa: F401 (registers the SentencePiece op of the SavedModel)
from absl import app
from absl import flags
from kiwipiepy import Kiwi

from albert_tf.tasks.dependency_parsing import data
from albert_tf.tasks.dependency_parsing.features import morpheme_tags
from albert_tf.tasks.dependency_parsing.metrics import KLUE_OTHERS_FROM, dependency_metrics

FLAGS = flags.FLAGS
flags.DEFINE_string("export_dir", None, "A parser's SavedModel version folder (its parse_text takes pos).")
flags.DEFINE_string("input_file", None, "A KLUE-DP file (klue-dp-v1.1_dev.tsv's layout).")
flags.DEFINE_integer("batch_size", 32, "Sentences per parse_text call.")


def kiwi_tags(kiwi: Kiwi, words: Sequence[str]) -> List[str]:
  """Each word's morpheme tags from Kiwi, "+"-joined as KLUE's POS column ("NA" for a word Kiwi leaves empty)."""
  text = " ".join(words)
  starts = [sum(len(word) + 1 for word in words[:index]) for index in range(len(words))]
  tags = [[] for _ in words]
  for token in kiwi.tokenize(text):
    word = max(index for index, start in enumerate(starts) if start <= token.start)
    tags[word].append(token.tag.split("-")[0])
  return ["+".join(word_tags) or "NA" for word_tags in tags]


def main(argv):
  del argv
  examples = data.read_klue_dp(FLAGS.input_file)
  kiwi = Kiwi()
  tagged = [kiwi_tags(kiwi, example.words) for example in examples]
  pairs = [(morpheme_tags(gold), morpheme_tags(ours)) for example, tags in zip(examples, tagged)
           for gold, ours in zip(example.pos_tags, tags)]
  print(f"{len(pairs)} eojeols: Kiwi's first tag is KLUE's for {sum(g[0] == o[0] for g, o in pairs) / len(pairs):.3f}, "
        f"its last for {sum(g[1] == o[1] for g, o in pairs) / len(pairs):.3f}")
  parse_text = tf.saved_model.load(FLAGS.export_dir).signatures["parse_text"]
  relation_ids = {label: index for index, label in enumerate(data.KLUE_DP_LABELS)}
  for name, tag_strings in (("gold tags", [example.pos_tags for example in examples]), ("Kiwi's tags", tagged)):
    heads, relations = [], []
    for start in range(0, len(examples), FLAGS.batch_size):
      batch = examples[start:start + FLAGS.batch_size]
      parsed = parse_text(text=tf.constant([" ".join(example.words) for example in batch]),
                          pos=tf.constant([" ".join(tags) for tags in tag_strings[start:start + FLAGS.batch_size]]))
      for row in range(len(batch)):
        count = int(parsed["num_words"][row])
        heads.append(parsed["heads"].numpy()[row, :count])
        relations.append(parsed["relation_ids"].numpy()[row, :count])
    gold_heads = [example.heads[:len(sentence)] for example, sentence in zip(examples, heads)]
    gold_relations = [[relation_ids.get(relation, len(relation_ids)) for relation in example.deprels[:len(sentence)]]
                      for example, sentence in zip(examples, heads)]
    scores = dependency_metrics(heads, relations, gold_heads, gold_relations, KLUE_OTHERS_FROM)
    print(f"{name}: " + ", ".join(f"{key} {float(value):.4f}" for key, value in sorted(scores.items())))


if __name__ == "__main__":
  flags.mark_flags_as_required(["export_dir", "input_file"])
  app.run(main)
