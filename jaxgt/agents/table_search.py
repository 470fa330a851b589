"""Shared set-up of the agents that search over fixed-capacity tables (OOS, ISMCTS)."""

from __future__ import annotations

import jax.numpy as jnp
from jax import lax

from jaxgt.agents.base import Agent
from jaxgt.core.checks import check_positive_int
from jaxgt.core.game_tree import GameTree
from jaxgt.core.targets import target_members


class TableSearchAgent(Agent):
  """Shared set-up of the search agents over fixed-capacity tables (OOS, ISMCTS).

  Subclasses are frozen dataclasses with fields ``game``, ``solver`` and a
  positive per-move budget named by ``_budget``; ``_solver_type`` is the
  solver class they accept and ``_targeting`` the target set of their
  searches (``None``: the solver's own ``targeting``).
  """

  _budget: str
  _solver_type: type
  _targeting: str | None = None

  def __post_init__(self):
    check_positive_int(self._budget, getattr(self, self._budget))
    if not isinstance(self.solver, self._solver_type):
      raise ValueError(f"solver must be an {self._solver_type.__name__} instance, "
                       f"got {type(self.solver).__name__}")
    targeting = self._targeting or self.solver.targeting
    if targeting == "pst" and not self.game.game.public_actions:
      raise ValueError(f"{self.game.name} has no public actions, so no public subgame to target "
                       "(Lisy, Lanctot, Bowling 2015, Sec. 4.2): use targeting='ist'")
    # Device arrays made here, outside any trace (act may run under jit).
    object.__setattr__(self, "_tree", self.game.device_tree(self.solver.dtype))
    object.__setattr__(self, "_members", jnp.asarray(target_members(self.game.tree, targeting)))

  @property
  def tree(self) -> GameTree:
    return self._tree

  def search_data(self, *extra):
    """``(tree, members, *extra)`` as the searches in ``act`` read them: behind an optimization
    barrier, so that in a jitted match (where the agent's arrays are closed-over constants)
    XLA treats them as data and does not evaluate the search's reductions over the whole tree
    at compile time (constant folding took seconds per reduction on LD(1,1)). The values are
    unchanged."""
    return lax.optimization_barrier((self._tree, self._members) + tuple(extra))
