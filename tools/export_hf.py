"""Exports an albert-tf checkpoint as a Hugging Face model folder.

  python tools/export_hf.py --albert_config_file=configs/albert_base.json \
      --checkpoint=output/ --spm_model_file=30k-clean.model --output_dir=albert_hf

The folder loads with `transformers.AlbertForPreTraining.from_pretrained(output_dir)` (or `AlbertModel`,
`AlbertForMaskedLM`, ...) and, with --spm_model_file, `AlbertTokenizer.from_pretrained(output_dir)`. A
checkpoint of an encoder alone, or without the sentence-order head, exports as `AlbertModel` or
`AlbertForMaskedLM`. The tokenizer options are the ones recorded beside the SentencePiece model; the tokenizer
files are written the way transformers best reproduces the model's ids, measured and printed (a loud warning
where some text still gets other ids).

A sentence encoder's checkpoint (tools/train_sentence_encoder.py) exports as `AlbertModel` plus the files of
a sentence-transformers model: `SentenceTransformer(output_dir)` loads it and computes the encoder's own
embedding (its pooling, projection and normalisation), texts cut to --max_seq_length tokens.

Every path may be in a bucket (gs://...); the folder appears whole, its config.json last.
"""

import sys

from absl import flags
from absl import logging

import albert_tf
from albert_tf import cli
from albert_tf.cli import output_flags
from albert_tf.cli import tokenizer_flags
from albert_tf.interop import huggingface
from albert_tf.modeling import checkpoints as checkpoint_lib

FLAGS = flags.FLAGS

flags.DEFINE_string("albert_config_file", None, "The albert_config.json the model was built with.")
flags.DEFINE_string("checkpoint", None,
                    "An albert-tf checkpoint prefix, or a directory meaning its latest checkpoint.")
flags.DEFINE_string("spm_model_file", None, "SentencePiece model; adds the tokenizer files when given.")
tokenizer_flags.define_tokenizer_flags()
flags.DEFINE_string("output_dir", None, "Folder to write config.json, model.safetensors and tokenizer files.")
output_flags.define_overwrite_flag("the model files in --output_dir")
flags.DEFINE_integer("max_seq_length", None, "A sentence encoder's: the length sentence-transformers cuts texts "
                     "to, [CLS] and [SEP] included (default: max_position_embeddings).")
flags.DEFINE_list("parity_text", [], "Text files (a text a line; the first 20,000 lines of each) on which to "
                  "check that transformers' tokenizers give the model's own ids, besides the vocabulary's pieces "
                  "and probe lines in six scripts.")


def main(argv):
  del argv
  huggingface.check_hf_output_dir(FLAGS.output_dir, FLAGS.overwrite)  # before the model is built
  config = albert_tf.AlbertConfig.from_json_file(FLAGS.albert_config_file)
  model, prefix = checkpoint_lib.build_model_for_checkpoint(config, FLAGS.checkpoint)
  logging.info("Restored %s", prefix)
  text_options = tokenizer_flags.options_from_flags(FLAGS.spm_model_file) if FLAGS.spm_model_file else None
  export = huggingface.export_to_hf(model, FLAGS.output_dir, spm_model_file=FLAGS.spm_model_file,
                                    tokenizer_options=text_options, parity_text_files=FLAGS.parity_text,
                                    max_seq_length=FLAGS.max_seq_length, overwrite=FLAGS.overwrite)
  print(f"Exported {prefix} to the Hugging Face folder {FLAGS.output_dir}:")
  for name in sorted(export.paths):
    print(f"  {export.paths[name]}")
  if export.tokenizer_parity is not None:
    print("\n".join(export.tokenizer_parity.lines()))
    warning = export.tokenizer_parity.warning()
    if warning:
      print(warning, file=sys.stderr)
  modules = export.sentence_transformers
  if modules is not None:
    print(f"The folder is also a sentence-transformers model ({modules.describe()}; texts cut to "
          f"{modules.max_seq_length} tokens).")
    if export.tokenizer_parity is None:
      print("It needs the tokenizer files to load: export again with --spm_model_file.")
    else:
      print(f"Load it with: SentenceTransformer({FLAGS.output_dir!r}).encode(texts)")


def run():
  """The `albert-export-hf` command."""
  flags.mark_flags_as_required(["albert_config_file", "checkpoint", "output_dir"])
  cli.run(main)


if __name__ == "__main__":
  run()
