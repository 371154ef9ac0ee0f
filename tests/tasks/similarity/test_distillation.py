"""Sentence encoders by cross-lingual distillation: parallel files, teachers, the loss, retrieval, the tool."""

import io
import json
import os
import re

import numpy as np
import pytest
import scipy.stats
import tensorflow as tf

import albert_tf
from albert_tf import files
from albert_tf.errors import DataError, InputFileError, OptionError, TaskError
from albert_tf.modeling import checkpoints as checkpoint_lib
from albert_tf.serving import saved_model
from albert_tf.tasks.classification import catalogue
from albert_tf.tasks.similarity import distillation
from albert_tf.tasks.similarity import parallel_text
from albert_tf.text.graph_tokenizer import GraphTokenizer
from albert_tf.training import distribution, finetuning, run_directory
from tests.conftest import SHARED, SP8K_MODEL, randomize, requires_shared, run_tool, write

PARALLEL = os.path.join(SHARED, "parallel", "en_ko_messages.tsv")
pytestmark = [requires_shared(SP8K_MODEL), requires_shared(PARALLEL)]
SEQ = 32
CONFIG = dict(vocab_size=8000, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
              embedding_size=16, max_position_embeddings=SEQ)
ONE_DEVICE = distribution.get_strategy("one_device")


def real_pairs(count, start=0):
  """Lines of the shared English–Korean file (english, korean, catalog), as written there."""
  with open(PARALLEL, encoding="utf-8") as reader:
    return [line.rstrip("\n") for line in reader][start:start + count]


def unit_rows(count, size, seed=0):
  rows = np.random.default_rng(seed).normal(size=(count, size)).astype(np.float32)
  return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def test_parallel_files_are_read_strictly_and_split_by_seed(tmp_path):
  lines = real_pairs(5)
  pairs = parallel_text.read_parallel_file(write(tmp_path / "pairs.tsv", lines[:2] + [""] + lines[2:]))
  assert [pair.line_number for pair in pairs] == [1, 2, 4, 5, 6]
  assert (pairs[0].source, pairs[0].translation) == tuple(lines[0].split("\t")[:2])  # the catalog is ignored
  bad = {"no_tab.tsv": ([lines[0], "a line with no tab"], "no_tab.tsv, line 2: no tab"),
         "empty_side.tsv": ([lines[0], lines[1].split("\t")[0] + "\t "], "line 2: the translation is empty"),
         "empty.tsv": (["", ""], "no pairs: the file is empty")}
  for name, (content, message) in bad.items():
    with pytest.raises(DataError, match=message):
      parallel_text.read_parallel_file(write(tmp_path / name, content))
  train, dev = parallel_text.split_pairs(10, 3, seed=7)
  assert len(dev) == 3 and sorted(np.concatenate([train, dev]).tolist()) == list(range(10))
  assert all(np.array_equal(a, b) for a, b in zip((train, dev), parallel_text.split_pairs(10, 3, seed=7)))
  assert not np.array_equal(dev, parallel_text.split_pairs(10, 3, seed=8)[1])
  with pytest.raises(OptionError, match="--parallel_dev_size=10 pairs cannot be held out of the parallel file's 10"):
    parallel_text.split_pairs(10, 10, seed=7)


def test_retrieval_accuracy_is_top1_among_all_candidates():
  queries = unit_rows(6, 8)
  candidates = queries.copy()
  candidates[[1, 2]] = candidates[[2, 1]]  # two candidates swapped: queries 1 and 2 find the other's
  texts = ["a", "b", "c", "d", "e", "f"]
  brute_force = np.mean([np.argmax([q @ c for c in candidates]) == i for i, q in enumerate(queries)])
  assert distillation.retrieval_accuracy(queries, candidates, texts) == pytest.approx(brute_force) == 4 / 6
  # Finding another candidate of the same text (one translation of two sources) counts as found.
  assert distillation.retrieval_accuracy(queries, candidates, ["a", "b", "b", "d", "e", "f"]) == 1.0


