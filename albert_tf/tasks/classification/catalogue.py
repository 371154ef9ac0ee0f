"""The tasks `run_classifier` knows by name: Google's GLUE processors and the Korean benchmarks, and `get_task`.

Each task knows where its examples lie in its files, its labels, and how it is scored. The GLUE tasks read
GLUE's own TSV files with Google's `classifier_utils.py` column layouts (`train.tsv`, `dev.tsv`, `test.tsv`;
MNLI's `dev_matched.tsv` / `dev_mismatched.tsv`); the `tsv` task reads a user's file with a `TsvFormat`
(`user_tsv`).

The Korean tasks read their benchmarks' official files, each under its official name, in the data folder or
in the task's folder of the download (as GLUE's): `klue-ynat`, `klue-nli`, `klue-sts` (KLUE v1.1's JSON
arrays of records; the folders `ynat-v1.1`, `klue-nli-v1.1`, `klue-sts-v1.1`), `korsts` and `kornli` (Kakao
Brain's KorNLUDatasets TSV files; `KorSTS`, `KorNLI`) and `nsmc` (the Naver sentiment movie corpus'
`ratings_*.txt`); and `klue-re` (KLUE v1.1's relation extraction, `relation_extraction`: the entities marked
in the sentence, the labels of its `relation_list.json`). Their test splits are labeled; KLUE's test labels are
not public, so a KLUE task's test split is its dev file, and NSMC has no dev file, so its dev split is its test
file.
"""

from typing import Dict, Optional, Sequence, Tuple, Union

from albert_tf.data.task_readers import SPLITS, Columns, JsonFields, SplitFiles
from albert_tf.errors import TaskError
from albert_tf.tasks.classification.relation_extraction import DEFAULT_MARKERS, RelationTask
from albert_tf.tasks.classification.task_types import BINARY, REGRESSION_METRICS, FileTask, Task
from albert_tf.tasks.classification.user_tsv import TsvFormat, TsvTask


def _classification(name: str, glue_dir: str, train_and_dev: Columns, test: Columns,
                    label_list: Sequence[str], extra_metric: Optional[str] = None) -> FileTask:
  # The extra metric, where a task has one, is GLUE's headline score for it and picks the best checkpoint
  # (Google's run_classifier.py picks MRPC's and QQP's by accuracy).
  metric_names = ("accuracy", extra_metric) if extra_metric else ("accuracy",)
  return FileTask(name, glue_dir, {"train": train_and_dev, "dev": train_and_dev, "test": test},
                  tuple(label_list), metric_names, primary_metric=metric_names[-1])


NLI = ("contradiction", "entailment", "neutral")
ENTAILMENT = ("entailment", "not_entailment")

# Column layouts of GLUE's files. Each file's first row is a header, except in CoLA's train and dev.
# QNLI, RTE, WNLI: index, text a, text b, label; QQP: id, qid1, qid2, question1, question2, is_duplicate.
# Test files of all three and QQP's: index (or id), text a, text b.
_INDEXED_PAIR = Columns(text_a=1, text_b=2, label=3, guid=0)
_INDEXED_PAIR_TEST = Columns(text_a=1, text_b=2, guid=0)
# index, genre, filename, year, old_index, source1, source2, sentence1, sentence2, score (not in test).
_STSB_LAYOUTS = {"train": Columns(text_a=7, text_b=8, label=9, guid=0),
                 "dev": Columns(text_a=7, text_b=8, label=9, guid=0),
                 "test": Columns(text_a=7, text_b=8, guid=0)}
# index, promptID, pairID, genre, 4 parse columns, sentence1, sentence2, then the annotators' labels and
# gold_label last: 12 columns in train, 16 in dev, 10 (no labels) in test.
_MNLI_LAYOUTS = {"train": Columns(text_a=8, text_b=9, label=11, guid=0),
                 "dev": Columns(text_a=8, text_b=9, label=15, guid=0),
                 "test": Columns(text_a=8, text_b=9, guid=0)}
