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

Both samplers also run on a device game without enumerating it:
``solver.init(Rules(game), capacity=N)`` keeps ``[N, A]`` regrets and averages
per player, rows of the players' information-state tables (``state.tables``,
:mod:`jaxgt.solvers.sources`), filled as the samples visit states; the same
rules apply row by row, and on an enumerable game the run equals the run on
its compiled tree from the same key. A state a full table refuses keeps zero
regrets (played uniformly) and its increments are dropped (counted in
``state.tables[p].refused``). External sampling keeps ``max_frontier`` game
states per depth of a traversal (:func:`~jaxgt.solvers.mccfr_external.rules_traversals`)
and drops a traversal that needs more, counted in ``state.frontier_overflow``.
:meth:`MCCFRSolver.table_policy` exports the average strategy by
information-state string.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp

from jaxgt import struct
from jaxgt.core import rng
from jaxgt.core import sequence_form
from jaxgt.core.checks import check_positive_int, check_real
from jaxgt.core.game_tree import GameTree
from jaxgt.core.dtypes import dtype_name, resolve_dtype
from jaxgt.solvers.cfr_rules import PowerAveraging, RegretMatching
from jaxgt.solvers.mccfr_external import (es_sizes, es_tables, es_traversals, frontier_bound,
                                          rules_traversals)
from jaxgt.solvers.mccfr_outcome import half_step
from jaxgt.solvers.sampled import SampledSolver
from jaxgt.solvers.sources import (Rules, TablePolicy, insert_rows, memory_estimate, source_of,
                                   table_policy)


