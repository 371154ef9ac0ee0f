"""A KLUE job: every task of `recipes` fine-tuned and scored with several seeds, resumably, into one table.

The job's folder holds a folder per task, `recipe.json` (the command line its runs share) and a run per seed
(`seed-1`, ...: the task tool's own output_dir, with `log.txt`, what the tool printed); `finished.json` marks a run
done. Each run is its task's tool, run in this process as its command would run; the tool resumes a run that was
interrupted (after kill -9 too) from its last checkpoint. The table (`results`) reads each run's
`eval_results.txt`, which at the end of a run holds the scores of its best checkpoint.

Everything a run needs is checked before the first one starts: the tasks' files (read by their readers, which
count the training examples), the model, the overrides, and that a task's recipe is the one its earlier runs in
the folder had.
"""

import dataclasses
import gc
import io
import logging
import math
import os
import re
import sys
import time
from typing import Dict, List, Optional, Sequence

from absl import logging as absl_logging
import tf_keras

from albert_tf import cli
from albert_tf import files
from albert_tf.errors import OptionError, TaskError
from albert_tf.interop import conversion
from albert_tf.interop import huggingface
from albert_tf.modeling import checkpoints as checkpoint_lib
from albert_tf.modeling.config import CONFIG_FILE
from albert_tf.interop.source_tensors import SPM_FILE
from albert_tf.tasks.klue import recipes as recipes_lib
from albert_tf.tasks.klue import results
from albert_tf.training import run_directory

RECIPE_FILE = "recipe.json"
LOG_FILE = "log.txt"
EXPORT_FILE = "export.json"
MODEL_FOLDER = "model"  # a Hugging Face or Google model, converted once for every run
_PROGRESS = re.compile(r"^step (\d+)/(\d+) ")


@dataclasses.dataclass(frozen=True)
class Model:
  """The pretrained model every run starts from."""

  init_checkpoint: str
  albert_config_file: str
  spm_model_file: str

  def flags(self) -> List[str]:
    return [f"--init_checkpoint={self.init_checkpoint}", f"--albert_config_file={self.albert_config_file}",
            f"--spm_model_file={self.spm_model_file}"]


def needs_conversion(init_checkpoint: str) -> bool:
  """Whether `init_checkpoint` is a Hugging Face folder or one of Google's TF1 checkpoints, not ours."""
  if files.is_folder(init_checkpoint) and huggingface.is_hf_folder(init_checkpoint):
    return True
  prefix = checkpoint_lib.resolve_checkpoint_path(init_checkpoint)
  return checkpoint_lib.OBJECT_GRAPH_KEY not in checkpoint_lib.CheckpointReader(prefix).get_variable_to_shape_map()


def prepare_model(init_checkpoint: str, albert_config_file: Optional[str], spm_model_file: Optional[str],
                  output_dir: str, convert: bool = True) -> Model:
  """The model's checkpoint, config and SentencePiece model, each the one given or the one beside the checkpoint
  (`albert_config.json`, `spiece.model`); a Hugging Face folder or Google's checkpoint is converted once, into
  the job's `model` folder, which later invocations of the job reuse (with `convert` False, only its paths)."""
  if not needs_conversion(init_checkpoint):
    folder = init_checkpoint if files.is_folder(init_checkpoint) else os.path.dirname(init_checkpoint)
    config = files.require_file(albert_config_file or os.path.join(folder, CONFIG_FILE), "ALBERT config file",
                                "pass --albert_config_file")
    spm = files.require_file(spm_model_file or os.path.join(folder, SPM_FILE), "SentencePiece model",
                             "pass --spm_model_file")
    return Model(init_checkpoint, config, spm)
  converted = os.path.join(output_dir, MODEL_FOLDER)
  if convert and not files.file_exists(os.path.join(converted, conversion.CHECKPOINT_MARKER)):
    source = conversion.read_checkpoint(init_checkpoint, albert_config_file, spm_model_file)
    if not source.spm_model_file:
      raise OptionError(f"No SentencePiece model found beside {init_checkpoint}: pass --spm_model_file.")
    conversion.write_conversion(source, converted)
    print(f"Converted {init_checkpoint} into {converted}", file=sys.stderr)
  return Model(converted, os.path.join(converted, CONFIG_FILE), os.path.join(converted, SPM_FILE))


@dataclasses.dataclass
class TaskPlan:
  """A task as this job runs it: its recipe, the tool's command line shared by its seeds, and its steps."""

  recipe: recipes_lib.TaskRecipe
  task_dir: str
  argv: List[str]
  train_step: int
  record: Dict  # recipe.json: what makes two runs of the task comparable

  def run_dir(self, seed: int) -> str:
    return results.run_dir(self.task_dir, seed)

  def is_finished(self, seed: int) -> bool:
    return results.is_finished(self.task_dir, seed)


