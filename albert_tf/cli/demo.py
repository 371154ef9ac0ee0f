"""The main job end to end on the bundled Korean + English sample, in a few minutes on 2 CPU cores.

  python -m albert_tf.cli.demo --output_dir=demo_output

SentencePiece vocabulary → pretraining TFRecords (and a held-out eval set of every tenth document) →
evaluation of the untrained model → pretraining of a small ALBERT with progress → evaluation → a Hugging Face model folder and a
SavedModel for TF Serving that takes raw text.
"""

import importlib.resources
import os
import sys
import time

from absl import flags

# Before TensorFlow: it sets TensorFlow's log level, which TensorFlow reads once, on import.
from albert_tf import cli  # pylint: disable=g-bad-import-order
import tensorflow as tf

from albert_tf import files
from albert_tf.cli import output_flags
from albert_tf.data import pretraining_writer
from albert_tf.data.instances import InstanceOptions
from albert_tf.interop import huggingface
from albert_tf.modeling.config import AlbertConfig
from albert_tf.serving import saved_model
from albert_tf.text import sentencepiece_training
from albert_tf.text import tokenizer_options
from albert_tf.training import distribution
from albert_tf.training import pretraining
from albert_tf.training import run_directory

FLAGS = flags.FLAGS

flags.DEFINE_string("output_dir", "demo_output", "Where every artefact of the demo goes.")
output_flags.define_overwrite_flag("the artefacts of an earlier demo in --output_dir")
flags.DEFINE_integer("num_train_steps", 600, "Pretraining steps.")
flags.DEFINE_integer("train_batch_size", 32, "Global batch size.")
flags.DEFINE_integer("vocab_size", 4000, "SentencePiece pieces.")

SAMPLE_DIR = str(importlib.resources.files("albert_tf").joinpath("sample_data"))
MAX_SEQ_LENGTH = 128
MAX_PREDICTIONS = 20
# LAMB's peak rate. After 500 steps, held-out masked-LM accuracy was 0.069 at 5e-3 against 0.042 at 2e-3: as much
# as 1,200 steps at 2e-3 gave (docs/benchmarks.md, the demo), in half the time.
LEARNING_RATE = 5e-3
EVAL_FRACTION = 0.1  # documents held out for evaluation
FILL_MASK_EXAMPLES = ("I went to the [MASK] .", "파일 - [MASK] 를 선택합니다.")
ARTEFACTS = ("spm", "data", "pretraining", "hf_model", "saved_model")  # the folders a run writes in --output_dir


def _step(title):
  print(f"\n== {title}", flush=True)


