"""Compares sentence splitters on text whose sentences are known: the documents of Google-format files (a
sentence a line) joined back into paragraphs, then split again; boundary precision, recall and F1, and MB/s.

  pip install pysbd syntok blingfire   # candidates beside ours; kss in a separate venv (it pins old packages)
  python dev/compare_sentence_splitters.py ../shared/corpus/ko_libreoffice_help.txt ../shared/corpus/en_wiki.txt \
      tests/data/sentence_boundaries_ko.txt tests/data/sentence_boundaries_en.txt
  JOIN= python dev/compare_sentence_splitters.py tests/data/sentence_boundaries_ko.txt   # no space between

This is how prepare_corpus's splitters were chosen (docs/design.md, "Sentence splitters: the choice");
candidates that are not installed are skipped. The tests assert floors for the chosen ones.
"""

import importlib.util
import os
import sys
import time

from albert_tf.data.pretraining_corpus import read_documents
from albert_tf.text.sentence_splitting import BoundaryScores, boundary_scores, clean_text


def candidates():
  """(name, split function) of each installed candidate."""
  found = []
  if importlib.util.find_spec("kiwipiepy"):
    from albert_tf.text.korean_analyzers import KiwiAnalyzer
    found.append(("kiwi", KiwiAnalyzer().split_sentences))
  if importlib.util.find_spec("kss"):
    import kss
    found.append(("kss", kss.split_sentences))
  if importlib.util.find_spec("sentencex"):
    found.append(("sentencex", None))  # its language is the file's, set per file below
  if importlib.util.find_spec("pysbd"):
    import pysbd
    found.append(("pysbd", pysbd.Segmenter(language="en", clean=False).segment))
  if importlib.util.find_spec("syntok"):
    import syntok.segmenter
    # Its tokens may rewrite the text ("don't" → "do" "n't"): each sentence is cut from the text by offsets.
    found.append(("syntok", lambda text: [text[sentence[0].offset:sentence[-1].offset + len(sentence[-1].value)]
                                          for paragraph in syntok.segmenter.process(text)
                                          for sentence in paragraph]))
  if importlib.util.find_spec("blingfire"):
    import blingfire
    found.append(("blingfire", lambda text: blingfire.text_to_sentences(text).split("\n")))
  return found


def score(path, split, joiner):
  scores, num_bytes, seconds = BoundaryScores(0, 0, 0), 0, 0.0
  for sentences in read_documents(path):
    sentences = [clean_text(sentence) for sentence in sentences]
    text = joiner.join(sentences)
    start = time.time()
    found = [sentence.strip() for sentence in split(text) if sentence.strip()]
    seconds += time.time() - start
    num_bytes += len(text.encode("utf-8"))
    scores += boundary_scores(text, sentences, found)
  return scores, num_bytes / 1e6 / max(seconds, 1e-9)


def main(paths):
  joiner = os.environ.get("JOIN", " ")
  print("| splitter | file | precision | recall | F1 | MB/s |")
  print("|---|---|---|---|---|---|")
  for name, split in candidates():
    for path in paths:
      if name == "sentencex":
        import sentencex
        language = "ko" if "ko" in os.path.basename(path) else "en"
        split = lambda text, language=language: list(sentencex.segment(language, text))  # noqa: E731
      scores, rate = score(path, split, joiner)
      f1 = 2 * scores.precision * scores.recall / max(1e-9, scores.precision + scores.recall)
      print(f"| {name} | {os.path.basename(path)} | {scores.precision:.4f} | {scores.recall:.4f} | {f1:.4f} | "
            f"{rate:.3f} |", flush=True)


if __name__ == "__main__":
  main(sys.argv[1:])
