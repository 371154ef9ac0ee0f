"""KLUE's eight tasks (and KorQuAD 1.0) as `run_klue` runs them: each task's tool, files, official metrics and
fine-tuning recipe.

The recipes are KLUE-baseline's for its base-size models (klue/bert-base, klue/roberta-base): `run_all.sh` of
KLUE-benchmark/KLUE-baseline at 8a03c94 (2021-09-01), with the defaults of its `lightning_base.py` (learning
rate 5e-5, 4 epochs, no warmup) and its data modules (train batch 32, eval batch 64) where the script leaves a
value out. Its 510-piece inputs (RoBERTa's 512 less two special tokens) are ALBERT's 512 here. KorQuAD 1.0 is
not a KLUE task: its recipe is the ALBERT paper's SQuAD v1.1 row (Lan et al. 2019, the fine-tuning
hyperparameters of its appendix: learning rate 5e-5, batch 48, 3,649 steps of which 365 warm up, about two epochs,
384 pieces). Every value can be overridden per task (`run_klue --set`).
"""

import dataclasses
import functools
import os
from typing import Callable, Dict, Optional, Tuple

from albert_tf import files
from albert_tf.tasks.classification import command as classification_command
from albert_tf.tasks.dependency_parsing import command as parsing_command
from albert_tf.tasks.dependency_parsing import data as parsing_data
from albert_tf.tasks.dialogue_state_tracking import command as state_tracking_command
from albert_tf.tasks.dialogue_state_tracking import data as state_tracking_data
from albert_tf.tasks.squad import command as squad_command
from albert_tf.tasks.squad import examples as squad_examples
from albert_tf.tasks.squad import reading_tasks
from albert_tf.tasks.token_classification import command as token_command
from albert_tf.tasks.token_classification import data as token_data


@dataclasses.dataclass(frozen=True)
class Tool:
  """A fine-tuning command of a task package: its flags, its main, and how it is told the number of steps.

  `steps_in_epochs`: the tool takes --num_train_epochs and --warmup_proportion and counts the steps itself (the
  reading tools, from the train file's questions); otherwise `run_klue` gives it --train_step and --warmup_step.
  """

  name: str
  define_flags: Callable[[], None]
  main: Callable
  steps_in_epochs: bool = False
  preflight: Optional[Callable[[], None]] = None  # the command's checks of its parsed flags (`check_command_line`)


CLASSIFIER = Tool("run_classifier", classification_command.define_flags, classification_command.main)
TOKEN_CLASSIFIER = Tool("run_token_classification", token_command.define_flags, token_command.main)
PARSER = Tool("run_dependency_parsing", parsing_command.define_flags, parsing_command.main)
STATE_TRACKER = Tool("run_dialogue_state_tracking", state_tracking_command.define_flags, state_tracking_command.main)
READER_V1 = Tool("run_squad_v1", functools.partial(squad_command.define_flags, 1), squad_command.main_v1,
                 steps_in_epochs=True, preflight=functools.partial(squad_command.preflight, 1))
READER_V2 = Tool("run_squad_v2", functools.partial(squad_command.define_flags, 2), squad_command.main_v2,
                 steps_in_epochs=True, preflight=functools.partial(squad_command.preflight, 2))


def _json_records(path: str) -> int:
  records = files.read_json(path, "a KLUE file")
  return len(records) if isinstance(records, list) else 0


def _questions(task_name: str, version: int) -> Callable[[str], int]:
  task = reading_tasks.reading_task(task_name, version)
  return lambda path: squad_examples.count_questions(path, layout=task.layout, reader=task.reader)


def _user_turns(path: str) -> int:
  ontology = state_tracking_data.read_ontology(os.path.join(os.path.dirname(path), "ontology.json"))
  return len(state_tracking_data.read_dialogues(path, ontology))


@dataclasses.dataclass(frozen=True)
class TaskRecipe:
  """One task of the benchmark.

  Attributes:
    name: the task's name in `--tasks` and in the table (KLUE's short names).
    title: the task as the KLUE paper names it.
    tool: the command that fine-tunes it.
    tool_flags: the tool's flags that name the task (the data flags are added from `files`).
    folder: the task's folder in the official download; its files may also lie in the data root itself.
    train_file, dev_file: the splits' files; `other_files`, what the tool also reads beside them.
    metrics: (name in `eval_results.txt`, column of the table), the official metrics in the KLUE paper's order.
    settings: the recipe: `num_train_epochs`, `warmup_proportion` and the tool's flags.
    count_train_examples: the number of training examples of the train file (steps are epochs of them); it
      reads the file with the task's reader, so bad data fails before any run.
    data_flags: the tool's flags that point at the files, from (folder of the files, train file, dev file).
    primary_metric: the metric that picks the best checkpoint of a run (the tool's) and the best seed of a task.
  """

  name: str
  title: str
  tool: Tool
  tool_flags: Tuple[str, ...]
  folder: str
  train_file: str
  dev_file: str
  metrics: Tuple[Tuple[str, str], ...]
  settings: Dict[str, object]
  count_train_examples: Callable[[str], int]
  data_flags: Callable[[str, str, str], Tuple[str, ...]]
  other_files: Tuple[str, ...] = ()
  primary_metric: Optional[str] = None

  def __post_init__(self):
    if self.primary_metric is None:
      object.__setattr__(self, "primary_metric", self.metrics[0][0])

  def find_files(self, data_root: str) -> Optional[str]:
    """The folder that holds every file of the task: its official folder under `data_root`, or `data_root`
    itself; None when neither holds them all."""
    names = (self.train_file, self.dev_file, *self.other_files)
    for folder in (os.path.join(data_root, self.folder), data_root):
      if all(files.file_exists(os.path.join(folder, name)) for name in names):
        return folder
    return None

  def missing_files(self, data_root: str) -> str:
    """What `find_files` looked for, to say why the task cannot run."""
    names = ", ".join((self.train_file, self.dev_file, *self.other_files))
    return f"{names} in {os.path.join(data_root, self.folder)} or {data_root}"