def save_npy(path, array):
  """`np.save` to a local or bucket path."""
  buffer = io.BytesIO()
  np.save(buffer, array)
  files.write_atomically(path, buffer.getvalue())


@pytest.mark.parametrize("where", ["local", "bucket"])
def test_npy_teachers_are_checked_and_normalised(tmp_path, where, bucket):
  sources = ["one", "two", "three"]
  path = f"{bucket if where == 'bucket' else tmp_path}/teacher.npy"  # --teacher=gs://... too
  save_npy(path, 3 * unit_rows(3, 16))
  np.testing.assert_allclose(distillation.teacher_embeddings(path, sources, 16, None), unit_rows(3, 16), atol=1e-6)
  with pytest.raises(OptionError, match=r"size 16; the student's are of size 32 \(its hidden_size\). Set "
                                        r"--projection_dim=16"):
    distillation.teacher_embeddings(path, sources, 32, None)
  with pytest.raises(OptionError, match="size 16; the student's --projection_dim=24 must equal it"):
    distillation.teacher_embeddings(path, sources, 24, 24)
  with pytest.raises(DataError, match=r"shape \[3, 16\]; distillation needs floats of shape \[2, D\]"):
    distillation.teacher_embeddings(path, sources[:2], 16, None)
  save_npy(path, np.full([3, 16], np.nan, np.float32))
  with pytest.raises(DataError, match="NaN or infinite"):
    distillation.teacher_embeddings(path, sources, 16, None)
  with pytest.raises(InputFileError, match=re.escape(f"--teacher file not found: {path}.missing.npy")):
    distillation.teacher_embeddings(f"{path}.missing.npy", sources, 16, None)


def sts_dev_file(directory, count=8):
  """STS-B's dev layout with real sentence pairs (consecutive English messages) and varied scores."""
  english = [line.split("\t")[0] for line in real_pairs(count + 1, start=500)]
  header = "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2\tscore"
  rows = [f"{i}\tmain-captions\tMSRvid\t2012test\t{i}\tnone\tnone\t{english[i]}\t{english[i + 1]}\t{i % 5 + 0.5}"
          for i in range(count)]
  return write(directory / "dev.tsv", [header] + rows)


def test_distillation_loss_is_both_sides_squared_error_against_the_teacher(tmp_path):
  pairs = parallel_text.read_parallel_file(write(tmp_path / "pairs.tsv", real_pairs(6, start=40)))
  teacher = unit_rows(len(pairs), 32, seed=5)
  objective = distillation.DistillationObjective(pairs, teacher, dev_size=0, seed=1)
  model = objective.build_model(albert_tf.AlbertConfig(**CONFIG), 0.0)
  examples = objective.read_examples(None, "train")
  split = objective.encode(examples, GraphTokenizer(SP8K_MODEL), SEQ, "pairs")
  batch = split.batch(tf.range(len(pairs)), tf.ones([len(pairs)]))
  np.testing.assert_allclose(batch["labels"], teacher)  # file order: the train split is every pair
  loss, sums = objective.replica_loss(model)(batch, objective.loss_normalizers(batch))
  embed = {name: model(batch[name], training=False)["embedding"].numpy() for name in ("inputs_a", "inputs_b")}
  per_pair = sum(np.mean((embed[name] - teacher) ** 2, axis=1) for name in embed)
  assert float(sums[1]) == len(pairs)  # CONFIG has no dropout: training=True computes the same embeddings
  assert float(loss) == pytest.approx(per_pair.mean(), rel=1e-4)


