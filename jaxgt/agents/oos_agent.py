"""Online Outcome Sampling as an agent (Lisy, Lanctot, Bowling 2015): one OOS search per move."""

from __future__ import annotations

import dataclasses

import jax

from jaxgt.agents.table_search import TableSearchAgent
from jaxgt.core.checks import check_choice
from jaxgt.core.game_tree import CompiledGame
from jaxgt.core.tables import acting_row
from jaxgt.solvers.oos import OOS, OOSState

PLAY = ("average", "current")


@dataclasses.dataclass(frozen=True, eq=False)
class OOSAgent(TableSearchAgent):
  """OOS as an online agent (Sec. 4 and 5): ``iterations`` per move, tables kept.

  The agent state is the :class:`OOSState` of the match (memory persists
  between moves, as in the paper); ``act`` searches ``iterations`` iterations
  targeted at ``history`` and plays, at the information state there, the
  average strategy ``s_I`` (``play="average"``, the paper's Sec. 4) or the
  current one, regret matching of the cumulative regrets (``play="current"``,
  what the authors' implementation plays by default). :meth:`statistics`
  exposes the sums ``s_I`` for the aggregate method. ``act`` is traceable: ``history`` may be a traced
  ``int32`` scalar and ``state`` is a fixed-shape pytree, so matches can be
  ``jit``-ed and ``vmap``-ed.
  """

  game: CompiledGame
  iterations: int = 1000
  solver: OOS = OOS()
  play: str = "average"  # "average" (s_I) or "current" (regret matching of the regrets)

  _budget = "iterations"
  _solver_type = OOS

  def __post_init__(self):
    check_choice("play", self.play, PLAY)
    super().__post_init__()

  def init(self, key: jax.Array) -> OOSState:
    del key
    return self.solver.init(self.tree)

  def act(self, key, state: OOSState, history):
    tree, members = self.search_data()
    state = self.solver.run(tree, state, self.iterations, key, history=history, members=members)
    policy = self.solver.policy if self.play == "average" else self.solver.current_policy
    return acting_row(tree, policy(tree, state), history), state

  def statistics(self, state: OOSState, player: int):
    """``player``'s average-strategy sums ``s_I`` ``[I_player, A]`` (the paper's aggregate
    method, Sec. 5.2: "s_I in OOS"), accumulated over the match's searches so far."""
    return state.cum_policy[player]
