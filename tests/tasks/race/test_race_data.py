"""RACE: both file layouts, Google's qa texts and truncation, and every bad input before anything is written."""

import json
import pathlib
import re

import pytest

from albert_tf import files
from albert_tf.errors import DataError, InputFileError, OptionError
from albert_tf.tasks.race.data import RaceExample, race_features, read_race_examples
from albert_tf.tasks.race.metrics import race_accuracy
from albert_tf.text.tokenizer import preprocess_text
from tests.conftest import SP8K_MODEL, corpus_lines, requires_shared

pytestmark = requires_shared(SP8K_MODEL)

ENGLISH = corpus_lines("en_wiki.txt", 400)
KOREAN = corpus_lines("ko_libreoffice_help.txt", 200)


def article_record(article_id, lines, start, num_questions=3, answers=True):
  """A RACE article of real sentences from `lines[start:]`: 6 sentences, then its questions and options."""
  sentences = iter(lines[start:])
  record = {"id": article_id, "article": " ".join(next(sentences) for _ in range(6)), "questions": [],
            "options": []}
  for _ in range(num_questions):
    record["questions"].append(next(sentences))
    record["options"].append([" ".join(next(sentences).split()[:6]) for _ in range(4)])
  if answers:
    record["answers"] = ["ABCD"[(start + index) % 4] for index in range(num_questions)]
  return record


def write_json_lines(race_dir, split, level, records):
  """Google's layout: RACE/<split>/<level>/all.txt, one article a line."""
  folder = race_dir / split / level
  folder.mkdir(parents=True, exist_ok=True)
  (folder / "all.txt").write_text("".join(json.dumps(record, ensure_ascii=False) + "\n" for record in records),
                                  encoding="utf-8")
  return folder / "all.txt"


def write_files(race_dir, split, level, records):
  """RACE's download: RACE/<split>/<level>/<n>.txt, one article a file (numbered from 1)."""
  folder = race_dir / split / level
  folder.mkdir(parents=True, exist_ok=True)
  for number, record in enumerate(records, 1):
    (folder / f"{number}.txt").write_text(json.dumps(record), encoding="utf-8")
  return folder


def split_records(language_lines=ENGLISH, answers=True):
  # 12 middle articles, so that "10.txt" sorts after "9.txt" only numerically.
  return {"middle": [article_record(f"middle{n}.txt", language_lines, 20 * n, answers=answers) for n in range(12)],
          "high": [article_record(f"high{n}.txt", language_lines, 20 * n + 7, 2, answers) for n in range(3)]}


def at(path, line=None):
  """A `match` pattern for an error naming `path` (and the 1-based `line`)."""
  return re.escape(f"{path}, line {line}:" if line else f"{path}:")


@pytest.mark.parametrize("where", ["local", "bucket"])
def test_both_layouts_read_the_same_examples(tmp_path, where, bucket):
  root = f"{bucket if where == 'bucket' else tmp_path}/data"  # --data_dir=gs://... too
  records = split_records()
  with files.staged_folder(root) as staging:
    for level, level_records in records.items():
      write_json_lines(pathlib.Path(staging, "lines", "RACE"), "train", level, level_records)
      write_files(pathlib.Path(staging, "files", "RACE"), "train", level, level_records)
    # A macOS archive's companion of 1.txt, not text, is no article.
    pathlib.Path(staging, "files", "RACE", "train", "middle", "._1.txt").write_bytes(b"\x00\x05\x16\x07")
  from_lines = read_race_examples(f"{root}/lines", "train")
  assert from_lines == read_race_examples(f"{root}/files", "train")
  assert from_lines == read_race_examples(f"{root}/files/RACE", "train")

  assert len(from_lines) == 12 * 3 + 3 * 2
  assert [example.level for example in from_lines] == ["middle"] * 36 + ["high"] * 6
  first = records["middle"][0]
  assert from_lines[0] == RaceExample("middle0.txt-0", "middle", first["article"], first["questions"][0],
                                      tuple(first["options"][0]), "ABCD".index(first["answers"][0]))
  # Article order is the files' numeric order, and every question has its own id.
  assert [example.example_id for example in from_lines[27:33]] == [
      f"middle{n}.txt-{index}" for n in (9, 10) for index in range(3)]
  assert len({example.example_id for example in from_lines}) == len(from_lines)


