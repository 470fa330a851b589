"""The CFR family in sequence form: the sequence-form view and nine solvers.

``solver = cfr_plus()`` returns a frozen :class:`CFRSolver` following the
solver protocol (:mod:`jaxgt.solvers.base`): ``init(tree, *, weights=None)``,
``step``, ``run(tree, state, num_steps)`` (one jitted ``lax.fori_loop``) and
``policy`` (the average strategy). Everything is vmap-able over ``state`` (a
batch of root beliefs of the same game): see ``init_batch`` / ``run_batch``.

:func:`iteration` is the package's one CFR iteration
(:func:`jaxgt.solvers.cfr_iteration.iteration`: update order, tie rule, regret
and averaging rules) on the sequence form of a compiled game
(:class:`SequenceView`): full-game CFR, depth-limited solving
(:mod:`jaxgt.search.leaf`) and the re-solving gadget (:mod:`jaxgt.search.gadget`)
all run it. Player ``p``'s action values come from its own payoffs and terminal
weights; CFR, CFR+, LCFR, DCFR, PCFR+, DCFR+, PDCFR+, HS-PCFR+ and HS-DCFR
differ only in their rules (:mod:`jaxgt.solvers.cfr_rules`). The average is a
compensated (Kahan) sum with weights rescaled by powers of 16
(``CFRSolver.compensated``, default), so float32 runs keep improving over
millions of iterations (Leduc CFR+, 10^6 iterations: 1.5e-7 where plain float32
sums gave 1.4e-4). :meth:`CFRSolver.loop` sums blocks of ``average_block`` (16)
iterations plainly and adds each block with one compensated addition, so an
iteration costs what a plain sum costs (Leduc CFR+ in float32: the same
exploitability as a compensated addition every iteration at 5e5 to 10^6
iterations, to 4 digits; 1.54e-7 at 10^6). :meth:`CFRSolver.current_policy` is
the last iterate. A :class:`RootTransform` may change a player's terminal
weights before its update and observe its counterfactual values after. The
carry (:class:`~jaxgt.solvers.cfr_iteration.Iterate`) keeps the current
strategies and realization plans, so an iteration costs two regret matchings.
:meth:`CFRSolver.loop` runs the engine action-major (``Iterate.actions_first``:
``[A, I]`` arrays, sequences numbered ``a*I + i``, the legal masks transposed
once), where the sums over an information state's few actions run along the
long axis (on the CPU: Leduc 1.16-1.27x faster per iteration than ``[I, A]``);
``CFRState`` stays ``[I, A]`` (:func:`transpose_state` on entry and exit).
"""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any, Protocol

import jax
import jax.numpy as jnp
from jax import lax

from jaxgt import struct
from jaxgt.core import sequence_form
from jaxgt.core.game_tree import GameTree
from jaxgt.core.dtypes import cast_tree, dtype_name, resolve_dtype
from jaxgt.solvers.base import FullWidthSolver
from jaxgt.core.checks import check_positive_int, check_real
from jaxgt.solvers import cfr_iteration
from jaxgt.solvers.cfr_iteration import Iterate
from jaxgt.solvers.cfr_rules import (DiscountedRegretMatching, DiscountedRegretMatchingPlus,
                                     PowerAveraging, PredictiveRegretMatchingPlus, RegretMatching,
                                     PartialSum, RegretMatchingPlus, ScheduledAveraging,
                                     ScheduledDiscountedRegretMatching)


# ------------------------------------------------------------------ state
@struct.dataclass
class CFRState:
  """State of one CFR run (add a leading ``B`` to every field when batched)."""

  regrets: tuple  # ([I0, A], [I1, A]) cumulative regrets
  cum_policy: tuple  # ([I0, A], [I1, A]) weighted strategy sums
  iteration: jax.Array  # [] int32 completed iterations
  weights: jax.Array  # [T] terminal weights (chance reach under the root belief)
  # (extra_0, extra_1) the regret rule's extra state per player (() for the non-predictive rules)
  regret_state: tuple = ((), ())
  # ([I0, A], [I1, A]) Kahan compensation of cum_policy (((), ()) for uncompensated solvers)
  cum_compensation: tuple = ((), ())


