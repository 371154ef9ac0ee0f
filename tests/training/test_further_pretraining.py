"""Further pretraining on small hardware: gradient accumulation, activation recomputation, MLM-only."""

import glob
import os
import random

import numpy as np
import pytest
import tensorflow as tf
import torch
import transformers

import albert_tf
from albert_tf.data import pretraining_writer
from albert_tf.data.instances import InstanceOptions, plan_segment_pairs
from albert_tf.errors import OptionError
from albert_tf.interop.huggingface import export_to_hf
from albert_tf.modeling import checkpoints as checkpoint_lib
from albert_tf.training import capacity, distribution, loop, pretraining, run_directory
from tests.conftest import SHARED, SP8K_MODEL, padded_batch, randomize, requires_shared, run_tool, tiny_config
from tests.training import strategy_worker

pytestmark = requires_shared(SP8K_MODEL)
SEQ, PREDICTIONS = 64, 10
CONFIG = dict(vocab_size=8000, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
              embedding_size=16, max_position_embeddings=SEQ)


@pytest.fixture(scope="module")
def records(tmp_path_factory):
  """Real Korean pretraining records: 73 batches of 32 in one pass."""
  output = str(tmp_path_factory.mktemp("records") / "train.tfrecord")
  pretraining_writer.create_pretraining_data(
      [os.path.join(SHARED, "corpus", "ko_law.txt")], [output], pretraining_writer.TokenizerSpec(SP8K_MODEL),
      InstanceOptions(max_seq_length=SEQ, max_predictions_per_seq=PREDICTIONS), dupe_factor=1, progress=False)
  return output


def options(records, output_dir, **changes):
  values = dict(input_file=records, output_dir=str(output_dir), albert_config=albert_tf.AlbertConfig(**CONFIG),
                max_seq_length=SEQ, max_predictions_per_seq=PREDICTIONS, train_batch_size=32, eval_batch_size=32,
                learning_rate=1e-3, num_train_steps=10, num_warmup_steps=2, save_checkpoints_steps=10,
                iterations_per_loop=5, max_eval_steps=2)
  values.update(changes)
  return pretraining.PretrainingOptions(**values)


def trained_weights(run_options, strategy_type="one_device", replicas=1):
  run = pretraining.Pretraining(run_options, strategy_worker.strategy(strategy_type))
  assert run.strategy.num_replicas_in_sync == replicas
  run.train()
  return [v.numpy() for v in run.model.trainable_variables]


def assert_same_weights(expected, actual, rtol):
  """Each variable within `rtol` of the expected one, relative to its norm, plus 1e-8 for the few biases that
  LAMB keeps at about 1e-11 (a wrong step moves a weight by about the learning rate, 1e-3). Elementwise ratios
  would measure Adam's division of float32 rounding by rare tokens' small second moments, not the sums."""
  assert len(expected) == len(actual)
  for index, (a, b) in enumerate(zip(expected, actual)):
    assert np.linalg.norm(b - a) <= rtol * np.linalg.norm(a) + 1e-8, f"variable {index}"


@pytest.fixture(scope="module")
def one_batch_runs(records, tmp_path_factory):
  """10 steps of one batch of 32 per step, for LAMB and AdamW."""
  return {optimizer: trained_weights(options(records, tmp_path_factory.mktemp(optimizer), optimizer=optimizer))
          for optimizer in ("lamb", "adamw")}


# The micro-batches' gradients are summed before the optimizer sees them: each optimizer is tried once, LAMB on
# one device (recomputed; micro-batches without recomputation are the two replicas' test), AdamW on two replicas.
def test_micro_batches_reach_the_weights_of_one_batch(records, tmp_path, one_batch_runs):
  actual = trained_weights(options(records, tmp_path, optimizer="lamb", gradient_accumulation_steps=4,
                                   recompute_grad=True))
  assert_same_weights(one_batch_runs["lamb"], actual, rtol=1e-5)


def test_micro_batches_on_two_mirrored_replicas_reach_the_weights_of_one_batch(records, tmp_path, one_batch_runs):
  """2 replicas (conftest's two logical CPUs) x 4 micro-batches of 4 against one batch of 32 on one device: also
  what two mirrored replicas without micro-batches must reach (the multi-worker test in test_pretraining.py
  compares the loss too)."""
  actual = trained_weights(options(records, tmp_path, optimizer="adamw", gradient_accumulation_steps=4),
                           "mirrored", replicas=2)
  assert_same_weights(one_batch_runs["adamw"], actual, rtol=1e-5)


