"""Pretrains ALBERT (MLM + sentence order, or MLM only) on one device, local GPUs, several hosts or a Cloud TPU.

  python tools/run_pretraining.py --input_file=data/train-*.tfrecord --output_dir=runs/base \
      --albert_config_file=configs/albert_base.json --max_seq_length=512 --max_predictions_per_seq=77 \
      --train_batch_size=4096 --num_train_steps=125000 --strategy_type=tpu --tpu_name=my-tpu

Further pretraining of a released model on one 24 GB GPU, MLM only, 32 x 512 per step in micro-batches of 8:

  python tools/run_pretraining.py --init_checkpoint=albert_base_tf2 \
      --albert_config_file=albert_base_tf2/albert_config.json --input_file=data/train-*.tfrecord \
      --output_dir=runs/further --nosentence_order_prediction --train_batch_size=32 \
      --gradient_accumulation_steps=4 --recompute_grad --mixed_precision=float16

Flags and defaults are those of Google's run_pretraining.py; --strategy_type, --eval_input_file,
--mixed_precision, --random_seed, --jit_compile, --log_steps, --sentence_order_prediction,
--gradient_accumulation_steps, --recompute_grad, --find_max_micro_batch and --memory_limit_mb are ours. Rerunning
the same command after a crash resumes from the last checkpoint in --output_dir, input position included.

The command with --find_max_micro_batch (in place of --gradient_accumulation_steps) measures instead of training:
it prints the largest micro-batch per replica whose step fits in the GPU (or in --memory_limit_mb), and the
--gradient_accumulation_steps that trains --train_batch_size with it, and exits, reading and writing no file:

  python tools/run_pretraining.py --init_checkpoint=albert_base_tf2 \
      --albert_config_file=albert_base_tf2/albert_config.json --input_file=data/train-*.tfrecord \
      --output_dir=runs/further --nosentence_order_prediction --train_batch_size=32 \
      --recompute_grad --mixed_precision=float16 --find_max_micro_batch

The input files may hold masked records (Google's, or create_pretraining_data's) or unmasked ones
(create_pretraining_data --dynamic_masking), which are masked afresh every epoch with the masking flags they
carry, up to --max_predictions_per_seq positions; the files say which, and no flag changes.

Every path may be in a bucket (gs://...), as on a Cloud TPU: the records, the config, --init_checkpoint (a
checkpoint prefix or a run folder) and --output_dir, which holds all of the run's files. A checkpoint is complete
once the run's `checkpoint` file names it (TensorFlow writes it after the checkpoint's files); a run that fails
before its first checkpoint leaves nothing in --output_dir.
"""

from absl import flags

from albert_tf import cli
from albert_tf.cli import memory_flags
from albert_tf.cli import strategy_flags
from albert_tf.modeling.config import AlbertConfig
from albert_tf.training import capacity
from albert_tf.training import loop
from albert_tf.training import optimization
from albert_tf.training import pretraining

FLAGS = flags.FLAGS

flags.DEFINE_string("input_file", None, "Training TFRecords: a glob or a comma-separated list.")
flags.DEFINE_string("eval_input_file", None, "Eval TFRecords (default: --input_file, as Google's).")
flags.DEFINE_string("output_dir", None, "Checkpoints, summaries and eval results go here.")
flags.DEFINE_string("albert_config_file", None, "The albert_config.json of the model.")
flags.DEFINE_string("init_checkpoint", None, "Start from this model (fresh optimizer): an albert-tf "
                    "checkpoint, or one converted from Google or Hugging Face.")
flags.DEFINE_integer("max_seq_length", 512, "Sequence length of the records.")
flags.DEFINE_integer("max_predictions_per_seq", 20, "Masked positions per record (for unmasked records: the most "
                     "that masking picks).")
flags.DEFINE_bool("do_train", True, "Train.")
flags.DEFINE_bool("do_eval", False, "Evaluate (after every checkpoint when training).")
flags.DEFINE_integer("train_batch_size", 4096, "Global training batch size.")
flags.DEFINE_integer("eval_batch_size", 64, "Global eval batch size.")
flags.DEFINE_enum("optimizer", "lamb", optimization.OPTIMIZER_TYPES, "Google's LAMB or AdamW.")
flags.DEFINE_float("learning_rate", 0.00176, "Peak learning rate.")
flags.DEFINE_float("poly_power", 1.0, "Power of the polynomial decay.")
flags.DEFINE_integer("num_train_steps", 125000, "Training steps.")
flags.DEFINE_integer("num_warmup_steps", 3125, "Linear warmup steps.")
flags.DEFINE_integer("start_warmup_step", 0, "Step the warmup starts from.")
flags.DEFINE_integer("save_checkpoints_steps", 5000, "Steps between checkpoints.")
flags.DEFINE_integer("keep_checkpoint_max", 5, "Checkpoints kept.")
flags.DEFINE_integer("iterations_per_loop", 1000, "Steps inside one tf.function call (the host loop).")
flags.DEFINE_integer("max_eval_steps", 100, "Eval batches.")
flags.DEFINE_bool("init_from_group0", False, "Initialise every parameter group from group 0 of "
                  "--init_checkpoint (a one-group model).")
