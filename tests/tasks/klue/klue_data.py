"""A KLUE data root in the official download's layout, from what ../shared holds: the real KLUE v1.1 dev files of
NLI, STS, NER and DP, each split into a train and a dev file (every `dev_every`-th record to dev); RE's relations
derived from the real NER sentences' entities (benchmarks/benchmark_klue_re.py); and synthetic files for YNAT (real
Korean sentences, the topic by their source), MRC and KorQuAD 1.0 (questions on real Korean sentences) and WoS
(dialogues over the real ontology).

  python tests/tasks/klue/klue_data.py <root> [scale]   # scale 1: the docs' table (docs/korean-benchmarks.md)
"""

import json
import os
import pathlib
import random
import sys

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
if REPO not in sys.path:  # run as a script
  sys.path.insert(0, REPO)

# pylint: disable=wrong-import-position
from tests.conftest import SHARED, corpus_lines
from tests.tasks.classification.test_klue_re import BENCHMARK as KLUE_RE
from tests.tasks.dialogue_state_tracking.wos_dialogues import write_wos
from tests.tasks.squad.korean_reading_data import write_klue_mrc, write_korquad

KLUE = os.path.join(SHARED, "klue")
# YNAT's topic of each source of real Korean sentences: laws read as 사회 (society), a help manual as IT과학.
YNAT_SOURCES = (("ko_law.txt", "사회"), ("ko_libreoffice_help.txt", "IT과학"))


def _blocks(path):
  """The sentences of a KLUE TSV file (blocks after its `##` header lines), and the header."""
  with open(path, encoding="utf-8") as reader:
    text = reader.read()
  blocks = [block for block in text.split("\n\n") if block.strip()]
  header_lines = [line for line in blocks[0].split("\n") if line.startswith("## ") and "\t" not in line][:-1]
  blocks[0] = "\n".join(blocks[0].split("\n")[len(header_lines):])
  return "\n".join(header_lines), blocks


def _split(records, count, dev_every):
  records = records[:count]
  return ([record for index, record in enumerate(records) if index % dev_every],
          [record for index, record in enumerate(records) if index % dev_every == 0])


def _write_tsv_task(root, name, count, dev_every):
  header, blocks = _blocks(os.path.join(KLUE, f"{name}_dev.tsv"))
  folder = root / name
  folder.mkdir(parents=True, exist_ok=True)
  for split, split_blocks in zip(("train", "dev"), _split(blocks, count, dev_every)):
    (folder / f"{name}_{split}.tsv").write_text(header + "\n" + "\n\n".join(split_blocks) + "\n\n", encoding="utf-8")


def _write_json_task(root, name, records, dev_every):
  folder = root / name
  folder.mkdir(parents=True, exist_ok=True)
  for split, split_records in zip(("train", "dev"), _split(records, len(records), dev_every)):
    (folder / f"{name}_{split}.json").write_text(json.dumps(split_records, ensure_ascii=False, indent=1),
                                                encoding="utf-8")


def ynat_records(count):
  """YNAT records (guid, title, label, url, date) whose titles are real Korean sentences, the topic their source."""
  rng = random.Random(7)
  titles = [(line, topic) for name, topic in YNAT_SOURCES for line in corpus_lines(name) if 10 <= len(line) <= 60]
  rng.shuffle(titles)
  return [{"guid": f"ynat-v1_train_{index:05d}", "title": title, "label": topic,
           "url": f"https://news.example/{index}", "date": "2016.06.30. 오전 10:36"}
          for index, (title, topic) in enumerate(titles[:count])]


def write_klue_root(root, scale=1.0, dev_every=4, with_korquad=True):
  """Writes the root (a pathlib.Path) of every task, about `scale` × the docs' sizes; returns it."""
  sizes = {name: max(8, int(count * scale)) for name, count in (
      ("ynat", 2000), ("nli", 3000), ("sts", 519), ("ner", 2000), ("re", 400), ("dp", 2000), ("mrc", 1200),
      ("wos", 300), ("korquad", 1200))}
  _write_json_task(root, "ynat-v1.1", ynat_records(sizes["ynat"]), dev_every)
  for name in ("nli", "sts"):
    with open(os.path.join(KLUE, f"klue-{name}-v1.1_dev.json"), encoding="utf-8") as reader:
      _write_json_task(root, f"klue-{name}-v1.1", json.load(reader)[:sizes[name]], dev_every)
  _write_tsv_task(root, "klue-ner-v1.1", sizes["ner"], dev_every)
  _write_tsv_task(root, "klue-dp-v1.1", sizes["dp"], dev_every)
  train_sentences, dev_sentences = _split(KLUE_RE.ner_sentences(), sizes["re"], dev_every)
  KLUE_RE.write_klue_re(str(root / "klue-re-v1.1"), train_sentences, dev_sentences, no_relation_every=4)
  dev_count = max(4, sizes["mrc"] // dev_every)
  for split, count in (("train", sizes["mrc"] - dev_count), ("dev", dev_count)):
    write_klue_mrc(root / "klue-mrc-v1.1" / f"klue-mrc-v1.1_{split}.json", split, count, seed=len(split))
  wos_dev = max(2, sizes["wos"] // dev_every)
  write_wos(str(root / "wos-v1.1"), sizes["wos"] - wos_dev, wos_dev)
  if with_korquad:
    dev_count = max(4, sizes["korquad"] // dev_every)
    for split, count, seed in (("train", sizes["korquad"] - dev_count, 1), ("dev", dev_count, 2)):
      write_korquad(root / "KorQuAD_v1.0" / f"KorQuAD_v1.0_{split}.json", count, seed, split=split)
  return root


if __name__ == "__main__":
  write_klue_root(pathlib.Path(sys.argv[1]), float(sys.argv[2]) if len(sys.argv) > 2 else 1.0)
