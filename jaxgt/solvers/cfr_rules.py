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
being DCFR(1, 1, 1) (Brown & Sandholm 2019, Sec. 3 and 4). PCFR+
(Farina, Kroer & Sandholm, AAAI 2021, Sec. 4): :class:`PredictiveRegretMatchingPlus`
(regret matching+ on ``R + m`` with the last instantaneous regret as the
prediction ``m``) with quadratic averaging; DCFR+ and PDCFR+ (Xu et al.,
IJCAI 2024, Sec. 4): :class:`DiscountedRegretMatchingPlus` and
:class:`PredictiveRegretMatchingPlus` with a discount ``alpha``, averaging
weight ``t^gamma``.

Every averaging rule is a scale-free linear recurrence
(:meth:`PowerAveraging.coefficients`); the engine accumulates it with
compensated (Kahan) sums, per iteration (:meth:`PowerAveraging.add`) or per
block of iterations (:class:`PartialSum`, :meth:`PowerAveraging.merge`), so
float32 averages keep the increments of late iterations (see
:mod:`jaxgt.solvers.cfr`).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp

from jaxgt import struct
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

  def strategy(self, regrets: jax.Array, legal: jax.Array, extra, axis: int = -1) -> jax.Array:
    """The current strategy ``[..., I, A]`` (``axis``: the actions' axis; the engine's loop
    passes ``[..., A, I]`` arrays and ``axis=-2``)."""
    del extra
    return sequence_form.regret_matching(regrets, legal, axis)


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


def plus_discount(t: jax.Array, alpha: float | None, dtype) -> jax.Array:
  """DCFR+/PDCFR+'s factor on the previous regrets at iteration ``t``:
  ``(t-1)^alpha / ((t-1)^alpha + 1)`` (Xu et al. 2024, Eq. 6); ``1`` for ``alpha=None``."""
  if alpha is None:
    return jnp.ones(jnp.shape(t), dtype)
  tm = jnp.asarray(t).astype(dtype) - 1.0
  return tm ** alpha / (tm ** alpha + 1.0)


@dataclasses.dataclass(frozen=True)
class DiscountedRegretMatchingPlus(RegretMatching):
  """DCFR+'s rule (Xu et al. 2024, Sec. 4): ``R <- max(R * d_t + r, 0)`` with
  ``d_t = (t-1)^alpha / ((t-1)^alpha + 1)``.

  The paper's formula; the reference code (``rpSebastian/PDCFRPlus``,
  ``dcfr_plus.py``) has ``+ 1.5`` in the denominator, unlike its paper and its
  own PDCFR+; jaxgt follows the paper.
  """

  alpha: float = 1.5

  def update(self, regrets, instant, t, extra):
    d = plus_discount(t, self.alpha, regrets.dtype)
    return jnp.maximum(regrets * d + instant, 0.0), extra


def schedule_progress(t: jax.Array, planned: int, dtype) -> jax.Array:
  """``min(t / planned, 1)``: how far iteration count ``t`` is through a planned run."""
  return jnp.minimum(jnp.asarray(t).astype(dtype) / planned, 1.0)


@dataclasses.dataclass(frozen=True)
class ScheduledDiscountedRegretMatching(RegretMatching):
  """HS-DCFR's regret rule (Zhang, McAleer & Sandholm 2024, arXiv:2404.09097, Eq. 4):
  DCFR whose exponents follow the planned run, ``alpha_t = 1 + 3 p`` and
  ``beta_t = -1 - 2 p`` with ``p = t / planned`` (negative regrets are
  forgotten ever faster, approaching CFR+'s clipping)."""

  planned: int = 1000  # the planned number of iterations T

  def update(self, regrets, instant, t, extra):
    regrets = regrets + instant
    tf = t.astype(regrets.dtype)
    p = schedule_progress(t, self.planned, regrets.dtype)
    pos, neg = tf ** (1.0 + 3.0 * p), tf ** (-1.0 - 2.0 * p)
    return jnp.where(regrets >= 0, regrets * (pos / (pos + 1.0)), regrets * (neg / (neg + 1.0))), extra


