"""The absl flags of `run_squad_v1`, `run_squad_v2` and `run_race` beyond the shared fine-tuning ones.

Names and defaults are those of Google's `run_squad_v1.py`, `run_squad_v2.py` and `run_race.py`.
"""

import os

from absl import flags

from albert_tf.cli import finetuning_flags
from albert_tf.errors import OptionError
from albert_tf.tasks.dependency_parsing import data as parsing_data
from albert_tf.tasks.dialogue_state_tracking import data as tracking_data
from albert_tf.tasks.dialogue_state_tracking import objective as tracking_objective
from albert_tf.tasks.dependency_parsing import objective as parsing_objective
from albert_tf.tasks.race import objective as race_objective
from albert_tf.tasks.squad import examples as squad_examples
from albert_tf.tasks.squad import objective as squad_objective
from albert_tf.tasks.squad import reading_tasks
from albert_tf.tasks.squad.answer_spans import QuestionAnsweringOptions
from albert_tf.tasks.token_classification import data as tagging_data
from albert_tf.tasks.token_classification import objective as tagging_objective
from albert_tf.text.tokenizer import SentencePieceTokenizer
from albert_tf.training import finetuning

FLAGS = flags.FLAGS
TRAIN_FEATURE_FILE = "train_features.tfrecord"
PREDICT_FEATURE_FILE = "predict_features.tfrecord"


def _model_tokenizer() -> SentencePieceTokenizer:
  """The Python tokenizer of --spm_model_file, with the options of its record or flags."""
  text_options = finetuning_flags.tokenizer_flags.options_from_flags(FLAGS.spm_model_file)
  return SentencePieceTokenizer(FLAGS.spm_model_file, text_options.do_lower_case, text_options.keep_accents)

def define_squad_flags(version: int):
  """The flags of Google's run_squad_v<version>.py (and the shared fine-tuning flags)."""
  finetuning_flags.define_run_flags()
  tasks = [reading_tasks.reading_task(name, version) for name in reading_tasks.task_names(version)]
  flags.DEFINE_enum("task_name", reading_tasks.DEFAULT_TASK, [task.name for task in tasks],
                    "The benchmark, which says how the JSON files are read and scored: " +
                    "; ".join(f"{task.name}: {task.description}" for task in tasks) + ".")
  flags.DEFINE_string("train_file", None, "SQuAD JSON for training, e.g. train-v1.1.json (korquad2: a KorQuAD 2.x "
                      "file or a folder of its *.json shards); local or gs://...")
  flags.DEFINE_string("predict_file", None, "SQuAD JSON to predict (and, when it has answers, to score every "
                      "checkpoint on and keep the best), e.g. dev-v1.1.json (korquad2: a file or a folder of "
                      "shards, predicted into one predictions.json); local or gs://...")
  flags.DEFINE_string("train_feature_file", None, "TFRecord cache of the training features (default "
                      f"<output_dir>/{TRAIN_FEATURE_FILE}; local or gs://...); rebuilt when the file or a setting "
                      "changes.")
  flags.DEFINE_string("predict_feature_file", None, "TFRecord cache of the prediction features (default "
                      f"<output_dir>/{PREDICT_FEATURE_FILE}; local or gs://...).")
  flags.DEFINE_string("predict_feature_left_file", None, "Also write the prediction features' token maps to "
                      "this JSON-lines file (Google's pickle; the TFRecord cache holds them too); local or gs://...")
  flags.DEFINE_integer("doc_stride", 128, "Tokens between the starts of a long context's windows.")
  flags.DEFINE_integer("max_query_length", 64, "Question tokens kept; longer questions are cut.")
  flags.DEFINE_integer("n_best_size", 20, "Answers kept per question in nbest_predictions.json.")
  flags.DEFINE_integer("max_answer_length", 30, "The longest answer, in tokens.")
  flags.DEFINE_float("num_train_epochs", 3.0, "Training epochs over the train file's questions.")
  flags.DEFINE_float("warmup_proportion", 0.1, "Share of the training steps with a linear warmup.")
  if version == 2:
    flags.DEFINE_integer("start_n_top", 5, "Best starts in the answer beam.")
    flags.DEFINE_integer("end_n_top", 5, "Best ends per start in the answer beam.")
  FLAGS.set_default("max_seq_length", 384)


