"""KLUE-NER's scores as the KLUE baseline computes them, as fractions (the baseline prints them x 100).

The baseline scores one sequence, all sentences concatenated: per sentence, its characters but the spaces
(`data.evaluated_units`) between two more positions tagged O, for its [CLS] and its last input position. Here
those two are predicted O too (an assumption: the baseline takes whatever its model predicts there), so that
they only keep one sentence's entities from running into the next.

- Entity macro F1: seqeval's `f1_score([true], [predicted], average="macro", mode="strict", scheme=IOB2)`:
  entities are B-X with the I-X after it, matched exactly (type and both ends), F1 per entity type in either
  sequence, averaged.
- Character macro F1: scikit-learn's `f1_score(true_ids, predicted_ids, labels=range(num_labels),
  average="macro", zero_division=True)` over those characters, O included (the paper leaves O out; the
  baseline's code does not), a label in neither sequence scoring 1.
"""

from typing import Dict, List, Sequence, Tuple

import numpy as np

from albert_tf.tasks.token_classification.data import OUTSIDE, entity_spans
from albert_tf.training import metrics as training_metrics


def entity_macro_f1(true_tags: Sequence[str], predicted_tags: Sequence[str]) -> float:
  """seqeval's strict IOB2 entity F1 of one sequence, macro-averaged over the entity types of either side (0
  when neither holds an entity)."""
  if len(true_tags) != len(predicted_tags):
    raise ValueError(f"{len(predicted_tags)} predicted tags for {len(true_tags)} true tags.")
  true_entities, predicted_entities = set(entity_spans(true_tags)), set(entity_spans(predicted_tags))
  types = sorted({entity[0] for entity in true_entities | predicted_entities})
  if not types:
    return 0.0
  scores = []
  for entity_type in types:
    true_of_type = {entity for entity in true_entities if entity[0] == entity_type}
    predicted_of_type = {entity for entity in predicted_entities if entity[0] == entity_type}
    # 2 tp / (true + predicted) is 2PR / (P + R), and 0 where seqeval's P or R is 0 or undefined.
    scores.append(2 * len(true_of_type & predicted_of_type) / (len(true_of_type) + len(predicted_of_type)))
  return float(np.mean(scores))


def character_macro_f1(true_tags: Sequence[str], predicted_tags: Sequence[str],
                       label_list: Sequence[str]) -> float:
  """Macro F1 of the tags as classes, every label of `label_list` counted, O included; a label in neither
  sequence scores 1 (scikit-learn's `zero_division=True`, as the baseline calls it)."""
  ids = {label: index for index, label in enumerate(label_list)}
  unknown = sorted((set(true_tags) | set(predicted_tags)) - set(ids))
  if unknown:
    raise ValueError(f"Tags {unknown} are not among the labels {list(label_list)}.")
  true_ids = np.array([ids[tag] for tag in true_tags])
  predicted_ids = np.array([ids[tag] for tag in predicted_tags])
  # The shared macro F1 scores an absent label 0; the baseline's zero_division=True scores it 1.
  absent = len(label_list) - len(np.union1d(true_ids, predicted_ids))
  return training_metrics.macro_f1(predicted_ids, true_ids, len(label_list)) + absent / len(label_list)


def concatenated(sentences: Sequence[Tuple[Sequence[str], Sequence[str]]]) -> Tuple[List[str], List[str]]:
  """The baseline's one sequence of (true tags, predicted tags) from each sentence's: O at the [CLS] and [SEP]
  positions around each sentence, on both sides."""
  true_sequence, predicted_sequence = [], []
  for true_tags, predicted_tags in sentences:
    if len(true_tags) != len(predicted_tags):
      raise ValueError(f"{len(predicted_tags)} predicted tags for {len(true_tags)} true tags in a sentence.")
    true_sequence += [OUTSIDE, *true_tags, OUTSIDE]
    predicted_sequence += [OUTSIDE, *predicted_tags, OUTSIDE]
  return true_sequence, predicted_sequence


def ner_scores(sentences: Sequence[Tuple[Sequence[str], Sequence[str]]],
               label_list: Sequence[str]) -> Dict[str, float]:
  """KLUE-NER's two scores, as fractions, of (true tags, predicted tags) per sentence (its evaluated units).

  Returns:
    {"entity_f1": entity macro F1, "character_f1": character macro F1} of `concatenated(sentences)`.
  """
  true_sequence, predicted_sequence = concatenated(sentences)
  return {"entity_f1": entity_macro_f1(true_sequence, predicted_sequence),
          "character_f1": character_macro_f1(true_sequence, predicted_sequence, label_list)}