def _number(task: str, name: str, value) -> float:
  try:
    number = float(value)
  except ValueError:
    raise OptionError(f"--set {task}.{name}={value}: a number is needed.") from None
  if not math.isfinite(number) or number < 0:
    raise OptionError(f"--set {task}.{name}={value}: a finite number, zero or more, is needed.")
  return number


def parse_overrides(assignments: Sequence[str], task_names: Sequence[str]) -> Dict[Optional[str], Dict[str, str]]:
  """`--set` values: "task.name=value" for one task, "name=value" for every task; by task (None: every task)."""
  overrides: Dict[Optional[str], Dict[str, str]] = {}
  for assignment in assignments:
    key, equals, value = assignment.partition("=")
    task, dot, name = key.rpartition(".")
    if not equals or not name or (dot and task not in task_names):
      raise OptionError(f"--set {assignment}: write name=value (every task) or task.name=value, the task one of "
                        f"{', '.join(task_names)}.")
    overrides.setdefault(task or None, {})[name.lstrip("-")] = value
  return overrides


def plan_task(recipe: recipes_lib.TaskRecipe, folder: str, output_dir: str, model: Model,
              overrides: Dict[str, str]) -> TaskPlan:
  """The task's command line and steps; the train file is read (and so checked) by the task's reader."""
  settings = {**recipe.settings, **overrides}
  epochs = _number(recipe.name, "num_train_epochs", settings.pop("num_train_epochs"))
  warmup = _number(recipe.name, "warmup_proportion", settings.pop("warmup_proportion"))
  batch_size = int(_number(recipe.name, "train_batch_size", settings["train_batch_size"]))
  if epochs <= 0 or warmup >= 1 or batch_size <= 0:
    raise OptionError(f"{recipe.name}: num_train_epochs and train_batch_size must be positive, warmup_proportion "
                      f"below 1 (got {epochs}, {batch_size}, {warmup}).")
  num_examples = recipe.count_train_examples(os.path.join(folder, recipe.train_file))
  # As the reading tools count their steps from the questions.
  train_step = int(num_examples / batch_size * epochs)
  if train_step < 1:
    raise TaskError(f"{recipe.name}: {num_examples} training examples / batch {batch_size} × {epochs} epochs make "
                    "no training step.")
  if recipe.tool.steps_in_epochs:
    settings.update(num_train_epochs=epochs, warmup_proportion=warmup)
    if "eval_batch_size" in settings:  # the reading tools score with their prediction batch
      settings["predict_batch_size"] = settings.pop("eval_batch_size")
  else:
    settings.update(train_step=train_step, warmup_step=int(train_step * warmup))
  # A checkpoint, scored on the dev split, once an epoch (KLUE-baseline validates once an epoch), unless set.
  checkpoint_steps = int(_number(recipe.name, "save_checkpoints_steps",
                                 settings.get("save_checkpoints_steps", max(1, int(train_step / epochs)))))
  settings["save_checkpoints_steps"] = checkpoint_steps
  settings.setdefault("iterations_per_loop", min(100, checkpoint_steps))
  settings.setdefault("keep_checkpoint_max", 1)  # the last (to resume) and model.ckpt-best are what a run needs
  argv = [*recipe.tool_flags, *recipe.data_flags(folder, recipe.train_file, recipe.dev_file), *model.flags(),
          *(f"--{name}={value}" for name, value in sorted(settings.items()))]
  task_dir = os.path.join(output_dir, recipe.name)
  cli.check_command_line(recipe.tool.define_flags, [recipe.tool.name, *argv, f"--output_dir={task_dir}"],
                         recipe.tool.preflight)
  # The files' sizes too: other data under the same names (another KLUE version) makes other runs.
  sizes = {name: files.file_size(os.path.join(folder, name))
           for name in (recipe.train_file, recipe.dev_file, *recipe.other_files)}
  return TaskPlan(recipe, task_dir, argv, train_step, {"tool": recipe.tool.name, "flags": argv, "file_sizes": sizes})


def check_recipe(plan: TaskPlan, restart: bool) -> None:
  """Refuses a task whose earlier runs in the job's folder had another recipe, unless asked to start it again."""
  path = os.path.join(plan.task_dir, RECIPE_FILE)
  if restart or not files.exists(path):
    return
  before = files.read_json(path, f"the {RECIPE_FILE} of a KLUE task")
  if before == plan.record:
    return
  old, new = before.get("flags", []), plan.record["flags"]
  changes = [f"{flag} → (none)" for flag in old if flag not in new] + [
      f"(none) → {flag}" for flag in new if flag not in old]
  old_sizes = before.get("file_sizes", {})
  changes += [f"{name}: {old_sizes.get(name)} → {size} bytes" for name, size in plan.record["file_sizes"].items()
              if old_sizes.get(name) != size]
  raise OptionError(f"{plan.recipe.name}'s recipe changed since its runs in {plan.task_dir} "
                    f"({'; '.join(changes[:6]) or before.get('tool')}): pass --restart={plan.recipe.name} to "
                    "start the task again (its runs are removed), or choose another --output_dir.")


