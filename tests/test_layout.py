"""The package layout and its promises: stages import only earlier stages, the data path runs without
TensorFlow, tools report only our errors as one line, a TPU that cannot be reached is one clear error."""

import ast
import os
import pkgutil
import re
import subprocess
import sys

import pytest
import tensorflow as tf


from albert_tf.errors import AlbertConfigError, AlbertError, CheckpointMismatchError, CorpusError, DataError, InputFileError, OptionError, TaskError, TrainingError


from albert_tf.training import distribution, pretraining
from tests.conftest import REPO, run_tool

# Each sub-package may import itself and those before it. `errors`, `files` and `workers` come first of all.
# `cli` holds what several tools share and names no task: each task's package defines its own tool's command line.
STAGES = ("errors", "files", "workers", "modeling", "text", "data", "interop", "serving", "training", "cli",
          "tasks")


def stage_of(module: str):
  parts = module.split(".")
  return parts[1] if parts[0] == "albert_tf" and len(parts) > 1 else None


def albert_imports(path: str):
  """The albert_tf modules a source file imports, at any depth of the file."""
  for node in ast.walk(ast.parse(open(path, encoding="utf-8").read())):
    if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("albert_tf"):
      if node.module == "albert_tf":
        yield from (f"albert_tf.{alias.name}" for alias in node.names)
      else:
        yield node.module
    elif isinstance(node, ast.Import):
      yield from (alias.name for alias in node.names if alias.name.startswith("albert_tf"))


def test_each_stage_imports_only_itself_and_earlier_stages():
  package = os.path.join(REPO, "albert_tf")
  checked, violations = 0, []
  for directory, _, names in os.walk(package):
    for name in names:
      if not name.endswith(".py"):
        continue
      path = os.path.join(directory, name)
      module = os.path.relpath(path, REPO)[:-3].replace(os.sep, ".").removesuffix(".__init__")
      stage = stage_of(module)
      if stage is None:
        continue  # albert_tf/__init__.py: the public API, loaded lazily
      assert stage in STAGES, f"{module}: add its stage to STAGES"
      checked += 1
      for imported in albert_imports(path):
        other = stage_of(imported)
        if other is not None and STAGES.index(other) > STAGES.index(stage):
          violations.append(f"{module} imports {imported}")
  assert checked > 30
  assert not violations


def test_the_data_path_imports_no_tensorflow():
  # The data tool's worker processes start from a fork server that imports the tool's modules: without
  # TensorFlow they start fast and hold no TensorFlow state.
  code = ("import sys, albert_tf, albert_tf.cli, albert_tf.files, albert_tf.data.pretraining_writer, "
          "albert_tf.data.corpus_preparation; "
          "print(sorted(name for name in ('tensorflow', 'tf_keras') if name in sys.modules))")
  result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=REPO)
  assert result.returncode == 0, result.stderr
  assert result.stdout.strip() == "[]"


@pytest.mark.parametrize("error, status, one_line", [
    ("OptionError('--x must be positive')", 2, "error: --x must be positive"),
    ("FileNotFoundError('no such file: a.txt')", 1, None),  # not ours: a bug's traceback stays
    ("ValueError('shape mismatch in a layer')", 1, None),
])
def test_tools_print_only_our_errors_as_one_line(error, status, one_line):
  code = ("from albert_tf import cli\nfrom albert_tf.errors import OptionError\n"
          f"def main(argv):\n  raise {error}\ncli.run(main)\n")
  result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=REPO)
  assert result.returncode == status
  if one_line:
    assert result.stderr.strip().splitlines()[-1] == one_line and "Traceback" not in result.stderr
  else:
    assert "Traceback" in result.stderr


def test_an_unreachable_tpu_is_one_error_naming_the_flags():
  with pytest.raises(OptionError, match=r"Cannot reach --tpu_name='no-such-tpu-x1'.*--tpu_zone=us-x1-a, "
                                        r"--gcp_project=no-project\): check those flags"):
    distribution.get_strategy("tpu", "no-such-tpu-x1", "us-x1-a", "no-project")


