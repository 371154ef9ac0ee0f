"""ALBERT's pretraining objective: masked-LM plus sentence order, with Google's losses and metric names.

The MLM loss is `Σ w·CE / (Σ w + 1e-5)` over the masked positions and the SOP loss the mean cross-entropy,
both over the *global* batch under every strategy: each replica's loss is its share, so the sum over the
replicas is exactly the loss of the whole batch.
"""

from typing import Dict

import numpy as np
import tensorflow as tf


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


class PretrainingObjective:
  """MLM + SOP on an `AlbertPretrainer`, for `loop.Trainer` and pretraining's evaluation."""

  # Per-replica sums a step returns, in this order; metrics are ratios of them over the global batch.
  sum_names = ("mlm_loss", "mlm_weight", "mlm_correct", "sop_loss", "sop_correct", "examples")
  progress_groups = (("loss",), ("masked_lm_loss", "masked_lm_accuracy"),
                     ("sentence_order_loss", "sentence_order_accuracy"))
  summary_names = ("masked_lm_accuracy", "masked_lm_loss", "sentence_order_accuracy", "sentence_order_loss")
  primary_metric = "masked_lm_accuracy"

  def batch_sums(self, model, batch, training: bool):
    """Per-replica `sum_names` for one batch."""
    outputs = model(batch, training=training)
    mlm_loss, mlm_weight, mlm_correct = _masked_lm_sums(outputs["mlm_logits"], batch)
    sop_loss, sop_correct = _sentence_order_sums(outputs["sop_logits"], batch)
    examples = tf.cast(tf.shape(batch["sentence_order_labels"])[0], tf.float32)
    return tf.stack([mlm_loss, mlm_weight, mlm_correct, sop_loss, sop_correct, examples])

  def metrics_from_sums(self, sums) -> Dict[str, float]:
    """Google's metric names from summed statistics (over steps and the global batch)."""
    values = dict(zip(self.sum_names, np.asarray(sums, np.float64)))
    masked_lm_loss = values["mlm_loss"] / (values["mlm_weight"] + 1e-5)
    sentence_order_loss = values["sop_loss"] / max(values["examples"], 1.0)
    return {
        "masked_lm_accuracy": values["mlm_correct"] / max(values["mlm_weight"], 1e-5),
        "masked_lm_loss": masked_lm_loss,
        "sentence_order_accuracy": values["sop_correct"] / max(values["examples"], 1.0),
        "sentence_order_loss": sentence_order_loss,
        "loss": masked_lm_loss + sentence_order_loss,
    }

  def replica_loss(self, model, global_batch_size: int):
    """batch -> (this replica's share of Google's global-batch loss, its sums), for `loop.replica_train_step`."""

    def loss_and_sums(batch):
      sums = self.batch_sums(model, batch, training=True)
      # The MLM denominator and the SOP mean are over the global batch: summing the replicas' losses then
      # gives exactly the loss of the whole batch, whatever the number of replicas.
      mlm_weight = tf.distribute.get_replica_context().all_reduce(tf.distribute.ReduceOp.SUM, sums[1])
      return sums[0] / (mlm_weight + 1e-5) + sums[3] / float(global_batch_size), sums

    return loss_and_sums