def test_high_only_and_middle_only(tmp_path):
  records = split_records()
  write_json_lines(tmp_path / "RACE", "dev", "high", records["high"])
  high = read_race_examples(str(tmp_path), "dev", high_only=True)
  assert [example.level for example in high] == ["high"] * 6
  write_files(tmp_path / "RACE", "dev", "middle", records["middle"])
  middle = read_race_examples(str(tmp_path), "dev", middle_only=True)
  assert [example.level for example in middle] == ["middle"] * 36
  assert read_race_examples(str(tmp_path), "dev") == middle + high
  with pytest.raises(OptionError, match="high_only and middle_only"):
    read_race_examples(str(tmp_path), "dev", high_only=True, middle_only=True)


def test_a_test_split_without_answers_has_no_labels(tmp_path):
  records = split_records(answers=False)
  for level, level_records in records.items():
    write_files(tmp_path / "RACE", "test", level, level_records)
  assert {example.label for example in read_race_examples(str(tmp_path), "test")} == {-1}

  answered = article_record("high9.txt", ENGLISH, 300)
  (tmp_path / "RACE" / "test" / "high" / "4.txt").write_text(json.dumps(answered), encoding="utf-8")
  with pytest.raises(DataError, match=re.escape(f'{tmp_path / "RACE/test/high/4.txt"} has "answers" and '
                                                f'{tmp_path / "RACE/test/middle/1.txt"} has none')):
    read_race_examples(str(tmp_path), "test")


def qa_part(feature, choice):
  """The ids of the qa text of one option (between the article's [SEP] and the last [SEP])."""
  return list(feature.choice_ids[choice][feature.first_segment_lengths[choice]:-1])


def test_the_option_fills_each_blank_or_follows_the_question(tokenizer):
  article = " ".join(ENGLISH[:3])
  options = tuple(" ".join(line.split()[:3]) for line in ENGLISH[3:7])
  blanks = "The _ of anarchism and the _ of the state."
  # A full-width "＿" is a blank too: preprocessing (NFKD) makes it "_" before Google looks for one.
  full_width = "The ＿ of anarchism."
  plain = ENGLISH[8]
  features = race_features([RaceExample(f"q-{index}", "high", article, question, options, 0)
                            for index, question in enumerate((blanks, full_width, plain))],
                           tokenizer, max_seq_length=512, max_qa_length=128)
  for choice, option in enumerate(options):
    assert qa_part(features[0], choice) == tokenizer.encode(blanks.replace("_", option))
    assert qa_part(features[1], choice) == tokenizer.encode(f"The {option} of anarchism.")
    assert qa_part(features[2], choice) == tokenizer.encode(f"{plain} {option}")
    for feature in features:
      ids = feature.choice_ids[choice]
      assert ids[:feature.first_segment_lengths[choice]] == (tokenizer.cls_id, *tokenizer.encode(article),
                                                              tokenizer.sep_id)
      assert ids[-1] == tokenizer.sep_id


def test_raw_texts_give_what_googles_preprocessed_ones_give(tokenizer):
  """Google preprocesses question and option before joining them; joining the raw texts comes out the same."""
  article = "  Café   society\t" + ENGLISH[10].upper() + "\n"
  raw = RaceExample("raw-0", "middle", article, "  WHICH  Résumé is  _ ?\t",
                    (" Naïve  FAÇADE ", ENGLISH[11].upper(), "x", "  "), 1)
  google_texts = RaceExample("google-0", "middle", preprocess_text(article), preprocess_text(raw.question),
                             tuple(preprocess_text(option) for option in raw.options), 1)
  assert google_texts.options[0] == "naive facade"
  raw_feature, google_feature = race_features([raw, google_texts], tokenizer, 128, 64)
  assert raw_feature == google_feature
  assert qa_part(raw_feature, 0) == tokenizer.encode("which resume is naive facade ?")
  # Whitespace collapse, accent stripping and lower-casing commute with filling the blank.
  for choice, option in enumerate(raw.options):
    assert qa_part(raw_feature, choice) == tokenizer.encode(raw.question.replace("_", option))


