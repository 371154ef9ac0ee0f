"""The KLUE table: per task its official metrics in the KLUE paper's order, the mean ± standard deviation over
the seeds, and each seed's figure, read from that run's own `eval_results.txt`; as Markdown (to read), JSON and
CSV (to compute with). Scores are fractions, as the tools write them.

The standard deviation is the sample's (n - 1), the spread a user compares another run with; one seed has none.
"""

import csv
import io
import json
import os
import statistics
from typing import Dict, List, Optional, Sequence, Tuple

from albert_tf import files
from albert_tf.tasks.klue.recipes import TaskRecipe
from albert_tf.training import run_directory

RESULTS_NAME = "klue_results"
FINISHED_FILE = "finished.json"


def run_dir(task_dir: str, seed: int) -> str:
  """The run of a task with `seed`: the task tool's output_dir."""
  return os.path.join(task_dir, f"seed-{seed}")


def is_finished(task_dir: str, seed: int) -> bool:
  return files.file_exists(os.path.join(run_dir(task_dir, seed), FINISHED_FILE))


def task_results(recipe: TaskRecipe, task_dir: str, seeds: Sequence[int]) -> Optional[Dict]:
  """The task's figures over its finished seeds (None before one is finished)."""
  runs = {seed: run_dir(task_dir, seed) for seed in seeds}
  scores = {seed: run_directory.read_eval_results(runs[seed]) for seed in seeds if is_finished(task_dir, seed)}
  if not scores:
    return None
  metrics = []
  for name, column in recipe.metrics:
    values = {seed: scores[seed][name] for seed in scores}
    metrics.append({"metric": name, "column": column, "mean": statistics.fmean(values.values()),
                    "std": statistics.stdev(values.values()) if len(values) > 1 else None,
                    "seeds": {str(seed): value for seed, value in values.items()}})
  best_seed = max(scores, key=lambda seed: scores[seed][recipe.primary_metric])
  return {"task": recipe.name, "title": recipe.title, "metrics": metrics, "primary_metric": recipe.primary_metric,
          "best_seed": best_seed, "best_checkpoint": os.path.join(runs[best_seed], run_directory.BEST_CHECKPOINT),
          "steps": {str(seed): scores[seed]["global_step"] for seed in scores}}


def _figure(value: Optional[float]) -> str:
  return "" if value is None else f"{value:.4f}"


def _markdown(tables: Sequence[Dict], seeds: Sequence[int]) -> str:
  lines = ["# KLUE results", "",
           "Dev-set scores (fractions) of each task's best checkpoint per seed; mean ± sample standard deviation over "
           "the seeds. Each figure is that run's `eval_results.txt`.", "",
           "| task | metric | mean ± std | " + " | ".join(f"seed {seed}" for seed in seeds) + " |",
           "|---|---|---|" + "---|" * len(seeds)]
  for table in tables:
    for index, metric in enumerate(table["metrics"]):
      spread = f"{_figure(metric['mean'])} ± {_figure(metric['std'])}" if metric["std"] is not None else _figure(
          metric["mean"])
      task = table["task"] if index == 0 else ""
      lines.append(f"| {task} | {metric['column']} | {spread} | " +
                   " | ".join(_figure(metric["seeds"].get(str(seed))) for seed in seeds) + " |")
  lines += ["", "Best checkpoint of each task (its best seed by the metric that picks checkpoints):", ""]
  lines += [f"- {table['task']}: {table['best_checkpoint']} (seed {table['best_seed']}, {table['primary_metric']})"
            for table in tables]
  return "\n".join(lines) + "\n"


def _csv(tables: Sequence[Dict], seeds: Sequence[int]) -> str:
  text = io.StringIO()
  writer = csv.writer(text, lineterminator="\n")
  writer.writerow(["task", "metric", "mean", "std", *(f"seed {seed}" for seed in seeds)])
  for table in tables:
    for metric in table["metrics"]:
      writer.writerow([table["task"], metric["metric"], repr(metric["mean"]),
                       "" if metric["std"] is None else repr(metric["std"]),
                       *(repr(metric["seeds"][str(seed)]) if str(seed) in metric["seeds"] else "" for seed in seeds)])
  return text.getvalue()


def write_results(output_dir: str, tasks: Sequence[Tuple[TaskRecipe, str]], seeds: Sequence[int]) -> Dict[str, str]:
  """Writes `klue_results.md`, `.json` and `.csv` in `output_dir` from the finished runs of `tasks` ((recipe, task
  folder) in the table's order); returns their paths ({} while no run is finished)."""
  tables = [table for table in (task_results(recipe, task_dir, seeds) for recipe, task_dir in tasks) if table]
  if not tables:
    return {}
  contents = {"md": _markdown(tables, seeds), "json": json.dumps({"seeds": list(seeds), "tasks": tables},
                                                                 ensure_ascii=False, indent=1) + "\n",
              "csv": _csv(tables, seeds)}
  paths = {}
  for suffix, text in contents.items():
    paths[suffix] = files.write_atomically(os.path.join(output_dir, f"{RESULTS_NAME}.{suffix}"), text)
  return paths


def table_rows(paths: Dict[str, str]) -> List[str]:
  """The Markdown table's rows, to print at the end of a job."""
  return [line for line in files.read_text(paths["md"]).splitlines() if line.startswith("|")]
