"""Exports an albert-tf SavedModel as an ONNX model with its tokenizer, for serving with ONNX Runtime.

  python tools/export_onnx.py --saved_model_dir=serving/albert/1 --output_dir=albert_onnx

converts the SavedModel's serving_default (ids in, the task's outputs out; written by export_saved_model or a
fine-tuning tool's --export_dir) with tf2onnx and writes model.onnx, spiece.model, tokenizer.json,
tokenizer_config.json, special_tokens_map.json and spiece.tokenizer_options.json to --output_dir: ONNX Runtime
runs the model, and `tokenizers.Tokenizer.from_file` or `transformers.AutoTokenizer` make its inputs, with no
TensorFlow. Nothing is written unless ONNX Runtime gives the SavedModel's outputs on packed text pairs and single
texts (floats within 1e-4, everything else equal); the differences are printed. Every path may be in a bucket
(gs://...); the ONNX folder appears whole, model.onnx last.
"""

import sys

from absl import flags

# Before TensorFlow: it sets TensorFlow's log level, which TensorFlow reads once, on import.
from albert_tf import cli  # pylint: disable=g-bad-import-order
from albert_tf.cli import output_flags
from albert_tf.serving import onnx_export

FLAGS = flags.FLAGS

flags.DEFINE_string("saved_model_dir", None, "A SavedModel version folder that export_saved_model wrote "
                    "(<export_dir>/<version>).")
flags.DEFINE_string("output_dir", None, "Folder to write model.onnx and the tokenizer files to.")
flags.DEFINE_integer("opset", onnx_export.DEFAULT_OPSET, f"The ONNX opset, {onnx_export.MIN_OPSET} to "
                     f"{onnx_export.MAX_OPSET}; {onnx_export.DEFAULT_OPSET} runs on ONNX Runtime 1.13 and later.")
output_flags.define_overwrite_flag("the model and tokenizer files in --output_dir")


def main(argv):
  del argv
  export = onnx_export.export_onnx(FLAGS.saved_model_dir, FLAGS.output_dir, overwrite=FLAGS.overwrite,
                                   opset=FLAGS.opset)
  print(f"Exported serving_default of {FLAGS.saved_model_dir} to ONNX (opset {FLAGS.opset}; converted in "
        f"{export.conversion_seconds:.1f} s): inputs {', '.join(export.inputs)}; outputs {', '.join(export.outputs)}.")
  shapes = ", ".join("×".join(map(str, shape)) for shape in export.probe_shapes)
  floats = ", ".join(f"{name} {found:.1e}" for name, found in sorted(export.max_abs_differences.items()))
  others = sorted(set(export.outputs) - set(export.max_abs_differences))
  print(f"ONNX Runtime against the SavedModel on ids {shapes}: max |diff| {floats or '(no float output)'}"
        f"{'; ' + ', '.join(others) + ' equal' if others else ''} (tolerance {onnx_export.TOLERANCE:.0e}).")
  for name in sorted(export.paths):
    print(f"  {export.paths[name]}")
  print("\n".join(export.tokenizer_parity.lines()))
  warning = export.tokenizer_parity.warning()
  if warning:
    print(warning, file=sys.stderr)
  if export.tokenizer_mismatches:
    print(f"WARNING: tokenizer.json gives other ids than the SavedModel on {len(export.tokenizer_mismatches)} "
          f"probe text(s), e.g. {export.tokenizer_mismatches[0]!r}.", file=sys.stderr)


def run():
  """The `albert-export-onnx` command."""
  flags.mark_flags_as_required(["saved_model_dir", "output_dir"])
  cli.run(main)


if __name__ == "__main__":
  run()
