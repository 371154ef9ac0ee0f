"""Shared fixtures: tiny configs, deterministic random weights, and the shared corpora."""

import contextlib
import importlib.util
import io
import itertools
import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# Read once, at the first XLA compilation of a process (its tools' processes inherit it): LLVM's optimisation of
# the CPU code is three quarters of each compilation in tests/test_xla.py and changes no value (fast-math is off);
# the HLO, what a TPU compiles, is the same.
os.environ["XLA_FLAGS"] = " ".join([os.environ.get("XLA_FLAGS", ""), "--xla_backend_optimization_level=0"]).strip()

from absl import logging as absl_logging
import numpy as np
import pytest

# Before TensorFlow, as in a command: the environment the tools run with (tf_keras as tf.keras, the C++ log
# level), which the processes the tests start inherit.
from albert_tf import cli
import tensorflow as tf

# Two logical CPU devices, set before the runtime starts: MirroredStrategy then runs two replicas in the test
# process, so the tests of replicas start no process of their own (one-device runs use the first).
tf.config.set_logical_device_configuration(tf.config.list_physical_devices("CPU")[0],
                                           [tf.config.LogicalDeviceConfiguration()] * 2)

import albert_tf
from albert_tf import files as albert_files
from albert_tf.modeling import checkpoints as checkpoint_lib

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.join(os.path.dirname(REPO), "shared")
SP8K_MODEL = os.path.join(SHARED, "reference", "sp8k_en_ko.model")
TOOLS = os.path.join(REPO, "tools")


def run_tool(tool, *args, in_process=True, timeout=900, cwd=None, env=None) -> subprocess.CompletedProcess:
  """Runs a command of the project with `args` and returns its exit status, stdout and stderr.

  `tool` names a script of `tools/` ("run_classifier"), another script of the repository by its path without
  ".py" ("benchmarks/benchmark_pretraining"), or a module ("albert_tf.cli.demo"). By default it runs in this
  process, through the same `run()` as its command (absl's parsing into fresh flags, the `error:` line and exit
  status 2 of bad input), so a test pays no second TensorFlow import; `in_process=False` starts a Python process,
  for tests whose subject is the process itself (kill -9, signals, its environment, what it logs), with the
  variables of `env` set in its environment (None: unset).
  A bug's exception propagates as the test's failure, with its traceback.
  """
  if tool.startswith("albert_tf."):
    command = [sys.executable, "-m", tool, *args]
    spec = importlib.util.find_spec(tool)
  else:
    path = os.path.join(REPO if "/" in tool else TOOLS, f"{tool}.py")
    command = [sys.executable, path, *args]
    # A tool's module is named as installed; benchmarks/ is not installed.
    module = tool.replace("/", ".") if "/" in tool else f"albert_tf_tools.{tool}"
    spec = importlib.util.spec_from_file_location(module, path)
  if not in_process:
    environment = {name: value for name, value in {**os.environ, **(env or {})}.items() if value is not None}
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=cwd, env=environment)
  if env:
    raise ValueError("An environment applies to a new process: pass in_process=False.")
  stdout, stderr = io.StringIO(), io.StringIO()
  log_handler = absl_logging.get_absl_handler().python_handler
  log_stream = log_handler.stream
  with contextlib.ExitStack() as stack:
    stack.enter_context(contextlib.redirect_stdout(stdout))
    stack.enter_context(contextlib.redirect_stderr(stderr))
    if cwd is not None:
      stack.enter_context(contextlib.chdir(cwd))
    log_handler.stream = stderr
    try:
      returncode = cli.run_in_process(spec, [spec.origin, *args])
    finally:
      log_handler.stream = log_stream
  return subprocess.CompletedProcess(command, returncode, stdout.getvalue(), stderr.getvalue())


def tiny_config(**overrides) -> albert_tf.AlbertConfig:
  values = dict(vocab_size=120, hidden_size=32, num_hidden_layers=4, num_attention_heads=4,
                intermediate_size=37, embedding_size=16, max_position_embeddings=64)
  values.update(overrides)
  return albert_tf.AlbertConfig(**values)


