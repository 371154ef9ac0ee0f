"""SQuAD examples, features and their cache (`albert_tf.tasks.squad`) on small files built from the shared
corpora."""

import json
import re

import pytest
import tensorflow as tf

from albert_tf import files
from albert_tf.errors import DataError, InputFileError, OptionError
from albert_tf.tasks.squad import examples as squad_examples
from albert_tf.tasks.squad import feature_cache
from albert_tf.tasks.squad import features as squad_features
from albert_tf.text.tokenizer import SentencePieceTokenizer, preprocess_text
from tests.conftest import SP8K_MODEL, corpus_lines, requires_shared

pytestmark = requires_shared(SP8K_MODEL)

EN = corpus_lines("en_wiki.txt", 40)
KO = corpus_lines("ko_libreoffice_help.txt", 40)


@pytest.fixture(scope="module")
def tokenizer():
  return SentencePieceTokenizer(SP8K_MODEL, do_lower_case=True)


def question(qas_id, context, answer, occurrence=0, start=None, text=None, **fields):
  """A qa whose answer is the `occurrence`-th `answer` in `context` (or at `start`, written as `text`)."""
  if start is None:
    start = -1
    for _ in range(occurrence + 1):
      start = context.index(answer, start + 1)
  return dict({"id": qas_id, "question": f"What is {qas_id}?",
               "answers": [{"text": answer if text is None else text, "answer_start": start}]}, **fields)


def write_squad(path, paragraphs, version="1.1"):
  """A SQuAD file in the official layout: one article per (context, qas) pair; `path` local or in a bucket."""
  data = [{"title": f"article {index}", "paragraphs": [{"context": context, "qas": qas}]}
          for index, (context, qas) in enumerate(paragraphs)]
  return files.write_atomically(str(path), json.dumps({"version": version, "data": data}, ensure_ascii=False))


def features_of(tmp_path, tokenizer, paragraphs, is_training=True, version_2=False, max_seq_length=384,
                doc_stride=128, max_query_length=64):
  path = write_squad(tmp_path / "squad.json", paragraphs, "v2.0" if version_2 else "1.1")
  examples, _, _ = squad_examples.read_squad_examples(path, is_training, version_2)
  features = squad_features.convert_examples_to_features(examples, tokenizer, max_seq_length, doc_stride,
                                                         max_query_length, is_training)
  return examples, features


def predicted_text(example, feature, start, end):
  """The context's characters from the token at sequence position `start` to the one at `end`, stripped as
  Google's `write_predictions` strips them (a "▁" piece starts at the space before its word)."""
  first = feature.token_start_to_char[start - feature.context_offset]
  last = feature.token_end_to_char[end - feature.context_offset]
  return example.context_text[first:last + 1].strip()


def answer_pieces(tokenizer, feature):
  pieces = tokenizer.convert_ids_to_tokens(feature.input_ids[feature.start_position:feature.end_position + 1])
  return "".join(pieces).replace("\u2581", " ").strip()


# Answers and their positions.


def test_answers_next_to_punctuation_and_whitespace_cover_exactly_their_pieces(tmp_path, tokenizer):
  context = "  ".join(EN[:3]) + " " + EN[10]  # two spaces between the first sentences
  qas = [
      question("comma", context, "stateless societies"),  # followed by ","
      question("period", context, "voluntary institutions"),  # followed by "."
      question("quote", context, "one without rulers"),  # inside quotes, followed by '"'
      question("after_double_space", context, "These are often"),
      question("leading_space", context, " harmful", start=context.index(" harmful")),
      question("trailing_space", context, "political philosophy "),
      question("double_space_inside", context, "institutions.  These"),
  ]
  examples, features = features_of(tmp_path, tokenizer, [(context, qas)])
  assert len(features) == len(examples) == len(qas)
  expected = {"comma": "stateless societies", "period": "voluntary institutions", "quote": "one without rulers",
              "after_double_space": "These are often", "leading_space": "harmful",
              "trailing_space": "political philosophy", "double_space_inside": "institutions.  These"}
  for example, feature in zip(examples, features):
    answer = expected[example.qas_id]
    assert (example.answer_text, context[example.answer_start:].startswith(answer)) == (answer, True)
    assert not feature.is_impossible
    assert predicted_text(example, feature, feature.start_position, feature.end_position) == answer
    # The positions hold the answer's pieces and nothing more (not the "," or the next word).
    assert answer_pieces(tokenizer, feature) == preprocess_text(answer)


