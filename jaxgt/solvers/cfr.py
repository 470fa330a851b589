"""The CFR family in sequence form: CFR, CFR+, Linear CFR, Discounted CFR.

``solver = cfr_plus()`` returns a frozen :class:`CFRSolver` whose pure
functions are ``init(tree, weights=None) -> CFRState``, ``step`` (one
iteration) and ``run(tree, state, num_iterations)`` (many iterations in one
jitted ``lax.fori_loop``). ``average_policy`` / ``current_policy`` read the
state. Everything is vmap-able over ``state`` (a batch of root beliefs of the
same game): see ``init_batch`` / ``run_batch``.

Update at iteration ``t = 1, 2, ...`` for the updated player (alternating:
player 0 then player 1, the second seeing the first's new strategy;
simultaneous: both from the same strategies), as in OpenSpiel's
``_CFRSolverBase`` and ``_DCFRSolver``:

* ``R <- R + r_t`` (instantaneous counterfactual regret);
* CFR+ (regret matching+): ``R <- max(R, 0)``;
* DCFR(alpha, beta, gamma): positive ``R`` times ``t^a / (t^a + 1)``,
  negative times ``t^b / (t^b + 1)``; LCFR is DCFR(1, 1, 1);
* average strategy accumulates ``own reach * sigma_t`` with weight ``1``
  (CFR), ``t`` (CFR+, linear averaging) or ``t^gamma`` (LCFR/DCFR).

References: Zinkevich et al. 2007 (CFR); Tammelin 2014 (CFR+); Brown &
Sandholm 2019 (LCFR/DCFR).
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
from flax import struct
from jax import lax

from jaxgt.core.dtypes import resolve_dtype
from jaxgt.core.compiler import GameTree
from jaxgt.core import sequence_form


@struct.dataclass
class CFRState:
  """State of one CFR run (add a leading ``B`` to every field when batched).

  Attributes:
    regrets: ``([I0, A], [I1, A])`` cumulative regrets.
    cum_policy: ``([I0, A], [I1, A])`` weighted strategy sums.
    iteration: ``[] int32`` completed iterations.
    weights: ``[T]`` terminal weights (chance reach under the root belief).
  """

  regrets: tuple
  cum_policy: tuple
  iteration: jax.Array
  weights: jax.Array


@dataclasses.dataclass(frozen=True)
class CFRSolver:
  """Hyperparameters of a CFR variant; methods are pure functions.

  Attributes:
    name: ``"cfr" | "cfr+" | "lcfr" | "dcfr"``.
    regret_matching_plus: clip cumulative regrets at zero after each update.
    discount: ``(alpha, beta)`` regret discounting, or ``None``.
    averaging_exponent: average weight is ``t ** averaging_exponent``.
    alternating: alternating (default) or simultaneous updates.
    dtype: float dtype of the state.
  """

  name: str
  regret_matching_plus: bool = False
  discount: tuple | None = None
  averaging_exponent: float = 0.0
  alternating: bool = True
  dtype: str = "float32"

  def init(self, tree: GameTree, weights=None) -> CFRState:
    """Zero regrets and averages; ``weights [T]`` defaults to chance reach."""
    dtype = resolve_dtype(self.dtype)
    if weights is None:
      weights = tree.terminal_chance
    weights = jnp.asarray(weights, dtype)
    if weights.shape[-1:] != (tree.num_terminals,):
      raise ValueError(f"weights must have shape [..., {tree.num_terminals}] (one per terminal), "
                       f"got {weights.shape}")
    batch = weights.shape[:-1]
    zeros = tuple(jnp.zeros(batch + (n, tree.num_actions), dtype) for n in tree.num_infostates)
    return CFRState(regrets=zeros, cum_policy=zeros,
                    iteration=jnp.zeros(batch, jnp.int32), weights=weights)

  def init_batch(self, tree: GameTree, weights) -> CFRState:
    """A batch of states, one per row of ``weights [B, T]``."""
    weights = jnp.asarray(weights)
    if weights.ndim != 2:
      raise ValueError(f"init_batch needs weights of shape [B, T], got {weights.shape}")
    return self.init(tree, weights)

  def step(self, tree: GameTree, state: CFRState) -> CFRState:
    """One iteration (both players)."""
    return _step(self, _cast_tree(tree, state), state)

  def run(self, tree: GameTree, state: CFRState, num_iterations: int) -> CFRState:
    """``num_iterations`` iterations inside one jitted call."""
    _check_unbatched(state)
    return _run(self, tree, state, _count(num_iterations))

  def run_batch(self, tree: GameTree, state: CFRState, num_iterations: int) -> CFRState:
    """``run`` vmapped over the leading batch axis of ``state``."""
    return _run_batch(self, tree, state, _count(num_iterations))

  def current_policy(self, tree: GameTree, state: CFRState):
    """Regret-matching strategy of the next iteration: ``([I0, A], [I1, A])``."""
    return tuple(sequence_form.regret_matching(r, jnp.asarray(pt.legal))
                 for r, pt in zip(state.regrets, tree.players))

  def average_policy(self, tree: GameTree, state: CFRState):
    """Normalised average strategy (uniform where never reached)."""
    return tuple(sequence_form.normalize(c, jnp.asarray(pt.legal))
                 for c, pt in zip(state.cum_policy, tree.players))


def _check_unbatched(state):
  if state.iteration.ndim != 0:
    raise ValueError(f"state is batched (batch shape {state.iteration.shape}); use run_batch")


def _cast_tree(tree: GameTree, state: CFRState) -> GameTree:
  dtype = state.weights.dtype
  return jax.tree_util.tree_map(
      lambda x: x.astype(dtype) if jnp.issubdtype(jnp.asarray(x).dtype, jnp.floating) else x, tree)


def player_update(cfg: CFRSolver, tree: GameTree, state: CFRState, p: int, sigma, x, t):
  """One player's half of a CFR iteration: returns its new ``(regrets [I_p, A], cum_policy [I_p, A])``.

  Public building block for solvers that drive the iteration themselves
  (depth-limited solving with leaf values, re-solving gadgets): ``sigma``
  are both players' current strategies ``([I0, A], [I1, A])``, ``x`` their
  realization plans ``([S0], [S1])`` (:func:`policies`), ``t`` the 1-based
  iteration (``[] int32``; discounting and averaging weights). Player ``p``'s
  counterfactual values use ``state.weights [T]`` and ``x[1 - p]``, so
  passing a ``state`` whose weights omit ``p``'s own root range gives
  counterfactual values in the strict sense. ``tree`` floats must be in the
  state's dtype. Pure and jit/vmap-able; :meth:`CFRSolver.step` is both
  players' updates in turn.
  """
  pt = tree.players[p]
  dtype = state.weights.dtype
  leaf = sequence_form.terminal_leaf_values(tree, p, x[1 - p], state.weights)
  q, _ = sequence_form.sequence_values(pt, leaf, tree.terminal_seq[p], sigma[p], tree.num_actions)
  value = jnp.sum(sigma[p] * q, axis=-1, keepdims=True)
  r = jnp.where(pt.legal, q - value, 0.0)
  R = state.regrets[p] + r
  if cfg.regret_matching_plus:
    R = jnp.maximum(R, 0.0)
  if cfg.discount is not None:
    a, b = cfg.discount
    tf = t.astype(dtype)
    pos = tf ** a / (tf ** a + 1.0)
    neg = tf ** b / (tf ** b + 1.0)
    R = jnp.where(R >= 0, R * pos, R * neg)
  reach = sequence_form.infostate_reach(pt, x[p])
  wt = t.astype(dtype) ** cfg.averaging_exponent if cfg.averaging_exponent else 1.0
  C = state.cum_policy[p] + wt * reach[:, None] * sigma[p]
  return R, C


def policies(tree: GameTree, regrets):
  """Regret-matching strategies and realization plans: ``([sigma0, sigma1], [x0, x1])``.

  ``sigma_p [I_p, A]`` from cumulative regrets ``regrets[p]``; ``x_p [S_p]``
  the realization plan of ``sigma_p`` (inputs of :func:`player_update`).
  """
  sigma = [sequence_form.regret_matching(regrets[p], tree.players[p].legal) for p in (0, 1)]
  return sigma, [sequence_form.realization(tree.players[p], sigma[p]) for p in (0, 1)]


def _step_carry(cfg: CFRSolver, tree: GameTree, carry):
  """One iteration; the carry keeps the current strategies and realization plans."""
  state, sigma, x = carry
  t = state.iteration + 1
  sigma, x = list(sigma), list(x)
  regrets = list(state.regrets)
  cum = list(state.cum_policy)
  players = tree.players
  if cfg.alternating:
    # Player 1's update sees player 0's new strategy (OpenSpiel's order).
    for p in (0, 1):
      regrets[p], cum[p] = player_update(cfg, tree, state, p, sigma, x, t)
      sigma[p] = sequence_form.regret_matching(regrets[p], players[p].legal)
      x[p] = sequence_form.realization(players[p], sigma[p])
  else:
    for p in (0, 1):
      regrets[p], cum[p] = player_update(cfg, tree, state, p, sigma, x, t)
    sigma, x = policies(tree, regrets)
  state = CFRState(regrets=tuple(regrets), cum_policy=tuple(cum), iteration=t,
                   weights=state.weights)
  return state, tuple(sigma), tuple(x)


def _step(cfg: CFRSolver, tree: GameTree, state: CFRState) -> CFRState:
  sigma, x = policies(tree, state.regrets)
  return _step_carry(cfg, tree, (state, tuple(sigma), tuple(x)))[0]


def _loop(cfg: CFRSolver, tree: GameTree, state: CFRState, num_iterations):
  sigma, x = policies(tree, state.regrets)
  carry = lax.fori_loop(0, num_iterations, lambda _, c: _step_carry(cfg, tree, c),
                        (state, tuple(sigma), tuple(x)))
  return carry[0]


def _count(n) -> jax.Array:
  if isinstance(n, bool) or not isinstance(n, (int, jnp.integer)) or n < 0:
    raise ValueError(f"num_iterations must be a non-negative integer, got {n!r}")
  return jnp.asarray(n, jnp.int32)


# The iteration count is traced: one compilation serves every chunk size, and
# ``run(tree, state, 0)`` compiles without computing.
@functools.partial(jax.jit, static_argnums=(0,))
def _run(cfg: CFRSolver, tree: GameTree, state: CFRState, num_iterations) -> CFRState:
  tree = _cast_tree(tree, state)
  return _loop(cfg, tree, state, num_iterations)


@functools.partial(jax.jit, static_argnums=(0,))
def _run_batch(cfg: CFRSolver, tree: GameTree, state: CFRState, num_iterations):
  tree = _cast_tree(tree, state)
  return jax.vmap(lambda s: _loop(cfg, tree, s, num_iterations))(state)


def cfr(*, alternating: bool = True, dtype="float32") -> CFRSolver:
  """Vanilla CFR: regret matching, uniform averaging (OpenSpiel ``CFRSolver``)."""
  return CFRSolver("cfr", alternating=alternating, dtype=_dt(dtype))


def cfr_plus(*, alternating: bool = True, dtype="float32") -> CFRSolver:
  """CFR+: regret matching+, linear averaging (OpenSpiel ``CFRPlusSolver``)."""
  return CFRSolver("cfr+", regret_matching_plus=True, averaging_exponent=1.0,
                   alternating=alternating, dtype=_dt(dtype))


def linear_cfr(*, alternating: bool = True, dtype="float32") -> CFRSolver:
  """Linear CFR = DCFR(1, 1, 1) (OpenSpiel ``LCFRSolver``)."""
  return CFRSolver("lcfr", discount=(1.0, 1.0), averaging_exponent=1.0,
                   alternating=alternating, dtype=_dt(dtype))


def discounted_cfr(alpha: float = 1.5, beta: float = 0.0, gamma: float = 2.0, *,
                   alternating: bool = True, dtype="float32") -> CFRSolver:
  """Discounted CFR(alpha, beta, gamma) (Brown & Sandholm 2019; OpenSpiel ``DCFRSolver``)."""
  for n, v in (("alpha", alpha), ("beta", beta), ("gamma", gamma)):
    if not isinstance(v, (int, float)) or v != v:
      raise ValueError(f"discounted_cfr: {n} must be a number, got {v!r}")
  if gamma < 0:
    raise ValueError(f"discounted_cfr: gamma must be >= 0, got {gamma}")
  return CFRSolver("dcfr", discount=(float(alpha), float(beta)), averaging_exponent=float(gamma),
                   alternating=alternating, dtype=_dt(dtype))


SOLVERS = {"cfr": cfr, "cfr+": cfr_plus, "lcfr": linear_cfr, "dcfr": discounted_cfr}


def make_solver(name: str, **kwargs) -> CFRSolver:
  """A CFR-family solver by name (``cfr``, ``cfr+``, ``lcfr``, ``dcfr``)."""
  if name not in SOLVERS:
    raise ValueError(f"unknown solver {name!r}; choose one of {', '.join(SOLVERS)}")
  return SOLVERS[name](**kwargs)


def _dt(dtype) -> str:
  d = resolve_dtype(dtype)
  return jnp.dtype(d).name
