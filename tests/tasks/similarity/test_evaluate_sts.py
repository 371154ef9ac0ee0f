"""tools/evaluate_sts.py: sentence-transformers' EmbeddingSimilarityEvaluator figures, from a SavedModel, a
checkpoint or a Hugging Face folder of one sentence encoder, on STS-B's, KorSTS' and a user's TSV layout."""

import csv
import json
import os

import numpy as np
import pytest
from scipy import stats

import albert_tf
from albert_tf.data import task_readers
from albert_tf.errors import OptionError, TaskError
from albert_tf.interop.huggingface import export_to_hf
from albert_tf.modeling.checkpoints import save_checkpoint
from albert_tf.serving import saved_model
from albert_tf.tasks.classification import catalogue
from albert_tf.tasks.classification import user_tsv
from albert_tf.tasks.similarity import objective as similarity_objective
from albert_tf.tasks.similarity import sts_evaluation
from albert_tf.text.graph_tokenizer import tokenizer_for_model
from tests.conftest import SHARED, SP8K_MODEL, randomize_text_sensitive, run_tool, tiny_config
from tests.tasks.classification.glue_data import STSB_HEADER, STSB_ROW

MAX_SEQ_LENGTH = 32
CONFIG = tiny_config(vocab_size=8000)
KORSTS_HEADER = "genre\tfilename\tyear\tid\tscore\tsentence1\tsentence2"


def _shared_rows(*path):
  with open(os.path.join(SHARED, *path), encoding="utf-8") as reader:
    return [line.rstrip("\n").split("\t") for line in reader if line.strip()]


MESSAGES = _shared_rows("parallel", "en_ko_messages.tsv")[30:42]  # English, Korean, source
REVIEWS = _shared_rows("finetune", "movieReviewSnippets_GroundTruth.tsv")[:10]  # id, rating, review
# (text a, text b, score): consecutive reviews scored by how close their ratings are (STS-B); a message and its
# translation, or the next message's (the user's TSV); Korean messages and the next ones (KorSTS).
STSB_PAIRS = [(a[2], b[2], round(max(0.0, 5 - abs(float(a[1]) - float(b[1]))), 3))
              for a, b in zip(REVIEWS, REVIEWS[1:])]
TSV_PAIRS = [(english, korean if index % 3 else MESSAGES[index - 1][1], 5.0 if index % 3 else index % 4 * 0.8)
             for index, (english, korean, _) in enumerate(MESSAGES)]
KORSTS_PAIRS = [(a[1], b[1], float(index % 5) + 0.5) for index, (a, b) in enumerate(zip(MESSAGES, MESSAGES[3:]))]
TSV_FLAGS = ["--task_name=tsv", "--tsv_has_header", "--tsv_is_regression", "--tsv_label_column=1",
             "--tsv_text_a_column=2", "--tsv_text_b_column=3"]


def write_lines(path, lines):
  path.parent.mkdir(parents=True, exist_ok=True)
  path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
  return str(path)


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
  """One sentence encoder as a checkpoint, a Hugging Face folder and a SavedModel, and the data files."""
  root = tmp_path_factory.mktemp("sts")
  model = albert_tf.AlbertSentenceEncoder(CONFIG, "cls", 24)
  model(model.dummy_inputs())
  randomize_text_sensitive(model, seed=3)
  save_checkpoint(model, str(root / "run" / "model.ckpt-7"))
  (root / "run" / "task.json").write_text(json.dumps({"sentence_embedding": {"pooling": "cls",
                                                                             "projection_dim": 24}}))
  CONFIG.to_json_file(str(root / "run" / "albert_config.json"))
  # No tokenizer files (writing them measures parity, some 8 s): the tool is given --spm_model_file.
  export_to_hf(model, str(root / "hf"), max_seq_length=MAX_SEQ_LENGTH)
  export_dir = saved_model.export_saved_model(model, str(root / "export"), SP8K_MODEL, MAX_SEQ_LENGTH)
  write_lines(root / "glue" / "STS-B" / "dev.tsv", [STSB_HEADER + "\tscore"] + [
      STSB_ROW.format(index, a, b) + f"\t{score}" for index, (a, b, score) in enumerate(STSB_PAIRS)])
  write_lines(root / "glue" / "STS-B" / "test.tsv", [STSB_HEADER] + [
      STSB_ROW.format(index, a, b) for index, (a, b, _) in enumerate(STSB_PAIRS)])
  write_lines(root / "pairs.tsv", ["id\tscore\tsentence1\tsentence2"] + [
      f"{index}\t{score}\t{a}\t{b}" for index, (a, b, score) in enumerate(TSV_PAIRS)])
  write_lines(root / "korean" / "KorSTS" / "sts-dev.tsv", [KORSTS_HEADER] + [
      f"main-captions\tMSRvid\t2012test\t{index:04d}\t{score}\t{a}\t{b}"
      for index, (a, b, score) in enumerate(KORSTS_PAIRS)])
  texts = sorted({text for pairs in (STSB_PAIRS, TSV_PAIRS, KORSTS_PAIRS) for a, b, _ in pairs for text in (a, b)})
  packed = tokenizer_for_model(CONFIG, SP8K_MODEL).encode_and_pack(np.array(texts), None, MAX_SEQ_LENGTH)
  embeddings = dict(zip(texts, model(packed)["embedding"].numpy().astype(np.float64)))
  return {"root": root, "embeddings": embeddings, "saved_model": export_dir,
          "checkpoint": [f"--checkpoint={root / 'run'}", f"--albert_config_file={root / 'run' / 'albert_config.json'}",
                         f"--spm_model_file={SP8K_MODEL}", f"--max_seq_length={MAX_SEQ_LENGTH}"],
          "hf_folder": [f"--hf_folder={root / 'hf'}", f"--spm_model_file={SP8K_MODEL}"]}


