"""ALBERT pretraining on `tf.distribute`: MLM + SOP (or MLM only), Google's LAMB, exact resume, eval, progress.

The loop mirrors Google's `run_pretraining.py` (TF1 `TPUEstimator`) in TF2:

- `iterations_per_loop` steps run inside one `tf.function` (the TPU host loop), fed by datasets from
  `distribute_datasets_from_function` with a per-replica batch and per-host sharding;
- the MLM loss `Σ w·CE / (Σ w + 1e-5)` and the SOP cross-entropy are reduced over the *global* batch
  under every strategy; gradients are summed over the micro-batches of `gradient_accumulation_steps` and
  across replicas, then clipped to global norm 1.0, then applied once (Google clipped each TPU shard's
  gradient before summing, and had no accumulation);
- checkpoints hold the model, the optimizer, the step and the input position. The training input is
  position-addressable (`pretraining_dataset.pretraining_dataset(start_example=...)`), because in TF 2.20 a
  distributed iterator cannot be checkpointed: a rerun of the same command restores the checkpoint and
  restarts the input exactly where it was, skipping rather than reading the records before it;
- evaluation scores the first `max_eval_steps` batches of one shuffled epoch of the eval files, drawn with
  `random_seed`: the same batches at every evaluation, sampling every file.
"""

import dataclasses
import os
import sys
from typing import Dict, List, Optional, Tuple

from absl import logging
import numpy as np
import tensorflow as tf

from albert_tf.data import pretraining_dataset
from albert_tf.data import record_files
from albert_tf.data import word_boundaries
from albert_tf.data.instances import MaskingRecipe, check_max_predictions
from albert_tf.errors import CheckpointMismatchError, OptionError, TrainingError
from albert_tf.files import expand_input_patterns, make_folders
from albert_tf.modeling import checkpoints as checkpoint_lib
from albert_tf.modeling.config import AlbertConfig
from albert_tf.modeling.pretrainer import AlbertPretrainer
from albert_tf.training import distribution
from albert_tf.training import loop
from albert_tf.training import run_directory
from albert_tf.training.pretraining_objective import PretrainingObjective

_RECORD_COUNTS = "input_record_counts.json"


@dataclasses.dataclass
class PretrainingOptions:
  """A run's settings: Google's `run_pretraining.py` flags and defaults, plus ours."""

  input_file: str
  output_dir: str
  albert_config: AlbertConfig
  init_checkpoint: Optional[str] = None
  eval_input_file: Optional[str] = None  # Google evaluates on its training files; this is the default
  max_seq_length: int = 512
  max_predictions_per_seq: int = 20
  do_train: bool = True
  do_eval: bool = False
  train_batch_size: int = 4096
  eval_batch_size: int = 64
  optimizer: str = "lamb"
  learning_rate: float = 0.00176
  poly_power: float = 1.0
  num_train_steps: int = 125000
  num_warmup_steps: int = 3125
  start_warmup_step: int = 0
  save_checkpoints_steps: int = 5000
  keep_checkpoint_max: int = 5
  iterations_per_loop: int = 1000
  max_eval_steps: int = 100
  init_from_group0: bool = False
  mixed_precision: str = "float32"
  random_seed: int = 12345
  jit_compile: bool = False
  log_steps: Optional[int] = None  # progress line every this many steps (default: every host loop)
  sentence_order_prediction: bool = True  # False: MLM only, no SOP head (Hugging Face's AlbertForMaskedLM)
  gradient_accumulation_steps: int = 1  # micro-batches per replica and step; train_batch_size stays per step
  recompute_grad: bool = False  # recompute the shared block's activations in the backward pass


def _assign_pairs(targets: List[tf.Variable], sources: List[tf.Variable], where: str):
  """Assigns `sources` to `targets` in order, refusing lists that do not pair up one to one in shape."""
  mismatched = [f"{target.name} {target.shape} vs {source.name} {source.shape}"
                for target, source in zip(targets, sources) if target.shape != source.shape]
  if len(targets) != len(sources) or mismatched:
    raise CheckpointMismatchError(
        f"--init_from_group0: the variables {where} do not pair up: {len(targets)} in the model, {len(sources)} in "
        f"the one-group model" + (f"; shapes differ: {'; '.join(mismatched[:5])}" if mismatched else "") + ".")
  for target, source in zip(targets, sources):
    target.assign(source)


