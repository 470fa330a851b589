"""The manual's code: every example script starts and lists its options, the README keeps the
lines CI reads, and (slow) every Python block of the README and the user guides runs."""

import os
import pathlib
import re
import subprocess
import sys
import textwrap

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
GUIDES = ("README.md", "docs/games.md", "docs/solving.md", "docs/subgames.md", "docs/gtcfr.md",
          "docs/search.md", "docs/evaluation.md", "docs/sharding.md")
EXAMPLES = sorted(p.name for p in (ROOT / "examples").glob("*.py"))

# Runs every example as __main__ with --help in one process (one JAX import for all of them)
# and prints the ones that did not exit cleanly with a usage text.
HELP_DRIVER = """
import contextlib, io, runpy, sys
failed = []
for path in sys.argv[1:]:
  sys.argv = [path, "--help"]
  out = io.StringIO()
  try:
    with contextlib.redirect_stdout(out):
      runpy.run_path(path, run_name="__main__")
    code = 0
  except SystemExit as e:
    code = e.code
  except Exception as e:  # an import or definition error of the script
    code = repr(e)
  if code not in (0, None) or not out.getvalue().startswith("usage:"):
    failed.append(f"{path}: {code}")
print("FAILED" if failed else "OK", *failed, sep="\\n")
"""


def python_blocks(path: str) -> list[str]:
  """The fenced ``python`` blocks of a Markdown file, dedented (a block may sit in a list)."""
  text = (ROOT / path).read_text()
  return [textwrap.dedent(indent_and_body[1])
          for indent_and_body in re.findall(r"^( *)```python\n(.*?)^\1```", text, re.S | re.M)]


def _env(**extra) -> dict:
  path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
  return dict(os.environ, PYTHONPATH=path, MPLBACKEND="Agg", **extra)


def test_every_example_starts_and_prints_its_usage():
  scripts = [str(ROOT / "examples" / name) for name in EXAMPLES]
  out = subprocess.run([sys.executable, "-c", HELP_DRIVER, *scripts], env=_env(),
                       capture_output=True, text=True, timeout=300)
  assert out.returncode == 0, out.stderr[-2000:]
  assert out.stdout.strip() == "OK", out.stdout


def test_readme_opens_with_the_two_commands_ci_reads():
  lines = (ROOT / "README.md").read_text().splitlines()
  assert lines[0] == "# jaxgt" and lines[2] == "```bash"
  assert lines[3].startswith("# Install and run the demo")
  i = lines.index("# Install and run the tests")
  assert "pytest" in lines[i + 1] and len(lines) <= 320


def test_every_guide_has_python_blocks_to_run():
  assert all(python_blocks(g) for g in GUIDES)


@pytest.mark.slow
@pytest.mark.parametrize(("guide", "index"),
                         [(g, i) for g in GUIDES for i in range(len(python_blocks(g)))])
def test_python_block_of_the_manual_runs(guide, index, tmp_path):
  """Each block in a fresh process (some enable float64), in an empty folder (some save
  files), with 4 emulated CPU devices (the sharding guide)."""
  code = python_blocks(guide)[index]
  out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True,
                       env=_env(XLA_FLAGS="--xla_force_host_platform_device_count=4"),
                       timeout=1200)
  assert out.returncode == 0, f"{guide} block {index}:\n{code}\n{out.stderr[-3000:]}"
