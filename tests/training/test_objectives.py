"""Every objective is what its driver takes: `loop.TrainingObjective` (pretraining's and every fine-tuning one)
and, for fine-tuning, `finetuning.FineTuningObjective`, member by member, each method accepting the protocol's
arguments by position and by name."""

import importlib
import inspect
import itertools
import pkgutil
import re

import numpy as np

from albert_tf.tasks.classification.catalogue import get_task
from albert_tf.tasks.classification.objective import ClassifierObjective
from albert_tf.tasks.dependency_parsing.objective import DependencyParsingObjective
from albert_tf.tasks.dialogue_state_tracking.objective import DialogueStateTrackingObjective
from albert_tf.tasks.race.objective import MultipleChoiceObjective
from albert_tf.tasks.similarity.distillation import DistillationObjective
from albert_tf.tasks.similarity.objective import SentenceSimilarityObjective
from albert_tf.tasks.similarity.parallel_text import ParallelPair
from albert_tf.tasks.squad.objective import SquadObjective, SquadSettings
from albert_tf.tasks.token_classification.objective import TokenClassificationObjective
from albert_tf.text.tokenizer import SentencePieceTokenizer
from albert_tf.training import finetuning, loop, pretraining
import albert_tf.tasks
import albert_tf.training
from albert_tf.training.pretraining_objective import PretrainingObjective
from tests.conftest import SP8K_MODEL, requires_shared


def objective_classes():
  """Every class of `albert_tf.training` and `albert_tf.tasks` named `...Objective`, the protocols aside (what
  members several objectives share are `...Defaults`)."""
  found = set()
  modules = pkgutil.walk_packages(albert_tf.training.__path__, f"{albert_tf.training.__name__}.")
  task_modules = pkgutil.walk_packages(albert_tf.tasks.__path__, f"{albert_tf.tasks.__name__}.")
  for module_info in itertools.chain(modules, task_modules):
    module = importlib.import_module(module_info.name)
    for name, value in vars(module).items():
      if (inspect.isclass(value) and value.__module__ == module.__name__ and name.endswith("Objective")
          and not getattr(value, "_is_protocol", False)):
        found.add(value)
  return found


# One instance of each objective, with the smallest arguments that build it.
def instances():
  tokenizer = SentencePieceTokenizer(SP8K_MODEL)
  pairs = [ParallelPair(1, "a sentence", "문장")]
  return {
      PretrainingObjective: PretrainingObjective(),
      ClassifierObjective: ClassifierObjective(get_task("mrpc")),
      SentenceSimilarityObjective: SentenceSimilarityObjective(get_task("sts-b")),
      DistillationObjective: DistillationObjective(pairs, np.zeros([1, 4], np.float32), dev_size=0, seed=1),
      SquadObjective: SquadObjective(SquadSettings(version=2), tokenizer, max_seq_length=128),
      MultipleChoiceObjective: MultipleChoiceObjective(tokenizer),
      TokenClassificationObjective: TokenClassificationObjective("klue-ner", tokenizer),
      DependencyParsingObjective: DependencyParsingObjective(tokenizer, "klue-dp"),
      DialogueStateTrackingObjective: DialogueStateTrackingObjective(tokenizer),
  }


def declared_members(protocol):
  """The attributes and methods `protocol` declares, its base protocols' included."""
  attributes, methods = set(), {}
  for klass in reversed(protocol.__mro__):
    if not getattr(klass, "_is_protocol", False) or klass.__module__ == "typing":
      continue
    attributes.update(klass.__dict__.get("__annotations__", {}))
    methods.update({name: value for name, value in vars(klass).items()
                    if inspect.isfunction(value) and not name.startswith("_")})
  return attributes, methods


def missing_or_mismatched(objective, protocol):
  attributes, methods = declared_members(protocol)
  problems = [f"no attribute {name}" for name in sorted(attributes) if not hasattr(objective, name)]
  for name, declared in sorted(methods.items()):
    method = getattr(objective, name, None)
    if not callable(method):
      problems.append(f"no method {name}")
      continue
    parameters = list(inspect.signature(declared).parameters)[1:]  # after self
    signature = inspect.signature(method)
    try:
      signature.bind(*parameters)
      signature.bind(**{parameter: None for parameter in parameters})
    except TypeError as error:
      problems.append(f"{name}{signature} does not take {name}({', '.join(parameters)}): {error}")
  return problems


def used_members(*code):
  """The members the code reads of the objective it holds (`objective.x`, `self.objective.x`)."""
  return {name for part in code for name in re.findall(r"\bobjective\.(\w+)", inspect.getsource(part))}


def test_the_protocols_declare_what_the_drivers_use():
  training_attributes, training_methods = declared_members(loop.TrainingObjective)
  assert used_members(loop.replica_train_step, loop.Trainer) <= training_attributes | set(training_methods)
  attributes, methods = declared_members(finetuning.FineTuningObjective)
  assert used_members(loop.replica_train_step, loop.Trainer, finetuning.FineTuning, finetuning.run) == (
      attributes | set(methods))
  # The pretraining driver builds its own objective, and reads two members of it besides the protocol's.
  assert used_members(pretraining.Pretraining) - training_attributes - set(training_methods) == {
      "batch_sums", "summary_names"}


@requires_shared(SP8K_MODEL)
def test_every_objective_satisfies_its_drivers_protocol():
  objectives = instances()
  assert set(objectives) == objective_classes(), "an objective without an instance here: add one"
  for klass, objective in objectives.items():
    protocol = loop.TrainingObjective if klass is PretrainingObjective else finetuning.FineTuningObjective
    assert not missing_or_mismatched(objective, protocol), klass.__name__
    # The progress line prints these from the metrics of a host loop's sums.
    metrics = objective.metrics_from_sums(np.ones(len(objective.sum_names)))
    assert {name for group in objective.progress_groups for name in group} <= set(metrics), klass.__name__


class IncompleteObjective(ClassifierObjective):
  """A classifier whose `encode` lost its `description` and which has no `export_files`."""

  export_files = None

  def encode(self, examples, tokenizer, max_seq_length):  # pylint: disable=arguments-differ
    del examples, tokenizer, max_seq_length


def test_a_missing_member_or_argument_is_reported():
  problems = missing_or_mismatched(IncompleteObjective(get_task("mrpc")), finetuning.FineTuningObjective)
  assert [problem.split("(")[0].split(" ")[0] for problem in problems] == ["encode", "no"]
  assert problems[1] == "no method export_files"
