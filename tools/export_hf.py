"""Exports an albert-tf checkpoint as a Hugging Face model folder.

  python tools/export_hf.py --albert_config_file=configs/albert_base.json \
      --checkpoint=output/ --spm_model_file=30k-clean.model --output_dir=albert_hf

The folder loads with `transformers.AlbertForPreTraining.from_pretrained(output_dir)` (or `AlbertModel`,
`AlbertForMaskedLM`, ...) and, with --spm_model_file, `AlbertTokenizer.from_pretrained(output_dir)`. A
checkpoint of an encoder alone, or without the sentence-order head, exports as `AlbertModel` or
`AlbertForMaskedLM`.
"""

from absl import flags
from absl import logging

import albert_tf
from albert_tf import cli
from albert_tf.interop import huggingface
from albert_tf.modeling import checkpoints as checkpoint_lib

FLAGS = flags.FLAGS

flags.DEFINE_string("albert_config_file", None, "The albert_config.json the model was built with.")
flags.DEFINE_string("checkpoint", None,
                    "An albert-tf checkpoint prefix, or a directory meaning its latest checkpoint.")
flags.DEFINE_string("spm_model_file", None, "SentencePiece model; adds the tokenizer files when given.")
flags.DEFINE_bool("do_lower_case", True, "Whether the tokenizer lower-cases (Google's default: True).")
flags.DEFINE_bool("keep_accents", False, "Whether the tokenizer keeps accents (Google strips them).")
flags.DEFINE_string("output_dir", None, "Folder to write config.json, model.safetensors and tokenizer files.")


def main(argv):
  del argv
  config = albert_tf.AlbertConfig.from_json_file(FLAGS.albert_config_file)
  model, prefix = checkpoint_lib.build_model_for_checkpoint(config, FLAGS.checkpoint)
  logging.info("Restored %s", prefix)
  paths = huggingface.export_to_hf(model, FLAGS.output_dir, spm_model_file=FLAGS.spm_model_file,
                                   do_lower_case=FLAGS.do_lower_case, keep_accents=FLAGS.keep_accents)
  print(f"Exported {prefix} to the Hugging Face folder {FLAGS.output_dir}:")
  for name in sorted(paths):
    print(f"  {paths[name]}")


def run():
  """The `albert-export-hf` command."""
  flags.mark_flags_as_required(["albert_config_file", "checkpoint", "output_dir"])
  cli.run(main)


if __name__ == "__main__":
  run()