def korean_reader_config(directory, max_position_embeddings):
  """The albert_config.json (written in `directory`) of the small model that the Korean reading tests train over
  the shared 8k Korean-English vocabulary."""
  path = directory / "albert_config.json"
  tiny_config(vocab_size=8000, hidden_size=64, num_hidden_layers=2, intermediate_size=128, embedding_size=32,
              max_position_embeddings=max_position_embeddings).to_json_file(str(path))
  return path


def randomize(model, seed=0, scale=0.3):
  """Gives every variable (LayerNorms and biases too) random values, so parity tests see every weight."""
  rng = np.random.default_rng(seed)
  for variable in model.variables:
    variable.assign(rng.normal(0.0, scale, variable.shape).astype(np.float32))


def randomize_text_sensitive(model, seed):
  """`randomize`, then LayerNorm scales near 1 and offsets and biases near 0. With `randomize`'s one scale for every
  variable the LayerNorm offsets dominate and every text gets nearly the same embedding: parity would hold
  whatever the tokenization, and correlations would be noise."""
  randomize(model, seed=seed, scale=0.3)
  rng = np.random.default_rng(seed)
  for variable in model.variables:
    if "gamma" in variable.name:
      variable.assign((1 + rng.normal(0, 0.1, variable.shape)).astype(np.float32))
    elif "beta" in variable.name or "bias" in variable.name:
      variable.assign(rng.normal(0, 0.02, variable.shape).astype(np.float32))


