"""The data and tool runs of the reading comprehension tests (test_reading_comprehension.py, test_squad_v2.py).

The data are real sentences of `../shared/corpus` (English Wikipedia, Korean LibreOffice help) in the
official layouts. The question asks what a sentence writes in parentheses, so the answer is a real span
whose place a tiny model can learn in a few hundred steps; unanswerable questions (v2) are about sentences
without parentheses. RACE's articles are Korean, the right option the article's parenthesised words, the
wrong ones parenthesised English words (matching the option to the article's words, or even to its language,
takes a tiny model from scratch hundreds of steps; telling Hangul from Latin, a few dozen).
"""

import json
import random
import re

from albert_tf.tasks.squad import examples as squad_examples
from albert_tf.tasks.squad import scoring as squad_scoring
from tests.conftest import SP8K_MODEL, corpus_lines, run_tool, write_config

SEQ = 96
DOC_STRIDE, MAX_QUERY_LENGTH, MAX_ANSWER_LENGTH = 32, 16, 12  # the tools' reading flags
CONFIG = dict(vocab_size=8000, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
              embedding_size=32, max_position_embeddings=SEQ)
PARENTHESES = re.compile(r"\(([^()]{2,40})\)")
QUESTION = {"en": "What is written in parentheses?", "ko": "괄호 안에 무엇이 쓰여 있습니까?"}


def sentence_pools():
  """Per language: short real sentences with exactly one parenthesised group, and sentences without any."""
  pools = {}
  for language, name in (("en", "en_wiki.txt"), ("ko", "ko_libreoffice_help.txt")):
    lines = [line for line in corpus_lines(name, 4000) if len(line) < 160]
    with_group = [line for line in lines if line.count("(") == line.count(")") == 1 and PARENTHESES.search(line)]
    without = [line for line in lines if "(" not in line and ")" not in line]
    pools[language] = (with_group, without)
  return pools


POOLS = sentence_pools()


def write_squad(path, version, num_questions, seed):
  """A SQuAD file in the official layout (v2 with `is_impossible` and about 30% unanswerable)."""
  rng = random.Random(seed)
  articles = []
  for index in range(num_questions):
    language = ("en", "ko")[index % 2]
    with_group, without = POOLS[language]
    impossible = version == 2 and rng.random() < 0.3
    context = (rng.choice(without) + " " if rng.random() < 0.5 else "") + rng.choice(without if impossible
                                                                                     else with_group)
    qa = {"id": f"{seed}-{index}", "question": QUESTION[language], "answers": []}
    if not impossible:
      match = PARENTHESES.search(context)
      qa["answers"] = [{"text": match.group(1), "answer_start": match.start(1)}]
    if version == 2:
      qa["is_impossible"] = impossible
    articles.append({"title": f"article {index}", "paragraphs": [{"context": context, "qas": [qa]}]})
  path.parent.mkdir(parents=True, exist_ok=True)
  path.write_text(json.dumps({"version": "1.1" if version == 1 else "v2.0", "data": articles}, ensure_ascii=False),
                  encoding="utf-8")
  return str(path)


def first_span_baseline(dataset, version):
  """The official scores of always answering the context's first words (as many as the first gold answer)."""
  answers = {}
  for article in dataset:
    for paragraph in article["paragraphs"]:
      for qa in paragraph["qas"]:
        length = len(qa["answers"][0]["text"].split()) if qa["answers"] else 2
        answers[qa["id"]] = " ".join(paragraph["context"].split()[:length])
  if version == 1:
    return squad_scoring.squad_v1_scores(dataset, answers)
  return squad_scoring.squad_v2_scores(dataset, answers)


def run_in(tool, tmp_path, *flags):
  """Runs `tool` over the shared vocabulary with its run directory in `tmp_path`; returns its stderr."""
  result = run_tool(tool, f"--spm_model_file={SP8K_MODEL}", f"--output_dir={tmp_path / 'run'}", *flags)
  assert result.returncode == 0, result.stderr[-3000:]
  return result.stderr


def run_and_export(tool, tmp_path, flags):
  """Runs `tool` once, predicting and exporting; returns its stderr."""
  return run_in(tool, tmp_path, *flags, f"--export_dir={tmp_path / 'export'}")


def train_resume_and_export(tool, tmp_path, flags, first, second):
  """Runs `tool` to the `first` schedule, then again to the `second` (which resumes), predicting and exporting."""
  return run_in(tool, tmp_path, *flags, *first), run_and_export(tool, tmp_path, [*flags, *second])


def squad_flags(tmp_path, version, checkpoint_steps):
  """run_squad_v<version>.py's flags for 400 training questions (25 steps of 16 an epoch) and 60 dev questions,
  with --do_predict; a checkpoint, scored on the dev file, every `checkpoint_steps` steps. The schedule is the
  caller's (--num_train_epochs)."""
  return [f"--train_file={write_squad(tmp_path / 'train.json', version, 400, seed=1)}",
          f"--predict_file={write_squad(tmp_path / 'dev.json', version, 60, seed=2)}",
          f"--albert_config_file={write_config(tmp_path, **CONFIG)}", "--do_train", "--do_predict",
          f"--max_seq_length={SEQ}", f"--doc_stride={DOC_STRIDE}", f"--max_query_length={MAX_QUERY_LENGTH}",
          f"--max_answer_length={MAX_ANSWER_LENGTH}", "--train_batch_size=16", "--predict_batch_size=16",
          "--learning_rate=2e-3", f"--save_checkpoints_steps={checkpoint_steps}",
          f"--iterations_per_loop={checkpoint_steps}"] + (["--dropout_prob=0"] if version == 2 else [])


def dev_questions(dev_file):
  examples, _, _ = squad_examples.read_squad_examples(dev_file, is_training=False, version_2_with_negative=True)
  return examples


def read_json(path):
  return json.loads(path.read_text(encoding="utf-8"))
