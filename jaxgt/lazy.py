"""Packages whose public names resolve on first use (PEP 562).

A package ``__init__`` that re-exports names from its submodules imports every one of them;
:func:`exports` instead returns the module ``__getattr__`` and ``__dir__`` that import a
name's submodule when the name is first read, so importing one submodule (e.g. the
command line reading the agent grammar or the estimator names) stays cheap.
"""

from __future__ import annotations

import importlib
from typing import Callable


def exports(package: str, names: dict[str, str], namespace: dict) -> tuple[Callable, Callable]:
  """``(__getattr__, __dir__)`` for ``package`` whose public ``names`` map to the submodule
  (relative name) defining each; a resolved name is stored in ``namespace`` (the package's
  ``globals()``), so later reads do not come back here."""

  def __getattr__(name: str):
    if name not in names:
      raise AttributeError(f"module {package!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{package}.{names[name]}"), name)
    namespace[name] = value
    return value

  def __dir__() -> list[str]:
    return sorted(set(namespace) | set(names))

  return __getattr__, __dir__
