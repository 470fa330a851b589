"""CFR on the public tree with factored ranges (Moravcik et al. 2017, DeepStack; Brown et al.
2020, ReBeL; Schmid et al. 2023, Student of Games, Sec. 3).

Per public state, each player's reach and counterfactual values are vectors
over its private states (:class:`~jaxgt.core.factored.FactoredTree`); a
player's information state ``(d, k)`` (decision state ``d``, private state
``k``) is row ``d K_p + k`` of its ``[D_p K_p, A]`` tables. One iteration is
the CFR engine's (:func:`jaxgt.solvers.cfr_iteration.iteration`: update order,
tie rule, regret and averaging rules) on :class:`FactoredView`: each player's
realization plan (``[K_p]`` per sequence) is built one own depth at a time,
terminal values are ``payoff @ reach_opp`` (``[K0, K1]`` per terminal public
state, or the game's ``terminal_values``) and values come back up one own depth
at a time, the acting player's weighted by its strategy. So
the iterates are the sequence form's (:mod:`jaxgt.solvers.cfr`) on the same
game, to rounding, and cost ``O(public states x K)`` per iteration.

:class:`PublicTreeCFR` wraps a CFR-family solver: ``init`` / ``run`` (one jitted
``lax.fori_loop``) / ``policy``; :func:`best_response_values` and
:func:`exploitability` are exact on the factored tree (from given root ranges);
:func:`to_policy` maps a policy onto the enumerated game's information states.
"""

from __future__ import annotations

import dataclasses
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxgt.core import sequence_form
from jaxgt.core.dtypes import resolve_dtype
from jaxgt.core.factored import FactoredTree
from jaxgt.solvers import cfr_iteration
from jaxgt.solvers.cfr import CFRSolver, CFRState, transpose_state


# ------------------------------------------------------------------ passes over the tree
# The passes run action-major, as the CFR engine's loop does (Iterate.actions_first): a
# player's strategy and action values are [A, D_p K_p] (column d K + k: decision d, private
# state k), and a realization plan is [A D_p + 1, K_p]: row a D + d is sequence (d, a), one
# entry per private state, the last row the empty sequence. Sums over actions run along the
# long axis and rows are gathered and scattered whole (on a CPU far cheaper than element by
# element).
def _rows(tree: FactoredTree, player: int, seqs) -> np.ndarray:
  """Plan rows of sequences ``seqs`` numbered as the tree numbers them (``d A + a``, the
  empty one ``D_p A``)."""
  A, D = tree.num_actions, len(tree.decisions[player])
  seqs = np.asarray(seqs, np.int64)
  d, a = np.divmod(seqs, A)
  return np.where(seqs == D * A, A * D, a * D + d).astype(np.int32)


def _plan(tree: FactoredTree, player: int, sigma, root):
  """:func:`realization` of an action-major ``sigma [A, D_p K_p]``."""
  K, A = tree.num_private[player], tree.num_actions
  D = len(tree.decisions[player])
  s3 = sigma.reshape(A, D, K)
  root = root.astype(sigma.dtype)
  blocks, prev, prev_lo = [], None, 0
  for lo, hi in tree.own_levels[player]:
    if prev is None:  # own depth 0: below the empty sequence
      parent = jnp.broadcast_to(root, (hi - lo, K))
    else:  # the parents are the previous own depth's sequences
      d, a = np.divmod(tree.seq_parent[player][lo:hi], A)
      parent = prev[a, d - prev_lo]  # [m, K]
    block = parent[None] * s3[:, lo:hi]  # [A, m, K]
    blocks.append(block)
    prev, prev_lo = block, lo
  x = jnp.concatenate(blocks, axis=1) if blocks else jnp.zeros((A, 0, K), sigma.dtype)
  return jnp.concatenate([x.reshape(A * D, K), root[None, :]])


def _terminal_values(tree: FactoredTree, payoff, player: int, opp_plan, order):
  """``[T, K_p]`` ``player``'s counterfactual values at the terminal public states in
  ``order`` (``payoff``: :func:`grouped_payoff`, in that order) against ``opp_plan``."""
  o = 1 - player
  terminals = tree.terminals[order]
  r = opp_plan[_rows(tree, o, tree.last_seq[o][terminals])]  # [T, K_o]
  if tree.payoff is None:  # the game's own terminal values: payoff is (z [T], states [T])
    z, states = payoff
    v = jax.vmap(lambda st, rr: tree.game.terminal_values(st, player, rr))(states, r)
    return v.astype(r.dtype) * z[:, None]
  if player == 0:
    return jnp.sum(payoff * r[:, None, :], axis=2)
  return -jnp.sum(payoff * r[:, :, None], axis=1)


