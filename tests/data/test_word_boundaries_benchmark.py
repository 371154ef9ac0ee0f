"""benchmarks/benchmark_word_boundaries.py on a few hundred lines: its figures are sane."""

import os

from tests.conftest import SHARED, SP8K_MODEL, requires_shared, run_tool

pytestmark = requires_shared(SP8K_MODEL)
LINES = 300


def benchmark(tmp_path, corpus, *flags):
  sample = tmp_path / corpus
  with open(os.path.join(SHARED, "corpus", corpus), encoding="utf-8") as text:
    sample.write_text("".join(text.readlines()[:LINES]), encoding="utf-8")
  result = run_tool("benchmarks/benchmark_word_boundaries", f"--input_file={sample}", f"--spm_model_file={SP8K_MODEL}",
                    "--dupe_factor=1", "--max_seq_length=64", "--max_predictions_per_seq=10", "--num_workers=1",
                    "--batch_size=16", *flags)
  assert result.returncode == 0, result.stderr
  return result.stdout


def figure_rows(stdout):
  """{(rule, masking): {column: value}} from the first table."""
  lines = stdout.splitlines()
  header = next(index for index, line in enumerate(lines) if line.startswith("rule "))
  columns = lines[header].split()
  rows = {}
  for line in lines[header + 1:]:
    if line.startswith("span lengths"):
      break
    values = line.split()
    rows[values[0], values[1]] = {name: float(value.replace(",", "")) for name, value in zip(columns[2:], values[2:])}
  return rows


def test_whole_eojeols_under_sentencepiece_only_and_morpheme_needs_its_vocabulary(tmp_path):
  """Korean through the input pipeline's masking (test_pretraining_writer holds both kinds of masking to Google's
  statistics under each rule; the English test below reads masked records)."""
  stdout = benchmark(tmp_path, "ko_libreoffice_help.txt", "--word_boundaries=google,sentencepiece,morpheme",
                     "--masking=dynamic")
  assert "(Korean), vocabulary sp8k_en_ko.model" in stdout
  assert "morpheme: not run (needs --morpheme_spm_model_file)" in stdout
  rows = figure_rows(stdout)
  assert set(rows) == {("google", "dynamic"), ("sentencepiece", "dynamic")}
  for (rule, kind), row in rows.items():
    assert row["examples"] > 30, (rule, kind)
    assert 0.1 < row["mask_rate"] < 0.2 and 0.6 < row["[MASK]"] < 0.95, (rule, kind, row)
    assert abs(row["[MASK]"] + row["kept"] + row["random"] - 1) < 0.002
    # Whole-word masking masks every word it touches whole, whatever the rule's words are.
    assert row["words_whole"] == 1.0
    assert row["mean_span_pieces"] >= row["mean_span_eojeols"] >= 1
    # Under google a Hangul piece is a word: eojeols are often masked in part.
    assert row["eojeols_whole"] == 1.0 if rule == "sentencepiece" else row["eojeols_whole"] < 0.8, (rule, kind)
  spans = [line.split() for line in stdout.splitlines() if " pieces " in line]
  assert len(spans) == 2 and all(abs(sum(map(float, span[3:9])) - 1) < 0.01 for span in spans)


def test_english_differences_by_kind(tmp_path):
  stdout = benchmark(tmp_path, "en_wiki.txt", "--word_boundaries=google", "--masking=offline")
  assert "morpheme" not in stdout and "(not Korean)" in stdout
  row = figure_rows(stdout)["google", "offline"]
  assert row["words_whole"] == 1.0 and 0.1 < row["mask_rate"] < 0.2
  assert "google_vs_sentencepiece: " in stdout
  for kind in ("digit", "non-ASCII letter", "one-character punctuation or symbol", "other"):
    assert f"  {kind}: " in stdout
  assert "',' " in stdout.split("one-character punctuation or symbol: ")[1].splitlines()[0]


def test_bad_input_is_refused_before_any_data_run(tmp_path):
  corpus = tmp_path / "corpus.txt"
  corpus.write_text("한 문장.\n", encoding="utf-8")
  for flags, message in [
      ([f"--input_file={tmp_path / 'none.txt'}"], f"No input file matches {tmp_path / 'none.txt'}"),
      ([f"--input_file={corpus}", "--word_boundaries=google,eojeol"], "--word_boundaries: unknown value(s) eojeol"),
      ([f"--input_file={corpus}", "--masking=online"], "--masking: unknown value(s) online")]:
    refused = run_tool("benchmarks/benchmark_word_boundaries", *flags)
    assert refused.returncode == 2 and f"error: {message}" in refused.stderr, refused.stderr
    assert "Traceback" not in refused.stderr and not refused.stdout