@struct.dataclass
class Prediction:
  """A predictive rule's extra state: the strategy is regret matching of
  ``discount * R + instant`` (add a leading ``B`` when batched)."""

  instant: jax.Array  # [I, A] the last instantaneous regrets (the prediction m)
  discount: jax.Array  # [] the factor on R in the prediction (d_{t+1}; 1 without discounting)


@dataclasses.dataclass(frozen=True)
class PredictiveRegretMatchingPlus(RegretMatching):
  """Predictive regret matching+ (PCFR+, Farina et al. 2021, Alg. 2; PDCFR+ with
  ``alpha``, Xu et al. 2024, Alg. 1).

  ``R <- max(R * d_t + r, 0)`` (``d_t = 1`` for PCFR+), and the next strategy
  is regret matching of ``max(R * d_{t+1} + r, 0)``: the prediction of the
  next instantaneous regret is the last one.
  """

  alpha: float | None = None  # the discount exponent (None: PCFR+)

  def init(self, regrets):
    batch = regrets.shape[:-2]
    return Prediction(instant=jnp.zeros_like(regrets), discount=jnp.ones(batch, regrets.dtype))

  def update(self, regrets, instant, t, extra):
    d = plus_discount(t, self.alpha, regrets.dtype)
    regrets = jnp.maximum(regrets * d + instant, 0.0)
    return regrets, Prediction(instant=instant,
                               discount=plus_discount(t + 1, self.alpha, regrets.dtype))

  def strategy(self, regrets, legal, extra, axis=-1):
    predicted = regrets * extra.discount[..., None, None] + extra.instant
    return sequence_form.regret_matching(predicted, legal, axis)


def compensated_add(total: jax.Array, compensation: jax.Array, increment) -> tuple:
  """Kahan's compensated ``total + increment``: ``(total, compensation)``, where
  ``compensation`` holds (minus) the low-order part the float addition dropped."""
  y = increment - compensation
  new = total + y
  return new, (new - total) - y


