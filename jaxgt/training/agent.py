"""The Student of Games agent (Schmid et al., *Student of Games*, 2023, "Modified Continual
Re-solving"): a :class:`jaxgt.agents.gtcfr_agent.GTCFRAgent` whose leaf evaluator is the CVPN with
given parameters (the training loop's evaluations; a run's checkpoint in the agent spec
``sog(checkpoint=DIR)``, :mod:`jaxgt.training.agent_kind`).

The evaluator's ``init()`` returns the parameters held by a :class:`ParamsHolder`, so
:func:`jaxgt.search.gtcfr.search` passes them to its compiled program as data: agents that
share one evaluator (e.g. the training loop's periodic evaluations, one agent per parameter
version) share one compilation.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from jaxgt.agents.gtcfr_agent import GTCFRAgent
from jaxgt.core.game_tree import CompiledGame
from jaxgt.nets import gtcfr_evaluator
from jaxgt.nets.cvpn import CVPN
from jaxgt.search import device_tree
from jaxgt.search.evaluator import Evaluator


@dataclasses.dataclass
class ParamsHolder:
  """The network parameters an evaluator made by :func:`params_evaluator` reads."""

  params: Any = None


def params_evaluator(source: device_tree.Source, model: CVPN,
                     holder: ParamsHolder) -> Evaluator:
  """The CVPN evaluator of :func:`jaxgt.nets.gtcfr_evaluator.cvpn_evaluator` whose state is
  ``holder.params`` at each search (data, not a constant of the program)."""
  network = gtcfr_evaluator.cvpn_evaluator(source, model)
  return Evaluator(init=lambda: holder.params, apply=network.apply, name="cvpn")


def sog_agent(game: CompiledGame, model: CVPN, params, *, simulations: int, evaluator=None,
              dtype="float32", **kwargs) -> GTCFRAgent:
  """``SoG(simulations, c)`` with the network ``model`` at ``params`` (``evaluator``: a
  :func:`params_evaluator` to share; its holder is set to ``params``); ``kwargs`` are
  :class:`GTCFRAgent`'s (``expansions_per_update`` = ``c``, ``alpha``, ...)."""
  if evaluator is None:
    source = device_tree.source_from_game(game, dtype)
    evaluator = params_evaluator(source, model, ParamsHolder(params))
  return GTCFRAgent(game, simulations=simulations, evaluator=evaluator, dtype=dtype, **kwargs)

