"""The figures behind tests/data/test_data_mixing.py, over several seeds, for this tree or another checkout.

  python dev/measure_mixing.py --seeds=1,2,3,4,5,6,12345 [--repo=/path/to/other/checkout] [--dupe_factor=1]

1. Shards of a corpus ordered by source (all Korean text of ../shared/corpus, then all English): the Korean
   share of the records, and the worst deviation from it over every window of 1,000 consecutive records of
   each shard (sliding, and disjoint), for each seed.
2. Record sets of two separate runs (Korean-only in 2 files, English-only in 3) read together by
   `pretraining_dataset`: the fewest and most Korean records in each of the first 200 batches of 64.

--repo runs that checkout's data tool and reader (e.g. a `git worktree` of an earlier commit) on the same data.
"""

import importlib.util
import os
import subprocess
import sys
import tempfile

from absl import app
from absl import flags
import numpy as np
import tensorflow as tf

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "tests"))
from test_data_mixing import CORPUS, ENGLISH, KOREAN, PREDICTIONS, SEQ, SP8K_MODEL, hangul_pieces, is_korean  # noqa: E402

FLAGS = flags.FLAGS
flags.DEFINE_list("seeds", ["1", "2", "3", "4", "5", "6", "12345"], "Seeds of the data runs and of the reader.")
flags.DEFINE_string("repo", REPO, "The checkout whose data tool and reader are measured.")
flags.DEFINE_integer("dupe_factor", 1, "Passes of the corpus ordered by source.")


def data_tool(output_files, input_files, seed, dupe_factor):
  """That checkout's tool, with the tests' flags."""
  result = subprocess.run(
      [sys.executable, os.path.join(FLAGS.repo, "tools", "create_pretraining_data.py"),
       f"--input_file={','.join(input_files)}", f"--output_file={','.join(output_files)}",
       f"--spm_model_file={SP8K_MODEL}", f"--max_seq_length={SEQ}", f"--max_predictions_per_seq={PREDICTIONS}",
       f"--dupe_factor={dupe_factor}", f"--random_seed={seed}", "--nodo_lower_case", "--num_workers=2"],
      capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=FLAGS.repo))
  if result.returncode:
    raise RuntimeError(result.stderr)


def korean_records(path, hangul):
  features = {name: [] for name in ("input_ids", "segment_ids", "masked_lm_positions", "masked_lm_ids",
                                    "masked_lm_weights")}
  for raw in tf.data.TFRecordDataset(path).as_numpy_iterator():
    feature = tf.train.Example.FromString(raw).features.feature
    for name, values in features.items():
      values.append(getattr(feature[name], "float_list" if name == "masked_lm_weights" else "int64_list").value)
  return is_korean(*(np.array(values) for values in features.values()), hangul)


def main(argv):
  del argv
  hangul = hangul_pieces()
  work = tempfile.mkdtemp(prefix="measure_mixing-")
  corpus = os.path.join(work, "korean_then_english.txt")
  with open(corpus, "w", encoding="utf-8") as writer:
    writer.write("\n\n".join(open(os.path.join(CORPUS, name), encoding="utf-8").read().strip()
                             for name in KOREAN + ENGLISH) + "\n")
  for seed in FLAGS.seeds:
    shards = [os.path.join(work, f"ordered-{seed}-{index}.tfrecord") for index in range(2)]
    data_tool(shards, [corpus], seed, FLAGS.dupe_factor)
    flags_of_shards = [korean_records(path, hangul) for path in shards]
    share = np.concatenate(flags_of_shards).mean()
    sliding = disjoint = 0.0
    for korean in flags_of_shards:
      windows = np.convolve(korean.astype(float), np.ones(1000), "valid") / 1000
      sliding, disjoint = max(sliding, np.abs(windows - share).max()), max(disjoint, np.abs(windows[::1000] - share).max())
    print(f"ordered corpus, seed {seed}: {sum(map(len, flags_of_shards)):,} records, Korean {share:.4f}, worst "
          f"window {sliding:.4f} sliding, {disjoint:.4f} disjoint", flush=True)

  spec = importlib.util.spec_from_file_location(
      "measured_pretraining_dataset", os.path.join(FLAGS.repo, "albert_tf", "data", "pretraining_dataset.py"))
  reader = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(reader)
  sets = {"korean": ([os.path.join(work, f"korean-{i}.tfrecord") for i in range(2)], KOREAN),
          "english": ([os.path.join(work, f"english-{i}.tfrecord") for i in range(3)], ENGLISH)}
  for outputs, names in sets.values():
    data_tool(outputs, [os.path.join(CORPUS, name) for name in names], 12345, 2)
  sizes = {name: sum(1 for path in outputs for _ in tf.data.TFRecordDataset(path)) for name, (outputs, _) in sets.items()}
  share = sizes["korean"] / sum(sizes.values())
  for seed in FLAGS.seeds:
    batches = reader.pretraining_dataset(sets["korean"][0] + sets["english"][0], SEQ, PREDICTIONS, 64,
                                         seed=int(seed)).take(200)
    counts = np.array([is_korean(batch["input_word_ids"], batch["input_type_ids"], batch["masked_lm_positions"],
                                 batch["masked_lm_ids"], batch["masked_lm_weights"], hangul).sum()
                       for batch in batches.as_numpy_iterator()])
    print(f"two record sets ({sizes['korean']:,} Korean, {sizes['english']:,} English records: {share:.4f}), "
          f"reader seed {seed}: Korean records a batch {counts.min()}-{counts.max()} (expected {64 * share:.1f}), "
          f"{int(((counts == 0) | (counts == 64)).sum())} of 200 batches of one set, overall {counts.mean() / 64:.4f}",
          flush=True)


if __name__ == "__main__":
  app.run(main)