def check_records_vocabulary(config: AlbertConfig, vocab_size: int, source: str):
  """The input records need a vocabulary of `vocab_size` pieces (`source` says why); the model's must hold it, or
  the first step would fail in the embedding lookup (or, on a GPU, read zeros).

  Raises:
    OptionError: the config's vocab_size is smaller.
  """
  if vocab_size > config.vocab_size:
    raise OptionError(f"The input records {source}; the config's vocab_size is {config.vocab_size}. Use the "
                      "albert_config.json of the vocabulary the records were written with.")


def check_masking_recipe(recipe: MaskingRecipe, config: AlbertConfig, max_seq_length: int,
                         max_predictions_per_seq: int):
  """Unmasked records: their vocabulary must fit the model and the cap the sequence; a cap below Google's 15% is
  worth a warning."""
  check_max_predictions(max_seq_length, max_predictions_per_seq)
  check_records_vocabulary(config, recipe.vocab_size, f"were written with a vocabulary of {recipe.vocab_size} "
                           "pieces, and masking replaces tokens by ids up to it")
  wanted = round(recipe.masked_lm_prob * max_seq_length)
  if max_predictions_per_seq < wanted:
    logging.warning("--max_predictions_per_seq=%d is below masked_lm_prob × max_seq_length = %d: full-length "
                    "sequences will have %.1f%% of their tokens masked, not %.0f%%.", max_predictions_per_seq,
                    wanted, 100.0 * max_predictions_per_seq / max_seq_length, 100 * recipe.masked_lm_prob)


