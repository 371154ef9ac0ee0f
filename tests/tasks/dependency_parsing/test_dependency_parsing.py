"""Dependency parsing end to end: the features of real KLUE-DP sentences, the loss, the objective's scores and
prediction files, and the tool on a small split of KLUE's dev file (train, evaluate, predict, export, serve)
and its refusals. The readers, the decoder, the metrics and the layers are
test_dependency_parsing_parts.py's."""

import json
import os
import re

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from albert_tf.errors import TaskError
from albert_tf.modeling.checkpoints import build_model_for_checkpoint
from albert_tf.serving import onnx_export
from albert_tf.serving.saved_model import TextPacking
from albert_tf.tasks.dependency_parsing import data, decoding, features, serving
from albert_tf.tasks.dependency_parsing.layers import MASKED_ARC_SCORE
from albert_tf.tasks.dependency_parsing.model import AlbertDependencyParser
from albert_tf.tasks.dependency_parsing.objective import (PREDICTIONS, PREDICTIONS_JSON,
                                                          DependencyParsingObjective)
from albert_tf.text.graph_tokenizer import GraphTokenizer
from albert_tf.text.tokenizer import preprocess_text
from albert_tf.training import run_directory
from tests.conftest import (SHARED, SP8K_MODEL, onnx_export_refusal, randomize, requires_shared, run_tool, tiny_config,
                            write)

KLUE_DP_DEV = os.path.join(SHARED, "klue", "klue-dp-v1.1_dev.tsv")
pytestmark = [requires_shared(KLUE_DP_DEV), requires_shared(SP8K_MODEL)]
CONFIG = dict(vocab_size=8000, max_position_embeddings=64)


@pytest.fixture(scope="module")
def klue_dev():
  return data.read_klue_dp(KLUE_DP_DEV)


def klue_file(path, first, last):
  """Sentences `first` to `last` (excluded) of KLUE's dev file, written as they are there, with its layout
  comments."""
  lines = open(KLUE_DP_DEV, encoding="utf-8").read().split("\n")
  layout, sentences = lines[:5], "\n".join(lines[5:]).strip("\n").split("\n\n")
  return write(path, layout + ["\n\n".join(sentences[first:last])])


def label_ids(examples):
  ids = {label: index for index, label in enumerate(data.KLUE_DP_LABELS)}
  return [[ids[relation] for relation in example.deprels] for example in examples]


def test_features_point_at_each_eojeols_pieces_on_real_sentences(tokenizer, klue_dev):
  examples = klue_dev[:300]
  tags = features.tag_vocabulary(examples)
  built = features.parse_features(examples, tokenizer, 128, 64, data.KLUE_DP_LABELS, tags)
  word_start = tokenizer.sp_model.PieceToId("\u2581")
  skipped = multi_piece = decoded = 0
  for row, example in enumerate(examples):
    ids = built.piece_ids[row]
    count = len(example.words)
    assert built.kept_words[row] == count  # nothing is cut at 128 pieces
    assert ids[0] == tokenizer.cls_id and ids[-1] == tokenizer.sep_id
    start = 1
    for index, word in enumerate(example.words):
      first, last = built.first_piece_index[row, index], built.last_piece_index[row, index]
      # The word's pieces run from where the previous word's ended; a leading bare "▁" is not its first.
      assert first == start or (first == start + 1 and ids[start] == word_start)
      skipped += first == start + 1
      multi_piece += last > first
      if tokenizer.unk_id not in ids[start:last + 1]:  # <unk> decodes as "⁇"
        decoded += tokenizer.sp_model.DecodeIds(ids[start:last + 1]) == preprocess_text(word)
      start = last + 1
    assert start == len(ids) - 1  # the last word ends before [SEP]
    # Word by word, the pieces are those of the sentence.
    assert ids[1:-1] == tokenizer.encode(" ".join(example.words))
    assert built.word_mask[row].tolist() == [1] * count + [0] * (64 - count)
    assert built.heads[row, :count].tolist() == list(example.heads)
    assert (built.heads[row, count:] == features.NOT_SCORED).all()
    assert built.relation_ids[row, :count].tolist() == label_ids([example])[0]
  assert skipped > 10 and multi_piece > 1000 and decoded > 3500
  # 'K팝스타3' is "SS+SL+NNP+SN+SS": its first and last tags; 유희열이 "NNP+JKS".
  ids = {tag: index for index, tag in enumerate(tags, features.FIRST_TAG_ID)}
  assert built.pos_ids[0, :2].tolist() == [[ids["SS"], ids["SS"]], [ids["NNP"], ids["JKS"]]]
  assert (built.pos_ids[0, 6:] == features.PAD_TAG_ID).all()


