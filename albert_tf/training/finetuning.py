"""Fine-tuning on `tf.distribute`: train, keep the best checkpoint by the task's metric, predict, export.

One driver, `FineTuning`, runs every fine-tuning job; what differs lives in an objective, in the job's task
package (`albert_tf.tasks`): a classifier (Google's `run_classifier.py`), a Sentence-BERT encoder or one
distilled from a teacher's embeddings, SQuAD v1 and v2 (`run_squad_v1.py`, `run_squad_v2.py`), RACE
(`run_race.py`). What the driver needs of an objective is `FineTuningObjective`.

A run reads and checks every split it needs before building anything, so bad data fails before training.
Training resumes from the last checkpoint of `output_dir` (model, optimizer, step, input position); every
checkpoint is evaluated on the dev split when `do_eval`, `eval_results.txt` holds every metric and
`model.ckpt-best` the best weights by the objective's metric (a checkpoint written just before a crash is
scored on resume). Prediction, export and an evaluation without training use those best weights (the last
ones when nothing was evaluated).
"""

import dataclasses
import os
import sys
from typing import Dict, List, Optional, Protocol

import numpy as np
import tensorflow as tf

from albert_tf.data.finetuning_dataset import EncodedSplit, evaluation_dataset, evaluation_steps, training_dataset
from albert_tf.errors import OptionError, TrainingError
from albert_tf.files import check_destination, exists, file_exists, make_folders, read_json, write_atomically
from albert_tf.modeling import checkpoints as checkpoint_lib
from albert_tf.modeling.config import AlbertConfig
from albert_tf.serving import saved_model
from albert_tf.text.graph_tokenizer import tokenizer_for_model
from albert_tf.training import distribution
from albert_tf.training import loop
from albert_tf.training import run_directory

RUN_INFO_FILE = checkpoint_lib.TASK_INFO_FILE


@dataclasses.dataclass
class FineTuningOptions:
  """A run's settings: Google's `run_classifier.py` flags and defaults, plus ours."""

  data_dir: Optional[str]  # the task's folder (SQuAD names its files in its objective instead)
  output_dir: str
  albert_config: AlbertConfig
  spm_model_file: str
  init_checkpoint: Optional[str] = None
  do_lower_case: bool = True
  keep_accents: bool = False
  max_seq_length: int = 512
  do_train: bool = False
  do_eval: bool = False
  do_predict: bool = False
  train_batch_size: int = 32
  eval_batch_size: int = 8
  predict_batch_size: int = 8
  optimizer: str = "adamw"
  learning_rate: float = 5e-5
  train_step: int = 1000
  warmup_step: int = 0
  save_checkpoints_steps: int = 1000
  keep_checkpoint_max: int = 5
  iterations_per_loop: int = 1000
  dropout_prob: float = 0.1  # on the pooled output, before the classifier (Google's fixed 0.1)
  mixed_precision: str = "float32"
  random_seed: int = 12345
  jit_compile: bool = False
  log_steps: Optional[int] = None  # progress line every this many steps (default: every host loop)
  export_dir: Optional[str] = None
  gradient_accumulation_steps: int = 1  # micro-batches per replica and step; train_batch_size stays per step
  recompute_grad: bool = False  # recompute the shared block's activations in the backward pass


class FineTuningObjective(loop.TrainingObjective, Protocol):
  """A fine-tuning job: its data, model, evaluation, prediction files and export, besides its loss.

  `finetuning_objectives.FineTuningDefaults` holds the members most jobs share.
  """

  has_head: bool  # a task head that fine-tuning initialises (a classifier's, SQuAD's); False: the encoder alone

  def read_examples(self, data_dir: Optional[str], split: str):
    """The examples of `split` ("train", "dev", "test"), checked (bad data raises before anything is built)."""

  def learn_from_train(self, examples) -> None:
    """Learns what the job takes from the train split before encoding (a TSV task's labels)."""

  def run_info(self) -> Dict:
    """What `task.json` records of the run, so that a resume or an export rebuilds the same model."""

  def adopt_run_info(self, info: Dict, output_dir: str) -> None:
    """Takes an earlier run's `task.json` of `output_dir`, or refuses a run of another job or labels."""

  def encode(self, examples, tokenizer, max_seq_length: int, description: str) -> EncodedSplit:
    """The model's inputs, labels and example ids of `examples`."""

  def build_model(self, config: AlbertConfig, dropout_prob: float, recompute_grad: bool = False):
    """The model to fine-tune, its head freshly initialised."""

  def predict(self, model, batch):
    """The outputs that evaluation and prediction files read, of one batch (a tensor or a dict of them)."""

  def evaluation_metrics(self, outputs, split: EncodedSplit) -> Dict[str, float]:
    """Every metric of the job on `split`, with `primary_metric` among them."""

  def prediction_files(self, outputs, split: EncodedSplit, output_dir: str) -> Dict[str, str]:
    """The prediction files of `split`, as file name -> text."""

  def exported_model(self, model):
    """What `--export_dir` serves: the model itself, or the part of it that serves (a sentence encoder)."""

  def serving_options(self, output_dir: str):
    """What the exported signatures need besides the model, as its task head's `serving_module` takes it (how
    SQuAD's `answer_question` reads, and v2's threshold), or None."""

  def export_files(self, model, export_path: str, max_seq_length: int) -> List[str]:
    """Writes what the job exports besides the SavedModel into `export_path`; returns the paths."""