def test_distillation_fits_the_teacher_and_scores_held_out_pairs(tmp_path):
  pairs = parallel_text.read_parallel_file(write(tmp_path / "pairs.tsv", real_pairs(24, start=100)))
  teacher = unit_rows(len(pairs), 16, seed=3)
  sts_dev_file(tmp_path / "sts")
  objective = distillation.DistillationObjective(pairs, teacher, dev_size=8, seed=1,
                                                 sts_task=catalogue.get_task("sts-b"), pooling="cls",
                                                 projection_dim=16)
  options = finetuning.FineTuningOptions(
      data_dir=str(tmp_path / "sts"), output_dir=str(tmp_path / "run"),
      albert_config=albert_tf.AlbertConfig(**CONFIG), spm_model_file=SP8K_MODEL, max_seq_length=SEQ, do_train=True,
      do_eval=True, train_batch_size=4, eval_batch_size=4, learning_rate=3e-3, train_step=40,
      save_checkpoints_steps=20, iterations_per_loop=20)
  run = finetuning.FineTuning(options, objective, ONE_DEVICE)

  def embedder():
    # The serving signature's embeddings are the model's own (its sentence head). One module before training and
    # one after: the run's seeding (tf.random.set_seed) drops the SentencePiece op's resources of tokenizers
    # already used.
    module = saved_model.AlbertServingModule(run.model, GraphTokenizer(SP8K_MODEL), saved_model.TextPacking(SEQ),
                                             embedding_head=run.model.sentence_head)
    return lambda texts: module.sentence_embedding(tf.constant(texts))["embedding"].numpy()

  def train_mse(embed):
    train = [pairs[row] for row in objective.rows["train"]]
    target = teacher[objective.rows["train"]]
    return sum(np.mean((embed([getattr(p, side) for p in train]) - target) ** 2) for side in ("source", "translation"))

  before = train_mse(embedder())
  run.train()
  embed = embedder()
  assert train_mse(embed) < 0.8 * before  # both sides of the training pairs move toward the teacher
  last = run.last_eval
  # Every figure, recomputed from the student's own embeddings of the held-out pairs and the STS dev pairs.

  dev = [pairs[row] for row in objective.rows["dev"]]
  source, translation = embed([p.source for p in dev]), embed([p.translation for p in dev])
  target = teacher[objective.rows["dev"]]
  found = np.mean([np.argmax(translation @ s) == i for i, s in enumerate(source)])
  found_back = np.mean([np.argmax(source @ t) == i for i, t in enumerate(translation)])
  assert last["retrieval_source_to_translation"] == pytest.approx(found, abs=1e-9)
  assert last["retrieval_accuracy"] == pytest.approx((found + found_back) / 2, abs=1e-9)
  assert last["mse"] == pytest.approx((np.mean((source - target) ** 2) + np.mean((translation - target) ** 2)) / 2,
                                      abs=1e-6)
  sts = catalogue.get_task("sts-b").read_examples(str(tmp_path / "sts"), "dev")
  cosines = np.sum(embed([e.text_a for e in sts]) * embed([e.text_b for e in sts]), axis=1)
  assert last["sts_spearman"] == pytest.approx(scipy.stats.spearmanr(cosines, [e.label for e in sts])[0], abs=1e-6)
  info = json.loads((tmp_path / "run" / finetuning.RUN_INFO_FILE).read_text())
  assert info == {"task": "distillation", "teacher_size": 16,
                  "sentence_embedding": {"pooling": "cls", "projection_dim": 16}}
  # The best checkpoint rebuilds the same student: its pooling and projection come from task.json.
  best, _ = checkpoint_lib.build_model_for_checkpoint(options.albert_config,
                                                      str(tmp_path / "run" / run_directory.BEST_CHECKPOINT))
  assert (best.pooling, best.projection_dim) == ("cls", 16)
  # A rerun that asks for another head is refused before anything changes.
  with pytest.raises(TaskError, match="pooling cls and projection_dim 16; this run asks for "
                                                           "pooling mean"):
    finetuning.FineTuning(options, distillation.DistillationObjective(pairs, teacher, 8, 1, None, "mean", 16),
                          ONE_DEVICE)