def test_special_tokens_written_in_texts_stay_text(tokenizer):
  """As in Google's features: an article quoting "[SEP]" must not end its segment."""
  feature, = race_features([RaceExample("t-0", "high", "Write [SEP] between texts.", "Where is [CLS] _?",
                                        ("first", "last", "[MASK]", "x"), 0)], tokenizer, 64, 16)
  for ids in feature.choice_ids:
    assert ids.count(tokenizer.sep_id) == 2 and ids.count(tokenizer.cls_id) == 1
    assert tokenizer.mask_id not in ids


def test_long_articles_lose_their_end_and_long_qa_texts_their_beginning(tokenizer):
  long_article = " ".join(ENGLISH[:40])
  long_question = " ".join(ENGLISH[40:43])
  options = ("yes", "no", " ".join(ENGLISH[43:45]), "maybe")
  article_ids = tokenizer.encode(long_article)
  max_seq_length, max_qa_length = 64, 16
  assert len(article_ids) > 4 * max_seq_length
  long_qa, short_qa = race_features([RaceExample("long-0", "high", long_article, long_question, options, 2),
                                     RaceExample("short-0", "high", long_article, "why?", options, 2)],
                                    tokenizer, max_seq_length, max_qa_length)
  for choice, option in enumerate(options):
    qa_ids = tokenizer.encode(f"{long_question} {option}")
    assert len(qa_ids) > max_qa_length
    assert qa_part(long_qa, choice) == qa_ids[-max_qa_length:]
    assert len(long_qa.choice_ids[choice]) == max_seq_length
    kept = max_seq_length - 3 - max_qa_length
    assert long_qa.first_segment_lengths[choice] == kept + 2
    assert list(long_qa.choice_ids[choice][1:kept + 1]) == article_ids[:kept]
  # A short qa text leaves the article the rest of the sequence.
  assert [len(ids) for ids in short_qa.choice_ids] == [max_seq_length] * 4
  assert qa_part(short_qa, 0) == tokenizer.encode("why? yes")
  assert short_qa.first_segment_lengths[0] == max_seq_length - 1 - len(tokenizer.encode("why? yes"))
  # A short article is not padded: features are unpadded sequences.
  short = race_features([RaceExample("a-0", "high", "Anarchism.", "why?", options[:2] * 2, 0)], tokenizer, 64, 16)
  assert short[0].choice_ids[0] == (tokenizer.cls_id, *tokenizer.encode("Anarchism."), tokenizer.sep_id,
                                    *tokenizer.encode("why? yes"), tokenizer.sep_id)


def test_korean_articles_and_questions(tmp_path, tokenizer):
  question = KOREAN[50].split()
  blank_question = " ".join(question[:2] + ["_"] + question[2:])
  record = {"id": "한국어1", "article": " ".join(KOREAN[:40]), "questions": [blank_question, KOREAN[51]],
            "options": [KOREAN[52:56], [" ".join(line.split()[:2]) for line in KOREAN[56:60]]], "answers": ["D", "A"]}
  write_files(tmp_path / "RACE", "dev", "middle", [record])
  write_json_lines(tmp_path / "RACE", "dev", "high", [dict(record, id="한국어2")])
  examples = read_race_examples(str(tmp_path), "dev")
  assert [(example.example_id, example.label) for example in examples] == [
      ("한국어1-0", 3), ("한국어1-1", 0), ("한국어2-0", 3), ("한국어2-1", 0)]
  assert examples[0].article == record["article"]
  features = race_features(examples, tokenizer, 256, 64)
  for choice, option in enumerate(record["options"][0]):
    qa_ids = tokenizer.encode(blank_question.replace("_", option))[-64:]
    assert qa_part(features[0], choice) == qa_ids
    assert tokenizer.unk_id not in qa_ids
    assert len(features[0].choice_ids[choice]) == 256
  assert features[0] == features[2]