def test_features_cut_long_sentences_and_count_them(tokenizer, klue_dev):
  example = klue_dev[1]  # 15 eojeols, whose word 1 depends on word 15
  built = features.parse_features([example], tokenizer, 24, 8, data.KLUE_DP_LABELS, [])
  kept = int(built.kept_words[0])
  assert 1 < kept < 8 and len(built.piece_ids[0]) <= 24
  assert built.last_piece_index[0, kept - 1] == len(built.piece_ids[0]) - 2
  # The next word did not fit.
  assert len(built.piece_ids[0]) + len(tokenizer.encode(example.words[kept])) > 24
  gold = np.array(example.heads[:kept])
  assert built.heads[0, :kept].tolist() == np.where(gold <= kept, gold, features.NOT_SCORED).tolist()
  assert (built.heads[0, :kept] == features.NOT_SCORED).any()  # a head that was cut is not a gold arc
  assert (built.pos_ids[0, :kept] == features.UNKNOWN_TAG_ID).all()  # no tag vocabulary
  # A word of nothing but an accent has no pieces: an <unk> holds its place. A first word longer than the
  # sequence keeps its first pieces; max_words cuts too.
  odd = data.ParseExample("x", ("가나다라마바사아자차카타파하" * 3, "\u0301", "끝"), ("a", "b", "c"), ("NNG", "SW", "NNG"),
                          (0, 1, 1), ("NP", "NP", "NP"), "")
  built = features.parse_features([odd], tokenizer, 6, 8, data.KLUE_DP_LABELS, ["NNG"])
  assert built.kept_words.tolist() == [1] and built.piece_ids[0][1:] == tokenizer.encode(odd.words[0])[:4] + [
      tokenizer.sep_id]
  built = features.parse_features([odd], tokenizer, 128, 2, data.KLUE_DP_LABELS, ["NNG"])
  assert built.kept_words.tolist() == [2] and built.piece_ids[0][-2] == tokenizer.unk_id
  assert built.pos_ids[0, :2].tolist() == [[2, 2], [1, 1]]


@pytest.fixture(scope="module")
def parser_objective(tokenizer, klue_dev):
  objective = DependencyParsingObjective(tokenizer, "klue-dp", max_words=12)
  objective.learn_from_train(klue_dev[:40])
  return objective


def test_the_loss_is_the_mean_over_gold_arcs_of_arc_and_relation_cross_entropy(parser_objective, klue_dev):
  examples = klue_dev[:6]
  split = parser_objective.encode(examples, None, 40, "examples")
  batch = split.batch(tf.range(6), tf.ones([6]))
  heads, relations = split.labels[:, 0], split.labels[:, 1]
  scored = heads >= 0
  assert 0 < scored.sum() < sum(len(example.words) for example in examples)  # some words and arcs are cut
  normalizers = parser_objective.loss_normalizers(batch)
  assert normalizers.numpy().tolist() == [scored.sum()]
  model = parser_objective.build_model(tiny_config(**CONFIG), dropout_prob=0.0)
  loss, sums = parser_objective.replica_loss(model)(batch, normalizers)
  outputs = model(dict(batch["inputs"], **batch["words"], heads=np.maximum(heads, 0)), training=False)
  arcs = tf.nn.log_softmax(outputs["arc_scores"][:, 1:]).numpy()
  labels = tf.nn.log_softmax(outputs["label_scores"][:, 1:]).numpy()
  rows, words = np.nonzero(scored)
  expected = -(arcs[rows, words, heads[rows, words]] + labels[rows, words, relations[rows, words]])
  assert loss.numpy() == pytest.approx(expected.mean(), rel=1e-5)
  metrics = parser_objective.metrics_from_sums(sums.numpy())
  assert metrics["loss"] == pytest.approx(expected.mean(), rel=1e-5)
  assert 0 <= metrics["head_accuracy"] <= 1 and metrics["arc_loss"] + metrics["label_loss"] == pytest.approx(
      metrics["loss"], rel=1e-5)