strategy_flags.define_strategy_flags()
flags.DEFINE_enum("mixed_precision", "float32", list(loop.MIXED_PRECISION),
                  "Compute dtype: bfloat16 (TPU, recent GPUs) or float16 with dynamic loss scaling.")
flags.DEFINE_integer("random_seed", 12345, "Seed of the input order and of weight initialisation.")
flags.DEFINE_bool("jit_compile", False, "Compile the training step with XLA (TPUs always do).")
flags.DEFINE_integer("log_steps", None, "Steps between progress lines (default: --iterations_per_loop).")
flags.DEFINE_bool("sentence_order_prediction", True, "Train the sentence-order head and loss beside the masked LM; "
                  "--nosentence_order_prediction is MLM only (no SOP head in the model, its checkpoints or its "
                  "figures) on the same records.")
memory_flags.define_memory_flags()
flags.DEFINE_bool("find_max_micro_batch", False, "Instead of training, find the largest micro-batch per replica (up "
                  "to --train_batch_size / replicas) whose training step fits in memory, with this command's model, "
                  "--max_seq_length, --max_predictions_per_seq, --mixed_precision, --recompute_grad, --optimizer, "
                  "--sentence_order_prediction and --jit_compile; print it and the --gradient_accumulation_steps that "
                  "trains --train_batch_size with it, and exit. Reads no input file and writes nothing in "
                  "--output_dir. Each size is measured on one device in a fresh process, doubling from 1, then "
                  "bisecting. Needs --strategy_type=one_device or mirrored.")
memory_flags.define_memory_limit_flag()


def print_max_micro_batch(config: AlbertConfig):
  """--find_max_micro_batch: prints the largest micro-batch that fits and the --gradient_accumulation_steps of
  --train_batch_size with it."""
  settings = capacity.PretrainingStepSettings(
      config, FLAGS.max_seq_length, FLAGS.max_predictions_per_seq, FLAGS.mixed_precision,
      FLAGS.sentence_order_prediction, FLAGS.recompute_grad, FLAGS.optimizer, FLAGS.jit_compile)
  num_replicas = capacity.local_replicas(FLAGS.strategy_type)
  per_replica_batch = loop.micro_batch_size(FLAGS.train_batch_size, num_replicas)
  # Doubling from 1: no size tried is above twice one that fits.
  largest = capacity.find_max_micro_batch(settings, FLAGS.memory_limit_mb, 1, per_replica_batch)
  steps = capacity.fewest_accumulation_steps(per_replica_batch, largest)
  print(f"--train_batch_size={FLAGS.train_batch_size} on {num_replicas} replica(s) fits with "
        f"--gradient_accumulation_steps={steps}: micro-batches of {per_replica_batch // steps}.")
  print(f"max_micro_batch: {largest}")
  print(f"gradient_accumulation_steps: {steps}")


def main(argv):
  del argv
  config = AlbertConfig.from_json_file(FLAGS.albert_config_file)
  if FLAGS.find_max_micro_batch:
    print_max_micro_batch(config)
    return
  options = pretraining.PretrainingOptions(
      input_file=FLAGS.input_file, output_dir=FLAGS.output_dir, albert_config=config,
      init_checkpoint=FLAGS.init_checkpoint, eval_input_file=FLAGS.eval_input_file,
      max_seq_length=FLAGS.max_seq_length, max_predictions_per_seq=FLAGS.max_predictions_per_seq,
      do_train=FLAGS.do_train, do_eval=FLAGS.do_eval, train_batch_size=FLAGS.train_batch_size,
      eval_batch_size=FLAGS.eval_batch_size, optimizer=FLAGS.optimizer, learning_rate=FLAGS.learning_rate,
      poly_power=FLAGS.poly_power, num_train_steps=FLAGS.num_train_steps, num_warmup_steps=FLAGS.num_warmup_steps,
      start_warmup_step=FLAGS.start_warmup_step, save_checkpoints_steps=FLAGS.save_checkpoints_steps,
      keep_checkpoint_max=FLAGS.keep_checkpoint_max, iterations_per_loop=FLAGS.iterations_per_loop,
      max_eval_steps=FLAGS.max_eval_steps, init_from_group0=FLAGS.init_from_group0,
      mixed_precision=FLAGS.mixed_precision, random_seed=FLAGS.random_seed, jit_compile=FLAGS.jit_compile,
      log_steps=FLAGS.log_steps, sentence_order_prediction=FLAGS.sentence_order_prediction,
      gradient_accumulation_steps=FLAGS.gradient_accumulation_steps, recompute_grad=FLAGS.recompute_grad)
  pretraining.run(options, strategy_flags.strategy_from_flags())


def run():
  """The `albert-run-pretraining` command."""
  flags.mark_flags_as_required(["input_file", "output_dir", "albert_config_file"])
  cli.run(main)


if __name__ == "__main__":
  run()