def test_tool_refuses_a_dev_size_the_parallel_file_cannot_spare_before_reading_the_teacher(tmp_path):
  albert_tf.AlbertConfig(**CONFIG).to_json_file(str(tmp_path / "config.json"))
  pairs_file = write(tmp_path / "pairs.tsv", real_pairs(20))
  # The default --parallel_dev_size (1000) on a small file; the teacher does not exist: it is not read yet.
  result = run_tool("train_sentence_encoder", f"--parallel_file={pairs_file}", f"--teacher={tmp_path / 'no.npy'}",
                    f"--output_dir={tmp_path / 'run'}", f"--albert_config_file={tmp_path / 'config.json'}",
                    f"--spm_model_file={SP8K_MODEL}", f"--max_seq_length={SEQ}", "--do_train", "--do_eval")
  assert result.returncode == 2
  assert result.stderr.splitlines()[-1] == (
      "error: --parallel_dev_size=1000 pairs cannot be held out of the parallel file's 20: set it from 0 to 19, so "
      "that at least one pair is left to train on.")
  assert not (tmp_path / "run").exists()


def test_tool_distills_from_a_saved_model_teacher_and_exports_the_student(tmp_path):
  config = albert_tf.AlbertConfig(**CONFIG)
  config.to_json_file(str(tmp_path / "config.json"))
  teacher_model = albert_tf.AlbertSentenceEncoder(config, "mean", projection_dim=24)
  teacher_model(teacher_model.dummy_inputs())
  randomize(teacher_model, scale=0.1)
  teacher = saved_model.export_saved_model(teacher_model, str(tmp_path / "teacher"), SP8K_MODEL, SEQ)
  lines = real_pairs(20, start=300)
  pairs_file = write(tmp_path / "pairs.tsv", lines)
  # The SavedModel teacher gives its signature's embeddings, normalised.
  sources = [line.split("\t")[0] for line in lines]
  tokenizer = GraphTokenizer(SP8K_MODEL)
  expected = teacher_model(tokenizer.encode_and_pack(tf.constant(sources), None, SEQ))["embedding"].numpy()
  np.testing.assert_allclose(distillation.teacher_embeddings(teacher, sources, 24, 24), expected, atol=1e-5)

  run_dir = tmp_path / "run"
  common = [f"--parallel_file={pairs_file}", f"--teacher={teacher}", f"--output_dir={run_dir}",
            f"--albert_config_file={tmp_path / 'config.json'}", f"--spm_model_file={SP8K_MODEL}",
            f"--max_seq_length={SEQ}", "--do_train", "--do_eval", "--train_batch_size=4", "--eval_batch_size=4",
            "--train_step=2", "--save_checkpoints_steps=2", "--iterations_per_loop=2", "--parallel_dev_size=6",
            "--pooling=max"]
  refused = run_tool("train_sentence_encoder", *common)
  assert refused.returncode == 2, refused.stderr[-2000:]
  assert "error: The teacher" in refused.stderr and "size 24; the student's are of size 32" in refused.stderr
  assert not run_dir.exists()  # nothing written

  result = run_tool("train_sentence_encoder", *common, "--projection_dim=24", f"--export_dir={tmp_path / 'export'}")
  assert result.returncode == 0, result.stderr[-3000:]
  assert "retrieval_accuracy = " in (run_dir / run_directory.EVAL_RESULTS).read_text()
  student, _ = checkpoint_lib.build_model_for_checkpoint(config, str(run_dir / run_directory.BEST_CHECKPOINT))
  assert (student.pooling, student.projection_dim) == ("max", 24)
  loaded = tf.saved_model.load(str(tmp_path / "export" / "1"))
  served = loaded.signatures["sentence_embedding"](text=tf.constant(sources[:3]))["embedding"].numpy()
  # A new tokenizer: the run's seeding drops the SentencePiece resources of tokenizers used before it (as above).
  keras = student(GraphTokenizer(SP8K_MODEL).encode_and_pack(tf.constant(sources[:3]), None, SEQ))["embedding"]
  assert served.shape == (3, 24)
  np.testing.assert_allclose(served, keras.numpy(), atol=1e-5)
