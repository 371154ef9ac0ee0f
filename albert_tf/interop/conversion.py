"""Converts Google's TF1 checkpoints and Hugging Face model folders into albert-tf checkpoints.

The model is built from the config with the heads the source holds, and every one of its variables is
filled from the source tensor that `weight_names.named_weights` names for it, all or nothing
(`source_tensors`). Google's checkpoints are read here, Hugging Face's folders by `huggingface`;
`read_checkpoint` tells the three kinds apart, and the writing is here.
"""

import os
from typing import Dict, Optional, Sequence, Tuple

from albert_tf import files
from albert_tf.errors import CheckpointMismatchError, OptionError
from albert_tf.interop import huggingface
from albert_tf.interop.source_tensors import SPM_FILE, Conversion, fill_variables, recorded_tokenizer_options
from albert_tf.modeling import checkpoints as checkpoint_lib
from albert_tf.modeling import task_heads
from albert_tf.modeling.checkpoints import CHECKPOINT_NAME, TASK_INFO_FILE
from albert_tf.modeling.config import CONFIG_FILE, AlbertConfig
from albert_tf.modeling.weight_names import named_weights
from albert_tf.text import tokenizer_options as options_lib
from albert_tf.text.tokenizer import SentencePieceTokenizer

SOURCE_FORMATS = ("google", "hf")
_GOOGLE_SLOT_SUFFIXES = ("/adam_m", "/adam_v", "/lamb_m", "/lamb_v")
_TF_HUB_PREFIX = "module/"
# Written last when a converted folder is published (`files.staged_folder`): a reader finds a checkpoint by its
# index (`resolve_checkpoint_path`), so until it is there the folder holds no checkpoint, and then all of it.
CHECKPOINT_MARKER = f"{CHECKPOINT_NAME}.index"






# --- Google's TF1 checkpoints ----------------------------------------------------------------------------

def convert_google_checkpoint(path: str, albert_config_file: Optional[str] = None,
                              spm_model_file: Optional[str] = None) -> Conversion:
  """Converts a checkpoint of Google's TF1 ALBERT code (or a TF-Hub module's variables).

  Args:
    path: a checkpoint prefix, or a directory holding one (its latest).
    albert_config_file: the model's config; default `albert_config.json` beside the checkpoint.
    spm_model_file: the SentencePiece model; default the single `*.model` file beside the checkpoint.

  Returns:
    The conversion: `cls/predictions` gives the masked-LM head and `cls/seq_relationship` the
    sentence-order head; without them the model is the encoder. A checkpoint fine-tuned by one of Google's
    scripts gives the model of the task head whose `google_scope` it holds (`task_heads`: `run_squad_v1.py`'s
    `cls/squad`, `run_squad_v2.py`'s `start_logits`), rebuilt with its defaults (SQuAD v2's beam 5 × 5).

  Raises:
    FileNotFoundError: no checkpoint or config where given or expected.
    DataError: the checkpoint's files are truncated or corrupt.
    CheckpointMismatchError: listing every variable that does not fit the config.
  """
  prefix = checkpoint_lib.resolve_checkpoint_path(path)
  directory = os.path.dirname(prefix)
  config_file = _config_file(directory, albert_config_file)
  config = AlbertConfig.from_json_file(config_file)
  reader = checkpoint_lib.CheckpointReader(prefix)
  shapes = reader.get_variable_to_shape_map()
  if checkpoint_lib.OBJECT_GRAPH_KEY in shapes:
    raise CheckpointMismatchError(
        f"{prefix} is an object-based TF2 checkpoint, not one of Google's TF1 checkpoints. An albert-tf "
        "checkpoint needs no conversion; pass it to the tools directly.")
  ignored = {"global_step": 0, "optimizer slots": 0}
  weights = {}
  for name, shape in shapes.items():
    if name.split("/")[-1] == "global_step":
      ignored["global_step"] += 1
    elif name.endswith(_GOOGLE_SLOT_SUFFIXES):
      ignored["optimizer slots"] += 1
    else:
      weights[name] = shape
  source_name = {name: name for name in weights}
  if weights and all(name.startswith(_TF_HUB_PREFIX) for name in weights):
    source_name = {name[len(_TF_HUB_PREFIX):]: name for name in weights}
  heads = {head for head, scope in (("masked_lm_head", "cls/predictions/"),
                                    ("sentence_order_head", "cls/seq_relationship/"))
           if any(name.startswith(scope) for name in source_name)}
  task_head = next((head for head in task_heads.registered_heads() if head.google_scope is not None
                    and any(name.startswith(f"{head.google_scope}/") for name in source_name)), None)
  if task_head is not None:  # fine-tuned by one of Google's scripts
    model = task_head.rebuild(config, {}, {})
  else:
    model = checkpoint_lib.model_with_heads(config, heads)
  targets = {names.google: (variable, False) for names, variable in named_weights(model)}
  num_tensors = fill_variables(
      targets, {name: weights[original] for name, original in source_name.items()},
      lambda name: reader.get_tensor(source_name[name]), prefix,
      f"Does {config_file} match the checkpoint? Classifier heads (top-level output_weights) "
      "have no place in an ALBERT pretraining or SQuAD model.")
  spm_model_file = spm_model_file or _single_spm_model(directory)
  return Conversion(prefix, model, num_tensors, ignored, spm_model_file=spm_model_file,
                    **recorded_tokenizer_options(spm_model_file))


