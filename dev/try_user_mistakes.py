"""Makes the mistakes a new user makes, each in a fresh process as a user would, and prints what each tool answers:
the table of docs/user-mistakes.md.

  python dev/try_user_mistakes.py                 # every mistake (about 3 minutes on 2 cores)
  python dev/try_user_mistakes.py --only=overwrite,gzip

A developer's check beside the tests (tests/test_output_destinations.py and the test of each tool hold the same
cases in-process). Each row: the mistake, the command (shortened), its exit status, the last line it printed on
stderr, and whether it left anything in the folder it was given. The inputs (a small corpus, a vocabulary, masked
records, a tiny config and checkpoint) are built once in a temporary folder, removed afterwards; the tagged and
parsed sentences are a few lines written here.
"""

import dataclasses
import gzip
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
from typing import Callable, List, Sequence

from absl import app
from absl import flags

from albert_tf.data import pretraining_writer
from albert_tf.data.instances import InstanceOptions
from albert_tf.modeling.checkpoints import save_checkpoint
from albert_tf.modeling.config import AlbertConfig
from albert_tf.modeling.pretrainer import AlbertPretrainer
from albert_tf.text.sentencepiece_training import train_sentencepiece

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAMPLE = os.path.join(REPO, "albert_tf", "sample_data", "en_botchan.txt")
RANDOM_BYTES = bytes(random.Random(0).getrandbits(8) for _ in range(5000))
SCORES = "".join(f"{0.125 * (index % 40):.3f}\tsentence {index}\n" for index in range(80)).encode()  # STS-like
# SQuAD 2.0's layout: an unanswerable question has no answer.
SQUAD_V2 = {"version": "v2.0", "data": [{"title": "t", "paragraphs": [{"context": "The sky is blue.", "qas": [
    {"id": "q1", "question": "What is blue?", "answers": [{"text": "The sky", "answer_start": 0}],
     "is_impossible": False},
    {"id": "q2", "question": "What is red?", "answers": [], "is_impossible": True}]}]}]}
# KLUE-NER's layout: a sentence's header, then a character and its tag a line (a space is a character).
KLUE_NER = ["## klue-ner-v1.1_train_00000\t<유희열:PS>이 울었다.", "유\tB-PS", "희\tI-PS", "열\tI-PS", "이\tO", " \tO",
            "울\tO", "었\tO", "다\tO", ".\tO"]
# CoNLL-2003's original release tags IOB1: an entity starts with I- (B- only between two of one type).
CONLL_IOB1 = ["-DOCSTART- -X- O O", "", "EU NNP I-NP I-ORG", "rejects VBZ I-VP O", "German JJ I-NP I-MISC",
              "call NN I-NP O", ". . O O"]
# KLUE-DP's layout: five comment lines, then a sentence's header and an eojeol a line (INDEX WORD_FORM LEMMA POS
# HEAD DEPREL).
KLUE_DP = ["## 토큰, 레이블 구분자 : \\t", "## 토큰 구분자 : \\n", "## 문장 구분자 : \\n\\n", "## 주석 : ##",
           "## 칼럼명 : INDEX\tWORD_FORM\tLEMMA\tPOS\tHEAD\tDEPREL",
           "## klue-dp-v1.1_train_00000\t유희열이 눈물을 흘렸다.", "1\t유희열이\t유희열 이\tNNP+JKS\t3\tNP_SBJ",
           "2\t눈물을\t눈물 을\tNNG+JKO\t3\tNP_OBJ", "3\t흘렸다.\t흘리 었 다 .\tVV+EP+EF+SF\t0\tVP"]

# KLUE-RE's layout: a record with both entities (inclusive character offsets); its object ends past the sentence.
KLUE_RE = [{"guid": "klue-re-v1_train_00000", "sentence": "유희열은 안테나의 대표이다.",
            "subject_entity": {"word": "유희열", "start_idx": 0, "end_idx": 2, "type": "PER"},
            "object_entity": {"word": "안테나", "start_idx": 5, "end_idx": 20, "type": "ORG"},
            "label": "per:employee_of", "source": "wikitree"}]
# KLUE-MRC's layout: one question, its question_type outside 1-3.
KLUE_MRC = {"version": "v1.1", "data": [{"title": "t", "news_category": None, "source": "wikipedia", "paragraphs": [
    {"context": "유희열은 안테나의 대표이다.", "qas": [
        {"question": "안테나의 대표는?", "answers": [{"text": "유희열", "answer_start": 0}], "plausible_answers": [],
         "question_type": 4, "is_impossible": False, "guid": "klue-mrc-v1_train_00000"}]}]}]}