def test_korean_answers_with_particles_are_the_pieces_holding_them(tmp_path, tokenizer):
  context = " ".join(KO[:3]) + " 회의는 서울에서 열립니다."
  qas = [
      question("seoul", context, "서울"),  # "서울에서" is ▁ 서 울 에서: the answer is its own pieces
      question("object_particle", context, "개체"),  # "개체를" is ▁개체 를
      question("fused", context, "개체", occurrence=1),  # "개체에" is one piece: the whole piece
  ]
  assert tokenizer.tokenize("서울에서") == ["\u2581", "서", "울", "에서"]
  assert tokenizer.tokenize("개체에") == ["\u2581개체에"]
  examples, features = features_of(tmp_path, tokenizer, [(context, qas)])
  spans = {example.qas_id: predicted_text(example, feature, feature.start_position, feature.end_position)
           for example, feature in zip(examples, features)}
  assert spans == {"seoul": "서울", "object_particle": "개체", "fused": "개체에"}
  for example, feature in zip(examples, features):
    first = feature.start_position - feature.context_offset
    last = feature.end_position - feature.context_offset
    # The first and last tokens are those holding the answer's first and last characters.
    assert feature.token_start_to_char[first] <= example.answer_start <= feature.token_end_to_char[first]
    answer_end = example.answer_start + len(example.answer_text) - 1
    assert feature.token_start_to_char[last] <= answer_end <= feature.token_end_to_char[last]


def test_windows_across_an_answer(tmp_path, tokenizer):
  context = " ".join(EN[:4])
  answer = "stateless societies, although several authors"
  qas = [question("q", context, answer)]
  _, [whole] = features_of(tmp_path, tokenizer, [(context, qas)], max_seq_length=512)
  all_starts = whole.token_start_to_char
  answer_tokens = range(whole.start_position - whole.context_offset, whole.end_position - whole.context_offset + 1)
  assert len(answer_tokens) >= 5
  doc_stride, max_seq_length, max_query_length = 3, 24, 8
  examples, windows = features_of(tmp_path, tokenizer, [(context, qas)], max_seq_length=max_seq_length,
                                  doc_stride=doc_stride, max_query_length=max_query_length)
  window_length = max_seq_length - windows[0].query_length - 3
  assert [window.doc_span_index for window in windows] == list(range(len(windows)))
  holding, cutting = 0, 0
  for window in windows:
    first = window.doc_span_index * doc_stride
    assert window.token_start_to_char == all_starts[first:first + window_length]
    if first <= answer_tokens[0] and answer_tokens[-1] < first + window_length:
      holding += 1
      assert not window.is_impossible
      assert predicted_text(examples[0], window, window.start_position, window.end_position) == answer
    else:  # the window misses or cuts the answer
      cutting += first <= answer_tokens[-1] and answer_tokens[0] < first + window_length
      assert (window.is_impossible, window.start_position, window.end_position) == (True, 0, 0)
  assert holding >= 2 and cutting >= 2
  assert window.token_start_to_char[-1] == all_starts[-1]  # the last window reaches the end
  # Each token is the max-context token of exactly one window: the one where it is most central.
  max_context_windows = {}
  for window in windows:
    for offset, is_max in enumerate(window.token_is_max_context):
      if is_max:
        token = window.doc_span_index * doc_stride + offset
        assert token not in max_context_windows
        max_context_windows[token] = window.doc_span_index
  assert sorted(max_context_windows) == list(range(len(all_starts)))
  middle = window_length // 2
  assert max_context_windows[middle + doc_stride] == 1  # its window's middle token


def test_long_question_is_cut_at_max_query_length(tmp_path, tokenizer):
  context = EN[0]
  qa = question("long", context, "political philosophy", question=EN[3])
  examples, [feature] = features_of(tmp_path, tokenizer, [(context, [qa])], max_query_length=12)
  question_ids = tokenizer.encode(EN[3])
  assert len(question_ids) > 12
  assert feature.query_length == 12 and feature.context_offset == 14
  assert feature.input_ids[:14] == (tokenizer.cls_id, *question_ids[:12], tokenizer.sep_id)
  assert predicted_text(examples[0], feature, feature.start_position, feature.end_position) == "political philosophy"


