"""The `evaluate_sts` tool: its flags, usage text and `main` are in
albert_tf/tasks/similarity/command.py."""

# First: it sets TensorFlow's log level, which TensorFlow reads once, when the task's package imports it.
from albert_tf import cli  # noqa: F401  pylint: disable=unused-import
from albert_tf.tasks.similarity.command import run_evaluate_sts as run

if __name__ == "__main__":
  run()