def _config_file(directory: str, albert_config_file: Optional[str]) -> str:
  """`albert_config_file`, else the `albert_config.json` in the checkpoint's directory; it must exist."""
  return files.require_file(albert_config_file or os.path.join(directory, CONFIG_FILE), "ALBERT config file",
                            "pass --albert_config_file")


def _single_spm_model(directory: str) -> Optional[str]:
  """The one `*.model` file in `directory` (Google's releases ship `30k-clean.model`), if exactly one."""
  found = files.folder_files(directory, "*.model")
  return found[0] if len(found) == 1 else None


# --- Any of the three ------------------------------------------------------------------------------------



def read_checkpoint(path: str, albert_config_file: Optional[str] = None,
                    spm_model_file: Optional[str] = None) -> Conversion:
  """Reads an albert-tf checkpoint, one of Google's TF1 checkpoints or a Hugging Face folder, told apart by
  their files, into the model it holds (its heads included).

  Args:
    path: a Hugging Face folder; or a checkpoint prefix, or a directory meaning its latest checkpoint.
    albert_config_file: the config of an albert-tf or Google checkpoint; default `albert_config.json` beside
      it. A Hugging Face folder has its own `config.json`.
    spm_model_file: the SentencePiece model; default the one found beside the checkpoint (see the
      `convert_*` functions; `spiece.model` for an albert-tf checkpoint).

  Raises:
    FileNotFoundError: no checkpoint, weights or config where given or expected.
    OptionError: `albert_config_file` given with a Hugging Face folder.
    DataError, CheckpointMismatchError, AlbertConfigError: as `convert_google_checkpoint` and `convert_hf_folder`.
  """
  if files.is_folder(path) and huggingface.is_hf_folder(path):
    if albert_config_file:
      raise OptionError(f"{path} is a Hugging Face folder, which has its config.json: leave out "
                        "--albert_config_file.")
    return huggingface.convert_hf_folder(path, spm_model_file)
  prefix = checkpoint_lib.resolve_checkpoint_path(path)
  if checkpoint_lib.OBJECT_GRAPH_KEY not in checkpoint_lib.CheckpointReader(prefix).get_variable_to_shape_map():
    return convert_google_checkpoint(prefix, albert_config_file, spm_model_file)
  directory = os.path.dirname(prefix)
  config = AlbertConfig.from_json_file(_config_file(directory, albert_config_file))
  model, prefix = checkpoint_lib.build_model_for_checkpoint(config, prefix)
  spm_in_directory = os.path.join(directory, SPM_FILE)
  spm_model_file = spm_model_file or (spm_in_directory if files.file_exists(spm_in_directory) else None)
  return Conversion(prefix, model, len(model.variables), {}, spm_model_file=spm_model_file,
                    **recorded_tokenizer_options(spm_model_file))


# --- Writing -----------------------------------------------------------------------------------------------

def check_output_dir(output_dir: str, other_files: Sequence[str] = (), overwrite: bool = False) -> None:
  """Refuses, before any work, a directory that cannot be written or already holds a checkpoint, its config, its
  task.json or one of `other_files` (unless `overwrite`), so that nothing written is lost."""
  files.check_output_folder(output_dir, [*other_files, CHECKPOINT_MARKER, CONFIG_FILE, TASK_INFO_FILE], overwrite)


