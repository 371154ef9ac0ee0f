"""docs/adding-a-task.md, proven: its example task, written from the page's own code blocks into a folder of its
own that joins `albert_tf.tasks` as a new package would, trains, evaluates, predicts, resumes and exports through
the generic machinery. Nothing outside that folder is written, so a task that needed a change elsewhere fails
here."""

import csv
import dataclasses
import importlib
import json
import os
import re
import sys

import numpy as np
import pytest
import tensorflow as tf

from albert_tf.errors import TaskError
from albert_tf.modeling import task_heads
from albert_tf.modeling.weight_names import named_weights
from albert_tf.text.tokenizer import SentencePieceTokenizer
from albert_tf.training import run_directory
from tests.conftest import (REPO, SHARED, SP8K_MODEL, python_pack, requires_shared, run_tool, tiny_config,
                            write_config)

PAGE = os.path.join(REPO, "docs", "adding-a-task.md")
PACKAGE = "language_id"
PARALLEL = os.path.join(SHARED, "parallel", "en_ko_messages.tsv")
CONFIG = dict(vocab_size=8000, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
              embedding_size=16, max_position_embeddings=32)
INPUT_NAMES = ("input_word_ids", "input_mask", "input_type_ids")
pytestmark = requires_shared(PARALLEL)


def page_files():
  """The page's files of the example package: each python block right after a line naming its path."""
  text = open(PAGE, encoding="utf-8").read()
  blocks = re.findall(rf"^`{PACKAGE}/(\w+\.py)`:\n\n```python\n(.*?)^```$", text, re.M | re.S)
  return dict(blocks)


@pytest.fixture(scope="module")
def language_id(tmp_path_factory):
  """The example package, imported as `albert_tf.tasks.language_id` from a folder outside the checkout; the
  registry, the module table and the package path are as before afterwards."""
  folder = tmp_path_factory.mktemp("tasks")
  (folder / PACKAGE).mkdir()
  for name, code in page_files().items():
    (folder / PACKAGE / name).write_text(code, encoding="utf-8")
  tasks = importlib.import_module("albert_tf.tasks")
  heads = dict(task_heads._HEADS)  # pylint: disable=protected-access
  tasks.__path__.append(str(folder))
  try:
    yield importlib.import_module(f"albert_tf.tasks.{PACKAGE}")
  finally:
    tasks.__path__.remove(str(folder))
    for name in [name for name in sys.modules if name.startswith(f"albert_tf.tasks.{PACKAGE}")]:
      del sys.modules[name]
    task_heads._HEADS.clear()  # pylint: disable=protected-access
    task_heads._HEADS.update(heads)  # pylint: disable=protected-access


def write_splits(folder):
  """English and Korean messages of the shared parallel file, each a record of its language."""
  with open(PARALLEL, encoding="utf-8") as reader:
    rows = [row for row in csv.reader(reader, delimiter="\t", quoting=csv.QUOTE_NONE) if len(row) >= 2]
  rows = [row for row in rows if len(row[0].split()) >= 3][:120]
  folder.mkdir()
  for split, chosen in (("train", rows[:80]), ("dev", rows[80:104]), ("test", rows[104:])):
    records = [{"text": text, "language": language} for row in chosen for text, language in zip(row, ("en", "ko"))]
    (folder / f"{split}.jsonl").write_text("".join(json.dumps(record, ensure_ascii=False) + "\n"
                                                   for record in records), encoding="utf-8")
  return folder


def test_the_page_gives_the_whole_package_and_counts_what_a_head_must_say():
  assert set(page_files()) == {"__init__.py", "model.py", "head.py", "objective.py", "command.py"}
  fields = dataclasses.fields(task_heads.TaskHead)
  required = [f"`{field.name}`" for field in fields if field.default is dataclasses.MISSING]
  row = f"| `TaskHead` | {len(fields)} fields | {len(required)}: {', '.join(required)} |"
  assert row in open(PAGE, encoding="utf-8").read()


