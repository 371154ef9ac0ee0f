"""Plants known bugs one at a time in a copy of the repository and checks that the tests catch each one.

  python dev/check_deliberate_bugs.py                  # every bug (about 10 minutes on 2 cores)
  python dev/check_deliberate_bugs.py --bugs=flipped_best,no_clipping

A developer's check, not part of CI: each bug is a silent one that would cost a user days of pretraining or
a wrong model in production (issue 27's list). For each, the copy gets one textual change, then the tests
named for it run there (`pytest -x`); the bug is caught when they fail. The copy sits beside the checkout
(so `../shared` is found) and is removed afterwards. Exit status 1 if any bug goes unnoticed.
"""

import dataclasses
import os
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Sequence

from absl import app
from absl import flags

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

FLAGS = flags.FLAGS
flags.DEFINE_list("bugs", None, "Names of the bugs to plant (default: all).")


@dataclasses.dataclass(frozen=True)
class Bug:
  path: str
  correct: str  # the text as it is: must occur exactly once
  wrong: str
  tests: Sequence[str]  # pytest arguments


BUGS = {
    "flipped_best": Bug(
        "albert_tf/training/run_directory.py",
        "(metrics[metric] <= best[metric]) if higher_is_better else (metrics[metric] >= best[metric])",
        "(metrics[metric] >= best[metric]) if higher_is_better else (metrics[metric] <= best[metric])",
        ["tests/training/test_training.py", "tests/training/test_finetuning.py", "-k", "best"]),
    "mask_token_30_percent": Bug(
        "albert_tf/data/instances.py", "if rng.random() < 0.8:", "if rng.random() < 0.3:",
        ["tests/data/test_pretraining_writer.py", "-k", "statistics"]),
    "no_clipping": Bug(
        "albert_tf/training/loop.py", "gradients, _ = tf.clip_by_global_norm(gradients, 1.0)", "pass",
        ["tests/training/test_training.py"]),
    "every_layer_in_group_0": Bug(
        "albert_tf/modeling/encoder.py", "self.groups[self.config.group_of_layer(layer_index)]", "self.groups[0]",
        ["tests/modeling/test_model.py", "tests/interop/test_huggingface_export.py", "-k", "group"]),
    "swapped_sop_labelled_0": Bug(
        "albert_tf/data/instances.py", "return SegmentPair(tokens_b, tokens_a, 1), 0  # sentence order swapped",
        "return SegmentPair(tokens_b, tokens_a, 0), 0  # sentence order swapped",
        ["tests/data/test_pretraining_writer.py", "-k", "statistics"]),
    "shards_in_corpus_order": Bug(
        "albert_tf/data/external_shuffle.py", "np.lexsort((pair, document, pass_index, key))",
        "np.lexsort((pair, document, pass_index))", ["tests/data/test_data_mixing.py", "-k", "ordered_by_source"]),
    "random_segment_from_a_neighbour": Bug(
        "albert_tf/data/instances.py", "random_index = rng.randint(0, num_documents - 1)",
        "random_index = min(num_documents - 1, document_index + rng.randint(1, 8))",
        ["tests/data/test_pretraining_writer.py", "-k", "whole_corpus"]),
    "resume_off_by_one_in_a_round": Bug(
        "albert_tf/data/pretraining_dataset.py", ".numpy()[:round_skip]", ".numpy()[:round_skip + 1]",
        ["tests/data/test_pretraining_dataset.py", "-k", "continues"]),
    "exported_labels_reversed": Bug(
        "albert_tf/tasks/classification/serving.py", "tf.constant(model.label_names)",
        "tf.constant(model.label_names[::-1])",
        ["tests/serving/test_serving.py", "-k", "classifier"]),
    "float16_without_loss_scaling": Bug(
        "albert_tf/training/loop.py", 'run.mixed_precision == "float16", jit_compile,', "False, jit_compile,",
        ["tests/training/test_pretraining.py", "-k", "mixed_precision"]),
    "micro_batch_loss_over_its_own_weights": Bug(
        "albert_tf/training/pretraining_objective.py", "loss = sums[mlm_loss] / (normalizers[0] + _MLM_WEIGHT_EPSILON)",
        # the mean of the micro-batches' means (4 of them in the test), not the whole batch's mean
        "loss = sums[mlm_loss] / (sums[1] + _MLM_WEIGHT_EPSILON) / 4",
        ["tests/training/test_further_pretraining.py", "-k", "micro_batches_reach"]),
    "squad_answer_ends_a_token_early": Bug(
        "albert_tf/tasks/squad/features.py", "end_position = answer_tokens[1] - start + context_offset",
        "end_position = answer_tokens[1] - start + context_offset - 1",
        ["tests/tasks/squad/test_squad_data.py", "-k", "punctuation or particles or windows"]),
    "squad_answers_from_any_window": Bug(
        "albert_tf/tasks/squad/predictions.py", "if not feature.token_is_max_context[start_token] or ",
        "if ", ["tests/tasks/squad/test_squad_scoring.py"]),
    "answer_question_ignores_max_context": Bug(
        "albert_tf/tasks/squad/answer_spans.py", 'start_ok = windows["is_max_context"] & ',
        'start_ok = windows["in_context"] & ', ["tests/tasks/squad/test_reading_comprehension.py", "-k", "in_graph_windows"]),
    "korquad_f1_counts_spaces": Bug(
        "albert_tf/tasks/squad/korean_scoring.py",
        'prediction_chars, gold_chars = list(prediction.replace(" ", "")), list(gold.replace(" ", ""))',
        "prediction_chars, gold_chars = list(prediction), list(gold)", ["tests/tasks/squad/test_korquad.py", "-k", "scores_are"]),
    "klue_plausible_answers_as_gold": Bug(
        "albert_tf/tasks/squad/korean_scoring.py", 'gold_texts = [answer["text"] for answer in question["answers"]]',
        'gold_texts = [answer["text"] for answer in question["answers"] + question.get("plausible_answers", [])]',
        ["tests/tasks/squad/test_klue_mrc.py", "-k", "scores_are"]),
    "klue_finished_runs_run_again": Bug(
        "albert_tf/tasks/klue/benchmark.py",
        "        if plan.is_finished(seed):",
        "        if False:",
        ["tests/tasks/klue/test_run_klue.py", "-k", "two_seeds"]),
    "klue_population_std": Bug(
        "albert_tf/tasks/klue/results.py",
        '"std": statistics.stdev(values.values())',
        '"std": statistics.pstdev(values.values())',
        ["tests/tasks/klue/test_run_klue.py", "-k", "two_seeds"]),
    "wos_joint_goal_on_slots_without_values": Bug(
        "albert_tf/tasks/dialogue_state_tracking/metrics.py",
        "joint = sum(set(turn_predicted) == set(turn_gold) for",
        "joint = sum({item.rsplit('-', 1)[0] for item in turn_predicted} == "
        "{item.rsplit('-', 1)[0] for item in turn_gold} for",
        ["tests/tasks/dialogue_state_tracking/test_dialogue_state_tracking.py", "-k", "wrong_value"]),
    "ner_piece_tag_on_every_character": Bug(
        "albert_tf/tasks/token_classification/data.py",
        "tags.append(piece_tags[piece] if starts else continuation(piece_tags[piece]))",
        "tags.append(piece_tags[piece])", ["tests/tasks/token_classification/test_token_classification_data.py"]),
    "tag_text_entity_ends_at_a_bare_piece": Bug(
        "albert_tf/tasks/token_classification/serving.py", "spans = of_start & (end > begin)[:, tf.newaxis, :]",
        "spans = of_start", ["tests/tasks/token_classification/test_token_classifier.py", "-k", "tag_text"]),
    "las_counts_relations_under_wrong_heads": Bug(
        "albert_tf/tasks/dependency_parsing/metrics.py",
        "predicted_labels = np.where(predicted_heads == gold_heads, predicted_labels, _WRONG_HEAD)",
        "predicted_labels = np.asarray(predicted_labels)", ["tests/tasks/dependency_parsing/test_dependency_parsing_parts.py", "-k", "metric"]),
    "projective_trees_score_the_root_word_without_its_right_side": Bug(
        "albert_tf/tasks/dependency_parsing/decoding.py", "words * size + tf.maximum(count, 1), batch_dims=1)",
        "words * size + words, batch_dims=1)",
        ["tests/tasks/dependency_parsing/test_dependency_parsing_parts.py", "-k", "projective"]),
    "parse_text_reads_a_bare_word_boundary_piece": Bug(
        "albert_tf/tasks/dependency_parsing/serving.py", "first_piece_index = tf.where(word_mask > 0, starts + skips, 0)",
        "first_piece_index = tf.where(word_mask > 0, starts, 0)",
        ["tests/tasks/dependency_parsing/test_dependency_parsing.py", "-k", "parse_text"]),
    "recomputation_redraws_dropout": Bug(
        "albert_tf/modeling/encoder.py", "training=True, dropout_seed=dropout_seed))", "training=True))",
        ["tests/training/test_further_pretraining.py", "-k", "dropout_masks"]),
    "duplicates_keep_the_last_copy": Bug(
        "albert_tf/data/corpus_preparation_beam.py", "(file_index, document_index), sentences = documents[0]",
        "(file_index, document_index), sentences = documents[-1]", ["tests/data/test_prepare_corpus.py", "-k", "beam"]),
    "no_nfc_before_splitting": Bug(
        "albert_tf/text/sentence_splitting.py", 'text = _CONTROL.sub("", unicodedata.normalize("NFC", text))',
        'text = _CONTROL.sub("", text)', ["tests/data/test_prepare_corpus.py"]),
    "morpheme_boundaries_inside_a_syllable": Bug(
        "albert_tf/text/korean_analyzers.py", "if 0 < morpheme.start < length and morpheme.start >= end:",
        "if 0 < morpheme.start < length:", ["tests/text/test_korean_vocabulary.py"]),
    "max_pooling_over_padding": Bug(
        "albert_tf/modeling/layers/pooling.py", "tf.reduce_max(tf.where(is_real, sequence_output, -1e9), axis=1)",
        "tf.reduce_max(sequence_output, axis=1)", ["tests/modeling/test_model.py", "-k", "sentence_embedding"]),
    "distillation_ignores_the_translation": Bug(
        "albert_tf/tasks/similarity/distillation.py", 'for name in ("inputs_a", "inputs_b"))\n',
        'for name in ("inputs_a",))\n', ["tests/tasks/similarity/test_distillation.py", "-k", "loss"]),
    "macro_f1_over_present_classes_only": Bug(
        "albert_tf/training/metrics.py",
        "classes = np.union1d(predictions, labels) if num_classes is None else np.arange(num_classes)",
        "classes = np.union1d(predictions, labels)", ["tests/tasks/classification/test_korean_tasks.py", "-k", "macro_f1 or ynat"]),
    "sentence_transformers_dense_not_transposed": Bug(
        "albert_tf/interop/sentence_transformers_folders.py", 'tensors = {"linear.weight": np.ascontiguousarray(layer.kernel.T)}',
        'tensors = {"linear.weight": np.ascontiguousarray(layer.kernel)}',
        ["tests/interop/test_sentence_transformers.py", "-k", "computes_our_embedding"]),
    "dynamic_masks_ignore_the_epoch": Bug(
        "albert_tf/data/dynamic_masking.py", "tf.cast(epoch, tf.uint64)])", "tf.zeros([], tf.uint64)])",
        ["tests/data/test_dynamic_masking.py", "-k", "new_masks_every_epoch"]),
    "dynamic_budget_in_float32": Bug(
        "albert_tf/data/dynamic_masking.py", "tf.cast(lengths, tf.float64) * self.recipe.masked_lm_prob",
        "tf.cast(lengths, tf.float32) * self.recipe.masked_lm_prob",
        ["tests/data/test_dynamic_masking.py", "-k", "googles_rules"]),
    "dynamic_masking_splits_words": Bug(
        "albert_tf/data/dynamic_masking.py", "starts = candidate & ((token_boundary > 0) | first)",
        "starts = candidate & ((token_boundary >= 0) | first)",
        ["tests/data/test_pretraining_writer.py", "-k", "statistics and dynamic"]),
    "eojeols_split_at_hangul_pieces": Bug(
        "albert_tf/data/word_boundaries.py", "return [piece.startswith(_WORD_START) for piece in pieces]",
        "return [is_start_piece(piece) for piece in pieces]",
        ["tests/data/test_pretraining_writer.py", "-k", "sentencepiece_word_boundaries"]),
    "morpheme_marks_one_piece_late": Bug(
        "albert_tf/data/word_boundaries.py",
        "return [~token if offset in at and not starts[token] else token for token, offset in zip(ids, offsets)]",
        "return [~token if offset - 1 in at and not starts[token] else token for token, offset in zip(ids, offsets)]",
        ["tests/text/test_korean_vocabulary.py", "-k", "morpheme_word_boundaries"]),
    "word_boundaries_not_recorded": Bug(
        "albert_tf/data/word_boundaries.py", "return None if rule == GOOGLE else RULES.index(rule)", "return None",
        ["tests/data/test_pretraining_writer.py", "-k", "sentencepiece_word_boundaries"]),
}


