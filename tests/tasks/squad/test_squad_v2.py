"""SQuAD v2.0 end to end: a tiny model learns to tell unanswerable questions and exports its threshold.

A file apart from test_reading_comprehension.py (SQuAD v1.1 and RACE), so that two test workers share the runs.
"""

import numpy as np
import tensorflow as tf

from albert_tf.tasks.squad import predictions as squad_predictions
from albert_tf.tasks.squad.objective import TFLITE_FILE
from albert_tf.training import run_directory
from tests.conftest import SP8K_MODEL, requires_shared
from tests.tasks.squad.reading_comprehension_data import (dev_questions, first_span_baseline, read_json, run_and_export,
                                                          squad_flags)

pytestmark = requires_shared(SP8K_MODEL)


def test_squad_v2_tool_learns_to_tell_unanswerable_questions_and_exports_its_threshold(tmp_path):
  # One run of 200 steps, scored at its end (the fine-tuning driver's resume is the SQuAD v1 fixture's).
  run_and_export("run_squad_v2", tmp_path, [*squad_flags(tmp_path, 2, checkpoint_steps=200), "--num_train_epochs=8"])
  run = tmp_path / "run"
  dataset = read_json(tmp_path / "dev.json")["data"]
  baseline = first_span_baseline(dataset, version=2)
  best = run_directory.read_best_info(str(run))
  assert best["f1"] > baseline["f1"] + 30, (best, baseline)
  assert best["NoAns_total"] > 0 and best["HasAns_total"] > 0
  assert best["NoAns_exact"] > 50 and best["HasAns_f1"] > baseline["HasAns_f1"] + 20, (best, baseline)
  assert {"best_f1", "best_f1_thresh", "best_exact", "null_score_diff_threshold"} <= set(best)
  predictions = read_json(run / squad_predictions.PREDICTIONS_FILE)
  null_odds = read_json(run / squad_predictions.NULL_ODDS_FILE)
  examples = dev_questions(str(tmp_path / "dev.json"))
  assert list(null_odds) == [e.qas_id for e in examples]
  # The SavedModel answers with the threshold of the best evaluation: "" exactly where predictions.json has "".
  served = tf.saved_model.load(str(tmp_path / "export" / "1")).signatures["answer_question"](
      question=tf.constant([e.question_text for e in examples]), context=tf.constant([e.context_text for e in examples]))
  assert [text.decode("utf-8") for text in served["answer"].numpy()] == [predictions[e.qas_id] for e in examples]
  np.testing.assert_allclose(served["no_answer_score"].numpy(), [null_odds[e.qas_id] for e in examples], atol=1e-4)
  assert served["has_answer"].numpy().tolist() == [bool(predictions[e.qas_id]) for e in examples]
  assert not (tmp_path / "export" / "1" / TFLITE_FILE).exists()  # Google's v2 exports no TFLite model
