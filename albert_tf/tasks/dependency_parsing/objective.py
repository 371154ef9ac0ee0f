"""Dependency parsing fine-tuning as an objective of `finetuning.FineTuning`: KLUE-DP's or a CoNLL-U
treebank's sentences, Dozat and Manning's loss, KLUE's scores of the best single-root trees, predictions in
the input's format.

The loss (Dozat and Manning 2017) is, per word of the input with its gold head there, the cross-entropy of its
arc scores over the heads plus the cross-entropy of its relation scores at its GOLD head, divided by the
number of such words in the global batch.

Evaluation decodes each sentence's highest-scoring tree with exactly one word under the root (`decoding`):
the best projective tree for KLUE-DP (Eisner's algorithm, the decoder a SavedModel runs: KLUE's trees are all
projective), the best of any tree for a CoNLL-U treebank (Chu-Liu/Edmonds: Universal Dependencies has
non-projective trees); then it takes each word's best relation at its decoded head, and scores KLUE's UAS
and LAS macro F1 and the plain attachment scores (`metrics`). The best checkpoint is the one of the highest
LAS macro F1, the KLUE headline figure that needs both the heads and the relations right. Words cut from a
sentence's input (`features`) have no prediction: the scores leave them out, and `truncated_sentences` and
`truncated_words_excluded` in eval_results.txt say how many there were.
"""

import dataclasses
import json
import os
import sys
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np
import tensorflow as tf

from albert_tf.data.finetuning_dataset import EncodedSplit, packed_ids
from albert_tf.data.task_readers import find_split_file
from albert_tf.errors import OptionError, TaskError
from albert_tf.modeling.config import AlbertConfig
from albert_tf.tasks.dependency_parsing import data, serving
from albert_tf.tasks.dependency_parsing.decoding import decode_batch, projective_trees
from albert_tf.tasks.dependency_parsing.features import ParseFeatures, parse_features, tag_vocabulary
from albert_tf.tasks.dependency_parsing.metrics import KLUE_OTHERS_FROM, dependency_metrics
from albert_tf.tasks.dependency_parsing.model import AlbertDependencyParser
from albert_tf.text.tokenizer import SentencePieceTokenizer
from albert_tf.training.finetuning_objectives import FineTuningDefaults, safe_ratio

KLUE_DP_FOLDER = "klue-dp-v1.1"
PREDICTIONS = {data.KLUE_DP: "dependency_predictions.tsv", data.CONLLU: "dependency_predictions.conllu"}
PREDICTIONS_JSON = "dependency_predictions.json"


def split_patterns(file_format: str, split: str) -> List[str]:
  """The files that hold `split` in a --data_dir, in order of preference.

  KLUE-DP: `klue-dp-v1.1_<split>.tsv` in `data_dir` or in its `klue-dp-v1.1/` folder (the download's); KLUE's
  test labels are not public, so the test split reads the dev file. CoNLL-U: Universal Dependencies'
  `<treebank>-ud-<split>.conllu`, else `<split>.conllu`.
  """
  if file_format == data.KLUE_DP:
    name = f"{KLUE_DP_FOLDER}_{'dev' if split == 'test' else split}.tsv"
    return [name, os.path.join(KLUE_DP_FOLDER, name)]
  return [f"*-ud-{split}.conllu", f"{split}.conllu"]


@dataclasses.dataclass
class ParseSplit(EncodedSplit):
  """An `EncodedSplit` whose batches also hold the word inputs, under `batch["words"]`.

  `labels` is int32 `[sentences, 2, max_words]`: the gold heads, then the gold relation ids
  (`features.NOT_SCORED` where the loss skips them); `source` is (the examples, their `ParseFeatures`).
  """

  words: Dict[str, np.ndarray] = dataclasses.field(default_factory=dict)

  def batch(self, indices: tf.Tensor, weights: tf.Tensor) -> Dict[str, tf.Tensor]:
    batch = super().batch(indices, weights)
    batch["words"] = {name: tf.gather(tf.constant(values), indices) for name, values in self.words.items()}
    return batch


def _klue_dp_lines(example: data.ParseExample, heads: Sequence[int], relations: Sequence[str]) -> List[str]:
  rows = zip(example.words, example.lemmas, example.pos_tags, heads, relations)
  return [f"## {example.guid}\t{example.sentence_text}"] + [
      f"{index}\t{word}\t{lemma}\t{pos}\t{head}\t{relation}"
      for index, (word, lemma, pos, head, relation) in enumerate(rows, 1)]


