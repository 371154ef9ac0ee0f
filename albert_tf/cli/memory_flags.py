"""The flags that trade compute for memory in the tools that train: gradient accumulation and activation
recomputation (neither is in Google's code), and the memory that the search for the largest micro-batch may use."""

from absl import flags


def define_memory_flags():
  """--gradient_accumulation_steps and --recompute_grad."""
  flags.DEFINE_integer(
      "gradient_accumulation_steps", 1, "Split each replica's share of --train_batch_size into this many "
      "micro-batches, run one after another, and apply their summed gradients once: --train_batch_size stays the "
      "examples of one optimizer step (so learning rates keep their meaning) while memory holds one micro-batch.")
  flags.DEFINE_bool("recompute_grad", False, "Recompute each application of the shared Transformer block in the "
                    "backward pass instead of keeping its activations: the same gradients, less memory, about a "
                    "third more compute.")


def define_memory_limit_flag():
  """--memory_limit_mb, the bound of --find_max_micro_batch."""
  flags.DEFINE_integer("memory_limit_mb", None, "--find_max_micro_batch: the memory a step may use, in MB (on a GPU, "
                       "default: what the GPU has; elsewhere required: on the CPU a step grows into swap rather than "
                       "running out of memory).")
