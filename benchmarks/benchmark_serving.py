"""Serving a text classifier on CPUs: our raw-text SavedModel against transformers and ONNX Runtime, in one run.

  python benchmarks/benchmark_serving.py --output_dir=bench/serving \
      --spm_model_file=../shared/reference/sp8k_en_ko.model \
      --corpus_files=../shared/corpus/ko_libreoffice_help.txt,../shared/corpus/en_wiki.txt

builds a classifier of --albert_config_file's shape (albert_base by default) with the SentencePiece model's
vocabulary and random weights (speed only: the outputs are compared, not scored), and exports it
- as our SavedModel twice: text signatures padded to the batch's longest text (the default) and padded to
  --max_seq_length (`--text_padding=max_seq_length`, the fixed form);
- as a Hugging Face folder (`export_hf`), served by transformers (torch) with its own tokenizer, and by ONNX
  Runtime after `torch.onnx.export` of that folder (dynamic batch and sequence axes; the TorchScript exporter,
  as torch 2.13's `dynamo=True` exporter gave logits 1.0 away from the model's here): the usual ONNX route;
- as our ONNX folder (`export_onnx` of the SavedModel), served by ONNX Runtime with the folder's tokenizer.
The SavedModel padded to the longest text is served a second time with `ONEDNN_DEFAULT_FPMATH_MODE=BF16`.

Then it times every path on --num_texts real Korean and English lines (alternating, --min_chars to --max_chars
characters): the median latency of one text per call (batch 1) and the throughput of --batch_size texts per
call, in --rounds rounds that take the paths in turn, so that the machine's load falls on all of them alike.
Each path runs in a process of its own, which waits while the others run.
Each path starts from strings and ends with probabilities, tokenization included. Before timing, every path's
probabilities are compared with the fixed SavedModel's on every text. Prints one table (ratios to ONNX
Runtime on our HF export); the figures are in docs/benchmarks.md.
"""

import json
import multiprocessing
import os
import shutil
import statistics
import time
from typing import Callable, List

from absl import flags
import numpy as np

# Before TensorFlow: it sets TensorFlow's log level, which TensorFlow reads once, on import.
from albert_tf import cli  # pylint: disable=g-bad-import-order
import onnxruntime
import tensorflow as tf
import tensorflow_text  # noqa: F401 (registers the SentencePiece op for loading)
import torch
import transformers

from albert_tf.errors import DataError
from albert_tf.files import check_output_folder
from albert_tf.interop.huggingface import export_to_hf
from albert_tf.modeling.config import AlbertConfig
from albert_tf.serving import onnx_export, saved_model
from albert_tf.tasks.classification.model import AlbertClassifier
from albert_tf.text.tokenizer import SentencePieceTokenizer

FLAGS = flags.FLAGS

flags.DEFINE_string("output_dir", None, "The exported models go here.")
flags.DEFINE_string("spm_model_file", None, "The SentencePiece model; its size is the model's vocab_size.")
flags.DEFINE_list("corpus_files", None, "Text files whose lines are the requests (one document a line, or "
                  "Google's pretraining format).")
flags.DEFINE_string("albert_config_file", os.path.join(os.path.dirname(__file__), "..", "configs",
                                                       "albert_base.json"), "The model's shape.")
flags.DEFINE_integer("max_seq_length", 128, "The longest packed input.")
flags.DEFINE_integer("num_texts", 200, "Requests, taken alternately from each --corpus_files.")
flags.DEFINE_integer("min_chars", 30, "Shortest line taken.")
flags.DEFINE_integer("max_chars", 90, "Longest line taken.")
flags.DEFINE_integer("batch_size", 32, "Texts per call in the throughput figure.")
flags.DEFINE_integer("rounds", 5, "Rounds over the paths; each times every text once at batch 1 and every "
                     "full batch once.")
flags.DEFINE_bool("overwrite", False, "Replace the models of an earlier run in --output_dir.")
flags.DEFINE_bool("reuse_models", False, "Time the models an earlier run wrote to --output_dir again.")

MODEL_DIRS = ("saved_longest", "saved_fixed", "hf", "hf_onnx", "onnx")
REFERENCE = "ONNX Runtime, torch export of our HF folder"
FIXED = "our SavedModel, classify_text, padded to max_seq_length"
# The same float32 SavedModel in a process whose oneDNN computes float32 matrix products in bfloat16 (AMX or
# AVX512-BF16, where the CPU has them): a serving-time switch, no other export.
BFLOAT16_MATH = "the same SavedModel, served with ONEDNN_DEFAULT_FPMATH_MODE=BF16"


