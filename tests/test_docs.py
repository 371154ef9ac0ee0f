"""The documentation holds what it promises: a README front page that `.ci/run` can read, build notes at the root,
benchmarks without a diary, and commands, paths and links in README.md, BUILD_NOTES.md and docs/*.md that exist.
Text only: nothing here imports TensorFlow or albert_tf."""

import ast
import glob
import os
import re

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
README = os.path.join(REPO, "README.md")
MAX_README_LINES = 250
BUILD_NOTES = os.path.join(REPO, "BUILD_NOTES.md")
MAX_BUILD_NOTES_LINES = 200
BENCHMARKS = os.path.join(REPO, "docs", "benchmarks.md")
# A word of 7 to 40 hex digits with a letter among them: a commit, which dates a figure instead of stating it.
COMMIT_HASH = re.compile(r"\b(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b")

# Names of the albert-* form that are not commands: the distribution (`pip install albert-tf`, albert-tf[beam]) and
# a released model's folder (albert-base-v2).
NOT_COMMANDS = {"albert-tf", "albert-base-v2"}
COMMAND = re.compile(r"(?<![\w/.-])albert-[a-z0-9]+(?:-[a-z0-9]+)*(?![\w/-])")
# tools/x.py, benchmarks/x, dev/x, configs/x, not inside another path (albert_tf/cli/... or ../shared/...). A name
# may hold shell braces (configs/albert_{base,large}.json), a glob (*) or a placeholder (<name>).
CHECKED_PATH = re.compile(r"(?<![\w./-])(?:tools|benchmarks|dev|configs)/[\w.*<>-]+(?:\{[^}\s]*\}[\w.*<>-]*)*")
ALBERT_TF_PATH = re.compile(r"(?<![\w./-])albert_tf/[\w./-]*\w/?")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^(```|~~~).*?^\1\s*$", re.M | re.S)
INLINE_CODE = re.compile(r"(`+)(?:(?!\1).)+?\1", re.S)


def documents():
  """README.md, BUILD_NOTES.md and every page of docs/, as (path, text)."""
  paths = [README, BUILD_NOTES] + sorted(glob.glob(os.path.join(REPO, "docs", "*.md")))
  return [(path, open(path, encoding="utf-8").read()) for path in paths]


def relative(path):
  return os.path.relpath(path, REPO)


def setup_tools():
  """The TOOLS tuple of setup.py, read without running setup.py."""
  for node in ast.walk(ast.parse(open(os.path.join(REPO, "setup.py"), encoding="utf-8").read())):
    if isinstance(node, ast.Assign) and any(getattr(target, "id", None) == "TOOLS" for target in node.targets):
      return ast.literal_eval(node.value)
  raise AssertionError("setup.py defines no TOOLS")


def expand_braces(text):
  """Shell brace expansion of the first {a,b} group, recursively: configs/albert_{base,large}.json -> both."""
  match = re.search(r"\{([^{}]*)\}", text)
  if not match:
    return [text]
  return [expanded for choice in match.group(1).split(",")
          for expanded in expand_braces(text[:match.start()] + choice + text[match.end():])]


def first_sh_block(text):
  """The non-empty lines of the first ```sh block, as .ci/run's awk reads them."""
  lines, inside = [], False
  for line in text.splitlines():
    if not inside and line == "```sh":
      inside = True
    elif inside and line == "```":
      return lines
    elif inside and line.strip():
      lines.append(line)
  raise AssertionError("README.md has no closed ```sh block")


def github_anchor(heading):
  """The anchor GitHub gives a heading: formatting dropped, lower case, punctuation but - and _ removed, spaces
  to hyphens."""
  text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)
  text = text.replace("`", "").strip().lower()
  text = re.sub(r"[^\w\- ]", "", text)
  return text.replace(" ", "-")


def anchors(text):
  """The anchors of a Markdown text's headings (outside code blocks), duplicates numbered as GitHub does."""
  found, seen = set(), {}
  for line in FENCE.sub("", text).splitlines():
    match = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
    if not match:
      continue
    anchor = github_anchor(match.group(1))
    count = seen.get(anchor, 0)
    seen[anchor] = count + 1
    found.add(anchor if count == 0 else f"{anchor}-{count}")
  return found


def test_readme_is_a_front_page():
  with open(README, encoding="utf-8") as readme:
    count = sum(1 for _ in readme)
  assert count <= MAX_README_LINES, f"README.md has {count} lines; move sections to docs/ (at most {MAX_README_LINES})"


def test_build_notes_are_at_the_root_and_short():
  assert os.path.exists(BUILD_NOTES), "BUILD_NOTES.md belongs beside setup.py"
  with open(BUILD_NOTES, encoding="utf-8") as notes:
    count = sum(1 for _ in notes)
  assert count <= MAX_BUILD_NOTES_LINES, f"BUILD_NOTES.md has {count} lines (at most {MAX_BUILD_NOTES_LINES})"


def test_benchmarks_name_no_commit():
  hashes = sorted(set(COMMIT_HASH.findall(open(BENCHMARKS, encoding="utf-8").read())))
  assert not hashes, "docs/benchmarks.md names commits (state each figure with its command): " + ", ".join(hashes)


