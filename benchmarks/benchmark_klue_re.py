"""KLUE-RE on real Korean text: entity markers compared, and a small model against trivial predictors.

The RE data is not on this machine, so the records are derived from KLUE-NER's dev sentences
(../shared/klue/klue-ner-v1.1_dev.tsv, real sentences with human entity spans and types): each record is a pair
of entities of one sentence, in KLUE-RE's layout and with every field its files have. The relation labels are
derived, not human: `derived_relation` maps the pair's types to one of KLUE's relations (a person and an
organisation: per:employee_of, ...) when the two entities are at most `NEAR` characters apart, else (and for
pairs of types without a mapping) no_relation. A model has to find the entities, their types and their distance
in the marked text.

  python benchmarks/benchmark_klue_re.py --work_dir=/tmp/klue_re \
      --albert_config_file=albert_ko/albert_config.json --spm_model_file=albert_ko/spiece.model \
      --init_checkpoint=albert_ko --train_step=1500

writes the data to <work_dir>/data (sentences 0 .. --train_sentences-1 of the NER file for train, the rest for
dev), fine-tunes run_classifier --task_name=klue-re with each --markers (added_pieces first extends the
vocabulary and the checkpoint with tools/extend_vocab.py), and prints each run's dev micro F1 and AUPRC beside
those of always predicting no_relation and of predicting the train split's most frequent relation with the train
split's priors as probabilities.
"""

import collections
import json
import os
import random
import sys
from typing import Dict, List, Tuple

from absl import flags

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NER_DEV = os.path.join(os.path.dirname(REPO), "shared", "klue", "klue-ner-v1.1_dev.tsv")
RELATION_LIST = os.path.join(os.path.dirname(REPO), "shared", "klue", "relation_list.json")

# KLUE-NER's types as KLUE-RE's entity types (RE has no time or quantity type of its own: a time is a DAT, a
# quantity an NOH, other numerals).
RE_TYPES = {"PS": "PER", "OG": "ORG", "LC": "LOC", "DT": "DAT", "TI": "DAT", "QT": "NOH"}
# (subject type, object type) -> the derived relation of a near pair.
TYPE_RELATIONS = {
    ("PER", "ORG"): "per:employee_of", ("PER", "LOC"): "per:place_of_residence", ("PER", "DAT"): "per:date_of_birth",
    ("PER", "PER"): "per:colleagues", ("ORG", "LOC"): "org:place_of_headquarters", ("ORG", "DAT"): "org:founded",
    ("ORG", "PER"): "org:top_members/employees", ("ORG", "ORG"): "org:member_of",
    ("ORG", "NOH"): "org:number_of_employees/members",
}
NEAR = 12  # the most characters between two entities of a derived relation
PAIRS_PER_SENTENCE = 4


def ner_sentences(path: str = NER_DEV) -> List[Tuple[str, str, List[Dict]]]:
  """(NER guid, sentence, entities) of each sentence of a KLUE-NER file, entities as KLUE-RE's entity objects."""
  sentences, guid, characters, tags = [], None, [], []

  def close():
    if guid is None or not characters:
      return
    sentence, entities, start = "".join(characters), [], None
    for index, tag in enumerate(tags + ["O"]):
      if start is not None and not tag.startswith("I-"):
        entities.append({"word": sentence[start:index], "start_idx": start, "end_idx": index - 1,
                         "type": RE_TYPES[tags[start][2:]]})
        start = None
      if tag.startswith("B-"):
        start = index
    sentences.append((guid, sentence, entities))

  with open(path, encoding="utf-8") as reader:
    for line in reader:
      line = line.rstrip("\n")
      if line.startswith("## klue-ner"):
        close()
        guid, characters, tags = line[3:].split("\t")[0], [], []
      elif line.startswith("##") or not line:
        continue
      else:
        character, tag = line.split("\t")
        characters.append(character)
        tags.append(tag)
  close()
  return sentences