# KorQuAD 2.x's layout: a page of HTML whose answer is not at its answer_start.
KORQUAD2 = {"version": "KorQuAD_2.1_train", "data": [{
    "title": "t", "url": "https://ko.wikipedia.org/wiki/t", "raw_html": "<html><p>유희열은 안테나의 대표이다.</p></html>",
    "context": "<p>유희열은 안테나의 대표이다.</p>", "qas": [{"question": "안테나의 대표는?", "id": "1-0-0", "answer": {
        "text": "유희열", "answer_start": 9, "html_answer_start": 9}}]}]}
# WoS's layout: a dialogue whose user turn states a value that the ontology does not list.
WOS = [{"guid": "wos-v1.1_train_00000", "domains": ["관광"], "dialogue": [
    {"role": "user", "text": "서울 남쪽에 있는 관광지를 알려 주세요.", "state": ["관광-지역-서울 한가운데"]},
    {"role": "sys", "text": "어떤 곳을 원하세요?"}]}]
KLUE = os.path.join(os.path.dirname(REPO), "shared", "klue")

FLAGS = flags.FLAGS
flags.DEFINE_list("only", None, "Names of the mistakes to make (default: all).")


@dataclasses.dataclass(frozen=True)
class Mistake:
  """A user's mistake: `prepare(work)` lays out what it needs in the folder `work` and returns the command's
  arguments (the tool first); `watched` is the path (relative to `work`) that must be left as it was (a run
  directory that resumes is not watched: `watched=""`)."""

  name: str
  what: str
  prepare: Callable[[str], Sequence[str]]
  watched: str = "out"
  environment: dict = dataclasses.field(default_factory=dict)
  shown: str = ""  # the line of stderr the table shows: the last one holding this (default: the last line)


def _run(arguments: Sequence[str], cwd: str, environment: dict) -> subprocess.CompletedProcess:
  tool, *rest = arguments
  command = [sys.executable, "-m", tool] if tool.startswith("albert_tf.") else [
      sys.executable, os.path.join(REPO, "tools", f"{tool}.py")]
  return subprocess.run(command + list(rest), capture_output=True, text=True, cwd=cwd, timeout=900,
                        env=dict(os.environ, **environment))


def _snapshot(path: str) -> List[str]:
  if not os.path.exists(path):
    return []
  if not os.path.isdir(path):
    with open(path, "rb") as reader:
      return [reader.read().hex()[:64]]
  return sorted(os.path.relpath(os.path.join(root, name), path) for root, dirs, names in os.walk(path)
                for name in dirs + names)


def _file_of(lines: Sequence[str], changed: dict = None) -> bytes:
  """A UTF-8 file of `lines`, those of `changed` (1-based line number -> line) replaced."""
  changed = changed or {}
  return "".join(changed.get(number, line) + "\n" for number, line in enumerate(lines, 1)).encode()


def build_inputs(folder: str) -> dict:
  """The inputs every mistake starts from, made with the library: text, vocabulary, records, config, run."""
  text = os.path.join(folder, "small.txt")
  with open(SAMPLE, encoding="utf-8") as reader, open(text, "w", encoding="utf-8") as writer:
    writer.write("".join(line for line, _ in zip(reader, range(400))))
  vocabulary = train_sentencepiece(text, os.path.join(folder, "spiece"), vocab_size=300, num_threads=1)
  records = os.path.join(folder, "train.tfrecord")
  pretraining_writer.create_pretraining_data(
      [text], [records], pretraining_writer.TokenizerSpec(vocabulary, True, False),
      InstanceOptions(max_seq_length=64, max_predictions_per_seq=10), dupe_factor=1, progress=False)
  config = dict(vocab_size=300, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32,
                embedding_size=8, max_position_embeddings=64)
  paths = dict(text=text, vocabulary=vocabulary, records=records)
  for name, values in (("config", config), ("small_config", dict(config, vocab_size=100))):
    paths[name] = os.path.join(folder, f"{name}.json")
    with open(paths[name], "w", encoding="utf-8") as writer:
      json.dump(values, writer)
  model = AlbertPretrainer(AlbertConfig(**config))
  model(model.dummy_inputs())
  paths["run"] = save_checkpoint(model, os.path.join(folder, "run", "model.ckpt-1"))
  # A pretraining run of two checkpoints, to resume from.
  paths["pretraining"] = os.path.join(folder, "pretraining")
  result = _run(pretraining_command(paths) + ["--num_train_steps=2", "--save_checkpoints_steps=1",
                                              f"--output_dir={paths['pretraining']}"], folder, {})
  if result.returncode:
    raise RuntimeError(result.stderr)
  return paths