class RootTransform(Protocol):
  """A hook on the root of the game, called inside :func:`iteration`.

  ``weights`` gives player ``p``'s terminal weights ``[T]`` just before its
  update (from the weights ``[T]`` it would otherwise use); ``update`` sees
  its counterfactual terminal values ``values [T]`` (utility to ``p`` times
  its terminal weights and the opponent's reach) and its own reach ``reach
  [T]`` of each terminal, both under the strategies of the update. With
  simultaneous updates every ``weights`` call precedes every update.
  """

  def weights(self, root_state, player: int, weights: jax.Array, t: jax.Array) -> tuple:
    """``(weights [T], root_state)`` for player ``player``'s update at iteration ``t``."""

  def update(self, root_state, player: int, values: jax.Array, reach: jax.Array,
             t: jax.Array) -> Any:
    """The root state after player ``player``'s update at iteration ``t``."""


# ------------------------------------------------------------------ the sequence-form view
@dataclasses.dataclass(frozen=True)
class SequenceView:
  """The sequence form of a whole compiled game (a
  :class:`~jaxgt.solvers.cfr_iteration.TreeView`): action values from each player's payoffs
  and terminal weights and the opponent's realization plan; the view's state is ``root``'s."""

  solver: Any  # the CFRSolver (its regret rule gives the strategies)
  trees: tuple  # (tree for player 0's update, tree for player 1's)
  weights: tuple = ()  # (w0 [T], w1 [T]) terminal weights (() before begin is called)
  root: Any = None  # a RootTransform or None
  actions_first: bool = False  # the layout (Iterate.actions_first)
  legal_masks: tuple = ()  # Iterate.legal

  @property
  def axis(self) -> int:
    return -2 if self.actions_first else -1

  def legal(self, p):
    return self.legal_masks[p] if self.actions_first else self.trees[p].players[p].legal

  def strategy(self, p, regrets, extra):
    pt = self.trees[p].players[p]
    rule = self.solver.regret_rule
    if not self.actions_first:
      sigma = rule.strategy(regrets, pt.legal, extra)
      return sigma, sequence_form.realization(pt, sigma)
    if "axis" in inspect.signature(rule.strategy).parameters:
      sigma = rule.strategy(regrets, self.legal_masks[p], extra, axis=-2)
    else:  # a rule written for [I, A] only: called on transposed arrays
      tree = self.trees[p]
      sigma = _swap(tree, p, rule.strategy(_swap(tree, p, regrets), pt.legal,
                                           _swap(tree, p, extra)))
    return sigma, sequence_form.realization(pt, sigma, actions_first=True)

  def begin(self, root_state, players, sigma, x, t):
    ws = list(self.weights)
    for p in players if self.root is not None else ():
      ws[p], root_state = self.root.weights(root_state, p, ws[p], t)
    return ws, root_state, t

  def values(self, ctx, p, sigma, x):
    ws, root_state, t = ctx
    tree, pt, af = self.trees[p], self.trees[p].players[p], self.actions_first
    # leaf values in p's grouped terminal order (sequence_form.terminal_sums), except for a
    # root transform, which sees them in terminal order
    values, leaf_seq = sequence_form.player_leaf_values(tree, p, x[1 - p], ws[p],
                                                        grouped=self.root is None,
                                                        actions_first=af)
    q, _ = sequence_form.sequence_values(pt, values, leaf_seq, sigma[p], tree.num_actions, af)
    if self.root is not None:
      own = tree.terminal_seq[p]
      if af:
        own = sequence_form.action_major(own, pt.num_infostates, tree.num_actions)
      root_state = self.root.update(root_state, p, values, x[p][own], t)
    return q, sequence_form.infostate_reach(pt, x[p], af), (ws, root_state, t)

  def end(self, ctx, players, t):
    return ctx[1]