@pytest.mark.parametrize("pos_embedding_size", [4, 0])  # 0: no tag features, no tag embeddings
def test_the_parser_round_trips_through_its_config(pos_embedding_size):
  model = AlbertDependencyParser(tiny_config(), ["NP", "VP"], pos_vocab_size=5,
                                 pos_embedding_size=pos_embedding_size, arc_units=8, label_units=6,
                                 dropout_rate=0.2)
  inputs = model.dummy_inputs(batch_size=2, seq_length=6, num_words=3)
  expected = model(inputs, training=False)
  tag_weights = [variable for variable in model.variables if "pos_embeddings" in variable.name]
  assert len(tag_weights) == (1 if pos_embedding_size else 0)
  assert expected["arc_scores"].shape == (2, 4, 4) and expected["label_scores"].shape == (2, 4, 4, 2)
  assert tf_keras.utils.get_registered_name(AlbertDependencyParser) == "albert_tf>AlbertDependencyParser"
  copy = AlbertDependencyParser.from_config(model.get_config())
  assert copy.get_config() == model.get_config() and copy.dropout_rate == 0.2
  copy(inputs)
  copy.set_weights(model.get_weights())
  for name, value in copy(inputs, training=False).items():
    np.testing.assert_array_equal(value.numpy(), expected[name].numpy())


def gold_outputs(split, num_labels, seed=0):
  """What `predict` would give for a parser that scores each gold arc best and labels it right."""
  rng = np.random.default_rng(seed)
  examples, built = split.source
  size = built.word_mask.shape[1] + 1
  arc_scores = rng.normal(0, 0.1, (len(examples), size, size)).astype(np.float32)
  label_ids = rng.integers(0, num_labels, (len(examples), size, size)).astype(np.int32)
  for row, kept in enumerate(built.kept_words):
    for word in range(kept):
      head, relation = built.heads[row, word], built.relation_ids[row, word]
      if head != features.NOT_SCORED:
        arc_scores[row, word + 1, head] += 3.0
        if relation != features.NOT_SCORED:
          label_ids[row, word + 1, head] = relation
    arc_scores[row, :, kept + 1:] = MASKED_ARC_SCORE
  return {"arc_scores": arc_scores, "label_ids": label_ids}


def test_conllu_predictions_round_trip_and_cut_words_are_counted(tokenizer, tmp_path):
  treebank = ["# sent_id = s1", "# text = 나는 갔다.", "1\t나는\t나+는\tPRON\tNP+JX\t_\t2\tnsubj\t_\t_",
              "2\t갔다\t가+았+다\tVERB\tVV+EP+EF\t_\t0\troot\t_\t_", "3\t.\t.\tPUNCT\tSF\t_\t2\tpunct\t_\t_", "",
              "1\t먹었다\t먹\tVERB\t_\t_\t0\troot\t_\t_", "2\t!\t!\tPUNCT\tSF\t_\t1\tdiscourse\t_\t_"]
  write(tmp_path / "ko-ud-train.conllu", treebank[:6])
  write(tmp_path / "ko-ud-dev.conllu", treebank)
  objective = DependencyParsingObjective(tokenizer, "conllu", max_words=2)
  objective.learn_from_train(objective.read_examples(str(tmp_path), "train"))
  assert objective.label_list == ["nsubj", "punct", "root"]
  assert objective.tags == ["EF", "JX", "NP", "SF", "VV"]
  split = objective.encode(objective.read_examples(str(tmp_path), "dev"), None, 32, "dev")
  outputs = gold_outputs(split, 3)
  metrics = objective.evaluation_metrics(outputs, split)
  # Sentence 1's "." is cut (2 words at most); sentence 2's "discourse" is not a train relation: wrong.
  assert metrics["truncated_sentences"] == 1 and metrics["truncated_words_excluded"] == 1
  assert metrics["uas"] == 1.0 and metrics["las"] == 0.75
  files = objective.prediction_files(outputs, split, str(tmp_path))
  assert list(files) == [PREDICTIONS["conllu"], PREDICTIONS_JSON]
  predicted = data.read_conllu(write(tmp_path / "predicted.conllu",
                                     files[PREDICTIONS["conllu"]].splitlines()))
  first, second = predicted
  assert first.guid == "s1" and first.words == ("나는", "갔다", ".")
  assert first.pos_tags == ("NP+JX", "VV+EP+EF", "SF")
  # The cut "." is attached to the parsed root word with the first relation.
  assert first.heads == (2, 0, 2) and first.deprels == ("nsubj", "root", "nsubj")
  assert second.heads == (0, 1) and second.deprels[0] == "root"
  records = json.loads(files[PREDICTIONS_JSON])
  assert [record["parsed_words"] for record in records] == [2, 2]
  assert [tuple(record["heads"]) for record in records] == [first.heads, second.heads]


