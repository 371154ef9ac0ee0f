"""Token classification (KLUE-NER, CoNLL-style NER, a user's tagged words) as an objective of
`finetuning.FineTuning`: one row per window of a sentence's pieces, the tag of each unit (character or word)
on its first piece, cross-entropy over the labelled pieces; entity and character macro F1 as KLUE's baseline
computes them, and the same under the baseline's truncation."""

import dataclasses
import json
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np
import tensorflow as tf

from albert_tf.data.finetuning_dataset import EncodedSplit, packed_ids
from albert_tf.data.task_readers import find_split_file
from albert_tf.errors import TaskError
from albert_tf.modeling.config import AlbertConfig
from albert_tf.tasks.token_classification import data, metrics, serving
from albert_tf.tasks.token_classification.model import AlbertTokenClassifier
from albert_tf.text.tokenizer import SentencePieceTokenizer
from albert_tf.training.finetuning_objectives import FineTuningDefaults, safe_ratio

# Per format, the file names of each split under --data_dir, the first that exists. KLUE's test labels are not
# public: its test split is the dev file, as for the KLUE classification tasks.
SPLIT_FILES = {
    "klue-ner": {"train": ("klue-ner-v1.1_train.tsv",), "dev": ("klue-ner-v1.1_dev.tsv",),
                 "test": ("klue-ner-v1.1_test.tsv", "klue-ner-v1.1_dev.tsv")},
    "conll": {"train": ("train.txt", "eng.train"), "dev": ("dev.txt", "valid.txt", "eng.testa"),
              "test": ("test.txt", "eng.testb")},
    "tsv": {"train": ("train.tsv",), "dev": ("dev.tsv",), "test": ("test.tsv",)},
}
PREDICTION_FILES = {"klue-ner": "predictions.tsv", "conll": "predictions.txt", "tsv": "predictions.tsv"}


@dataclasses.dataclass(frozen=True)
class TaggedSplit:
  """What scoring and prediction files need besides the rows: per example its alignment and windows, and per
  row the example and window it holds."""

  examples: List[data.TokenExample]
  alignments: List[data.PieceAlignment]
  windows: List[List[data.Window]]
  rows: List[Tuple[int, int]]


