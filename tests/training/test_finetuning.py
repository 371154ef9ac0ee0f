"""Fine-tuning: every GLUE processor end to end, Google's losses, exact resume, export, bad input. Its replicas
and workers are tested with pretraining's, on one pair of worker processes (test_pretraining.py)."""

import dataclasses
import json
import os
import random
import re
import sys
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

import albert_tf
from albert_tf.data import finetuning_dataset
from albert_tf.errors import TaskError, TrainingError
from albert_tf.modeling import checkpoints as checkpoint_lib
from albert_tf.serving import saved_model
from albert_tf.tasks.classification.catalogue import get_task
from albert_tf.tasks.classification.model import AlbertClassifier
from albert_tf.tasks.classification.objective import ClassifierObjective
from albert_tf.tasks.classification.user_tsv import TsvFormat
from albert_tf.tasks.similarity.model import AlbertSentenceEncoder
from albert_tf.tasks.similarity.objective import SentenceSimilarityObjective
from albert_tf.text.graph_tokenizer import GraphTokenizer
from albert_tf.training import distribution, finetuning, loop, metrics, run_directory
from albert_tf.training import finetuning_objectives
from tests.conftest import (SHARED, SP8K_MODEL, TOOLS, damage_checkpoint, kill_once_a_checkpoint_is_written,
                            requires_shared, run_tool, write)
from tests.tasks.classification.glue_data import GLUE_FILES, glue_dir, write_glue_data  # noqa: F401 (a fixture)
from tests.conftest import read_tsv

pytestmark = requires_shared(SP8K_MODEL)
TWEETS = os.path.join(SHARED, "finetune", "tweets_GroundTruth.tsv")
SEQ = 32
CONFIG = dict(vocab_size=8000, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
              embedding_size=16, max_position_embeddings=SEQ)
ONE_DEVICE = distribution.get_strategy("one_device")


def options(data_dir, output_dir, **changes):
  values = dict(data_dir=str(data_dir), output_dir=str(output_dir), albert_config=albert_tf.AlbertConfig(**CONFIG),
                spm_model_file=SP8K_MODEL, max_seq_length=SEQ, do_train=True, do_eval=True, do_predict=True,
                train_batch_size=2, eval_batch_size=2, predict_batch_size=2, learning_rate=1e-3, train_step=4,
                save_checkpoints_steps=2, iterations_per_loop=2)
  values.update(changes)
  return finetuning.FineTuningOptions(**values)


def assert_regression_export_gives_the_score(results):
  """The export of a regression run serves its score, from text and from text pairs, as the Keras model does."""
  model = AlbertClassifier(albert_tf.AlbertConfig(**CONFIG), None)
  checkpoint_lib.restore_checkpoint(model, results["weights"])
  loaded = tf.saved_model.load(results["export"])
  tokenizer = GraphTokenizer(SP8K_MODEL)
  texts_a = ["A man plays a flute.", "A jet flies over the hills and far away, high in the sky."]
  texts_b = ["A man plays.", "A plane."]
  single = loaded.signatures["classify_text"](text_a=tf.constant(texts_a))
  pair = loaded.signatures["classify_text_pair"](text_a=tf.constant(texts_a), text_b=tf.constant(texts_b))
  assert set(single) == set(pair) == {"predictions"}
  for outputs, texts_b_or_none in ((single, None), (pair, tf.constant(texts_b))):
    inputs = tokenizer.encode_and_pack(tf.constant(texts_a), texts_b_or_none, SEQ)
    np.testing.assert_allclose(outputs["predictions"], model(inputs, training=False)["logits"][:, 0], atol=1e-5)


# One GLUE task of each kind through the driver: a single sentence scored by MCC (CoLA), a pair with F1
# (MRPC), a regression (STS-B), three labels with a dev file of its own (MNLI mismatched). The other six differ
# only in their files' layouts, which test_tasks.py reads for all ten.
@pytest.mark.parametrize("name", ["cola", "mrpc", "sts-b", "mnli-mm"])
def test_each_kind_of_glue_task_trains_evaluates_and_predicts(glue_dir, tmp_path, name):
  task = get_task(name)
  # The regression's run also exports (what classification exports: the best-of-three run's tests).
  export_dir = str(tmp_path / "export") if task.is_regression else None
  results = finetuning.run(options(glue_dir, tmp_path / "run", train_step=2, export_dir=export_dir),
                           ClassifierObjective(task), ONE_DEVICE)
  evaluation = results["eval"]
  assert evaluation["global_step"] == 2
  assert set(task.metric_names) | {"loss"} <= set(evaluation)
  assert evaluation["eval_examples"] == len(task.read_examples(str(glue_dir), "dev"))
  text = (tmp_path / "run" / run_directory.EVAL_RESULTS).read_text()
  for metric in task.metric_names:
    assert f"{metric} = " in text
  # The names of Google's run_classifier.py too, for scripts written against its eval_results.txt.
  google_names = {"cola": ["matthew_corr", "eval_accuracy"], "sts-b": ["pearson", "MSE"]}.get(name, ["eval_accuracy"])
  for google_name in google_names + ["eval_loss"]:
    assert re.search(rf"^{google_name} = -?[0-9.e+-]+$", text, re.MULTILINE), google_name
  best = json.loads((tmp_path / "run" / run_directory.BEST_CHECKPOINT_INFO).read_text())
  assert best["global_step"] == 2 and task.primary_metric in best
  assert results["weights"].endswith(run_directory.BEST_CHECKPOINT)

  test_examples = task.read_examples(str(glue_dir), "test")
  submitted = read_tsv(tmp_path / "run" / finetuning_objectives.SUBMIT_RESULTS)
  assert submitted[0] == ["index", "prediction"]
  assert [row[0] for row in submitted[1:]] == [example.guid for example in test_examples]
  raw = np.array(read_tsv(tmp_path / "run" / finetuning_objectives.TEST_RESULTS), np.float64)
  if task.is_regression:
    assert raw.shape == (len(test_examples), 1)
    np.testing.assert_allclose([float(row[1]) for row in submitted[1:]], raw[:, 0], rtol=1e-6)
    assert_regression_export_gives_the_score(results)
  else:
    assert raw.shape == (len(test_examples), len(task.label_list))
    np.testing.assert_allclose(raw.sum(axis=1), 1.0, atol=1e-5)
    assert [row[1] for row in submitted[1:]] == [task.label_list[i] for i in raw.argmax(axis=1)]


