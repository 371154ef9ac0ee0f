"""WoS's scores as KLUE's baseline computes them, over user turns: joint goal accuracy (the predicted state set
equals the gold set) and TRADE's slot F1 (per turn, the F1 of the predicted "domain-slot-value" items against
the gold ones, averaged over turns; a turn with an empty gold state scores 1 when nothing is predicted, else 0).
Both are fractions here; KLUE publishes them ×100."""

from typing import Dict, Sequence


def turn_slot_f1(predicted: Sequence[str], gold: Sequence[str]) -> float:
  """TRADE's F1 of one turn's state items (each counted once per occurrence, as TRADE counts them)."""
  if not gold:
    return 0.0 if predicted else 1.0
  true_positives = sum(1 for item in gold if item in predicted)
  false_positives = sum(1 for item in predicted if item not in gold)
  if not true_positives:
    return 0.0
  precision = true_positives / (true_positives + false_positives)
  recall = true_positives / len(gold)
  return 2 * precision * recall / (precision + recall)


def state_tracking_scores(predicted: Sequence[Sequence[str]], gold: Sequence[Sequence[str]]) -> Dict[str, float]:
  """`joint_goal_accuracy` and `slot_f1` over turns (each turn's predicted and gold state items)."""
  if len(predicted) != len(gold):
    raise ValueError(f"{len(predicted)} predicted states for {len(gold)} turns.")
  if not gold:
    return {"joint_goal_accuracy": 0.0, "slot_f1": 0.0}
  joint = sum(set(turn_predicted) == set(turn_gold) for turn_predicted, turn_gold in zip(predicted, gold))
  f1 = sum(turn_slot_f1(turn_predicted, turn_gold) for turn_predicted, turn_gold in zip(predicted, gold))
  return {"joint_goal_accuracy": joint / len(gold), "slot_f1": f1 / len(gold)}