@pytest.mark.parametrize("max_seq_length,max_qa_length", [(64, 62), (64, 100), (64, 0)])
def test_max_qa_length_must_leave_room_for_the_special_tokens(tokenizer, max_seq_length, max_qa_length):
  with pytest.raises(OptionError, match=f"max_qa_length must be from 1 to max_seq_length - 3 \\(61\\), not "
                                        f"{max_qa_length} \\(max_seq_length 64\\)"):
    race_features([], tokenizer, max_seq_length, max_qa_length)


def test_missing_folders_are_named(tmp_path):
  with pytest.raises(InputFileError, match=re.escape(f"RACE data folder not found: {tmp_path / 'nowhere'}")):
    read_race_examples(str(tmp_path / "nowhere"), "dev")
  (tmp_path / "all.txt").write_text("")
  with pytest.raises(InputFileError, match=re.escape(f"RACE data folder {tmp_path / 'all.txt'} is a file")):
    read_race_examples(str(tmp_path / "all.txt"), "dev")
  with pytest.raises(InputFileError, match=re.escape(f"no RACE/dev in {tmp_path} (looked for {tmp_path / 'dev'})")):
    read_race_examples(str(tmp_path), "dev")
  write_json_lines(tmp_path / "RACE", "dev", "high", split_records()["high"])
  with pytest.raises(InputFileError, match=re.escape(f"no RACE/dev/middle in {tmp_path} (looked for "
                                                     f"{tmp_path / 'RACE/dev/middle'})")):
    read_race_examples(str(tmp_path), "dev")
  with pytest.raises(OptionError, match="Unknown RACE split 'validation'"):
    read_race_examples(str(tmp_path), "validation")


def test_empty_levels_and_files(tmp_path):
  (tmp_path / "RACE" / "dev" / "middle").mkdir(parents=True)
  (tmp_path / "RACE" / "dev" / "middle" / "README.md").write_text("not an article")
  with pytest.raises(DataError, match=re.escape(f"{tmp_path / 'RACE/dev/middle'} holds no all.txt and no other "
                                                "*.txt file")):
    read_race_examples(str(tmp_path), "dev", middle_only=True)
  all_txt = write_json_lines(tmp_path / "RACE", "dev", "middle", [])
  all_txt.write_text("\n  \n")
  with pytest.raises(DataError, match=re.escape(f"{all_txt} is empty")):
    read_race_examples(str(tmp_path), "dev", middle_only=True)


GOOD = article_record("high1.txt", ENGLISH, 100, num_questions=3)


@pytest.mark.parametrize("record,message", [
    ('{"id": "high1.txt", "article": "x",', "not JSON (Expecting property name enclosed in double quotes at "),
    ('["high1.txt"]', "a RACE article must be a JSON object, not list."),
    (dict(GOOD, options=GOOD["options"][:2] + [GOOD["options"][2][:3]]),
     "question 2 has 3 options; RACE questions have 4."),
    (dict(GOOD, answers=["A", "E", "B"]), "question 1: answer 'E' is not one of A, B, C, D."),
    (dict(GOOD, answers=["A", "B"]),
     "3 questions, 3 option lists and 2 answers: the lists must be equally long (question 2 is the first"),
    (dict(GOOD, options=GOOD["options"][:1]), "3 questions, 1 option lists and 3 answers"),
    ({key: value for key, value in GOOD.items() if key != "article"}, 'no "article" field'),
    (dict(GOOD, questions="Why?"), '"questions" must be a list, not str.'),
    (dict(GOOD, options=[GOOD["options"][0], GOOD["options"][1], ["a", "b", 3, "d"]]),
     "question 2: option 2 must be a string, not int."),
])
@pytest.mark.parametrize("layout", ["all.txt", "files"])
def test_bad_articles_are_named_by_file_line_and_question(tmp_path, record, message, layout):
  good_line = json.dumps(article_record("high0.txt", ENGLISH, 50))
  bad_line = record if isinstance(record, str) else json.dumps(record)
  folder = tmp_path / "RACE" / "train" / "high"
  folder.mkdir(parents=True)
  if layout == "all.txt":
    (folder / "all.txt").write_text(f"{good_line}\n\n{bad_line}\n", encoding="utf-8")
    where = at(folder / "all.txt", line=3)
  else:
    (folder / "1.txt").write_text(good_line, encoding="utf-8")
    (folder / "2.txt").write_text(bad_line, encoding="utf-8")
    where = at(folder / "2.txt")
  with pytest.raises(DataError, match=where + ".*" + re.escape(message)):
    read_race_examples(str(tmp_path), "train", high_only=True)


