"""The command lines of run_squad_v1 and run_squad_v2 (`run_v1`, `run_v2`): their flags, usage texts and `main`."""

import os

from absl import flags

from albert_tf import cli
from albert_tf.cli import finetuning_flags
from albert_tf.cli import reading_flags
from albert_tf.errors import OptionError
from albert_tf.tasks.squad import examples as squad_examples
from albert_tf.tasks.squad import objective as squad_objective
from albert_tf.tasks.squad import particles
from albert_tf.tasks.squad import reading_tasks
from albert_tf.tasks.squad.answer_spans import QuestionAnsweringOptions
from albert_tf.text import korean_analyzers

FLAGS = flags.FLAGS
TRAIN_FEATURE_FILE = "train_features.tfrecord"
PREDICT_FEATURE_FILE = "predict_features.tfrecord"

V1_USAGE = """Fine-tunes ALBERT on SQuAD v1.1, Google's run_squad_v1.py in TF2.

  python tools/run_squad_v1.py --train_file=squad/train-v1.1.json --predict_file=squad/dev-v1.1.json \
      --albert_config_file=albert_base/albert_config.json --spm_model_file=albert_base/spiece.model \
      --init_checkpoint=albert_base --output_dir=runs/squad1 --do_train --do_predict \
      --train_batch_size=48 --learning_rate=5e-5 --num_train_epochs=2.0 --max_seq_length=384 \
      --doc_stride=128 --export_dir=serving/squad1

Features are Google's (SentencePiece pieces aligned to the context's characters, doc-stride windows,
p_mask, answer positions), cached as TFRecords (--train_feature_file,
--predict_feature_file) and rebuilt when the JSON or a setting changes. --do_predict scores every checkpoint
on --predict_file with the official SQuAD v1.1 metrics when it has answers (eval_results.txt, the
best by F1 kept as model.ckpt-best) and writes predictions.json and nbest_predictions.json from the
best weights. --export_dir writes a SavedModel whose answer_question signature takes the raw question and
context, and albert_model.tflite beside it (checked to give the same logits). Flags as Google's, plus the strategy,
mixed-precision and memory flags of run_classifier; rerunning the same command resumes.

--task_name (ours) picks the benchmark: squad (the default), korquad1 (KorQuAD 1.0: its files checked
strictly, its official character-level EM and F1) or korquad2 (KorQuAD 2.0 and 2.1: --train_file and
--predict_file are a shard or a folder of shards; the HTML pages are read as text, answers written back as HTML
in one predictions.json and scored as its evaluation script scores them). The Korean tasks' answers lose their
trailing particles (서울에서 → 서울) with the vocabulary's Korean analyzer, Kiwi by default (--trim_particles).

Every path may be in a bucket (gs://...), as on a Cloud TPU: --train_file, --predict_file and the feature caches
(written beside, each whole or not at all), --output_dir, --export_dir and the model's files.
"""

V2_USAGE = """Fine-tunes ALBERT on SQuAD v2.0, Google's run_squad_v2.py in TF2.

  python tools/run_squad_v2.py --train_file=squad/train-v2.0.json --predict_file=squad/dev-v2.0.json \
      --albert_config_file=albert_base/albert_config.json --spm_model_file=albert_base/spiece.model \
      --init_checkpoint=albert_base --output_dir=runs/squad2 --do_train --do_predict \
      --train_batch_size=48 --learning_rate=5e-5 --num_train_epochs=2.0 --max_seq_length=384 \
      --doc_stride=128 --export_dir=serving/squad2

Features are Google's (SentencePiece pieces aligned to the context's characters, doc-stride windows,
p_mask, answer positions, is_impossible), cached as TFRecords (--train_feature_file,
--predict_feature_file) and rebuilt when the JSON or a setting changes. --do_predict scores every checkpoint
on --predict_file with the official SQuAD v2.0 metrics when it has answers (eval_results.txt, the
best by F1 kept as model.ckpt-best) and writes predictions.json and nbest_predictions.json and null_odds.json from the
best weights. --export_dir writes a SavedModel whose answer_question signature takes the raw question and
context. Flags as Google's, plus the strategy,
mixed-precision and memory flags of run_classifier; rerunning the same command resumes.

--task_name (ours) picks the benchmark: squad (the default) or klue-mrc (klue-mrc-v1.1_{train,dev}.json: guid,
question_type, is_impossible and plausible_answers checked; KLUE's exact_match and rouge_w, the best checkpoint
and the no-answer threshold by rouge_w). Its answers lose their trailing particles (서울에서 → 서울) with the
vocabulary's Korean analyzer, Kiwi by default (--trim_particles).

Every path may be in a bucket (gs://...), as on a Cloud TPU: --train_file, --predict_file and the feature caches
(written beside, each whole or not at all), --output_dir, --export_dir and the model's files.
"""