_GLUE_TASKS = (
    # source, label, original judgement, sentence; test: index, sentence.
    _classification("cola", "CoLA", Columns(text_a=3, label=1, has_header=False), Columns(text_a=1, guid=0),
                    BINARY, extra_metric="mcc"),
    # sentence, label; test: index, sentence.
    _classification("sst-2", "SST-2", Columns(text_a=0, label=1), Columns(text_a=1, guid=0), BINARY),
    # Quality, #1 ID, #2 ID, #1 String, #2 String; test: index, #1 ID, #2 ID, #1 String, #2 String.
    _classification("mrpc", "MRPC", Columns(text_a=3, text_b=4, label=0), Columns(text_a=3, text_b=4, guid=0),
                    BINARY, extra_metric="f1"),
    FileTask("sts-b", "STS-B", _STSB_LAYOUTS, None, REGRESSION_METRICS, primary_metric="pearson"),
    _classification("qqp", "QQP", Columns(text_a=3, text_b=4, label=5, guid=0), _INDEXED_PAIR_TEST, BINARY,
                    extra_metric="f1"),
    FileTask("mnli", "MNLI", _MNLI_LAYOUTS, NLI, ("accuracy",), "accuracy",
             {"train": "train.tsv", "dev": "dev_matched.tsv", "test": "test_matched.tsv"}),
    FileTask("mnli-mm", "MNLI", _MNLI_LAYOUTS, NLI, ("accuracy",), "accuracy",
             {"train": "train.tsv", "dev": "dev_mismatched.tsv", "test": "test_mismatched.tsv"}),
    _classification("qnli", "QNLI", _INDEXED_PAIR, _INDEXED_PAIR_TEST, ENTAILMENT),
    _classification("rte", "RTE", _INDEXED_PAIR, _INDEXED_PAIR_TEST, ENTAILMENT),
    _classification("wnli", "WNLI", _INDEXED_PAIR, _INDEXED_PAIR_TEST, BINARY),
)

# KLUE-YNAT's 7 news topics, in KLUE's id order; KLUE's and KorNLI's NLI labels, in theirs.
YNAT_TOPICS = ("IT과학", "경제", "사회", "생활문화", "세계", "스포츠", "정치")
KOREAN_NLI = ("entailment", "neutral", "contradiction")


def _korean(name: str, folder: Optional[str], layout: Union[Columns, JsonFields], file_names: Dict[str, SplitFiles],
            label_list: Optional[Sequence[str]], metric_names: Tuple[str, ...],
            primary_metric: Optional[str] = None) -> FileTask:
  """A Korean benchmark: one layout for its three splits, all labeled; by default the first metric is primary."""
  return FileTask(name, folder, {split: layout for split in SPLITS}, tuple(label_list) if label_list else None,
                  metric_names, primary_metric or metric_names[0], file_names)


def _klue_files(prefix: str) -> Dict[str, str]:
  # KLUE's test labels are not public: the test split reads the dev file (--do_predict writes dev's predictions).
  return {"train": f"{prefix}_train.json", "dev": f"{prefix}_dev.json", "test": f"{prefix}_dev.json"}