def squad_run_from_flags(version: int):
  """The `FineTuningOptions` and `SquadObjective` of the flags.

  Training steps are Google's: questions of --train_file / --train_batch_size × --num_train_epochs, of which
  --warmup_proportion warm up. --do_predict scores every checkpoint when --predict_file has answers.
  """
  if version == 1 and FLAGS["dropout_prob"].present:
    raise OptionError("--dropout_prob is run_squad_v2's (before its answer-class logit); SQuAD v1's span head has "
                      "no dropout, as Google's. The encoder's dropout is the config's hidden_dropout_prob.")
  if FLAGS.num_train_epochs <= 0 and FLAGS.do_train:
    raise OptionError(f"--num_train_epochs={FLAGS.num_train_epochs} must be positive.")
  if not 0 <= FLAGS.warmup_proportion < 1:
    raise OptionError(f"--warmup_proportion={FLAGS.warmup_proportion} must be in [0, 1).")
  tokenizer = _model_tokenizer()
  task = reading_tasks.reading_task(FLAGS.task_name, version)
  settings = squad_objective.SquadSettings(
      version=version, train_file=FLAGS.train_file, predict_file=FLAGS.predict_file,
      train_feature_file=FLAGS.train_feature_file or os.path.join(FLAGS.output_dir, TRAIN_FEATURE_FILE),
      predict_feature_file=FLAGS.predict_feature_file or os.path.join(FLAGS.output_dir, PREDICT_FEATURE_FILE),
      predict_feature_left_file=FLAGS.predict_feature_left_file,
      reading=QuestionAnsweringOptions(FLAGS.max_query_length, FLAGS.doc_stride, FLAGS.max_answer_length,
                                       FLAGS.n_best_size),
      task=task, **({"start_n_top": FLAGS.start_n_top, "end_n_top": FLAGS.end_n_top} if version == 2 else {}))
  objective = squad_objective.SquadObjective(settings, tokenizer, FLAGS.max_seq_length)
  schedule = {}
  if FLAGS.do_train:
    if not FLAGS.train_file:
      raise OptionError("--do_train needs --train_file.")
    num_questions = squad_examples.count_questions(FLAGS.train_file, layout=task.layout, reader=task.reader)
    train_step = int(num_questions / FLAGS.train_batch_size * FLAGS.num_train_epochs)
    if train_step < 1:
      raise OptionError(f"{num_questions} questions / --train_batch_size={FLAGS.train_batch_size} × "
                        f"--num_train_epochs={FLAGS.num_train_epochs} make no training step.")
    schedule = {"train_step": train_step, "warmup_step": int(train_step * FLAGS.warmup_proportion)}
  if FLAGS.do_predict and not FLAGS.predict_file:
    raise OptionError("--do_predict needs --predict_file.")
  do_eval = bool(FLAGS.do_predict and squad_examples.count_questions(FLAGS.predict_file, with_answers=True,
                                                                     layout=task.layout, reader=task.reader))
  options = finetuning_flags.options_from_flags(data_dir=None, do_eval=do_eval,
                                                eval_batch_size=FLAGS.predict_batch_size, **schedule)
  return options, objective


def _define_dev_evaluation(eval_batch_size: int):
  """--do_eval (on: every checkpoint is scored on the dev split, the best kept) and --eval_batch_size."""
  flags.DEFINE_bool("do_eval", True, "Evaluate every checkpoint on the dev split and keep the best.")
  flags.DEFINE_integer("eval_batch_size", eval_batch_size, "Global eval batch size.")


def _set_defaults(**defaults):
  """A task's own defaults for shared fine-tuning flags (Google's run_race.py values for RACE, ...)."""
  for name, default in defaults.items():
    FLAGS.set_default(name, default)


def define_race_flags():
  """The flags of Google's run_race.py (and the shared fine-tuning flags)."""
  finetuning_flags.define_run_flags()
  finetuning_flags.define_schedule_flags()
  flags.DEFINE_string("data_dir", None, "The folder holding RACE/ (or RACE/ itself): {train,dev,test}/"
                      "{middle,high}/, each all.txt (a JSON article a line, Google's) or the download's *.txt; "
                      "local or gs://...")
  _define_dev_evaluation(eval_batch_size=8)
  flags.DEFINE_integer("max_qa_length", 128, "Question+option tokens kept (the last ones).")
  flags.DEFINE_bool("high_only", False, "Only RACE-H (high-school exams).")
  flags.DEFINE_bool("middle_only", False, "Only RACE-M (middle-school exams).")
  flags.mark_flag_as_required("data_dir")
  _set_defaults(max_seq_length=512, learning_rate=1e-5, train_step=12000, warmup_step=1000, save_checkpoints_steps=100,
                do_train=True)


def race_run_from_flags():
  """The `FineTuningOptions` and `MultipleChoiceObjective` of the flags."""
  tokenizer = _model_tokenizer()
  objective = race_objective.MultipleChoiceObjective(tokenizer, FLAGS.max_qa_length, FLAGS.high_only,
                                                     FLAGS.middle_only)
  options: finetuning.FineTuningOptions = finetuning_flags.options_from_flags()
  return options, objective