class TokenClassificationObjective(FineTuningDefaults):
  """A tag per unit (character or word), learned on the first piece of each unit.

  Args:
    file_format: one of `data.FORMATS` (`--task_name`).
    tokenizer: the Python tokenizer of the model.
    doc_stride: pieces between the starts of a long sentence's windows.
    label_list: the tags in id order; default KLUE's for klue-ner, else learned from the train split.
  """

  primary_metric = "entity_f1"
  sum_names = ("loss", "correct", "labelled")
  progress_groups = (("loss", "accuracy"),)

  def __init__(self, file_format: str, tokenizer: SentencePieceTokenizer, doc_stride: int = 64,
               label_list: Optional[Sequence[str]] = None):
    if file_format not in data.FORMATS:
      raise TaskError(f"Unknown token classification task {file_format!r}; known: {', '.join(data.FORMATS)}.")
    self.task_name = file_format
    self.tokenizer = tokenizer
    self.doc_stride = doc_stride
    if label_list is None and file_format == "klue-ner":
      label_list = data.KLUE_NER_LABELS
    self.label_list = tuple(label_list) if label_list is not None else None

  def run_info(self) -> Dict:
    return {"task": self.task_name, "label_list": list(self.label_list), "doc_stride": self.doc_stride}

  def adopt_run_info(self, info: Dict, output_dir: str):
    """Takes the tags of an earlier run of `output_dir` (their order is the head's); refuses other tags."""
    super().adopt_run_info(info, output_dir)
    if self.label_list is None:
      self.label_list = tuple(info["label_list"])
    elif list(self.label_list) != info["label_list"]:
      raise TaskError(f"--output_dir {output_dir} was trained with tags {info['label_list']}; this run's "
                      f"tags are {list(self.label_list)}. Use a new --output_dir.")

  def read_examples(self, data_dir: str, split: str) -> List[data.TokenExample]:
    path = find_split_file(data_dir, split, SPLIT_FILES[self.task_name][split], self.task_name)
    return data.read_examples(path, self.task_name, self.label_list)

  def learn_from_train(self, examples: List[data.TokenExample]):
    """The tags of the train split, for formats without a fixed tag set."""
    if self.label_list is None:
      self.label_list = data.label_list_from_examples(examples)

  def _label_ids(self, example: data.TokenExample, ids: Dict[str, int]) -> List[int]:
    """The tag ids of a sentence (`ids`: tag -> id)."""
    unknown = sorted(set(example.labels) - set(ids))
    if unknown:
      raise TaskError(f"Sentence {example.guid} has tags {unknown} that the model does not know "
                      f"({', '.join(self.label_list)}).")
    return [ids[label] for label in example.labels]

  def encode(self, examples: List[data.TokenExample], tokenizer, max_seq_length: int,
             description: str) -> EncodedSplit:
    """One row per window: `[CLS] pieces [SEP]`, the tag ids on the pieces that start a unit, `IGNORE_LABEL`
    elsewhere (the other pieces, [CLS], [SEP] and padding)."""
    del tokenizer, description
    cls_id, sep_id = self.tokenizer.convert_tokens_to_ids(["[CLS]", "[SEP]"])
    label_ids = {label: index for index, label in enumerate(self.label_list)}
    alignments, all_windows, rows, sequences, labels = [], [], [], [], []
    for example_index, example in enumerate(examples):
      alignment = data.align_example(example, self.tokenizer)
      piece_labels = alignment.piece_label_ids(self._label_ids(example, label_ids))
      sentence_windows = data.windows(len(alignment.pieces), max_seq_length, self.doc_stride)
      alignments.append(alignment)
      all_windows.append(sentence_windows)
      for window_index, window in enumerate(sentence_windows):
        rows.append((example_index, window_index))
        sequences.append([cls_id, *alignment.token_ids[window.start:window.end], sep_id])
        row_labels = [data.IGNORE_LABEL, *piece_labels[window.start:window.end]]
        labels.append(row_labels + [data.IGNORE_LABEL] * (max_seq_length - len(row_labels)))
    packed = packed_ids(sequences, [len(ids) for ids in sequences])
    guids = [f"{examples[example_index].guid}#{window_index}" for example_index, window_index in rows]
    return EncodedSplit({"inputs": packed}, np.array(labels, np.int32).reshape([-1, max_seq_length]), guids,
                        max_seq_length, TaggedSplit(examples, alignments, all_windows, rows))

  def build_model(self, config: AlbertConfig, dropout_prob: float, recompute_grad: bool = False):
    return AlbertTokenClassifier(config, self.label_list, dropout_prob, recompute_grad)

  @staticmethod
  def loss_normalizers(batch):
    """The labelled pieces of a batch, `[1]` float32: the loss is a mean over them."""
    return tf.reshape(tf.reduce_sum(tf.cast(batch["labels"] >= 0, tf.float32)), [1])

  def replica_loss(self, model):
    """(batch, labelled pieces of the global batch) -> (this batch's share of the mean loss, its sums)."""

    def loss_and_sums(batch, normalizers):
      logits = model(batch["inputs"], training=True)["logits"]
      labels = batch["labels"]
      labelled = tf.cast(labels >= 0, tf.float32)
      safe_labels = tf.maximum(labels, 0)
      loss = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=safe_labels, logits=logits) * labelled
      predicted = tf.argmax(logits, -1, output_type=tf.int32)
      correct = tf.cast(tf.equal(predicted, safe_labels), tf.float32) * labelled
      sums = tf.stack([tf.reduce_sum(loss), tf.reduce_sum(correct), tf.reduce_sum(labelled)])
      return sums[0] / tf.maximum(normalizers[0], 1.0), sums

    return loss_and_sums

  def metrics_from_sums(self, sums) -> Dict[str, float]:
    values = dict(zip(self.sum_names, np.asarray(sums, np.float64)))
    return {"loss": safe_ratio(values["loss"], values["labelled"]),
            "accuracy": safe_ratio(values["correct"], values["labelled"])}

  def predict(self, model, batch) -> tf.Tensor:
    """The predicted tag id of every position, int32 `[batch, seq]`."""
    return tf.argmax(model(batch["inputs"], training=False)["logits"], -1, output_type=tf.int32)

  def _piece_tags(self, outputs: np.ndarray, source: TaggedSplit) -> List[List[str]]:
    """Per example, one predicted tag per piece, each from the window that predicts it."""
    window_tags: List[List[List[str]]] = [[] for _ in source.examples]
    for row, (example_index, window_index) in enumerate(source.rows):
      window = source.windows[example_index][window_index]
      ids = outputs[row, 1:1 + window.end - window.start]
      window_tags[example_index].append([self.label_list[index] for index in ids])
    return [data.merge_windows(source.windows[index], tags) for index, tags in enumerate(window_tags)]

  def unit_tags(self, outputs: np.ndarray, split: EncodedSplit) -> List[List[str]]:
    """Per example, the predicted tag of every unit."""
    source: TaggedSplit = split.source
    piece_tags = self._piece_tags(outputs, source)
    return [alignment.unit_tags(tags) for alignment, tags in zip(source.alignments, piece_tags)]

  def evaluation_metrics(self, outputs: np.ndarray, split: EncodedSplit) -> Dict[str, float]:
    """KLUE's entity and character macro F1 over every unit, and under the baseline's truncation (only the
    first window's pieces read; the units of the others counted neither as gold nor as predicted)."""
    source: TaggedSplit = split.source
    ours, truncated = [], []
    first_windows = {}
    for row, (example_index, window_index) in enumerate(source.rows):
      if window_index == 0:
        first_windows[example_index] = row
    for example_index, (example, alignment, tags) in enumerate(zip(source.examples, source.alignments,
                                                                   self.unit_tags(outputs, split))):
      units = data.evaluated_units(alignment)
      ours.append(([example.labels[i] for i in units], [tags[i] for i in units]))
      # The baseline reads the first max_seq_length - 2 pieces: its predictions are the first window's.
      first = source.windows[example_index][0]
      read = [self.label_list[index] for index in outputs[first_windows[example_index], 1:1 + first.end]]
      baseline_tags = alignment.unit_tags(read + [data.OUTSIDE] * (len(alignment.pieces) - first.end))
      kept = data.evaluated_units(alignment, split.max_seq_length)
      truncated.append(([example.labels[i] for i in kept], [baseline_tags[i] for i in kept]))
    scores = metrics.ner_scores(ours, self.label_list)
    baseline = metrics.ner_scores(truncated, self.label_list)
    cut = sum(len(windows) > 1 for windows in source.windows)
    return dict(scores, entity_f1_baseline_truncation=baseline["entity_f1"],
                character_f1_baseline_truncation=baseline["character_f1"],
                sentences=float(len(source.examples)), sentences_longer_than_max_seq_length=float(cut),
                units_beyond_truncation=float(sum(len(o[0]) - len(t[0]) for o, t in zip(ours, truncated))))

  def serving_options(self, output_dir: str) -> serving.TaggingOptions:
    """`tag_text` tags the units this run learned to tag."""
    del output_dir
    return serving.options_for_task(self.task_name)

  def prediction_files(self, outputs: np.ndarray, split: EncodedSplit, output_dir: str) -> Dict[str, str]:
    """The examples in their own format with the predicted tags, and `predictions.json`: per sentence its
    entities, each with its type, unit span `[start, end)`, character span in the sentence's text and text."""
    del output_dir
    source: TaggedSplit = split.source
    tags = self.unit_tags(outputs, split)
    records = []
    for example, example_tags in zip(source.examples, tags):
      offsets, position = [], 0
      for index, unit in enumerate(example.units):
        position += len(example.separator) if index else 0
        offsets.append(position)
        position += len(unit)
      entities = []
      for entity_type, start, end in data.entity_spans(example_tags):
        begin, finish = offsets[start], offsets[end - 1] + len(example.units[end - 1])
        entities.append({"type": entity_type, "start": start, "end": end, "char_start": begin,
                         "char_end": finish, "text": example.text[begin:finish]})
      records.append({"guid": example.guid, "text": example.text, "entities": entities})
    return {PREDICTION_FILES[self.task_name]: data.format_examples(source.examples, tags),
            "predictions.json": json.dumps(records, ensure_ascii=False, indent=1) + "\n"}