_KOREAN_TASKS = (
    # Records: guid, title, label, url, date (and KLUE's annotations, not read).
    _korean("klue-ynat", "ynat-v1.1", JsonFields(text_a="title", label="label", guid="guid"),
            _klue_files("ynat-v1.1"), YNAT_TOPICS, ("macro_f1", "accuracy")),
    # Records: guid, source, premise, hypothesis, gold_label, and the annotators' labels.
    _korean("klue-nli", "klue-nli-v1.1",
            JsonFields(text_a="premise", text_b="hypothesis", label="gold_label", guid="guid"),
            _klue_files("klue-nli-v1.1"), KOREAN_NLI, ("accuracy",)),
    # Records: guid, source, sentence1, sentence2, labels {label (0-5, one decimal), real-label, binary-label}.
    # binary-label is label >= 3.0; KLUE's F1 ("binary_f1") thresholds the predicted score the same way.
    _korean("klue-sts", "klue-sts-v1.1",
            JsonFields(text_a="sentence1", text_b="sentence2", label="labels.label", guid="guid",
                       checked={"labels.binary-label": (0, 1)}),
            _klue_files("klue-sts-v1.1"), None, ("pearson", "spearman", "binary_f1")),
    # genre, filename, year, id, score, sentence1, sentence2 (sts-test.tsv has scores too). The KorSTS paper
    # reports Spearman.
    _korean("korsts", "KorSTS", Columns(text_a=5, text_b=6, label=4),
            {"train": "sts-train.tsv", "dev": "sts-dev.tsv", "test": "sts-test.tsv"}, None,
            ("pearson", "spearman"), primary_metric="spearman"),
    # sentence1, sentence2, gold_label; KorNLI's train split is both translated train sets, MultiNLI's first.
    _korean("kornli", "KorNLI", Columns(text_a=0, text_b=1, label=2),
            {"train": ("multinli.train.ko.tsv", "snli_1.0_train.ko.tsv"), "dev": "xnli.dev.ko.tsv",
             "test": "xnli.test.ko.tsv"}, KOREAN_NLI, ("accuracy",)),
    # id, document, label (0 negative, 1 positive). NSMC has a train and a test file: the test file is the dev
    # split too. A handful of its documents are empty: they are kept, as empty texts.
    _korean("nsmc", None, Columns(text_a=1, label=2, guid=0),
            {"train": "ratings_train.txt", "dev": "ratings_test.txt", "test": "ratings_test.txt"}, BINARY,
            ("accuracy",)),
)


_TASKS_BY_NAME = {task.name: task for task in _GLUE_TASKS + _KOREAN_TASKS}
# Tasks whose labels come with their data (KLUE-RE's relation_list.json, read with the first split): a new
# instance for each run.
_TASKS_READING_LABELS = {"klue-re": RelationTask}
# Google's spellings are "sst-2", "sts-b" and "mismnli"; the GLUE benchmark's own are without hyphens.
_ALIASES = {"sst2": "sst-2", "stsb": "sts-b", "mismnli": "mnli-mm"}
KNOWN_TASKS = tuple(_TASKS_BY_NAME) + tuple(_TASKS_READING_LABELS) + ("tsv",)


def get_task(name: str, tsv_format: Optional[TsvFormat] = None, entity_markers: Optional[str] = None) -> Task:
  """The task called `name` (case-insensitive; see `KNOWN_TASKS`).

  Args:
    name: a GLUE task name as Google's `run_classifier.py` spells it (or its alias), a Korean benchmark's
      (klue-ynat, klue-nli, klue-sts, klue-re, korsts, kornli, nsmc), or "tsv".
    tsv_format: the file layout of the "tsv" task; only for it.
    entity_markers: how klue-re marks its entities (`relation_extraction.ENTITY_MARKERS`); only for it.

  Raises:
    TaskError: an unknown name, `tsv_format` missing for "tsv" or given for another task, or `entity_markers`
      given for a task other than klue-re.
  """
  key = _ALIASES.get(name.lower(), name.lower())
  if key in _TASKS_READING_LABELS:
    return _TASKS_READING_LABELS[key](entity_markers or DEFAULT_MARKERS)
  if entity_markers is not None:
    raise TaskError(f"entity_markers (--entity_markers) is for klue-re, not {key!r}.")
  if key == "tsv":
    if tsv_format is None:
      raise TaskError("The tsv task needs a TsvFormat (which columns hold the texts and the label).")
    return TsvTask(tsv_format)
  if key not in _TASKS_BY_NAME:
    raise TaskError(f"Unknown task {name!r}; the known tasks are {', '.join(KNOWN_TASKS)} "
                    f"(aliases: {', '.join(_ALIASES)}).")
  if tsv_format is not None:
    raise TaskError(f"tsv_format is only for the tsv task, not {key!r}.")
  return _TASKS_BY_NAME[key]
