"""The benchmarks that `run_squad_v1` and `run_squad_v2` read with `--task_name`: how each writes its questions
(`examples.QuestionLayout`) and how its official evaluation scores the answers, which picks the best checkpoint.

A benchmark of SQuAD's layout (paragraphs of contexts and questions, answers at character offsets) is one entry
of `TASKS`; one of another layout (KorQuAD 2.x's HTML pages, in a folder of shards) brings a reader of its own
(`examples.ExampleReader`) that makes the same examples, and its scoring function here.
"""

import dataclasses
from typing import Callable, Dict, Optional

from albert_tf.errors import DataError, OptionError
from albert_tf.tasks.squad import korean_scoring
from albert_tf.tasks.squad import korquad2
from albert_tf.tasks.squad import scoring
from albert_tf.tasks.squad.examples import SQUAD_LAYOUT, SQUAD_READER, ExampleReader, QuestionLayout
from albert_tf.tasks.squad.predictions import SquadPredictions

DEFAULT_TASK = "squad"


@dataclasses.dataclass(frozen=True)
class ReadingTask:
  """A reading-comprehension benchmark: how its files are read and scored.

  Attributes:
    name: its `--task_name`.
    version: the tool and head: 1 (`run_squad_v1`, every question answerable) or 2 (`run_squad_v2`, some
      questions without an answer).
    run_name: what the run's task.json records (a rerun of another task in the directory is refused).
    description: what it is, for the flag's help.
    layout: how its questions are written and checked (SQuAD's layout).
    primary_metric: the metric that keeps `model.ckpt-best` (and, v2, that the no-answer threshold maximises).
    scores: (dataset, predictions) -> its official metrics.
    question_scores: v2: (dataset, answers) -> (answerable, the primary metric of each question), for the
      no-answer threshold; None for v1.
    reader: how `--train_file` and `--predict_file` become examples (SQuAD's: one JSON file of SQuAD's layout).
    percent: its scores are in percent, as SQuAD's official scripts print them; else fractions (0 to 1), as
      every Korean benchmark's.
    trims_particles: the default of `--trim_particles`: Korean answers, whose gold answers leave out the particles
      that a predicted span often keeps (docs/benchmarks.md#answers-without-trailing-particles).
  """

  name: str
  version: int
  run_name: str
  description: str
  layout: QuestionLayout
  primary_metric: str
  scores: Callable[[list, SquadPredictions], Dict[str, float]]
  question_scores: Optional[scoring.QuestionScores] = None
  reader: ExampleReader = SQUAD_READER
  percent: bool = False
  trims_particles: bool = False


def _check_klue_mrc_question(where: str, question: dict):
  question_type = question.get("question_type")
  if type(question_type) is not int or question_type not in korean_scoring.KLUE_MRC_QUESTION_TYPES:
    raise DataError(f'{where} has "question_type": {question_type!r}; KLUE-MRC\'s are 1 (paraphrase), '
                    "2 (multi-sentence) and 3 (unanswerable).")


TASKS = {
    (1, "squad"): ReadingTask(
        "squad", 1, "squad_v1", "SQuAD v1.1 (the official evaluate-v1.1.py)", SQUAD_LAYOUT, "f1",
        lambda dataset, predictions: scoring.squad_v1_scores(dataset, predictions.answers), percent=True),
    (2, "squad"): ReadingTask(
        "squad", 2, "squad_v2", "SQuAD 2.0 (the official evaluate-v2.0.py, Google's two passes)", SQUAD_LAYOUT,
        "f1", scoring.squad_v2_set_scores, scoring.squad_v2_f1_per_question, percent=True),
    (1, "korquad1"): ReadingTask(
        "korquad1", 1, "korquad1", "KorQuAD 1.0 (its evaluate-v1.0.py: character F1)",
        QuestionLayout(answers_must_match=True), "f1",
        lambda dataset, predictions: korean_scoring.korquad_v1_scores(dataset, predictions.answers),
        trims_particles=True),
    (1, "korquad2"): ReadingTask(
        "korquad2", 1, "korquad2", "KorQuAD 2.0 and 2.1 (HTML pages in a file or a folder of shards, scored "
        "as its evaluation script: tags stripped, character F1)", QuestionLayout(answers_must_match=True), "f1",
        lambda dataset, predictions: korean_scoring.korquad2_scores(dataset, predictions.answers),
        reader=korquad2.READER, trims_particles=True),
    (2, "klue-mrc"): ReadingTask(
        "klue-mrc", 2, "klue-mrc", "KLUE-MRC (KLUE's exact match and character ROUGE-W)",
        QuestionLayout(id_field="guid", answers_must_match=True, trains_on_first_answer=True,
                       requires_is_impossible=True, other_answer_fields=("plausible_answers",),
                       check_question=_check_klue_mrc_question),
        "rouge_w", korean_scoring.klue_mrc_set_scores, korean_scoring.klue_mrc_rouge_w_per_question,
        trims_particles=True),
}


def task_names(version: int):
  """The `--task_name` choices of run_squad_v<version>, the default first."""
  return [name for task_version, name in TASKS if task_version == version]


def reading_task(name: str, version: int) -> ReadingTask:
  """The benchmark `name` of run_squad_v<version>.

  Raises:
    OptionError: no such benchmark for that tool.
  """
  if (version, name) not in TASKS:
    other = [f"run_squad_v{task_version}" for task_version, task_name in TASKS if task_name == name]
    where = f"; it is {other[0]}'s" if other else ""
    raise OptionError(f"--task_name={name}: run_squad_v{version} takes {', '.join(task_names(version))}{where}.")
  return TASKS[version, name]


def task_of_run(run_name: Optional[str]) -> Optional[ReadingTask]:
  """The benchmark a run's task.json names (its `run_name`), or None when it is no reading run."""
  return next((task for task in TASKS.values() if task.run_name == run_name), None)