def expected_figures(embeddings, pairs):
  """(Pearson, Spearman) of each similarity, by SciPy, from the model's own embeddings."""
  a = np.stack([embeddings[text] for text, _, _ in pairs])
  b = np.stack([embeddings[text] for _, text, _ in pairs])
  scores = [score for _, _, score in pairs]
  similarities = {
      "cosine": np.sum(a * b, 1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)),
      "manhattan": -np.abs(a - b).sum(1), "euclidean": -np.linalg.norm(a - b, axis=1), "dot": np.sum(a * b, 1)}
  return {name: (stats.pearsonr(scores, values)[0], stats.spearmanr(scores, values)[0])
          for name, values in similarities.items()}


def check_figures(evaluation_lines, csv_rows, expected):
  """The printed lines (4 decimals, sentence-transformers' format) and CSV rows against SciPy's figures."""
  assert [row[0] for row in csv_rows] == list(sts_evaluation.SIMILARITIES)
  for line, row in zip(evaluation_lines, csv_rows):
    pearson, spearman = expected[row[0]]
    np.testing.assert_allclose([float(row[1]), float(row[2])], [pearson, spearman], atol=1e-5, err_msg=row[0])
    label, printed_pearson, printed_spearman = line.split("\t")
    assert label == f"{row[0].capitalize()}-Similarity:"
    assert abs(float(printed_pearson.removeprefix("Pearson: ")) - pearson) <= 5.1e-5, (line, pearson)
    assert abs(float(printed_spearman.removeprefix("Spearman: ")) - spearman) <= 5.1e-5, (line, spearman)


# The tool on two sources and layouts; the next test runs each source's embedder on the other layouts.
@pytest.mark.parametrize("source, data", [("checkpoint", "tsv"), ("hf_folder", "korsts")])
def test_tool_prints_and_writes_the_correlations_of_each_model_source(sources, source, data):
  root = sources["root"]
  model_flags = [f"--saved_model={sources['saved_model']}"] if source == "saved_model" else sources[source]
  data_flags, pairs = {
      "sts-b": (["--task_name=STS-B", f"--data_dir={root / 'glue'}"], STSB_PAIRS),
      "tsv": (TSV_FLAGS + [f"--data_dir={root / 'pairs.tsv'}", "--split=test"], TSV_PAIRS),
      "korsts": (["--task_name=korsts", f"--data_dir={root / 'korean'}"], KORSTS_PAIRS)}[data]
  output = root / "results" / f"{source}.csv"
  result = run_tool("evaluate_sts", *model_flags, *data_flags, f"--output_file={output}")
  assert result.returncode == 0, result.stderr[-3000:]
  lines = result.stdout.splitlines()
  assert lines[0].startswith(f"{data} ") and f": {len(pairs)} pairs" in lines[0]
  with open(output, encoding="utf-8", newline="") as reader:
    rows = list(csv.reader(reader))
  assert rows[0] == ["similarity", "pearson", "spearman"] and len(rows) == 5
  check_figures(lines[1:5], rows[1:], expected_figures(sources["embeddings"], pairs))
  assert lines[5] == f"Wrote {output}"