def test_losses_and_metrics_are_googles():
  logits = tf.constant([[2.0, -1.0, 0.5], [0.1, 0.2, 0.3]])
  labels = tf.constant([0, 1])
  task = get_task("mnli")
  objective = ClassifierObjective(task)

  class Fixed:
    training = None

    def __call__(self, inputs, training):
      self.training = training
      return {"logits": logits}

  model = Fixed()
  batch = {"inputs": {}, "labels": labels}
  assert objective.loss_normalizers(batch).numpy().tolist() == [2.0]
  loss, sums = objective.replica_loss(model)(batch, tf.constant([4.0]))
  assert model.training is True
  log_probs = tf.nn.log_softmax(logits).numpy()
  expected = -(log_probs[0, 0] + log_probs[1, 1])
  assert float(loss) == pytest.approx(expected / 4, rel=1e-6)  # a share of the global batch of 4
  assert objective.metrics_from_sums(sums.numpy()) == pytest.approx({"loss": expected / 2, "accuracy": 0.5})

  assert objective.metrics_from_sums([0.0, 0.0, 0.0]) == {"loss": 0.0, "accuracy": 0.0}  # no examples: no division

  regression = ClassifierObjective(get_task("sts-b"))
  scores = np.array([[1.0], [3.5], [2.0]], np.float32)
  gold = np.array([1.5, 3.0, 0.0], np.float32)
  split = finetuning_dataset.EncodedSplit({}, gold, ["a", "b", "c"], max_seq_length=8)
  evaluation = regression.evaluation_metrics(scores, split)
  assert evaluation["loss"] == pytest.approx(np.mean((scores[:, 0] - gold) ** 2), rel=1e-6)
  assert evaluation["pearson"] == pytest.approx(metrics.pearson(scores[:, 0], gold))
  # Google's run_classifier names beside ours: STS-B's pearson, MSE and eval_loss.
  assert set(evaluation) == {"loss", "pearson", "spearman", "mse", "MSE", "eval_loss"}
  assert evaluation["MSE"] == evaluation["mse"] and evaluation["eval_loss"] == evaluation["loss"]


def test_sentence_similarity_loss_fits_cosines_to_scaled_scores():
  objective = SentenceSimilarityObjective(get_task("sts-b"), score_range=(0.0, 5.0))
  embeddings = {"a": tf.constant([[1.0, 0.0], [0.6, 0.8]]), "b": tf.constant([[0.0, 1.0], [0.6, 0.8]])}
  calls = []

  def model(inputs, training):
    calls.append(training)
    return {"embedding": embeddings[inputs]}

  batch = {"inputs_a": "a", "inputs_b": "b", "labels": tf.constant([1.0, 4.0])}
  assert objective.loss_normalizers(batch).numpy().tolist() == [2.0]
  loss, sums = objective.replica_loss(model)(batch, tf.constant([8.0]))
  # Cosines 0 and 1 against targets 0.2 and 0.8: squared errors 0.04 and 0.04.
  np.testing.assert_allclose(sums.numpy(), [0.08, 2.0], rtol=1e-6)
  assert float(loss) == pytest.approx(0.08 / 8, rel=1e-6) and calls == [True, True]
  assert objective.metrics_from_sums(sums.numpy()) == pytest.approx({"loss": 0.04})
  assert objective.metrics_from_sums([0.0, 0.0]) == {"loss": 0.0}


@requires_shared(TWEETS)
def test_classifier_learns_real_sentences(tmp_path):
  """Overfitting 32 real tweets shows that the whole model and head learn."""
  with open(TWEETS, encoding="utf-8") as reader:
    lines = [next(reader) for _ in range(32)]
  write(tmp_path / "data" / "train.tsv", [line.rstrip("\n") for line in lines])
  write(tmp_path / "data" / "dev.tsv", [line.rstrip("\n") for line in lines])
  task = get_task("tsv", TsvFormat(text_a_column=2, label_column=1, label_threshold=0.0))
  results = finetuning.run(
      options(tmp_path / "data", tmp_path / "run", do_predict=False, train_batch_size=8, eval_batch_size=8,
              train_step=60, save_checkpoints_steps=60, iterations_per_loop=20, learning_rate=3e-3, warmup_step=6,
              dropout_prob=0.0), ClassifierObjective(task), ONE_DEVICE)
  assert results["train"]["loss"] < 0.3
  assert results["eval"]["accuracy"] >= 0.9


