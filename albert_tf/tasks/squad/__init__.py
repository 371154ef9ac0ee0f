"""SQuAD v1.1 and v2.0, Google's `run_squad_v1` and `run_squad_v2`: reading the files (`examples`), the
character alignment (`alignment`), windows and features (`features`) and their cache (`feature_cache`), the
models and heads, the objective, n-best predictions and the official scoring, and `answer_question` served on
raw text (`answer_spans`, `serving`, and v1's TFLite model)."""

from albert_tf.tasks.squad import head  # noqa: F401 (registers the SQuAD v1 and v2 heads)
