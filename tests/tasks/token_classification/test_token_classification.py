"""run_token_classification end to end on real KLUE-NER sentences: training, the scores against seqeval and
scikit-learn on the tool's own predictions, prediction files, export; the objective's windows and the baseline's
truncation; bad input refused before any work."""

import json
import os
import re

import numpy as np
import pytest
import tensorflow as tf
from seqeval.metrics import f1_score as seqeval_f1
from seqeval.scheme import IOB2
from sklearn.metrics import f1_score as sklearn_f1

from albert_tf.errors import TaskError
from albert_tf.tasks.token_classification import data, serving
from albert_tf.tasks.token_classification.objective import TokenClassificationObjective
from albert_tf.text.tokenizer import SentencePieceTokenizer
from albert_tf.training import run_directory
from tests.conftest import SHARED, SP8K_MODEL, requires_shared, run_tool, write_config

KLUE_NER_DEV = os.path.join(SHARED, "klue", "klue-ner-v1.1_dev.tsv")
CONFIG = dict(vocab_size=8000, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
              embedding_size=32, max_position_embeddings=64)
pytestmark = requires_shared(KLUE_NER_DEV)


def klue_blocks():
  """The dev file's sentences as the file writes them (header and character lines), the comments dropped."""
  with open(KLUE_NER_DEV, encoding="utf-8") as reader:
    blocks = [block.strip("\n") for block in reader.read().split("\n\n")]
  return [block[block.rindex("\n## ") + 1:] if "\n## " in block else block for block in blocks if "\t" in block]


def write_klue_split(folder, train, dev):
  """The first `train` sentences as the train split and the `dev` after them as dev (dev=0: the train ones)."""
  os.makedirs(folder, exist_ok=True)
  blocks = klue_blocks()
  for name, chosen in (("train", blocks[:train]), ("dev", blocks[train:train + dev] or blocks[:train])):
    with open(os.path.join(folder, f"klue-ner-v1.1_{name}.tsv"), "w", encoding="utf-8") as writer:
      writer.write("\n\n".join(chosen) + "\n")
  return folder


def baseline_scores(sentences, label_list):
  """The KLUE baseline's two scores by seqeval and scikit-learn, from (gold, predicted) tags per sentence."""
  gold, predicted = [], []
  for gold_tags, predicted_tags in sentences:
    gold += ["O", *gold_tags, "O"]
    predicted += ["O", *predicted_tags, "O"]
  ids = {label: index for index, label in enumerate(label_list)}
  return {"entity_f1": seqeval_f1([gold], [predicted], average="macro", mode="strict", scheme=IOB2),
          "character_f1": sklearn_f1([ids[tag] for tag in gold], [ids[tag] for tag in predicted], average="macro",
                                     labels=list(range(len(label_list))), zero_division=1)}