def _data_dir_flags(folder: str, train_file: str, dev_file: str) -> Tuple[str, ...]:
  del train_file, dev_file  # the tool finds them in the folder by their official names
  return (f"--data_dir={folder}",)


def _reading_flags(folder: str, train_file: str, dev_file: str) -> Tuple[str, ...]:
  # Scored on the dev file: --do_predict with a file that has answers evaluates every checkpoint.
  return (f"--train_file={os.path.join(folder, train_file)}", f"--predict_file={os.path.join(folder, dev_file)}",
          "--do_predict")


def _klue_json(name: str, title: str, prefix: str, metrics, **settings) -> TaskRecipe:
  return TaskRecipe(name, title, CLASSIFIER, (f"--task_name=klue-{name}", "--do_train", "--do_eval"), prefix,
                    f"{prefix}_train.json", f"{prefix}_dev.json", metrics, settings, _json_records, _data_dir_flags,
                    other_files=("relation_list.json",) if name == "re" else ())


def _settings(learning_rate=5e-5, num_train_epochs=4, warmup_proportion=0.0, train_batch_size=32,
              eval_batch_size=64, **tool_flags) -> Dict[str, object]:
  """A recipe: KLUE-baseline's defaults, and what its run_all.sh sets for the task."""
  return dict(learning_rate=learning_rate, num_train_epochs=num_train_epochs, warmup_proportion=warmup_proportion,
              train_batch_size=train_batch_size, eval_batch_size=eval_batch_size, **tool_flags)


RECIPES = (
    _klue_json("ynat", "topic classification (YNAT)", "ynat-v1.1", (("macro_f1", "macro F1"),),
               **_settings(warmup_proportion=0.1, max_seq_length=128)),
    _klue_json("sts", "semantic textual similarity (STS)", "klue-sts-v1.1",
               (("pearson", "Pearson r"), ("binary_f1", "F1")),
               **_settings(warmup_proportion=0.1, max_seq_length=128)),
    _klue_json("nli", "natural language inference (NLI)", "klue-nli-v1.1", (("accuracy", "accuracy"),),
               **_settings(num_train_epochs=5, warmup_proportion=0.1, max_seq_length=128)),
    TaskRecipe("ner", "named entity recognition (NER)", TOKEN_CLASSIFIER, ("--task_name=klue-ner",),
               "klue-ner-v1.1", "klue-ner-v1.1_train.tsv", "klue-ner-v1.1_dev.tsv",
               (("entity_f1", "entity F1"), ("character_f1", "character F1")),
               _settings(num_train_epochs=3, max_seq_length=512),
               lambda path: len(token_data.read_klue_ner(path)), _data_dir_flags),
    _klue_json("re", "relation extraction (RE)", "klue-re-v1.1", (("micro_f1", "micro F1"), ("auprc", "AUPRC")),
               **_settings(num_train_epochs=3, warmup_proportion=0.1, max_seq_length=256)),
    TaskRecipe("dp", "dependency parsing (DP)", PARSER, ("--task_name=klue-dp",), "klue-dp-v1.1",
               "klue-dp-v1.1_train.tsv", "klue-dp-v1.1_dev.tsv", (("uas_macro_f1", "UAS"), ("las_macro_f1", "LAS")),
               _settings(num_train_epochs=10, warmup_proportion=0.1, max_seq_length=256),
               lambda path: len(parsing_data.read_klue_dp(path)), _data_dir_flags, primary_metric="las_macro_f1"),
    TaskRecipe("mrc", "machine reading comprehension (MRC)", READER_V2, ("--task_name=klue-mrc", "--do_train"),
               "klue-mrc-v1.1", "klue-mrc-v1.1_train.json", "klue-mrc-v1.1_dev.json",
               (("exact_match", "EM"), ("rouge_w", "ROUGE-W")),
               _settings(learning_rate=3e-5, num_train_epochs=5, train_batch_size=16, max_seq_length=512,
                         doc_stride=128, max_query_length=64),
               _questions("klue-mrc", 2), _reading_flags, primary_metric="rouge_w"),
    TaskRecipe("wos", "dialogue state tracking (WoS)", STATE_TRACKER, ("--task_name=wos",), "wos-v1.1",
               "wos-v1.1_train.json", "wos-v1.1_dev.json", (("joint_goal_accuracy", "JGA"), ("slot_f1", "slot F1")),
               _settings(learning_rate=3e-5, num_train_epochs=5, warmup_proportion=0.1, train_batch_size=16,
                         eval_batch_size=16, max_seq_length=512),
               _user_turns, _data_dir_flags, other_files=("ontology.json",)),
    TaskRecipe("korquad1", "KorQuAD 1.0 (not a KLUE task)", READER_V1, ("--task_name=korquad1", "--do_train"),
               "KorQuAD_v1.0", "KorQuAD_v1.0_train.json", "KorQuAD_v1.0_dev.json",
               (("exact_match", "EM"), ("f1", "F1")),
               _settings(num_train_epochs=2, warmup_proportion=0.1, train_batch_size=48, eval_batch_size=48,
                         max_seq_length=384, doc_stride=128),
               _questions("korquad1", 1), _reading_flags, primary_metric="f1"),
)

RECIPES_BY_NAME = {recipe.name: recipe for recipe in RECIPES}
