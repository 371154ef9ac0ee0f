"""Choosing a `tf.distribute.Strategy`: one device, local GPUs, several hosts, or a Cloud TPU."""

import json
import os
from typing import Optional

import tensorflow as tf

from albert_tf.errors import OptionError

STRATEGY_TYPES = ("one_device", "mirrored", "multi_worker_mirrored", "tpu")


def get_strategy(strategy_type: str, tpu_name: Optional[str] = None, tpu_zone: Optional[str] = None,
                 gcp_project: Optional[str] = None) -> tf.distribute.Strategy:
  """Builds the strategy a training run asks for.

  Args:
    strategy_type: `one_device` (the first GPU, else the CPU), `mirrored` (every local GPU, or the CPU
      devices when there is none), `multi_worker_mirrored` (hosts described by the `TF_CONFIG` environment
      variable), or `tpu` (the Cloud TPU `tpu_name`, as Google's `--tpu_name/--tpu_zone/--gcp_project`).
    tpu_name, tpu_zone, gcp_project: locate the TPU; `tpu_name` may also be a `grpc://` address, or empty
      on a TPU VM.

  Raises:
    ValueError: an unknown strategy type, or `multi_worker_mirrored` without a valid `TF_CONFIG`.
  """
  if strategy_type == "one_device":
    gpus = tf.config.list_logical_devices("GPU")
    return tf.distribute.OneDeviceStrategy(gpus[0].name if gpus else "/cpu:0")
  if strategy_type == "mirrored":
    gpus = tf.config.list_logical_devices("GPU")
    devices = [d.name for d in gpus] or [d.name for d in tf.config.list_logical_devices("CPU")]
    return tf.distribute.MirroredStrategy(devices)
  if strategy_type == "multi_worker_mirrored":
    try:
      tf_config = json.loads(os.environ.get("TF_CONFIG", ""))
    except ValueError:
      tf_config = None
    if not isinstance(tf_config, dict) or "cluster" not in tf_config or "task" not in tf_config:
      raise OptionError("--strategy_type=multi_worker_mirrored needs the TF_CONFIG environment variable "
                       "(a JSON object with 'cluster' and 'task').")
    return tf.distribute.MultiWorkerMirroredStrategy()
  if strategy_type == "tpu":
    try:
      resolver = tf.distribute.cluster_resolver.TPUClusterResolver(
          tpu=tpu_name or "", zone=tpu_zone, project=gcp_project)
      tf.config.experimental_connect_to_cluster(resolver)
      tf.tpu.experimental.initialize_tpu_system(resolver)
    # These calls fail only when the TPU cannot be found or used, each with its own error type: Google auth's
    # (no credentials), URLError or HTTP errors from the Cloud TPU API, TensorFlow's from connecting.
    except Exception as error:  # pylint: disable=broad-except
      where = f"--tpu_name={tpu_name!r}" if tpu_name else "the TPU of this VM (no --tpu_name)"
      raise OptionError(f"Cannot reach {where} (--tpu_zone={tpu_zone}, --gcp_project={gcp_project}): check "
                        f"those flags and that this machine may use the TPU. {type(error).__name__}: "
                        f"{str(error).splitlines()[0] if str(error) else ''}") from None
    return tf.distribute.TPUStrategy(resolver)
  raise OptionError(f"Unknown --strategy_type {strategy_type!r}; expected one of {', '.join(STRATEGY_TYPES)}.")


def is_chief(strategy: tf.distribute.Strategy) -> bool:
  """Whether this process writes the shared outputs (checkpoints, summaries, configs)."""
  resolver = getattr(strategy, "cluster_resolver", None)
  if resolver is None or not isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):
    return True
  return resolver.task_type in (None, "chief") or (
      resolver.task_type == "worker" and resolver.task_id == 0 and
      "chief" not in resolver.cluster_spec().as_dict())


def num_input_pipelines(strategy: tf.distribute.Strategy) -> int:
  """Input pipelines `distribute_datasets_from_function` creates: one per host (worker or TPU host)."""
  if isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):
    cluster = strategy.cluster_resolver.cluster_spec().as_dict()
    return max(1, len(cluster.get("worker", [])) + len(cluster.get("chief", [])))
  if isinstance(strategy, tf.distribute.TPUStrategy):
    return strategy.extended.num_hosts
  return 1
