"""The package's layering, checked on the source (AST), not by convention.

Layers, bottom up: ``games`` (rules only) -> ``core`` (compiler, sequence
form, public tree, evaluation, checks) -> ``solvers`` -> ``search`` ->
``agents`` -> ``evaluation`` -> ``training``; ``nets`` sits beside ``search``,
the top-level modules (``policy``, ``solving``, ``sharding``, ``bench_report``)
where their imports put them, and ``cli`` above everything. A module may import
only from its own layer and the ones below (docs/ARCHITECTURE.md). Every
module of the package belongs to a layer; imports inside functions and imports
by name (``importlib.import_module("jaxgt....")``) count; no modules import
each other, directly or through others.
"""

import ast
import pathlib

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parents[1] / "jaxgt"

_BELOW_AGENTS = {"games", "core", "solvers", "search", "nets", "policy"}
# For each layer (a subpackage or a top-level module): the layers it may import (besides itself).
ALLOWED = {
    "games": set(),
    "core": {"games"},
    "policy": {"games", "core"},  # the saved tabular policy
    "solvers": {"games", "core"},
    "solving": {"games", "core", "solvers", "policy"},  # solve() with progress
    "search": {"games", "core", "solvers"},
    "sharding": {"games", "core", "solvers", "search"},  # meshes and batches over devices
    "nets": {"games", "core", "solvers", "search"},
    "agents": _BELOW_AGENTS,
    "evaluation": _BELOW_AGENTS | {"agents"},
    # the training process (Student of Games, Algorithm 2); only jaxgt.cli imports it
    "training": _BELOW_AGENTS | {"agents", "evaluation", "sharding"},
    "bench_report": set(),  # the benchmark protocol (plain Python)
    "cli": {"games", "core", "policy", "solvers", "solving", "search", "sharding", "nets",
            "agents", "evaluation", "training", "bench_report"},
    "": {"games", "core", "policy", "solvers", "solving"},  # jaxgt/__init__.py: the public names
    "__main__": {"cli"},  # python -m jaxgt
    "extras": set(),  # the optional dependencies (plain Python), importable from every layer
    "struct": set(),  # pytree dataclasses (JAX only), importable from every layer
    "lazy": set(),  # packages' names resolved on first use (plain Python), from every layer
}
for _layer_name in ALLOWED:
  if _layer_name not in ("extras", "struct", "lazy"):
    ALLOWED[_layer_name] = ALLOWED[_layer_name] | {"extras", "struct", "lazy"}