def test_the_objective_refuses_a_run_of_other_data(tokenizer, klue_dev):
  objective = DependencyParsingObjective(tokenizer, "klue-dp")
  with pytest.raises(TaskError, match="holds a run of task 'conllu', not 'klue-dp'"):
    objective.adopt_run_info({"task": "dependency_parsing", "format": "conllu"}, "run")
  objective.adopt_run_info({"task": "dependency_parsing", "format": "klue-dp",
                            "label_list": list(data.KLUE_DP_LABELS), "pos_tags": ["NNG"]}, "run")
  with pytest.raises(TaskError, match="relations or tags differ .* it adds .*JKS"):
    objective.learn_from_train(klue_dev[:10])
  with pytest.raises(TaskError, match="relations and tags are unknown"):
    DependencyParsingObjective(tokenizer, "conllu").build_model(tiny_config(), 0.1)
  # A resumed run's scores, which choose model.ckpt-best, must all be over the same words.
  run = {"task": "dependency_parsing", "format": "klue-dp", "label_list": list(data.KLUE_DP_LABELS),
         "pos_tags": ["NNG"], "max_words": 64, "pos_embedding_size": 64}
  with pytest.raises(TaskError, match=r"^--output_dir run was trained with --max_words=64, not 32: its checkpoints"):
    DependencyParsingObjective(tokenizer, "klue-dp", max_words=32).adopt_run_info(run, "run")
  with pytest.raises(TaskError, match=r"was trained with --pos_embedding_size=64, not 0: its weights"):
    DependencyParsingObjective(tokenizer, "klue-dp", pos_embedding_size=0).adopt_run_info(run, "run")


@pytest.fixture(scope="module")
def tool_run(tmp_path_factory):
  """The tool on 48 train and 24 dev sentences of KLUE's dev file: 20 steps from scratch in loops of 10 (a
  loss line each), evaluated once at 20, the best weights predicting the test split (KLUE's: the dev file) and
  exported."""
  root = tmp_path_factory.mktemp("klue_dp")
  klue_file(root / "data" / "klue-dp-v1.1_train.tsv", 0, 48)
  klue_file(root / "data" / "klue-dp-v1.1_dev.tsv", 48, 72)
  config = root / "albert_config.json"
  tiny_config(**CONFIG).to_json_file(str(config))
  result = run_tool("run_dependency_parsing", "--task_name=klue-dp", f"--data_dir={root / 'data'}",
                    f"--output_dir={root / 'run'}", f"--albert_config_file={config}",
                    f"--spm_model_file={SP8K_MODEL}", "--max_seq_length=64", "--max_words=24",
                    "--train_step=20", "--train_batch_size=8", "--eval_batch_size=8",
                    "--predict_batch_size=8", "--learning_rate=1e-3", "--warmup_step=0",
                    "--save_checkpoints_steps=20", "--iterations_per_loop=10", "--do_predict",
                    f"--export_dir={root / 'export'}")
  assert result.returncode == 0, result.stderr[-3000:]
  return root, result.stderr