def test_training_stream_is_a_permutation_per_epoch_and_resumes_anywhere():
  labels = np.arange(10, dtype=np.int32)
  packed = finetuning_dataset.PackedSequences(
      tf.ragged.constant([[2, 5 + i, 3] for i in range(10)], tf.int32), tf.fill([10], 3))
  split = finetuning_dataset.EncodedSplit({"inputs": packed}, labels, [str(i) for i in range(10)], max_seq_length=6)

  def stream(start, batches, context=None, batch_size=2, seed=7):
    dataset = finetuning_dataset.training_dataset(split, batch_size, seed=seed, start_example=start,
                                                  input_context=context)
    return np.concatenate([batch["labels"].numpy() for batch in dataset.take(batches)])

  whole = stream(0, 15)
  assert sorted(whole[:10]) == list(range(10)) and sorted(whole[10:20]) == list(range(10))
  assert list(whole[:10]) != list(whole[10:20])  # another order each epoch
  assert list(stream(0, 15, seed=8)) != list(whole)  # another order for another seed
  default_start = finetuning_dataset.training_dataset(split, 2, seed=7)
  np.testing.assert_array_equal(np.concatenate([b["labels"] for b in default_start.take(5)]), whole[:10])
  assert default_start.element_spec["labels"].shape.as_list() == [2]  # static: no partial last batch
  np.testing.assert_array_equal(stream(14, 8), whole[14:30])
  # Two input pipelines deal out the same global stream.
  for pipeline in (0, 1):
    half = stream(0, 5, tf.distribute.InputContext(2, pipeline, 2))
    np.testing.assert_array_equal(half, whole[pipeline::2][:10])
  batch = next(iter(finetuning_dataset.training_dataset(split, 2, seed=7)))
  assert batch["inputs"]["input_word_ids"].shape == (2, 6)
  assert batch["weights"].dtype == tf.float32 and batch["weights"].numpy().tolist() == [1.0, 1.0]
  np.testing.assert_array_equal(batch["inputs"]["input_mask"][0], [1, 1, 1, 0, 0, 0])


def test_evaluation_pads_to_whole_global_batches_with_weight_zero():
  packed = finetuning_dataset.PackedSequences(tf.ragged.constant([[2, 7, 3, 8, 3]] * 5, tf.int32), tf.fill([5], 3))
  split = finetuning_dataset.EncodedSplit({"inputs": packed}, np.arange(5, dtype=np.float32), list("abcde"), 8)
  batches = list(finetuning_dataset.evaluation_dataset(split, 2, 4))
  assert len(batches) == 4  # 5 examples, padded to 8
  weights = np.concatenate([b["weights"].numpy() for b in batches])
  np.testing.assert_array_equal(weights, [1, 1, 1, 1, 1, 0, 0, 0])
  np.testing.assert_array_equal(np.concatenate([b["example_index"] for b in batches])[:5], range(5))
  np.testing.assert_array_equal(batches[0]["inputs"]["input_type_ids"][0], [0, 0, 0, 1, 1, 0, 0, 0])


@pytest.fixture(scope="module")
def pretrained(tmp_path_factory):
  """A pretrainer checkpoint to fine-tune from (random weights stand in for pretraining)."""
  path = tmp_path_factory.mktemp("pretrained") / "model.ckpt"
  model = albert_tf.AlbertPretrainer(albert_tf.AlbertConfig(**CONFIG))
  model(model.dummy_inputs())
  checkpoint_lib.save_checkpoint(model, str(path))
  return model, str(path)


def test_init_checkpoint_starts_the_encoder(glue_dir, tmp_path, pretrained):
  model, path = pretrained
  run = finetuning.FineTuning(options(glue_dir, tmp_path / "run", init_checkpoint=path),
                              ClassifierObjective(get_task("mrpc")), ONE_DEVICE)
  for ours, theirs in zip(run.model.encoder.variables, model.encoder.variables):
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
  assert run.run.restored_from is None


class ScriptedAccuracy(ClassifierObjective):
  """The real evaluation, with the accuracy of each one taken from `script`: the best step is then known."""

  def __init__(self, task, script):
    super().__init__(task)
    self.script = list(script)

  def evaluation_metrics(self, outputs, split):
    return dict(super().evaluation_metrics(outputs, split), accuracy=self.script.pop(0))


def restored_classifier(task, prefix):
  model = AlbertClassifier(albert_tf.AlbertConfig(**CONFIG), task.label_list)
  checkpoint_lib.restore_checkpoint(model, prefix)
  return model


def split_inputs(glue_dir, task, split):
  examples = task.read_examples(str(glue_dir), split)
  return GraphTokenizer(SP8K_MODEL).encode_and_pack(
      tf.constant([e.text_a for e in examples]), tf.constant([e.text_b for e in examples]), SEQ), examples