def _modules(package: pathlib.Path) -> dict:
  """``{dotted module name: path}`` of every module of the package."""
  out = {}
  for path in sorted(package.rglob("*.py")):
    parts = list(path.relative_to(package.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
      parts.pop()
    out[".".join(parts)] = path
  return out


def _imports(path: pathlib.Path):
  """Every ``jaxgt.X`` target a module imports: top level or inside functions, and by name
  (a constant string passed to ``import_module`` or ``__import__``)."""
  tree = ast.parse(path.read_text(), filename=str(path))
  for node in ast.walk(tree):
    if isinstance(node, ast.Import):
      for alias in node.names:
        if alias.name.startswith("jaxgt"):
          yield node.lineno, alias.name
    elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
      if node.module == "jaxgt" or node.module.startswith("jaxgt."):
        for alias in node.names:  # a submodule (from jaxgt.x import y) or a name of the module
          yield node.lineno, f"{node.module}.{alias.name}"
    elif isinstance(node, ast.Call) and _imports_by_name(node.func) and node.args:
      arg = node.args[0]
      if isinstance(arg, ast.Constant) and isinstance(arg.value, str) \
          and arg.value.split(".")[0] == "jaxgt":
        yield node.lineno, arg.value


def _imports_by_name(func) -> bool:
  name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
  return name in ("import_module", "__import__")


def _target(module: str, modules: dict) -> str:
  """The module an import target names: ``jaxgt.a.b`` if it is one, else its parent."""
  return module if module in modules else module.rpartition(".")[0]


def _layer(module: str) -> str:
  parts = module.split(".")
  return parts[1] if len(parts) > 1 else ""


def _violations(layer: str, package: pathlib.Path | None = None):
  package = package or PACKAGE
  modules = _modules(package)
  out = []
  for name, path in modules.items():
    if _layer(name) != layer:
      continue
    for lineno, target in _imports(path):
      target = _target(target, modules)
      dep = _layer(target)
      if dep and dep != layer and dep not in ALLOWED[layer]:
        out.append(f"{path.relative_to(package.parent)}:{lineno} imports {target}")
  return out


def _cycles(package: pathlib.Path) -> list:
  """The groups of modules that import each other (strongly connected components of more than
  one module, or a module importing itself), each sorted."""
  modules = _modules(package)
  graph = {name: sorted({_target(t, modules) for _, t in _imports(path)} & set(modules))
           for name, path in modules.items()}
  index, low, stack, on_stack, groups = {}, {}, [], set(), []

  def visit(v):  # Tarjan's algorithm
    index[v] = low[v] = len(index)
    stack.append(v)
    on_stack.add(v)
    for w in graph[v]:
      if w not in index:
        visit(w)
        low[v] = min(low[v], low[w])
      elif w in on_stack:
        low[v] = min(low[v], index[w])
    if low[v] == index[v]:
      group = []
      while not group or group[-1] != v:
        group.append(stack.pop())
        on_stack.discard(group[-1])
      if len(group) > 1 or v in graph[v]:
        groups.append(sorted(group))

  for v in graph:
    if v not in index:
      visit(v)
  return sorted(groups)


def test_every_module_belongs_to_a_layer():
  assert sorted({_layer(m) for m in _modules(PACKAGE)} - set(ALLOWED)) == []


@pytest.mark.parametrize("layer", sorted(ALLOWED))
def test_layer_imports_only_layers_below(layer):
  assert any(_layer(m) == layer for m in _modules(PACKAGE)), f"layer {layer!r} has no module"
  assert _violations(layer) == []


def test_games_import_nothing_else_of_jaxgt():
  assert _violations("games") == []


def test_solvers_never_import_agents_evaluation_search_or_nets():
  bad = [v for v in _violations("solvers")
         if any(f"jaxgt.{x}" in v for x in ("agents", "evaluation", "search", "nets"))]
  assert bad == []


def test_only_the_cli_imports_training():
  bad = []
  modules = _modules(PACKAGE)
  for name, path in modules.items():
    if _layer(name) in ("training", "cli"):
      continue
    bad += [f"{name}:{n} imports {t}" for n, t in _imports(path)
            if _layer(_target(t, modules)) == "training"]
  assert bad == []


def test_no_import_cycles():
  assert _cycles(PACKAGE) == []


def _fake_package(tmp_path, files: dict) -> pathlib.Path:
  fake = tmp_path / "jaxgt"
  for rel, text in files.items():
    (fake / rel).parent.mkdir(parents=True, exist_ok=True)
    (fake / rel).write_text(text)
  return fake


def test_the_checker_sees_a_violation(tmp_path):
  # The scan must be able to fail: a solver module that imports an agent is flagged, and so is
  # an agent module importing training by name.
  fake = _fake_package(tmp_path, {
      "solvers/bad.py": "def f():\n  from jaxgt.agents.base import Agent\n  return Agent\n",
      "agents/base.py": "",
      "agents/by_name.py": "import importlib\n\ndef f():\n"
                           "  return importlib.import_module('jaxgt.training.agent')\n",
      "training/agent.py": ""})
  assert _violations("solvers", fake) == ["jaxgt/solvers/bad.py:2 imports jaxgt.agents.base"]
  assert _violations("agents", fake) == [
      "jaxgt/agents/by_name.py:4 imports jaxgt.training.agent"]


def test_the_checker_sees_a_cycle(tmp_path):
  # training/agent imports loop inside a function, loop imports agent: a cycle.
  fake = _fake_package(tmp_path, {
      "training/__init__.py": "",
      "training/agent.py": "def f():\n  from jaxgt.training import loop\n  return loop\n",
      "training/loop.py": "from jaxgt.training.agent import f\n",
      "training/other.py": "from jaxgt.training import agent\n"})
  assert _cycles(fake) == [["jaxgt.training.agent", "jaxgt.training.loop"]]


def test_no_package_name_hides_a_module():
  # ``from jaxgt.x import y`` in a package's __init__ binds y over the submodule of that name
  # (``import jaxgt.m as m`` would then give the function), so no such name may shadow one.
  modules = _modules(PACKAGE)
  bad = []
  for name, path in modules.items():
    if path.name != "__init__.py":
      continue
    for node in ast.walk(ast.parse(path.read_text())):
      if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
        for alias in node.names:
          bound = f"{name}.{alias.asname or alias.name}"
          if bound in modules and f"{node.module}.{alias.name}" != bound:
            bad.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno} binds {bound}")
  assert bad == []


# Module names used at two layers force importers to alias them; none is left (the agents'
# modules are ``*_agent``), and none may come back. ``base`` and the command modules of
# ``cli`` (named after their commands) are exempt.
SHARED_NAMES: set = set()


def test_module_names_shared_across_layers_only_shrink():
  layers_of = {}
  for name in _modules(PACKAGE):
    parts = name.split(".")
    if len(parts) > 1 and parts[1] != "cli" and parts[-1] not in ("base", "__main__"):
      layers_of.setdefault(parts[-1], set()).add(_layer(name))
  shared = {stem for stem, layers in layers_of.items() if len(layers) > 1}
  assert shared <= SHARED_NAMES


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


def test_the_command_lines_start_imports_no_solver_agent_or_evaluation_module():
  """Building the command line's parser (every subcommand's flags and choices) imports none of
  the heavy modules a command needs only when it runs: agents, searches, solvers, matches,
  importance sampling, training (a fresh interpreter)."""
  import subprocess
  import sys
  heavy = ("jaxgt.evaluation.importance", "jaxgt.evaluation.match", "jaxgt.agents.specs",
           "jaxgt.agents.oos_agent", "jaxgt.search.gtcfr", "jaxgt.solvers.oos",
           "jaxgt.training.loop")
  code = ("import sys\nfrom jaxgt.cli import main\ntry:\n  main(['--version'])\n"
          "except SystemExit:\n  pass\n"
          f"print([m for m in {heavy!r} if m in sys.modules])")
  out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
  assert out.stdout.strip().splitlines()[-1] == "[]", out.stdout