@struct.dataclass
class MCCFRState:
  """State of one MCCFR run."""

  regrets: tuple  # ([I0, A], [I1, A]) cumulative sampled regrets
  cum_policy: tuple  # ([I0, A], [I1, A]) average-strategy accumulators
  iteration: jax.Array  # [] int32 completed steps (2 * batch samples each)
  # static, external sampling only: per player the frontier size of each depth and the most
  # draws of a traversal, then the number of chance histories (mccfr_external.es_sizes); on a
  # device game per player (slots per depth, most draws), then 0
  frontier: tuple = struct.field(pytree_node=False)
  # device games: the players' information-state tables (InfoTable, InfoTable) whose rows index
  # regrets and cum_policy; None on a compiled tree
  tables: Any = None
  # external sampling on a device game: [] int32 traversals dropped because a depth needed more
  # than max_frontier slots; None otherwise
  frontier_overflow: Any = None


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

  def init(self, tree, *, weights=None, capacity=None) -> MCCFRState:
    """Zero regrets and averages: ``[I_p, A]`` on a compiled tree, ``[capacity, A]`` rows of
    empty tables on a device game's :class:`~jaxgt.solvers.sources.Rules` (``capacity``:
    rows of each player's table, required there and at least the game's ``max_length``, the
    most states of one player a trajectory visits). Root beliefs are not supported."""
    if isinstance(tree, Rules):
      if weights is not None:
        raise ValueError(f"{self.name} does not support root beliefs (weights)")
      capacity = self.check_capacity(tree, capacity)
      dtype = resolve_dtype(self.dtype)
      zeros = tuple(jnp.zeros((capacity, tree.num_actions), dtype) for _ in (0, 1))
      frontier = self.frontier(tree)
      return MCCFRState(regrets=zeros, cum_policy=zeros, iteration=jnp.zeros((), jnp.int32),
                        frontier=frontier, tables=tree.empty_tables(capacity),
                        frontier_overflow=self.overflow_counter())
    if capacity is not None:
      raise ValueError("capacity applies to device games (Rules); a compiled tree has a row per "
                       "information state")
    dtype = self.init_dtype(tree, weights)
    zeros = tuple(jnp.zeros((n, tree.num_actions), dtype) for n in tree.num_infostates)
    return MCCFRState(regrets=zeros, cum_policy=zeros, iteration=jnp.zeros((), jnp.int32),
                      frontier=self.frontier(tree))

  def overflow_counter(self):
    """The initial ``frontier_overflow`` of a device-game state (none by default)."""
    return None

  def check_capacity(self, rules: Rules, capacity) -> int:
    """``capacity`` checked for a run on ``rules`` (see :meth:`init`)."""
    if capacity is None:
      raise ValueError(f"{self.name} on a device game needs capacity=N, the rows of each "
                       f"player's information-state table (memory_bytes(rules, N) estimates "
                       f"the memory)")
    capacity = check_positive_int("capacity", capacity)
    if capacity < rules.max_depth:
      raise ValueError(f"capacity {capacity} is below {rules.game.name}'s max_length "
                       f"{rules.max_depth}, the most states of one player one trajectory visits")
    return capacity

  def memory_bytes(self, rules: Rules, capacity: int) -> int:
    """Bytes of a run's tables on ``rules``: both players' keys and slots with ``capacity`` rows
    of regrets and averages each (:func:`~jaxgt.solvers.sources.memory_estimate`)."""
    capacity = self.check_capacity(rules, capacity)
    row = 2 * rules.num_actions * jnp.dtype(resolve_dtype(self.dtype)).itemsize
    return memory_estimate(rules, capacity, row)

  def run(self, tree, state, num_steps, key=None, **position):
    """``num_steps`` steps inside one jitted call (:meth:`SampledSolver.run`); ``tree`` is the
    compiled tree or the :class:`~jaxgt.solvers.sources.Rules` that ``state`` was made for."""
    if isinstance(tree, Rules) != (getattr(state, "tables", None) is not None):
      raise ValueError("state was made for a " + ("compiled tree" if isinstance(tree, Rules)
                       else "device game (Rules)") + f"; init {self.name} on the same game")
    return super().run(tree, state, num_steps, key, **position)

  def _legal(self, tree):
    """Per player the legal masks of the rows: the tree's, or all actions on a device game
    (its tables keep no legal masks)."""
    if isinstance(tree, Rules):
      return (jnp.ones(tree.num_actions, bool),) * 2
    return tuple(jnp.asarray(pt.legal) for pt in tree.players)

  def average_policy(self, tree, state) -> tuple:
    """Normalised ``state.cum_policy``: ``([I0, A], [I1, A])`` on a tree (uniform over the legal
    actions where never updated), ``([N, A], [N, A])`` table rows on a device game (uniform
    over all ``A`` actions where never updated: averaged rows hold mass on legal actions only;
    :meth:`table_policy` leaves the others out)."""
    return tuple(sequence_form.normalize(c, l) for c, l in zip(state.cum_policy,
                                                               self._legal(tree)))

  def current_policy(self, tree, state) -> tuple:
    """Regret matching of ``state.regrets`` (per row; on a device game uniform over all ``A``
    actions where no regret is positive)."""
    return tuple(sequence_form.regret_matching(r, l) for r, l in zip(state.regrets,
                                                                     self._legal(tree)))

  def table_policy(self, rules: Rules, state: MCCFRState) -> dict:
    """The average strategy of a device-game run on the host: ``{player: {information-state
    string: probabilities [A]}}`` over the rows ever averaged (the states a run never averaged
    are absent: play them uniformly over their legal actions, as the tree run does;
    :func:`jaxgt.policy.policy_from_table` fills an enumerable game's policy this way)."""
    if not isinstance(rules, Rules) or state.tables is None:
      raise ValueError("table_policy needs a device game's Rules and a state made for it")
    probs = self.average_policy(rules, state)
    kept = tuple(jnp.sum(c, -1) > 0 for c in state.cum_policy)
    return table_policy(rules, state.tables, probs, kept)

  def device_policy(self, rules: Rules, state: MCCFRState) -> TablePolicy:
    """The average strategy of a device-game run as a device policy
    (:class:`~jaxgt.solvers.sources.TablePolicy`: ``policy(states, player) -> [B, A]``, uniform
    over the legal actions at states never averaged), for evaluators of large games such as
    :func:`jaxgt.evaluation.local_br.local_best_response`."""
    if not isinstance(rules, Rules) or state.tables is None:
      raise ValueError("device_policy needs a device game's Rules and a state made for it")
    return TablePolicy(rules, tuple(state.tables), tuple(state.cum_policy))

  def strategy(self, regrets, legal):
    """The current strategy ``[..., A]`` of cumulative regrets ``[..., A]`` under the rule."""
    return self.regret_rule.strategy(regrets, legal, ())

  def strategies(self, tree: GameTree, regrets) -> tuple:
    """Both players' current strategies ``([I0, A], [I1, A])``."""
    return tuple(self.strategy(r, pt.legal) for r, pt in zip(regrets, tree.players))

  def add_regrets(self, regrets, instant, t, at=None):
    """Cumulative regrets ``[I, A]`` after the instantaneous ``instant`` of step ``t``: rows
    ``[N, A]`` at information states ``at [N]`` (rows out of range are dropped), or ``[I, A]``
    when ``at`` is ``None``. Regret matching's plain sum adds in place (a rule that rescales copies the table)."""
    if at is not None:
      if type(self.regret_rule).update is RegretMatching.update:
        return regrets.at[at].add(instant, mode="drop")
      instant = jnp.zeros_like(regrets).at[at].add(instant, mode="drop")
    return self.regret_rule.update(regrets, instant, t, ())[0]

  def add_average(self, total, increment, t, at=None):
    """The average-strategy sum ``[I, A]`` after step ``t``'s ``increment`` (rows at ``at``,
    as :meth:`add_regrets`), weighted by the averaging rule's scale-free coefficients; uniform
    averaging adds in place."""
    if type(self.averaging) is PowerAveraging and not self.averaging.exponent:
      return total.at[at].add(increment, mode="drop") if at is not None else total + increment
    a, b = self.averaging.coefficients(t, total.dtype)
    total = total * a
    return (total.at[at].add(b * increment, mode="drop") if at is not None
            else total + b * increment)


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
    tables = state.tables
    for p, k in enumerate(rng.split(key)):
      regrets, cum, tables = half_step(self, tree, regrets, cum, p, t, k, tables)
    return state.replace(regrets=regrets, cum_policy=cum, tables=tables)