@pytest.fixture(scope="module")
def best_of_three_run(tmp_path_factory):
  """A run whose dev accuracy is 0.4, 0.9, 0.6 at steps 2, 4, 6, exported: its options and results. The tests
  that check its export read it; only the best checkpoint test adds to its directory (a later evaluation)."""
  root = tmp_path_factory.mktemp("best_of_three")
  run_options = options(write_glue_data(root), root / "run", train_step=6, save_checkpoints_steps=2,
                        keep_checkpoint_max=2, learning_rate=1e-2, export_dir=str(root / "export"))
  return run_options, finetuning.run(run_options, ScriptedAccuracy(get_task("mnli"), [0.4, 0.9, 0.6]), ONE_DEVICE)


def test_best_checkpoint_is_kept_then_predicted_exported_and_rescored(best_of_three_run):
  """Dev accuracy 0.4, 0.9, 0.6 at steps 2, 4, 6: step 4's weights are model.ckpt-best, and prediction,
  export and a later evaluation without training all use them, not the last ones."""
  task = get_task("mnli")
  run_options, results = best_of_three_run
  run_dir, glue_dir = Path(run_options.output_dir), run_options.data_dir
  assert results["weights"].endswith(run_directory.BEST_CHECKPOINT)
  best_info = run_directory.read_best_info(str(run_dir))
  assert best_info["global_step"] == 4 and best_info["accuracy"] == 0.9  # with every metric of that evaluation
  assert {"loss", "eval_loss", "eval_examples"} <= set(best_info)
  # keep_checkpoint_max=2: model.ckpt-2 is gone; model.ckpt-best keeps step 4's weights after ckpt-4 goes too.
  assert sorted(p.name for p in run_dir.glob("model.ckpt-*.index")) == [
      "model.ckpt-4.index", "model.ckpt-6.index", "model.ckpt-best.index"]
  best = restored_classifier(task, str(run_dir / run_directory.BEST_CHECKPOINT))
  step4 = restored_classifier(task, str(run_dir / "model.ckpt-4"))
  step6 = restored_classifier(task, str(run_dir / "model.ckpt-6"))
  for ours, theirs in zip(best.variables, step4.variables):
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy(), err_msg=ours.name)

  inputs, test_examples = split_inputs(glue_dir, task, "test")
  expected = tf.nn.softmax(step4(inputs, training=False)["logits"]).numpy()
  last = tf.nn.softmax(step6(inputs, training=False)["logits"]).numpy()
  assert np.abs(expected - last).max() > 1e-3  # the two choices give different, detectable outputs
  raw = np.array(read_tsv(run_dir / finetuning_objectives.TEST_RESULTS), np.float64)
  np.testing.assert_allclose(raw, expected, atol=1e-5)
  assert [row[1] for row in read_tsv(run_dir / finetuning_objectives.SUBMIT_RESULTS)[1:]] == [
      task.label_list[i] for i in expected.argmax(-1)]
  loaded = tf.saved_model.load(results["export"])
  served = loaded.signatures["classify_text_pair"](text_a=tf.constant([e.text_a for e in test_examples]),
                                                   text_b=tf.constant([e.text_b for e in test_examples]))
  np.testing.assert_allclose(served["probabilities"], expected, atol=1e-5)

  # An evaluation without training scores the best weights, under their step.
  rescored = finetuning.run(dataclasses.replace(run_options, do_train=False, do_predict=False, export_dir=None),
                            ClassifierObjective(task), ONE_DEVICE)["eval"]
  dev_inputs, dev_examples = split_inputs(glue_dir, task, "dev")
  dev_labels = [task.label_list.index(e.label) for e in dev_examples]
  dev_loss = tf.nn.sparse_softmax_cross_entropy_with_logits(dev_labels, step4(dev_inputs, training=False)["logits"])
  assert rescored["global_step"] == 4
  assert rescored["loss"] == pytest.approx(float(np.mean(dev_loss)), rel=1e-5)
  assert "global_step = 4" in (run_dir / run_directory.EVAL_RESULTS).read_text()


def test_exported_classifier_classifies_raw_text_as_keras_does(best_of_three_run):
  _, results = best_of_three_run
  label_list = get_task("mnli").label_list
  model = AlbertClassifier(albert_tf.AlbertConfig(**CONFIG), label_list)
  checkpoint_lib.restore_checkpoint(model, results["weights"])
  text_a = ["A place of sorrow, after the pope was buried.", "Dana Reeve died."]
  text_b = ["The pope was buried.", "Reeve is alive and well."]
  inputs = GraphTokenizer(SP8K_MODEL).encode_and_pack(tf.constant(text_a), tf.constant(text_b), SEQ)
  expected = tf.nn.softmax(model(inputs, training=False)["logits"]).numpy()

  loaded = tf.saved_model.load(results["export"])
  pair = loaded.signatures["classify_text_pair"](text_a=tf.constant(text_a), text_b=tf.constant(text_b))
  np.testing.assert_allclose(pair["probabilities"], expected, atol=1e-5)
  assert [label.decode() for label in pair["labels"].numpy()] == [label_list[i] for i in expected.argmax(-1)]
  ids = loaded.signatures["serving_default"](**inputs)
  np.testing.assert_allclose(ids["probabilities"], expected, atol=1e-5)
  single = loaded.classify_text(tf.constant(text_a))
  single_inputs = GraphTokenizer(SP8K_MODEL).encode_and_pack(tf.constant(text_a), None, SEQ)
  np.testing.assert_allclose(single["probabilities"],
                             tf.nn.softmax(model(single_inputs, training=False)["logits"]), atol=1e-5)
  assert {"encode_text", "encode_text_pair"} <= set(loaded.signatures)
  # The sentence embedding: the mean over real tokens, unit length, as the sentence encoder computes it.
  embedding = loaded.signatures["sentence_embedding"](text=tf.constant(text_a))["embedding"].numpy()
  inputs = GraphTokenizer(SP8K_MODEL).encode_and_pack(tf.constant(text_a), None, SEQ)
  sequence_output = model.encoder(inputs)["sequence_output"].numpy()
  mask = inputs["input_mask"].numpy()[:, :, None]
  mean = (sequence_output * mask).sum(1) / mask.sum(1)
  np.testing.assert_allclose(embedding, mean / np.linalg.norm(mean, axis=1, keepdims=True), atol=1e-5)
  encoder = AlbertSentenceEncoder(albert_tf.AlbertConfig(**CONFIG))
  checkpoint_lib.restore_checkpoint(encoder.encoder, results["weights"])
  np.testing.assert_allclose(encoder(inputs)["embedding"], embedding, atol=1e-5)


