"""Monte Carlo CFR: outcome and external sampling through the CFR engine's rules.

``mccfr.outcome_sampling(epsilon=0.6, batch=256)`` (trajectories,
:mod:`jaxgt.solvers.mccfr_outcome`) and ``mccfr.external_sampling(batch=256)``
(traversals, :mod:`jaxgt.solvers.mccfr_external`) are :class:`MCCFRSolver` s
run by :mod:`jaxgt.solvers.sampled`; their policy is the average strategy. A
step updates player 0 from ``batch`` samples, then player 1 from ``batch`` new
ones (``batch=1``: one OpenSpiel iteration), each half-step one scatter-add.
Regrets and averages go through :mod:`jaxgt.solvers.cfr_rules` at step ``t``
(1-based): regret matching by default (Lanctot et al., "Monte Carlo Sampling
for Regret Minimization in Extensive Games", 2009), RM+, discounted regrets,
averaging weights ``t^gamma``; predictive rules are refused (a single noisy
sample is no prediction of the next regrets).
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
from flax import struct

from jaxgt.core import rng
from jaxgt.core.checks import check_positive_int, check_real
from jaxgt.core.game_tree import GameTree
from jaxgt.core.dtypes import dtype_name
from jaxgt.solvers.cfr_rules import PowerAveraging, RegretMatching
from jaxgt.solvers.mccfr_external import es_sizes, es_tables, es_traversals
from jaxgt.solvers.mccfr_outcome import half_step
from jaxgt.solvers.sampled import SampledSolver


@struct.dataclass
class MCCFRState:
  """State of one MCCFR run."""

  regrets: tuple  # ([I0, A], [I1, A]) cumulative sampled regrets
  cum_policy: tuple  # ([I0, A], [I1, A]) average-strategy accumulators
  iteration: jax.Array  # [] int32 completed steps (2 * batch samples each)
  # static, external sampling only: per player the frontier size of each depth and the most
  # draws of a traversal, then the number of chance histories (mccfr_external.es_sizes)
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
    ``[N, A]`` at information states ``at [N]``, or ``[I, A]`` when ``at`` is ``None``.
    Regret matching's plain sum adds in place (a rule that rescales copies the table)."""
    if at is not None:
      if type(self.regret_rule).update is RegretMatching.update:
        return regrets.at[at].add(instant)
      instant = jnp.zeros_like(regrets).at[at].add(instant)
    return self.regret_rule.update(regrets, instant, t, ())[0]

  def add_average(self, total, increment, t, at=None):
    """The average-strategy sum ``[I, A]`` after step ``t``'s ``increment`` (rows at ``at``,
    as :meth:`add_regrets`), weighted by the averaging rule's scale-free coefficients; uniform
    averaging adds in place."""
    if type(self.averaging) is PowerAveraging and not self.averaging.exponent:
      return total.at[at].add(increment) if at is not None else total + increment
    a, b = self.averaging.coefficients(t, total.dtype)
    total = total * a
    return total.at[at].add(b * increment) if at is not None else total + b * increment


@dataclasses.dataclass(frozen=True)
class OutcomeSampling(MCCFRSolver):
  """Outcome-sampling MCCFR; fields of :class:`MCCFRSolver` and
  ``epsilon``."""

  epsilon: float = 0.6  # exploration of the updated player

  name = "mccfr-os"

  def __post_init__(self):
    super().__post_init__()
    object.__setattr__(self, "epsilon", check_real("epsilon", self.epsilon, 0, 1, lo_open=True))

  def sample_step(self, tree: GameTree, state: MCCFRState, context, key) -> MCCFRState:
    """Player 0's half-step, then player 1's (:func:`~jaxgt.solvers.mccfr_outcome.half_step`)."""
    del context
    regrets, cum, t = state.regrets, state.cum_policy, state.iteration + 1
    for p, k in enumerate(rng.split(key)):
      regrets, cum = half_step(self, tree, regrets, cum, p, t, k)
    return state.replace(regrets=regrets, cum_policy=cum)


@dataclasses.dataclass(frozen=True)
class ExternalSampling(MCCFRSolver):
  """External-sampling MCCFR; fields of :class:`MCCFRSolver`."""

  name = "mccfr-es"

  def frontier(self, tree: GameTree) -> tuple:
    """The static traversal sizes :func:`~jaxgt.solvers.mccfr_external.es_sizes`."""
    return es_sizes(tree)

  def prepare(self, tree: GameTree, state: MCCFRState) -> tuple:
    """Both players' traversal tables (:func:`~jaxgt.solvers.mccfr_external.es_tables`)."""
    return tuple(es_tables(tree, p, state.frontier[2]) for p in (0, 1))

  def sample_step(self, tree: GameTree, state: MCCFRState, tables, key) -> MCCFRState:
    """Player 0's ``batch`` traversals, then player 1's, from one draw of both players'
    uniforms; regrets and averages through the rules at step ``iteration + 1``."""
    regrets, cum, step = state.regrets, state.cum_policy, state.iteration + 1
    (sizes0, draws0), (sizes1, draws1) = state.frontier[:2]
    uni = rng.uniform(key, (self.batch, draws0 + draws1), regrets[0].dtype)
    for p, sizes, u in ((0, sizes0, uni[:, :draws0]), (1, sizes1, uni[:, draws0:])):
      sigma = self.strategies(tree, regrets)
      regret, visits = es_traversals(tree, tables[p], sigma, p, sizes, u)
      regrets, cum = list(regrets), list(cum)
      regrets[p] = self.add_regrets(regrets[p], regret, step)
      cum[1 - p] = self.add_average(cum[1 - p], visits[:, None] * sigma[1 - p], step)
      regrets, cum = tuple(regrets), tuple(cum)
    return state.replace(regrets=regrets, cum_policy=cum)


def outcome_sampling(epsilon: float = 0.6, batch: int = 1, *, dtype="float32",
                     **rules) -> OutcomeSampling:
  """Outcome-sampling MCCFR, ``epsilon``-on-policy exploration (Lisy et al. 2015, Sec. 3.1);
  ``rules``: ``regret_rule`` and ``averaging`` (:class:`MCCFRSolver`)."""
  return OutcomeSampling(epsilon=epsilon, batch=batch, dtype=dtype, **rules)


def external_sampling(batch: int = 1, *, dtype="float32", **rules) -> ExternalSampling:
  """External-sampling MCCFR (Lanctot et al. 2009); ``rules``: ``regret_rule`` and
  ``averaging`` (:class:`MCCFRSolver`)."""
  return ExternalSampling(batch=batch, dtype=dtype, **rules)


SAMPLING_SOLVERS = {"mccfr-os": outcome_sampling, "mccfr-es": external_sampling}


def make_sampling_solver(name: str, batch: int = 1, **kwargs) -> MCCFRSolver:
  """A sampling solver by name (``mccfr-os``, ``mccfr-es``) for the CLI."""
  if name not in SAMPLING_SOLVERS:
    raise ValueError(f"unknown sampling solver {name!r}; choose one of {', '.join(SAMPLING_SOLVERS)}")
  if name == "mccfr-es" and "epsilon" in kwargs:
    raise ValueError("epsilon applies to outcome sampling (mccfr-os) only")
  return SAMPLING_SOLVERS[name](batch=batch, **kwargs)
