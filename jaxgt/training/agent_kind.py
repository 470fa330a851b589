"""The agent kind ``sog(checkpoint=DIR, simulations=S, expansions_per_update=c)``: the newest
checkpoint of a training run as a Student of Games agent (Schmid et al., *Student of Games*,
2023).

Registration flows upwards: ``agents`` never imports ``training``; importing
:mod:`jaxgt.training` adds this kind to the catalogue (:func:`register`, which the command line
also calls before it lists or parses specs). The loop is imported only when an agent is built,
so listing the kinds stays cheap.
"""

from __future__ import annotations

import os
import pathlib

from jaxgt.agents.gtcfr_agent import GTCFRAgent
from jaxgt.agents.spec_grammar import Doc, params_from
from jaxgt.agents.specs import DTYPE, AgentKind, register_agent
from jaxgt.core.game_tree import CompiledGame
from jaxgt.games.device import DeviceGame
from jaxgt.extras import require
from jaxgt.search.gadget import check_alpha
from jaxgt.search.gtcfr_config import VALUE_AVERAGES
from jaxgt.training.agent import sog_agent


def sog(game: CompiledGame | DeviceGame, *, checkpoint: str, simulations: int = 100,
        value_average: str | None = None, capacity: int | None = None,
        alpha: float | None = None, **options):
  """The newest checkpoint of the training run in ``checkpoint`` (a ``jaxgt train --out``
  directory) as ``SoG(simulations, c)``, its node values averaged as ``value_average`` says
  (default ``None``: as in the run, ``TrainConfig.value_average``: ``"node"``, or
  ``"search"`` for a run saved before ``"node"`` became the default); ``capacity``: the search
  tree's nodes (default: what ``simulations`` can add); ``options`` are
  :func:`~jaxgt.training.agent.sog_agent`'s (``expansions_per_update`` = ``c``, ``dtype``);
  ``alpha``: the re-solving gadget's (default ``None``: the run's, ``TrainConfig.alpha``).
  On a device game (played through its rules) the agent is
  :func:`~jaxgt.training.device_run.device_sog_agent` with the run's network on the tree grown
  from the rules (continual re-solving unless ``resolve=False``). ``ValueError`` for a missing
  run or a run of another game."""
  if isinstance(game, DeviceGame):
    from jaxgt.training import device_run
    model, params, config = device_run.load_network(pathlib.Path(checkpoint), game)
    return device_run.device_sog_agent(game, model, params, simulations=simulations,
                                       value_average=value_average or config.value_average,
                                       capacity=capacity,
                                       alpha=config.alpha if alpha is None else alpha, **options)
  from jaxgt.training import loop  # the loop's restore owns the checkpoint layout
  run = loop.load_run(pathlib.Path(checkpoint), game)
  return sog_agent(game, run.model, run.params, simulations=simulations,
                   value_average=value_average or run.config.value_average, capacity=capacity,
                   alpha=run.config.alpha if alpha is None else alpha, **options)


def check_run_dir(checkpoint: str, alpha: float | None = None, **params) -> None:
  """Raises ``ValueError`` unless ``checkpoint`` is a directory and ``alpha`` is none or in
  ``[0, 1]``, ``ImportError`` naming the ``train`` extra without orbax-checkpoint (before any
  game is loaded)."""
  del params
  check_alpha(alpha)
  if not os.path.isdir(checkpoint):
    raise ValueError(f"no training run directory {checkpoint!r} (jaxgt train --out)")
  require("train", "the sog agent (its checkpoint)")


def register() -> AgentKind:
  """Registers the kind ``sog`` in the catalogue (again, if it is there); returns it."""
  return register_agent(
      "sog", sog,
      params_from(sog, sog_agent, GTCFRAgent, checkpoint="a jaxgt train --out directory (its newest checkpoint)",
                  simulations=Doc("expansion simulations per search, s in SoG(s, c)", minimum=1),
                  expansions_per_update="c: simulations per regret update",
                  value_average=Doc("node values averaged over the node's or the search's "
                                    "iterations (default: the run's)",
                                    choices=VALUE_AVERAGES),
                  capacity=Doc("search tree nodes (none: what simulations can add; a game played "
                               "through its rules needs the longest branch after the deals)",
                               minimum=1),
                  alpha=Doc("the re-solving gadget's alpha in [0, 1] (default: the run's)"),
                  dtype=DTYPE),
      "Student of Games (Schmid et al. 2023): GT-CFR with a trained CVPN as leaf evaluator, "
      "continual re-solving (also on a game played through its rules)",
      check=check_run_dir)


register()