def test_a_bfloat16_run_leaves_later_models_and_exports_float32_and_the_seeds_as_they_were(glue_dir, tmp_path):
  random.seed(7)
  np.random.seed(7)
  tf.random.set_seed(7)
  python_state, numpy_state = random.getstate(), np.random.get_state()[1].copy()
  results = finetuning.run(options(glue_dir, tmp_path / "run", do_eval=False, do_predict=False, train_step=2,
                                   mixed_precision="bfloat16", random_seed=1),
                           ClassifierObjective(get_task("rte")), ONE_DEVICE)
  assert results["train"]["loss"] > 0
  assert tf_keras.mixed_precision.global_policy().name == "float32"
  assert random.getstate() == python_state and np.array_equal(np.random.get_state()[1], numpy_state)
  assert tf.compat.v1.get_seed(None)[0] == 7

  model, _ = checkpoint_lib.build_model_for_checkpoint(albert_tf.AlbertConfig(**CONFIG),
                                                       str(tmp_path / "run" / "model.ckpt-2"))
  layers = [module for module in model.submodules if isinstance(module, tf_keras.layers.Layer)]
  assert layers and {layer.compute_dtype for layer in layers} == {"float32"}
  export = saved_model.export_saved_model(model, str(tmp_path / "export"), SP8K_MODEL, SEQ)
  stored = tf.train.load_checkpoint(os.path.join(export, "variables", "variables")).get_variable_to_dtype_map()
  assert len(stored) > 20 and {dtype for dtype in stored.values() if dtype.is_floating} == {tf.float32}
  loaded = tf.saved_model.load(export)
  outputs = loaded.signatures["classify_text"](text_a=tf.constant(["A man plays a flute."]))
  assert {value.dtype for value in outputs.values() if value.dtype.is_floating} == {tf.float32}


def test_sentence_encoder_trains_on_scored_pairs(glue_dir, tmp_path, pretrained):
  _, path = pretrained
  task = get_task("sts-b")
  # Without training, the pretrained encoder's embeddings are scored as they are (no score range, no loss).
  before = finetuning.run(options(glue_dir, tmp_path / "before", init_checkpoint=path, do_train=False,
                                  do_predict=False), SentenceSimilarityObjective(task), ONE_DEVICE)
  assert set(before["eval"]) == {"spearman", "pearson", "global_step", "eval_examples"}
  objective = SentenceSimilarityObjective(task)
  run = finetuning.FineTuning(options(glue_dir, tmp_path / "run", init_checkpoint=path), objective, ONE_DEVICE)
  run.train()
  assert objective.score_range == (3.8, 5.0)  # the train split's extremes
  assert json.loads((tmp_path / "run" / finetuning.RUN_INFO_FILE).read_text())["score_range"] == [3.8, 5.0]
  assert {"spearman", "pearson", "loss"} <= set(run.last_eval)
  run.predict()
  cosines = np.array(read_tsv(tmp_path / "run" / finetuning_objectives.TEST_RESULTS), np.float64)
  # The exported sentence_embedding gives the encoder's embeddings, whose dot product is the cosine predicted.
  module = saved_model.AlbertServingModule(run.model.encoder, GraphTokenizer(SP8K_MODEL), saved_model.TextPacking(SEQ))
  embeddings = module.sentence_embedding(tf.constant(["A girl sings.", "A girl talks."]))["embedding"]
  assert embeddings.shape == (2, 32)
  assert float(tf.reduce_sum(embeddings[0] * embeddings[1])) == pytest.approx(cosines[0, 0], abs=1e-5)
  # Its checkpoints are encoder checkpoints: AlbertEncoder and tools/export_saved_model.py read them.
  checkpoint_lib.restore_checkpoint(albert_tf.AlbertEncoder(albert_tf.AlbertConfig(**CONFIG)), str(tmp_path / "run"))
  with pytest.raises(TaskError, match="mrpc is a classification; sentence similarity needs scored text pairs"):
    SentenceSimilarityObjective(get_task("mrpc"))


