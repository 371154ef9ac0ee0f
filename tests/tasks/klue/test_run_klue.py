"""run_klue: every KLUE task (and KorQuAD 1.0) with two seeds on a data root in the official layout, killed in the
middle of a task and resumed, and the table checked against each run's own eval_results.txt; recipes, missing data
and bad input."""

import csv
import json
import os
import shutil
import statistics
import sys

import pytest

import albert_tf
from albert_tf.interop import huggingface
from albert_tf.modeling import checkpoints as checkpoint_lib
from albert_tf.tasks.klue import benchmark
from albert_tf.tasks.klue import recipes
from albert_tf.training import run_directory
from tests.conftest import SP8K_MODEL, TOOLS, kill_once_a_checkpoint_is_written, padded_batch, run_tool, tiny_config
from tests.tasks.klue.klue_data import write_klue_root

# Every task's recipe, shrunk to seconds: 4 examples a batch, one epoch (YNAT two, so that the kill finds a run
# between its checkpoints), 128 pieces.
SHRUNK = ("--seeds=2", "--set=train_batch_size=4", "--set=eval_batch_size=8", "--set=max_seq_length=128",
          "--set=num_train_epochs=1", "--set=ynat.num_train_epochs=2")


@pytest.fixture(scope="module")
def klue_job(tmp_path_factory):
  """A data root of the eight KLUE tasks (about 1% of the docs' sizes; no KorQuAD) and a small pretrained
  checkpoint folder."""
  folder = tmp_path_factory.mktemp("klue")
  data = write_klue_root(folder / "data", scale=0.01, with_korquad=False)
  model_dir = folder / "albert"
  model_dir.mkdir()
  config = tiny_config(vocab_size=8000, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                       intermediate_size=64, max_position_embeddings=128)
  config.to_json_file(str(model_dir / "albert_config.json"))
  shutil.copy(SP8K_MODEL, model_dir / "spiece.model")
  pretrainer = albert_tf.AlbertPretrainer(config)
  pretrainer(padded_batch(config.vocab_size))
  checkpoint_lib.save_checkpoint(pretrainer, str(model_dir / "model.ckpt"))
  return folder, data, model_dir


def job_flags(data, model_dir, output_dir, *extra):
  return (f"--data_dir={data}", f"--output_dir={output_dir}", f"--init_checkpoint={model_dir}", *SHRUNK, *extra)


# The job tests split KLUE's eight tasks in two jobs of four, which the suite's two workers run side by side: the
# first is killed and resumed, and both tables are checked against their runs.
FIRST_HALF = ("ynat", "sts", "nli", "ner")
SECOND_HALF = ("re", "dp", "mrc", "wos")


def check_table(job, names):
  """Every figure of the job's table (JSON, CSV, Markdown) is its run's own eval_results.txt, or the mean and sample
  std of two; the metrics are in the paper's order, and each seed's is its best checkpoint's."""
  table = json.loads((job / "klue_results.json").read_text(encoding="utf-8"))
  assert [task["task"] for task in table["tasks"]] == list(names)
  with open(job / "klue_results.csv", encoding="utf-8") as reader:
    csv_rows = {(row["task"], row["metric"]): row for row in csv.DictReader(reader)}
  markdown = (job / "klue_results.md").read_text(encoding="utf-8")
  for task in table["tasks"]:
    recipe = recipes.RECIPES_BY_NAME[task["task"]]
    assert [metric["metric"] for metric in task["metrics"]] == [name for name, _ in recipe.metrics]
    runs = {seed: run_directory.read_eval_results(str(job / recipe.name / f"seed-{seed}")) for seed in (1, 2)}
    for metric in task["metrics"]:
      values = [runs[seed][metric["metric"]] for seed in (1, 2)]
      assert [metric["seeds"][str(seed)] for seed in (1, 2)] == values  # each run's own eval_results.txt
      assert metric["mean"] == statistics.fmean(values) and metric["std"] == statistics.stdev(values)
      row = csv_rows[(recipe.name, metric["metric"])]
      assert [float(row["seed 1"]), float(row["seed 2"]), float(row["mean"])] == [*values, metric["mean"]]
      assert f"| {metric['mean']:.4f} ± {metric['std']:.4f} | {values[0]:.4f} | {values[1]:.4f} |" in markdown
    best = max((1, 2), key=lambda seed: runs[seed][recipe.primary_metric])
    assert task["best_seed"] == best
    assert os.path.exists(task["best_checkpoint"] + ".index")
    # The table is the best checkpoint's: eval_results.txt ends at model.ckpt-best's step.
    for seed in (1, 2):
      run_dir = str(job / recipe.name / f"seed-{seed}")
      assert runs[seed]["global_step"] == run_directory.read_best_info(run_dir)["global_step"]
  return table, markdown