def test_json_errors_give_their_position(tmp_path):
  all_txt = write_json_lines(tmp_path / "RACE", "dev", "high", [GOOD])
  all_txt.write_text(all_txt.read_text() + '{"id": "high2.txt" "article": ""}\n')
  with pytest.raises(DataError, match=at(all_txt, 2) + re.escape(" not JSON (Expecting ',' delimiter at column 20)")):
    read_race_examples(str(tmp_path), "dev", high_only=True)
  folder = write_files(tmp_path / "RACE", "dev", "middle", [GOOD])
  (folder / "1.txt").write_text(json.dumps(GOOD, indent=1).replace('"article"', "article"))
  with pytest.raises(DataError, match=at(folder / "1.txt") + r" not JSON \(Expecting property name enclosed in "
                                      r"double quotes at line 3, column 2\)"):
    read_race_examples(str(tmp_path), "dev", middle_only=True)
  # An article cut off inside its text: json's reason ends with "at", which the message says once.
  all_txt.write_text('{"id": "high2.txt", "article": "Tom went\n')
  with pytest.raises(DataError, match=at(all_txt, 1) + re.escape(" not JSON (Invalid control character at column "
                                                                 "41).")):
    read_race_examples(str(tmp_path), "dev", high_only=True)
  (folder / "1.txt").write_text('{\n "id": "middle1.txt",\n "article": "Tom went')
  with pytest.raises(DataError, match=at(folder / "1.txt") + re.escape(" not JSON (Unterminated string starting at "
                                                                       "line 3, column 13).")):
    read_race_examples(str(tmp_path), "dev", middle_only=True)


def test_text_that_is_not_utf8_is_named(tmp_path):
  latin1 = json.dumps(dict(GOOD, id="high2.txt", article="Caf\xe9"), ensure_ascii=False).encode("latin-1")
  folder = write_files(tmp_path / "RACE", "dev", "middle", [GOOD])
  (folder / "2.txt").write_bytes(latin1)
  with pytest.raises(DataError, match=at(folder / "2.txt") + " not UTF-8"):
    read_race_examples(str(tmp_path), "dev", middle_only=True)
  all_txt = write_json_lines(tmp_path / "RACE", "dev", "high", [GOOD])
  all_txt.write_bytes(all_txt.read_bytes() + latin1 + b"\n")
  with pytest.raises(DataError, match=at(all_txt, 2) + " not UTF-8"):
    read_race_examples(str(tmp_path), "dev", high_only=True)


def test_an_article_id_seen_twice_is_an_error(tmp_path):
  write_files(tmp_path / "RACE", "dev", "middle", [GOOD])
  all_txt = write_json_lines(tmp_path / "RACE", "dev", "high", [article_record("high0.txt", ENGLISH, 50), GOOD])
  with pytest.raises(DataError, match=at(all_txt, 2) + re.escape(" article id 'high1.txt' is also the id of "
                                                                 f"{tmp_path / 'RACE/dev/middle/1.txt'}")):
    read_race_examples(str(tmp_path), "dev")


def test_race_accuracy():
  scores = race_accuracy([0, 1, 2, 3, 0], [0, 1, 0, 3, 1], ["middle", "high", "high", "middle", "high"])
  assert scores == {"accuracy": 0.6, "examples": 5, "accuracy_high": pytest.approx(1 / 3), "examples_high": 3,
                    "accuracy_middle": 1.0, "examples_middle": 2}
  assert race_accuracy([1], [1], ["high"]) == {"accuracy": 1.0, "examples": 1, "accuracy_high": 1.0,
                                                       "examples_high": 1}
  with pytest.raises(ValueError):
    race_accuracy([1, 2], [1], ["high"])