class Pretraining:
  """One pretraining run: the model, optimizer, checkpoints and loops of `PretrainingOptions`.

  Build it, then call `train()` and/or `evaluate()`. Construction validates everything that can be
  checked before a step (input files, their record lengths and token ids, the run directory against the config,
  `init_checkpoint` against the model) and raises with a clear message; nothing is written before that.
  """

  def __init__(self, options: PretrainingOptions, strategy: tf.distribute.Strategy):
    self.options = options
    self.strategy = strategy
    self.is_chief = distribution.is_chief(strategy)
    self.objective = PretrainingObjective(options.sentence_order_prediction)
    o = options
    if not (o.do_train or o.do_eval):
      raise OptionError("Nothing to do: set --do_train, --do_eval or both (as Google's run_pretraining requires).")
    loop.micro_batch_size(o.train_batch_size, strategy.num_replicas_in_sync, o.gradient_accumulation_steps)
    if o.do_train:
      loop.check_learning_rate(o.learning_rate)
    if o.max_seq_length > o.albert_config.max_position_embeddings:
      raise OptionError(f"--max_seq_length={o.max_seq_length} exceeds max_position_embeddings="
                        f"{o.albert_config.max_position_embeddings} of the config.")
    self.train_files = expand_input_patterns(o.input_file) if o.do_train else []
    self.eval_files = expand_input_patterns(o.eval_input_file or o.input_file) if o.do_eval else []
    input_files = sorted(set(self.train_files + self.eval_files))
    self.masking_recipe, self.word_boundaries = record_files.check_pretraining_records(
        input_files, o.max_seq_length, o.max_predictions_per_seq)
    print(f"Records: {'unmasked, masked every epoch' if self.masking_recipe else 'masked'}; their words follow "
          f"--word_boundaries={self.word_boundaries} ({word_boundaries.DESCRIPTIONS[self.word_boundaries]}).", file=sys.stderr)
    if self.masking_recipe is not None:
      check_masking_recipe(self.masking_recipe, o.albert_config, o.max_seq_length, o.max_predictions_per_seq)
    run_directory.check_run_directory(o.output_dir, o.albert_config)
    # Read whole now (or taken from the cache of an earlier run), so that a corrupt record or a token id the
    # model has no embedding for stops the run before it writes anything.
    self.record_stats = record_files.read_record_stats(input_files, self._record_stats_file)
    if self.record_stats:
      path = max(self.record_stats, key=lambda name: self.record_stats[name].largest_token_id)
      largest = self.record_stats[path].largest_token_id
      check_records_vocabulary(o.albert_config, largest + 1, f"hold token ids up to {largest} ({path})")

    with strategy.scope():
      # The input position: examples each input pipeline has delivered, and how many pipelines there were.
      self.examples_per_pipeline = tf.Variable(0, dtype=tf.int64, trainable=False)
      self.num_input_pipelines = tf.Variable(0, dtype=tf.int64, trainable=False)
    self.run = loop.RunState(
        strategy, o.output_dir,
        lambda: AlbertPretrainer(o.albert_config, o.sentence_order_prediction, recompute_grad=o.recompute_grad),
        o.mixed_precision, o.random_seed,
        loop.OptimizerSettings(o.optimizer, o.learning_rate, o.num_train_steps, o.num_warmup_steps, o.poly_power,
                               o.start_warmup_step),
        o.keep_checkpoint_max, dict(examples_per_pipeline=self.examples_per_pipeline,
                                    num_input_pipelines=self.num_input_pipelines))
    self.model = self.run.model
    self.last_eval = None
    self._eval_step = None
    if not self.run.restored_from and o.init_checkpoint:
      self._init_from_checkpoint(o.init_checkpoint, o.init_from_group0)

  # --- initialisation ----------------------------------------------------------------------------------

  def _init_from_checkpoint(self, path: str, from_group0: bool):
    """Google's --init_checkpoint (and --init_from_group0): restores what the checkpoint holds and says which
    heads start fresh and which of its heads this run leaves out."""
    if from_group0:
      prefix, fresh_heads, unused_heads = self._init_from_group0(path)
    else:
      prefix, fresh_heads, unused_heads = checkpoint_lib.restore_available_parts(self.model, path)
    names = lambda heads: " and ".join(f"the {checkpoint_lib.HEADS[head]}" for head in heads)
    if not fresh_heads:
      message = f"Initialised the model from {prefix}."
    else:
      restored = ["the encoder"] + [f"the {name}" for head, name in checkpoint_lib.HEADS.items()
                                    if getattr(self.model, head) is not None and head not in fresh_heads]
      message = (f"Initialised {' and '.join(restored)} from {prefix}. Not in that checkpoint, so starting from "
                 f"fresh initialisation: {names(fresh_heads)}.")
    if unused_heads:
      message += f" Not used (this run has no such head): {names(unused_heads)} of that checkpoint."
    print(message, file=sys.stderr)

  def _init_from_group0(self, path: str) -> Tuple[str, List[str], List[str]]:
    """Google's --init_from_group0: every parameter group starts from group 0 of a one-group checkpoint.

    Returns:
      As `checkpoints.restore_available_parts`, for the one-group model.
    """
    one_group = AlbertConfig.from_dict(dict(self.options.albert_config.to_dict(), num_hidden_groups=1))
    source = AlbertPretrainer(one_group, self.options.sentence_order_prediction)
    source(source.dummy_inputs(), training=False)
    restored = checkpoint_lib.restore_available_parts(source, path)
    _assign_pairs(self._non_group_variables(self.model), self._non_group_variables(source), "outside the groups")
    group0 = [v for block in source.encoder.groups[0] for v in block.variables]
    for group_index, group in enumerate(self.model.encoder.groups):
      _assign_pairs([v for block in group for v in block.variables], group0, f"of group {group_index} (from group 0)")
    return restored

  @staticmethod
  def _non_group_variables(model) -> List[tf.Variable]:
    in_groups = {id(v) for group in model.encoder.groups for block in group for v in block.variables}
    return [v for v in model.variables if id(v) not in in_groups]

  # --- data ----------------------------------------------------------------------------------------------

  @property
  def _record_stats_file(self) -> str:
    return os.path.join(self.options.output_dir, _RECORD_COUNTS)

  def _record_counts(self, files: List[str]) -> Dict[str, int]:
    """Records per file, of the stats kept in `output_dir` so that restarts do not read the files again."""
    make_folders(self.options.output_dir)
    record_files.write_record_stats(self._record_stats_file, self.record_stats)
    return {path: self.record_stats[path].records for path in files}

  def _train_dataset(self):
    o = self.options
    counts = self._record_counts(self.train_files)
    start = int(self.examples_per_pipeline.numpy())

    def dataset_fn(context: tf.distribute.InputContext):
      return pretraining_dataset.pretraining_dataset(
          self.train_files, o.max_seq_length, o.max_predictions_per_seq,
          context.get_per_replica_batch_size(o.train_batch_size), is_training=True, input_context=context,
          seed=o.random_seed, start_example=start, record_counts=counts, masking_recipe=self.masking_recipe)

    return self.strategy.distribute_datasets_from_function(dataset_fn)

  def _eval_dataset(self):
    """One epoch of the eval files, interleaved and shuffled as training's first epoch is, with the run's
    `random_seed`: every evaluation scores the same batches, and the first `max_eval_steps` of them sample
    every file rather than the start of the first one."""
    o = self.options
    counts = self._record_counts(self.eval_files)

    def dataset_fn(context: tf.distribute.InputContext):
      return pretraining_dataset.pretraining_dataset(
          self.eval_files, o.max_seq_length, o.max_predictions_per_seq,
          context.get_per_replica_batch_size(o.eval_batch_size), is_training=False, input_context=context,
          seed=o.random_seed, record_counts=counts, masking_recipe=self.masking_recipe)

    return self.strategy.distribute_datasets_from_function(dataset_fn)

  # --- steps ---------------------------------------------------------------------------------------------

  def _build_eval_step(self):

    @tf.function
    def eval_step(batch):
      per_replica = self.strategy.run(lambda b: self.objective.batch_sums(self.model, b, training=False), args=(batch,))
      return self.strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=None)

    return eval_step

  # --- loops ---------------------------------------------------------------------------------------------

  def train(self) -> Dict[str, float]:
    """Trains to `num_train_steps`, resuming where the run directory left off. Returns the last metrics.

    A run that fails before it writes its first checkpoint removes what it created in `output_dir`.
    """
    with self.run.nothing_left_unless_checkpointed(self.options.output_dir, self.is_chief):
      return self._train()

  def _train(self) -> Dict[str, float]:
    o = self.options
    if self.is_chief:
      run_directory.write_config(o.output_dir, o.albert_config)
    pipelines, recorded = distribution.num_input_pipelines(self.strategy), int(self.num_input_pipelines.numpy())
    if recorded and recorded != pipelines:
      raise TrainingError(f"The checkpoint was written with {recorded} input pipelines (hosts) and this run has "
                          f"{pipelines}: the input position cannot carry over. Resume on {recorded} hosts.")
    self.num_input_pipelines.assign(pipelines)
    if o.do_eval and run_directory.awaits_evaluation(o.output_dir, self.run.restored_from, self.run.current_step):
      self.evaluate()  # score it now, so that model.ckpt-best misses no checkpoint
    examples_per_step = o.train_batch_size // pipelines
    trainer = loop.Trainer(self.strategy, self.run, self.objective, o.train_batch_size, o.jit_compile,
                           after_step=lambda: self.examples_per_pipeline.assign_add(examples_per_step),
                           gradient_accumulation_steps=o.gradient_accumulation_steps)
    schedule = loop.LoopSchedule(o.num_train_steps, o.iterations_per_loop, o.save_checkpoints_steps, o.log_steps)
    return trainer.train(iter(self._train_dataset()), schedule,
                         os.path.join(o.output_dir, "train") if self.is_chief else None, self._save)

  def _save(self, step: int):
    self.run.save(step, self.is_chief)
    if self.options.do_eval:
      self.evaluate()  # every worker takes part: the eval step's reduction spans them all

  def evaluate(self) -> Dict[str, float]:
    """Evaluates the first `max_eval_steps` batches of one shuffled epoch of the eval files (the same batches
    every time); writes eval_results.txt and keeps the best checkpoint."""
    o = self.options
    if self._eval_step is None:  # traced once for all of the run's evaluations
      self._eval_step = self._build_eval_step()
    eval_step = self._eval_step
    totals = np.zeros(len(self.objective.sum_names))
    steps = 0
    for batch in self._eval_dataset():
      if steps >= o.max_eval_steps:
        break
      totals += eval_step(batch).numpy()
      steps += 1
    if not steps:
      raise TrainingError(f"No full eval batch of {o.eval_batch_size} in {', '.join(self.eval_files)}.")
    metrics = self.objective.metrics_from_sums(totals)
    metrics["global_step"] = self.run.current_step
    metrics["eval_steps"] = steps
    if self.is_chief:
      self._write_eval_results(metrics)
    self.last_eval = metrics
    return metrics

  def _write_eval_results(self, metrics: Dict[str, float]):
    o = self.options
    run_directory.write_eval_results(o.output_dir, metrics, self.objective.summary_names)
    run_directory.keep_if_best(o.output_dir, self.model, metrics, self.objective.primary_metric)


def run(options: PretrainingOptions, strategy: tf.distribute.Strategy) -> Dict[str, Dict[str, float]]:
  """Trains and/or evaluates as `options` say; returns the last train and eval metrics."""
  run_state = Pretraining(options, strategy)
  if options.do_eval and not options.do_train and not (run_state.run.restored_from or options.init_checkpoint):
    raise TrainingError(f"--do_eval without --do_train needs a checkpoint in --output_dir={options.output_dir} "
                        "or an --init_checkpoint.")
  results = {}
  if options.do_train:
    results["train"] = run_state.train()
  if options.do_eval:
    # Training evaluates after each checkpoint; an eval-only run evaluates the restored model once.
    results["eval"] = run_state.last_eval if options.do_train else run_state.evaluate()
  return results