def test_run_klue_runs_four_tasks_with_two_seeds_resumes_after_kill_and_tables_each_runs_eval_results(klue_job):
  folder, data, model_dir = klue_job
  job = folder / "job"
  flags = job_flags(data, model_dir, job, f"--tasks={','.join(FIRST_HALF)}")
  # Killed once YNAT's second seed wrote its first checkpoint, before its last (its first seed finished): 15
  # examples / 4 a batch × 2 epochs are 7 steps, saved at 3 and 7.
  kill_once_a_checkpoint_is_written([sys.executable, os.path.join(TOOLS, "run_klue.py"), *flags],
                                    job / "ynat" / "seed-2", "model.ckpt-7")
  first_seed = job / "ynat" / "seed-1"
  assert (first_seed / "finished.json").exists()
  finished_before = {name: (first_seed / name).stat().st_mtime_ns for name in ("finished.json", "eval_results.txt")}

  result = run_tool("run_klue", *flags)
  assert result.returncode == 0, result.stderr[-3000:]
  assert "ynat seed 1: finished before" in result.stderr
  assert {name: (first_seed / name).stat().st_mtime_ns for name in finished_before} == finished_before
  assert "ynat seed 2: resuming at step 3 " in result.stderr
  assert "Resuming from" in (job / "ynat" / "seed-2" / "log.txt").read_text(encoding="utf-8")
  progress = [line for line in result.stderr.splitlines() if line.startswith("klue run ")]
  assert progress[-1].startswith("klue run 8/8 | ner seed 2: done") and progress[-1].endswith("ETA 00:00:00")
  assert any(" | nli seed 1: step " in line and " | job step " in line for line in progress)
  table, markdown = check_table(job, FIRST_HALF)

  # Run again: nothing to do; the table stays.
  before = markdown
  result = run_tool("run_klue", *flags)
  assert result.returncode == 0, result.stderr[-3000:]
  assert result.stderr.count(": finished before") == 8 and "starting" not in result.stderr
  assert (job / "klue_results.md").read_text(encoding="utf-8") == before

  # A changed recipe is refused before any work, naming the change and the way to start again.
  result = run_tool("run_klue", *flags, "--set=nli.learning_rate=1e-3")
  assert result.returncode == 2
  assert result.stderr.strip().splitlines()[-1] == (
      f"error: nli's recipe changed since its runs in {job / 'nli'} (--learning_rate=5e-05 → (none); (none) → "
      "--learning_rate=1e-3): pass --restart=nli to start the task again (its runs are removed), or choose another "
      "--output_dir.")

  # So is other data under the same names.
  dev_file = data / "klue-sts-v1.1" / "klue-sts-v1.1_dev.json"
  records = json.loads(dev_file.read_text(encoding="utf-8"))
  dev_file.write_text(json.dumps(records[:-1], ensure_ascii=False, indent=1), encoding="utf-8")
  result = run_tool("run_klue", *flags)
  assert result.returncode == 2
  assert f"error: sts's recipe changed since its runs in {job / 'sts'} (klue-sts-v1.1_dev.json: " in result.stderr
  dev_file.write_text(json.dumps(records, ensure_ascii=False, indent=1), encoding="utf-8")

  # On request, YNAT's best checkpoint (its best seed) exported, once.
  export_dir = folder / "serving"
  result = run_tool("run_klue", *flags, "--tasks=ynat", f"--export_dir={export_dir}")
  assert result.returncode == 0, result.stderr[-3000:]
  ynat = table["tasks"][0]
  assert f"Exported ynat's best checkpoint (seed {ynat['best_seed']}) to {export_dir / 'ynat'}" in result.stderr
  assert (export_dir / "ynat" / "1" / "saved_model.pb").exists()
  assert (job / "klue_results.md").read_text(encoding="utf-8") == before  # every task's rows are kept
  result = run_tool("run_klue", *flags, "--tasks=ynat", f"--export_dir={export_dir}")
  assert result.returncode == 0 and "Exported" not in result.stderr
  assert sorted(os.listdir(export_dir / "ynat")) == ["1"]

  # --restart starts a changed task again: its runs removed, run anew with the new recipe (one seed here).
  rerun = job / "nli" / "seed-1"
  finished = (rerun / "finished.json").stat().st_mtime_ns
  result = run_tool("run_klue", *flags, "--tasks=nli", "--seeds=1", "--set=nli.learning_rate=1e-3",
                    "--restart=nli")
  assert result.returncode == 0, result.stderr[-3000:]
  assert f"Restarting nli: removed its runs in {job / 'nli'}" in result.stderr
  assert (rerun / "finished.json").stat().st_mtime_ns != finished and not (job / "nli" / "seed-2").exists()
  assert "--learning_rate=1e-3" in json.loads((job / "nli" / "recipe.json").read_text(encoding="utf-8"))["flags"]


