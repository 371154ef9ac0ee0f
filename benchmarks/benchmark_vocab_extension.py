"""Measures how an extended model's new rows start: its masked-LM loss before any training, with the rows
`extend_vocab` gives (each the mean over the old pieces of its text) against random rows and Hugging Face's.

  python tools/extend_vocab.py --spm_model_file=spm/en8k.model --input_file=ko_law.txt --num_new_pieces=3000 \
      --init_checkpoint=runs/en --output_dir=bench/extended
  python tools/create_pretraining_data.py --input_file=ko_libreoffice_help.txt --output_file=bench/ko.tfrecord \
      --spm_model_file=bench/extended/spiece.model --max_seq_length=64 --max_predictions_per_seq=10
  python benchmarks/benchmark_vocab_extension.py --extended_dir=bench/extended --spm_model_file=spm/en8k.model \
      --eval_input_file=bench/ko.tfrecord --output_dir=bench/new_rows --max_seq_length=64 --max_predictions_per_seq=10

writes the extended model twice more into --output_dir, with its new rows and MLM output-bias entries
replaced by
- random: the model's own initialiser (truncated normal, stddev initializer_range) and a zero bias, what a
  model built with the larger vocab_size starts from;
- Hugging Face: `resize_token_embeddings(mean_resizing=True)` of transformers 5: rows drawn from a normal with
  the old rows' mean and 1e-9 times their covariance (so all but equal to the mean row), bias entries from one
  with the old bias's mean and 1e-9 times its standard deviation;
then evaluates the three with run_pretraining's evaluation on each --eval_input_file and prints the table.
The old rows and every other weight are the same in all three.
"""

import os

from absl import flags
import numpy as np

from albert_tf import cli
from albert_tf.errors import OptionError
from albert_tf.modeling.checkpoints import build_model_for_checkpoint, save_checkpoint
from albert_tf.modeling.config import CONFIG_FILE, AlbertConfig
from albert_tf.text.tokenizer import SentencePieceTokenizer
from albert_tf.training import distribution
from albert_tf.training import pretraining

FLAGS = flags.FLAGS

flags.DEFINE_string("extended_dir", None, "The output directory of extend_vocab --init_checkpoint.")
flags.DEFINE_string("spm_model_file", None, "The SentencePiece model before extension: its size is where the new "
                    "rows start.")
flags.DEFINE_list("eval_input_file", None, "Pretraining records made with the extended vocabulary, each file (or "
                  "glob) evaluated on its own.")
flags.DEFINE_string("output_dir", None, "New directory for the two other models and the evaluation runs.")
flags.DEFINE_integer("max_seq_length", 512, "Sequence length of the records.")
flags.DEFINE_integer("max_predictions_per_seq", 20, "Masked positions per record.")
flags.DEFINE_integer("eval_batch_size", 64, "Eval batch size.")
flags.DEFINE_integer("max_eval_steps", 100, "Eval batches per record file.")
flags.DEFINE_integer("random_seed", 12345, "Seed of the random and Hugging Face rows.")

HF_COVARIANCE_SCALE = 1e-9  # transformers' epsilon in _init_added_embeddings_weights_with_mean


def random_rows(config: AlbertConfig, num_rows: int, seed: int):
  """What a model built with the new vocab_size has in those rows: draws of its initialiser (a normal with
  stddev initializer_range, redrawn beyond two of them) and a zero bias."""
  rng = np.random.default_rng(seed)
  rows = rng.normal(0.0, config.initializer_range, [num_rows, config.embedding_size])
  while (outside := np.abs(rows) > 2 * config.initializer_range).any():
    rows[outside] = rng.normal(0.0, config.initializer_range, outside.sum())
  return rows.astype(np.float32), np.zeros([num_rows], np.float32)


