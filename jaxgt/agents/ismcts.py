"""ISMCTS as an agent (``001``, Sec. 5.1): fresh statistics every move."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

from jaxgt.agents.table_search import TableSearchAgent
from jaxgt.core.compiler import CompiledGame
from jaxgt.core.tables import acting_row
from jaxgt.solvers.ismcts import ISMCTS


@dataclasses.dataclass(frozen=True, eq=False)
class ISMCTSAgent(TableSearchAgent):
  """ISMCTS as an online agent: ``simulations x solver.batch`` simulations per move from fresh statistics.

  The agent state counts the moves made (statistics are rebuilt at every
  move, determinized from the current information state as in Sec. 5.1).
  ``act`` is traceable (``history`` may be a traced ``int32`` scalar).
  """

  game: CompiledGame
  simulations: int = 1000
  solver: ISMCTS = ISMCTS()

  _budget = "simulations"
  _solver_type = ISMCTS
  _targeting = "ist"

  def __post_init__(self):
    super().__post_init__()
    # The empty statistics every move starts from, built once outside any trace.
    object.__setattr__(self, "_fresh", self.solver.init(self.tree))

  def init(self, key: jax.Array):
    del key
    return jnp.zeros((), jnp.int32)

  def act(self, key, state, history):
    tree = self.tree
    s = self.solver.run(tree, self._fresh, self.simulations, key, history=history,
                        members=self._members)
    legal = tuple(jnp.asarray(pt.legal) for pt in tree.players)
    cum = None if s.cum_policy is None else acting_row(tree, s.cum_policy, history)
    probs = self.solver.move_policy(acting_row(tree, s.visits, history), cum,
                                    acting_row(tree, legal, history))
    return probs, state + 1