def test_readmes_first_sh_block_is_the_setup_and_the_test_command():
  """.ci/run runs the first line of the README's first ```sh block to set up (and run the demo), the second to
  test."""
  commands = first_sh_block(open(README, encoding="utf-8").read())
  assert len(commands) == 2, commands
  setup, tests = commands
  assert "pip install" in setup and "albert_tf.cli.demo" in setup, setup
  assert "-m pytest" in tests and tests.rstrip().endswith("tests"), tests


def test_every_command_named_exists():
  commands = {f"albert-{name.replace('_', '-')}" for name in setup_tools()} | {"albert-demo"}
  missing = []
  for path, text in documents():
    for name in sorted(set(COMMAND.findall(text)) - NOT_COMMANDS):
      if name not in commands:
        missing.append(f"{relative(path)}: {name}")
  assert not missing, "commands not in setup.py's TOOLS: " + ", ".join(missing)


def test_setup_installs_a_command_for_each_tool_and_no_other():
  # setup.py's TOOLS is the one list of the console scripts (albert-<name>, albert_tf_tools.<name>:run).
  tools = sorted(name[:-3] for name in os.listdir(os.path.join(REPO, "tools")) if name.endswith(".py")
                 and name != "__init__.py")
  assert sorted(setup_tools()) == tools


def test_the_readme_lists_every_command():
  readme = open(README, encoding="utf-8").read()
  named = set(COMMAND.findall(readme))
  commands = {f"albert-{name.replace('_', '-')}" for name in setup_tools()} | {"albert-demo"}
  missing = sorted(commands - named)
  assert not missing, "commands the README does not list: " + ", ".join(missing)


def test_every_tools_benchmarks_dev_and_configs_path_named_exists():
  checked, missing = 0, []
  for path, text in documents():
    for named in sorted(set(CHECKED_PATH.findall(text))):
      named = named.rstrip(".")
      for candidate in expand_braces(re.sub(r"<[^>]*>", "*", named)):
        checked += 1
        pattern = os.path.join(REPO, candidate)
        if not (glob.glob(pattern) if "*" in candidate else os.path.exists(pattern)):
          missing.append(f"{relative(path)}: {candidate}")
  assert checked > 20
  assert not missing, "paths that do not exist: " + ", ".join(missing)


def test_every_albert_tf_path_named_exists():
  # adding-a-task.md's example is the package a new task would be.
  examples = {"albert_tf/tasks/ner"}
  checked, missing = 0, []
  for path, text in documents():
    for named in sorted(set(ALBERT_TF_PATH.findall(text))):
      named = named.rstrip("/.")
      if any(named == example or named.startswith(f"{example}/") for example in examples):
        continue
      checked += 1
      if not os.path.exists(os.path.join(REPO, named)):
        missing.append(f"{relative(path)}: {named}")
  assert checked > 30
  assert not missing, "paths that do not exist: " + ", ".join(missing)


def test_every_relative_link_resolves():
  checked, broken = 0, []
  for path, text in documents():
    prose = INLINE_CODE.sub("", FENCE.sub("", text))
    for target in LINK.findall(prose):
      if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
        continue
      checked += 1
      file_part, _, anchor = target.partition("#")
      linked = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) if file_part else path
      if not os.path.exists(linked):
        broken.append(f"{relative(path)}: {target} (no such file)")
      elif anchor and linked.endswith(".md") and anchor not in anchors(open(linked, encoding="utf-8").read()):
        broken.append(f"{relative(path)}: {target} (no such heading)")
  assert checked > 20
  assert not broken, "broken links: " + ", ".join(broken)


def test_every_page_links_back_to_the_readme():
  pages = [(path, text) for path, text in documents() if path != README]
  assert pages
  for path, text in pages:
    back = os.path.relpath(README, os.path.dirname(path))
    assert f"]({back})" in text, f"{relative(path)} does not link back to the README"


def test_the_readme_links_the_build_notes():
  assert "](BUILD_NOTES.md)" in open(README, encoding="utf-8").read()


@pytest.mark.parametrize("text, hashes", [
    ("at `027425d`, 1,406 s", ["027425d"]),
    ("784.8 s, 1,016 passed, 20260101 and 1234567", []),
    ("the commit 88f018c5e0a1b2c3d4e5f60718293a4b5c6d7e8f", ["88f018c5e0a1b2c3d4e5f60718293a4b5c6d7e8f"]),
])
def test_commit_hash(text, hashes):
  assert COMMIT_HASH.findall(text) == hashes


@pytest.mark.parametrize("text, expected", [
    ("configs/albert_{base,large}.json", ["configs/albert_base.json", "configs/albert_large.json"]),
    ("tools/run_squad_v1.py", ["tools/run_squad_v1.py"]),
])
def test_expand_braces(text, expected):
  assert expand_braces(text) == expected


def test_github_anchor():
  assert github_anchor("Converting Google's and Hugging Face's checkpoints") == (
      "converting-googles-and-hugging-faces-checkpoints")
  assert github_anchor("Fine-tuning: classification and regression (`run_classifier`)") == (
      "fine-tuning-classification-and-regression-run_classifier")