def test_init_from_group0_refuses_variables_that_do_not_pair_up():
  targets = [tf.Variable(tf.zeros([2, 3]), name="a"), tf.Variable(tf.zeros([3]), name="b")]
  with pytest.raises(CheckpointMismatchError, match="group 1.*2 in the model, 1 in the one-group model"):
    pretraining._assign_pairs(targets, [tf.Variable(tf.ones([2, 3]))], "of group 1")
  with pytest.raises(CheckpointMismatchError, match=r"shapes differ: b:0 \(3,\) vs c:0 \(4,\)"):
    pretraining._assign_pairs(targets, [tf.Variable(tf.ones([2, 3])), tf.Variable(tf.ones([4]), name="c")], "x")
  assert not targets[0].numpy().any()  # a refused list assigns nothing
  pretraining._assign_pairs(targets, [tf.Variable(tf.ones([2, 3])), tf.Variable(tf.ones([3]))], "x")
  assert targets[0].numpy().all() and targets[1].numpy().all()


def test_every_error_we_raise_for_bad_input_is_an_albert_error():
  # Each keeps the built-in type callers caught before (`except ValueError`, `except FileNotFoundError`).
  for error_type, builtin in ((OptionError, ValueError), (DataError, ValueError), (TaskError, ValueError),
                              (CorpusError, ValueError), (AlbertConfigError, ValueError),
                              (CheckpointMismatchError, ValueError), (InputFileError, FileNotFoundError),
                              (TrainingError, RuntimeError)):
    assert issubclass(error_type, AlbertError) and issubclass(error_type, builtin)


# What touches files: the OS's file functions and TensorFlow's. Outside `albert_tf/files.py` they would miss a
# bucket path (or, for gfile, its errors), so every module reads and writes through that module instead.
_FILE_CALLS = {("os", name) for name in ("listdir", "makedirs", "mkdir", "remove", "unlink", "rmdir", "replace",
                                         "rename", "scandir", "walk", "stat")}
_FILE_CALLS |= {("os.path", name) for name in ("exists", "lexists", "isdir", "isfile", "islink", "getsize")}
_FILE_CALLS |= {("glob", "glob"), ("glob", "iglob"), ("gzip", "open"), ("io", "open")}
_FILE_MODULES = ("shutil", "tempfile", "tf.io.gfile", "pathlib")
# Calls on paths that are not a user's: the process's stderr and the driver's device files.
_FILE_CALLS_ALLOWED = {
    ("albert_tf/cli/__init__.py", "os.path.exists"),  # /proc/driver/nvidia: is there a GPU driver
    ("albert_tf/cli/__init__.py", "tempfile.TemporaryFile"),  # captures file descriptor 2
    ("albert_tf/cli/__init__.py", "open"),  # reopens file descriptor 2
}


def _dotted(node) -> str:
  return f"{_dotted(node.value)}.{node.attr}" if isinstance(node, ast.Attribute) else getattr(node, "id", "")


def file_calls(path: str):
  """(line, call) of each call of `path` that touches a file other than through albert_tf.files."""
  for node in ast.walk(ast.parse(open(path, encoding="utf-8").read())):
    if not isinstance(node, ast.Call):
      continue
    name = _dotted(node.func)
    module, _, function = name.rpartition(".")
    if name == "open" or (module, function) in _FILE_CALLS or module.startswith(_FILE_MODULES) \
        or name.startswith(_FILE_MODULES):
      yield node.lineno, name


def test_only_the_files_module_touches_files():
  violations, checked = [], 0
  for folder in ("albert_tf", "tools"):
    for directory, _, names in os.walk(os.path.join(REPO, folder)):
      for name in names:
        relative = os.path.relpath(os.path.join(directory, name), REPO)
        if not name.endswith(".py") or relative == os.path.join("albert_tf", "files.py"):
          continue
        checked += 1
        violations += [f"{relative}:{line} {call}" for line, call in file_calls(os.path.join(REPO, relative))
                       if (relative, call) not in _FILE_CALLS_ALLOWED]
  assert checked > 100
  assert not violations, "use albert_tf.files instead:\n" + "\n".join(violations)


def tool_names():
  """The scripts of tools/, by name."""
  return sorted(name[:-3] for name in os.listdir(os.path.join(REPO, "tools")) if name.endswith(".py")
                and name != "__init__.py")


@pytest.mark.parametrize("tool", tool_names())
def test_every_tools_help_says_its_paths_may_be_buckets(tool):
  # absl prints the tool's usage text atop its --help; every file flag takes a bucket path, as Google's tools do.
  result = run_tool(tool, "--help")
  assert result.returncode == 1, result.stderr  # absl's --help exits with 1
  usage = result.stdout.split("\nflags:\n")[0]
  assert "Every path may be in a bucket (gs://" in usage.replace("\n", " ")


