"""Regret and averaging rules of the CFR family: the pluggable pieces of the engine.

A regret rule is ``init(regrets) -> extra``, ``update(regrets, instant, t,
extra) -> (regrets, extra)`` and ``strategy(regrets, legal, extra) ->
sigma``, where ``extra`` is any pytree the rule carries per player (``()``
here; a predictive rule would keep its prediction, e.g. the last
instantaneous regrets); an averaging rule is ``accumulate(total, increment,
t) -> total``. CFR: :class:`RegretMatching` with uniform averaging
(Zinkevich et al. 2007); CFR+: :class:`RegretMatchingPlus` with linear
averaging (Tammelin 2014); DCFR(alpha, beta, gamma):
:class:`DiscountedRegretMatching` with averaging weight ``t^gamma``, LCFR
being DCFR(1, 1, 1) (Brown & Sandholm 2019, Sec. 3 and 4).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp

from jaxgt.core import sequence_form


@dataclasses.dataclass(frozen=True)
class RegretMatching:
  """CFR's regret rule: ``R <- R + r``; the strategy is regret matching of ``R``.

  Subclasses override :meth:`update` (and :meth:`init` / :meth:`strategy`
  when they carry extra state).
  """

  def init(self, regrets: jax.Array) -> Any:
    """The rule's extra state for cumulative regrets ``regrets [..., I, A]`` (none)."""
    del regrets
    return ()

  def update(self, regrets: jax.Array, instant: jax.Array, t: jax.Array, extra):
    """New cumulative regrets after instantaneous regrets ``instant`` at iteration ``t``."""
    del t
    return regrets + instant, extra

  def strategy(self, regrets: jax.Array, legal: jax.Array, extra) -> jax.Array:
    """The current strategy ``[..., I, A]``."""
    del extra
    return sequence_form.regret_matching(regrets, legal)


@dataclasses.dataclass(frozen=True)
class RegretMatchingPlus(RegretMatching):
  """CFR+'s rule: cumulative regrets clipped at zero after each update (Tammelin 2014)."""

  def update(self, regrets, instant, t, extra):
    del t
    return jnp.maximum(regrets + instant, 0.0), extra


@dataclasses.dataclass(frozen=True)
class DiscountedRegretMatching(RegretMatching):
  """DCFR's rule (Brown & Sandholm 2019, Sec. 3): after ``R <- R + r``, positive
  regrets times ``t^alpha / (t^alpha + 1)``, negative ones times ``t^beta / (t^beta + 1)``."""

  alpha: float = 1.5
  beta: float = 0.0

  def update(self, regrets, instant, t, extra):
    regrets = regrets + instant
    tf = t.astype(regrets.dtype)
    pos = tf ** self.alpha / (tf ** self.alpha + 1.0)
    neg = tf ** self.beta / (tf ** self.beta + 1.0)
    return jnp.where(regrets >= 0, regrets * pos, regrets * neg), extra


@dataclasses.dataclass(frozen=True)
class PowerAveraging:
  """Average-strategy weight ``t ** exponent`` (0: uniform, 1: linear)."""

  exponent: float = 0.0

  def accumulate(self, total: jax.Array, increment, t: jax.Array) -> jax.Array:
    """``total`` plus iteration ``t``'s weighted ``increment``."""
    if not self.exponent:
      return total + increment
    return total + t.astype(total.dtype) ** self.exponent * increment
