"""What the Monte Carlo CFR samplers share: their state and the rules their updates go through.

One MCCFR *step* updates player 0 from ``batch`` sampled trajectories (or
traversals), then player 1 from ``batch`` new ones sampled under player 0's
updated regrets, so a step is ``2 * batch`` samples; at ``batch=1`` it is one
OpenSpiel iteration. Within a player's half-step all samples read the same
strategy and their updates are summed with one scatter-add.

The regret and averaging rules are the CFR engine's
(:mod:`jaxgt.solvers.cfr_rules`), applied to the sampled instantaneous
regrets and average increments of each half-step at step ``t`` (1-based):
regret matching (the default; Lanctot et al., "Monte Carlo Sampling for
Regret Minimization in Extensive Games", 2009), regret matching+ (Tammelin,
"Solving Large Imperfect Information Games Using CFR+", 2014), discounted
regrets (Brown & Sandholm, "Solving Imperfect-Information Games via
Discounted Regret Minimization", 2019) and averaging weights ``t^gamma``.
Predictive rules are refused: they predict the next instantaneous regret by
the last one, which sampling replaces by a single noisy sample.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
from flax import struct

from jaxgt.core.checks import check_positive_int
from jaxgt.core.compiler import GameTree
from jaxgt.core.dtypes import dtype_name
from jaxgt.solvers.cfr_rules import PowerAveraging, RegretMatching
from jaxgt.solvers.sampled import SampledSolver


@struct.dataclass
class MCCFRState:
  """State of one MCCFR run."""

  regrets: tuple  # ([I0, A], [I1, A]) cumulative sampled regrets
  cum_policy: tuple  # ([I0, A], [I1, A]) average-strategy accumulators
  iteration: jax.Array  # [] int32 completed steps (2 * batch samples each)
  # static, external sampling only: per player the frontier size of each depth and the most
  # draws of a traversal, then the number of chance histories (external_sampling.es_sizes)
  frontier: tuple = struct.field(pytree_node=False)


@dataclasses.dataclass(frozen=True)
class MCCFRSolver(SampledSolver):
  """Hyperparameters every MCCFR sampler has; methods are pure functions (:mod:`.base`)."""

  batch: int = 1  # trajectories (traversals) per player per step
  dtype: str = "float32"  # float dtype of the state
  regret_rule: RegretMatching = RegretMatching()  # the regret rule (cfr_rules; not predictive)
  averaging: PowerAveraging = PowerAveraging()  # the averaging rule (cfr_rules)

  def __post_init__(self):
    object.__setattr__(self, "batch", check_positive_int("batch", self.batch))
    object.__setattr__(self, "dtype", dtype_name(self.dtype))
    if not isinstance(self.regret_rule, RegretMatching):
      raise ValueError(f"regret_rule must be a cfr_rules regret rule, got {self.regret_rule!r}")
    if self.regret_rule.init(jnp.zeros((1, 1))) != ():
      raise ValueError(f"{type(self.regret_rule).__name__} carries a prediction of the next "
                       "regrets, which sampled regrets do not give; use a rule without one")
    if not isinstance(self.averaging, PowerAveraging):
      raise ValueError(f"averaging must be a cfr_rules averaging rule, got {self.averaging!r}")

  @property
  def samples_per_step(self) -> int:
    return 2 * self.batch

  def frontier(self, tree: GameTree) -> tuple:
    """The static sizes a sampler needs in its state (none by default)."""
    del tree
    return ()

  def init(self, tree: GameTree, *, weights=None) -> MCCFRState:
    """Zero regrets and averages (root beliefs are not supported)."""
    dtype = self.init_dtype(tree, weights)
    zeros = tuple(jnp.zeros((n, tree.num_actions), dtype) for n in tree.num_infostates)
    return MCCFRState(regrets=zeros, cum_policy=zeros, iteration=jnp.zeros((), jnp.int32),
                      frontier=self.frontier(tree))

  def strategy(self, regrets, legal):
    """The current strategy ``[..., A]`` of cumulative regrets ``[..., A]`` under the rule."""
    return self.regret_rule.strategy(regrets, legal, ())

  def strategies(self, tree: GameTree, regrets) -> tuple:
    """Both players' current strategies ``([I0, A], [I1, A])``."""
    return tuple(self.strategy(r, pt.legal) for r, pt in zip(regrets, tree.players))

  def add_regrets(self, regrets, instant, t, at=None):
    """Cumulative regrets ``[I, A]`` after the instantaneous ``instant`` of step ``t``: rows
    ``[N, A]`` at information states ``at [N]``, or ``[I, A]`` when ``at`` is ``None``."""
    if at is not None:
      if type(self.regret_rule).update is RegretMatching.update:  # the plain sum, in place
        return regrets.at[at].add(instant)
      instant = jnp.zeros_like(regrets).at[at].add(instant)
    return self.regret_rule.update(regrets, instant, t, ())[0]

  def add_average(self, total, increment, t, at=None):
    """The average-strategy sum ``[I, A]`` after step ``t``'s ``increment`` (rows at ``at``,
    as :meth:`add_regrets`), weighted by the averaging rule's scale-free coefficients."""
    a, b = self.averaging.coefficients(t, total.dtype)
    total = total * a
    return total.at[at].add(b * increment) if at is not None else total + b * increment
