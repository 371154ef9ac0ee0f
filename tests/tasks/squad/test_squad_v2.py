"""SQuAD v2.0 end to end: a tiny model learns to tell unanswerable questions, with Google's null-odds file.

A file apart from test_reading_comprehension.py (SQuAD v1.1 and RACE), so that two test workers share the runs.
The v2 export (the threshold of the best evaluation served by `answer_question`) is KLUE-MRC's test
(test_klue_mrc.py), which runs the same tool and export.
"""

from albert_tf.tasks.squad import predictions as squad_predictions
from albert_tf.training import run_directory
from tests.conftest import SP8K_MODEL, requires_shared
from tests.tasks.squad.reading_comprehension_data import (dev_questions, first_span_baseline, read_json, run_in,
                                                          squad_flags)

pytestmark = requires_shared(SP8K_MODEL)


def test_squad_v2_tool_learns_to_tell_unanswerable_questions(tmp_path):
  # One run of 200 steps, scored at its end (the fine-tuning driver's resume is the SQuAD v1 fixture's).
  run_in("run_squad_v2", tmp_path, *squad_flags(tmp_path, 2, checkpoint_steps=200), "--num_train_epochs=8")
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
  assert list(predictions) == list(null_odds) and "" in predictions.values()  # some questions judged unanswerable