def hugging_face_mean_rows(table: np.ndarray, bias: np.ndarray, num_rows: int, seed: int):
  """transformers' mean resizing: rows from N(mean, 1e-9 · covariance) of the old rows (the mean row where the
  scaled covariance is not positive definite), bias entries from N(mean, 1e-9 · std) of the old bias."""
  rng = np.random.default_rng(seed)
  table64 = table.astype(np.float64)
  mean = table64.mean(axis=0)
  covariance = HF_COVARIANCE_SCALE * (table64 - mean).T @ (table64 - mean) / len(table64)
  try:
    np.linalg.cholesky(covariance)
    rows = rng.multivariate_normal(mean, covariance, size=num_rows)
  except np.linalg.LinAlgError:
    rows = np.repeat(mean[None], num_rows, axis=0)
  new_bias = rng.normal(bias.mean(), HF_COVARIANCE_SCALE * bias.std(ddof=1), size=num_rows)
  return rows.astype(np.float32), new_bias.astype(np.float32)


def write_variant(model, config: AlbertConfig, old_size: int, rows: np.ndarray, bias: np.ndarray, folder: str) -> str:
  """The model with its rows from `old_size` on (and bias entries) replaced, written as an albert-tf directory."""
  model.encoder.embeddings.word_embeddings[old_size:].assign(rows)
  model.masked_lm_head.output_bias[old_size:].assign(bias)
  save_checkpoint(model, os.path.join(folder, "model.ckpt"))
  config.to_json_file(os.path.join(folder, CONFIG_FILE))
  return folder


def evaluate(model_dir: str, config: AlbertConfig, records: str, run_dir: str, sentence_order_prediction: bool):
  options = pretraining.PretrainingOptions(
      input_file=records, output_dir=run_dir, albert_config=config, init_checkpoint=model_dir,
      eval_input_file=records, max_seq_length=FLAGS.max_seq_length,
      max_predictions_per_seq=FLAGS.max_predictions_per_seq, do_train=False, do_eval=True,
      eval_batch_size=FLAGS.eval_batch_size, max_eval_steps=FLAGS.max_eval_steps,
      sentence_order_prediction=sentence_order_prediction)
  return pretraining.run(options, distribution.get_strategy("one_device"))["eval"]


def main(argv):
  del argv
  if os.path.exists(FLAGS.output_dir) and os.listdir(FLAGS.output_dir):
    raise OptionError(f"{FLAGS.output_dir} is not empty; choose a new --output_dir.")
  config = AlbertConfig.from_json_file(os.path.join(FLAGS.extended_dir, CONFIG_FILE))
  old_size = SentencePieceTokenizer(FLAGS.spm_model_file).vocab_size
  num_rows = config.vocab_size - old_size
  model, _ = build_model_for_checkpoint(config, FLAGS.extended_dir)
  if getattr(model, "masked_lm_head", None) is None:
    raise OptionError(f"{FLAGS.extended_dir} has no masked-LM head: there is no MLM loss to measure.")
  table = model.encoder.embeddings.word_embeddings.numpy()[:old_size]
  bias = model.masked_lm_head.output_bias.numpy()[:old_size]
  models = {"sub-piece means (extend_vocab)": FLAGS.extended_dir}
  models["Hugging Face mean resizing"] = write_variant(
      model, config, old_size, *hugging_face_mean_rows(table, bias, num_rows, FLAGS.random_seed),
      os.path.join(FLAGS.output_dir, "hugging_face_mean"))
  models["random rows"] = write_variant(model, config, old_size, *random_rows(config, num_rows, FLAGS.random_seed),
                                        os.path.join(FLAGS.output_dir, "random"))
  sentence_order_prediction = model.sentence_order_head is not None
  lines = [f"Masked-LM loss (accuracy) before any training; {num_rows:,} new rows after {old_size:,} old ones:"]
  for index, records in enumerate(FLAGS.eval_input_file):
    figures = []
    for name, model_dir in models.items():
      run_dir = os.path.join(FLAGS.output_dir, "eval", f"{index}-{os.path.basename(model_dir)}")
      metrics = evaluate(model_dir, config, records, run_dir, sentence_order_prediction)
      figures.append(f"{name} {metrics['masked_lm_loss']:.4f} ({metrics['masked_lm_accuracy']:.4f})")
    lines.append(f"  {records} ({metrics['eval_steps']} batches of {FLAGS.eval_batch_size}): " + ", ".join(figures))
  print("\n".join(lines))


def run():
  """The benchmark's command line, `python benchmarks/benchmark_vocab_extension.py`."""
  flags.mark_flags_as_required(["extended_dir", "spm_model_file", "eval_input_file", "output_dir"])
  cli.run(main)


if __name__ == "__main__":
  run()
