"""Converts a Google TF1 checkpoint or a Hugging Face ALBERT folder into an albert-tf checkpoint.

  python tools/convert_checkpoint.py --source_format=google --source=albert_base/ --output_dir=albert_base_tf2
  python tools/convert_checkpoint.py --source_format=hf --source=albert-base-v2/ --output_dir=albert_base_tf2

The output directory holds `model.ckpt` (pass the directory as --init_checkpoint or --checkpoint),
`albert_config.json` and, when there is one, the SentencePiece model as `spiece.model`. Every weight is
checked: a checkpoint that does not fit the config is reported whole and nothing is written. The source and
Every path may be in a bucket (gs://...); the output appears whole, its checkpoint's index last.
"""

from absl import flags

from albert_tf import cli
from albert_tf.cli import output_flags
from albert_tf.interop import conversion

FLAGS = flags.FLAGS

flags.DEFINE_enum("source_format", None, list(conversion.SOURCE_FORMATS),
                  "google: a TF1 checkpoint of Google's ALBERT code; hf: a Hugging Face model folder.")
flags.DEFINE_string("source", None,
                    "google: a checkpoint prefix or a directory holding one; hf: a folder with config.json "
                    "and model.safetensors (or its sharded index, or pytorch_model.bin).")
flags.DEFINE_string("albert_config_file", None,
                    "google only: the model's albert_config.json (default: the one beside the checkpoint).")
flags.DEFINE_string("spm_model_file", None,
                    "SentencePiece model to copy as spiece.model (default: google, the single *.model file "
                    "beside the checkpoint; hf, the folder's spiece.model).")
flags.DEFINE_string("output_dir", None, "New directory for model.ckpt, albert_config.json and spiece.model.")
output_flags.define_overwrite_flag("the checkpoint, config and vocabulary in --output_dir")


def main(argv):
  del argv
  result, paths = conversion.convert(FLAGS.source_format, FLAGS.source, FLAGS.output_dir,
                                     albert_config_file=FLAGS.albert_config_file,
                                     spm_model_file=FLAGS.spm_model_file, overwrite=FLAGS.overwrite)
  print(conversion.summary(result, paths))


def run():
  """The `albert-convert-checkpoint` command."""
  flags.mark_flags_as_required(["source_format", "source", "output_dir"])
  cli.run(main)


if __name__ == "__main__":
  run()
