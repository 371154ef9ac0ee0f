"""Multiple choice, Google's `run_race`: RACE's files, `AlbertMultipleChoice`, its objective and serving."""

from albert_tf.tasks.race import head  # noqa: F401 (registers the multiple-choice head)