def _values(tree: FactoredTree, payoff, player: int, sigma, opp_plan, best: bool = False):
  """:func:`values` with an action-major ``sigma [A, D_p K_p]``; ``q`` is ``[A, D_p K_p]``."""
  K, A = tree.num_private[player], tree.num_actions
  D = len(tree.decisions[player])
  order, blocks, row = tree.terminal_groups[player]
  vt = _terminal_values(tree, payoff, player, opp_plan, order)
  rows, lo = [], 0
  for n, c in blocks:
    rows.append(jnp.sum(vt[lo:lo + n * c].reshape(n, c, K), axis=1))
    lo += n * c
  # plan row j = a D + d holds tree sequence d A + a; the last, the empty one
  j = np.arange(A * D)
  seq_of_row = np.concatenate([(j % D) * A + j // D, [D * A]])
  Q = jnp.concatenate(rows + [jnp.zeros((1, K), vt.dtype)])[row[seq_of_row]]  # [A D + 1, K]
  s3 = None if best else sigma.reshape(A, D, K)
  for lo, hi in reversed(tree.own_levels[player]):
    q = Q[:A * D].reshape(A, D, K)[:, lo:hi]  # [A, m, K]
    if best:
      v = jnp.max(jnp.where(tree.legal[player][lo:hi].T[:, :, None], q, -jnp.inf), axis=0)
    else:
      v = jnp.sum(q * s3[:, lo:hi], axis=0)
    Q = Q.at[_rows(tree, player, tree.seq_parent[player][lo:hi])].add(v)
  return Q[A * D], Q[:A * D].reshape(A, D * K)


def realization(tree: FactoredTree, player: int, sigma, root):
  """``[A D_p + 1, K_p]`` ``player``'s realization plan per private state (layout above): its
  own reach of each sequence when it plays ``sigma [D_p K_p, A]`` from root reach ``root
  [K_p]``; one step per own depth, each reading only the one above."""
  return _plan(tree, player, sigma.T, root)


def grouped_payoff(tree: FactoredTree, player: int, dtype=None):
  """The terminal payoffs in ``player``'s group order (:attr:`FactoredTree.terminal_groups`),
  for :func:`values`: ``[T, K0, K1]``, or where the game supplies ``terminal_values``, ``(z
  [T], states)`` (the public chance probabilities and the terminals' representative
  states)."""
  order = tree.terminal_groups[player][0]
  if tree.payoff is None:
    states = jax.tree.map(lambda x: jnp.asarray(x[tree.terminals[order]]), tree.states)
    return jnp.asarray(tree.terminal_z[order], dtype), states
  return jnp.asarray(tree.payoff[order], dtype)


def values(tree: FactoredTree, payoff, player: int, sigma, opp_plan, *, best: bool = False):
  """``(root [K_p], q [D_p K_p, A])``: ``player``'s counterfactual values at the root and
  action values of its information states, against the opponent's realization plan
  ``opp_plan``; its own moves follow ``sigma [D_p K_p, A]``, or (``best``) a best response
  (then ``sigma`` is unused). ``payoff``: :func:`grouped_payoff`. The terminals' values are
  summed per sequence by groups (a row sum and a gather), then one step per own depth,
  deepest first, adds each decision's value into its parent sequence."""
  root, q = _values(tree, payoff, player, None if best else sigma.T, opp_plan, best)
  return root, q.T


# ------------------------------------------------------------------ the engine's view
@dataclasses.dataclass(frozen=True)
class FactoredView:
  """The factored public tree as the CFR engine sees it (a
  :class:`~jaxgt.solvers.cfr_iteration.TreeView`; action-major ``[A, D_p K_p]`` tables,
  ``x[p]`` the realization plans)."""

  solver: Any  # the CFRSolver (its regret rule gives the strategies)
  tree: FactoredTree
  payoff: tuple  # per player, [T, K0, K1] in the state's dtype and its group order
  root: tuple  # (r0 [K0], r1 [K1]) root reaches
  axis: int = -2

  def legal(self, p):
    return jnp.asarray(_legal_rows(self.tree, p).T)

  def strategy(self, p, regrets, extra):
    sigma = self.solver.regret_rule.strategy(regrets, self.legal(p), extra, axis=-2)
    return sigma, _plan(self.tree, p, sigma, self.root[p])

  def begin(self, aux, players, sigma, x, t):
    return aux

  def values(self, ctx, p, sigma, x):
    _, q = _values(self.tree, self.payoff[p], p, sigma[p], x[1 - p])
    own = x[p][_rows(self.tree, p, self.tree.seq_parent[p])].reshape(-1)
    return q, own, ctx

  def end(self, ctx, players, t):
    return ctx


# ------------------------------------------------------------------ the solver
@dataclasses.dataclass(frozen=True)
class PublicTreeCFR:
  """A CFR-family solver run on a :class:`FactoredTree` (module docstring). The state is a
  :class:`~jaxgt.solvers.cfr.CFRState` whose ``weights [K0 + K1]`` are the root reaches
  (ones: the whole game; a batch of them: one run per root belief, vmap-able)."""

  solver: CFRSolver

  def __post_init__(self):
    if not isinstance(self.solver, CFRSolver):
      raise TypeError(f"PublicTreeCFR needs a CFR-family solver (jaxgt.solvers.cfr), got "
                      f"{type(self.solver).__name__}")

  def init(self, tree: FactoredTree, *, root_reach=None) -> CFRState:
    """Zero tables; ``root_reach = (r0 [K0], r1 [K1])`` each player's own reach of its
    private states at the root (default ones)."""
    _check_tree(tree)
    w = jnp.concatenate(_root_reach(tree, root_reach, resolve_dtype(self.solver.dtype)))
    return self.solver.init_tables(tree.num_infostates, tree.num_actions, w)

  def _view(self, tree: FactoredTree, state: CFRState) -> FactoredView:
    K0 = tree.num_private[0]
    w = state.weights
    payoff = tuple(grouped_payoff(tree, p, w.dtype) for p in (0, 1))
    return FactoredView(self.solver, tree, payoff, (w[:K0], w[K0:]))

  def loop(self, tree: FactoredTree, state: CFRState, num_steps) -> CFRState:
    """``num_steps`` iterations (traceable), run action-major (the tables transposed on entry
    and exit, :func:`~jaxgt.solvers.cfr.transpose_state`)."""
    view = self._view(tree, state)
    legal = tuple(view.legal(p) for p in (0, 1))
    carry = cfr_iteration.start(view, transpose_state(tree, state), actions_first=True,
                                legal=legal)
    body = lambda _, c: cfr_iteration.iteration(self.solver, view, c)
    return transpose_state(tree, self.solver.iterate(body, carry, num_steps).state)

  @partial(jax.jit, static_argnums=(0, 1))
  def _run(self, tree, state, num_steps):
    return self.loop(tree, state, num_steps)

  def run(self, tree: FactoredTree, state: CFRState, num_steps: int) -> CFRState:
    """``num_steps`` iterations in one jitted loop (the count is traced: one compilation
    serves every count)."""
    _check_tree(tree)
    if isinstance(num_steps, bool) or not isinstance(num_steps, (int, np.integer)) or \
       num_steps < 0:
      raise ValueError(f"num_steps must be a non-negative integer, got {num_steps!r}")
    if state.regrets[0].shape[-2:] != (tree.num_infostates[0], tree.num_actions):
      raise ValueError(f"state tables have shape {state.regrets[0].shape[-2:]}, this tree's "
                       f"are {(tree.num_infostates[0], tree.num_actions)} (another game?)")
    return self._run(tree, state, jnp.int32(num_steps))

  def policy(self, tree: FactoredTree, state: CFRState) -> tuple:
    """The average strategy ``([D0 K0, A], [D1 K1, A])`` (uniform where never reached)."""
    return tuple(sequence_form.normalize(state.cum_policy[p], _legal_rows(tree, p))
                 for p in (0, 1))

  def current_policy(self, tree: FactoredTree, state: CFRState) -> tuple:
    """The last iterate (the strategies the next iteration plays)."""
    return tuple(self.solver.regret_rule.strategy(state.regrets[p], _legal_rows(tree, p),
                                                  state.regret_state[p]) for p in (0, 1))


def _legal_rows(tree: FactoredTree, p: int):
  return jnp.asarray(np.repeat(tree.legal[p], tree.num_private[p], axis=0))


def _check_tree(tree):
  if not isinstance(tree, FactoredTree):
    raise TypeError(f"expected a FactoredTree (jaxgt.core.factored.build_factored_tree), got "
                    f"{type(tree).__name__}")


# ------------------------------------------------------------------ evaluation
def check_policy(tree: FactoredTree, policy) -> tuple:
  """``policy`` as two arrays ``[D_p K_p, A]``, checked against ``tree``'s shapes."""
  _check_tree(tree)
  if not isinstance(policy, (tuple, list)) or len(policy) != 2:
    raise ValueError("a factored policy is a pair of arrays ([D0 K0, A], [D1 K1, A])")
  out = []
  for p in (0, 1):
    a = jnp.asarray(policy[p])
    want = (tree.num_infostates[p], tree.num_actions)
    if a.shape != want:
      raise ValueError(f"policy[{p}] has shape {a.shape}, this tree needs {want} (another "
                       "game?)")
    out.append(a)
  return tuple(out)


def _root_reach(tree: FactoredTree, root_reach, dtype) -> tuple:
  """``(r0 [K0], r1 [K1])`` in ``dtype``: ``root_reach`` checked (ones for ``None``)."""
  if root_reach is None:
    return tuple(jnp.ones(k, dtype) for k in tree.num_private)
  out = []
  for p, k in enumerate(tree.num_private):
    r = np.asarray(root_reach[p], np.float64)
    if r.shape != (k,):
      raise ValueError(f"root_reach[{p}] must have shape ({k},) (one per private state of "
                       f"player {p}), got {r.shape}")
    if not np.all(np.isfinite(r)) or np.any(r < 0):
      raise ValueError(f"root_reach[{p}] must be finite and non-negative")
    out.append(jnp.asarray(r, dtype))
  return tuple(out)


def expected_value(tree: FactoredTree, policy, root_reach=None):
  """Player 0's expected utility when both follow ``policy`` from the root reaches
  ``root_reach = (r0 [K0], r1 [K1])`` (default ones: the whole game from the tree's root)."""
  policy = check_policy(tree, policy)
  dtype = policy[0].dtype
  roots = _root_reach(tree, root_reach, dtype)
  x1 = realization(tree, 1, policy[1], roots[1])
  v, _ = values(tree, grouped_payoff(tree, 0, dtype), 0, policy[0], x1)
  return jnp.sum(v * roots[0])


def best_response_values(tree: FactoredTree, policy, root_reach=None) -> tuple:
  """``(BR_0, BR_1)``: each player's best-response value against the other's ``policy`` from
  the root reaches ``root_reach`` (default ones)."""
  policy = check_policy(tree, policy)
  dtype = policy[0].dtype
  roots = _root_reach(tree, root_reach, dtype)
  out = []
  for p in (0, 1):
    o = 1 - p
    x = realization(tree, o, policy[o], roots[o])
    v, _ = values(tree, grouped_payoff(tree, p, dtype), p, None, x, best=True)
    out.append(jnp.sum(v * roots[p]))
  return tuple(out)


def exploitability(tree: FactoredTree, policy, root_reach=None):
  """``NashConv / 2`` (OpenSpiel's convention), exact on the factored tree, from the root
  reaches ``root_reach`` (default ones). From a subgame's root, ``root_reach`` are the
  ranges the subgame is solved for, and the figure is exploitability within it."""
  b0, b1 = best_response_values(tree, policy, root_reach)
  return 0.5 * (b0 + b1)


def to_policy(tree: FactoredTree, compiled, policy):
  """``policy`` on the enumerated game ``compiled``'s information states (``([I0, A], [I1,
  A])`` NumPy arrays; a :class:`~jaxgt.core.game_tree.CompiledGame` of the same game)."""
  policy = check_policy(tree, policy)
  out = []
  for p in (0, 1):
    index = compiled.infostate_index(p)
    probs = np.asarray(policy[p])
    arr = np.zeros((compiled.tree.num_infostates[p], tree.num_actions))
    seen = 0
    for row, key in enumerate(tree.infostate_strings(p)):
      if key is None:
        continue
      if key not in index:
        raise ValueError(f"{key!r} is not an information state of {compiled.name}")
      arr[index[key]] = probs[row]
      seen += 1
    if seen != compiled.tree.num_infostates[p]:
      raise ValueError(f"the factored tree has {seen} information states of player {p}, "
                       f"{compiled.name} has {compiled.tree.num_infostates[p]}")
    out.append(arr)
  return tuple(out)


def rows_of(tree: FactoredTree, compiled, player: int) -> tuple:
  """``(rows, infostates)``: int arrays pairing each of ``player``'s factored rows that chance
  reaches with its information state in ``compiled``."""
  index = compiled.infostate_index(player)
  pairs = [(r, index[k]) for r, k in enumerate(tree.infostate_strings(player)) if k is not None]
  return tuple(np.array(x, np.int64) for x in zip(*pairs))
