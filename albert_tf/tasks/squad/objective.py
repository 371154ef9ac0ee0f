"""What SQuAD fine-tuning learns (Google's `run_squad_v1.py`, `run_squad_v2.py`), as an objective of
`finetuning.FineTuning`.

`SquadObjective`: one row per doc-stride window (`features`, cached as TFRecords between runs by
`feature_cache`). v1: the mean of the start and end cross-entropies over all tokens (Google's). v2: the same
over the tokens that can be answers, plus half the binary cross-entropy of the no-answer logit. Scored as the
official evaluation scripts (`scoring`) from Google's n-best answers (`predictions`).
"""

import dataclasses
import os
from typing import Dict, List, Optional

import numpy as np
import tensorflow as tf

from albert_tf.data.finetuning_dataset import EncodedSplit, packed_ids
from albert_tf.errors import OptionError, TaskError
from albert_tf.modeling.config import AlbertConfig
from albert_tf.tasks.squad import feature_cache
from albert_tf.tasks.squad import features as squad_features
from albert_tf.tasks.squad import particles
from albert_tf.tasks.squad import predictions as squad_predictions
from albert_tf.tasks.squad import reading_tasks
from albert_tf.tasks.squad import scoring as squad_scoring
from albert_tf.tasks.squad import tflite
from albert_tf.tasks.squad.answer_spans import READING_SETTINGS, QuestionAnsweringOptions
from albert_tf.tasks.squad.model import AlbertQuestionAnswerer, AlbertQuestionAnswererV2
from albert_tf.text.tokenizer import SentencePieceTokenizer
from albert_tf.training import run_directory
from albert_tf.training.finetuning_objectives import FineTuningDefaults, safe_ratio

TFLITE_FILE = "albert_model.tflite"  # Google's run_squad_v1 name


@dataclasses.dataclass
class SquadSettings:
  """Google's `run_squad_v1.py` / `run_squad_v2.py` flags that are not `FineTuningOptions`.

  Attributes:
    version: 1 (SQuAD v1.1) or 2 (SQuAD 2.0, questions may have no answer).
    train_file, predict_file: the SQuAD JSON files (KorQuAD 2.x: a file or a folder of its shards).
    train_feature_file, predict_feature_file: the TFRecord caches of their features.
    predict_feature_left_file: Google's file of the prediction features' token maps (JSON lines here).
    reading: `--max_query_length`, `--doc_stride`, `--max_answer_length` and `--n_best_size`, which the
      exported `answer_question` reads with too.
    start_n_top, end_n_top: v2's beam.
    task: the benchmark (`--task_name`): how its files are read and scored; None: SQuAD of `version`.
  """

  version: int
  train_file: Optional[str] = None
  predict_file: Optional[str] = None
  train_feature_file: Optional[str] = None
  predict_feature_file: Optional[str] = None
  predict_feature_left_file: Optional[str] = None
  reading: QuestionAnsweringOptions = dataclasses.field(default_factory=QuestionAnsweringOptions)
  start_n_top: int = 5
  end_n_top: int = 5
  task: Optional[reading_tasks.ReadingTask] = None