def test_tsv_labels_are_kept_for_later_runs(tmp_path):
  write(tmp_path / "data" / "train.tsv", ["b\tgood", "a\tbad", "c\tso so"])
  write(tmp_path / "data" / "dev.tsv", ["a\tworse"])
  write(tmp_path / "data" / "test.tsv", ["c\tfine"])
  tsv_format = TsvFormat(text_a_column=1, label_column=0)
  finetuning.run(options(tmp_path / "data", tmp_path / "run", do_eval=False, do_predict=False),
                 ClassifierObjective(get_task("tsv", tsv_format)), ONE_DEVICE)
  # A prediction-only run has no train split to learn the label order from: it takes the run's.
  task = get_task("tsv", tsv_format)
  finetuning.run(options(tmp_path / "data", tmp_path / "run", do_train=False, do_eval=False),
                 ClassifierObjective(task), ONE_DEVICE)
  assert task.label_list == ("a", "b", "c")
  model = restored_classifier(task, str(tmp_path / "run"))
  logits = model(GraphTokenizer(SP8K_MODEL).encode_and_pack(tf.constant(["fine"]), None, SEQ))["logits"]
  guid = task.read_examples(str(tmp_path / "data"), "test")[0].guid
  assert read_tsv(tmp_path / "run" / finetuning_objectives.SUBMIT_RESULTS)[1] == [guid, task.label_list[int(np.argmax(logits))]]
  other = get_task("tsv", dataclasses.replace(tsv_format, label_list=("c", "b", "a")))
  with pytest.raises(TaskError, match="was trained with labels \\['a', 'b', 'c'\\]"):
    finetuning.run(options(tmp_path / "data", tmp_path / "run", do_train=False), ClassifierObjective(
        other), ONE_DEVICE)


def test_bad_input_fails_before_training_and_writes_nothing(glue_dir, tmp_path):
  task = get_task("rte")

  def refused(error, match, data_dir=glue_dir, **changes):
    output_dir = tmp_path / "run"
    with pytest.raises(error, match=match):
      finetuning.run(options(data_dir, output_dir, **changes), ClassifierObjective(task), ONE_DEVICE)
    assert not output_dir.exists()

  rows = GLUE_FILES["RTE/train.tsv"]
  write(glue_dir / "RTE" / "train.tsv", rows + ["2\tonly one sentence"])
  refused(TaskError, re.escape(f"{glue_dir / 'RTE' / 'train.tsv'}, line 4: 2 tab-separated column(s); the task "
                               "needs at least 4"))
  write(glue_dir / "RTE" / "train.tsv", rows)
  write(glue_dir / "RTE" / "dev.tsv", GLUE_FILES["RTE/dev.tsv"] + ["1\ta\tb\tmaybe"])
  refused(TaskError, "dev.tsv, line 3: label 'maybe' is not one of the task's labels")
  write(glue_dir / "RTE" / "dev.tsv", GLUE_FILES["RTE/dev.tsv"])
  write(glue_dir / "RTE" / "test.tsv", [])
  refused(TaskError, "test.tsv: no examples: the file is empty")
  refused(ValueError, "has 8000 pieces but the model's vocab_size is 120",
          albert_config=albert_tf.AlbertConfig(**dict(CONFIG, vocab_size=120)))
  refused(TrainingError, "needs a fine-tuned checkpoint", do_train=False)
  refused(FileNotFoundError, "Checkpoint not found", init_checkpoint=str(tmp_path / "nowhere"))
  refused(ValueError, "--train_batch_size=0 must be a positive multiple", train_batch_size=0)
  refused(ValueError, r"^--learning_rate=-5e-05 must be a finite number, 0 or more", learning_rate=-5e-5)
  refused(ValueError, r"--train_batch_size=2 does not split into 1 replica\(s\) x 3 micro-batch",
          gradient_accumulation_steps=3)


def test_a_zero_learning_rate_is_announced_not_refused(capsys):
  loop.check_learning_rate(0.0)  # steps that change nothing: a timing or an end-to-end check
  assert capsys.readouterr().err == "--learning_rate=0: the training steps will not change the weights.\n"


def test_tool_refuses_an_unknown_task_with_one_line(tmp_path, glue_dir):
  base = [f"--data_dir={glue_dir}", f"--output_dir={tmp_path / 'run'}",
          f"--albert_config_file={tmp_path / 'config.json'}", f"--spm_model_file={SP8K_MODEL}", "--do_train"]
  albert_tf.AlbertConfig(**CONFIG).to_json_file(str(tmp_path / "config.json"))
  result = run_tool("run_classifier", *base, "--task_name=glue-x")
  assert result.returncode == 2
  assert "error: Unknown task 'glue-x'; the known tasks are cola" in result.stderr
  result = run_tool("run_classifier", *base, "--task_name=rte", "--tsv_label_column=3")
  assert result.returncode == 2 and "--tsv_label_column describe a tsv task's files" in result.stderr
  assert not (tmp_path / "run").exists()


def test_tool_reports_a_damaged_init_checkpoint_with_one_line(tmp_path, glue_dir):
  albert_tf.AlbertConfig(**CONFIG).to_json_file(str(tmp_path / "config.json"))
  encoder = albert_tf.AlbertEncoder(albert_tf.AlbertConfig(**CONFIG))
  encoder(encoder.dummy_inputs())
  prefix = checkpoint_lib.save_checkpoint(encoder, str(tmp_path / "pretrained" / "model.ckpt"))
  damage_checkpoint(prefix, "data cut")
  result = run_tool("run_classifier", "--task_name=rte", f"--data_dir={glue_dir}", f"--output_dir={tmp_path / 'run'}",
                    f"--albert_config_file={tmp_path / 'config.json'}", f"--spm_model_file={SP8K_MODEL}",
                    f"--max_seq_length={SEQ}", "--do_train", "--train_batch_size=2", f"--init_checkpoint={prefix}")
  assert result.returncode == 2
  assert result.stderr.splitlines()[-1] == (f"error: Checkpoint {prefix} cannot be read: its files are truncated or "
                                            "corrupt (Read less bytes than requested).")
  assert not (tmp_path / "run").exists()