def derived_relation(subject: Dict, obj: Dict) -> str:
  """The derived label of a pair: its types' relation when the entities are near, else no_relation."""
  gap = max(subject["start_idx"], obj["start_idx"]) - min(subject["end_idx"], obj["end_idx"]) - 1
  relation = TYPE_RELATIONS.get((subject["type"], obj["type"]))
  return relation if relation and gap <= NEAR else "no_relation"


def relation_records(sentences, split: str, seed: int = 0, no_relation_every: int = 1) -> List[Dict]:
  """KLUE-RE records of up to `PAIRS_PER_SENTENCE` ordered entity pairs of each sentence, drawn with `seed`;
  of the no_relation pairs, one in `no_relation_every` is kept."""
  rng = random.Random(seed)
  records, no_relation_pairs = [], 0
  for ner_guid, sentence, entities in sentences:
    pairs = [(subject, obj) for subject in entities for obj in entities
             if (subject["start_idx"], subject["end_idx"]) != (obj["start_idx"], obj["end_idx"])]
    for subject, obj in rng.sample(pairs, min(PAIRS_PER_SENTENCE, len(pairs))):
      if derived_relation(subject, obj) == "no_relation":
        no_relation_pairs += 1
        if no_relation_pairs % no_relation_every:
          continue
      records.append({"guid": f"klue-re-v1_{split}_{len(records):05d}", "sentence": sentence,
                      "subject_entity": dict(subject), "object_entity": dict(obj),
                      "label": derived_relation(subject, obj), "source": ner_guid.rsplit("-", 1)[-1]})
  return records


def write_klue_re(folder: str, train_sentences, dev_sentences, seed: int = 0,
                  no_relation_every: int = 1) -> Dict[str, List[Dict]]:
  """`klue-re-v1.1_{train,dev}.json` and KLUE's relation_list.json in `folder` (see `relation_records`); returns
  the records by split."""
  os.makedirs(folder, exist_ok=True)
  records = {"train": relation_records(train_sentences, "train", seed, no_relation_every),
             "dev": relation_records(dev_sentences, "dev", seed + 1, no_relation_every)}
  for split, split_records in records.items():
    with open(os.path.join(folder, f"klue-re-v1.1_{split}.json"), "w", encoding="utf-8") as writer:
      json.dump(split_records, writer, ensure_ascii=False, indent=4)
  with open(RELATION_LIST, encoding="utf-8") as reader, \
      open(os.path.join(folder, "relation_list.json"), "w", encoding="utf-8") as writer:
    writer.write(reader.read())
  return records


def trivial_figures(records: Dict[str, List[Dict]], relations) -> Dict[str, Dict[str, float]]:
  """micro F1 and AUPRC on dev of always no_relation, and of the train split's most frequent relation with the
  train split's priors as every example's probabilities."""
  import numpy as np
  from albert_tf.training import metrics
  positive = [index for index, name in enumerate(relations) if name != "no_relation"]
  labels = np.array([relations.index(record["label"]) for record in records["dev"]])
  counts = collections.Counter(relations.index(record["label"]) for record in records["train"])
  priors = np.array([counts[index] / len(records["train"]) for index in range(len(relations))])
  figures = {}
  for name, predicted in (("always no_relation", relations.index("no_relation")),
                          ("most frequent train label", counts.most_common(1)[0][0])):
    probabilities = np.tile(priors, (len(labels), 1))
    figures[name] = {"micro_f1": metrics.micro_f1(np.full(len(labels), predicted), labels, positive),
                     "auprc": metrics.mean_auprc(probabilities, labels)}
  return figures


FLAGS = flags.FLAGS