def define_token_classification_flags():
  """The flags of run_token_classification (and the shared fine-tuning flags)."""
  finetuning_flags.define_run_flags()
  finetuning_flags.define_schedule_flags()
  flags.DEFINE_enum("task_name", None, list(tagging_data.FORMATS), "The files' layout: klue-ner (KLUE's "
                    "character TSV), conll (a word a line, its tag in the last column, blank lines between "
                    "sentences) or tsv (a word and its tag a line, tab-separated, blank lines between sentences).")
  flags.DEFINE_string("data_dir", None, "The folder of the split files (klue-ner: klue-ner-v1.1_{train,dev}.tsv; "
                      "conll: train.txt, dev.txt or valid.txt, test.txt, or CoNLL-2003's eng.train, eng.testa, "
                      "eng.testb; tsv: train.tsv, dev.tsv, test.tsv), or one file, read as each split; local or "
                      "gs://...")
  flags.DEFINE_list("label_list", None, "The tags in id order (default: KLUE's for klue-ner, else O and the "
                    "train split's B-/I- tags, sorted by type).")
  flags.DEFINE_integer("doc_stride", 64, "Pieces between the starts of a long sentence's windows; each piece is "
                       "predicted from the window where it has the most context.")
  _define_dev_evaluation(eval_batch_size=32)
  flags.mark_flags_as_required(["task_name", "data_dir"])
  _set_defaults(max_seq_length=128, train_step=2000, warmup_step=200, save_checkpoints_steps=500, do_train=True,
                predict_batch_size=32)


def token_classification_run_from_flags():
  """The `FineTuningOptions` and `TokenClassificationObjective` of the flags."""
  tokenizer = _model_tokenizer()
  objective = tagging_objective.TokenClassificationObjective(FLAGS.task_name, tokenizer, FLAGS.doc_stride,
                                                             FLAGS.label_list)
  options: finetuning.FineTuningOptions = finetuning_flags.options_from_flags()
  return options, objective


def define_dependency_parsing_flags():
  """The flags of run_dependency_parsing (and the shared fine-tuning flags)."""
  finetuning_flags.define_run_flags()
  finetuning_flags.define_schedule_flags()
  flags.DEFINE_enum("task_name", None, list(parsing_data.FORMATS), "The treebank's format: klue-dp "
                    "(KLUE-DP's TSV, an eojeol a line) or conllu (Universal Dependencies' CoNLL-U).")
  flags.DEFINE_string("data_dir", None, "The folder of the split files (klue-dp: "
                      "klue-dp-v1.1_{train,dev}.tsv, here or in its klue-dp-v1.1/ folder, the test split "
                      "reading the dev file; conllu: <treebank>-ud-{train,dev,test}.conllu or "
                      "{train,dev,test}.conllu); local or gs://...")
  flags.DEFINE_integer("max_words", 64, "Words of a sentence the parser reads (a static shape); the words "
                       "of longer sentences after it, and after --max_seq_length pieces, are cut and not "
                       "scored.")
  flags.DEFINE_integer("pos_embedding_size", 64, "Size of the embedding of a word's first and of its last "
                       "morpheme tag (KLUE-DP's POS column, CoNLL-U's XPOS), beside its pieces' vectors; 0 leaves "
                       "the tags out, for a parser of raw text (the SavedModel's parse_text then needs no tags).")
  _define_dev_evaluation(eval_batch_size=32)
  flags.mark_flags_as_required(["task_name", "data_dir"])
  _set_defaults(max_seq_length=128, train_step=3000, warmup_step=300, save_checkpoints_steps=500, do_train=True,
                predict_batch_size=32)


def dependency_parsing_run_from_flags():
  """The `FineTuningOptions` and `DependencyParsingObjective` of the flags."""
  tokenizer = _model_tokenizer()
  objective = parsing_objective.DependencyParsingObjective(tokenizer, FLAGS.task_name, FLAGS.max_words,
                                                          FLAGS.pos_embedding_size)
  options: finetuning.FineTuningOptions = finetuning_flags.options_from_flags()
  return options, objective


def define_dialogue_state_tracking_flags():
  """The flags of run_dialogue_state_tracking (and the shared fine-tuning flags)."""
  finetuning_flags.define_run_flags()
  finetuning_flags.define_schedule_flags()
  flags.DEFINE_enum("task_name", None, [tracking_data.TASK_NAME], "The dialogues' layout: wos (KLUE's Wizard of "
                    "Seoul: a JSON array of dialogues, a state on each user turn).")
  flags.DEFINE_string("data_dir", None, "The folder of wos-v1.1_{train,dev}.json (the test split reads "
                      "wos-v1.1_test.json, else the dev file) and ontology.json; local or gs://...")
  flags.DEFINE_string("ontology_file", None, "The ontology, \"domain-slot\" -> its values (default: "
                      "ontology.json beside the dialogue files; local or gs://...).")
  _define_dev_evaluation(eval_batch_size=32)
  flags.mark_flags_as_required(["task_name", "data_dir"])
  _set_defaults(max_seq_length=512, train_step=10000, warmup_step=1000, save_checkpoints_steps=1000, do_train=True,
                predict_batch_size=32)


def dialogue_state_tracking_run_from_flags():
  """The `FineTuningOptions` and `DialogueStateTrackingObjective` of the flags."""
  objective = tracking_objective.DialogueStateTrackingObjective(_model_tokenizer(), FLAGS.ontology_file)
  options: finetuning.FineTuningOptions = finetuning_flags.options_from_flags()
  return options, objective