class JobProgress:
  """One line over the whole job: the run, its step, the job's steps and its ETA (from this invocation's pace)."""

  def __init__(self, plans: Sequence[TaskPlan], seeds: Sequence[int]):
    self.runs = [(plan, seed) for plan in plans for seed in seeds]
    self.total_steps = sum(plan.train_step for plan, _ in self.runs)
    self.done_steps = sum(plan.train_step for plan, seed in self.runs if plan.is_finished(seed))
    self.start_time = time.time()
    self.steps_here = 0  # steps trained by this invocation, the pace of the ETA
    self.run = None  # the run going on, and its step
    self.run_step = 0
    self.stream = sys.stderr  # the job's, not the tool's (its output goes to its log)

  def start(self, plan: TaskPlan, seed: int):
    self.run = (plan, seed)
    self.run_step = run_directory.checkpointed_step(plan.run_dir(seed))  # a resumed run goes on from there
    state = f"resuming at step {self.run_step}" if self.run_step else "starting"
    self.show(f"{plan.recipe.name} seed {seed}: {state}")

  def step(self, step: int):
    plan, seed = self.run
    self.steps_here += max(step - self.run_step, 0)
    self.run_step = step
    self.show(f"{plan.recipe.name} seed {seed}: step {step}/{plan.train_step}")

  def finish(self, summary: str):
    plan, seed = self.run
    self.done_steps += plan.train_step
    self.run_step = 0
    self.show(f"{plan.recipe.name} seed {seed}: done, {summary}")
    self.run = None

  def eta(self) -> str:
    if not self.steps_here:
      return "ETA --:--:--"
    remaining = max(self.total_steps - self.done_steps - self.run_step, 0)
    seconds = int((time.time() - self.start_time) / self.steps_here * remaining)
    return f"ETA {seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"

  def show(self, text: str):
    index = self.runs.index(self.run) + 1 if self.run else len(self.runs)
    print(f"klue run {index}/{len(self.runs)} | {text} | job step {self.done_steps + self.run_step:,}/"
          f"{self.total_steps:,} | {self.eta()}", file=self.stream, flush=True)


class _ToolOutput(io.TextIOBase):
  """What a tool prints, kept for its log; its progress lines move the job's progress line."""

  def __init__(self, progress: Optional[JobProgress]):
    self.text = io.StringIO()
    self.progress = progress
    self._line = ""

  def writable(self):
    return True

  def write(self, text):
    self.text.write(text)
    self._line += text
    *lines, self._line = self._line.split("\n")
    for line in lines:
      match = _PROGRESS.match(line)
      if match and self.progress:
        self.progress.step(int(match.group(1)))
    return len(text)

  def error_line(self) -> str:
    lines = [line for line in self.text.getvalue().splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("error: ")]
    return errors[-1][len("error: "):] if errors else " / ".join(lines[-3:])


def run_tool(plan: TaskPlan, seed: int, extra: Sequence[str], progress: Optional[JobProgress]) -> None:
  """Runs the task's tool for `seed` in this process; its output goes to the run's log. Raises a TaskError naming
  the task, the seed and the tool's message when the tool fails."""
  recipe, run_dir = plan.recipe, plan.run_dir(seed)
  argv = [recipe.tool.name, *plan.argv, f"--output_dir={run_dir}", f"--random_seed={seed}", *extra]
  output = _ToolOutput(progress)
  # Python's loggers (absl's, TensorFlow's warnings) hold the stream they were given: theirs go to the log too.
  handlers = [handler for logger in (logging.getLogger(), logging.getLogger("tensorflow"))
              for handler in logger.handlers if isinstance(handler, logging.StreamHandler)]
  handlers.append(absl_logging.get_absl_handler().python_handler)
  streams, stderr = [handler.stream for handler in handlers], sys.stderr
  sys.stderr = output
  for handler in handlers:
    handler.stream = output
  try:
    status = cli.run_command_in_process(recipe.tool.define_flags, recipe.tool.main, argv)
  finally:
    tf_keras.backend.clear_session()  # the next run builds its own model
    gc.collect()  # what the run's objects say as they go (TensorFlow's checkpoint warnings) goes to its log
    sys.stderr = stderr
    for handler, stream in zip(handlers, streams):
      handler.stream = stream
    log_file = os.path.join(run_dir, LOG_FILE)
    if files.is_folder(run_dir):
      previous = files.read_text(log_file) if files.exists(log_file) else ""
      files.write_atomically(log_file, previous + output.text.getvalue())
  if status == 130:  # Ctrl-C or SIGTERM inside the tool: the job stops as interrupted, as the tool did
    raise KeyboardInterrupt
  if status:
    raise TaskError(f"{recipe.name} seed {seed} ({recipe.tool.name} in {run_dir}): {output.error_line()}")