# Benchmarks and data sets that a task reads, which no task package's name says: a generic module names none.
_BENCHMARK_WORDS = ("squad", "race", "glue", "klue", "korquad", "nsmc", "kornli", "korsts", "wos", "conll", "conllu",
                    "ner", "sts", "nli", "mrc", "ynat")
# Names that an outside format imposes, or words of a task that are not its own: not a task named.
_NOT_TASK_WORDS = {
    ("tsv",): "the user's-TSV task is named after the file format, which the generic readers read",
    ("classifier", "dropout", "prob"): "transformers' config.json key, written for every ALBERT model",
    ("similarity", "fn", "name"): "sentence-transformers' config key (the cosine of its embeddings)",
    ("classification", "head"): "the generic layer of logits over classes that several tasks' heads are",
}


def _words(text: str) -> tuple:
  """The lower-case words of an identifier, a dotted name or a text (`AlbertSentenceEncoder`, `squad_v2_head`)."""
  spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", " ", text)
  return tuple(word for word in re.split(r"[^a-z0-9]+", spaced.lower()) if word)


def _task_words():
  """Each task's words: its package's name, its heads' attributes and model classes, the names of the
  classification catalogue's tasks, and the benchmarks."""
  from albert_tf import tasks
  from albert_tf.modeling import task_heads
  from albert_tf.tasks.classification.catalogue import KNOWN_TASKS
  packages = [module.name for module in pkgutil.iter_modules(tasks.__path__) if module.ispkg]
  heads = task_heads.registered_heads()
  names = (packages + [head.attribute for head in heads] + [head.model_class.__name__ for head in heads]
           + list(KNOWN_TASKS) + list(_BENCHMARK_WORDS))
  return {_words(name) for name in names} - set(_NOT_TASK_WORDS)


def _code_names(path: str):
  """(line, name) of every identifier and non-docstring string of a module: names, attributes, definitions,
  arguments, keywords, imports and string constants."""
  tree = ast.parse(open(path, encoding="utf-8").read())
  docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
  for node in ast.walk(tree):
    names = []
    if isinstance(node, ast.Name):
      names = [node.id]
    elif isinstance(node, ast.Attribute):
      names = [node.attr]
    elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
      names = [node.name]
    elif isinstance(node, ast.arg):
      names = [node.arg]
    elif isinstance(node, ast.keyword) and node.arg:
      names = [node.arg]
    elif isinstance(node, ast.alias):
      names = [node.name, node.asname or ""]
    elif isinstance(node, ast.ImportFrom):
      names = [node.module or ""]
    elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
      names = [node.value]
    for name in names:
      yield getattr(node, "lineno", 0), name


def _names_a_task(name: str, task_words) -> bool:
  words = _words(name)
  for allowed in _NOT_TASK_WORDS:
    words = _without(words, allowed)
  return any(_contains(words, task) for task in task_words)


def _contains(words: tuple, part: tuple) -> bool:
  return any(words[start:start + len(part)] == part for start in range(len(words) - len(part) + 1))


def _without(words: tuple, part: tuple) -> tuple:
  """`words` with each run of `part` replaced by a break (so that no task word spans it)."""
  kept, start = [], 0
  while start < len(words):
    if words[start:start + len(part)] == part:
      kept.append("")
      start += len(part)
    else:
      kept.append(words[start])
      start += 1
  return tuple(kept)


def test_no_module_outside_the_task_packages_names_a_task():
  task_words = _task_words()
  assert {("squad",), ("similarity",), ("albert", "sentence", "encoder"), ("klue", "sts")} <= task_words
  package = os.path.join(REPO, "albert_tf")
  checked, violations = 0, []
  for directory, _, names in os.walk(package):
    for name in sorted(names):
      relative = os.path.relpath(os.path.join(directory, name), REPO)
      if not name.endswith(".py") or relative.startswith(os.path.join("albert_tf", "tasks", "")):
        continue
      checked += 1
      violations += [f"{relative}:{line} {name!r}" for line, name in _code_names(os.path.join(REPO, relative))
                     if _names_a_task(name, task_words)]
  assert checked > 50
  assert not violations, "a task named outside albert_tf/tasks/:\n" + "\n".join(violations)