def start(solver: CFRSolver, tree: GameTree, state: CFRState, root_state=(), *,
          actions_first: bool = False) -> Iterate:
  """The engine's carry for ``state``: its current strategies and realization plans
  (``actions_first``: ``state``'s arrays are already action-major, :func:`transpose_state`)."""
  legal = tuple(jnp.asarray(pt.legal).T for pt in tree.players) if actions_first else ()
  view = SequenceView(solver, (tree, tree), actions_first=actions_first, legal_masks=legal)
  return cfr_iteration.start(view, state, root_state, actions_first=actions_first, legal=legal)


def _swap(tree: GameTree, p: int, arrays):
  """``arrays`` (a pytree) with the last two axes of every ``[..., I_p, A]`` or ``[..., A,
  I_p]`` array swapped."""
  shapes = {(tree.num_infostates[p], tree.num_actions), (tree.num_actions, tree.num_infostates[p])}
  return jax.tree.map(lambda a: jnp.swapaxes(a, -1, -2)
                      if getattr(a, "ndim", 0) >= 2 and a.shape[-2:] in shapes else a, arrays)


def transpose_state(tree: GameTree, state: CFRState) -> CFRState:
  """``state`` with every per-(information state, action) array's last two axes swapped:
  ``[..., I, A]`` <-> ``[..., A, I]`` (the regrets, averages, compensations and the regret
  rule's arrays shaped like them), for the action-major loop (:meth:`CFRSolver.loop`)."""
  return state.replace(**{f: tuple(_swap(tree, p, getattr(state, f)[p]) for p in (0, 1))
                          for f in ("regrets", "cum_policy", "regret_state", "cum_compensation")})


def iteration(solver: CFRSolver, trees, carry: Iterate, *, weights=None,
              root: RootTransform | None = None, update_mask=None) -> Iterate:
  """One CFR iteration in sequence form (:func:`jaxgt.solvers.cfr_iteration.iteration` on a
  :class:`SequenceView`); pure and jit/vmap-able.

  Args:
    solver: the :class:`CFRSolver` (rules and update order).
    trees: a :class:`GameTree`, or one per player: ``trees[p]`` supplies the
      payoffs of player ``p``'s update (floats in the state's dtype; the
      trees differ only in ``terminal_payoff``).
    carry: the :class:`Iterate` (from :func:`start` or the previous iteration).
    weights: ``(w0 [T], w1 [T])`` each player's terminal weights, default
      ``carry.state.weights`` for both (counterfactual weights omit the
      updated player's own root range).
    root: an optional :class:`RootTransform`, with its state in
      ``carry.root_state``.
    update_mask: ``(m0 [I0], m1 [I1])`` bools or ``None``: information states
      outside the mask get zero instantaneous regrets (regrets that are zero
      stay zero, so their strategy stays uniform: the exact leaf evaluator of
      :mod:`jaxgt.search.gtcfr` solves only the continuation below its leaves).
  """
  trees = tuple(trees) if isinstance(trees, (tuple, list)) else (trees, trees)
  ws = tuple(weights if weights is not None else (carry.state.weights, carry.state.weights))
  view = SequenceView(solver, trees, ws, root, carry.actions_first, carry.legal)
  return cfr_iteration.iteration(solver, view, carry, update_mask)


