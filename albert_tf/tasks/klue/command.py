"""Fine-tunes and scores a pretrained ALBERT on KLUE's eight tasks (and KorQuAD 1.0), each with several seeds,
and writes one table: klue_results.md, .json and .csv.

  python tools/run_klue.py --data_dir=klue_benchmark --output_dir=runs/klue --init_checkpoint=albert_ko \\
      --seeds=3

  # Two tasks, one recipe value changed for NLI and one for every task
  python tools/run_klue.py --data_dir=klue_benchmark --output_dir=runs/klue --init_checkpoint=albert_ko \\
      --tasks=nli,sts --set=nli.learning_rate=3e-5 --set=mixed_precision=bfloat16

--data_dir is KLUE's download (KLUE-benchmark/KLUE's klue_benchmark/): ynat-v1.1/, klue-sts-v1.1/,
klue-nli-v1.1/, klue-ner-v1.1/, klue-re-v1.1/, klue-dp-v1.1/, klue-mrc-v1.1/, wos-v1.1/, each with its
<folder>_train and _dev files under their official names (a task's files may also lie in --data_dir itself);
KorQuAD 1.0 runs when KorQuAD_v1.0_{train,dev}.json are there (or in KorQuAD_v1.0/). A task whose files are not
there is skipped with a line saying so; one named in --tasks is an error before any run. KLUE's test labels are
not public: the scores are the dev files'.
--init_checkpoint is an albert-tf checkpoint (its folder or prefix; albert_config.json and spiece.model beside it
unless --albert_config_file and --spm_model_file say otherwise), a Hugging Face folder or one of Google's TF1
checkpoints (both converted once into <output_dir>/model).

Each task runs its tool (run_classifier, run_token_classification, run_dependency_parsing, run_squad_v2,
run_dialogue_state_tracking, run_squad_v1) with the recipe KLUE-baseline uses for base models
(albert_tf/tasks/klue/recipes.py gives each value and its source), seeds 1 to --seeds, into
<output_dir>/<task>/seed-<n>; a checkpoint is scored on the dev file once an epoch and the best kept. --set
overrides a recipe value (num_train_epochs, warmup_proportion, or any flag of the task's tool) for one task
(task.name=value) or every task (name=value). Rerunning the command goes on where the job stopped: a finished task
and seed is not run again, one interrupted (kill -9 too) resumes from its last checkpoint, and more --seeds add
runs. A task whose recipe changed is refused unless --restart names it. --export_dir exports each task's best
checkpoint (its best seed) to <export_dir>/<task>. Every path may be in a bucket (gs://...).
"""

import sys

from absl import flags

from albert_tf import cli
from albert_tf import files
from albert_tf.errors import InputFileError, OptionError
from albert_tf.tasks.klue import benchmark
from albert_tf.tasks.klue import recipes as recipes_lib
from albert_tf.tasks.klue import results

FLAGS = flags.FLAGS


def define_flags():
  flags.DEFINE_string("data_dir", None, "KLUE's download: the folder of ynat-v1.1/, klue-sts-v1.1/, ... (local or "
                      "gs://...); KorQuAD_v1.0_{train,dev}.json there too for KorQuAD 1.0.")
  flags.DEFINE_string("output_dir", None, "The job's folder: a folder per task, a run per seed, the table.")
  flags.DEFINE_string("init_checkpoint", None, "The pretrained model: an albert-tf checkpoint (folder or prefix), "
                      "a Hugging Face folder, or Google's TF1 checkpoint.")
  flags.DEFINE_string("albert_config_file", None, "The model's albert_config.json (default: beside the "
                      "checkpoint; a Hugging Face folder has its config.json).")
  flags.DEFINE_string("spm_model_file", None, "The model's SentencePiece model (default: beside the checkpoint).")
  flags.DEFINE_integer("seeds", 3, "Runs per task, with seeds 1 to this (the tools' --random_seed).")
  flags.DEFINE_list("tasks", None, f"The tasks to run, of {', '.join(recipes_lib.RECIPES_BY_NAME)} (default: every "
                    "one whose files are in --data_dir).")
  flags.DEFINE_multi_string("set", [], "A recipe value: task.name=value for one task, name=value for every task "
                            "(num_train_epochs, warmup_proportion, or a flag of the task's tool).")
  flags.DEFINE_list("restart", [], "Tasks to start again, their runs removed: a task whose recipe changed is "
                    "refused without it.")
  flags.DEFINE_string("export_dir", None, "Export each task's best checkpoint as a SavedModel to "
                      "<export_dir>/<task>.")
  flags.mark_flags_as_required(["data_dir", "output_dir", "init_checkpoint"])


