"""The safe re-solving gadget as a root transform of the CFR engine.

In the auxiliary game of re-solving (Burch, Johanson and Bowling 2014, "Solving Imperfect
Information Games Using Decomposition"; Schmid et al. 2023, "Student of Games: A unified
learning algorithm for both perfect and imperfect information games"), the
opponent at each of its root information states ``J`` either terminates
(receives ``v_term(J)``) or follows into the subgame. :class:`Gadget` plays
that choice inside :func:`jaxgt.solvers.cfr.iteration` (as DeepStack does):
before our update the opponent's root range enters our terminal weights:
the follow probabilities ``f [K_o]`` (the solver's regret rule on the
(follow, terminate) regrets), or ``alpha f / sum(f) + (1 - alpha) r_prev``
for Student of Games' modified gadget, or the fixed ``r_prev`` without terminate
values; after the opponent's update its counterfactual values of following
``v_follow [K_o]`` update the gadget's regrets.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp

from jaxgt import struct
from jaxgt.core.checks import check_real
from jaxgt.core.sequence_form import safe_div


# the modified gadget's opponent-range mixing (Schmid et al., "Student of Games", 2023,
# "Modified Continual Re-solving")
DEFAULT_ALPHA = 0.5


def check_alpha(alpha) -> float | None:
  """``alpha`` as a float (or ``None``); raises unless ``None`` or a number in ``[0, 1]``."""
  if alpha is None:
    return None
  return check_real("alpha", alpha, 0, 1)


@struct.dataclass
class GadgetState:
  """The gadget's part of the CFR engine's carry (add ``B`` in front when batched)."""

  regrets: Any  # [K_o, 2] cumulative (follow, terminate) regrets
  regret_state: Any  # the solver's regret rule's extra state for regrets
  range: Any  # [K_o] the opponent root range of the last iteration
  range_sum: Any  # [K_o] averaging-weighted sum of the iterations' ranges
  weight_sum: Any  # [] sum of the averaging weights


@dataclasses.dataclass(frozen=True, eq=False)
class Gadget:
  """The gadget of one re-solve: a :class:`~jaxgt.solvers.cfr.RootTransform`."""

  # the :class:`~jaxgt.solvers.cfr.CFRSolver` (its regret and averaging rules serve the gadget too)
  solver: Any
  opponent: int  # o
  root_position: Any  # [T] position of each terminal's root history in the opponent's range
  # [K_o] the opponent's terminate values, or None (no gadget: the opponent's range is
  # previous_range)
  terminate_values: Any
  previous_range: Any  # [K_o] the opponent's previous range r_prev
  alpha: Any = None  # [] the modified gadget's mixing weight, or None (exact gadget)
  # [K_o] bool real entries of a padded opponent range (None: all); padding never follows
  mask: Any = None

  def init(self) -> GadgetState:
    zeros = jnp.zeros(self.previous_range.shape + (2,), self.previous_range.dtype)
    return GadgetState(regrets=zeros, regret_state=self.solver.regret_rule.init(zeros),
                       range=self.previous_range, range_sum=jnp.zeros_like(self.previous_range),
                       weight_sum=jnp.zeros((), self.previous_range.dtype))

  def follow(self, gs: GadgetState) -> jax.Array:
    """``[K_o]`` follow probabilities of the gadget's current strategy."""
    legal = jnp.ones(gs.regrets.shape, bool)
    f = self.solver.regret_rule.strategy(gs.regrets, legal, gs.regret_state)[:, 0]
    return f if self.mask is None else jnp.where(self.mask, f, 0.0)

  def opponent_range(self, gs: GadgetState) -> jax.Array:
    """``[K_o]`` the opponent's root range of the current iteration."""
    if self.terminate_values is None:
      return self.previous_range
    f = self.follow(gs)
    if self.alpha is None:
      return f
    return (self.alpha * safe_div(f, f.sum(), self.previous_range)
            + (1.0 - self.alpha) * self.previous_range)

  def weights(self, gs: GadgetState, player: int, weights, t):
    if player == self.opponent:
      return weights, gs
    r, gs = self.mix(gs, t)
    return weights * r[self.root_position], gs

  def mix(self, gs: GadgetState, t):
    """``(r [K_o], state)``: the opponent's root range of our update at iteration ``t``,
    recorded for averaging (:meth:`weights` without the player check, for a traced player)."""
    r = self.opponent_range(gs)
    averaging = self.solver.averaging
    return r, gs.replace(range=r, range_sum=averaging.accumulate(gs.range_sum, r, t),
                         weight_sum=averaging.accumulate(gs.weight_sum, 1.0, t))

  def update(self, gs: GadgetState, player: int, values, reach, t):
    if player != self.opponent:
      return gs
    return self.regret_step(gs, values, reach, t)

  def regret_step(self, gs: GadgetState, values, reach, t):
    """The (follow, terminate) regret update after the opponent's update (:meth:`update`
    without the player check, for a traced player)."""
    if self.terminate_values is None:
      return gs
    f = self.follow(gs)
    v_follow = jax.ops.segment_sum(values * reach, self.root_position, len(f))
    total = f * v_follow + (1.0 - f) * self.terminate_values
    instant = jnp.stack([v_follow - total, self.terminate_values - total], -1)
    regrets, extra = self.solver.regret_rule.update(gs.regrets, instant, t, gs.regret_state)
    return gs.replace(regrets=regrets, regret_state=extra)

  def average_range(self, gs: GadgetState) -> jax.Array:
    """``[K_o]`` the average opponent root range (the average follow
    probabilities themselves for the exact gadget)."""
    if self.terminate_values is not None and self.alpha is None:
      return safe_div(gs.range_sum, gs.weight_sum, 0.0)
    return safe_div(gs.range_sum, gs.range_sum.sum(), 1.0 / max(len(gs.range_sum), 1))