def test_run_klue_runs_the_other_four_tasks_with_two_seeds_into_a_table_of_each_runs_eval_results(klue_job):
  folder, data, model_dir = klue_job
  job = folder / "second_job"
  result = run_tool("run_klue", *job_flags(data, model_dir, job, f"--tasks={','.join(SECOND_HALF)}"))
  assert result.returncode == 0, result.stderr[-3000:]
  progress = [line for line in result.stderr.splitlines() if line.startswith("klue run ")]
  assert progress[-1].startswith("klue run 8/8 | wos seed 2: done") and progress[-1].endswith("ETA 00:00:00")
  check_table(job, SECOND_HALF)


def test_every_recipe_is_a_command_line_its_tool_takes(tmp_path):
  """Each task's recipe (KorQuAD's too, which the job above skips), as planned on files in the official layout:
  flags its tool defines, with values it accepts; steps as epochs of the train file's examples."""
  data = write_klue_root(tmp_path / "data", scale=0.01)
  model = benchmark.Model("albert", "albert/albert_config.json", "albert/spiece.model")
  for recipe in recipes.RECIPES:
    folder = recipe.find_files(str(data))
    plan = benchmark.plan_task(recipe, folder, str(tmp_path / "job"), model, {"train_batch_size": "4"})
    assert plan.record["tool"] == recipe.tool.name and plan.record["flags"] == plan.argv
    assert plan.record["file_sizes"][recipe.train_file] == os.path.getsize(os.path.join(folder, recipe.train_file))
    examples = recipe.count_train_examples(os.path.join(folder, recipe.train_file))
    assert plan.train_step == int(examples / 4 * recipe.settings["num_train_epochs"]) > 0
    assert f"--learning_rate={recipe.settings['learning_rate']}" in plan.argv
    assert "--train_batch_size=4" in plan.argv


def test_a_hugging_face_model_is_converted_once_into_the_job(klue_job, tmp_path):
  _, _, model_dir = klue_job
  config = albert_tf.AlbertConfig.from_json_file(str(model_dir / "albert_config.json"))
  pretrainer = albert_tf.AlbertPretrainer(config)
  pretrainer(padded_batch(config.vocab_size))
  checkpoint_lib.restore_checkpoint(pretrainer, str(model_dir))
  huggingface.export_to_hf(pretrainer, str(tmp_path / "hf"))
  job = tmp_path / "job"
  converted = job / benchmark.MODEL_FOLDER
  planned = benchmark.prepare_model(str(tmp_path / "hf"), None, SP8K_MODEL, str(job), convert=False)
  assert not job.exists()  # the paths are known before any work
  model = benchmark.prepare_model(str(tmp_path / "hf"), None, SP8K_MODEL, str(job))
  assert planned == model == benchmark.Model(str(converted), str(converted / "albert_config.json"),
                                             str(converted / "spiece.model"))
  assert not benchmark.needs_conversion(model.init_checkpoint)
  written = (converted / "model.ckpt.index").stat().st_mtime_ns
  assert benchmark.prepare_model(str(tmp_path / "hf"), None, SP8K_MODEL, str(job)) == model
  assert (converted / "model.ckpt.index").stat().st_mtime_ns == written  # converted once
  restored = albert_tf.AlbertPretrainer(config)
  checkpoint_lib.restore_checkpoint(restored, model.init_checkpoint)
  for expected, actual in zip(pretrainer.encoder.variables, restored.encoder.variables):
    assert (expected.numpy() == actual.numpy()).all(), expected.name