def _conllu_lines(example: data.ParseExample, heads: Sequence[int], relations: Sequence[str]) -> List[str]:
  # The reader kept one tag per word, written back as XPOS; the columns it did not keep are "_".
  rows = zip(example.words, example.lemmas, example.pos_tags, heads, relations)
  return [f"# sent_id = {example.guid}", f"# text = {example.sentence_text}"] + [
      f"{index}\t{word}\t{lemma}\t_\t{pos}\t_\t{head}\t{relation}\t_\t_"
      for index, (word, lemma, pos, head, relation) in enumerate(rows, 1)]


class DependencyParsingObjective(FineTuningDefaults):
  """Fine-tuning a biaffine dependency parser on KLUE-DP or a CoNLL-U treebank.

  Args:
    tokenizer: the Python tokenizer of the model (words are tokenized one by one).
    file_format: "klue-dp" or "conllu" (`data.FORMATS`), the task and its files.
    max_words: the words of a sentence the input holds (a static shape); longer sentences are cut.
    pos_embedding_size: the size of the embedding of each of a word's two tags; 0 leaves the tags out of the
      features (a parser of raw text, which has no tags).

  Raises:
    OptionError: an unknown format, `max_words` below 1 or a negative `pos_embedding_size`.
  """

  primary_metric = "las_macro_f1"
  sum_names = ("loss", "arc_loss", "label_loss", "right_heads", "right_labels", "words")
  progress_groups = (("loss", "arc_loss", "label_loss"), ("head_accuracy", "label_accuracy"))

  def __init__(self, tokenizer: SentencePieceTokenizer, file_format: str, max_words: int = 64,
               pos_embedding_size: int = 64):
    if file_format not in data.FORMATS:
      raise OptionError(f"Unknown dependency parsing task {file_format!r}; the tasks are "
                        f"{', '.join(data.FORMATS)}.")
    if max_words < 1:
      raise OptionError(f"--max_words={max_words} must be positive.")
    if pos_embedding_size < 0:
      raise OptionError(f"--pos_embedding_size={pos_embedding_size} must be 0 (no tag features) or more.")
    self.tokenizer = tokenizer
    self.file_format = file_format
    self.max_words = max_words
    self.pos_embedding_size = pos_embedding_size
    # Traced once per objective: the evaluation's trees, as the SavedModel decodes them.
    self._projective_trees = tf.function(projective_trees, autograph=False, reduce_retracing=True)
    # Relations in id order (KLUE's are fixed; a treebank's come from its train split) and the tag vocabulary:
    # from the train split, or from the task.json of the run that trained the checkpoint.
    self.label_list: Optional[List[str]] = list(data.KLUE_DP_LABELS) if file_format == data.KLUE_DP else None
    self.tags: Optional[List[str]] = None

  def run_info(self) -> Dict:
    return {"task": data.TASK_NAME, "format": self.file_format, "label_list": self.label_list,
            "pos_tags": self.tags, "max_words": self.max_words, "pos_embedding_size": self.pos_embedding_size}

  def adopt_run_info(self, info: Dict, output_dir: str):
    """Takes the relations and tags of the run in `output_dir`; refuses a run of another task or format, or
    of another tag embedding size or --max_words."""
    if info.get("task") != data.TASK_NAME or info.get("format") != self.file_format:
      task = info.get("format") or info.get("task")
      raise TaskError(f"--output_dir {output_dir} holds a run of task {task!r}, not {self.file_format!r}.")
    labels, tags = info.get("label_list"), info.get("pos_tags")
    if not isinstance(labels, list) or not isinstance(tags, list):
      raise TaskError(f"The task.json of --output_dir {output_dir} has no label_list or pos_tags list.")
    if self.label_list is not None and labels != self.label_list:
      raise TaskError(f"--output_dir {output_dir} was trained with relations {labels}, not this task's "
                      f"{self.label_list}. Use a new --output_dir.")
    for name, reason in (("pos_embedding_size", "its weights need the same"),
                         ("max_words", "its checkpoints were scored on sentences cut there, and model.ckpt-best "
                          "was chosen among those scores")):
      trained, this_run = info.get(name, getattr(self, name)), getattr(self, name)
      if trained != this_run:
        raise TaskError(f"--output_dir {output_dir} was trained with --{name}={trained}, not {this_run}: "
                        f"{reason}. Use the same, or a new --output_dir.")
    self.label_list, self.tags = labels, tags

  def learn_from_train(self, examples: List[data.ParseExample]):
    """The relations (a treebank's) and the tag vocabulary of the train split; refused when they differ from
    those of the run being resumed."""
    labels, tags = data.label_list(self.file_format, examples), tag_vocabulary(examples)
    if self.tags is not None and (labels, tags) != (self.label_list, self.tags):
      new = sorted(set(labels) - set(self.label_list) | set(tags) - set(self.tags))
      raise TaskError("The train split's relations or tags differ from those of the run in --output_dir (its "
                      f"task.json){': it adds ' + ', '.join(new) if new else ''}. Use a new --output_dir.")
    self.label_list, self.tags = labels, tags

  def serving_options(self, output_dir: str) -> serving.ParsingOptions:
    """`parse_text` reads tags and cuts words as this run does."""
    del output_dir
    return serving.ParsingOptions(tuple(self._vocabularies()[1]), self.max_words)

  def read_examples(self, data_dir: str, split: str) -> List[data.ParseExample]:
    path = find_split_file(data_dir, split, split_patterns(self.file_format, split), self.file_format)
    return data.read_parse_examples(path, self.file_format)

  def _vocabularies(self) -> Tuple[List[str], List[str]]:
    if self.label_list is None or self.tags is None:
      raise TaskError("The parser's relations and tags are unknown: --do_train learns them from the train "
                      "split, a run without it reads them from the task.json of --output_dir, which has "
                      "none.")
    return self.label_list, self.tags

  def encode(self, examples: List[data.ParseExample], tokenizer, max_seq_length: int,
             description: str) -> ParseSplit:
    """The packed pieces and word inputs of each sentence; reports on stderr how many were cut."""
    del tokenizer  # words are tokenized one by one with the Python tokenizer
    label_list, tags = self._vocabularies()
    features = parse_features(examples, self.tokenizer, max_seq_length, self.max_words, label_list, tags)
    cut = sum(len(example.words) - kept for example, kept in zip(examples, features.kept_words))
    if cut:
      sentences = int(np.sum(features.kept_words < [len(example.words) for example in examples]))
      print(f"{description}: {sentences} of {len(examples)} sentences are longer than --max_seq_length="
            f"{max_seq_length} pieces or --max_words={self.max_words} words; their last {cut} words are cut.",
            file=sys.stderr)
    packed = packed_ids(features.piece_ids, [len(ids) for ids in features.piece_ids])
    labels = np.stack([features.heads, features.relation_ids], axis=1)
    return ParseSplit({"inputs": packed}, labels, [example.guid for example in examples], max_seq_length,
                      (examples, features), features.word_inputs())

  def build_model(self, config: AlbertConfig, dropout_prob: float,
                  recompute_grad: bool = False) -> AlbertDependencyParser:
    label_list, tags = self._vocabularies()
    return AlbertDependencyParser(config, label_list, len(tags) + 2, self.pos_embedding_size,
                                  dropout_rate=dropout_prob, recompute_grad=recompute_grad)

  def loss_normalizers(self, batch) -> tf.Tensor:
    """The words with their gold head in the input, `[1]` float32."""
    return tf.reduce_sum(tf.cast(batch["labels"][:, 0] >= 0, tf.float32))[tf.newaxis]

  def replica_loss(self, model):
    """(batch, global words) -> (this batch's share of the mean per-word loss, its sums)."""

    def loss_and_sums(batch, normalizers):
      heads, relations = batch["labels"][:, 0], batch["labels"][:, 1]
      inputs = dict(batch["inputs"], **batch["words"], heads=tf.maximum(heads, 0))
      outputs = model(inputs, training=True)
      # The words' rows (row 0 is the root's).
      arc_scores, label_scores = outputs["arc_scores"][:, 1:], outputs["label_scores"][:, 1:]
      arcs = tf.cast(heads >= 0, tf.float32)
      # A relation is learned at its gold head: only where that arc is in the input.
      labelled = arcs * tf.cast(relations >= 0, tf.float32)
      arc_loss = arcs * tf.nn.sparse_softmax_cross_entropy_with_logits(tf.maximum(heads, 0), arc_scores)
      label_loss = labelled * tf.nn.sparse_softmax_cross_entropy_with_logits(tf.maximum(relations, 0),
                                                                            label_scores)
      right_heads = arcs * tf.cast(tf.argmax(arc_scores, -1, output_type=tf.int32) == heads, tf.float32)
      right_labels = labelled * tf.cast(tf.argmax(label_scores, -1, output_type=tf.int32) == relations,
                                        tf.float32)
      sums = tf.stack([tf.reduce_sum(arc_loss + label_loss), tf.reduce_sum(arc_loss),
                       tf.reduce_sum(label_loss), tf.reduce_sum(right_heads), tf.reduce_sum(right_labels),
                       tf.reduce_sum(arcs)])
      return sums[0] / tf.maximum(normalizers[0], 1.0), sums

    return loss_and_sums

  def metrics_from_sums(self, sums) -> Dict[str, float]:
    """Per word: the losses, the greedy head's accuracy and the relation's at the gold head."""
    values = dict(zip(self.sum_names, np.asarray(sums, np.float64)))
    return {"loss": safe_ratio(values["loss"], values["words"]),
            "arc_loss": safe_ratio(values["arc_loss"], values["words"]),
            "label_loss": safe_ratio(values["label_loss"], values["words"]),
            "head_accuracy": safe_ratio(values["right_heads"], values["words"]),
            "label_accuracy": safe_ratio(values["right_labels"], values["words"])}

  def predict(self, model, batch) -> Dict[str, tf.Tensor]:
    """float32 `arc_scores` `[batch, W + 1, W + 1]` and `label_ids`, int32 `[batch, W + 1, W + 1]`, the best
    relation of each (dependent, head) pair: what decoding reads, without the relations' scores."""
    outputs = model(dict(batch["inputs"], **batch["words"]), training=False)
    return {"arc_scores": outputs["arc_scores"],
            "label_ids": tf.argmax(outputs["label_scores"], -1, output_type=tf.int32)}

  def _parses(self, outputs: Dict[str, np.ndarray], features: ParseFeatures) -> Tuple[List[np.ndarray], ...]:
    """Per sentence, the decoded heads of its kept words and their relation ids at those heads."""
    if self.file_format == data.KLUE_DP:
      padded = self._projective_trees(outputs["arc_scores"], features.kept_words).numpy()
      heads = [row[:count].astype(np.int64) for row, count in zip(padded, features.kept_words)]
    else:
      heads = decode_batch(outputs["arc_scores"], features.kept_words)
    relations = [outputs["label_ids"][row, np.arange(1, len(sentence) + 1), sentence]
                 for row, sentence in enumerate(heads)]
    return heads, relations

  def evaluation_metrics(self, outputs: Dict[str, np.ndarray], split: ParseSplit) -> Dict[str, float]:
    """KLUE's `uas_macro_f1` and `las_macro_f1` (KLUE-DP's rarer relations merged as KLUE does; a treebank's
    relations as they are), `uas` and `las`, over the words of the input; and how many were cut and left
    out."""
    examples, features = split.source
    label_list, _ = self._vocabularies()
    # A relation the label list lacks gets an id no prediction has: it counts as wrong.
    relation_ids = {label: index for index, label in enumerate(label_list)}
    heads, relations = self._parses(outputs, features)
    gold_heads = [example.heads[:kept] for example, kept in zip(examples, features.kept_words)]
    gold_relations = [[relation_ids.get(relation, len(label_list)) for relation in example.deprels[:kept]]
                      for example, kept in zip(examples, features.kept_words)]
    others_from = KLUE_OTHERS_FROM if self.file_format == data.KLUE_DP else None
    metrics = dependency_metrics(heads, relations, gold_heads, gold_relations, others_from)
    lengths = np.array([len(example.words) for example in examples])
    metrics["truncated_sentences"] = int(np.sum(features.kept_words < lengths))
    metrics["truncated_words_excluded"] = int(np.sum(lengths - features.kept_words))
    return metrics

  def prediction_files(self, outputs: Dict[str, np.ndarray], split: ParseSplit,
                       output_dir: str) -> Dict[str, str]:
    """The test split with the predicted heads and relations, in its format (KLUE-DP's TSV, or CoNLL-U with
    the columns the reader keeps), and as JSON (`parsed_words`: how many words the model saw).

    A cut word, which the model never saw, is attached to the parsed words' root word with the first relation
    of the label list, so that each sentence is one tree."""
    del output_dir
    examples, features = split.source
    label_list, _ = self._vocabularies()
    heads, relations = self._parses(outputs, features)
    lines, records = [], []
    to_lines = _klue_dp_lines if self.file_format == data.KLUE_DP else _conllu_lines
    for example, parsed_heads, parsed_relations in zip(examples, heads, relations):
      cut = len(example.words) - len(parsed_heads)
      root_word = int(np.flatnonzero(parsed_heads == 0)[0]) + 1
      sentence_heads = [int(head) for head in parsed_heads] + [root_word] * cut
      sentence_relations = [label_list[index] for index in parsed_relations] + [label_list[0]] * cut
      lines += to_lines(example, sentence_heads, sentence_relations) + [""]
      records.append({"guid": example.guid, "words": list(example.words), "heads": sentence_heads,
                      "relations": sentence_relations, "parsed_words": len(parsed_heads)})
    return {PREDICTIONS[self.file_format]: "".join(line + "\n" for line in lines),
            # A JSON array, a sentence a line.
            PREDICTIONS_JSON: "[\n" + ",\n".join(json.dumps(record, ensure_ascii=False) for record in records)
                              + "\n]\n"}