class SquadObjective(FineTuningDefaults):
  """Google's SQuAD fine-tuning, v1 or v2.

  Args:
    settings: the SQuAD flags.
    tokenizer: the Python tokenizer of the model (features align its pieces with the context's characters).
    max_seq_length: the packed length (the run's).

  Raises:
    OptionError: settings that do not fit together.
  """

  primary_metric = "f1"
  sum_names = ("loss", "start_correct", "end_correct", "examples")
  progress_groups = (("loss", "start_accuracy", "end_accuracy"),)

  def __init__(self, settings: SquadSettings, tokenizer: SentencePieceTokenizer, max_seq_length: int):
    if settings.version not in (1, 2):
      raise OptionError(f"SQuAD version {settings.version}: 1 or 2.")
    if settings.version == 2 and not (1 <= settings.start_n_top <= max_seq_length
                                      and 1 <= settings.end_n_top <= max_seq_length):
      raise OptionError(f"--start_n_top={settings.start_n_top} and --end_n_top={settings.end_n_top} must be between "
                        f"1 and --max_seq_length={max_seq_length}.")
    settings.reading.check(max_seq_length)
    self.task = settings.task or reading_tasks.reading_task(reading_tasks.DEFAULT_TASK, settings.version)
    if self.task.version != settings.version:
      raise OptionError(f"{self.task.description} is read by run_squad_v{self.task.version}, not "
                        f"run_squad_v{settings.version}.")
    self.settings = settings
    self.tokenizer = tokenizer
    self.max_seq_length = max_seq_length
    self.task_name = self.task.run_name
    self.primary_metric = self.task.primary_metric
    self._predict_split = None  # dev and test are the same --predict_file: read once
    self._trimmer = None  # --trim_particles' analyzer, loaded at the first answers it cuts

  @property
  def is_v2(self) -> bool:
    return self.settings.version == 2

  # --- data ----------------------------------------------------------------------------------------------

  def run_info(self) -> Dict:
    s = self.settings
    return {"task": self.task_name, "start_n_top": s.start_n_top, "end_n_top": s.end_n_top,
            **{name: getattr(s.reading, name) for name in READING_SETTINGS}}

  def adopt_run_info(self, info: Dict, output_dir: str):
    """Refuses a run of another task, and one whose best scores are in percent (KorQuAD's and KLUE-MRC's were
    before they became fractions): no new checkpoint could beat them."""
    super().adopt_run_info(info, output_dir)
    best = run_directory.read_best_info(output_dir) or {}
    metric = self.task.primary_metric
    if not self.task.percent and best.get(metric, 0) > 1:
      raise TaskError(f"The {run_directory.BEST_CHECKPOINT_INFO} of --output_dir {output_dir} holds {metric} = "
                      f"{best[metric]}, in percent as an earlier albert-tf wrote it; the scores are fractions now "
                      "(0 to 1), so no new checkpoint would beat it. Divide its scores by 100, or use a new "
                      "--output_dir.")

  def read_examples(self, data_dir: Optional[str], split: str) -> squad_features.SquadSplit:
    """The train split from --train_file; dev and test from --predict_file (Google's do_predict scores it)."""
    del data_dir
    s = self.settings
    if split == "train":
      if not s.train_file:
        raise OptionError("--do_train needs --train_file.")
      return feature_cache.load_or_create_features(
          s.train_file, self.tokenizer, self.max_seq_length, s.reading.doc_stride, s.reading.max_query_length,
          is_training=True,
          version_2_with_negative=self.is_v2, feature_file=s.train_feature_file, layout=self.task.layout,
          reader=self.task.reader)
    if not s.predict_file:
      raise OptionError("--do_predict needs --predict_file.")
    if self._predict_split is None:
      self._predict_split = feature_cache.load_or_create_features(
          s.predict_file, self.tokenizer, self.max_seq_length, s.reading.doc_stride, s.reading.max_query_length,
          is_training=False,
          version_2_with_negative=self.is_v2, feature_file=s.predict_feature_file,
          feature_left_file=s.predict_feature_left_file, layout=self.task.layout, reader=self.task.reader)
    return self._predict_split

  def encode(self, examples: squad_features.SquadSplit, tokenizer, max_seq_length: int,
             description: str) -> EncodedSplit:
    """The windows of `examples` (what `read_examples` read) as rows, `[CLS] question [SEP] window [SEP]`, and
    their labels (start, end, is_impossible)."""
    del tokenizer, description  # the features were made with the Python tokenizer, which aligns characters
    if max_seq_length != self.max_seq_length:
      raise OptionError(f"SQuAD features of length {self.max_seq_length} cannot fill rows of {max_seq_length}.")
    features = examples.features
    if not features:
      raise TaskError("No SQuAD features: every example was skipped.")
    labels = np.array([[f.start_position, f.end_position, int(f.is_impossible)] for f in features], np.int32)
    packed = packed_ids([f.input_ids for f in features], [f.context_offset for f in features])
    return EncodedSplit({"inputs": packed}, labels, [str(f.unique_id) for f in features], max_seq_length, examples)

  # --- model and loss ------------------------------------------------------------------------------------

  def build_model(self, config: AlbertConfig, dropout_prob: float, recompute_grad: bool = False):
    if self.is_v2:
      return AlbertQuestionAnswererV2(config, self.settings.start_n_top, self.settings.end_n_top, dropout_prob,
                                      recompute_grad)
    return AlbertQuestionAnswerer(config, recompute_grad)

  def replica_loss(self, model):
    """(batch, global examples) -> (this batch's share of Google's mean loss, its sums)."""

    def loss_and_sums(batch, normalizers):
      labels = batch["labels"]
      starts, ends = labels[:, 0], labels[:, 1]
      if self.is_v2:
        outputs = model(dict(batch["inputs"], start_positions=starts), training=True)
        start_scores, end_scores = outputs["start_log_probs"], outputs["end_log_probs"]
        start_loss = -tf.gather(start_scores, starts, batch_dims=1)
        end_loss = -tf.gather(end_scores, ends, batch_dims=1)
        no_answer_loss = tf.nn.sigmoid_cross_entropy_with_logits(labels=tf.cast(labels[:, 2], tf.float32),
                                                                 logits=outputs["cls_logits"])
        loss = (start_loss + end_loss) / 2.0 + 0.5 * no_answer_loss
      else:
        outputs = model(batch["inputs"], training=True)
        start_scores, end_scores = outputs["start_logits"], outputs["end_logits"]
        start_loss = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=starts, logits=start_scores)
        end_loss = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=ends, logits=end_scores)
        loss = (start_loss + end_loss) / 2.0

      def correct(scores, positions):
        return tf.reduce_sum(tf.cast(tf.equal(tf.argmax(scores, -1, output_type=tf.int32), positions), tf.float32))

      sums = tf.stack([tf.reduce_sum(loss), correct(start_scores, starts), correct(end_scores, ends),
                       tf.cast(tf.size(loss), tf.float32)])
      return sums[0] / normalizers[0], sums

    return loss_and_sums

  def metrics_from_sums(self, sums) -> Dict[str, float]:
    values = dict(zip(self.sum_names, np.asarray(sums, np.float64)))
    return {"loss": safe_ratio(values["loss"], values["examples"]),
            "start_accuracy": safe_ratio(values["start_correct"], values["examples"]),
            "end_accuracy": safe_ratio(values["end_correct"], values["examples"])}

  # --- evaluation, predictions, export -------------------------------------------------------------------

  def predict(self, model, batch) -> Dict[str, tf.Tensor]:
    """v1: the start and end logits of every token; v2: the head's beam and no-answer logit."""
    return model(batch["inputs"], training=False)

  def _answer_end(self) -> Optional[squad_predictions.AnswerEnd]:
    """Where `--trim_particles` ends an answer's span, or None without it."""
    name = self.settings.reading.trim_particles
    if name is None:
      return None
    if self._trimmer is None:
      self._trimmer = particles.ParticleTrimmer(name)
    return self._trimmer.answer_end

  def _answers(self, outputs: Dict[str, np.ndarray], split: squad_features.SquadSplit, threshold: Optional[float]):
    s = self.settings.reading
    if self.is_v2:
      return squad_predictions.v2_predictions(
          split.examples, split.features, outputs["start_top_log_probs"], outputs["start_top_index"],
          outputs["end_top_log_probs"], outputs["end_top_index"], outputs["cls_logits"], s.n_best_size,
          s.max_answer_length, threshold, self._answer_end())
    return squad_predictions.v1_predictions(split.examples, split.features, outputs["start_logits"],
                                            outputs["end_logits"], s.n_best_size, s.max_answer_length,
                                            self._answer_end())

  def _scores(self, outputs: Dict[str, np.ndarray], split: squad_features.SquadSplit):
    """(answers, the task's official metrics): v2 with Google's two passes, the second at the threshold best by
    the task's primary metric."""
    s = self.settings.reading
    if self.is_v2:
      return squad_scoring.evaluate_v2(
          split.examples, split.features, outputs["start_top_log_probs"], outputs["start_top_index"],
          outputs["end_top_log_probs"], outputs["end_top_index"], outputs["cls_logits"], split.dataset,
          s.n_best_size, s.max_answer_length, self.task.question_scores, self.task.scores, self._answer_end())
    answers = self._answers(outputs, split, None)
    return answers, self.task.scores(split.dataset, answers)

  def evaluation_metrics(self, outputs: Dict[str, np.ndarray], split: EncodedSplit) -> Dict[str, float]:
    """The task's official metrics (SQuAD v1: exact_match, f1; v2: exact, f1, HasAns_*, NoAns_*, best_*;
    KorQuAD 1.0 and 2.x: exact_match, f1; KLUE-MRC: exact_match, rouge_w and both per question type)."""
    _, metrics = self._scores(outputs, split.source)
    return {name: float(value) for name, value in metrics.items()}

  def prediction_files(self, outputs: Dict[str, np.ndarray], split: EncodedSplit, output_dir: str) -> Dict[str, str]:
    """Google's `predictions.json`, `nbest_predictions.json` and (v2) `null_odds.json`.

    v2 answers "" where the null-score difference is not below the threshold: the one best by the primary metric
    on this file when it has answers (Google's `do_predict`), else the one of `model.ckpt-best`'s evaluation.
    """
    source = split.source
    if self.is_v2 and any(example.gold_answers for example in source.examples):
      answers, _ = self._scores(outputs, source)
    else:
      answers = self._answers(outputs, source, self._best_threshold(output_dir))
    return squad_predictions.prediction_file_texts(answers)

  def _best_threshold(self, output_dir: str) -> Optional[float]:
    """v2: the no-answer threshold of `model.ckpt-best`'s evaluation (None: never chosen, always answer)."""
    best = run_directory.read_best_info(output_dir) or {}
    return best.get("null_score_diff_threshold") if self.is_v2 else None

  def serving_options(self, output_dir: str) -> QuestionAnsweringOptions:
    """`answer_question` reads as training did; v2 with the threshold of the best evaluation."""
    return dataclasses.replace(self.settings.reading, no_answer_threshold=self._best_threshold(output_dir))

  def export_files(self, model, export_path: str, max_seq_length: int) -> List[str]:
    """v1, as Google's: `albert_model.tflite` beside the SavedModel, checked to give the model's logits."""
    if self.is_v2:
      return []
    features = self._predict_split.features[:4] if self._predict_split is not None else []
    return [tflite.export_checked_tflite(model, os.path.join(export_path, TFLITE_FILE), max_seq_length,
                                         [(feature.input_ids, feature.context_offset) for feature in features])]
