"""ALBERT pretraining on `tf.distribute`: MLM + SOP, Google's LAMB, exact resume, eval, progress.

The loop mirrors Google's `run_pretraining.py` (TF1 `TPUEstimator`) in TF2:

- `iterations_per_loop` steps run inside one `tf.function` (the TPU host loop), fed by datasets from
  `distribute_datasets_from_function` with a per-replica batch and per-host sharding;
- the MLM loss `Σ w·CE / (Σ w + 1e-5)` and the SOP cross-entropy are reduced over the *global* batch
  under every strategy; gradients are summed across replicas, then clipped to global norm 1.0, then
  applied (Google clipped each TPU shard's gradient before summing);
- checkpoints hold the model, the optimizer, the step and the input position. The training input is
  position-addressable (`input_pipeline.pretraining_dataset(start_example=...)`), because in TF 2.20 a
  distributed iterator cannot be checkpointed: a rerun of the same command restores the checkpoint and
  restarts the input exactly where it was, reading at most part of one file to get there.
"""

import dataclasses
import os
import sys
from typing import Dict, List, Optional

import numpy as np
import tensorflow as tf
import tf_keras

from albert_tf import checkpoint as checkpoint_lib
from albert_tf import distribution
from albert_tf import input_pipeline
from albert_tf import training
from albert_tf.config import AlbertConfig
from albert_tf.pretrainer import AlbertPretrainer
from albert_tf.training import TrainingError

_RECORD_COUNTS = "input_record_counts.json"
# Per-replica sums a step returns, in this order; metrics are ratios of them over the global batch.
_SUMS = ("mlm_loss", "mlm_weight", "mlm_correct", "sop_loss", "sop_correct", "examples")
_PROGRESS_GROUPS = (("loss",), ("masked_lm_loss", "masked_lm_accuracy"),
                    ("sentence_order_loss", "sentence_order_accuracy"))
_EVAL_SUMMARIES = ("masked_lm_accuracy", "masked_lm_loss", "sentence_order_accuracy", "sentence_order_loss")


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


def _masked_lm_sums(mlm_logits, batch):
  """Weighted CE and correct predictions at the masked positions, summed over this replica's batch."""
  labels = batch["masked_lm_ids"]
  weights = tf.cast(batch["masked_lm_weights"], tf.float32)
  cross_entropy = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=mlm_logits)
  correct = tf.cast(tf.equal(tf.argmax(mlm_logits, -1, output_type=tf.int32), labels), tf.float32)
  return tf.reduce_sum(weights * cross_entropy), tf.reduce_sum(weights), tf.reduce_sum(weights * correct)


def _sentence_order_sums(sop_logits, batch):
  labels = batch["sentence_order_labels"]
  cross_entropy = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=sop_logits)
  correct = tf.cast(tf.equal(tf.argmax(sop_logits, -1, output_type=tf.int32), labels), tf.float32)
  return tf.reduce_sum(cross_entropy), tf.reduce_sum(correct)


def batch_sums(model, batch, training: bool):
  """Per-replica sums of `_SUMS` for one batch."""
  outputs = model(batch, training=training)
  mlm_loss, mlm_weight, mlm_correct = _masked_lm_sums(outputs["mlm_logits"], batch)
  sop_loss, sop_correct = _sentence_order_sums(outputs["sop_logits"], batch)
  examples = tf.cast(tf.shape(batch["sentence_order_labels"])[0], tf.float32)
  return tf.stack([mlm_loss, mlm_weight, mlm_correct, sop_loss, sop_correct, examples])