def test_tasks_without_files_are_skipped_each_with_a_line_and_a_named_one_is_an_error(klue_job, tmp_path):
  folder, data, model_dir = klue_job
  empty = tmp_path / "empty"
  empty.mkdir()
  result = run_tool("run_klue", *job_flags(empty, model_dir, tmp_path / "job"))
  assert result.returncode == 2
  lines = result.stderr.strip().splitlines()
  assert lines[:-1] == [f"Skipping {recipe.name}: no {recipe.missing_files(str(empty))}." for recipe in recipes.RECIPES]
  assert lines[-1].startswith(f"error: --data_dir {empty} holds no task's files")
  # A task named in --tasks without its files: an error before any work.
  partial = tmp_path / "partial"
  shutil.copytree(data / "klue-nli-v1.1", partial / "klue-nli-v1.1")
  result = run_tool("run_klue", *job_flags(partial, model_dir, tmp_path / "job"), "--tasks=nli,wos")
  assert result.returncode == 2
  assert result.stderr.strip().splitlines() == [
      f"error: --tasks names wos, whose files are not there: {recipes.RECIPES_BY_NAME['wos'].missing_files(str(partial))}."]
  assert not (tmp_path / "job").exists()


@pytest.mark.parametrize("extra, message", [
    (("--tasks=klue-nli",), "--tasks: unknown task 'klue-nli'; the tasks are ynat, sts, nli, ner, re, dp, mrc, wos, "
                            "korquad1."),
    (("--restart=nil",), "--restart: unknown task 'nil'"),
    (("--seeds=0",), "--seeds=0 must be 1 or more."),
    (("--tasks=ynat", "--restart=nli"), "--restart names nli, which --tasks leaves out"),
    (("--set=learning_rate",), "--set learning_rate: write name=value (every task) or task.name=value"),
    (("--set=nl.learning_rate=1e-3",), "--set nl.learning_rate=1e-3: write name=value"),
    (("--set=nli.num_train_epochs=two",), "--set nli.num_train_epochs=two: a number is needed."),
    (("--set=nli.learning_rat=1e-3",), "Unknown command line flag 'learning_rat'"),
    (("--set=wos.max_words=64",), "Unknown command line flag 'max_words'"),
])
def test_bad_options_are_one_error_line_before_any_work(klue_job, tmp_path, extra, message):
  _, data, model_dir = klue_job
  result = run_tool("run_klue", *job_flags(data, model_dir, tmp_path / "job"), *extra)
  assert result.returncode == 2, result.stderr[-2000:]
  assert result.stderr.strip().splitlines()[-1].startswith("error: ")
  assert message in result.stderr
  assert not (tmp_path / "job").exists()


def test_a_reading_task_without_the_korean_analyzer_is_refused_before_any_run(klue_job, tmp_path, monkeypatch):
  # MRC cuts its answers' particles with Kiwi by default: without the korean extra its tool would stop only when
  # its turn came, after the tasks before it.
  _, data, model_dir = klue_job
  monkeypatch.setitem(sys.modules, "kiwipiepy", None)
  result = run_tool("run_klue", *job_flags(data, model_dir, tmp_path / "job"))
  assert result.returncode == 2
  assert result.stderr.strip().splitlines()[-1].startswith("error: --trim_particles (--notrim_particles answers "
                                                           "with the model's spans) needs the Korean analyzers")
  assert not (tmp_path / "job").exists()


def test_an_output_dir_of_other_files_and_a_missing_model_are_refused(klue_job, tmp_path):
  _, data, model_dir = klue_job
  occupied = tmp_path / "occupied"
  occupied.mkdir()
  (occupied / "notes.txt").write_text("mine", encoding="utf-8")
  result = run_tool("run_klue", *job_flags(data, model_dir, occupied))
  assert result.returncode == 2
  assert result.stderr.strip().splitlines()[-1] == (
      f"error: --output_dir {occupied} holds notes.txt, which no KLUE job writes: choose a new folder or one of an "
      "earlier run_klue job (nothing was written).")
  assert os.listdir(occupied) == ["notes.txt"]
  result = run_tool("run_klue", *job_flags(data, tmp_path / "no_model", tmp_path / "job"))
  assert result.returncode == 2 and "no_model" in result.stderr.strip().splitlines()[-1]
  assert not (tmp_path / "job").exists()