@pytest.mark.parametrize("source", ["saved_model", "checkpoint", "hf_folder"])
def test_each_model_source_scores_sts_b_and_a_tsv_file(sources, source):
  """The other layouts of each source, in process: the embedders behind the tool give the same figures."""
  root = sources["root"]
  values = {"saved_model": dict(saved_model=sources["saved_model"]),
            "checkpoint": dict(checkpoint=str(root / "run"), spm_model_file=SP8K_MODEL,
                               albert_config_file=str(root / "run" / "albert_config.json"),
                               max_seq_length=MAX_SEQ_LENGTH),
            "hf_folder": dict(hf_folder=str(root / "hf"), spm_model_file=SP8K_MODEL)}[source]
  embed = sts_evaluation.ModelSource(**values).embedder(batch_size=5)
  tsv_task = catalogue.get_task("tsv", user_tsv.TsvFormat(text_a_column=2, text_b_column=3, label_column=1,
                                                          has_header=True, is_regression=True))
  for task, data_dir, pairs in ((catalogue.get_task("sts-b"), root / "glue", STSB_PAIRS),
                                (tsv_task, root / "pairs.tsv", TSV_PAIRS)):
    evaluation = sts_evaluation.evaluate(task.read_examples(str(data_dir), "dev"), embed)
    assert evaluation.num_pairs == len(pairs)
    assert evaluation.num_texts == len({text for a, b, _ in pairs for text in (a, b)})
    rows = list(csv.reader(evaluation.to_csv().splitlines()))
    assert rows[0] == list(sts_evaluation.CSV_COLUMNS)
    check_figures(evaluation.lines(), rows[1:], expected_figures(sources["embeddings"], pairs))


def test_tool_error_is_one_line_and_writes_nothing(sources):
  # GLUE's test split has no scores: found once the model is loaded and the data read.
  output = sources["root"] / "refused" / "results.csv"
  result = run_tool("evaluate_sts", *sources["hf_folder"], "--task_name=sts-b",
                    f"--data_dir={sources['root'] / 'glue'}", "--split=test", f"--output_file={output}")
  assert result.returncode == 2
  assert result.stderr.strip().splitlines()[-1] == (
      "error: Example 0 has no score: STS evaluation needs scored pairs (is the split unlabeled, as GLUE's test "
      "files?).")
  assert "Traceback" not in result.stderr and not output.parent.exists()


@pytest.mark.parametrize("values, message", [
    ({}, "No model to evaluate: give --saved_model, --checkpoint"),
    (dict(saved_model="a", hf_folder="b"), "--saved_model and --hf_folder each name a model"),
    (dict(checkpoint="a", spm_model_file="b"), "--checkpoint needs --albert_config_file"),
    (dict(saved_model="a", max_seq_length=64, do_lower_case=False),
     "--max_seq_length, --do_lower_case: a SavedModel holds its config and tokenizer"),
    (dict(hf_folder="a", albert_config_file="b"), "--albert_config_file: a Hugging Face folder has its config.json"),
])
def test_model_flags_that_do_not_name_one_model_are_refused(values, message):
  with pytest.raises(OptionError, match=message):
    sts_evaluation.ModelSource(**values).check()


def test_only_scored_pairs_are_evaluated():
  with pytest.raises(TaskError, match="--task_name=mrpc is a classification; sentence similarity needs scored "
                                            "text pairs: sts-b, .*or tsv with --tsv_text_b_column and "
                                            "--tsv_is_regression"):
    similarity_objective.check_similarity_task(catalogue.get_task("mrpc"))
  single = catalogue.get_task("tsv", user_tsv.TsvFormat(text_a_column=0, label_column=1, is_regression=True))
  with pytest.raises(TaskError, match="--task_name=tsv is a regression of single texts"):
    similarity_objective.check_similarity_task(single)
  assert {"sts-b", "korsts", "klue-sts"} <= set(similarity_objective.similarity_task_names())
  one_pair = [task_readers.Example("dev-1", "a", "b", 1.0)]
  with pytest.raises(TaskError, match="1 scored pair"):
    sts_evaluation.evaluate(one_pair, lambda texts: np.ones([len(texts), 2]))