# ------------------------------------------------------------------ the solver
@dataclasses.dataclass(frozen=True)
class CFRSolver(FullWidthSolver):
  """A CFR variant: its rules and update order; methods are pure functions."""

  name: str  # "cfr" | "cfr+" | "lcfr" | "dcfr" (or a user variant's name)
  # the regret rule (:class:`RegretMatching` or a subclass)
  regret_rule: RegretMatching = RegretMatching()
  averaging: PowerAveraging = PowerAveraging()  # the averaging rule (:class:`PowerAveraging`)
  alternating: bool = True  # alternating (default) or simultaneous updates
  dtype: str = "float32"  # float dtype of the state
  # average by compensated, rescaled sums (:meth:`PowerAveraging.add`); False: plain sums
  compensated: bool = True
  # compensated: iterations summed plainly into a block between compensated additions (loop;
  # 1: a compensated addition every iteration)
  average_block: int = 16
  # instantaneous regrets within A eps max|q| of zero taken for ties and set to zero
  # (:func:`jaxgt.solvers.cfr_iteration.exact_ties`); False: the plain float differences
  exact_ties: bool = True

  def __post_init__(self):
    b = self.average_block
    if isinstance(b, bool) or not isinstance(b, int) or b < 1:
      raise ValueError(f"average_block must be a positive integer, got {b!r}")
    if not isinstance(self.exact_ties, bool):
      raise ValueError(f"exact_ties must be True or False, got {self.exact_ties!r}")

  def init(self, tree: GameTree, *, weights=None) -> CFRState:
    """Zero regrets and averages; ``weights [T]`` (or ``[B, T]``) defaults to chance reach."""
    dtype = resolve_dtype(self.dtype)
    if weights is None:
      weights = tree.terminal_chance
    weights = jnp.asarray(weights, dtype)
    if weights.shape[-1:] != (tree.num_terminals,):
      raise ValueError(f"weights must have shape [..., {tree.num_terminals}] (one per terminal), "
                       f"got {weights.shape}")
    return self.init_tables(tree.num_infostates, tree.num_actions, weights)

  def init_tables(self, sizes, num_actions: int, weights) -> CFRState:
    """Zero tables of ``sizes = (I0, I1)`` rows and ``num_actions`` columns, with terminal
    weights ``weights [..., T]`` (their leading axes are the batch; ``T = 0`` for a view
    without terminal weights, e.g. the forest of :mod:`jaxgt.search.gtcfr`)."""
    batch = weights.shape[:-1]
    zeros = tuple(jnp.zeros(batch + (n, num_actions), weights.dtype) for n in sizes)
    comp = tuple(self.averaging.init(z) for z in zeros) if self.compensated else ((), ())
    return CFRState(regrets=zeros, cum_policy=zeros, iteration=jnp.zeros(batch, jnp.int32),
                    weights=weights, regret_state=tuple(self.regret_rule.init(z) for z in zeros),
                    cum_compensation=comp)

  def current_policy(self, tree: GameTree, state: CFRState) -> tuple:
    """The last iterate ``([I0, A], [I1, A])``: the strategies the next iteration plays
    (for a predictive rule, regret matching of the predicted regrets)."""
    return tuple(self.regret_rule.strategy(state.regrets[p], jnp.asarray(tree.players[p].legal),
                                           state.regret_state[p]) for p in (0, 1))

  def init_batch(self, tree: GameTree, weights) -> CFRState:
    """A batch of states, one per row of ``weights [B, T]``."""
    weights = jnp.asarray(weights)
    if weights.ndim != 2:
      raise ValueError(f"init_batch needs weights of shape [B, T], got {weights.shape}")
    return self.init(tree, weights=weights)

  def loop(self, tree: GameTree, state: CFRState, num_steps) -> CFRState:
    """``num_steps`` iterations (traceable; ``run`` jits it with the count traced, so one
    compilation serves every chunk size and ``run(tree, state, 0)`` compiles without
    computing).

    Compensated solvers sum the average in blocks of ``average_block``
    iterations (:class:`~jaxgt.solvers.cfr_rules.PartialSum`): plain additions
    inside a block, one compensated addition per block, so the iteration
    costs what a plain sum costs and the average keeps Kahan's accuracy.
    """
    tree = cast_tree(tree, state.weights.dtype)
    body = lambda _, c: iteration(self, tree, c)
    init = start(self, tree, transpose_state(tree, state), actions_first=True)
    return transpose_state(tree, self.iterate(body, init, num_steps).state)

  def iterate(self, body, carry: Iterate, num_steps) -> Iterate:
    """``num_steps`` applications of ``body(i, carry)`` (one engine iteration on some view),
    the average summed in blocks of ``average_block`` when compensated (see :meth:`loop`)."""
    if not self.compensated or self.average_block == 1:
      return lax.fori_loop(0, num_steps, body, carry)
    k = self.average_block

    def block(b, carry):
      """Block ``b``: ``min(k, num_steps - b k)`` iterations summed into a fresh
      :class:`PartialSum`, then merged into the average."""
      st = carry.state
      inner = carry.replace(state=st.replace(cum_policy=((), ()), cum_compensation=((), ())),
                            partial=tuple(PartialSum.zeros(c) for c in st.cum_policy))
      inner = lax.fori_loop(0, jnp.minimum(k, num_steps - b * k), body, inner)
      merged = [self.averaging.merge(st.cum_policy[p], st.cum_compensation[p], inner.partial[p])
                for p in (0, 1)]
      return inner.replace(state=inner.state.replace(
          cum_policy=tuple(m[0] for m in merged), cum_compensation=tuple(m[1] for m in merged)),
          partial=())

    return lax.fori_loop(0, (num_steps + k - 1) // k, block, carry)


# ------------------------------------------------------------------ the variants
def _common(alternating, dtype, compensated, exact_ties):
  """The keyword options every factory shares, checked (``exact_ties`` by the solver)."""
  for n, v in (("alternating", alternating), ("compensated", compensated)):
    if not isinstance(v, bool):
      raise ValueError(f"{n} must be True or False, got {v!r}")
  return dict(alternating=alternating, dtype=dtype_name(dtype), compensated=compensated,
              exact_ties=exact_ties)


def cfr(*, alternating: bool = True, dtype="float32", compensated: bool = True,
        exact_ties: bool = True) -> CFRSolver:
  """Vanilla CFR: regret matching, uniform averaging (OpenSpiel ``CFRSolver``)."""
  return CFRSolver("cfr", RegretMatching(), PowerAveraging(0.0),
                   **_common(alternating, dtype, compensated, exact_ties))


def cfr_plus(*, alternating: bool = True, dtype="float32", compensated: bool = True,
             exact_ties: bool = True) -> CFRSolver:
  """CFR+: regret matching+, linear averaging (OpenSpiel ``CFRPlusSolver``)."""
  return CFRSolver("cfr+", RegretMatchingPlus(), PowerAveraging(1.0),
                   **_common(alternating, dtype, compensated, exact_ties))


def linear_cfr(*, alternating: bool = True, dtype="float32", compensated: bool = True,
               exact_ties: bool = True) -> CFRSolver:
  """Linear CFR = DCFR(1, 1, 1) (OpenSpiel ``LCFRSolver``)."""
  return CFRSolver("lcfr", DiscountedRegretMatching(1.0, 1.0), PowerAveraging(1.0),
                   **_common(alternating, dtype, compensated, exact_ties))


def discounted_cfr(alpha: float = 1.5, beta: float = 0.0, gamma: float = 2.0, *,
                   alternating: bool = True, dtype="float32",
                   compensated: bool = True, exact_ties: bool = True) -> CFRSolver:
  """Discounted CFR(alpha, beta, gamma) (Brown & Sandholm 2019; OpenSpiel ``DCFRSolver``)."""
  for n, v in (("alpha", alpha), ("beta", beta), ("gamma", gamma)):
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v != v:
      raise ValueError(f"discounted_cfr: {n} must be a number, got {v!r}")
  if gamma < 0:
    raise ValueError(f"discounted_cfr: gamma must be >= 0, got {gamma}")
  return CFRSolver("dcfr", DiscountedRegretMatching(float(alpha), float(beta)),
                   PowerAveraging(float(gamma)),
                   **_common(alternating, dtype, compensated, exact_ties))


def predictive_cfr_plus(gamma: float = 2.0, *, alternating: bool = True, dtype="float32",
                        compensated: bool = True, exact_ties: bool = True) -> CFRSolver:
  """PCFR+ (Farina, Kroer & Sandholm, AAAI 2021): predictive regret matching+ with
  the last instantaneous regret as the prediction, averaging weight ``t^gamma``
  (quadratic by default)."""
  gamma = check_real("pcfr+: gamma", gamma, 0.0)
  return CFRSolver("pcfr+", PredictiveRegretMatchingPlus(), PowerAveraging(gamma),
                   **_common(alternating, dtype, compensated, exact_ties))


def _discounted_plus(name, rule, alpha, gamma, common) -> CFRSolver:
  """DCFR+ or PDCFR+: ``rule(alpha)`` with averaging weight ``t^gamma``, both checked."""
  alpha = check_real(f"{name}: alpha", alpha, 0.0, lo_open=True)
  gamma = check_real(f"{name}: gamma", gamma, 0.0)
  return CFRSolver(name, rule(alpha), PowerAveraging(gamma), **common)


def discounted_cfr_plus(alpha: float = 1.5, gamma: float = 4.0, *, alternating: bool = True,
                        dtype="float32", compensated: bool = True,
                        exact_ties: bool = True) -> CFRSolver:
  """DCFR+ (Xu et al., IJCAI 2024): regrets ``max(R (t-1)^alpha / ((t-1)^alpha + 1) + r, 0)``,
  averaging weight ``t^gamma`` (the paper's defaults)."""
  return _discounted_plus("dcfr+", DiscountedRegretMatchingPlus, alpha, gamma,
                          _common(alternating, dtype, compensated, exact_ties))


def predictive_discounted_cfr_plus(alpha: float = 2.3, gamma: float = 5.0, *,
                                   alternating: bool = True, dtype="float32",
                                   compensated: bool = True, exact_ties: bool = True) -> CFRSolver:
  """PDCFR+ (Xu et al., IJCAI 2024): DCFR+'s discounted regrets, predictive regret
  matching+ on ``R d_{t+1} + r``, averaging weight ``t^gamma`` (the paper's defaults)."""
  return _discounted_plus("pdcfr+", PredictiveRegretMatchingPlus, alpha, gamma,
                          _common(alternating, dtype, compensated, exact_ties))


def hs_predictive_cfr_plus(planned_iterations: int = 1000, gamma0: float = 30.0, *,
                           alternating: bool = True, dtype="float32",
                           compensated: bool = True, exact_ties: bool = True) -> CFRSolver:
  """HS-PCFR+(gamma0) (Zhang, McAleer & Sandholm 2024, arXiv:2404.09097, Eq. 4): PCFR+
  whose averaging exponent falls from ``gamma0`` to ``gamma0 - 5`` over the
  ``planned_iterations`` (:class:`~jaxgt.solvers.cfr_rules.ScheduledAveraging`)."""
  planned = check_positive_int("hs-pcfr+: planned_iterations", planned_iterations)
  gamma0 = check_real("hs-pcfr+: gamma0", gamma0, 5.0)
  return CFRSolver("hs-pcfr+", PredictiveRegretMatchingPlus(), ScheduledAveraging(gamma0, planned),
                   **_common(alternating, dtype, compensated, exact_ties))


def hs_discounted_cfr(planned_iterations: int = 1000, gamma0: float = 30.0, *,
                      alternating: bool = True, dtype="float32",
                      compensated: bool = True, exact_ties: bool = True) -> CFRSolver:
  """HS-DCFR(gamma0) (Zhang, McAleer & Sandholm 2024, Eq. 4): DCFR with ``alpha_t = 1 +
  3 p``, ``beta_t = -1 - 2 p`` and averaging exponent ``gamma0 - 5 p`` over the
  planned run (``p`` the fraction of ``planned_iterations`` done)."""
  planned = check_positive_int("hs-dcfr: planned_iterations", planned_iterations)
  gamma0 = check_real("hs-dcfr: gamma0", gamma0, 5.0)
  return CFRSolver("hs-dcfr", ScheduledDiscountedRegretMatching(planned),
                   ScheduledAveraging(gamma0, planned),
                   **_common(alternating, dtype, compensated, exact_ties))


# the CFR family by the name each factory gives its solver
SOLVERS = {factory().name: factory for factory in (
    cfr, cfr_plus, linear_cfr, discounted_cfr, predictive_cfr_plus, discounted_cfr_plus,
    predictive_discounted_cfr_plus, hs_predictive_cfr_plus, hs_discounted_cfr)}
# the solvers whose hyperparameters follow a planned iteration count (``planned_iterations``)
SCHEDULED = ("hs-pcfr+", "hs-dcfr")


def make_solver(name: str, **kwargs) -> CFRSolver:
  """A CFR-family solver by name (the keys of :data:`SOLVERS`)."""
  if name not in SOLVERS:
    raise ValueError(f"unknown solver {name!r}; choose one of {', '.join(SOLVERS)}")
  return SOLVERS[name](**kwargs)