@dataclasses.dataclass(frozen=True)
class ExternalSampling(MCCFRSolver):
  """External-sampling MCCFR; fields of :class:`MCCFRSolver` and ``max_frontier``."""

  # device games: the states a traversal keeps at each depth (None: the exact bound
  # num_actions^(max_length - 1), where it is at most MAX_EXACT_FRONTIER); unused on a tree
  max_frontier: int | None = None

  name = "mccfr-es"

  def __post_init__(self):
    super().__post_init__()
    if self.max_frontier is not None:
      object.__setattr__(self, "max_frontier", check_positive_int("max_frontier",
                                                                  self.max_frontier))

  def frontier(self, tree) -> tuple:
    """The static traversal sizes: :func:`~jaxgt.solvers.mccfr_external.es_sizes` on a tree;
    on a device game per player ``(S, D S)``, the slots of every depth and the most draws of a
    traversal (``D = max_length``), then ``0``."""
    if isinstance(tree, Rules):
      S = self.max_frontier
      if S is None:
        S = frontier_bound(tree)
        if S > MAX_EXACT_FRONTIER:
          raise ValueError(
              f"external sampling on {tree.game.name} needs max_frontier=S, the most states a "
              f"traversal keeps at one depth (the exact bound num_actions^(max_length - 1) is "
              f"{S}); a traversal needing more is dropped and counted in "
              f"state.frontier_overflow")
      return ((S, S * tree.max_depth),) * 2 + (0,)
    if self.max_frontier is not None:
      raise ValueError("max_frontier applies to device games (Rules); a compiled tree's "
                       "frontier sizes are exact")
    return es_sizes(tree)

  def overflow_counter(self):
    return jnp.zeros((), jnp.int32)

  def prepare(self, tree, state: MCCFRState) -> tuple:
    """Both players' traversal tables (:func:`~jaxgt.solvers.mccfr_external.es_tables`; none on
    a device game)."""
    if isinstance(tree, Rules):
      return ()
    return tuple(es_tables(tree, p, state.frontier[2]) for p in (0, 1))

  def sample_step(self, tree, state: MCCFRState, tables, key) -> MCCFRState:
    """Player 0's ``batch`` traversals, then player 1's, each from its own draw of uniforms
    ``[U, batch]`` (transposed: the first ``u`` uniforms of a traversal do not depend on
    ``U``, so a device game's larger bound draws the tree's numbers); regrets and averages
    through the rules at step ``iteration + 1``."""
    regrets, cum, step = state.regrets, state.cum_policy, state.iteration + 1
    dtype = regrets[0].dtype
    on_rules = isinstance(tree, Rules)
    infos, overflow = state.tables, state.frontier_overflow
    for p, k in enumerate(rng.split(key)):
      sizes, draws = state.frontier[p]
      u = rng.uniform(k, (draws, self.batch), dtype).T
      regrets, cum = list(regrets), list(cum)
      if on_rules:
        src = source_of(tree, infos, dtype)
        mine, theirs, keys, regret, sigma, cut = rules_traversals(self, src, regrets, p, sizes, u)
        overflow = overflow + jnp.sum(cut).astype(jnp.int32)
        keep = ~cut[:, None]
        infos, rows = insert_rows(infos, jnp.where(mine, p, 1 - p), keys,
                                  (mine | theirs) & keep)
        mine, theirs = mine & (rows >= 0), theirs & (rows >= 0)
        A = regret.shape[-1]
        regrets[p] = self.add_regrets(
            regrets[p], jnp.where(mine[..., None], regret, 0.0).reshape(-1, A), step,
            at=jnp.where(mine, rows, 0).reshape(-1))
        cum[1 - p] = self.add_average(
            cum[1 - p], jnp.where(theirs[..., None], sigma, 0.0).reshape(-1, A), step,
            at=jnp.where(theirs, rows, 0).reshape(-1))
      else:
        sigma = self.strategies(tree, regrets)
        regret, visits = es_traversals(tree, tables[p], sigma, p, sizes, u)
        regrets[p] = self.add_regrets(regrets[p], regret, step)
        cum[1 - p] = self.add_average(cum[1 - p], visits[:, None] * sigma[1 - p], step)
      regrets, cum = tuple(regrets), tuple(cum)
    return state.replace(regrets=regrets, cum_policy=cum, tables=infos,
                         frontier_overflow=overflow)