def metrics_from_sums(sums) -> Dict[str, float]:
  """Google's metric names from summed statistics (over steps and the global batch)."""
  values = dict(zip(_SUMS, np.asarray(sums, np.float64)))
  masked_lm_loss = values["mlm_loss"] / (values["mlm_weight"] + 1e-5)
  sentence_order_loss = values["sop_loss"] / max(values["examples"], 1.0)
  return {
      "masked_lm_accuracy": values["mlm_correct"] / max(values["mlm_weight"], 1e-5),
      "masked_lm_loss": masked_lm_loss,
      "sentence_order_accuracy": values["sop_correct"] / max(values["examples"], 1.0),
      "sentence_order_loss": sentence_order_loss,
      "loss": masked_lm_loss + sentence_order_loss,
  }


def replica_loss(model, global_batch_size: int):
  """batch -> (this replica's share of Google's global-batch loss, its `_SUMS`), for `training.replica_train_step`."""

  def loss_and_sums(batch):
    sums = batch_sums(model, batch, training=True)
    # The MLM denominator and the SOP mean are over the global batch: summing the replicas' losses then
    # gives exactly the loss of the whole batch, whatever the number of replicas.
    mlm_weight = tf.distribute.get_replica_context().all_reduce(tf.distribute.ReduceOp.SUM, sums[1])
    return sums[0] / (mlm_weight + 1e-5) + sums[3] / float(global_batch_size), sums

  return loss_and_sums