def test_a_run_that_stops_before_its_first_checkpoint_leaves_no_run_directory(tmp_path, glue_dir):
  """A non-finite loss at the first step (a pretrained model of NaNs): a rerun must not find a half-made run."""
  albert_tf.AlbertConfig(**CONFIG).to_json_file(str(tmp_path / "config.json"))
  encoder = albert_tf.AlbertEncoder(albert_tf.AlbertConfig(**CONFIG))
  encoder(encoder.dummy_inputs())
  encoder.pooler.kernel.assign(tf.fill(encoder.pooler.kernel.shape, np.nan))
  prefix = checkpoint_lib.save_checkpoint(encoder, str(tmp_path / "pretrained" / "model.ckpt"))
  result = run_tool("run_classifier", "--task_name=rte", f"--data_dir={glue_dir}", f"--output_dir={tmp_path / 'run'}",
                    f"--albert_config_file={tmp_path / 'config.json'}", f"--spm_model_file={SP8K_MODEL}",
                    f"--max_seq_length={SEQ}", "--do_train", "--train_batch_size=2", "--train_step=2",
                    f"--init_checkpoint={prefix}")
  assert result.returncode == 2 and "non-finite" in result.stderr.splitlines()[-1], result.stderr
  assert not (tmp_path / "run").exists()


def test_tool_refuses_tsv_scores_as_classes_and_a_label_in_a_text_column(tmp_path):
  """STS-like scores (40 values from 0 to 5) without --tsv_is_regression would train a class per value."""
  albert_tf.AlbertConfig(**CONFIG).to_json_file(str(tmp_path / "config.json"))
  train = write(tmp_path / "data" / "train.tsv", [f"{0.125 * (index % 41):.3f}\tsentence {index}"
                                                  for index in range(82) if index % 41 != 20])
  base = ["--task_name=tsv", f"--data_dir={tmp_path / 'data'}", f"--output_dir={tmp_path / 'run'}",
          f"--albert_config_file={tmp_path / 'config.json'}", f"--spm_model_file={SP8K_MODEL}",
          f"--max_seq_length={SEQ}", "--do_train", "--train_batch_size=2", "--tsv_text_a_column=1"]
  result = run_tool("run_classifier", *base, "--tsv_label_column=0")
  assert result.returncode == 2
  assert result.stderr.splitlines()[-1].startswith(
      f"error: {train}: the labels of column 0 (--tsv_label_column) look like scores, not classes: all 40 distinct "
      "labels are numbers, 34 of them not whole (such as 0.125). Give --tsv_is_regression to predict the score")
  result = run_tool("run_classifier", *base, "--tsv_label_column=1")
  assert result.returncode == 2
  assert result.stderr.splitlines()[-1] == (
      "error: TsvFormat.label_column and TsvFormat.text_a_column (--tsv_label_column, --tsv_text_a_column) are both "
      "column 1: the label must be a column of its own.")
  assert not (tmp_path / "run").exists()


def test_train_sentence_encoder_tool(glue_dir, tmp_path):
  albert_tf.AlbertConfig(**CONFIG).to_json_file(str(tmp_path / "config.json"))
  common = [f"--data_dir={glue_dir}", f"--output_dir={tmp_path / 'run'}",
            f"--albert_config_file={tmp_path / 'config.json'}", f"--spm_model_file={SP8K_MODEL}",
            f"--max_seq_length={SEQ}", "--do_train", "--do_eval", "--train_batch_size=2", "--eval_batch_size=2",
            "--train_step=2", "--save_checkpoints_steps=2", "--iterations_per_loop=2"]
  result = run_tool("train_sentence_encoder", *common, "--score_range=0,5", "--gradient_accumulation_steps=2",
                    "--recompute_grad")
  assert result.returncode == 0, result.stderr[-3000:]
  assert "spearman = " in (tmp_path / "run" / run_directory.EVAL_RESULTS).read_text()
  assert json.loads((tmp_path / "run" / finetuning.RUN_INFO_FILE).read_text()) == {
      "task": "sts-b", "score_range": [0.0, 5.0], "sentence_embedding": {"pooling": "mean", "projection_dim": None}}
  bad = run_tool("train_sentence_encoder", *common, "--score_range=5")
  assert bad.returncode == 2 and "error: --score_range takes the lowest and highest score" in bad.stderr