def test_the_example_task_trains_evaluates_predicts_resumes_and_exports(language_id, tmp_path):
  assert language_id.head.LANGUAGE_HEAD in task_heads.registered_heads()
  data_dir = write_splits(tmp_path / "data")
  run_dir, export_dir = tmp_path / "run", tmp_path / "export"
  command = f"albert_tf.tasks.{PACKAGE}.command"
  common = (f"--data_dir={data_dir}", f"--albert_config_file={write_config(tmp_path, **CONFIG)}",
            f"--spm_model_file={SP8K_MODEL}", f"--output_dir={run_dir}", "--max_seq_length=32",
            "--train_batch_size=16", "--eval_batch_size=16", "--predict_batch_size=16", "--learning_rate=3e-3",
            "--warmup_step=10",
            "--save_checkpoints_steps=20", "--iterations_per_loop=20", "--dropout_prob=0", "--do_eval")
  result = run_tool(command, *common, "--do_train", "--train_step=40")
  assert result.returncode == 0, result.stderr[-3000:]
  assert (run_dir / "model.ckpt-40.index").exists() and not (run_dir / "model.ckpt-60.index").exists()

  # Rerun with more steps: it resumes at step 40 (its task.json adopted) and predicts with the best weights.
  result = run_tool(command, *common, "--do_train", "--train_step=60", "--do_predict")
  assert result.returncode == 0, result.stderr[-3000:]
  assert "model.ckpt-40 at step 40" in result.stderr
  assert run_directory.last_evaluated_step(str(run_dir)) == 60
  best = run_directory.read_best_info(str(run_dir))
  assert best["accuracy"] >= 0.75, best  # English or Korean: the script gives it away; chance is 0.5

  # The best checkpoint alone exports (the registry rebuilds the model from its defaults; a tool's --export_dir is
  # the same exporter, tested with every task's tool), and the SavedModel's logits give the prediction files'
  # answers, named by language.
  result = run_tool("export_saved_model", f"--checkpoint={run_dir / run_directory.BEST_CHECKPOINT}",
                    f"--export_dir={export_dir}",
                    f"--albert_config_file={run_dir / 'albert_config.json'}", f"--spm_model_file={SP8K_MODEL}",
                    "--max_seq_length=32")
  assert result.returncode == 0, result.stderr[-3000:]
  submitted = (run_dir / "submit_results.tsv").read_text(encoding="utf-8").splitlines()
  assert submitted[0] == "index\tprediction" and len(submitted) == 1 + 2 * 16
  predictions = [line.split("\t")[1] for line in submitted[1:]]
  assert set(predictions) <= {"en", "ko"}
  records = [json.loads(line) for line in (data_dir / "test.jsonl").read_text(encoding="utf-8").splitlines()]
  served = tf.saved_model.load(str(export_dir / "1"))
  tokenizer = SentencePieceTokenizer(SP8K_MODEL)
  packed = zip(*(python_pack(tokenizer, record["text"], None, 32) for record in records))
  batch = {name: tf.constant(rows, tf.int32) for name, rows in zip(INPUT_NAMES, packed)}
  logits = served.signatures["serving_default"](**batch)["logits"].numpy()
  assert [("en", "ko")[index] for index in np.argmax(logits, -1)] == predictions


def task_packages():
  folder = os.path.join(REPO, "albert_tf", "tasks")
  return sorted(name for name in os.listdir(folder) if os.path.isfile(os.path.join(folder, name, "__init__.py")))


def test_every_list_of_tasks_names_every_task_package():
  packages = task_packages()
  assert len(packages) >= 7
  listed = open(os.path.join(REPO, "albert_tf", "tasks", "__init__.py"), encoding="utf-8").read()
  page = open(PAGE, encoding="utf-8").read()
  table = page[page.index("<!-- task packages -->"):page.index("<!-- end task packages -->")]
  readme = open(os.path.join(REPO, "README.md"), encoding="utf-8").read()
  assert sorted(re.findall(r"^- `(\w+)`:", listed, re.M)) == packages
  assert sorted(re.findall(r"^\| `(\w+)` \|", table, re.M)) == packages
  assert sorted(set(re.findall(r"`albert_tf/tasks/(\w+)/`", readme))) == packages


def test_every_benchmark_is_in_the_readmes_list():
  readme = open(os.path.join(REPO, "README.md"), encoding="utf-8").read()
  paragraph = readme[readme.index("The benchmarks are scripts of the checkout"):]
  paragraph = paragraph[:paragraph.index("\n\n")]
  named = set(re.findall(r"`(\w+)`", paragraph)) | set(re.findall(r"`benchmarks/([\w.]+)`", paragraph))
  for script in os.listdir(os.path.join(REPO, "benchmarks")):
    name = script.removeprefix("benchmark_").removesuffix(".py")
    assert name in named or script in named, script


def test_every_task_model_is_importable_from_the_package(language_id):
  import albert_tf
  models = {head.model_class.__name__: head.model_class for head in task_heads.registered_heads()}
  assert "AlbertLanguageIdentifier" in models and set(models) <= set(albert_tf.__all__)
  assert all(getattr(albert_tf, name) is model for name, model in models.items())


def test_the_defaults_name_the_heads_weights_and_refuse_a_run_of_another_task(language_id):
  model = language_id.model.AlbertLanguageIdentifier(tiny_config())
  model(model.dummy_inputs(), training=False)
  named = named_weights(model)
  head_names = {names.google: names.hf for names, _ in named if names.google.startswith("language_head/")}
  assert head_names == {"language_head/output_weights": None, "language_head/output_bias": None}
  assert len(named) == len(model.weights)
  objective = importlib.import_module(f"albert_tf.tasks.{PACKAGE}.objective").LanguageIdObjective()
  objective.adopt_run_info({"task": "language_id"}, "runs/lang")
  with pytest.raises(TaskError, match=r"--output_dir runs/lang holds a run of task 'race', not 'language_id'"):
    objective.adopt_run_info({"task": "race"}, "runs/lang")
