"""Loading the repository's scripts (benchmarks, examples) as modules, for their tests."""

import importlib.util
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]


def load_script(relative_path: str, name: str):
  """The script at ``ROOT / relative_path`` imported as module ``name`` (registered in
  ``sys.modules``, so dataclasses resolve their annotations through it)."""
  spec = importlib.util.spec_from_file_location(name, ROOT / relative_path)
  module = importlib.util.module_from_spec(spec)
  sys.modules[name] = module
  spec.loader.exec_module(module)
  return module