def test_benchmark_prepares_splits_and_refuses_a_malformed_ratings_file(tmp_path):
  finetune_dir = tmp_path / "finetune"
  finetune_dir.mkdir()
  (finetune_dir / "a_GroundTruth.tsv").write_text("10\t1.5\tgood\n11\t-2.0\tbad\n12\t0.5\tfine\n", encoding="utf-8")
  (finetune_dir / "b_GroundTruth.tsv").write_text("20\t1.0\tok\n21\t-1.0\n", encoding="utf-8")
  result = run_tool("benchmarks/benchmark_finetuning", f"--finetune_dir={finetune_dir}",
                    f"--output_dir={tmp_path / 'out'}", "--prepare_only")
  assert result.returncode == 2
  assert "b_GroundTruth.tsv, line 2: 2 columns; expected id, rating, sentence." in result.stderr
  assert not (tmp_path / "out").exists()  # a.tsv was read and checked, but nothing is written before b's error

  (finetune_dir / "b_GroundTruth.tsv").write_text("20\t1.0\tok\n21\t-1.0\tno\n", encoding="utf-8")
  result = run_tool("benchmarks/benchmark_finetuning", f"--finetune_dir={finetune_dir}",
                    f"--output_dir={tmp_path / 'out'}", "--prepare_only")
  assert result.returncode == 0, result.stderr[-3000:]
  assert (tmp_path / "out" / "data" / "a" / "test.tsv").read_text(encoding="utf-8") == "10\t1.5\tgood\n"
  assert (tmp_path / "out" / "data" / "a" / "dev.tsv").read_text(encoding="utf-8") == "11\t-2.0\tbad\n"
  assert (tmp_path / "out" / "data" / "pretraining_text.txt").read_text(encoding="utf-8") == "fine\n"  # train only


def checkpoint_weights(prefix):
  """Every variable of the model in a checkpoint, by key (no model class needed)."""
  reader = tf.train.load_checkpoint(str(prefix))
  return {key: reader.get_tensor(key) for key in reader.get_variable_to_shape_map()
          if key.startswith("model/") and "OPTIMIZER_SLOT" not in key}


def classifier_tool_flags(root, output_dir):
  """run_classifier's training flags of `classifier_tool_run`, with the run directory `output_dir`."""
  return ["--task_name=MRPC", "--dropout_prob=0", f"--data_dir={root / 'glue_data'}", f"--output_dir={output_dir}",
          f"--albert_config_file={root / 'config.json'}", f"--spm_model_file={SP8K_MODEL}",
          f"--max_seq_length={SEQ}", "--do_train", "--do_eval", "--train_batch_size=2", "--eval_batch_size=2",
          "--train_step=10", "--save_checkpoints_steps=5", "--iterations_per_loop=1", "--keep_checkpoint_max=20",
          "--learning_rate=1e-3"]


@pytest.fixture(scope="module")
def classifier_tool_run(tmp_path_factory):
  """run_classifier's one trained run, uninterrupted, which also predicts and exports: the tool's test reads its
  files, the kill -9 test compares its own run with it. Dropout is off (its draws differ after a restart); the
  model is wide enough that a step takes milliseconds, so that the kill lands mid-run."""
  root = tmp_path_factory.mktemp("run_classifier")
  write_glue_data(root)
  albert_tf.AlbertConfig(**dict(CONFIG, hidden_size=128, intermediate_size=512, num_attention_heads=4)).to_json_file(
      str(root / "config.json"))
  result = run_tool("run_classifier", *classifier_tool_flags(root, root / "straight"), "--do_predict",
                    "--predict_batch_size=2", f"--export_dir={root / 'export'}")
  assert result.returncode == 0, result.stderr[-3000:]
  return root, result


def test_run_classifier_tool_trains_evaluates_predicts_and_exports(classifier_tool_run):
  root, result = classifier_tool_run
  assert "step 10/10 | loss" in result.stderr and "examples/s | ETA" in result.stderr
  assert "f1 = " in (root / "straight" / run_directory.EVAL_RESULTS).read_text()
  assert len(read_tsv(root / "straight" / finetuning_objectives.SUBMIT_RESULTS)) == 2
  assert os.listdir(root / "straight" / "train") and os.listdir(root / "straight" / "eval")  # TensorBoard
  loaded = tf.saved_model.load(str(root / "export" / "1"))
  pair = loaded.signatures["classify_text_pair"](text_a=tf.constant(["He said ."]), text_b=tf.constant(["He did ."]))
  assert pair["labels"].numpy()[0].decode() in ("0", "1")


def test_kill_9_then_rerun_ends_with_the_uninterrupted_run(classifier_tool_run):
  # The fine-tuning driver's resume, which every fine-tuning tool shares; the reading tests resume a SQuAD run.
  # Only the killed run needs a process of its own; its rerun neither predicts nor exports.
  root, _ = classifier_tool_run
  killed_dir = root / "killed"
  kill_once_a_checkpoint_is_written([sys.executable, os.path.join(TOOLS, "run_classifier.py"),
                                     *classifier_tool_flags(root, killed_dir)], killed_dir, "model.ckpt-10")
  resumed = run_tool("run_classifier", *classifier_tool_flags(root, killed_dir))
  assert resumed.returncode == 0, resumed.stderr[-3000:]
  assert re.search(r"Resuming from .*model\.ckpt-\d+ at step \d+", resumed.stderr)
  expected, actual = checkpoint_weights(root / "straight" / "model.ckpt-10"), checkpoint_weights(
      killed_dir / "model.ckpt-10")
  assert expected.keys() == actual.keys() and expected
  for key, value in expected.items():
    np.testing.assert_allclose(actual[key], value, atol=1e-6, rtol=0, err_msg=key)
  # Every checkpoint was scored, the one written just before the kill too, so the same one is best.
  assert run_directory.read_best_info(str(killed_dir)) == run_directory.read_best_info(str(root / "straight"))