def test_v2_unanswerable_questions(tmp_path, tokenizer):
  context = " ".join(EN[:2])
  unanswerable = {"id": "none", "question": EN[5], "answers": [], "is_impossible": True,
                  "plausible_answers": [{"text": "societies", "answer_start": context.index("societies")}]}
  paragraphs = [(context, [unanswerable, question("some", context, "voluntary institutions")])]
  for is_training in (True, False):
    examples, features = features_of(tmp_path, tokenizer, paragraphs, is_training, version_2=True)
    assert [(e.is_impossible, e.gold_answers, e.answer_start) for e in examples] == [
        (True, (), -1), (False, ("voluntary institutions",), context.index("voluntary"))]
    assert [(f.is_impossible, f.start_position, f.end_position) for f in features][0] == (True, 0, 0)
  assert features[1].start_position == 0 and not features[1].is_impossible  # no positions when predicting
  with pytest.raises(DataError, match="question none has 0 answers.*version_2_with_negative"):
    squad_examples.read_squad_examples(str(tmp_path / "squad.json"), is_training=True, version_2_with_negative=False)


def test_prediction_files_keep_every_answer(tmp_path, tokenizer):
  context = EN[0]
  qa = question("several", context, "political philosophy")
  qa["answers"] += [{"text": "a political philosophy", "answer_start": context.index("a political")},
                    {"text": "philosophy", "answer_start": context.index("philosophy")}]
  examples, [feature] = features_of(tmp_path, tokenizer, [(context, [qa])], is_training=False)
  assert examples[0].gold_answers == ("political philosophy", "a political philosophy", "philosophy")
  assert (feature.start_position, feature.end_position, feature.is_impossible) == (0, 0, False)


def test_count_questions(tmp_path):
  context = " ".join(EN[:2])
  unanswerable = {"id": "none", "question": EN[5], "answers": [], "is_impossible": True}
  path = write_squad(tmp_path / "squad.json", [(context, [unanswerable, question("a", context, "voluntary")]),
                                               (EN[0], [question("b", EN[0], "political")])], "v2.0")
  assert (squad_examples.count_questions(path), squad_examples.count_questions(path, with_answers=True)) == (3, 2)


def test_ids_masks_and_unique_ids(tmp_path, tokenizer):
  long_context = " ".join(EN[1:4])
  paragraphs = [(EN[0], [question("a", EN[0], "political"), question("b", EN[0], "societies")]),
                (long_context, [question("c", long_context, "harmful")])]
  examples, features = features_of(tmp_path, tokenizer, paragraphs, max_seq_length=40, doc_stride=10,
                                   max_query_length=6)
  assert [f.unique_id for f in features] == list(range(1000000000, 1000000000 + len(features)))
  for example_index in range(3):
    windows = [f.doc_span_index for f in features if f.example_index == example_index]
    assert windows == list(range(len(windows)))
  assert [f.example_index for f in features] == sorted(f.example_index for f in features)
  assert len(examples) == 3 and len(features) > 3
  for feature in features:
    question_length, context_length = feature.query_length, len(feature.token_start_to_char)
    padding = 40 - len(feature.input_ids)
    assert len(feature.input_ids) == question_length + context_length + 3
    assert feature.input_ids[0] == tokenizer.cls_id
    assert feature.input_ids[question_length + 1] == feature.input_ids[-1] == tokenizer.sep_id
    assert feature.p_mask(40) == [0] + [1] * (question_length + 1) + [0] * context_length + [1] * (1 + padding)
    assert feature.segment_ids(40) == [0] * (question_length + 2) + [1] * (context_length + 1) + [0] * padding
    assert feature.input_mask(40) == [1] * len(feature.input_ids) + [0] * padding
    assert feature.padded_input_ids(40) == list(feature.input_ids) + [0] * padding
    assert len(feature.token_end_to_char) == len(feature.token_is_max_context) == context_length


def test_misaligned_context_is_skipped_and_counted(tmp_path, tokenizer, capsys):
  # Decomposed accents: each "e\u0301" is two characters of the context but one of its pieces.
  misaligned = "e\u0301" * 40 + " end"
  paragraphs = [(misaligned, [question("x", misaligned, "end")]), (EN[0], [question("y", EN[0], "political")])]
  examples, features = features_of(tmp_path, tokenizer, paragraphs)
  assert [f.example_index for f in features] == [1]
  assert features[0].unique_id == 1000000000
  assert "1 of 2 examples skipped" in capsys.readouterr().err


# The feature cache.


def record_values(path):
  return [{name: list(feature.int64_list.value) for name, feature in tf.train.Example.FromString(record)
           .features.feature.items()} for record in tf.data.TFRecordDataset(path).as_numpy_iterator()]