def pretraining_command(inputs: dict) -> List[str]:
  return ["run_pretraining", f"--input_file={inputs['records']}", f"--albert_config_file={inputs['config']}",
          "--max_seq_length=64", "--max_predictions_per_seq=10", "--train_batch_size=4", "--do_train"]


def _damaged_copy(source: str, work: str, damage: str) -> str:
  """A copy of the run `source` in `work/out` whose latest checkpoint (step 2) lost its files ("gone") or had its
  data file cut to half ("cut")."""
  copy = shutil.copytree(source, os.path.join(work, "out"))
  data = os.path.join(copy, "model.ckpt-2.data-00000-of-00001")
  if damage == "gone":
    os.remove(data)
    os.remove(os.path.join(copy, "model.ckpt-2.index"))
  else:
    with open(data, "r+b") as writer:
      writer.truncate(os.path.getsize(data) // 2)
  return copy


def mistakes(inputs: dict) -> List[Mistake]:
  text, vocabulary, records = inputs["text"], inputs["vocabulary"], inputs["records"]
  pretraining = pretraining_command(inputs)[:2] + pretraining_command(inputs)[3:] + ["--num_train_steps=2"]

  def blocked(command):
    def prepare(work):
      with open(os.path.join(work, "blocker"), "w", encoding="utf-8") as writer:
        writer.write("a file\n")
      return command(os.path.join(work, "blocker", "out"))
    return prepare

  def existing(relative, command):
    def prepare(work):
      path = os.path.join(work, relative)
      os.makedirs(os.path.dirname(path), exist_ok=True)
      with open(path, "w", encoding="utf-8") as writer:
        writer.write("written before\n")
      return command(os.path.join(work, "out"))
    return prepare

  def with_file(name, content, command):
    def prepare(work):
      os.makedirs(os.path.dirname(os.path.join(work, name)), exist_ok=True)
      with open(os.path.join(work, name), "wb") as writer:
        writer.write(content)
      return command(work)
    return prepare

  def with_copy(source, name, command):
    """`command`, after copying the file `source` to `work/name`."""
    def prepare(work):
      os.makedirs(os.path.dirname(os.path.join(work, name)), exist_ok=True)
      shutil.copyfile(source, os.path.join(work, name))
      return command(work)
    return prepare

  def random_files(folder, names, command):
    """`names` in `work/folder` hold random bytes, but for a `config.json`: the tiny config."""
    def prepare(work):
      os.makedirs(os.path.join(work, folder))
      for name in names:
        if name == "config.json":
          shutil.copy(inputs["config"], os.path.join(work, folder, name))
        else:
          with open(os.path.join(work, folder, name), "wb") as writer:
            writer.write(RANDOM_BYTES)
      return command(work)
    return prepare

  def fine_tuning(tool, task_name, work, *more):
    """A fine-tuning tool's command on the files of `work/data`, into `work/out`."""
    return [tool, f"--task_name={task_name}", f"--data_dir={work}/data", f"--output_dir={work}/out",
            f"--albert_config_file={inputs['config']}", f"--spm_model_file={vocabulary}", "--max_seq_length=64",
            *more]

  def classifier(work, *more):
    return fine_tuning("run_classifier", "tsv", work, "--do_train", "--tsv_text_a_column=1", *more)

  data_tool = lambda out, *more: ["create_pretraining_data", f"--input_file={text}", f"--spm_model_file={vocabulary}",
                                  "--max_seq_length=64", "--max_predictions_per_seq=10", "--dupe_factor=1",
                                  f"--output_file={out}", *more]
  return [
      Mistake("resume_gone", "a run whose latest checkpoint's files are gone (3)",
              lambda work: pretraining_command(inputs) + [
                  "--num_train_steps=3", f"--output_dir={_damaged_copy(inputs['pretraining'], work, 'gone')}"],
              watched="", shown="the newest complete checkpoint"),
      Mistake("resume_cut", "a run whose latest checkpoint's data file is cut short (4)",
              lambda work: pretraining_command(inputs) + [
                  "--num_train_steps=3", f"--output_dir={_damaged_copy(inputs['pretraining'], work, 'cut')}"],
              watched="", shown="the newest complete checkpoint"),
      Mistake("export_cut", "export_hf of a checkpoint whose data file is cut short (4)",
              lambda work: ["export_hf", f"--albert_config_file={inputs['config']}",
                            f"--checkpoint={_damaged_copy(inputs['pretraining'], work, 'cut')}/model.ckpt-2",
                            f"--output_dir={work}/hf"], watched="hf"),
      Mistake("safetensors", "convert_checkpoint of a model.safetensors of random bytes (5)",
              random_files("hf", ["config.json", "model.safetensors"], lambda work: [
                  "convert_checkpoint", "--source_format=hf", f"--source={work}/hf", f"--output_dir={work}/out"])),
      Mistake("tf1_checkpoint", "convert_checkpoint of a TF1 checkpoint of random bytes (5)",
              random_files("google", ["model.ckpt.index", "model.ckpt.data-00000-of-00001"], lambda work: [
                  "convert_checkpoint", "--source_format=google", f"--source={work}/google/model.ckpt",
                  f"--albert_config_file={inputs['config']}", f"--output_dir={work}/out"])),
      Mistake("cut_records", "a TFRecord input cut short",
              with_file("cut.tfrecord", open(records, "rb").read()[:5000], lambda work: [
                  "run_pretraining", f"--input_file={work}/cut.tfrecord", f"--albert_config_file={inputs['config']}",
                  "--max_seq_length=64", "--max_predictions_per_seq=10", "--train_batch_size=4", "--do_train",
                  "--num_train_steps=2", f"--output_dir={work}/out"])),
      Mistake("vocab_size", "a config whose vocab_size is below the ids of masked records (1)",
              lambda work: pretraining + [f"--albert_config_file={inputs['small_config']}",
                                          f"--output_dir={work}/out"]),
      Mistake("blocked", "an output path under a regular file (6): create_pretraining_data",
              blocked(lambda out: data_tool(out + "/train.tfrecord"))),
      Mistake("blocked_vocabulary", "an output path under a regular file (6): train_sentencepiece",
              blocked(lambda out: ["train_sentencepiece", f"--input={text}", "--vocab_size=300",
                                   f"--model_prefix={out}/spiece"])),
      Mistake("blocked_corpus", "an output path under a regular file (6): prepare_corpus",
              blocked(lambda out: ["prepare_corpus", f"--input_file={text}", "--language=en",
                                   f"--output_file={out}/corpus.txt"])),
      Mistake("blocked_run", "an output path under a regular file (6): run_pretraining",
              blocked(lambda out: pretraining + [f"--albert_config_file={inputs['config']}", f"--output_dir={out}"])),
      Mistake("output_folder", "--output_file that is a folder (6)",
              existing("out/kept.txt", data_tool)),
      Mistake("overwrite_hf", "export_hf into a folder holding a config.json (7)",
              existing("out/config.json", lambda out: ["export_hf", f"--albert_config_file={inputs['config']}",
                                                       f"--checkpoint={inputs['run']}", f"--output_dir={out}"])),
      Mistake("overwrite_vocabulary", "train_sentencepiece over an existing <prefix>.model (8)",
              existing("out/spiece.model", lambda out: ["train_sentencepiece", f"--input={text}", "--vocab_size=300",
                                                        f"--model_prefix={out}/spiece"])),
      Mistake("overwrite_records", "create_pretraining_data over an existing output file",
              existing("out/train.tfrecord", lambda out: data_tool(out + "/train.tfrecord"))),
      Mistake("predictions", "--max_predictions_per_seq=100 with --max_seq_length=64 (9)",
              lambda work: data_tool(f"{work}/out/train.tfrecord")[:4] + [
                  "--max_seq_length=64", "--max_predictions_per_seq=100", f"--output_file={work}/out/x.tfrecord"]),
      Mistake("language", "prepare_corpus --language=english (it used to hang with workers)",
              lambda work: ["prepare_corpus", f"--input_file={text}", "--language=english", "--num_workers=2",
                            f"--output_file={work}/out/corpus.txt"]),
      Mistake("empty_input", "a zero-byte input to create_pretraining_data",
              with_file("empty.txt", b"", lambda work: ["create_pretraining_data", f"--input_file={work}/empty.txt",
                                                        f"--spm_model_file={vocabulary}",
                                                        f"--output_file={work}/out/train.tfrecord"])),
      Mistake("folder_input", "a folder given as --input_file",
              lambda work: ["prepare_corpus", f"--input_file={work}", "--language=en",
                            f"--output_file={work}/out/corpus.txt"]),
      Mistake("gzip", "a .gz input that is not gzip",
              with_file("plain.txt.gz", b"Not compressed.\n", lambda work: [
                  "prepare_corpus", f"--input_file={work}/plain.txt.gz", "--language=en",
                  f"--output_file={work}/out/corpus.txt"])),
      Mistake("cut_gzip", "a .gz input cut short",
              with_file("cut.txt.gz", gzip.compress(open(SAMPLE, "rb").read())[:20000], lambda work: [
                  "prepare_corpus", f"--input_file={work}/cut.txt.gz", "--language=en",
                  f"--output_file={work}/out/corpus.txt"])),
      Mistake("tsv_scores", "run_classifier --task_name=tsv on float scores, no --tsv_is_regression (2)",
              with_file("data/train.tsv", SCORES, lambda work: classifier(work, "--tsv_label_column=0"))),
      Mistake("tsv_label_is_text", "run_classifier --task_name=tsv with the label column equal to the text column (2)",
              with_file("data/train.tsv", b"good\tA fine day.\nbad\tA dull day.\n",
                        lambda work: classifier(work, "--tsv_label_column=1"))),
      Mistake("squad_v2_data", "run_squad_v1 on SQuAD 2.0 data (10)",
              with_file("train.json", json.dumps(SQUAD_V2).encode(), lambda work: [
                  "run_squad_v1", f"--train_file={work}/train.json", f"--albert_config_file={inputs['config']}",
                  f"--spm_model_file={vocabulary}", f"--output_dir={work}/out", "--do_train",
                  "--max_seq_length=64", "--max_query_length=16", "--train_batch_size=1"])),
      Mistake("json", "a JSON-lines input with a raw line break in a string",
              with_file("bad.jsonl", b'{"text": "a line\nbroken"}\n', lambda work: [
                  "prepare_corpus", f"--input_file={work}/bad.jsonl", "--input_format=jsonl", "--language=en",
                  f"--output_file={work}/out/corpus.txt"])),
      Mistake("parallel_dev_size", "train_sentence_encoder with the default --parallel_dev_size on 20 pairs",
              with_file("pairs.tsv", "".join(f"Sentence {i}.\t문장 {i}.\n" for i in range(20)).encode(),
                        lambda work: ["train_sentence_encoder", f"--parallel_file={work}/pairs.tsv",
                                      f"--teacher={work}/teacher.npy", f"--output_dir={work}/out",
                                      f"--albert_config_file={inputs['config']}", f"--spm_model_file={vocabulary}",
                                      "--max_seq_length=64", "--do_train"])),
      Mistake("cuinit", "TF_CPP_MIN_LOG_LEVEL=2 on a machine without a GPU, and a missing config",
              lambda work: pretraining + [f"--albert_config_file={work}/missing.json", f"--output_dir={work}/out"],
              environment={"TF_CPP_MIN_LOG_LEVEL": "2"}),
      Mistake("ner_tag", "run_token_classification --task_name=klue-ner with a tag outside KLUE's 13 (B-PER)",
              with_file("data/klue-ner-v1.1_train.tsv", _file_of(KLUE_NER, {2: "유\tB-PER"}),
                        lambda work: fine_tuning("run_token_classification", "klue-ner", work))),
      Mistake("ner_no_tag", "a KLUE-NER character line without its tag",
              with_file("data/klue-ner-v1.1_train.tsv", _file_of(KLUE_NER, {7: "울"}),
                        lambda work: fine_tuning("run_token_classification", "klue-ner", work))),
      Mistake("ner_iob1", "run_token_classification --task_name=conll on CoNLL-2003's original (IOB1) tags",
              with_file("data/train.txt", _file_of(CONLL_IOB1),
                        lambda work: fine_tuning("run_token_classification", "conll", work))),
      Mistake("ner_no_dev", "run_token_classification on a --data_dir without the dev file (--do_eval is on)",
              with_file("data/klue-ner-v1.1_train.tsv", _file_of(KLUE_NER),
                        lambda work: fine_tuning("run_token_classification", "klue-ner", work))),
      Mistake("ner_no_data_dir", "run_token_classification with a --data_dir that does not exist",
              lambda work: fine_tuning("run_token_classification", "klue-ner", work)),
      Mistake("ner_export_file", "run_token_classification with --export_dir naming a file (the train file)",
              with_file("data/klue-ner-v1.1_train.tsv", _file_of(KLUE_NER), lambda work: fine_tuning(
                  "run_token_classification", "klue-ner", work, "--do_eval=false", "--train_step=2",
                  f"--export_dir={work}/data/klue-ner-v1.1_train.tsv"))),
      Mistake("dp_head", "run_dependency_parsing --task_name=klue-dp with a head past the sentence's words",
              with_file("data/klue-dp-v1.1_train.tsv",
                        _file_of(KLUE_DP, {8: "2\t눈물을\t눈물 을\tNNG+JKO\t4\tNP_OBJ"}),
                        lambda work: fine_tuning("run_dependency_parsing", "klue-dp", work))),
      Mistake("dp_task_name", "run_dependency_parsing --task_name=conllu on KLUE-DP's files",
              with_file("data/klue-dp-v1.1_train.tsv", _file_of(KLUE_DP),
                        lambda work: fine_tuning("run_dependency_parsing", "conllu", work))),
      Mistake("re_span", "run_classifier --task_name=klue-re with an entity span past the end of its sentence",
              with_file("data/klue-re-v1.1_train.json", json.dumps(KLUE_RE, ensure_ascii=False).encode(),
                        with_copy(os.path.join(KLUE, "relation_list.json"), "data/relation_list.json",
                                  lambda work: fine_tuning("run_classifier", "klue-re", work, "--do_train")))),
      Mistake("mrc_question_type", "run_squad_v2 --task_name=klue-mrc with a question_type of 4",
              with_file("train.json", json.dumps(KLUE_MRC, ensure_ascii=False).encode(), lambda work: [
                  "run_squad_v2", "--task_name=klue-mrc", f"--train_file={work}/train.json",
                  f"--albert_config_file={inputs['config']}", f"--spm_model_file={vocabulary}",
                  f"--output_dir={work}/out", "--do_train", "--max_seq_length=64", "--max_query_length=16"])),
      Mistake("korquad2_offset", "run_squad_v1 --task_name=korquad2 with an answer_start that misses its answer",
              with_file("shards/KorQuAD_2.1_train_00.json", json.dumps(KORQUAD2, ensure_ascii=False).encode(),
                        lambda work: ["run_squad_v1", "--task_name=korquad2", f"--train_file={work}/shards",
                                      f"--albert_config_file={inputs['config']}", f"--spm_model_file={vocabulary}",
                                      f"--output_dir={work}/out", "--do_train", "--max_seq_length=64",
                                      "--max_query_length=16"])),
      Mistake("wos_value", "run_dialogue_state_tracking --task_name=wos with a state value the ontology lacks",
              with_file("data/wos-v1.1_train.json", json.dumps(WOS, ensure_ascii=False).encode(),
                        with_copy(os.path.join(KLUE, "ontology.json"), "data/ontology.json",
                                  lambda work: fine_tuning("run_dialogue_state_tracking", "wos", work)))),
  ]


def main(argv):
  del argv
  root = tempfile.mkdtemp(prefix="user_mistakes.")
  try:
    inputs = build_inputs(root)
    rows = ["| mistake | exit status | what the tool prints (its last line; for a resume, the line about the checkpoint) | left behind |", "|---|---|---|---|"]
    for mistake in mistakes(inputs):
      if FLAGS.only and mistake.name not in FLAGS.only:
        continue
      work = os.path.join(root, mistake.name)
      os.makedirs(work)
      arguments = mistake.prepare(work)
      watched = os.path.join(work, mistake.watched or "out")
      before = _snapshot(watched)
      result = _run(arguments, work, mistake.environment)
      after = _snapshot(watched)
      lines = [line for line in result.stderr.strip().splitlines() if mistake.shown in line] or [""]
      last = lines[-1].replace(root, "…").replace("|", "\\|")
      if not mistake.watched:
        left = "(resumed)"
      else:
        left = "nothing" if before == after else ", ".join(sorted(set(after) - set(before))) or "changed"
      rows.append(f"| {mistake.what} | {result.returncode} | `{last}` | {left} |")
      print(rows[-1], flush=True)
    print("\n".join(rows))
  finally:
    shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
  app.run(main)