def _check_output_dir(output_dir: str) -> None:
  """A new folder, or a KLUE job's (its tasks' folders, the converted model, the table): nothing else is taken."""
  files.check_destination(output_dir, "--output_dir")
  if not files.is_folder(output_dir):
    return
  own = {*recipes_lib.RECIPES_BY_NAME, benchmark.MODEL_FOLDER,
         *(f"{results.RESULTS_NAME}.{suffix}" for suffix in ("md", "json", "csv"))}
  other = sorted(name.rstrip("/") for name in files.list_folder(output_dir) if name.rstrip("/") not in own)
  if other:
    raise OptionError(f"--output_dir {output_dir} holds {other[0]}, which no KLUE job writes: choose a new folder "
                      "or one of an earlier run_klue job (nothing was written).")


def main(argv):
  del argv
  names = tuple(recipes_lib.RECIPES_BY_NAME)
  chosen = FLAGS.tasks or names
  for flag, values in (("--tasks", chosen), ("--restart", FLAGS.restart)):
    unknown = [name for name in values if name not in names]
    if unknown:
      raise OptionError(f"{flag}: unknown task {unknown[0]!r}; the tasks are {', '.join(names)}.")
  idle = [name for name in FLAGS.restart if name not in chosen]
  if idle:
    raise OptionError(f"--restart names {idle[0]}, which --tasks leaves out: nothing would start it again.")
  if FLAGS.seeds < 1:
    raise OptionError(f"--seeds={FLAGS.seeds} must be 1 or more.")
  if not files.is_folder(FLAGS.data_dir):
    raise InputFileError(f"--data_dir {FLAGS.data_dir} is not a folder: it is KLUE's download, a folder per task.")
  _check_output_dir(FLAGS.output_dir)
  overrides = benchmark.parse_overrides(FLAGS.set, names)
  found = []  # (recipe, the folder of its files)
  for recipe in recipes_lib.RECIPES:
    if recipe.name not in chosen:
      continue
    folder = recipe.find_files(FLAGS.data_dir)
    if folder is None and FLAGS.tasks:
      raise InputFileError(f"--tasks names {recipe.name}, whose files are not there: "
                           f"{recipe.missing_files(FLAGS.data_dir)}.")
    if folder is None:
      print(f"Skipping {recipe.name}: no {recipe.missing_files(FLAGS.data_dir)}.", file=sys.stderr)
    else:
      found.append((recipe, folder))
  if not found:
    raise InputFileError(f"--data_dir {FLAGS.data_dir} holds no task's files (KLUE's download: ynat-v1.1/, "
                         "klue-sts-v1.1/, ...).")
  model = benchmark.prepare_model(FLAGS.init_checkpoint, FLAGS.albert_config_file, FLAGS.spm_model_file,
                                  FLAGS.output_dir, convert=False)
  plans = [benchmark.plan_task(recipe, folder, FLAGS.output_dir, model,
                               {**overrides.get(None, {}), **overrides.get(recipe.name, {})})
           for recipe, folder in found]
  for plan in plans:
    benchmark.check_recipe(plan, plan.recipe.name in FLAGS.restart)
  if FLAGS.export_dir:
    files.check_destination(FLAGS.export_dir, "--export_dir")
  benchmark.prepare_model(FLAGS.init_checkpoint, FLAGS.albert_config_file, FLAGS.spm_model_file, FLAGS.output_dir)
  seeds = list(range(1, FLAGS.seeds + 1))
  paths = benchmark.run_job(plans, seeds, FLAGS.output_dir, FLAGS.restart, FLAGS.export_dir)
  print("\n".join(results.table_rows(paths)))
  print(f"Wrote {', '.join(paths.values())}", file=sys.stderr)


def run():
  """The `albert-run-klue` command."""
  define_flags()
  cli.run(main)