def padded_batch(vocab_size, batch_size=3, seq_length=11, max_predictions=4, seed=1):
  """Int32 inputs with padding in later rows, two segments, and masked positions."""
  rng = np.random.default_rng(seed)
  ids = rng.integers(5, vocab_size, (batch_size, seq_length))
  mask = np.ones_like(ids)
  for row in range(1, batch_size):
    mask[row, seq_length - 3 * row:] = 0
  ids = ids * mask
  types = np.zeros_like(ids)
  types[:, seq_length // 2:] = 1
  positions = np.stack([rng.choice(seq_length - 3 * (batch_size - 1), max_predictions, replace=False)
                        for _ in range(batch_size)])
  return {"input_word_ids": tf.constant(ids, tf.int32), "input_mask": tf.constant(mask, tf.int32),
          "input_type_ids": tf.constant(types, tf.int32),
          "masked_lm_positions": tf.constant(np.sort(positions), tf.int32)}


def free_ports(count):
  """Local TCP ports free now, for the hosts of a multi-worker test."""
  sockets = [socket.socket() for _ in range(count)]
  for sock in sockets:
    sock.bind(("127.0.0.1", 0))
  ports = [sock.getsockname()[1] for sock in sockets]
  for sock in sockets:
    sock.close()
  return ports


def kill_once_a_checkpoint_is_written(command, run_dir, last_checkpoint):
  """Starts `command`, sends SIGKILL as soon as its first checkpoint is complete (the `checkpoint` state file
  is written last), and checks that the run had not reached `last_checkpoint` by then."""
  process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
  deadline = time.time() + 300
  while not (run_dir / "checkpoint").exists() and process.poll() is None and time.time() < deadline:
    time.sleep(0.01)
  process.send_signal(signal.SIGKILL)
  process.wait()
  assert not (run_dir / f"{last_checkpoint}.index").exists(), "the run finished before it could be killed"


def damage_checkpoint(prefix, damage):
  """Damages the checkpoint `prefix` as a crash, a full disk or a bad copy does: "gone" removes its files, "data
  cut" cuts its data file to half, "data missing" removes its data file, "index garbage" overwrites its index."""
  data = f"{prefix}.data-00000-of-00001"
  if damage == "gone":
    for path in (data, f"{prefix}.index"):
      os.remove(path)
  elif damage == "data cut":
    with open(data, "r+b") as writer:
      writer.truncate(os.path.getsize(data) // 2)
  elif damage == "data missing":
    os.remove(data)
  elif damage == "index garbage":
    with open(f"{prefix}.index", "wb") as writer:
      writer.write(np.random.default_rng(0).integers(0, 256, 4096, dtype=np.uint8).tobytes())
  else:
    raise ValueError(f"Unknown damage {damage!r}.")


def assert_same_pretrainer_weights(expected_dir, actual_dir, config: dict):
  """The latest checkpoints of two pretraining runs of `config` hold the same weights, within 1e-6."""

  def weights(directory):
    model = albert_tf.AlbertPretrainer(albert_tf.AlbertConfig(**config))
    checkpoint_lib.restore_checkpoint(model, str(directory))
    return {v.name: v.numpy() for v in model.variables}

  expected, actual = weights(expected_dir), weights(actual_dir)
  for name, value in expected.items():
    np.testing.assert_allclose(actual[name], value, atol=1e-6, rtol=0, err_msg=name)


def gcs_kind(path):
  """What GCS answers for a `ram://` path: "file", "folder" or None. TensorFlow's in-memory file system calls a path
  a folder when any file name starts with it (`model.ckpt-4` beside `model.ckpt-4.index`); GCS only when a folder
  object is at the path (what makedirs writes) or an object lies under the path and "/"."""
  gfile = tf.io.gfile
  path = path.rstrip("/")
  if not gfile.exists(path):
    return None
  if not gfile.isdir(path):
    return "file"  # a file of exactly this name
  head, _, name = path.rpartition("/")
  if head.endswith(":/") or name in gfile.listdir(head):  # the bucket, or a folder object at the path
    return "folder"
  # ram:// lists a path's "children" by prefix: `model.ckpt-4` lists ".index"; only a name under "path/" counts.
  return "folder" if any(gfile.exists(f"{path}/{child}") for child in gfile.listdir(path)) else None


@pytest.fixture
def bucket(monkeypatch):
  """A stand-in for a `gs://` bucket, on the same `tf.io.gfile` code path without a network: a new folder of
  TensorFlow's in-memory file system (this process's), whose folder tests and listings `albert_tf.files` sees as
  GCS answers them (`gcs_kind`). Yields its root, `ram://bucket-<n>/`; what the test wrote there is removed after it."""
  root = f"ram://bucket-{next(_BUCKET_NUMBERS)}"
  tf.io.gfile.makedirs(root)
  real_kind, real_children = albert_files._remote_kind, albert_files._remote_children
  monkeypatch.setattr(albert_files, "_remote_kind",
                      lambda path: gcs_kind(path) if path.startswith("ram://") else real_kind(path))
  monkeypatch.setattr(albert_files, "_remote_children", lambda folder: [
      name for name in real_children(folder) if not folder.startswith("ram://") or gcs_kind(f"{folder}/{name}")])
  yield root
  albert_files.remove_tree(root)


_BUCKET_NUMBERS = itertools.count()


def requires_shared(path):
  return pytest.mark.skipif(not os.path.exists(path), reason=f"{path} not present")


# A few rows of each GLUE file in its real layout (a header first, except in CoLA's train and dev). Some
# texts hold unbalanced quotes: GLUE's files are read without quoting.
MNLI_HEADER = ("index\tpromptID\tpairID\tgenre\tsentence1_binary_parse\tsentence2_binary_parse\t"
               "sentence1_parse\tsentence2_parse\tsentence1\tsentence2")
MNLI_PARSES = "( x )\t( y )\t(ROOT x)\t(ROOT y)"
STSB_HEADER = "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2"
STSB_ROW = "{}\tmain-captions\tMSRvid\t2012test\t0001\tnone\tnone\t{}\t{}"
MRPC_COLUMNS = "#1 ID\t#2 ID\t#1 String\t#2 String"
GLUE_FILES = {
    "CoLA/train.tsv": ["gj04\t1\t\tOur friends won't buy this analysis.", "gj04\t0\t*\tThey drank the pub."],
    "CoLA/dev.tsv": ["gj04\t1\t\tThe sailors rode the breeze clear of the rocks."],
    "CoLA/test.tsv": ["index\tsentence", "0\tBill whistled past the house.", '1\tThe car honked "down.'],
    "SST-2/train.tsv": ["sentence\tlabel", "hide new secretions from the parents \t0",
                        "the greatest musicians \t1"],
    "SST-2/dev.tsv": ["sentence\tlabel", "it 's a charming journey . \t1"],
    "SST-2/test.tsv": ["index\tsentence", "0\tuneasy mishmash of styles ."],
    "MRPC/train.tsv": ["Quality\t" + MRPC_COLUMNS, '1\t702876\t702977\tHe called " the witness " .\tHe did .',
                       "0\t2108705\t2108831\tYucaipa owned it .\tYucaipa bought it ."],
    "MRPC/dev.tsv": ["Quality\t" + MRPC_COLUMNS, "1\t1355540\t1355592\tHe said .\tHe says ."],
    "MRPC/test.tsv": ["index\t" + MRPC_COLUMNS, "0\t1089874\t1089925\tPCCW 's chief .\tCEO ."],
    "STS-B/train.tsv": [STSB_HEADER + "\tscore", STSB_ROW.format(0, "A jet flies.", "A jet.") + "\t5.0",
                        STSB_ROW.format(1, "A man plays a flute.", "A man plays.") + "\t3.800"],
    "STS-B/dev.tsv": [STSB_HEADER + "\tscore", STSB_ROW.format(0, "A hard hat.", "A hat.") + "\t0.5"],
    "STS-B/test.tsv": [STSB_HEADER, STSB_ROW.format(0, "A girl sings.", "A girl talks.")],
    "QQP/train.tsv": ["id\tqid1\tqid2\tquestion1\tquestion2\tis_duplicate",
                      "133273\t213221\t213222\tHow is the life of a math student?\tWhich level is enough?\t0",
                      "402555\t536040\t536041\tHow do I control it?\tHow do you control it?\t1"],
    "QQP/dev.tsv": ["id\tqid1\tqid2\tquestion1\tquestion2\tis_duplicate",
                    "201359\t303345\t303346\tWhy is it so?\tWhy are they so good?\t0"],
    "QQP/test.tsv": ["id\tquestion1\tquestion2", "0\tWhy am I lonely?\tHow can I stop being lonely?"],
    "MNLI/train.tsv": [MNLI_HEADER + "\tlabel1\tgold_label",
                       f"0\t31193\t31193n\tgovernment\t{MNLI_PARSES}\tCream skimming has two dimensions.\t"
                       "Product makes it work. \tneutral\tneutral",
                       f'1\t101457\t101457e\ttelephone\t{MNLI_PARSES}\tyou know "during the season\t'
                       "You lose.\tentailment\tentailment"],
    "MNLI/dev_matched.tsv": [MNLI_HEADER + "\tlabel1\tlabel2\tlabel3\tlabel4\tlabel5\tgold_label",
                             f"0\t63735\t63735n\tslate\t{MNLI_PARSES}\tThe rights are nice.\tEveryone likes "
                             "them.\tneutral\tentailment\tneutral\tneutral\tneutral\tneutral"],
    "MNLI/dev_mismatched.tsv": [MNLI_HEADER + "\tlabel1\tlabel2\tlabel3\tlabel4\tlabel5\tgold_label"] + [
        f"{index}\t75290\t75290c\tletters\t{MNLI_PARSES}\tYes.\tNo.\t" + "\t".join(["contradiction"] * 6)
        for index in range(2)],
    "MNLI/test_matched.tsv": [MNLI_HEADER, f"0\t31349\t31349\tslate\t{MNLI_PARSES}\tHi Tom.\tTom is here."],
    "MNLI/test_mismatched.tsv": [MNLI_HEADER, f"0\t2\t2\tletters\t{MNLI_PARSES}\tHello.\tA greeting."],
    "QNLI/train.tsv": ["index\tquestion\tsentence\tlabel",
                       "0\tWhen did the third series begin?\tUnlike the two before it.\tnot_entailment"],
    "QNLI/dev.tsv": ["index\tquestion\tsentence\tlabel", "0\tWhat came into force?\tThe Treaty.\tentailment"],
    "QNLI/test.tsv": ["index\tquestion\tsentence", "0\tWho is devoted to it?\tFor decades."],
    "RTE/train.tsv": ["index\tsentence1\tsentence2\tlabel", "0\tNo Weapons Yet.\tWeapons.\tnot_entailment",
                      "1\tA place of sorrow.\tPope buried.\tentailment"],
    "RTE/dev.tsv": ["index\tsentence1\tsentence2\tlabel", "0\tDana Reeve died.\tReeve had.\tnot_entailment"],
    "RTE/test.tsv": ["index\tsentence1\tsentence2", "0\tMexico City has a population.\tMexico is big."],
    "WNLI/train.tsv": ["index\tsentence1\tsentence2\tlabel", "0\tI stuck a pin in it.\tIt had a hole.\t1"],
    "WNLI/dev.tsv": ["index\tsentence1\tsentence2\tlabel", "0\tThe drain is clogged.\tThe hair is.\t0"],
    "WNLI/test.tsv": ["index\tsentence1\tsentence2", "0\tMaude had seen trains.\tThe trains roared."],
}


def write(path, lines, encoding="utf-8"):
  path.parent.mkdir(parents=True, exist_ok=True)
  path.write_bytes("".join(line + "\n" for line in lines).encode(encoding))
  return str(path)


def write_glue_data(root):
  """A GLUE download in miniature under `root`: every task's folder and files, a few rows each."""
  for name, lines in GLUE_FILES.items():
    write(root / "glue_data" / name, lines)
  return root / "glue_data"


@pytest.fixture
def glue_dir(tmp_path):
  """`write_glue_data` in the test's own directory."""
  return write_glue_data(tmp_path)


def _skipped(session):
  reporter = session.config.pluginmanager.get_plugin("terminalreporter")
  return [] if reporter is None else reporter.stats.get("skipped", [])


def pytest_sessionfinish(session, exitstatus):
  """Prints the skip count; on CI (CI=true) a skipped test fails the run: every test must run there."""
  if hasattr(session.config, "workerinput"):  # an xdist worker: the controller counts for all
    return
  skipped = _skipped(session)
  print(f"\nskipped tests: {len(skipped)}")
  if skipped and os.environ.get("CI", "").lower() in ("1", "true") and exitstatus == 0:
    print("CI=true: skipped tests fail the run (the test extra and ../shared provide what every test needs).")
    session.exitstatus = pytest.ExitCode.TESTS_FAILED


def corpus_lines(name, limit=None):
  """The first `limit` non-blank lines of a shared corpus (all of them by default)."""
  with open(os.path.join(SHARED, "corpus", name), encoding="utf-8") as reader:
    lines = [line.rstrip("\n") for line in reader if line.strip()]
  return lines[:limit]


def python_pack(tokenizer, text_a, text_b, max_seq_length):
  """Google's run_classifier packing with `_truncate_seq_pair`, written out as its loop."""
  ids_a = tokenizer.encode(text_a)
  ids_b = tokenizer.encode(text_b) if text_b else []
  budget = max_seq_length - (3 if ids_b else 2)
  while len(ids_a) + len(ids_b) > budget:
    (ids_a if len(ids_a) > len(ids_b) else ids_b).pop()
  ids = [tokenizer.cls_id] + ids_a + [tokenizer.sep_id]
  types = [0] * len(ids)
  if ids_b:
    ids += ids_b + [tokenizer.sep_id]
    types += [1] * (len(ids_b) + 1)
  padding = [0] * (max_seq_length - len(ids))
  return ids + padding, [1] * len(ids) + padding, types + padding


# Korean reading comprehension in KorQuAD 1.0's and KLUE-MRC's official layouts (test_korquad.py,
# test_klue_mrc.py). Contexts are one to three real sentences of ko_law.txt and ko_libreoffice_help.txt; a question
# asks what one of them writes in parentheses, so the answer is a real span of a real Korean sentence whose place a
# small model can learn. KLUE-MRC's unanswerable questions are about contexts without parentheses.
KOREAN_PARENTHESES = re.compile(r"\(([^()]{2,30})\)")
KOREAN_QUESTIONS = ("괄호 안에 무엇이 쓰여 있습니까?", "괄호 속에 적힌 말은 무엇인가요?")


def korean_reading_pools(split):
  """Unique real Korean sentences (20 to 150 characters) with exactly one parenthesised group, and without any:
  every fourth for "dev", the others for "train", so that dev questions are about sentences training never saw."""
  lines = sorted({line for name in ("ko_law.txt", "ko_libreoffice_help.txt") for line in corpus_lines(name)
                  if 20 <= len(line) < 150})
  lines = [line for index, line in enumerate(lines) if (index % 4 == 0) == (split == "dev")]
  with_group = [line for line in lines if line.count("(") == line.count(")") == 1 and KOREAN_PARENTHESES.search(line)]
  return with_group, [line for line in lines if "(" not in line and ")" not in line]


def _korean_paragraph(rng, pools, answerable):
  """(context, the index of its sentence with parentheses or None, the sentences' start offsets)."""
  with_group, without = pools
  sentences = [rng.choice(without) for _ in range(rng.randint(0, 2))]
  target = None
  if answerable:
    target = rng.randint(0, len(sentences))
    sentences.insert(target, rng.choice(with_group))
  elif not sentences:
    sentences.append(rng.choice(without))
  starts = [sum(len(sentence) + 1 for sentence in sentences[:index]) for index in range(len(sentences))]
  return " ".join(sentences), target, starts


def write_korquad(path, num_questions, seed, with_variants=False, split="train"):
  """A KorQuAD 1.0 file (SQuAD v1.1's layout, KorQuAD's version and ids) of `split`'s sentences, three paragraphs
  an article; `with_variants` adds a second gold answer to some questions: the group with its parentheses."""
  rng, pools = random.Random(seed), korean_reading_pools(split)
  articles = []
  for index in range(num_questions):
    context, target, starts = _korean_paragraph(rng, pools, answerable=True)
    match = KOREAN_PARENTHESES.search(context, starts[target])
    answers = [{"text": match.group(1), "answer_start": match.start(1)}]
    if with_variants and rng.random() < 0.3:
      answers.append({"text": match.group(0), "answer_start": match.start(0)})
    if index % 3 == 0:
      articles.append({"title": context.split()[0], "paragraphs": []})
    articles[-1]["paragraphs"].append({"qas": [{"answers": answers, "id": f"{6500000 + 1000 * seed + index}-0-0",
                                                "question": rng.choice(KOREAN_QUESTIONS)}], "context": context})
  path.parent.mkdir(parents=True, exist_ok=True)
  path.write_text(json.dumps({"version": "KorQuAD_v1.0", "data": articles}, ensure_ascii=False), encoding="utf-8")
  return str(path)


def write_klue_mrc(path, split, num_questions, seed, unanswerable_share=0.3):
  """A KLUE-MRC file (klue-mrc-v1.1_<split>.json's layout: an article a paragraph with its news_category and
  source, each question with its guid, question_type, is_impossible, answers and plausible_answers). Type 3 is
  unanswerable (a context without parentheses; its plausible answer is the context's first word), type 2 an
  answer in a later sentence, type 1 one in the first; some answers have a second form with the parentheses."""
  rng, pools = random.Random(seed), korean_reading_pools("dev" if split == "dev" else "train")
  articles = []
  for index in range(num_questions):
    impossible = rng.random() < unanswerable_share
    context, target, starts = _korean_paragraph(rng, pools, answerable=not impossible)
    answers, plausible = [], []
    if impossible:
      first_word = context.split()[0]
      plausible.append({"text": first_word, "answer_start": context.index(first_word)})
    else:
      match = KOREAN_PARENTHESES.search(context, starts[target])
      answers.append({"text": match.group(1), "answer_start": match.start(1)})
      if rng.random() < 0.3:
        answers.append({"text": match.group(0), "answer_start": match.start(0)})
    source = rng.choice(("wikipedia", "acrofan", "hankyung"))
    articles.append({
        "title": context.split()[0], "news_category": None if source == "wikipedia" else "IT과학", "source": source,
        "paragraphs": [{"context": context, "qas": [{
            "question": rng.choice(KOREAN_QUESTIONS), "answers": answers, "plausible_answers": plausible,
            "question_type": 3 if impossible else (1 if target == 0 else 2), "is_impossible": impossible,
            "guid": f"klue-mrc-v1_{split}_{seed:02d}{index:04d}"}]}]})
  path.parent.mkdir(parents=True, exist_ok=True)
  path.write_text(json.dumps({"version": "v1.1", "data": articles}, ensure_ascii=False), encoding="utf-8")
  return str(path)


def write_korquad2(folder, num_pages, seed, split="train", num_shards=2):
  """KorQuAD 2.x's official layout: `num_shards` files KorQuAD_2.1_<split>_NN.json in `folder`, each {"version",
  "data": pages}, a page {"title", "url", "context" (simplified HTML), "raw_html" (the whole page), "qas"}, a
  question {"question", "id", "answer": {"text", "answer_start", "html_answer_start"}}. Pages are built from
  `split`'s real Korean sentences (HTML-escaped): a heading, a paragraph holding a parenthesised group, a paragraph
  with a link, entities and a line break, a table and a list. Their three questions ask for the group (an answer
  inside a paragraph), a whole table cell `<td>...</td>` and the last two list items `<li>...</li><li>...</li>`
  (answers spanning tags). Returns the folder as a string."""
  import html  # pylint: disable=import-outside-toplevel

  rng, pools = random.Random(seed), korean_reading_pools(split)
  without_group = pools[1]
  pages = []
  for index in range(num_pages):
    paragraph, target, starts = _korean_paragraph(rng, pools, answerable=True)
    group = KOREAN_PARENTHESES.search(paragraph, starts[target])
    words = []
    while len(words) < 5:  # a title and four table cells
      words += rng.choice(without_group).split()
    other, last = rng.choice(without_group), rng.choice(without_group)
    title = words[0]
    context = f"<h2>{html.escape(title, quote=False)}</h2>\n<p>"
    group_start = len(context) + len(html.escape(paragraph[:group.start(1)], quote=False))
    group_html = html.escape(group.group(1), quote=False)
    context += html.escape(paragraph, quote=False) + "</p>\n"
    linked, rest = (other.split(" ", 1) + [""])[:2]
    context += (f'<p><a href="/wiki/{html.escape(linked)}">{html.escape(linked, quote=False)}</a> '
                f"{html.escape(rest, quote=False)} &amp;&nbsp;{html.escape(last, quote=False)}<br/>&#44032;&#xB098;"
                "</p>\n")
    cells = [html.escape(word, quote=False) for word in words[1:5]]
    context += "<table><tbody><tr><th>구분</th><th>내용</th></tr>\n"
    cell_start = None
    for row in range(2):
      context += f"<tr><td>{cells[2 * row]}</td>"
      if row == 1:
        cell_start = len(context)
      context += f"<td>{cells[2 * row + 1]}</td></tr>\n"
    context += "</tbody></table>\n<ul>"
    items = [html.escape(" ".join(rng.choice(without_group).split()[:3]), quote=False) for _ in range(3)]
    items_start = None
    for item_index, item in enumerate(items):
      if item_index == 1:
        items_start = len(context)
      context += f"<li>{item}</li>"
    context += "</ul>"
    answers = [(rng.choice(KOREAN_QUESTIONS), group_html, group_start),
               (f"표에서 {words[3]} 옆 칸에 적힌 것은 무엇입니까?", f"<td>{cells[3]}</td>", cell_start),
               ("목록의 마지막 두 항목은 무엇인가요?", "".join(f"<li>{item}</li>" for item in items[1:]), items_start)]
    head = ('<!DOCTYPE html><html><head><meta charset="utf-8">'
            f'<title>{html.escape(title, quote=False)} - 위키백과</title></head><body><div id="mw-content-text">')
    qas = []
    for number, (question, text, start) in enumerate(answers):
      assert context[start:start + len(text)] == text
      qas.append({"question": question, "id": f"{7000000 + 1000 * seed + index}-{number}",
                  "answer": {"text": text, "answer_start": start, "html_answer_start": len(head) + start}})
    pages.append({"title": title, "url": f"https://ko.wikipedia.org/wiki/{title}",
                  "context": context, "raw_html": f"{head}{context}</div></body></html>", "qas": qas})
  folder.mkdir(parents=True, exist_ok=True)
  for shard in range(num_shards):
    document = {"version": f"KorQuAD_2.1_{split}", "data": pages[shard::num_shards]}
    (folder / f"KorQuAD_2.1_{split}_{shard:02d}.json").write_text(json.dumps(document, ensure_ascii=False),
                                                                  encoding="utf-8")
  return str(folder)