def test_a_batch_that_does_not_split_is_refused_with_the_numbers(records, tmp_path):
  for size, steps, message in ((32, 3, "--train_batch_size=32 does not split into 1 replica.* x 3 micro-batch"),
                               (32, 0, "--gradient_accumulation_steps must be at least 1, not 0")):
    with pytest.raises(OptionError, match=message):
      pretraining.Pretraining(options(records, tmp_path / "run", train_batch_size=size,
                                      gradient_accumulation_steps=steps), distribution.get_strategy("one_device"))
  assert not (tmp_path / "run").exists()
  assert loop.micro_batch_size(4096, 8, 16) == 32


# --- activation recomputation --------------------------------------------------------------------------------


def gradients_of(model, batch):
  """Gradients of a loss that reads every output, in one tf.function (as training computes them)."""

  @tf.function
  def compute():
    with tf.GradientTape() as tape:
      outputs = model(batch, training=True)
      loss = tf.reduce_mean(tf.square(outputs["mlm_logits"])) + tf.reduce_mean(outputs["sop_logits"])
    return [tf.convert_to_tensor(g) for g in tape.gradient(loss, model.trainable_variables)]

  return [g.numpy() for g in compute()]


def test_recomputed_gradients_equal_stored_ones():
  config = tiny_config(num_hidden_layers=2, inner_group_num=2)  # two blocks, each applied twice and recomputed
  batch = padded_batch(config.vocab_size)
  models = [albert_tf.AlbertPretrainer(config, recompute_grad=recompute) for recompute in (False, True)]
  for model in models:
    model(batch)
    randomize(model, scale=0.1)
  plain, recomputed = (gradients_of(model, batch) for model in models)
  for index, (a, b) in enumerate(zip(plain, recomputed)):
    np.testing.assert_allclose(b, a, rtol=0, atol=1e-6, err_msg=f"variable {index}")
  assert max(np.abs(g).max() for g in plain) > 1e-3  # the gradients compared are not all ~0


def test_recomputation_draws_the_forward_pass_dropout_masks(monkeypatch):
  """With dropout on, the recomputed gradient is that of the masks the forward pass drew: the same as the
  gradient of the same forward pass (the same seeds) with its activations stored."""
  config = tiny_config(num_hidden_layers=2, inner_group_num=2, hidden_dropout_prob=0.3,
                       attention_probs_dropout_prob=0.3)
  batch = padded_batch(config.vocab_size)
  model = albert_tf.AlbertPretrainer(config, recompute_grad=True)
  model(batch)
  randomize(model, scale=0.1)
  # The embedding's dropout is outside the blocks, never recomputed, and draws from the layer's own random
  # state, which differs between the two traces: off, so that only the blocks' masks are compared.
  model.encoder.embeddings.dropout.rate = 0.0
  drawn = []  # seeds numbered in the order the applications are traced, the same in both traces
  monkeypatch.setattr(model.encoder, "_dropout_seed", lambda: tf.constant([len(drawn), drawn.append(1) or 7]))
  recomputed = gradients_of(model, batch)
  drawn.clear()
  with monkeypatch.context() as stored_activations:
    stored_activations.setattr(tf, "recompute_grad", lambda function: function)
    stored = gradients_of(model, batch)
  assert len(drawn) == config.num_hidden_layers * config.inner_group_num
  for index, (a, b) in enumerate(zip(stored, recomputed)):
    np.testing.assert_allclose(b, a, rtol=0, atol=1e-6, err_msg=f"variable {index}")
  training, inference = model(batch, training=True), model(batch, training=False)
  assert not np.allclose(training["mlm_logits"].numpy(), inference["mlm_logits"].numpy())  # dropout is on


# --- MLM only ----------------------------------------------------------------------------------------------


def event_tags(directory):
  tags = set()
  for path in glob.glob(os.path.join(directory, "**", "events.out.tfevents.*"), recursive=True):
    for record in tf.data.TFRecordDataset(path):
      event = tf.compat.v1.Event.FromString(record.numpy())
      tags.update(value.tag for value in event.summary.value)
  return tags


@pytest.fixture(scope="module")
def mlm_only_run(records, tmp_path_factory):
  output_dir = tmp_path_factory.mktemp("mlm_only")
  run = pretraining.Pretraining(options(records, output_dir, sentence_order_prediction=False, do_eval=True,
                                        num_train_steps=4, save_checkpoints_steps=4, iterations_per_loop=2),
                                distribution.get_strategy("one_device"))
  run.train()
  return output_dir


