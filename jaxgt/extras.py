"""The optional dependencies of jaxgt and the extras that install them.

``import jaxgt`` and the commands that need none of them work without them:

* ``train`` (``pip install 'jaxgt[train]'``, orbax-checkpoint): ``jaxgt train``, network
  checkpoints (:mod:`jaxgt.training.checkpoint`) and the agents that load them
  (``sog(checkpoint=DIR)``);
* ``plot`` (matplotlib): every ``--plot`` of the command line and the ``plot`` functions;
* ``openspiel`` (open_spiel): ``openspiel:`` games, checks in lockstep with OpenSpiel and
  policies as OpenSpiel objects.

A path that needs a missing one raises :class:`MissingExtraError` (an ``ImportError``) naming
the install command, before it starts its work.
"""

from __future__ import annotations

import importlib

EXTRAS = {
    "train": ("orbax.checkpoint", "orbax-checkpoint"),
    "plot": ("matplotlib", "matplotlib"),
    "openspiel": ("pyspiel", "open_spiel"),
}
"""Each extra's ``(module imported, package installed)``."""


class MissingExtraError(ImportError):
  """An optional dependency is not installed; the message names the extra that installs it."""


def require(extra: str, purpose: str):
  """The module of ``extra``'s package (``orbax.checkpoint``, ``matplotlib`` or ``pyspiel``),
  imported; :class:`MissingExtraError` saying that ``purpose`` needs it and naming
  ``pip install 'jaxgt[extra]'`` when it cannot be imported."""
  if extra not in EXTRAS:
    raise ValueError(f"unknown extra {extra!r}; known: {', '.join(EXTRAS)}")
  module, package = EXTRAS[extra]
  try:
    return importlib.import_module(module)
  except ImportError as e:
    raise MissingExtraError(f"{purpose} needs {package}, which is not installed: "
                            f"pip install 'jaxgt[{extra}]'") from e
