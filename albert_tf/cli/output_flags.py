"""--overwrite, defined once for every tool that writes files at a path the user names: without it, an existing
destination is refused before any work."""

from absl import flags


def define_overwrite_flag(what: str):
  """--overwrite, whose help names what it replaces (`what`, e.g. "the --output_file shards")."""
  flags.DEFINE_bool("overwrite", False, f"Replace {what} if already there; without it, an existing destination is "
                    "refused before any work and nothing is written.")