def test_mlm_only_run_has_no_sentence_order_anywhere(mlm_only_run, records, tmp_path, capsys):
  variables = [name for name, _ in tf.train.list_variables(str(mlm_only_run))]
  assert any("masked_lm_head" in name for name in variables)
  assert not [name for name in variables if "sentence_order" in name or "seq_relationship" in name]
  assert "sentence_order" not in (mlm_only_run / run_directory.EVAL_RESULTS).read_text()
  tags = event_tags(str(mlm_only_run))
  assert {"masked_lm_loss", "masked_lm_accuracy", "loss"} <= tags
  assert not [tag for tag in tags if "sentence_order" in tag]

  # A few more steps, to read the progress line; the run resumes from its checkpoint.
  run = pretraining.Pretraining(options(records, mlm_only_run, sentence_order_prediction=False, num_train_steps=6,
                                        save_checkpoints_steps=6, iterations_per_loop=2),
                                distribution.get_strategy("one_device"))
  run.train()
  progress = capsys.readouterr().err
  assert "step 6/6" in progress and "masked_lm_loss" in progress and "sentence_order" not in progress
  assert run.model.sentence_order_head is None


def test_init_checkpoint_across_the_two_modes_says_what_it_did(mlm_only_run, records, tmp_path, capsys):
  strategy = distribution.get_strategy("one_device")
  with_sop = pretraining.Pretraining(options(records, tmp_path / "sop", init_checkpoint=str(mlm_only_run)), strategy)
  said = capsys.readouterr().err
  assert "fresh initialisation: the sentence-order head" in said
  mlm_only = checkpoint_lib.build_model_for_checkpoint(albert_tf.AlbertConfig(**CONFIG), str(mlm_only_run))[0]
  for ours, theirs in zip(with_sop.model.encoder.variables, mlm_only.encoder.variables):
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())

  sop_dir = tmp_path / "sop_checkpoint"
  checkpoint_lib.save_checkpoint(with_sop.model, str(sop_dir / "model.ckpt"))
  back = pretraining.Pretraining(options(records, tmp_path / "mlm", init_checkpoint=str(sop_dir),
                                         sentence_order_prediction=False), strategy)
  said = capsys.readouterr().err
  assert "Initialised the model from" in said and "Not used (this run has no such head): the sentence-order" in said
  np.testing.assert_array_equal(back.model.masked_lm_head.variables[0].numpy(),
                                with_sop.model.masked_lm_head.variables[0].numpy())


def test_mlm_only_export_is_albert_for_masked_lm_with_our_logits(mlm_only_run, tmp_path):
  model, _ = checkpoint_lib.build_model_for_checkpoint(albert_tf.AlbertConfig(**CONFIG), str(mlm_only_run))
  assert model.sentence_order_head is None
  export_to_hf(model, str(tmp_path / "hf"), SP8K_MODEL)
  hf_model = transformers.AlbertForMaskedLM.from_pretrained(str(tmp_path / "hf"))
  assert hf_model.config.architectures == ["AlbertForMaskedLM"]
  batch = padded_batch(CONFIG["vocab_size"], seq_length=SEQ)
  ours = model(batch)["mlm_logits"].numpy()
  hf_model.eval()
  with torch.no_grad():
    logits = hf_model(input_ids=torch.tensor(batch["input_word_ids"].numpy(), dtype=torch.long),
                      attention_mask=torch.tensor(batch["input_mask"].numpy(), dtype=torch.long),
                      token_type_ids=torch.tensor(batch["input_type_ids"].numpy(), dtype=torch.long)).logits.numpy()
  theirs = np.take_along_axis(logits, batch["masked_lm_positions"].numpy()[:, :, None], axis=1)
  np.testing.assert_allclose(theirs, ours, atol=1e-4, rtol=0)


def test_data_without_sentence_order_keeps_every_pair_in_order_and_the_same_draws():
  rng = random.Random(0)
  documents = [[[rng.randrange(10, 1000) for _ in range(rng.randrange(3, 30))] for _ in range(rng.randrange(1, 12))]
               for _ in range(60)]
  for policy in ("random_document", "split_sentence"):
    with_sop, without = ([plan_segment_pairs(document, index, len(documents), InstanceOptions(
        max_seq_length=64, single_segment_policy=policy, sentence_order_prediction=sop), random.Random(index))
                          for index, document in enumerate(documents)] for sop in (True, False))
    swapped = 0
    for pairs_with, pairs_without in zip(with_sop, without):
      assert len(pairs_with) == len(pairs_without)
      for a, b in zip(pairs_with, pairs_without):
        if b.random_segment is not None:  # B from another document: no order to keep
          assert b == a
          continue
        assert b.sentence_order_label == 0
        is_swap = a.sentence_order_label == 1
        swapped += is_swap
        assert (b.tokens_a, b.tokens_b) == ((a.tokens_b, a.tokens_a) if is_swap else (a.tokens_a, a.tokens_b))
    assert swapped > 20


