"""Exports an albert-tf checkpoint as a SavedModel for TF Serving that takes raw text.

  python tools/export_saved_model.py --albert_config_file=configs/albert_base.json \
      --checkpoint=output/ --spm_model_file=30k-clean.model --max_seq_length=128 --export_dir=serving/albert

writes serving/albert/1/ (the next free version) with the signatures serving_default (ids), encode_text,
encode_text_pair and sentence_embedding (strings, tokenized in the graph), fill_mask for checkpoints with the
masked-LM head, classify_text / classify_text_pair for a fine-tuned classifier (run_classifier's output), and
answer_question for a SQuAD model (run_squad_v1/v2's output: read as that run read, v2 with the no-answer
threshold of its best evaluation). Text signatures pad each batch to its longest text (a multiple of
--pad_to_multiple_of, at most --max_seq_length); --text_padding=max_seq_length gives the fixed-length form.
Load it with `import tensorflow_text` (registers the SentencePiece op) and `tf.saved_model.load`. Every path may
be in a bucket (gs://...); the version folder appears whole, its saved_model.pb last.
"""

from absl import flags

# Before TensorFlow: it sets TensorFlow's log level, which TensorFlow reads once, on import.
from albert_tf import cli  # pylint: disable=g-bad-import-order
import tensorflow as tf
import tensorflow_text  # noqa: F401 (registers the SentencePiece op for loading)

from albert_tf.cli import tokenizer_flags
from albert_tf.modeling import checkpoints as checkpoint_lib
from albert_tf.modeling.config import AlbertConfig
from albert_tf.serving import saved_model

FLAGS = flags.FLAGS

flags.DEFINE_string("albert_config_file", None, "The albert_config.json the model was built with.")
flags.DEFINE_string("checkpoint", None,
                    "An albert-tf checkpoint prefix, or a directory meaning its latest checkpoint.")
flags.DEFINE_string("spm_model_file", None, "The SentencePiece model the model was trained with.")
tokenizer_flags.define_tokenizer_flags()
flags.DEFINE_integer("max_seq_length", 128, "The longest packed text input; longer texts are cut as in training.")
flags.DEFINE_enum("text_padding", "longest", list(saved_model.TEXT_PADDINGS),
                  "How the text signatures pad: longest (each batch to its longest text, rounded up to "
                  "--pad_to_multiple_of; fastest on CPUs and GPUs) or max_seq_length (one static shape, for TPU "
                  "serving and XLA).")
flags.DEFINE_integer("pad_to_multiple_of", 8, "With --text_padding=longest, widths are multiples of this.")
flags.DEFINE_integer("fill_mask_top_k", 5, "Candidates that fill_mask returns at each [MASK].")
flags.DEFINE_string("export_dir", None, "Base directory; the SavedModel goes to <export_dir>/<version>.")
flags.DEFINE_integer("export_version", None, "Version number (default: one more than the highest present).")


def main(argv):
  del argv
  config = AlbertConfig.from_json_file(FLAGS.albert_config_file)
  model, prefix = checkpoint_lib.build_model_for_checkpoint(config, FLAGS.checkpoint)
  path = saved_model.export_saved_model(
      model, FLAGS.export_dir, FLAGS.spm_model_file, FLAGS.max_seq_length, do_lower_case=FLAGS.do_lower_case,
      keep_accents=FLAGS.keep_accents, fill_mask_top_k=FLAGS.fill_mask_top_k, version=FLAGS.export_version,
      task_options=saved_model.run_task_options(model, prefix), text_padding=FLAGS.text_padding,
      pad_to_multiple_of=FLAGS.pad_to_multiple_of)
  if getattr(model, "masked_lm_head", None) is None:
    print(f"{prefix} has no masked-LM head, so the SavedModel has no fill_mask signature.")
  signatures = tf.saved_model.load(path).signatures  # also checks that it loads
  print(f"Exported {prefix} ({type(model).__name__}) to {path} with signatures: {', '.join(sorted(signatures))}.")


def run():
  """The `albert-export-saved-model` command."""
  flags.mark_flags_as_required(["albert_config_file", "checkpoint", "spm_model_file", "export_dir"])
  cli.run(main)


if __name__ == "__main__":
  run()
