"""What masking masks, in words: whether masked spans cover whole units (eojeols, morphemes) and how long they are.

`MaskedSpans` counts, over batches of masked examples, the units that masks touch and the ones they cover whole,
and the length of each run of consecutive masked positions in pieces and in units. A unit is a run of positions
that begins at a unit start (`unit_starts`: the eojeol starts of `eojeol_starts`, or the word starts a record's
`token_boundary` holds) and ends before the next one; `[CLS]` and `[SEP]` are units of their own, so a unit never
spans two segments. Under whole-word masking with a rule whose words are these units, every touched unit is
covered whole; under Google's rule, Korean eojeols are often masked in part.
"""

import collections
from typing import Dict

import numpy as np

from albert_tf.data import word_boundaries

# Span lengths from this on are counted together.
LONGEST_COUNTED = 6


def eojeol_start_table(sp_model) -> np.ndarray:
  """Whether each piece of `sp_model` begins an eojeol (a "▁" piece)."""
  return np.array(word_boundaries.piece_starts(sp_model, "sentencepiece"))


class MaskedSpans:
  """Counts of masked units and spans over the batches `add`ed."""

  def __init__(self, cls_id: int, sep_id: int):
    self.cls_id, self.sep_id = cls_id, sep_id
    self.units_touched = 0
    self.units_whole = 0
    self.masked_tokens = 0
    self.pieces = collections.Counter()  # span length in pieces -> spans
    self.units = collections.Counter()  # span length in units -> spans

  def add(self, original_ids: np.ndarray, lengths: np.ndarray, masked: np.ndarray, unit_starts: np.ndarray):
    """Counts a batch.

    Args:
      original_ids: `[batch, seq]` ids before masking.
      lengths: `[batch]` real tokens of each example.
      masked: `[batch, seq]` whether each position is masked.
      unit_starts: `[batch, seq]` whether each position begins a unit.
    """
    batch, seq = original_ids.shape
    real = np.arange(seq)[None] < lengths[:, None]
    special = real & ((original_ids == self.cls_id) | (original_ids == self.sep_id))
    after_special = np.concatenate([np.ones((batch, 1), bool), special[:, :-1]], axis=1)
    starts = real & (unit_starts.astype(bool) | special | after_special)
    masked = masked.astype(bool) & real & ~special
    # Units numbered across the batch: each example's first position starts one.
    unit = np.cumsum(starts.ravel()) - 1
    in_unit = real.ravel()
    totals = np.bincount(unit[in_unit], minlength=unit.max() + 1)
    hits = np.bincount(unit[masked.ravel()], minlength=len(totals))
    self.units_touched += int((hits > 0).sum())
    self.units_whole += int(((hits > 0) & (hits == totals)).sum())
    self.masked_tokens += int(masked.sum())
    # Runs of consecutive masked positions: their lengths in pieces and in the units they touch.
    flat = masked.ravel()
    begins = flat & ~np.concatenate([[False], flat[:-1]]) | (flat & (np.arange(flat.size) % seq == 0))
    run = np.cumsum(begins) - 1
    run_pieces = np.bincount(run[flat])
    first_unit = np.full(len(run_pieces), -1)
    last_unit = np.full(len(run_pieces), -1)
    np.maximum.at(last_unit, run[flat], unit[flat])
    first_unit[run[begins]] = unit[begins]
    run_units = last_unit - first_unit + 1
    self.pieces.update(np.minimum(run_pieces, LONGEST_COUNTED).tolist())
    self.units.update(np.minimum(run_units, LONGEST_COUNTED).tolist())

  @property
  def whole_share(self) -> float:
    """The share of units touched by a mask that are masked whole."""
    return self.units_whole / max(1, self.units_touched)

  @staticmethod
  def _shares(counter: collections.Counter) -> Dict[int, float]:
    total = max(1, sum(counter.values()))
    return {length: counter[length] / total for length in range(1, LONGEST_COUNTED + 1)}

  def summary(self) -> Dict[str, object]:
    """The share of whole units and the distributions of span lengths (the last bucket: that length or more)."""
    return {"units_touched": self.units_touched, "whole_share": self.whole_share,
            "span_pieces": self._shares(self.pieces), "span_units": self._shares(self.units),
            "mean_span_pieces": sum(k * v for k, v in self.pieces.items()) / max(1, sum(self.pieces.values())),
            "mean_span_units": sum(k * v for k, v in self.units.items()) / max(1, sum(self.units.values()))}


def masked_positions(batch_positions: np.ndarray, batch_weights: np.ndarray, seq: int) -> np.ndarray:
  """`[batch, seq]` booleans from `masked_lm_positions` and `masked_lm_weights`."""
  masked = np.zeros((len(batch_positions), seq), bool)
  rows = np.broadcast_to(np.arange(len(batch_positions))[:, None], batch_positions.shape)
  used = batch_weights > 0
  masked[rows[used], batch_positions[used]] = True
  return masked


def original_ids(input_ids: np.ndarray, batch_positions: np.ndarray, batch_ids: np.ndarray,
                 batch_weights: np.ndarray) -> np.ndarray:
  """The ids before masking: `input_ids` with each masked position's label put back."""
  ids = input_ids.copy()
  rows = np.broadcast_to(np.arange(len(input_ids))[:, None], batch_positions.shape)
  used = batch_weights > 0
  ids[rows[used], batch_positions[used]] = batch_ids[used]
  return ids