def test_the_tool_trains_scores_and_writes_trees_in_klues_format(tool_run, tokenizer, klue_dev):
  root, stderr = tool_run
  losses = [float(value) for value in re.findall(r"\| loss ([0-9.]+)", stderr)]
  assert len(losses) == 2 and losses[1] < losses[0]
  evaluation = (root / "run" / run_directory.EVAL_RESULTS).read_text()
  assert "global_step = 20" in evaluation
  for name in ("uas_macro_f1", "las_macro_f1", "uas", "las"):
    assert re.search(rf"^{name} = 0\.[0-9]+$", evaluation, re.MULTILINE), name
  dev = klue_dev[48:72]
  built = features.parse_features(dev, tokenizer, 64, 24, data.KLUE_DP_LABELS, [])
  cut = [len(example.words) - kept for example, kept in zip(dev, built.kept_words)]
  assert f"truncated_sentences = {sum(1 for words in cut if words)}\n" in evaluation
  assert f"truncated_words_excluded = {sum(cut)}\n" in evaluation and sum(cut) > 0
  task = json.loads((root / "run" / "task.json").read_text())
  assert task["format"] == "klue-dp" and task["label_list"] == list(data.KLUE_DP_LABELS)
  assert task["pos_tags"] == features.tag_vocabulary(klue_dev[:48])
  predicted = data.read_klue_dp(str(root / "run" / PREDICTIONS["klue-dp"]))
  records = json.loads((root / "run" / PREDICTIONS_JSON).read_text(encoding="utf-8"))
  assert [example.guid for example in predicted] == [example.guid for example in dev]
  for example, gold, record, kept in zip(predicted, dev, records, built.kept_words):
    assert example.words == gold.words and example.sentence_text == gold.sentence_text
    assert example.lemmas == gold.lemmas and example.pos_tags == gold.pos_tags
    assert decoding.is_single_root_tree(example.heads), example
    assert list(example.heads) == record["heads"] and list(example.deprels) == record["relations"]
    assert record["parsed_words"] == kept


def test_the_exported_parser_serves_the_trees_and_relations_of_the_predictions(tool_run, tokenizer, klue_dev):
  root, _ = tool_run
  best = root / "run" / run_directory.BEST_CHECKPOINT
  model, _ = build_model_for_checkpoint(tiny_config(**CONFIG), str(best))
  objective = DependencyParsingObjective(tokenizer, "klue-dp", max_words=24)
  objective.adopt_run_info(json.loads((root / "run" / "task.json").read_text()), "run")
  assert model.label_names == tuple(data.KLUE_DP_LABELS)
  dev = klue_dev[48:72]
  split = objective.encode(dev, None, 64, "dev")
  batch = split.batch(tf.range(4), tf.ones([4]))
  expected = objective.predict(model, batch)
  loaded = tf.saved_model.load(str(root / "export" / "1"))
  served = loaded.signatures["serving_default"](**batch["inputs"], **batch["words"])
  mask = split.words["word_mask"].astype(bool)
  for row in range(4):
    words = int(mask[row].sum())
    np.testing.assert_allclose(served["arc_scores"][row, :words + 1, :words + 1],
                               expected["arc_scores"][row, :words + 1, :words + 1], rtol=1e-4, atol=1e-4)
  # The trees and relations of the prediction files (the best weights parsed the same sentences).
  records = json.loads((root / "run" / PREDICTIONS_JSON).read_text(encoding="utf-8"))
  relation_ids = {label: index for index, label in enumerate(data.KLUE_DP_LABELS)}
  for row, record in enumerate(records[:4]):
    kept = record["parsed_words"]
    assert served["heads"].numpy()[row].tolist() == record["heads"][:kept] + [-1] * (mask.shape[1] - kept)
    assert served["relation_ids"].numpy()[row, :kept].tolist() == [relation_ids[relation] for relation
                                                                    in record["relations"][:kept]]
  # parse_text: the raw sentences and their words' tags in, the same trees out, words cut as in training.
  parsed = loaded.signatures["parse_text"](text=tf.constant([" ".join(example.words) for example in dev]),
                                           pos=tf.constant([" ".join(example.pos_tags) for example in dev]))
  for row, (example, record) in enumerate(zip(dev, records)):
    kept = record["parsed_words"]
    assert int(parsed["num_words"][row]) == kept
    assert bool(parsed["truncated"][row]) == (kept < len(example.words))
    assert [word.decode() for word in parsed["words"].numpy()[row, :kept]] == list(example.words[:kept])
    assert parsed["heads"].numpy()[row, :kept].tolist() == record["heads"][:kept]
    assert [relation.decode() for relation in parsed["relations"].numpy()[row, :kept]] == record["relations"][
        :kept]
  assert sum(int(cut) for cut in parsed["truncated"].numpy()) > 0
  with pytest.raises(tf.errors.InvalidArgumentError, match="one tag string .* per whitespace-separated word"):
    loaded.signatures["parse_text"](text=tf.constant(["나는 갔다"]), pos=tf.constant(["NP+JX"]))


def test_export_onnx_refuses_a_parser_with_one_line_before_converting(tool_run, tmp_path):
  version = tool_run[0] / "export" / "1"
  assert onnx_export_refusal(version, tmp_path / "onnx") == (
      f"error: {version} is a dependency parser (its parse_text signature): export_onnx does not support "
      f"dependency parsers; it converts {onnx_export.converted_kinds()}.")