def run_seed(plan: TaskPlan, seed: int, progress: JobProgress) -> None:
  """Fine-tunes (or resumes) the task with `seed`; the run ends with its best checkpoint's scores in
  `eval_results.txt` and is marked finished."""
  run_dir = plan.run_dir(seed)
  progress.start(plan, seed)
  run_tool(plan, seed, [], progress)
  best = run_directory.read_best_info(run_dir)
  if best is None:
    raise TaskError(f"{plan.recipe.name} seed {seed}: the run in {run_dir} kept no best checkpoint.")
  if run_directory.last_evaluated_step(run_dir) != best["global_step"]:
    # A later checkpoint scored last: score the best again, so that eval_results.txt holds what the table says.
    run_tool(plan, seed, ["--do_train=false"], progress)
  scores = run_directory.read_eval_results(run_dir)
  files.write_json(os.path.join(run_dir, results.FINISHED_FILE), {"seed": seed, "global_step": scores["global_step"]})
  summary = ", ".join(f"{column} {scores[name]:.4f}" for name, column in plan.recipe.metrics if name in scores)
  progress.finish(f"{summary} (step {scores['global_step']})")


def export_best(plan: TaskPlan, seeds: Sequence[int], export_dir: str) -> str:
  """Exports the best checkpoint of the task's best seed (by its primary metric) to `<export_dir>/<task>` (a new
  version there), unless that seed's is the one exported last."""
  best_seed = results.task_results(plan.recipe, plan.task_dir, seeds)["best_seed"]
  destination = os.path.join(export_dir, plan.recipe.name)
  record_file = os.path.join(plan.task_dir, EXPORT_FILE)
  record = {"seed": best_seed, "export_dir": destination}
  if files.exists(record_file) and files.read_json(record_file, f"a KLUE task's {EXPORT_FILE}") == record:
    return destination
  run_tool(plan, best_seed, ["--do_train=false", f"--export_dir={destination}"], None)
  files.write_json(record_file, record)
  print(f"Exported {plan.recipe.name}'s best checkpoint (seed {best_seed}) to {destination}", file=sys.stderr)
  return destination


def _remove_if_runless(task_dir: str, output_dir: str) -> None:
  """After a failure: the task's folder goes when no run of it left anything (the tool removes a run that failed
  before its first checkpoint), and the job's folder when it holds nothing then."""
  if files.is_folder(task_dir) and {name.rstrip("/") for name in files.list_folder(task_dir)} <= {RECIPE_FILE}:
    files.remove_tree(task_dir)
  if files.is_folder(output_dir) and not files.list_folder(output_dir):
    files.remove_tree(output_dir)


def run_job(plans: Sequence[TaskPlan], seeds: Sequence[int], output_dir: str, restart: Sequence[str],
            export_dir: Optional[str]) -> Dict[str, str]:
  """Runs every task and seed not finished yet, writing the table (of every task with finished runs in
  `output_dir`) after each run; returns the table's paths."""
  progress = JobProgress(plans, seeds)
  # Every task of the job's folder, those of earlier invocations too (a rerun with --tasks keeps their rows).
  tasks = [(recipe, os.path.join(output_dir, recipe.name)) for recipe in recipes_lib.RECIPES]
  for plan in plans:
    if plan.recipe.name in restart and files.exists(plan.task_dir):
      files.remove_tree(plan.task_dir)
      print(f"Restarting {plan.recipe.name}: removed its runs in {plan.task_dir}", file=sys.stderr)
    files.make_folders(plan.task_dir)
    files.write_json(os.path.join(plan.task_dir, RECIPE_FILE), plan.record)
    try:
      for seed in seeds:
        if plan.is_finished(seed):
          print(f"{plan.recipe.name} seed {seed}: finished before, in {plan.run_dir(seed)}", file=sys.stderr)
          continue
        run_seed(plan, seed, progress)
        results.write_results(output_dir, tasks, seeds)
    except BaseException:
      _remove_if_runless(plan.task_dir, output_dir)
      raise
    if export_dir:
      export_best(plan, seeds, export_dir)
  return results.write_results(output_dir, tasks, seeds)