class Pretraining:
  """One pretraining run: the model, optimizer, checkpoints and loops of `PretrainingOptions`.

  Build it, then call `train()` and/or `evaluate()`. Construction validates everything that can be
  checked before a step (input files and their record lengths, the run directory against the config,
  `init_checkpoint` against the model) and raises with a clear message; nothing is written before that.
  """

  def __init__(self, options: PretrainingOptions, strategy: tf.distribute.Strategy):
    self.options = options
    self.strategy = strategy
    self.is_chief = distribution.is_chief(strategy)
    o = options
    if o.train_batch_size % strategy.num_replicas_in_sync:
      raise ValueError(f"--train_batch_size={o.train_batch_size} is not divisible by the "
                       f"{strategy.num_replicas_in_sync} replicas.")
    if o.max_seq_length > o.albert_config.max_position_embeddings:
      raise ValueError(f"--max_seq_length={o.max_seq_length} exceeds max_position_embeddings="
                       f"{o.albert_config.max_position_embeddings} of the config.")
    self.train_files = input_pipeline.expand_input_patterns(o.input_file) if o.do_train else []
    self.eval_files = (input_pipeline.expand_input_patterns(o.eval_input_file or o.input_file)
                       if o.do_eval else [])
    input_pipeline.check_pretraining_records(
        sorted(set(self.train_files + self.eval_files)), o.max_seq_length, o.max_predictions_per_seq)
    training.check_run_directory(o.output_dir, o.albert_config)

    training.set_mixed_precision(o.mixed_precision)
    tf_keras.utils.set_random_seed(o.random_seed)  # the same initial weights for the same seed
    with strategy.scope():
      self.model = AlbertPretrainer(o.albert_config)
      self.model(self.model.dummy_inputs(), training=False)
      self.optimizer = training.create_optimizer(
          self.model, o.mixed_precision, o.learning_rate, o.num_train_steps, o.num_warmup_steps, o.optimizer,
          o.poly_power, o.start_warmup_step)
      self.step = tf.Variable(0, dtype=tf.int64, trainable=False, name="global_step")
      # The input position: examples each input pipeline has delivered, and how many pipelines there were.
      self.examples_per_pipeline = tf.Variable(0, dtype=tf.int64, trainable=False)
      self.num_input_pipelines = tf.Variable(0, dtype=tf.int64, trainable=False)
    self.checkpoint = tf.train.Checkpoint(**{checkpoint_lib.MODEL_KEY: self.model}, optimizer=self.optimizer,
                                          step=self.step, examples_per_pipeline=self.examples_per_pipeline,
                                          num_input_pipelines=self.num_input_pipelines)
    self.last_eval = None
    self.manager = tf.train.CheckpointManager(
        self.checkpoint, training.checkpoint_dir(strategy, o.output_dir), max_to_keep=o.keep_checkpoint_max,
        checkpoint_name=training.CHECKPOINT_NAME)
    self._restore_or_initialize()

  # --- setup -------------------------------------------------------------------------------------------

  def _restore_or_initialize(self):
    o = self.options
    self.restored_from = training.restore_latest(o.output_dir, self.model, self.checkpoint)
    if self.restored_from:
      print(f"Resuming from {self.restored_from} at step {int(self.step.numpy())}.", file=sys.stderr)
      return
    if o.init_checkpoint:
      if o.init_from_group0:
        self._init_from_group0(o.init_checkpoint)
        print(f"Initialised the model from {o.init_checkpoint}.", file=sys.stderr)
      else:
        self._init_from_checkpoint(o.init_checkpoint)

  def _init_from_checkpoint(self, path: str):
    """Google's --init_checkpoint: restores what the checkpoint holds and says which heads start fresh."""
    prefix, fresh_heads = checkpoint_lib.restore_available_parts(self.model, path)
    if not fresh_heads:
      print(f"Initialised the model from {prefix}.", file=sys.stderr)
      return
    restored = ["the encoder"] + [f"the {name}" for head, name in checkpoint_lib.HEADS.items()
                                  if head not in fresh_heads]
    fresh = " and ".join(f"the {checkpoint_lib.HEADS[head]}" for head in fresh_heads)
    print(f"Initialised {' and '.join(restored)} from {prefix}. Not in that checkpoint, so starting from "
          f"fresh initialisation: {fresh}.", file=sys.stderr)

  def _init_from_group0(self, path: str):
    """Google's --init_from_group0: every parameter group starts from group 0 of a one-group checkpoint."""
    one_group = AlbertConfig.from_dict(dict(self.options.albert_config.to_dict(), num_hidden_groups=1))
    source = AlbertPretrainer(one_group)
    checkpoint_lib.restore_checkpoint(source, path)
    for target_var, source_var in zip(self._non_group_variables(self.model), self._non_group_variables(source)):
      target_var.assign(source_var)
    for group in self.model.encoder.groups:
      for block, source_block in zip(group, source.encoder.groups[0]):
        for target_var, source_var in zip(block.variables, source_block.variables):
          target_var.assign(source_var)

  @staticmethod
  def _non_group_variables(model) -> List[tf.Variable]:
    in_groups = {id(v) for group in model.encoder.groups for block in group for v in block.variables}
    return [v for v in model.variables if id(v) not in in_groups]

  # --- data ----------------------------------------------------------------------------------------------

  def _train_dataset(self):
    o = self.options
    os.makedirs(o.output_dir, exist_ok=True)
    counts = input_pipeline.count_records(self.train_files, os.path.join(o.output_dir, _RECORD_COUNTS))
    start = int(self.examples_per_pipeline.numpy())

    def dataset_fn(context: tf.distribute.InputContext):
      return input_pipeline.pretraining_dataset(
          self.train_files, o.max_seq_length, o.max_predictions_per_seq,
          context.get_per_replica_batch_size(o.train_batch_size), is_training=True, input_context=context,
          seed=o.random_seed, start_example=start, record_counts=counts)

    return self.strategy.distribute_datasets_from_function(dataset_fn)

  def _eval_dataset(self):
    o = self.options

    def dataset_fn(context: tf.distribute.InputContext):
      return input_pipeline.pretraining_dataset(
          self.eval_files, o.max_seq_length, o.max_predictions_per_seq,
          context.get_per_replica_batch_size(o.eval_batch_size), is_training=False, input_context=context)

    return self.strategy.distribute_datasets_from_function(dataset_fn)

  # --- steps ---------------------------------------------------------------------------------------------

  def _build_train_loop(self):
    o = self.options
    step_fn = training.replica_train_step(self.model, self.optimizer, replica_loss(self.model, o.train_batch_size),
                                          o.mixed_precision == "float16", o.jit_compile)
    examples_per_step = o.train_batch_size // int(self.num_input_pipelines.numpy())

    def after_step():
      self.step.assign_add(1)
      self.examples_per_pipeline.assign_add(examples_per_step)

    return training.host_loop(self.strategy, step_fn, len(_SUMS), after_step)

  def _build_eval_step(self):

    @tf.function
    def eval_step(batch):
      per_replica = self.strategy.run(lambda b: batch_sums(self.model, b, training=False), args=(batch,))
      return self.strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=None)

    return eval_step

  # --- loops ---------------------------------------------------------------------------------------------

  def train(self) -> Dict[str, float]:
    """Trains to `num_train_steps`, resuming where the run directory left off. Returns the last metrics."""
    o = self.options
    if self.is_chief:
      training.write_config(o.output_dir, o.albert_config)
    pipelines, recorded = distribution.num_input_pipelines(self.strategy), int(self.num_input_pipelines.numpy())
    if recorded and recorded != pipelines:
      raise TrainingError(f"The checkpoint was written with {recorded} input pipelines (hosts) and this run has "
                          f"{pipelines}: the input position cannot carry over. Resume on {recorded} hosts.")
    self.num_input_pipelines.assign(pipelines)
    if o.do_eval and training.awaits_evaluation(o.output_dir, self.restored_from, int(self.step.numpy())):
      self.evaluate()  # score it now, so that model.ckpt-best misses no checkpoint
    schedule = training.LoopSchedule(o.num_train_steps, o.iterations_per_loop, o.save_checkpoints_steps,
                                     o.log_steps)
    return training.run_training(
        self._build_train_loop(), iter(self._train_dataset()), self.step, schedule, o.train_batch_size,
        metrics_from_sums, _PROGRESS_GROUPS, self.optimizer.learning_rate,
        os.path.join(o.output_dir, "train") if self.is_chief else None, self._save,
        self.manager)

  def _save(self, step: int):
    training.save_run_checkpoint(self.manager, step, self.is_chief)
    if self.options.do_eval:
      self.evaluate()  # every worker takes part: the eval step's reduction spans them all

  def evaluate(self) -> Dict[str, float]:
    """Evaluates `max_eval_steps` batches; writes eval_results.txt and keeps the best checkpoint."""
    o = self.options
    eval_step = self._build_eval_step()
    totals = np.zeros(len(_SUMS))
    steps = 0
    for batch in self._eval_dataset():
      if steps >= o.max_eval_steps:
        break
      totals += eval_step(batch).numpy()
      steps += 1
    if not steps:
      raise TrainingError(f"No full eval batch of {o.eval_batch_size} in {', '.join(self.eval_files)}.")
    metrics = metrics_from_sums(totals)
    metrics["global_step"] = int(self.step.numpy())
    metrics["eval_steps"] = steps
    if self.is_chief:
      self._write_eval_results(metrics)
    self.last_eval = metrics
    return metrics

  def _write_eval_results(self, metrics: Dict[str, float]):
    o = self.options
    training.write_eval_results(o.output_dir, metrics, _EVAL_SUMMARIES)
    training.keep_if_best(o.output_dir, self.model, metrics, "masked_lm_accuracy")


def run(options: PretrainingOptions, strategy: tf.distribute.Strategy) -> Dict[str, Dict[str, float]]:
  """Trains and/or evaluates as `options` say; returns the last train and eval metrics."""
  run_state = Pretraining(options, strategy)
  if options.do_eval and not options.do_train and not (run_state.restored_from or options.init_checkpoint):
    raise TrainingError(f"--do_eval without --do_train needs a checkpoint in --output_dir={options.output_dir} "
                        "or an --init_checkpoint.")
  results = {}
  if options.do_train:
    results["train"] = run_state.train()
  if options.do_eval:
    # Training evaluates after each checkpoint; an eval-only run evaluates the restored model once.
    results["eval"] = run_state.last_eval if options.do_train else run_state.evaluate()
  return results