def test_parse_text_of_a_parser_without_tags_parses_as_the_tool_does(tokenizer, klue_dev):
  # Random weights and no tag features: the text alone, tokenized and cut in the graph, gives the trees and
  # relations of the tool's own features and decoder. Sentences are cut by words and by pieces; the odd ones: a
  # first word of 99 pieces, longer than the sequence; a word that preprocessing empties (a lone combining accent).
  odd = [data.ParseExample("long", ("대한민국의" * 20, "갔다"), ("_",) * 2, ("NNG", "VV"), (2, 0),
                           ("NP", "VP"), ""),
         data.ParseExample("accent", ("나는", "\u0301", "갔다"), ("_",) * 3, ("NP", "SS", "VV"), (3, 3, 0),
                           ("NP", "NP", "VP"), "")]
  examples = klue_dev[:30] + odd
  objective = DependencyParsingObjective(tokenizer, "klue-dp", max_words=12, pos_embedding_size=0)
  objective.learn_from_train(examples)
  model = objective.build_model(tiny_config(**CONFIG), 0.0)
  split = objective.encode(examples, None, 40, "dev")
  batch = split.batch(tf.range(len(examples)), tf.ones([len(examples)]))
  model(dict(batch["inputs"], **batch["words"]))
  randomize(model, seed=3)
  assert not any("pos_embeddings" in variable.name for variable in model.variables)
  heads, relations = objective._parses({name: value.numpy() for name, value in
                                        objective.predict(model, batch).items()}, split.source[1])
  module = serving.AlbertDependencyParserServingModule(
      model, GraphTokenizer(SP8K_MODEL), TextPacking(40), options=serving.ParsingOptions(tuple(objective.tags), 12))
  assert len(module.parse_text.input_signature) == 1  # the text alone
  parsed = module.parse_text(tf.constant([" ".join(example.words) for example in examples]))
  for row, (sentence_heads, sentence_relations) in enumerate(zip(heads, relations)):
    kept = len(sentence_heads)
    assert int(parsed["num_words"][row]) == kept
    assert parsed["heads"].numpy()[row, :kept].tolist() == sentence_heads.tolist()
    assert parsed["relation_ids"].numpy()[row, :kept].tolist() == sentence_relations.tolist()
  assert int(parsed["num_words"][-2]) == 1 and bool(parsed["truncated"][-2])  # the long word alone
  assert sum(int(cut) for cut in parsed["truncated"].numpy()) > 10


@pytest.mark.parametrize("problem", ["bad head", "no conllu file"])
def test_the_tool_refuses_bad_input_with_one_line_and_writes_nothing(tmp_path, problem):
  data_dir = tmp_path / "data"
  if problem == "bad head":
    path = klue_file(data_dir / "klue-dp-v1.1_train.tsv", 0, 3)
    lines = open(path, encoding="utf-8").read().splitlines()
    lines[7] = re.sub(r"\t6\tNP_SBJ$", "\t9\tNP_SBJ", lines[7])  # 유희열이's head, past the 6 eojeols
    write(data_dir / "klue-dp-v1.1_train.tsv", lines)
    klue_file(data_dir / "klue-dp-v1.1_dev.tsv", 3, 6)
  else:
    write(data_dir / "train.tsv", ["not a treebank"])
  config = tmp_path / "albert_config.json"
  tiny_config(**CONFIG).to_json_file(str(config))
  task_name = "klue-dp" if problem == "bad head" else "conllu"
  result = run_tool("run_dependency_parsing", f"--task_name={task_name}", f"--data_dir={data_dir}",
                    f"--output_dir={tmp_path / 'run'}", f"--albert_config_file={config}",
                    f"--spm_model_file={SP8K_MODEL}", "--max_seq_length=64")
  assert result.returncode == 2
  message = result.stderr.strip().splitlines()[-1]
  expected = {"bad head": f"error: {data_dir / 'klue-dp-v1.1_train.tsv'}, line 8: head 9 is out of range",
              "no conllu file": f"error: --data_dir {data_dir} has no train file of --task_name=conllu: it "
                                "reads *-ud-train.conllu or train.conllu."}[problem]
  assert message.startswith(expected), message
  assert not (tmp_path / "run").exists()
