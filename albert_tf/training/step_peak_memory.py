"""The process `capacity.measure_peak_memory_mb` starts: one pretraining step of one micro-batch on one device, and
its peak memory.

  python -m albert_tf.training.step_peak_memory SETTINGS_JSON MICRO_BATCH

prints `peak_memory_mb: N` (`capacity.peak_memory_mb`), or exits with status `capacity.OUT_OF_MEMORY_EXIT` when the
step runs out of memory. SETTINGS_JSON is `capacity.PretrainingStepSettings.to_json()`.
"""

import sys

import tensorflow as tf

from albert_tf.training import capacity
from albert_tf.training import distribution


def main(settings_json: str, micro_batch: int):
  settings = capacity.PretrainingStepSettings.from_json(settings_json)
  strategy = distribution.get_strategy("one_device")
  try:  # the model and its optimizer's slots may be what does not fit
    _, step = settings.build(strategy)
    tf.function(lambda batch: strategy.run(step, args=(batch,)))(settings.synthetic_batch(micro_batch))
  except tf.errors.ResourceExhaustedError:
    sys.exit(capacity.OUT_OF_MEMORY_EXIT)
  print(f"peak_memory_mb: {capacity.peak_memory_mb()}")


if __name__ == "__main__":
  main(sys.argv[1], int(sys.argv[2]))
