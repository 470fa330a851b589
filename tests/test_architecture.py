"""The package's layering, checked on the source (AST), not by convention.

Layers, bottom up: ``games`` (rules only) -> ``core`` (compiler, sequence
form, public tree, evaluation, checks) -> ``solvers`` -> ``search`` ->
``agents`` -> ``evaluation``; ``nets`` sits beside ``search``. A module may
import only from its own layer and the ones below (docs/ARCHITECTURE.md).
"""

import ast
import pathlib

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parents[1] / "jaxgt"

# For each subpackage: the jaxgt subpackages it may import (besides itself).
ALLOWED = {
    "games": set(),
    "core": {"games"},
    "solvers": {"games", "core"},
    "search": {"games", "core", "solvers"},
    "nets": {"games", "core", "solvers", "search"},
    "agents": {"games", "core", "solvers", "search", "nets", "policy"},  # jaxgt.policy: core only
    "evaluation": {"games", "core", "solvers", "search", "nets", "agents", "policy"},
    # the training process (003, Algorithm 2); only jaxgt.cli imports it
    "training": {"games", "core", "solvers", "search", "nets", "agents", "evaluation", "policy",
                 "sharding"},
}


def _imports(path: pathlib.Path):
  """Every ``jaxgt.X`` target a module imports (top level or inside functions)."""
  tree = ast.parse(path.read_text(), filename=str(path))
  for node in ast.walk(tree):
    if isinstance(node, ast.Import):
      for alias in node.names:
        if alias.name.startswith("jaxgt"):
          yield node.lineno, alias.name
    elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
      if node.module == "jaxgt":
        for alias in node.names:
          yield node.lineno, f"jaxgt.{alias.name}"
      elif node.module.startswith("jaxgt."):
        yield node.lineno, node.module


def _layer(module: str) -> str:
  parts = module.split(".")
  return parts[1] if len(parts) > 1 else ""


def _violations(layer: str):
  out = []
  for path in sorted((PACKAGE / layer).rglob("*.py")):
    for lineno, target in _imports(path):
      dep = _layer(target)
      if dep and dep != layer and dep not in ALLOWED[layer]:
        out.append(f"{path.relative_to(PACKAGE.parent)}:{lineno} imports {target}")
  return out


@pytest.mark.parametrize("layer", sorted(ALLOWED))
def test_layer_imports_only_layers_below(layer):
  assert (PACKAGE / layer).is_dir(), f"jaxgt/{layer} is missing"
  assert _violations(layer) == []


def test_games_import_nothing_else_of_jaxgt():
  assert _violations("games") == []


def test_solvers_never_import_agents_evaluation_search_or_nets():
  bad = [v for v in _violations("solvers")
         if any(f"jaxgt.{x}" in v for x in ("agents", "evaluation", "search", "nets"))]
  assert bad == []


def test_only_the_cli_imports_training():
  bad = []
  for path in sorted(PACKAGE.rglob("*.py")):
    rel = path.relative_to(PACKAGE)
    if rel.parts[0] in ("training", "cli"):
      continue
    bad += [f"{rel}:{n} imports {t}" for n, t in _imports(path) if _layer(t) == "training"]
  assert bad == []


def test_the_checker_sees_a_violation(tmp_path, monkeypatch):
  # The scan must be able to fail: a solver module that imports an agent is flagged.
  fake = tmp_path / "jaxgt"
  (fake / "solvers").mkdir(parents=True)
  (fake / "solvers" / "bad.py").write_text(
      "def f():\n  from jaxgt.agents.base import Agent\n  return Agent\n")
  monkeypatch.setattr(__import__(__name__), "PACKAGE", fake)
  assert _violations("solvers") == ["jaxgt/solvers/bad.py:2 imports jaxgt.agents.base"]


def test_no_private_names_imported_across_modules():
  bad = []
  for path in sorted(PACKAGE.rglob("*.py")):
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
      if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("jaxgt"):
        for alias in node.names:
          if alias.name.startswith("_"):
            bad.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno} imports "
                       f"{node.module}.{alias.name}")
  assert bad == []