def plant_and_test(name: str, bug: Bug) -> bool:
  """Runs the bug's tests on a copy with the bug planted; True when they fail."""
  copy = tempfile.mkdtemp(prefix=f".deliberate-bug-{name}-", dir=os.path.dirname(REPO))
  try:
    shutil.copytree(REPO, copy, dirs_exist_ok=True, ignore=shutil.ignore_patterns(
        ".git", ".venv", "mutants", "mutation_results", "__pycache__", "demo_output"))
    path = os.path.join(copy, bug.path)
    with open(path, encoding="utf-8") as reader:
      text = reader.read()
    if text.count(bug.correct) != 1:
      raise ValueError(f"{bug.path} holds {text.count(bug.correct)} copies of {bug.correct!r}; update the bug.")
    with open(path, "w", encoding="utf-8") as writer:
      writer.write(text.replace(bug.correct, bug.wrong))
    start = time.time()
    # PYTHONPATH puts the copy's albert_tf before the editable install, for the tools' subprocesses too.
    result = subprocess.run([sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *bug.tests],
                            cwd=copy, env=dict(os.environ, PYTHONPATH=copy), capture_output=True, text=True)
    summary = (result.stdout.strip().splitlines() or ["(no output)"])[-1]
    caught = result.returncode == 1
    print(f"{'caught' if caught else 'MISSED'}  {name:32s} {time.time() - start:5.0f} s  {summary}", flush=True)
    return caught
  finally:
    shutil.rmtree(copy, ignore_errors=True)


def main(argv):
  del argv
  names = FLAGS.bugs or list(BUGS)
  unknown = sorted(set(names) - set(BUGS))
  if unknown:
    raise app.UsageError(f"Unknown bug(s) {', '.join(unknown)}; known: {', '.join(BUGS)}.")
  missed = [name for name in names if not plant_and_test(name, BUGS[name])]
  print(f"{len(names) - len(missed)} of {len(names)} planted bugs caught" +
        (f"; missed: {', '.join(missed)}" if missed else ""))
  sys.exit(1 if missed else 0)


if __name__ == "__main__":
  app.run(main)