def request_texts(paths: List[str], count: int, min_chars: int, max_chars: int) -> List[str]:
  """`count` lines of `min_chars` to `max_chars` characters, taken from each file in turn."""
  per_file = []
  for path in paths:
    with open(path, encoding="utf-8") as reader:
      lines = [line.strip() for line in reader if min_chars <= len(line.strip()) <= max_chars]
    if len(lines) < count // len(paths):
      raise DataError(f"{path} has {len(lines)} lines of {min_chars}-{max_chars} characters; "
                      f"--num_texts={count} needs {count // len(paths)}.")
    per_file.append(lines[:count // len(paths)])
  return [text for group in zip(*per_file) for text in group]


def build_models(output_dir: str, spm_model_file: str, albert_config_file: str, max_seq_length: int):
  """Exports one random classifier every way the benchmark serves it."""


  with open(albert_config_file, encoding="utf-8") as reader:
    values = json.load(reader)
  values["vocab_size"] = SentencePieceTokenizer(spm_model_file).vocab_size
  model = AlbertClassifier(AlbertConfig.from_dict(values), ["negative", "neutral", "positive"])
  model(model.dummy_inputs())
  # Weights of a trained model's scale, so that the probabilities depend on the text.
  rng = np.random.default_rng(0)
  for variable in model.variables:
    if "gamma" in variable.name:
      variable.assign(1 + rng.normal(0, 0.1, variable.shape).astype(np.float32))
    elif "beta" in variable.name or "bias" in variable.name:
      variable.assign(rng.normal(0, 0.02, variable.shape).astype(np.float32))
    else:
      variable.assign(rng.normal(0, 0.05, variable.shape).astype(np.float32))
  paths = {name: os.path.join(output_dir, name) for name in MODEL_DIRS}
  saved_model.export_saved_model(model, paths["saved_longest"], spm_model_file, max_seq_length, version=1)
  saved_model.export_saved_model(model, paths["saved_fixed"], spm_model_file, max_seq_length, version=1,
                                 text_padding="max_seq_length")
  export_to_hf(model, paths["hf"], spm_model_file=spm_model_file)
  onnx_export.export_onnx(os.path.join(paths["saved_longest"], "1"), paths["onnx"])

  hf_model = transformers.AutoModelForSequenceClassification.from_pretrained(paths["hf"]).eval()
  names = ["input_ids", "attention_mask", "token_type_ids"]  # the order of the model's forward arguments
  example = torch.ones(2, 16, dtype=torch.long)
  os.makedirs(paths["hf_onnx"])
  axes = {name: {0: "batch", 1: "sequence"} for name in names}
  torch.onnx.export(hf_model, (example, example, torch.zeros_like(example)), os.path.join(paths["hf_onnx"],
                    "model.onnx"), input_names=names, output_names=["logits"],
                    dynamic_axes=dict(axes, logits={0: "batch"}), dynamo=False, opset_version=17)


PATHS = {  # name -> (what `load_path` builds, the environment its process serves in)
    "our SavedModel, classify_text, padded to the longest text": ("saved_longest", {}),
    BFLOAT16_MATH: ("saved_longest", {"ONEDNN_DEFAULT_FPMATH_MODE": "BF16"}),
    FIXED: ("saved_fixed", {}),
    "transformers (torch) on our HF export": ("torch", {}),
    REFERENCE: ("runtime_hf", {}),
    "ONNX Runtime, our ONNX export (export_onnx)": ("runtime_ours", {}),
}


def load_path(kind: str, output_dir: str) -> Callable[[List[str]], np.ndarray]:
  """A serving path: texts -> probabilities `[batch, classes]`, tokenization included."""
  if kind.startswith("saved"):
    classify_text = tf.saved_model.load(os.path.join(output_dir, kind, "1")).signatures["classify_text"]
    return lambda texts: classify_text(text_a=tf.constant(texts))["probabilities"].numpy()
  if kind == "torch":
    torch.set_grad_enabled(False)
    tokenizer = transformers.AutoTokenizer.from_pretrained(os.path.join(output_dir, "hf"))
    model = transformers.AutoModelForSequenceClassification.from_pretrained(os.path.join(output_dir, "hf")).eval()
    return lambda texts: model(**tokenizer(texts, padding=True, return_tensors="pt")).logits.softmax(-1).numpy()
  folder, tokenizer_folder = {"runtime_hf": ("hf_onnx", "hf"), "runtime_ours": ("onnx", "onnx")}[kind]
  session = onnxruntime.InferenceSession(os.path.join(output_dir, folder, "model.onnx"),
                                         providers=["CPUExecutionProvider"])
  tokenizer = transformers.AutoTokenizer.from_pretrained(os.path.join(output_dir, tokenizer_folder))
  our_names = {"input_word_ids": "input_ids", "input_mask": "attention_mask", "input_type_ids": "token_type_ids"}
  inputs = {model_input.name: (our_names.get(model_input.name, model_input.name),
                               np.int32 if "int32" in model_input.type else np.int64)
            for model_input in session.get_inputs()}

  def classify(texts):
    encoded = tokenizer(texts, padding=True, return_tensors="np")
    if "probabilities" in [output.name for output in session.get_outputs()]:
      return session.run(["probabilities"], {name: encoded[field].astype(dtype)
                                             for name, (field, dtype) in inputs.items()})[0]
    logits = session.run(["logits"], {name: encoded[field].astype(dtype) for name, (field, dtype) in inputs.items()})[0]
    exponentials = np.exp(logits - logits.max(-1, keepdims=True))
    return exponentials / exponentials.sum(-1, keepdims=True)
  return classify


def serve_path(kind: str, output_dir: str, connection):
  """A worker process's loop: builds one path, then answers the parent's requests until told to stop.

  One process per path: torch's and TensorFlow's thread pools in one process take turns badly (a torch call
  after a TensorFlow one took 20 times as long here). A worker waits on its pipe while the others run.
  """
  classify = load_path(kind, output_dir)
  while True:
    request = connection.recv()
    if request is None:
      return
    command, batches = request
    if command == "outputs":
      connection.send(np.concatenate([classify(batch) for batch in batches]))
    else:  # "time": the seconds of each call
      seconds = []
      for batch in batches:
        start = time.perf_counter()
        classify(batch)
        seconds.append(time.perf_counter() - start)
      connection.send(seconds)


def time_paths(connections, texts: List[str], batch_size: int, rounds: int):
  """Batch-1 latencies and batch throughputs of every path, the paths taken in turn in each round."""
  singles = [[text] for text in texts]
  batches = [texts[start:start + batch_size] for start in range(0, len(texts) - batch_size + 1, batch_size)]
  latencies = {name: [] for name in connections}
  batch_seconds = {name: [] for name in connections}
  for connection in connections.values():  # warm-up: first calls build kernels and caches
    connection.send(("time", batches[:2] + singles[:8]))
    connection.recv()
  for round_index in range(rounds):
    for name, connection in connections.items():
      connection.send(("time", singles))
      latencies[name] += connection.recv()
      connection.send(("time", batches))
      batch_seconds[name] += connection.recv()
    print(f"round {round_index + 1}/{rounds} done", flush=True)
  return {name: (statistics.median(latencies[name]) * 1e3,
                 batch_size * len(batch_seconds[name]) / sum(batch_seconds[name])) for name in connections}


def main(argv):
  del argv
  output_dir = FLAGS.output_dir
  texts = request_texts(FLAGS.corpus_files, FLAGS.num_texts, FLAGS.min_chars, FLAGS.max_chars)
  if FLAGS.reuse_models:
    missing = [name for name in MODEL_DIRS if not os.path.isdir(os.path.join(output_dir, name))]
    if missing:
      raise DataError(f"--reuse_models: {output_dir} has no {', '.join(missing)}; run once without it.")
  else:
    check_output_folder(output_dir, MODEL_DIRS, FLAGS.overwrite, "--output_dir")
    if FLAGS.overwrite:
      for name in MODEL_DIRS:
        shutil.rmtree(os.path.join(output_dir, name), ignore_errors=True)
    build_models(output_dir, FLAGS.spm_model_file, FLAGS.albert_config_file, FLAGS.max_seq_length)

  context = multiprocessing.get_context("spawn")
  connections, workers = {}, []
  parent_environment = dict(os.environ)
  for name, (kind, environment) in PATHS.items():
    connections[name], child = context.Pipe()
    workers.append(context.Process(target=serve_path, args=(kind, output_dir, child), daemon=True))
    # A spawned process starts with the parent's environment, which oneDNN reads when it starts.
    os.environ.clear()
    os.environ.update(parent_environment, **environment)
    workers[-1].start()
  os.environ.clear()
  os.environ.update(parent_environment)
  batches = [texts[start:start + FLAGS.batch_size] for start in range(0, len(texts), FLAGS.batch_size)]
  probabilities = {}
  for name, connection in connections.items():
    connection.send(("outputs", batches))
    probabilities[name] = connection.recv()
  for name, values in probabilities.items():
    print(f"{name}: max |p - p({FIXED})| = {np.abs(values - probabilities[FIXED]).max():.1e}")
  figures = time_paths(connections, texts, FLAGS.batch_size, FLAGS.rounds)
  for connection, worker in zip(connections.values(), workers):
    connection.send(None)
    worker.join()
  base_latency, base_throughput = figures[REFERENCE]
  print(f"\n{len(texts)} texts of {np.mean([len(text) for text in texts]):.0f} characters on average; "
        f"{FLAGS.rounds} rounds; {os.cpu_count()} CPUs")
  print(f"| path | batch 1, median | × ONNX Runtime | batch {FLAGS.batch_size} | × ONNX Runtime |")
  print("|---|---|---|---|---|")
  for name, (latency, throughput) in figures.items():
    print(f"| {name} | {latency:.1f} ms | {latency / base_latency:.2f} | {throughput:.1f} texts/s | "
          f"{throughput / base_throughput:.2f} |")


def run():
  flags.mark_flags_as_required(["output_dir", "spm_model_file", "corpus_files"])
  cli.run(main)


if __name__ == "__main__":
  run()