def test_the_tool_learns_klue_ner_scores_as_seqeval_predicts_and_exports(tmp_path):
  # A tiny model from scratch finds nothing but O in a few hundred sentences in a test's time; fitting its own
  # training sentences shows that the tags reach the pieces and come back (the learning figures are in the docs).
  # One run in this process: the driver's resume after kill -9, which this tool shares, is test_finetuning.py's;
  # what a resume of this tool adds, its task.json adopted, is checked at the end.
  # Scored once, at the end: the test reads only the best evaluation.
  data_dir = write_klue_split(tmp_path / "klue", train=64, dev=0)
  result = run_tool(
      "run_token_classification", "--task_name=klue-ner", f"--data_dir={data_dir}",
      f"--albert_config_file={write_config(tmp_path, **CONFIG)}", f"--spm_model_file={SP8K_MODEL}",
      f"--output_dir={tmp_path / 'run'}", "--max_seq_length=64", "--doc_stride=24", "--train_batch_size=16",
      "--eval_batch_size=32", "--learning_rate=1e-3", "--warmup_step=20", "--save_checkpoints_steps=300",
      "--iterations_per_loop=300", "--dropout_prob=0", "--train_step=300", "--do_predict",
      f"--export_dir={tmp_path / 'export'}")
  assert result.returncode == 0, result.stderr[-3000:]

  evaluation = (tmp_path / "run" / run_directory.EVAL_RESULTS).read_text()
  for name in ("entity_f1", "character_f1", "entity_f1_baseline_truncation", "character_f1_baseline_truncation",
               "sentences_longer_than_max_seq_length", "units_beyond_truncation"):
    assert re.search(rf"^{name} = [0-9.e-]+$", evaluation, re.MULTILINE), name
  best = run_directory.read_best_info(str(tmp_path / "run"))
  # Windows: 64 positions cut some of these sentences, and the baseline's truncation drops their tails.
  assert best["sentences_longer_than_max_seq_length"] > 0 and best["units_beyond_truncation"] > 0

  # The test split of klue-ner is its dev file: the predictions of the best weights, in KLUE's layout.
  gold = data.read_klue_ner(str(data_dir / "klue-ner-v1.1_dev.tsv"))
  written = (tmp_path / "run" / "predictions.tsv").read_text(encoding="utf-8").strip("\n").split("\n\n")
  assert len(written) == len(gold)
  sentences = []
  for example, block in zip(gold, written):
    lines = block.split("\n")
    assert lines[0].startswith(f"## {example.guid}\t")
    units, tags = zip(*(line.split("\t") for line in lines[1:]))
    assert list(units) == list(example.units)
    kept = [index for index, unit in enumerate(units) if not unit.isspace()]
    sentences.append(([example.labels[i] for i in kept], [tags[i] for i in kept]))
  expected = baseline_scores(sentences, data.KLUE_NER_LABELS)
  assert abs(best["entity_f1"] - expected["entity_f1"]) < 1e-6
  assert abs(best["character_f1"] - expected["character_f1"]) < 1e-6
  # Fitted beyond the most frequent tag (O everywhere: entity F1 0).
  all_outside = baseline_scores([(g, ["O"] * len(g)) for g, _ in sentences], data.KLUE_NER_LABELS)
  assert best["entity_f1"] > 0.5 and best["character_f1"] > all_outside["character_f1"] + 0.3, best

  records = json.loads((tmp_path / "run" / "predictions.json").read_text(encoding="utf-8"))
  for record, (_, tags), example in zip(records, sentences, gold):
    assert record["guid"] == example.guid and record["text"] == example.text
    for entity in record["entities"]:
      assert record["text"][entity["char_start"]:entity["char_end"]] == entity["text"]

  # The SavedModel's tag_text finds the entities of predictions.json in the sentences that fit one window.
  loaded = tf.saved_model.load(str(tmp_path / "export" / "1"))
  tokenizer = SentencePieceTokenizer(SP8K_MODEL)
  whole = [record for record, example in zip(records, gold)
           if len(data.align_example(example, tokenizer).pieces) <= 62]
  found = loaded.signatures["tag_text"](text=tf.constant([record["text"] for record in whole]))
  assert not found["truncated"].numpy().any()
  for row, record in enumerate(whole):
    served = [(found["entity_labels"][row, k].numpy().decode(), int(found["entity_starts"][row, k]),
               int(found["entity_ends"][row, k])) for k in range(int(found["num_entities"][row]))]
    assert served == [(e["type"], e["char_start"], e["char_end"]) for e in record["entities"]], record["text"]
  assert sum(len(record["entities"]) for record in whole) > 20
  # export_saved_model of the run's checkpoint tags characters too: the run's task.json says klue-ner.
  assert serving.run_serving_options(str(tmp_path / "run" / "model.ckpt-best")) == serving.TaggingOptions("character")
  # A rerun of the directory (a resume) takes its tags from task.json and refuses others.
  task = json.loads((tmp_path / "run" / "task.json").read_text(encoding="utf-8"))
  rerun = TokenClassificationObjective("klue-ner", tokenizer, doc_stride=24)
  rerun.adopt_run_info(task, "run")
  assert rerun.run_info() == task and task["label_list"] == list(data.KLUE_NER_LABELS)
  with pytest.raises(TaskError, match="was trained with tags"):
    TokenClassificationObjective("klue-ner", tokenizer, label_list=["O", "B-PS"]).adopt_run_info(task, "run")


def test_windows_score_every_character_and_the_baseline_truncation_drops_the_tails():
  examples = data.read_klue_ner(KLUE_NER_DEV)[:300]
  objective = TokenClassificationObjective("klue-ner", SentencePieceTokenizer(SP8K_MODEL), doc_stride=8)
  split = objective.encode(examples, None, 24, "dev")
  assert len(split.guids) > len(examples)  # windows of 22 pieces: most sentences need several
  assert split.labels.shape == (len(split.guids), 24)
  # Perfect predictions: the gold tag id at every labelled piece.
  perfect = np.maximum(split.labels, 0)
  scores = objective.evaluation_metrics(perfect, split)
  assert scores["entity_f1"] > 0.97 and scores["character_f1"] > 0.97, scores
  # Under the baseline's rule only 22 pieces are read: fewer characters scored, all of them still right.
  assert scores["units_beyond_truncation"] > 1000
  assert scores["entity_f1_baseline_truncation"] > 0.97


def test_a_tag_outside_klue_set_is_one_error_naming_file_and_line_and_nothing_is_written(tmp_path):
  data_dir = write_klue_split(tmp_path / "klue", train=5, dev=3)
  train = data_dir / "klue-ner-v1.1_train.tsv"
  lines = train.read_text(encoding="utf-8").split("\n")
  bad = next(index for index, line in enumerate(lines) if line.endswith("\tO") and not line.startswith("##"))
  lines[bad] = lines[bad][:-1] + "B-XX"
  train.write_text("\n".join(lines), encoding="utf-8")
  result = run_tool("run_token_classification", "--task_name=klue-ner", f"--data_dir={data_dir}",
                    f"--albert_config_file={write_config(tmp_path, **CONFIG)}", f"--spm_model_file={SP8K_MODEL}",
                    f"--output_dir={tmp_path / 'run'}", "--max_seq_length=64")
  assert result.returncode == 2
  message = result.stderr.strip().splitlines()[-1]
  assert message.startswith("error: ") and str(train) in message and f"line {bad + 1}" in message, message
  assert "B-XX" in message
  assert not (tmp_path / "run").exists()
