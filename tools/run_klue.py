"""The `run_klue` tool: its flags, usage text and `main` are in albert_tf/tasks/klue/command.py."""

# First: it sets TensorFlow's log level, which TensorFlow reads once, when the task's package imports it.
from albert_tf import cli  # noqa: F401  pylint: disable=unused-import
from albert_tf.tasks.klue.command import run

if __name__ == "__main__":
  run()
