"""Online Outcome Sampling as an agent (``001``): one OOS search per move."""

from __future__ import annotations

import dataclasses

import jax

from jaxgt.agents.table_search import TableSearchAgent
from jaxgt.core.compiler import CompiledGame
from jaxgt.core.tables import acting_row
from jaxgt.solvers.oos import OOS, OOSState


@dataclasses.dataclass(frozen=True, eq=False)
class OOSAgent(TableSearchAgent):
  """OOS as an online agent (Sec. 4 and 5): ``iterations`` per move, tables kept.

  The agent state is the :class:`OOSState` of the match (memory persists
  between moves, as in the paper); ``act`` searches ``iterations`` iterations
  targeted at ``history`` and plays the average strategy ``s_I`` at the
  information state there. :meth:`statistics` exposes the sums ``s_I``
  for the aggregate method. ``act`` is traceable: ``history`` may be a traced
  ``int32`` scalar and ``state`` is a fixed-shape pytree, so matches can be
  ``jit``-ed and ``vmap``-ed.
  """

  game: CompiledGame
  iterations: int = 1000
  solver: OOS = OOS()

  _budget = "iterations"
  _solver_type = OOS

  def init(self, key: jax.Array) -> OOSState:
    del key
    return self.solver.init(self.tree)

  def act(self, key, state: OOSState, history):
    tree, members = self.search_data()
    state = self.solver.run(tree, state, self.iterations, key, history=history, members=members)
    return acting_row(tree, self.solver.policy(tree, state), history), state

  def statistics(self, state: OOSState, player: int):
    """``player``'s average-strategy sums ``s_I`` ``[I_player, A]`` (001's aggregate method,
    Sec. 5.2: "s_I in OOS"), accumulated over the match's searches so far."""
    return state.cum_policy[player]
