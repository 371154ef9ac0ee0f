"""ALBERT's pretraining objective: masked-LM plus (optionally) sentence order, with Google's losses and names.

The MLM loss is `Σ w·CE / (Σ w + 1e-5)` over the masked positions and the SOP loss the mean cross-entropy,
both over the *global* batch under every strategy and any gradient accumulation: the counts they divide by
are those of the whole batch (`loss_normalizers`), so the losses of the replicas' micro-batches add up to
exactly the loss of the whole batch.

Without sentence order (`sentence_order_prediction=False`, Hugging Face's `AlbertForMaskedLM`) the model has
no SOP head and the loss and every figure are the masked LM's; the records are the same.
"""

from typing import Dict

import numpy as np
import tensorflow as tf

_MLM_WEIGHT_EPSILON = 1e-5  # Google's: no division by 0 when nothing is masked


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
  """MLM (+ SOP) on an `AlbertPretrainer`, for `loop.Trainer` and pretraining's evaluation.

  Args:
    sentence_order_prediction: add the sentence-order loss (the model has the SOP head); False is MLM only.
  """

  primary_metric = "masked_lm_accuracy"

  def __init__(self, sentence_order_prediction: bool = True):
    self.sentence_order_prediction = sentence_order_prediction
    sop = sentence_order_prediction
    # Per-replica sums a step returns, in this order; metrics are ratios of them over the global batch.
    self.sum_names = ("mlm_loss", "mlm_weight", "mlm_correct") + (("sop_loss", "sop_correct") if sop else ()) + (
        "examples",)
    self.progress_groups = (("loss",), ("masked_lm_loss", "masked_lm_accuracy")) + (
        (("sentence_order_loss", "sentence_order_accuracy"),) if sop else ())
    self.summary_names = ("masked_lm_accuracy", "masked_lm_loss") + (
        ("sentence_order_accuracy", "sentence_order_loss") if sop else ())

  def batch_sums(self, model, batch, training: bool):
    """Per-replica `sum_names` for one batch."""
    outputs = model(batch, training=training)
    sums = dict(zip(("mlm_loss", "mlm_weight", "mlm_correct"), _masked_lm_sums(outputs["mlm_logits"], batch)))
    if self.sentence_order_prediction:
      sums["sop_loss"], sums["sop_correct"] = _sentence_order_sums(outputs["sop_logits"], batch)
    sums["examples"] = tf.cast(tf.shape(batch["masked_lm_ids"])[0], tf.float32)
    return tf.stack([sums[name] for name in self.sum_names])

  def metrics_from_sums(self, sums) -> Dict[str, float]:
    """Google's metric names from summed statistics (over steps and the global batch)."""
    values = dict(zip(self.sum_names, np.asarray(sums, np.float64)))
    masked_lm_loss = values["mlm_loss"] / (values["mlm_weight"] + _MLM_WEIGHT_EPSILON)
    metrics = {
        "masked_lm_accuracy": values["mlm_correct"] / max(values["mlm_weight"], _MLM_WEIGHT_EPSILON),
        "masked_lm_loss": masked_lm_loss,
        "loss": masked_lm_loss,
    }
    if self.sentence_order_prediction:
      metrics["sentence_order_accuracy"] = values["sop_correct"] / max(values["examples"], 1.0)
      metrics["sentence_order_loss"] = values["sop_loss"] / max(values["examples"], 1.0)
      metrics["loss"] += metrics["sentence_order_loss"]
    return metrics

  def loss_normalizers(self, batch):
    """The MLM weight and the examples of a batch, from its inputs alone (summed over the global batch by the
    step, before any micro-batch runs)."""
    return tf.stack([tf.reduce_sum(tf.cast(batch["masked_lm_weights"], tf.float32)),
                     tf.cast(tf.shape(batch["masked_lm_ids"])[0], tf.float32)])

  def replica_loss(self, model):
    """(batch, global `loss_normalizers`) -> (this batch's share of Google's global-batch loss, its sums)."""
    mlm_loss = self.sum_names.index("mlm_loss")
    sop_loss = self.sum_names.index("sop_loss") if self.sentence_order_prediction else None

    def loss_and_sums(batch, normalizers):
      sums = self.batch_sums(model, batch, training=True)
      loss = sums[mlm_loss] / (normalizers[0] + _MLM_WEIGHT_EPSILON)
      if sop_loss is not None:
        loss += sums[sop_loss] / normalizers[1]
      return loss, sums

    return loss_and_sums