def write_conversion(conversion: Conversion, output_dir: str, overwrite: bool = False) -> Dict[str, str]:
  """Writes `model.ckpt` (readable by `restore_checkpoint`), `albert_config.json`, `spiece.model`, and for a task
  head that needs it the `task.json` a fine-tuning run would have written (a token classifier's labels: see
  `task_heads.TaskHead.run_info`); a checkpoint, config or task.json already in `output_dir` is replaced with
  `overwrite`, else refused.

  `output_dir` (local or in a bucket) gets the files whole or not at all (`files.staged_folder`), the checkpoint's
  index last (`CHECKPOINT_MARKER`).

  Returns:
    The paths written, by file name.
  """
  check_output_dir(output_dir, overwrite=overwrite)
  if conversion.spm_model_file:
    SentencePieceTokenizer(conversion.spm_model_file)  # fails on a bad model before anything is written
  names = [CHECKPOINT_NAME, CONFIG_FILE]
  with files.staged_folder(output_dir, CHECKPOINT_MARKER) as staging:
    checkpoint_lib.save_checkpoint(conversion.model, os.path.join(staging, CHECKPOINT_NAME))
    conversion.model.config.to_json_file(os.path.join(staging, CONFIG_FILE))
    task_head = task_heads.head_of(conversion.model)
    if task_head is not None and task_head.run_info is not None:
      checkpoint_lib.write_task_info(staging, task_head.run_info(conversion.model))
      names.append(TASK_INFO_FILE)
    else:
      files.remove(os.path.join(output_dir, TASK_INFO_FILE))  # overwritten: it described the model that was there
    if conversion.spm_model_file:
      spm_file = os.path.join(staging, SPM_FILE)
      files.copy_file(conversion.spm_model_file, spm_file)
      options_file = options_lib.write_options(spm_file, conversion.tokenizer_options)
      names += [SPM_FILE, os.path.basename(options_file)]
  return {name: os.path.join(output_dir, name) for name in names}


def convert(source_format: str, source: str, output_dir: str, albert_config_file: Optional[str] = None,
            spm_model_file: Optional[str] = None, overwrite: bool = False) -> Tuple[Conversion, Dict[str, str]]:
  """Converts `source` and writes the result to `output_dir`; nothing is written unless conversion succeeds.

  See `convert_google_checkpoint`, `convert_hf_folder` and `write_conversion`.

  Returns:
    The conversion and the paths written, by file name.
  """
  check_output_dir(output_dir, overwrite=overwrite)  # before the work, not only before the writing
  if source_format == "google":
    conversion = convert_google_checkpoint(source, albert_config_file, spm_model_file)
  elif source_format == "hf":
    if albert_config_file:
      raise OptionError("--albert_config_file is for --source_format=google; a Hugging Face folder has its "
                       "config.json.")
    conversion = huggingface.convert_hf_folder(source, spm_model_file)
  else:
    raise OptionError(f"--source_format must be one of {', '.join(SOURCE_FORMATS)}, got {source_format!r}.")
  return conversion, write_conversion(conversion, output_dir, overwrite)


def summary(conversion: Conversion, paths: Dict[str, str]) -> str:
  """What was converted, ignored and written, and the tokenizer options recorded."""
  parts = ", ".join(conversion.parts)
  lines = [f"Converted {conversion.source}: {parts} ({conversion.num_tensors} tensors)."]
  ignored = [f"{count} {reason}" for reason, count in conversion.ignored.items() if count]
  if ignored:
    lines.append(f"Ignored: {', '.join(ignored)}.")
  lines += conversion.notes
  if conversion.spm_model_file:
    lines.append(f"Tokenizer options {conversion.tokenizer_options.as_flags()} (from "
                 f"{conversion.tokenizer_options_source}), recorded beside {SPM_FILE} for the other tools.")
  else:
    lines.append("No SentencePiece model was found or given (--spm_model_file), so none was copied.")
  lines.append("Wrote:")
  lines += [f"  {paths[name]}" for name in sorted(paths)]
  return "\n".join(lines)
