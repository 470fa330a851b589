"""(Smooth) UCT self-play search as an agent (Heinrich and Silver 2015, "Smooth UCT Search in
Computer Poker")."""

from __future__ import annotations

import dataclasses

import jax
import numpy as np

from jaxgt.agents.base import Agent
from jaxgt.core.game_tree import CompiledGame
from jaxgt.core.tables import acting_row
from jaxgt.solvers.uct import UCTSolver, UCTState, smooth_uct


@dataclasses.dataclass(frozen=True, eq=False)
class UCTAgent(Agent):
  """(Smooth) UCT as an online agent: full-game self-play search, continued at every move.

  The agent state is the solver's :class:`UCTState` (fixed shapes, so
  ``act`` traces). At each decision the search runs ``episodes`` more
  episodes of self-play from the root (the paper's full-game setting, Sec. 1;
  the statistics carry over between the moves of a match), then the agent
  plays the average strategy (``play="average"``) or the greedy action
  (``play="greedy"``) at its information state. ``act``'s key drives that
  move's episodes. :meth:`statistics` exposes the visit counts for the
  aggregate method.
  """

  game: CompiledGame
  solver: UCTSolver = dataclasses.field(default_factory=smooth_uct)
  episodes: int = 1000
  play: str = "average"

  def __post_init__(self):
    if not isinstance(self.solver, UCTSolver):
      raise ValueError(f"solver must be a UCTSolver (uct(), smooth_uct()), got "
                       f"{type(self.solver).__name__}")
    if isinstance(self.episodes, bool) or not isinstance(self.episodes, (int, np.integer)) \
        or self.episodes < self.solver.batch or self.episodes % self.solver.batch:
      raise ValueError(f"episodes must be a positive multiple of the solver's batch "
                       f"({self.solver.batch}), got {self.episodes!r}")
    if self.play not in ("average", "greedy"):
      raise ValueError(f"play must be 'average' or 'greedy', got {self.play!r}")
    # Device arrays made here, outside any trace (act may run under jit).
    object.__setattr__(self, "_tree", self.game.device_tree(self.solver.dtype))

  def init(self, key: jax.Array) -> UCTState:
    del key
    return self.solver.init(self._tree)

  def act(self, key, state: UCTState, history):
    tree = self._tree
    state = self.solver.run(tree, state, self.episodes // self.solver.batch, key)
    pol = (self.solver.policy if self.play == "average" else self.solver.greedy_policy)(
        tree, state)
    return acting_row(tree, pol, history), state

  def statistics(self, state: UCTState, player: int):
    """``player``'s visit counts ``N(u, a)`` ``[I_player, A]`` (float)."""
    return state.visits[player].astype(state.values[player].dtype)