# The largest exact frontier bound external sampling on a device game uses without max_frontier.
MAX_EXACT_FRONTIER = 256


def outcome_sampling(epsilon: float = 0.6, batch: int = 1, *, dtype="float32",
                     **rules) -> OutcomeSampling:
  """Outcome-sampling MCCFR, ``epsilon``-on-policy exploration (Lisy et al. 2015, Sec. 3.1);
  ``rules``: ``regret_rule`` and ``averaging`` (:class:`MCCFRSolver`)."""
  return OutcomeSampling(epsilon=epsilon, batch=batch, dtype=dtype, **rules)


def external_sampling(batch: int = 1, *, dtype="float32", **rules) -> ExternalSampling:
  """External-sampling MCCFR (Lanctot et al. 2009); ``rules``: ``regret_rule`` and
  ``averaging`` (:class:`MCCFRSolver`), and ``max_frontier`` for device games
  (:class:`ExternalSampling`; not a hyperparameter of compiled-tree runs)."""
  return ExternalSampling(batch=batch, dtype=dtype, **rules)


SAMPLING_SOLVERS = {"mccfr-os": outcome_sampling, "mccfr-es": external_sampling}


def make_sampling_solver(name: str, batch: int = 1, **kwargs) -> MCCFRSolver:
  """A sampling solver by name (``mccfr-os``, ``mccfr-es``) for the CLI."""
  if name not in SAMPLING_SOLVERS:
    raise ValueError(f"unknown sampling solver {name!r}; choose one of {', '.join(SAMPLING_SOLVERS)}")
  if name == "mccfr-es" and "epsilon" in kwargs:
    raise ValueError("epsilon applies to outcome sampling (mccfr-os) only")
  return SAMPLING_SOLVERS[name](batch=batch, **kwargs)
