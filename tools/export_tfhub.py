"""Exports an albert-tf checkpoint as a TF Hub-style encoder and preprocessor (Google's export_to_tfhub).

  python tools/export_tfhub.py --albert_config_file=configs/albert_base.json --checkpoint=output/ \
      --spm_model_file=30k-clean.model --max_seq_length=128 --export_path=hub/albert

writes hub/albert/encoder/ and hub/albert/preprocessor/, two Reusable SavedModels that `hub.KerasLayer` loads
(the encoder with trainable=True for fine-tuning), as TF Hub's BERT and ALBERT models come. The encoder has an
`mlm` sub-object for checkpoints with the masked-LM head. Load them with `import tensorflow_text` (registers
the SentencePiece op) and `tensorflow_hub`, or `tf.saved_model.load`. Every path may be in a bucket (gs://...);
the export appears whole, the encoder's saved_model.pb last.
"""

import time

from absl import flags

# Before TensorFlow: it sets TensorFlow's log level, which TensorFlow reads once, on import.
from albert_tf import cli  # pylint: disable=g-bad-import-order
from albert_tf import files
from albert_tf.cli import tokenizer_flags
from albert_tf.modeling import checkpoints as checkpoint_lib
from albert_tf.modeling.config import AlbertConfig
from albert_tf.serving import tfhub

FLAGS = flags.FLAGS

flags.DEFINE_string("albert_config_file", None, "The albert_config.json the model was built with.")
flags.DEFINE_string("checkpoint", None,
                    "An albert-tf checkpoint prefix, or a directory meaning its latest checkpoint.")
flags.DEFINE_string("spm_model_file", None, "The SentencePiece model the model was trained with.")
tokenizer_flags.define_tokenizer_flags()
flags.DEFINE_integer("max_seq_length", 128, "Length that the preprocessor packs single sentences to (its "
                     "__call__, and bert_pack_inputs' default).")
flags.DEFINE_string("export_path", None, "Directory to create, with encoder/ and preprocessor/ in it.")


def _megabytes(path: str) -> float:
  return sum(files.file_size(file) for file in files.paths_under(path) if not files.is_folder(file)) / 1e6


def main(argv):
  del argv
  config = AlbertConfig.from_json_file(FLAGS.albert_config_file)
  model, prefix = checkpoint_lib.build_model_for_checkpoint(config, FLAGS.checkpoint)
  start = time.time()
  export = tfhub.export_tfhub(model, FLAGS.export_path, FLAGS.spm_model_file, FLAGS.max_seq_length,
                              do_lower_case=FLAGS.do_lower_case, keep_accents=FLAGS.keep_accents)
  seconds = time.time() - start
  callables = "__call__, mlm" if export.has_mlm else "__call__"
  print(f"Exported {prefix} ({type(model).__name__}) for TF Hub to {FLAGS.export_path} in {seconds:.1f} s:")
  print(f"  {export.encoder_dir}: {callables}, serving_default; {config.num_hidden_layers} layers of width "
        f"{config.hidden_size}; {_megabytes(export.encoder_dir):.1f} MB")
  print(f"  {export.preprocessor_dir}: __call__ (to {FLAGS.max_seq_length} tokens), tokenize, bert_pack_inputs; "
        f"{export.tokenizer_options.as_flags()}; {_megabytes(export.preprocessor_dir):.1f} MB")
  if not export.has_mlm:
    print(f"{prefix} has no masked-LM head, so the encoder has no mlm sub-object.")


def run():
  """The `albert-export-tfhub` command."""
  flags.mark_flags_as_required(["albert_config_file", "checkpoint", "spm_model_file", "export_path"])
  cli.run(main)


if __name__ == "__main__":
  run()