def main(argv):
  del argv
  start = time.time()
  out = FLAGS.output_dir if files.is_remote(FLAGS.output_dir) else os.path.abspath(FLAGS.output_dir)
  # A run resumes nothing: an earlier run's folders go with --overwrite, and only they.
  files.check_output_folder(out, ARTEFACTS, FLAGS.overwrite)
  for name in ARTEFACTS:
    files.remove_tree(os.path.join(out, name))
  files.make_folders(out)

  _step("1/6 Corpus: the bundled sample (Korean LibreOffice help, English Botchan and Wikipedia)")
  corpus = files.folder_files(SAMPLE_DIR, "*.txt")
  print("\n".join(corpus))

  _step("2/6 SentencePiece vocabulary")
  # Google's options (lower-cased, accents stripped), recorded beside the model for every later step.
  spm_model = sentencepiece_training.train_sentencepiece(corpus, os.path.join(out, "spm", "sample"),
                                                         vocab_size=FLAGS.vocab_size, character_coverage=1.0)
  text_options = tokenizer_options.read_options(spm_model)
  print(f"{spm_model} ({text_options.as_flags()}, in {tokenizer_options.options_file(spm_model)})")

  _step("3/6 Pretraining data: sentence-order pairs with n-gram masking, globally shuffled")
  options = InstanceOptions(max_seq_length=MAX_SEQ_LENGTH, max_predictions_per_seq=MAX_PREDICTIONS)
  tokenizer_spec = pretraining_writer.TokenizerSpec(spm_model, text_options.do_lower_case, text_options.keep_accents)
  records = {name: os.path.join(out, "data", f"{name}.tfrecord") for name in ("train", "eval")}
  summaries = pretraining_writer.create_pretraining_data(
      corpus, [records["train"]], tokenizer_spec, options, dupe_factor=10, num_workers=os.cpu_count() or 1,
      eval_output_files=[records["eval"]], eval_fraction=EVAL_FRACTION, progress=False)
  for name, summary in summaries.items():
    print(f"{name}: " + "; ".join(summary.lines()[:1] + summary.lines()[3:4]))

  _step("4/6 Pretraining a small ALBERT (MLM + SOP, Google's LAMB)")
  # A small ALBERT: E=64, H=128, 4 layers sharing one block.
  config = AlbertConfig(vocab_size=FLAGS.vocab_size, embedding_size=64, hidden_size=128, num_hidden_layers=4,
                        num_attention_heads=4, intermediate_size=512, max_position_embeddings=MAX_SEQ_LENGTH)
  run_dir = os.path.join(out, "pretraining")
  steps = FLAGS.num_train_steps
  run_options = pretraining.PretrainingOptions(
      input_file=records["train"], eval_input_file=records["eval"], output_dir=run_dir, albert_config=config,
      max_seq_length=MAX_SEQ_LENGTH, max_predictions_per_seq=MAX_PREDICTIONS, do_train=True, do_eval=True,
      train_batch_size=FLAGS.train_batch_size, eval_batch_size=FLAGS.train_batch_size, learning_rate=LEARNING_RATE,
      num_train_steps=steps, num_warmup_steps=steps // 10, save_checkpoints_steps=steps // 2,
      iterations_per_loop=100, max_eval_steps=50)
  run = pretraining.Pretraining(run_options, distribution.get_strategy("one_device"))
  before = run.evaluate()
  run.train()
  after = run.last_eval
  for key in ("masked_lm_accuracy", "sentence_order_accuracy", "masked_lm_loss", "sentence_order_loss"):
    print(f"{key}: {before[key]:.4f} before training → {after[key]:.4f} after {steps} steps (held-out)")

  _step("5/6 Hugging Face model folder")
  hf_dir = os.path.join(out, "hf_model")
  export = huggingface.export_to_hf(run.model, hf_dir, spm_model_file=spm_model)
  print(f"{hf_dir}: transformers.AlbertForPreTraining.from_pretrained({hf_dir!r}) loads it")
  print("\n".join(export.tokenizer_parity.lines()))

  _step("6/6 SavedModel for TF Serving (raw text in, tokenized in the graph)")
  export_path = saved_model.export_saved_model(run.model, os.path.join(out, "saved_model"), spm_model,
                                               MAX_SEQ_LENGTH)
  loaded = tf.saved_model.load(export_path)
  print(f"{export_path}: signatures {', '.join(sorted(loaded.signatures.keys()))}")
  filled = loaded.signatures["fill_mask"](text=tf.constant(FILL_MASK_EXAMPLES))
  for row, text in enumerate(FILL_MASK_EXAMPLES):
    candidates = ", ".join(f"{token.decode()} {score:.3f}" for token, score in
                           zip(filled["top_k_tokens"][row, 0].numpy(), filled["top_k_scores"][row, 0].numpy()))
    print(f"fill_mask({text!r}): {candidates}")

  print(f"\nDone in {time.time() - start:.0f} s. Everything is in {out}:")
  for path in (spm_model, records["train"], records["eval"], run_dir,
               os.path.join(run_dir, run_directory.EVAL_RESULTS), os.path.join(run_dir, "train"), hf_dir, export_path):
    print(f"  {path}")
  print(f"TensorBoard: tensorboard --logdir {run_dir}")
  sys.stdout.flush()


def run():
  """The `albert-demo` command."""
  cli.run(main)


if __name__ == "__main__":
  run()