class FineTuning:
  """One fine-tuning run of `FineTuningOptions` with an objective.

  Construction reads, checks and tokenizes every split the run needs, checks the run directory and the
  checkpoints, and restores (or initialises) the model: every problem is raised before anything is written.

  Args:
    options: the run's settings.
    objective: the job (a `FineTuningObjective` of a task package).
    strategy: the `tf.distribute` strategy.
  """

  def __init__(self, options: FineTuningOptions, objective: FineTuningObjective, strategy: tf.distribute.Strategy):
    self.options = options
    self.objective = objective
    self.strategy = strategy
    self.is_chief = distribution.is_chief(strategy)
    o = options
    self._check_options()
    self._check_checkpoints()
    self.tokenizer = tokenizer_for_model(o.albert_config, o.spm_model_file, o.do_lower_case, o.keep_accents)
    self.splits = self._read_splits()
    run_directory.check_run_directory(o.output_dir, o.albert_config)
    # The seed fixes the initial head too.
    self.run = loop.RunState(strategy, o.output_dir,
                             lambda: objective.build_model(o.albert_config, o.dropout_prob, o.recompute_grad),
                             o.mixed_precision, o.random_seed,
                             loop.OptimizerSettings(o.optimizer, o.learning_rate, o.train_step, o.warmup_step),
                             o.keep_checkpoint_max)
    self.model = self.run.model
    self.last_eval = None
    self.weights_step = None  # the step of the weights the model holds, when they are model.ckpt-best's
    self._predict_step = tf.function(self._gathered_outputs)
    if not self.run.restored_from:
      self._initialize()

  # --- setup -------------------------------------------------------------------------------------------

  def _check_options(self):
    o = self.options
    if not (o.do_train or o.do_eval or o.do_predict or o.export_dir):
      raise OptionError("Nothing to do: set at least one of --do_train, --do_eval, --do_predict, --export_dir.")
    o.albert_config.check_max_seq_length(o.max_seq_length)
    if o.export_dir:  # now, not once training is done
      check_destination(os.path.join(o.export_dir, str(saved_model.next_version(o.export_dir))), "--export_dir")
    replicas = self.strategy.num_replicas_in_sync
    for flag, size in (("train_batch_size", o.train_batch_size), ("eval_batch_size", o.eval_batch_size),
                       ("predict_batch_size", o.predict_batch_size)):
      if size <= 0 or size % replicas:
        raise OptionError(f"--{flag}={size} must be a positive multiple of the {replicas} replica(s).")
    if o.do_train:
      loop.micro_batch_size(o.train_batch_size, replicas, o.gradient_accumulation_steps)
      loop.check_learning_rate(o.learning_rate)
    if o.do_train and o.train_step <= 0:
      raise OptionError(f"--train_step={o.train_step} must be positive.")

  def _read_splits(self) -> Dict[str, EncodedSplit]:
    """Reads (the train split first: it fixes a tsv task's labels), checks against the run directory, encodes."""
    o = self.options
    needed = [split for split, wanted in (("train", o.do_train), ("dev", o.do_eval), ("test", o.do_predict))
              if wanted]
    examples = {}
    if "train" in needed:
      examples["train"] = self.objective.read_examples(o.data_dir, "train")
    info_file = os.path.join(o.output_dir, RUN_INFO_FILE)
    if exists(info_file):
      self.objective.adopt_run_info(read_json(info_file, f"the {RUN_INFO_FILE} of a run"), o.output_dir)
    for split in needed[len(examples):]:
      examples[split] = self.objective.read_examples(o.data_dir, split)
    if "train" in examples:
      self.objective.learn_from_train(examples["train"])
    return {split: self.objective.encode(rows, self.tokenizer, o.max_seq_length, f"{split} examples")
            for split, rows in examples.items()}

  def _check_checkpoints(self):
    """Something to start from: a run to resume or evaluate, or an --init_checkpoint that exists."""
    o = self.options
    if run_directory.has_checkpoints(o.output_dir):  # restored (or refused when none is complete) later
      return
    if not o.do_train and self.objective.has_head:
      raise TrainingError(f"Evaluating, predicting or exporting without --do_train needs a fine-tuned checkpoint "
                          f"in --output_dir={o.output_dir}; there is none.")
    if o.init_checkpoint:
      checkpoint_lib.resolve_checkpoint_path(o.init_checkpoint)  # FileNotFoundError now, not after tokenizing
    elif not o.do_train:
      raise TrainingError("Evaluating, predicting or exporting without --do_train needs a checkpoint: one in "
                          f"--output_dir={o.output_dir}, or an --init_checkpoint.")

  def _initialize(self):
    o = self.options
    if o.init_checkpoint:
      prefix = checkpoint_lib.restore_checkpoint(self.model.encoder, o.init_checkpoint)
      fresh = " The task head starts from fresh initialisation." if self.objective.has_head else ""
      print(f"Initialised the encoder from {prefix}.{fresh}", file=sys.stderr)
    else:
      print("No --init_checkpoint: fine-tuning starts from random weights (no pretraining).", file=sys.stderr)

  # --- training ------------------------------------------------------------------------------------------

  def train(self) -> Dict[str, float]:
    """Fine-tunes to `train_step`, resuming where the run directory left off. Returns the last metrics.

    A run that fails before it writes its first checkpoint removes what it created in `output_dir`.
    """
    with self.run.nothing_left_unless_checkpointed(self.options.output_dir, self.is_chief):
      return self._train()

  def _train(self) -> Dict[str, float]:
    o = self.options
    if self.is_chief:
      run_directory.write_config(o.output_dir, o.albert_config)
      checkpoint_lib.write_task_info(o.output_dir, self.objective.run_info())
    if o.do_eval and run_directory.awaits_evaluation(o.output_dir, self.run.restored_from, self.run.current_step):
      self.evaluate(keep_best=True)  # score it now, so that model.ckpt-best misses no checkpoint
    train_split = self.splits["train"]
    start_example = self.run.current_step * o.train_batch_size

    def dataset_fn(context: tf.distribute.InputContext):
      return training_dataset(train_split, context.get_per_replica_batch_size(o.train_batch_size), o.random_seed,
                              start_example, context)

    trainer = loop.Trainer(self.strategy, self.run, self.objective, o.train_batch_size, o.jit_compile,
                           gradient_accumulation_steps=o.gradient_accumulation_steps)
    schedule = loop.LoopSchedule(o.train_step, o.iterations_per_loop, o.save_checkpoints_steps, o.log_steps)
    return trainer.train(iter(self.strategy.distribute_datasets_from_function(dataset_fn)), schedule,
                         os.path.join(o.output_dir, "train") if self.is_chief else None, self._save)

  def _save(self, step: int):
    self.run.save(step, self.is_chief)
    if self.options.do_eval:
      self.evaluate(keep_best=True)  # every worker takes part: gathering the predictions spans them all

  # --- evaluation, prediction, export --------------------------------------------------------------------

  def _gathered_outputs(self, batch):
    """The objective's outputs of a distributed batch, with weights and example indices, from every replica."""

    def replica_outputs(batch):
      return {"outputs": self.objective.predict(self.model, batch), "weights": batch["weights"],
              "example_index": batch["example_index"]}

    per_replica = self.strategy.run(replica_outputs, args=(batch,))
    return tf.nest.map_structure(lambda value: self.strategy.gather(value, axis=0), per_replica)

  def _outputs(self, split: EncodedSplit, global_batch_size: int):
    """The objective's outputs (an array, or a dict of arrays) for every example of `split`, in order."""

    def dataset_fn(context: tf.distribute.InputContext):
      return evaluation_dataset(split, context.get_per_replica_batch_size(global_batch_size), global_batch_size,
                                context)

    # Exactly the padded batches, never past the end: every worker knows the count, and an exhausted
    # distributed iterator logs an error-looking line.
    batches = iter(self.strategy.distribute_datasets_from_function(dataset_fn))
    num_batches = evaluation_steps(split.num_examples, global_batch_size)
    gathered = [self._predict_step(next(batches)) for _ in range(num_batches)]
    values = tf.nest.map_structure(lambda *batches: np.concatenate([batch.numpy() for batch in batches]),
                                   *gathered)
    real = values["weights"] > 0
    order = np.argsort(values["example_index"][real], kind="stable")
    return tf.nest.map_structure(lambda output: output[real][order], values["outputs"])

  def evaluate(self, keep_best: bool = False) -> Dict[str, float]:
    """Scores the dev split and writes eval_results.txt; with `keep_best` (the checkpoints of training), the
    weights go to `model.ckpt-best` when they are the best so far by the objective's metric."""
    o = self.options
    split = self.splits["dev"]
    metrics = self.objective.evaluation_metrics(self._outputs(split, o.eval_batch_size), split)
    metrics["global_step"] = self.run.current_step if self.weights_step is None else self.weights_step
    metrics["eval_examples"] = split.num_examples
    if self.is_chief:
      names = sorted(name for name, value in metrics.items() if isinstance(value, float))
      run_directory.write_eval_results(o.output_dir, metrics, names)
      if keep_best and run_directory.keep_if_best(o.output_dir, self.model, metrics, self.objective.primary_metric):
        print(f"New best {self.objective.primary_metric} {metrics[self.objective.primary_metric]:.4f} at step "
              f"{metrics['global_step']}: {os.path.join(o.output_dir, run_directory.BEST_CHECKPOINT)}", file=sys.stderr)
    self.last_eval = metrics
    return metrics

  def use_best_weights(self) -> str:
    """Loads `model.ckpt-best` when evaluation kept one; returns what the model now holds."""
    best = os.path.join(self.options.output_dir, run_directory.BEST_CHECKPOINT)
    if file_exists(best + ".index"):
      checkpoint_lib.restore_checkpoint(self.model, best)
      self.weights_step = run_directory.read_best_info(self.options.output_dir)["global_step"]
      return best
    return self.run.latest_checkpoint or self.options.init_checkpoint

  def predict(self) -> str:
    """Writes the objective's prediction files for the test split (each whole, or not at all) to
    `output_dir`; returns the path of the first (the one to submit)."""
    o = self.options
    split = self.splits["test"]
    files = self.objective.prediction_files(self._outputs(split, o.predict_batch_size), split, o.output_dir)
    paths = [os.path.join(o.output_dir, name) for name in files]
    if self.is_chief:
      make_folders(o.output_dir)
      for path, text in zip(paths, files.values()):
        write_atomically(path, text)
    return paths[0]

  def export(self) -> str:
    """Writes a SavedModel of the model (as it is now) to `<export_dir>/<version>`, and what else the objective
    exports beside it (SQuAD v1's TFLite model); returns the SavedModel's path."""
    o = self.options
    model = self.objective.exported_model(self.model)
    path = saved_model.export_saved_model(model, o.export_dir, o.spm_model_file, o.max_seq_length, o.do_lower_case,
                                          o.keep_accents, task_options=self.objective.serving_options(o.output_dir))
    for extra in self.objective.export_files(model, path, o.max_seq_length):
      print(f"Wrote {extra}", file=sys.stderr)
    return path


def run(options: FineTuningOptions, objective: FineTuningObjective,
        strategy: tf.distribute.Strategy) -> Dict[str, object]:
  """Trains, evaluates, predicts and exports as `options` say; returns what each step produced."""
  run_state = FineTuning(options, objective, strategy)
  results = {}
  if options.do_train:
    results["train"] = run_state.train()
  if options.do_eval and run_state.last_eval is not None:
    results["eval"] = run_state.last_eval  # training scored every checkpoint it wrote
  if (options.do_eval and "eval" not in results) or options.do_predict or options.export_dir:
    # The weights that score, predict and export: the best by the dev metric (without one, the last ones).
    weights = run_state.use_best_weights()
    results["weights"] = weights
    if options.do_eval and "eval" not in results:
      results["eval"] = run_state.evaluate()
    if options.do_predict:
      results["predict"] = run_state.predict()
      print(f"Predictions of {weights} on the test split: {results['predict']}", file=sys.stderr)
    if options.export_dir and run_state.is_chief:
      results["export"] = run_state.export()
      print(f"Exported {weights} to {results['export']}", file=sys.stderr)
  return results