@dataclasses.dataclass(frozen=True)
class PowerAveraging:
  """Average-strategy weight ``t ** exponent`` (0: uniform, 1: linear).

  Every averaging rule is a linear recurrence ``total_t = a_t total_{t-1} + b_t
  increment_t`` (:meth:`coefficients`); :meth:`accumulate` is the plain sum,
  :meth:`add` the compensated one and :meth:`add_partial` / :meth:`merge` the
  blocked one the engine's loop uses (:mod:`jaxgt.solvers.cfr`).
  """

  exponent: float = 0.0

  def accumulate(self, total: jax.Array, increment, t: jax.Array) -> jax.Array:
    """``total`` plus iteration ``t``'s weighted ``increment`` (plain float sums, weight ``t^gamma``)."""
    if not self.exponent:
      return total + increment
    return total + t.astype(total.dtype) ** self.exponent * increment

  def init(self, total: jax.Array) -> jax.Array:
    """The compensation term ``[..., I, A]`` of :meth:`add` (zeros)."""
    return jnp.zeros_like(total)

  def coefficients(self, t: jax.Array, dtype) -> tuple:
    """``(a_t, b_t)``, scalars of ``dtype``: the sum after iteration ``t`` is ``a_t`` times the
    sum before plus ``b_t`` times the increment, scale-free.

    The weight is taken relative to ``16^j <= t < 16^(j+1)``, ``b_t = (t /
    16^j)^gamma``, and the sum is rescaled by ``a_t = 16^-gamma`` when ``t``
    reaches ``16^j`` (``a_t = 1`` otherwise), so sums never overflow (``t^5``
    summed overflows float32 after 2.6M iterations). Scaling ``t`` by a power
    of two is exact; normalising the average removes the common factor.
    """
    if not self.exponent:
      return jnp.ones((), dtype), jnp.ones((), dtype)
    t = jnp.asarray(t, jnp.int32)
    bits = 32 - jax.lax.clz(t)  # bit length of t >= 1
    shift = 4 * ((bits - 1) // 4)  # 16^j = 2^shift <= t
    b = jnp.ldexp(t.astype(dtype), -shift) ** self.exponent
    a = jnp.where((shift > 0) & (t == jnp.left_shift(1, shift)),
                  jnp.asarray(16.0, dtype) ** -self.exponent, 1.0).astype(dtype)
    return a, b

  def add(self, total: jax.Array, compensation: jax.Array, increment, t: jax.Array):
    """:meth:`accumulate` as a scale-free compensated sum: ``(total, compensation)`` (``t []``).

    A Kahan sum (``compensation`` carries the low-order part each addition
    drops), so increments far below ``eps * total`` still count (iteration
    ``t``'s weight ``t^gamma`` against a total of order ``t^(gamma + 1)``),
    with the scale-free :meth:`coefficients`.
    """
    a, b = self.coefficients(t, total.dtype)
    return compensated_add(total * a, compensation * a, b * increment)

  def add_partial(self, partial: PartialSum, increment, t: jax.Array) -> PartialSum:
    """Iteration ``t``'s increment added plainly to a block's :class:`PartialSum`."""
    a, b = self.coefficients(t, partial.total.dtype)
    return PartialSum(total=partial.total * a + b * increment, decay=partial.decay * a)

  def merge(self, total: jax.Array, compensation: jax.Array, partial: PartialSum) -> tuple:
    """``(total, compensation)`` after a block: the earlier sum times the block's decay plus
    its partial sum, one compensated addition."""
    d = partial.decay[..., None, None]
    return compensated_add(total * d, compensation * d, partial.total)


@struct.dataclass
class PartialSum:
  """A block of the weighted average-strategy sum (add a leading ``B`` when batched).

  The engine's loop sums ``k`` iterations' increments into ``total`` with
  plain float additions (terms of similar size: the block keeps them to
  ``~sqrt(k) eps``) and adds the block to the running sum with one
  compensated addition (:meth:`PowerAveraging.merge`): Kahan's accuracy at
  ``1/k`` of its cost (measured on Leduc CFR+ at 10^6 float32 iterations: the
  same exploitability for ``k = 16``, 16% worse for ``k = 64``).
  """

  total: jax.Array  # [I, A] the block's weighted increments, on the scale of its last iteration
  decay: jax.Array  # [] the product of the block's a_t: the factor on the sum before the block

  @classmethod
  def zeros(cls, like: jax.Array) -> PartialSum:
    """An empty block for a sum shaped like ``like [..., I, A]``."""
    return cls(total=jnp.zeros_like(like), decay=jnp.ones(like.shape[:-2], like.dtype))


@dataclasses.dataclass(frozen=True)
class ScheduledAveraging(PowerAveraging):
  """HS averaging (Zhang, McAleer & Sandholm 2024, Eq. 4): before adding iteration
  ``t``, the sum is discounted by ``((t-1)/t)^gamma_t`` with ``gamma_t = gamma0 -
  5 p``, ``p = (t-1) / planned`` (capped at 1); a constant ``gamma`` would give
  weights ``t^gamma``. ``exponent`` is ``gamma0``.
  """

  planned: int = 1000  # the planned number of iterations T

  def coefficients(self, t, dtype):
    tf = jnp.asarray(t).astype(dtype)
    gamma = self.exponent - 5.0 * schedule_progress(t - 1, self.planned, dtype)
    return ((tf - 1.0) / tf) ** gamma, jnp.ones((), dtype)

  def accumulate(self, total, increment, t):
    return total * self.coefficients(t, total.dtype)[0] + increment