def test_tool_trains_mlm_only_with_accumulation_and_recomputation(records, tmp_path):
  config_file = tmp_path / "config.json"
  albert_tf.AlbertConfig(**CONFIG).to_json_file(str(config_file))
  result = run_tool(
      "run_pretraining", f"--input_file={records}", f"--output_dir={tmp_path / 'run'}",
      f"--albert_config_file={config_file}", f"--max_seq_length={SEQ}", f"--max_predictions_per_seq={PREDICTIONS}",
      "--train_batch_size=16", "--gradient_accumulation_steps=4", "--recompute_grad", "--nosentence_order_prediction",
      "--num_train_steps=2", "--iterations_per_loop=2")
  assert result.returncode == 0, result.stderr
  assert "step 2/2" in result.stderr and "sentence_order" not in result.stderr


# --- what fits ------------------------------------------------------------------------------------------------


def test_largest_fitting_size_doubles_then_bisects():
  measured = []

  def fits(size):  # a peak of 1000 + 7 MB per example under a 1500 MB limit: 71 fits, 72 does not
    measured.append(size)
    return 1000 + 7 * size <= 1500

  assert capacity.largest_fitting_size(4, 4096, fits) == 71
  assert measured == [4, 8, 16, 32, 64, 128, 96, 80, 72, 68, 70, 71]
  assert capacity.largest_fitting_size(100, 4096, fits) == 71  # a start above the answer bisects down
  assert capacity.largest_fitting_size(4, 50, fits) == 50  # never above the ceiling
  assert capacity.largest_fitting_size(4, 4096, lambda size: False) == 0


def test_fewest_accumulation_steps_split_the_batch_evenly_into_micro_batches_that_fit():
  assert capacity.fewest_accumulation_steps(4096, 24) == 256  # micro-batches of 16: 4096 has no divisor of 24
  assert capacity.fewest_accumulation_steps(30, 7) == 5
  assert capacity.fewest_accumulation_steps(12, 12) == 1
  assert capacity.fewest_accumulation_steps(7, 1) == 7


def test_run_pretraining_finds_the_largest_micro_batch_in_a_fresh_process_and_trains_nothing(tmp_path):
  # One size is measured (a batch of 1 is the search's ceiling), in a process of its own: this one only directs.
  # The search is test_largest_fitting_size_doubles_then_bisects's; the small model of this file keeps the
  # measuring process's tracing short.
  config_file = tmp_path / "config.json"
  albert_tf.AlbertConfig(**CONFIG).to_json_file(str(config_file))
  command = ["run_pretraining", f"--albert_config_file={config_file}", "--input_file=/no/records",
             f"--output_dir={tmp_path / 'run'}", "--max_seq_length=32", "--find_max_micro_batch"]
  result = run_tool(*command, "--train_batch_size=1", "--memory_limit_mb=100000")
  assert result.returncode == 0, result.stderr
  assert "micro-batch 1: peak" in result.stderr
  assert result.stdout.endswith("max_micro_batch: 1\ngradient_accumulation_steps: 1\n"), result.stdout
  assert not (tmp_path / "run").exists()
  for flags, message in [
      ((), "--find_max_micro_batch without a GPU needs --memory_limit_mb"),
      (("--memory_limit_mb=100000", "--strategy_type=tpu"),
       "--find_max_micro_batch measures the step on this machine's GPU or CPU, not on a TPU"),
      (("--memory_limit_mb=100000", "--max_predictions_per_seq=33"),
       "--max_predictions_per_seq=33 must be between 1 and --max_seq_length=32")]:
    refused = run_tool(*command, *flags)
    assert refused.returncode == 2 and f"error: {message}" in refused.stderr, refused.stderr


def test_benchmark_searches_with_the_library(tmp_path):
  # The benchmark's search is run_pretraining's, measuring included (the test above): its refusal, which comes
  # before any measurement, shows that it reaches it, at no cost.
  config_file = tmp_path / "config.json"
  albert_tf.AlbertConfig(**CONFIG).to_json_file(str(config_file))
  refused = run_tool("benchmarks/benchmark_pretraining", f"--albert_config_file={config_file}", "--max_seq_length=32",
                     "--find_max_micro_batch")
  assert refused.returncode == 2
  assert "error: --find_max_micro_batch without a GPU needs --memory_limit_mb" in refused.stderr
