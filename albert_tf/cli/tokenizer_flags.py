"""`--do_lower_case` and `--keep_accents`: by default what the vocabulary's record says.

Left out, they are read from the `.tokenizer_options.json` recorded beside `--spm_model_file` (see
`albert_tf.text.tokenizer_options`), else Google's defaults (lower-cased, accents stripped). Given, they must
agree with the record.
"""

from absl import flags

from albert_tf.text import tokenizer_options


def define_tokenizer_flags():
  """--do_lower_case and --keep_accents, unset by default."""
  flags.DEFINE_bool("do_lower_case", None, "Whether the tokenizer lower-cases. Default: what "
                    "<spm model>.tokenizer_options.json records, else true (Google's default).")
  flags.DEFINE_bool("keep_accents", None, "Whether the tokenizer keeps accents. Default: what "
                    "<spm model>.tokenizer_options.json records, else false (Google strips them).")


def options_from_flags(spm_model_file: str) -> tokenizer_options.TokenizerOptions:
  """The tokenizer options of `spm_model_file`, checked against the flags given.

  Raises:
    OptionError: a flag contradicts the record.
  """
  values = flags.FLAGS
  return tokenizer_options.resolve_options(spm_model_file, values.do_lower_case, values.keep_accents)
