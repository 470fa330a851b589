"""ISMCTS as an agent: fresh statistics every move.

The information-set MCTS baseline of Lisy, Lanctot and Bowling 2015, "Online Monte Carlo
Counterfactual Regret Minimization for Search in Imperfect Information Games", Sec. 5.1.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

from jaxgt import struct
from jaxgt.agents.table_search import TableSearchAgent
from jaxgt.core.game_tree import CompiledGame
from jaxgt.core.tables import acting_row
from jaxgt.solvers.ismcts import ISMCTS, ISMCTSState


@struct.dataclass
class ISMCTSAgentState:
  """What an :class:`ISMCTSAgent` keeps between its moves of a match."""

  moves: jax.Array  # [] int32 moves made
  # ([I0, A], [I1, A]) the last search's move statistics at every information state: visit
  # counts N(I, a) (final "visits" / "frequency") or mean-strategy sums (final "mean")
  statistics: tuple


@dataclasses.dataclass(frozen=True, eq=False)
class ISMCTSAgent(TableSearchAgent):
  """ISMCTS as an online agent: ``simulations x solver.batch`` simulations per move from fresh statistics.

  Statistics are rebuilt at every move, determinized from the current
  information state as in Sec. 5.1; the agent state
  (:class:`ISMCTSAgentState`) keeps the move count and the last search's
  statistics, which :meth:`statistics` exposes to the paper's aggregate method
  (visit counts at ``I`` and at every successor, Sec. 5.2). ``act`` is
  traceable (``history`` may be a traced ``int32`` scalar).
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

  def init(self, key: jax.Array) -> ISMCTSAgentState:
    del key
    return ISMCTSAgentState(moves=jnp.zeros((), jnp.int32),
                            statistics=self._move_statistics(self._fresh))

  def _move_statistics(self, s: ISMCTSState) -> tuple:
    return s.cum_policy if self.solver.final == "mean" else s.visits

  def act(self, key, state: ISMCTSAgentState, history):
    tree, members, fresh = self.search_data(self._fresh)
    s = self.solver.run(tree, fresh, self.simulations, key, history=history, members=members)
    legal = tuple(jnp.asarray(pt.legal) for pt in tree.players)
    cum = None if s.cum_policy is None else acting_row(tree, s.cum_policy, history)
    probs = self.solver.move_policy(acting_row(tree, s.visits, history), cum,
                                    acting_row(tree, legal, history))
    return probs, ISMCTSAgentState(moves=state.moves + 1, statistics=self._move_statistics(s))

  def statistics(self, state: ISMCTSAgentState, player: int):
    """``player``'s statistics ``[I_player, A]`` from the last search (visit counts, or the
    mean-strategy sums with ``final="mean"``)."""
    return state.statistics[player]
