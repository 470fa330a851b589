"""The trained Student of Games agent ``sog(checkpoint=DIR, simulations=S,
expansions_per_update=c)`` (``003``, "Modified Continual Re-solving"): a
:class:`jaxgt.agents.gtcfr.GTCFRAgent` whose leaf evaluator is the CVPN with a training
run's parameters.

The evaluator's ``init()`` returns the parameters held by a :class:`ParamsHolder`, so
:func:`jaxgt.search.gtcfr.search` passes them to its compiled program as data: agents that
share one evaluator (e.g. the training loop's periodic evaluations, one agent per parameter
version) share one compilation.
"""

from __future__ import annotations

import dataclasses
import pathlib
from typing import Any

from jaxgt.agents.gtcfr import GTCFRAgent
from jaxgt.core.compiler import CompiledGame
from jaxgt.nets import gtcfr_evaluator
from jaxgt.nets.cvpn import CVPN
from jaxgt.search import device_tree
from jaxgt.search.evaluator import Evaluator
from jaxgt.search.gadget import DEFAULT_ALPHA


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


def sog_agent(game: CompiledGame, model: CVPN, params, *, simulations: int,
              expansions_per_update: float = 1.0, evaluator=None,
              alpha: float | None = DEFAULT_ALPHA, dtype="float32", **kwargs) -> GTCFRAgent:
  """``SoG(simulations, expansions_per_update)`` with the network ``model`` at ``params``
  (``evaluator``: a :func:`params_evaluator` to share; its holder is set to ``params``)."""
  if evaluator is None:
    source = device_tree.source_from_game(game, dtype)
    evaluator = params_evaluator(source, model, ParamsHolder(params))
  agent = GTCFRAgent(game, simulations=simulations, expansions_per_update=expansions_per_update,
                     evaluator=evaluator, alpha=alpha, dtype=dtype, **kwargs)
  return agent


def sog(game: CompiledGame, *, checkpoint: str, simulations: int = 100,
        expansions_per_update: float = 1.0, dtype: str = "float32") -> GTCFRAgent:
  """The agent-spec factory: the newest checkpoint of the training run in ``checkpoint``
  (a ``jaxgt train --out`` directory) as ``SoG(simulations, expansions_per_update)``, its
  node values averaged as in the run (``TrainConfig.value_average``); ``ValueError`` for a
  missing run or a run of another game."""
  from jaxgt.training import loop  # the loop's restore owns the checkpoint layout
  run = loop.load_run(pathlib.Path(checkpoint), game)
  return sog_agent(game, run.model, run.params, simulations=simulations,
                   expansions_per_update=expansions_per_update, dtype=dtype,
                   value_average=run.config.value_average)