def define_flags():
  """The command's flags (defined when it runs, not when the tests import its functions)."""
  flags.DEFINE_string("work_dir", None, "Where the data, the extended vocabulary and the runs go.")
  flags.DEFINE_string("albert_config_file", None, "The pretrained model's albert_config.json.")
  flags.DEFINE_string("spm_model_file", None, "Its SentencePiece model.")
  flags.DEFINE_string("init_checkpoint", None, "Its checkpoint.")
  flags.DEFINE_integer("train_sentences", 2400, "NER sentences whose pairs make the train split; the rest make dev.")
  flags.DEFINE_list("markers", ["typed_punct", "added_pieces"], "The --entity_markers to compare.")
  flags.DEFINE_integer("train_step", 1500, "Fine-tuning steps of each run.")
  flags.DEFINE_integer("train_batch_size", 32, "Batch size.")
  flags.DEFINE_float("learning_rate", 1e-4, "Peak learning rate.")
  flags.DEFINE_integer("max_seq_length", 128, "Packed length.")


def main(argv):
  del argv
  import subprocess
  from albert_tf.tasks.classification.relation_extraction import ENTITY_MARKERS, read_relation_list
  from albert_tf.training import run_directory
  sentences = ner_sentences()
  data = os.path.join(FLAGS.work_dir, "data")
  records = write_klue_re(data, sentences[:FLAGS.train_sentences], sentences[FLAGS.train_sentences:])
  relations = list(read_relation_list(os.path.join(data, "relation_list.json")))
  labels = collections.Counter(record["label"] for record in records["dev"])
  print(f"records: train {len(records['train'])}, dev {len(records['dev'])}; dev labels {labels.most_common()}")
  for name, values in trivial_figures(records, relations).items():
    print(f"{name}: micro_f1 {values['micro_f1']:.4f} auprc {values['auprc']:.4f}")
  for markers in FLAGS.markers:
    config, spm_model, checkpoint = FLAGS.albert_config_file, FLAGS.spm_model_file, FLAGS.init_checkpoint
    if ENTITY_MARKERS[markers].new_pieces:
      extended = os.path.join(FLAGS.work_dir, "extended")
      pieces = os.path.join(FLAGS.work_dir, "marker_pieces.txt")
      with open(pieces, "w", encoding="utf-8") as writer:
        writer.writelines(f"{piece}\n" for piece in ENTITY_MARKERS[markers].new_pieces)
      if not os.path.exists(os.path.join(extended, "albert_config.json")):
        subprocess.run([sys.executable, os.path.join(REPO, "tools", "extend_vocab.py"), f"--spm_model_file={spm_model}",
                        f"--new_pieces_file={pieces}", f"--init_checkpoint={checkpoint}",
                        f"--albert_config_file={config}", f"--output_dir={extended}"], check=True)
      config, spm_model, checkpoint = (os.path.join(extended, "albert_config.json"),
                                       os.path.join(extended, "spiece.model"), extended)
    output_dir = os.path.join(FLAGS.work_dir, f"run_{markers}")
    subprocess.run([sys.executable, os.path.join(REPO, "tools", "run_classifier.py"), "--task_name=klue-re",
                    f"--entity_markers={markers}", f"--data_dir={data}", f"--output_dir={output_dir}",
                    f"--albert_config_file={config}", f"--spm_model_file={spm_model}",
                    f"--init_checkpoint={checkpoint}",
                    f"--max_seq_length={FLAGS.max_seq_length}", "--do_train", "--do_eval",
                    f"--train_batch_size={FLAGS.train_batch_size}", "--eval_batch_size=64",
                    f"--learning_rate={FLAGS.learning_rate}", f"--train_step={FLAGS.train_step}",
                    f"--warmup_step={FLAGS.train_step // 10}", f"--save_checkpoints_steps={FLAGS.train_step // 3}",
                    f"--iterations_per_loop={FLAGS.train_step // 3}", "--dropout_prob=0.1"], check=True)
    best = run_directory.read_best_info(output_dir)
    print(f"{markers}: dev micro_f1 {best['micro_f1']:.4f} auprc {best['auprc']:.4f} (step {best['global_step']})")


if __name__ == "__main__":
  from absl import app
  define_flags()
  flags.mark_flags_as_required(["work_dir", "albert_config_file", "spm_model_file", "init_checkpoint"])
  app.run(main)
