"""A Cloud TPU user's whole job with every path in a bucket (the `bucket` stand-in for gs://): a vocabulary,
pretraining records, pretraining killed after its first checkpoint and resumed, KLUE-NER fine-tuned from the
bucket's run folder, a SavedModel and a Hugging Face folder; and nothing written to local disk instead."""

import os
import tempfile

import tensorflow as tf

from albert_tf import files
from albert_tf.training import loop, run_directory
from tests.conftest import REPO, SHARED, requires_shared, run_tool, tiny_config

KLUE_NER_DEV = os.path.join(SHARED, "klue", "klue-ner-v1.1_dev.tsv")
SAMPLE = os.path.join(REPO, "albert_tf", "sample_data")
SEQ, PREDICTIONS = 64, 8
pytestmark = requires_shared(KLUE_NER_DEV)


def first_lines(path, count):
  with open(path, encoding="utf-8") as reader:
    return "".join(line for line, _ in zip(reader, range(count)))


def klue_ner_sentences(count):
  """The first `count` sentences of KLUE-NER's dev file, in its layout."""
  with open(KLUE_NER_DEV, encoding="utf-8") as reader:
    blocks = [block for block in reader.read().split("\n\n") if "\t" in block]
  return "\n\n".join(blocks[:count]) + "\n"


def test_a_job_with_every_path_in_a_bucket_writes_only_there(bucket, tmp_path, monkeypatch):
  work = tmp_path / "work"  # the working directory: the old bug wrote ./ram:/... folders into it
  temporary = tmp_path / "temp"  # this process's temporary folder: staging and spill files go there, and go
  for folder in (work, temporary):
    folder.mkdir()
  monkeypatch.setattr(tempfile, "tempdir", str(temporary))
  files.make_folders(f"{bucket}/corpus")
  for name in ("ko_libreoffice_help.txt", "en_wiki.txt"):
    files.write_atomically(f"{bucket}/corpus/{name}", first_lines(os.path.join(SAMPLE, name), 600))
  files.make_folders(f"{bucket}/klue-ner")
  files.write_atomically(f"{bucket}/klue-ner/klue-ner-v1.1_train.tsv", klue_ner_sentences(16))
  files.write_atomically(f"{bucket}/klue-ner/klue-ner-v1.1_dev.tsv", klue_ner_sentences(8))

  def run(tool, *flags, status=0):
    result = run_tool(tool, *flags, cwd=work)
    assert result.returncode == status, result.stderr[-3000:]
    return result

  run("train_sentencepiece", f"--input={bucket}/corpus/*.txt", f"--model_prefix={bucket}/vocab/sp",
      "--vocab_size=1200", "--num_threads=1")
  vocab = f"{bucket}/vocab/sp.model"
  run("create_pretraining_data", f"--input_file={bucket}/corpus/*.txt", f"--output_file={bucket}/records/train.tfrecord",
      f"--spm_model_file={vocab}", f"--max_seq_length={SEQ}", f"--max_predictions_per_seq={PREDICTIONS}",
      "--dupe_factor=1", "--num_workers=1")
  config_file = f"{bucket}/albert_config.json"
  tiny_config(vocab_size=1200, num_hidden_layers=1, max_position_embeddings=SEQ).to_json_file(config_file)

  # Pretraining, killed once its first checkpoint is in the bucket (a preempted TPU VM), then run again.
  pretraining = ("run_pretraining", f"--input_file={bucket}/records/train.tfrecord", f"--output_dir={bucket}/run",
                 f"--albert_config_file={config_file}", f"--max_seq_length={SEQ}",
                 f"--max_predictions_per_seq={PREDICTIONS}", "--train_batch_size=4", "--num_train_steps=4",
                 "--save_checkpoints_steps=2", "--iterations_per_loop=1", "--do_train", "--do_eval",
                 "--max_eval_steps=1")
  save = loop.RunState.save

  def save_then_die(*args, **kwargs):
    save(*args, **kwargs)
    raise KeyboardInterrupt("the VM was preempted")

  with monkeypatch.context() as preempted:
    preempted.setattr(loop.RunState, "save", save_then_die)
    run(*pretraining, status=130)
  assert tf.train.latest_checkpoint(f"{bucket}/run").endswith("model.ckpt-2")
  resumed = run(*pretraining)
  assert f"Resuming from {bucket}/run/model.ckpt-2 at step 2." in resumed.stderr
  assert tf.train.latest_checkpoint(f"{bucket}/run").endswith("model.ckpt-4")
  assert "global_step = 4" in files.read_text(f"{bucket}/run/{run_directory.EVAL_RESULTS}")
  for name in ("albert_config.json", "checkpoint", "model.ckpt-4.index", "train", "eval"):
    assert files.exists(f"{bucket}/run/{name}"), name

  # Fine-tuning from the bucket's run folder, exported to the bucket; the pretrained model to Hugging Face.
  run("run_token_classification", "--task_name=klue-ner", f"--data_dir={bucket}/klue-ner",
      f"--init_checkpoint={bucket}/run", f"--albert_config_file={config_file}", f"--spm_model_file={vocab}",
      f"--output_dir={bucket}/ner", f"--export_dir={bucket}/export", f"--max_seq_length={SEQ}",
      "--train_batch_size=8", "--eval_batch_size=8", "--train_step=2", "--save_checkpoints_steps=2",
      "--iterations_per_loop=2")
  assert set(files.list_folder(f"{bucket}/ner")) >= {"task.json", run_directory.EVAL_RESULTS,
                                                      run_directory.BEST_CHECKPOINT_INFO, "albert_config.json"}
  # (With tokenizer files, to a bucket: tests/interop/test_huggingface_export.py.)
  run("export_hf", f"--checkpoint={bucket}/run", f"--albert_config_file={config_file}", f"--output_dir={bucket}/hf")
  assert files.list_folder(f"{bucket}/hf") == ["config.json", "model.safetensors"]

  served = tf.saved_model.load(f"{bucket}/export/1").signatures["tag_text"](text=tf.constant(["서울에서 만나요."]))
  assert served["entity_labels"].shape[0] == 1
  # TensorFlow's autograph keeps the source it generates in the temporary folder for the process's life.
  left = [name for name in os.listdir(temporary) if not name.startswith("__autograph_generated_file")]
  assert os.listdir(work) == [] and left == [] and not os.path.exists(os.path.join(REPO, "ram:"))