def define_flags(version: int):
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
  flags.DEFINE_bool("trim_particles", None, "Cut each answer's trailing Korean particles (조사: 서울에서 → 서울) and "
                    "copula (이다), analysing the passage around it with the vocabulary's Korean analyzer (its "
                    "--pretokenizer, else Kiwi; the korean extra). Default: on for the Korean tasks, whose gold "
                    "answers leave particles out, off for squad. Recorded in task.json; the export's "
                    "serving.QuestionAnswerer follows it.")
  flags.DEFINE_float("num_train_epochs", 3.0, "Training epochs over the train file's questions.")
  flags.DEFINE_float("warmup_proportion", 0.1, "Share of the training steps with a linear warmup.")
  if version == 2:
    flags.DEFINE_integer("start_n_top", 5, "Best starts in the answer beam.")
    flags.DEFINE_integer("end_n_top", 5, "Best ends per start in the answer beam.")
  FLAGS.set_default("max_seq_length", 384)


def particle_analyzer(task: reading_tasks.ReadingTask):
  """The analyzer that cuts the answers' particles (--trim_particles, by default the task's), or None; its package
  must be installed (checked without loading it: it loads when the first answers are cut)."""
  if not (FLAGS.trim_particles or (FLAGS.trim_particles is None and task.trims_particles)):
    return None
  pretokenizer = finetuning_flags.tokenizer_flags.options_from_flags(FLAGS.spm_model_file).pretokenizer
  name = particles.analyzer_name(pretokenizer)
  korean_analyzers.require_extra(name, "--trim_particles (--notrim_particles answers with the model's spans)")
  return name


def preflight(version: int):
  """What the command checks of its parsed flags beyond absl's before it reads any data (for a job that runs it
  later: run_klue): the particle analyzer's package."""
  particle_analyzer(reading_tasks.reading_task(FLAGS.task_name, version))


def fine_tune(version: int):
  """Fine-tunes the `SquadObjective` of the flags.

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
  tokenizer = reading_flags.model_tokenizer()
  task = reading_tasks.reading_task(FLAGS.task_name, version)
  trim_particles = particle_analyzer(task)
  settings = squad_objective.SquadSettings(
      version=version, train_file=FLAGS.train_file, predict_file=FLAGS.predict_file,
      train_feature_file=FLAGS.train_feature_file or os.path.join(FLAGS.output_dir, TRAIN_FEATURE_FILE),
      predict_feature_file=FLAGS.predict_feature_file or os.path.join(FLAGS.output_dir, PREDICT_FEATURE_FILE),
      predict_feature_left_file=FLAGS.predict_feature_left_file,
      reading=QuestionAnsweringOptions(FLAGS.max_query_length, FLAGS.doc_stride, FLAGS.max_answer_length,
                                       FLAGS.n_best_size, trim_particles=trim_particles),
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
  finetuning_flags.fine_tune(objective, data_dir=None, do_eval=do_eval, eval_batch_size=FLAGS.predict_batch_size,
                             **schedule)


def main_v1(argv):
  del argv
  fine_tune(1)


def main_v2(argv):
  del argv
  fine_tune(2)


def run_v1():
  """The `albert-run-squad-v1` command."""
  define_flags(1)
  cli.run(main_v1, V1_USAGE)


def run_v2():
  """The `albert-run-squad-v2` command."""
  define_flags(2)
  cli.run(main_v2, V2_USAGE)