@pytest.mark.parametrize("is_training, where", [(True, "local"), (False, "local"), (True, "bucket")])
def test_the_cache_is_read_when_its_settings_match(tmp_path, tokenizer, capsys, monkeypatch, is_training, where,
                                                   bucket):
  root = bucket if where == "bucket" else str(tmp_path)  # --train_file=gs://... and its cache beside it
  context = " ".join(EN[:4])
  input_file = write_squad(f"{root}/squad.json", [(context, [question("a", context, "voluntary institutions"),
                                                              question("b", context, "harmful")])])
  feature_file, left_file = f"{root}/cache/features.tfrecord", f"{root}/left.jsonl"
  arguments = dict(input_file=input_file, tokenizer=tokenizer, max_seq_length=48, doc_stride=16,
                   max_query_length=8, is_training=is_training, version_2_with_negative=False,
                   feature_file=feature_file, feature_left_file=left_file)
  made = feature_cache.load_or_create_features(**arguments)
  assert "Wrote" in capsys.readouterr().err
  records = record_values(feature_file)
  google_names = {"unique_ids", "input_ids", "input_mask", "segment_ids", "p_mask"}
  if is_training:
    google_names |= {"start_positions", "end_positions", "is_impossible"}
  assert google_names < set(records[0])
  assert {"start_positions"} & set(records[0]) == ({"start_positions"} if is_training else set())
  for record, feature in zip(records, made.features):
    assert record["p_mask"] == feature.p_mask(48) and record["segment_ids"] == feature.segment_ids(48)
    assert record["unique_ids"] == [feature.unique_id] and len(record["input_ids"]) == 48
  left = [json.loads(line) for line in files.read_text(left_file).splitlines()]
  assert [line["unique_id"] for line in left] == [f.unique_id for f in made.features]
  assert made.dataset == files.read_json(input_file)["data"]
  settings = files.read_json(f"{root}/cache/features.tfrecord.json")
  assert settings["doc_stride"] == 16 and settings["num_features"] == len(made.features)
  assert files.list_folder(f"{root}/cache") == ["features.tfrecord", "features.tfrecord.json"]  # no partial file

  # The second call tokenizes nothing.
  monkeypatch.setattr(tokenizer, "tokenize", lambda *args, **kwargs: pytest.fail("tokenized again"))
  cached = feature_cache.load_or_create_features(**arguments)
  assert "made with the same settings" in capsys.readouterr().err
  assert cached.features == made.features and cached.examples == made.examples
  assert len(made.features) > 2 and any(f.is_impossible for f in made.features) == is_training


def test_a_changed_setting_or_input_or_a_corrupt_cache_rebuilds(tmp_path, tokenizer, capsys):
  context = " ".join(EN[:4])
  input_file = write_squad(tmp_path / "squad.json", [(context, [question("a", context, "harmful")])])
  feature_file = str(tmp_path / "features.tfrecord")
  arguments = dict(input_file=input_file, tokenizer=tokenizer, max_seq_length=48, doc_stride=16,
                   max_query_length=8, is_training=True, version_2_with_negative=False, feature_file=feature_file)
  feature_cache.load_or_create_features(**arguments)
  changed = feature_cache.load_or_create_features(**dict(arguments, doc_stride=8))
  err = capsys.readouterr().err
  assert "doc_stride (16 → 8) changed" in err and "Wrote" in err
  examples = squad_examples.read_squad_examples(input_file, True, False)[0]
  assert changed.features == squad_features.convert_examples_to_features(examples, tokenizer, 48, 8, 8, True)

  write_squad(tmp_path / "squad.json", [(context, [question("a", context, "harmful"), question("b", context, "the")])])
  assert len(feature_cache.load_or_create_features(**dict(arguments, doc_stride=8)).examples) == 2
  assert "input_file_size (" in capsys.readouterr().err

  data = bytearray(open(feature_file, "rb").read())
  data[len(data) // 2] ^= 0xFF
  with open(feature_file, "wb") as writer:
    writer.write(bytes(data))
  rebuilt = feature_cache.load_or_create_features(**dict(arguments, doc_stride=8))
  assert "corrupt" in capsys.readouterr().err
  assert feature_cache.load_or_create_features(**dict(arguments, doc_stride=8)).features == rebuilt.features
  assert "made with the same settings" in capsys.readouterr().err
  assert not [path for path in tmp_path.iterdir() if ".partial" in path.name]


# Bad input.


def test_answers_not_at_their_offset_are_skipped_for_training(tmp_path, capsys):
  context = EN[0]
  qas = [question("good", context, "political philosophy"),
         question("moved", context, "political", start=3),
         question("case", context, "Political", start=context.index("political")),
         # Whitespace runs compare as one space: this answer is the context's "political philosophy".
         question("spaces", context, "political  philosophy", start=context.index("political"))]
  path = write_squad(tmp_path / "squad.json", [(context, qas)])
  examples, _, skipped = squad_examples.read_squad_examples(path, is_training=True, version_2_with_negative=False)
  assert ([e.qas_id for e in examples], skipped) == (["good", "spaces"], 2)
  assert examples[1].answer_text == "political philosophy"
  assert "2 of 4 training answers do not match the text at their answer_start and were skipped" in (
      capsys.readouterr().err)
  examples, _, skipped = squad_examples.read_squad_examples(path, is_training=False, version_2_with_negative=False)
  assert (len(examples), skipped) == (4, 0)
  assert examples[1].gold_answers == ("political",)

  path = write_squad(tmp_path / "squad.json", [(context, qas[1:3])])
  with pytest.raises(DataError, match="no training answer matches"):
    squad_examples.read_squad_examples(path, True, False)


def document(**paragraph):
  return {"data": [{"title": "t", "paragraphs": [paragraph]}]}


GOOD_QA = {"id": "q1", "question": "What?", "answers": [{"text": "a", "answer_start": 0}]}


@pytest.mark.parametrize("content, error, message", [
    (b"", DataError, r"squad.json is empty"),
    (b" \n\t\n", DataError, r"squad.json is empty"),
    (b'{"data": [\n  {"paragraphs": [}\n]}', DataError,
     r"squad.json: not valid JSON \(Expecting value at line 2, column 19\)"),
    (b'{"data": "caf\xe9"}', DataError, r"squad.json: not UTF-8"),
    (b'{"version": "1.1"}', DataError, r'squad.json: no "data" list'),
    (json.dumps({"data": [{"title": "t"}]}).encode(), DataError, r'data\[0\] has no "paragraphs" list'),
    (json.dumps(document(qas=[GOOD_QA])).encode(), DataError, r'data\[0\].paragraphs\[0\] has no "context"'),
    (json.dumps(document(context="a b")).encode(), DataError, r'data\[0\].paragraphs\[0\] has no "qas" list'),
    (json.dumps(document(context="a b", qas=[{"question": "What?"}])).encode(), DataError,
     r'paragraphs\[0\].qas\[0\] has no "id"'),
    (json.dumps(document(context="a b", qas=[{"id": "q7"}])).encode(), DataError,
     r'question q7 has no "question"'),
    (json.dumps(document(context="a b", qas=[dict(GOOD_QA, answers=GOOD_QA["answers"] * 2)])).encode(),
     DataError, r"question q1 has 2 answers; training needs exactly one"),
    (json.dumps(document(context="a b", qas=[dict(GOOD_QA, answers=[])])).encode(), DataError,
     r"question q1 has 0 answers"),
    (json.dumps(document(context="a b", qas=[dict(GOOD_QA, answers=[{"text": "a"}])])).encode(), DataError,
     r"question q1 needs an \"answers\" list"),
    (json.dumps(document(context="a b", qas=[])).encode(), DataError, r"squad.json holds no questions"),
])
def test_bad_files_are_named_errors(tmp_path, tokenizer, content, error, message):
  path = tmp_path / "squad.json"
  path.write_bytes(content)
  with pytest.raises(error, match=message):
    squad_examples.read_squad_examples(str(path), is_training=True, version_2_with_negative=False)
  feature_file = tmp_path / "features.tfrecord"
  with pytest.raises(error, match=message):
    feature_cache.load_or_create_features(str(path), tokenizer, 64, 16, 8, True, False, str(feature_file))
  assert not feature_file.exists()


def test_missing_file_and_bad_options(tmp_path, tokenizer):
  missing = str(tmp_path / "nowhere.json")
  with pytest.raises(InputFileError, match="nowhere.json"):
    squad_examples.read_squad_examples(missing, True, False)
  with pytest.raises(InputFileError, match=re.escape(f"SQuAD file {tmp_path} is a folder, not a file")):
    squad_examples.read_squad_examples(str(tmp_path), True, False)
  input_file = write_squad(tmp_path / "squad.json", [(EN[0], [question("a", EN[0], "political")])])
  feature_file = tmp_path / "features.tfrecord"
  with pytest.raises(OptionError, match=r"max_seq_length \(67\) must exceed max_query_length \+ 3 \(64 \+ 3 = 67\)"):
    feature_cache.load_or_create_features(input_file, tokenizer, 67, 16, 64, True, False, str(feature_file))
  with pytest.raises(OptionError, match="doc_stride must be at least 1, not 0"):
    squad_features.convert_examples_to_features([], tokenizer, 128, 0, 64, True)
  assert not feature_file.exists()
