"""Reference implementation for the tests: leaf evaluators of host-extracted subgames and their
chunked solve (the library's depth-limited solving before the device tree), an oracle.

Leaf evaluators of depth-limited subgames and the chunked solve that queries them.

A leaf evaluator gives player 0's value of every leaf history ``[L]`` of a
:class:`~jaxgt.search.subgame.Subgame` from the current beliefs at the leaves, as
Brown et al. 2018 (Sec. 3) and Schmid et al. 2023 (Sec. 3) need: with values depending on the
ranges, CFR queries the evaluator inside its jitted loop every ``chunk``
iterations. The interface is a pair of pure functions (optax style):

* ``init() -> state`` (a pytree of arrays; e.g. a warm-started inner solver
  and the arrays it needs: it is called outside the jitted solve and passed
  in as an argument, so large arrays are not compiled in as constants);
* ``apply(state, leaves: LeafInput) -> (values [2, L], state)``: row ``p``
  is player 0's value of each leaf history used in player ``p``'s update
  (the rows differ when each player is valued by its best response to the
  other's continuation, as in CFR-D; a ``[L]`` result is used for both).

``LeafInput`` carries both players' own reach ``[2, L]`` of each leaf history
in the subgame and its chance-times-root-belief weight ``[L]``, so the
ranges of each leaf public state are one segment sum away
(:func:`leaf_ranges`). Provided: :func:`continuation` (exact values under a
fixed continuation profile), :func:`equilibrium` (exact equilibrium values of
the remaining game for the current ranges, all leaves solved together by the
CFR family) and :func:`from_callable` (any user function, e.g. a network:
one batched call for all leaves, shape-checked while tracing).

:func:`run_chunked` is the one driver "query the evaluator, then iterate":
it serves :func:`solve` / :func:`solve_batch` and the re-solving gadget
(:mod:`jaxgt.search.resolving`), each iteration being the CFR engine's
(:func:`jaxgt.solvers.cfr.iteration`).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxgt import struct
from jaxgt.core import sequence_form
from jaxgt.core.checks import check_nonnegative_int, check_positive_int
from jaxgt.core.public_tree import history_values
from reference_subgame import Subgame, extract
from jaxgt.solvers import cfr as cfr_lib


@struct.dataclass
class LeafInput:
  """Beliefs at the leaves of a subgame."""

  reach: Any  # [2, L] each player's own reach of each leaf history
  weight: Any  # [L] chance reach times root belief of each leaf history


@dataclasses.dataclass(frozen=True, eq=False)
class LeafEvaluator:
  """``init() -> state`` and ``apply(state, LeafInput) -> (values [2, L] or [L], state)``.

  ``final`` (same signature, optional) values the leaves for the final
  average policy; ``apply`` is used when it is ``None``.
  """

  init: Callable[[], Any]
  apply: Callable[[Any, LeafInput], tuple]
  final: Callable[[Any, LeafInput], tuple] | None = None
  name: str = "leaf"


def leaf_input(sub: Subgame, tree, policy, weights, root_reach=(None, None)) -> LeafInput:
  """The :class:`LeafInput` of ``policy`` (subgame arrays) under terminal ``weights [T]``.

  ``root_reach[p]`` (``[T]`` or ``None``) multiplies player ``p``'s own reach
  of each leaf: a root range that ``weights`` leaves out (the re-solving
  gadget's opponent range).
  """
  K = max(sub.leaf_choices, 1)
  term = np.flatnonzero((sub.terminal_leaf >= 0) & (sub.terminal_leaf % K == 0))
  term = jnp.asarray(term[np.argsort(sub.terminal_leaf[term])])
  nodes = jnp.asarray(sub.leaf_nodes)
  reach = []
  for p in (0, 1):
    r = sequence_form.realization(tree.players[p], policy[p])[tree.last_seq[p][nodes]]
    reach.append(r if root_reach[p] is None else r * root_reach[p][term])
  return LeafInput(reach=jnp.stack(reach), weight=weights[term])


def continuation(sub: Subgame, policy) -> LeafEvaluator:
  """Exact leaf values when both players follow ``policy`` (full-game arrays) below the leaves."""
  tree = sub.full.game.device_tree(policy[0].dtype)
  sequence_form.check_policy(tree, policy)
  values = history_values(tree, policy)[jnp.asarray(sub.leaf_histories)]
  return LeafEvaluator(init=lambda: (), apply=lambda s, leaves: (values, s),
                       name="continuation")


def equilibrium(sub: Subgame, solver, iterations: int = 1,
                final_iterations: int = 1000) -> LeafEvaluator:
  """Equilibrium values of the remaining game for the current leaf beliefs.

  All leaf public states form one continuation game (a subgame rooted at
  all of them, no cut), so every leaf is solved in one batched call. Each
  query runs ``iterations`` iterations of ``solver`` on it with the current
  leaf beliefs as its root belief, warm-started from the previous query,
  and values the leaves under its current strategies; with the subgame's
  own CFR this is CFR on the trunk and the continuation together (the
  decomposition of Schmid et al. 2023, Sec. 3, with exact continuation solving in
  place of a value network), so the trunk converges to its part of an
  equilibrium. The final query (:func:`solve`, for the average policy)
  solves the continuation afresh for ``final_iterations`` iterations and
  values the leaves under its average policy: the leaf equilibrium values for
  those ranges. Both solves use counterfactual weights (each player's updates
  exclude its own reach to the leaves), so a player's continuation below a
  leaf it does not reach is still a counterfactual best reply. The state is
  ``(CFRState, continuation arrays)``.
  """
  if not sub.leaf_public:
    raise ValueError("the subgame has no leaves")
  iterations = check_nonnegative_int("iterations", iterations)
  final_iterations = check_nonnegative_int("final_iterations", final_iterations)
  cont = extract(sub.full, list(sub.leaf_public))
  pos = {int(h): i for i, h in enumerate(cont.root_histories)}
  root_of_leaf = jnp.asarray([pos[int(h)] for h in sub.leaf_histories])
  child = jnp.asarray(cont.root_children()[[pos[int(h)] for h in sub.leaf_histories]])
  dtype = solver.dtype
  ctree = cont.compiled.device_tree(dtype)
  host = cont.tree
  R = len(cont.root_histories)
  # The continuation's arrays travel in the evaluator state (a jit argument
  # of the solve), not as constants folded into the compiled program.
  consts = (ctree, jnp.asarray(cont.chance_below_root, dtype), jnp.asarray(cont.terminal_root),
            root_of_leaf, child)

  def weights(c, leaves, players=(0, 1)):
    _, below, troot, rol, _ = c
    w = leaves.weight
    for p in players:
      w = w * leaves.reach[p]
    reach = jnp.zeros(R, w.dtype).at[rol].set(w)
    return (below * reach[troot]).astype(dtype)

  def run(st, c, leaves, n):
    # Player p's regrets in the continuation see chance and the opponent's
    # reach only (counterfactual values), as in CFR on the whole game: a
    # player's continuation below a leaf it does not reach is still a
    # counterfactual best reply (its values there matter to the other
    # player's updates and to re-solving).
    ct = c[0]
    wp = (weights(c, leaves, (1,)), weights(c, leaves, (0,)))
    carry = cfr_lib.start(solver, ct, st.replace(weights=weights(c, leaves)))
    return lax.fori_loop(0, n, lambda _, it: cfr_lib.iteration(solver, ct, it, weights=wp), carry)

  def values(c, policy, leaves):
    return history_values(c[0], policy, host=host)[c[4]].astype(leaves.weight.dtype)

  def apply(state, leaves):
    st, c = state
    carry = run(st, c, leaves, iterations)
    return values(c, carry.sigma, leaves), (carry.state, c)

  def final(state, leaves):
    _, c = state
    st = run(solver.init(c[0], weights=weights(c, leaves)), c, leaves, final_iterations).state
    return values(c, solver.average_policy(c[0], st), leaves), state

  fresh = solver.init(ctree, weights=jnp.zeros(cont.tree.num_terminals, dtype))
  return LeafEvaluator(init=lambda: (fresh, consts), apply=apply, final=final,
                       name="equilibrium")


@struct.dataclass
class SubgameState:
  """State of a depth-limited solve (add ``B`` in front when batched)."""

  cfr: Any  # the :class:`~jaxgt.solvers.cfr.CFRState` of the subgame
  evaluator: Any  # the evaluator's state
  leaf_values: Any  # [2, L] leaf values of the last query (for the final average policy)


def run_chunked(sub: Subgame, tree, evaluator: LeafEvaluator, leaves, step, carry,
                evaluator_state, num_iterations: int, chunk: int):
  """The chunked solve of a depth-limited subgame; returns ``(carry, evaluator_state)``.

  Every ``chunk`` iterations ``evaluator`` values the leaves for the current
  beliefs ``leaves(carry) -> LeafInput`` (Brown et al. 2018, Sec. 3, Schmid et al. 2023, Sec. 3:
  leaf values depend on the ranges); then ``step(carry, trees) -> carry``
  runs one iteration ``chunk`` times with those values fixed, ``trees[p]``
  being ``tree`` with row ``p`` of the values filled in (player ``p``'s
  payoffs). Traceable; ``num_iterations`` and ``chunk`` are static.
  """
  def body(n, c):
    carry, es = c
    v, es = evaluator.apply(es, leaves(carry))
    v = _two_rows(sub, v, tree.terminal_payoff.dtype)
    trees = tuple(sub.with_payoff(tree, v[p]) for p in (0, 1))
    return lax.fori_loop(0, n, lambda _, x: step(x, trees), carry), es

  chunks, rest = divmod(num_iterations, chunk)
  c = lax.fori_loop(0, chunks, lambda _, c: body(chunk, c), (carry, evaluator_state))
  return body(rest, c) if rest else c


def final_leaf_values(sub: Subgame, evaluator: LeafEvaluator, evaluator_state,
                      leaves: LeafInput):
  """``(values [2, L], evaluator_state)``: the leaves valued for the final average policy
  (the evaluator's ``final``, else its ``apply``)."""
  v, evaluator_state = (evaluator.final or evaluator.apply)(evaluator_state, leaves)
  return _two_rows(sub, v, leaves.weight.dtype), evaluator_state


def check_finite_leaf_values(state):
  """``state`` (with ``leaf_values``); raises ``ValueError`` if they are NaN or infinite."""
  if not bool(jnp.all(jnp.isfinite(state.leaf_values))):
    raise ValueError("leaf evaluator returned NaN or infinite values")
  return state


def _two_rows(sub: Subgame, v, dtype):
  single = (sub.num_leaves, sub.leaf_choices) if sub.leaf_choices else (sub.num_leaves,)
  v = jnp.asarray(v, dtype)
  return jnp.broadcast_to(v, (2,) + single) if v.shape == single else v


def solve(sub: Subgame, solver, weights, evaluator: LeafEvaluator, num_iterations: int,
          chunk: int = 1) -> SubgameState:
  """``num_iterations`` iterations of ``solver`` on ``sub``, querying ``evaluator`` every ``chunk``.

  Leaves are valued for the current strategies; at the end the evaluator's
  ``final`` values them for the average policy.
  ``weights [T]`` come from :meth:`Subgame.root_weights`. Raises
  ``ValueError`` if the leaf values come back non-finite.
  """
  fn = _solve_fn(sub, solver, evaluator, check_nonnegative_int("num_iterations", num_iterations),
                 check_positive_int("chunk", chunk), False)
  return check_finite_leaf_values(fn(jnp.asarray(weights, solver.dtype)))


@functools.lru_cache(maxsize=64)
def _solve_fn(sub, solver, evaluator, num_iterations, chunk, batched):
  tree = sub.compiled.device_tree(solver.dtype)

  def one(weights, es):
    if weights.shape != (tree.num_terminals,):
      raise ValueError(f"weights must have shape [{tree.num_terminals}], got {weights.shape}")
    carry = cfr_lib.start(solver, tree, solver.init(tree, weights=weights))
    carry, es = run_chunked(sub, tree, evaluator,
                            lambda c: leaf_input(sub, tree, c.sigma, weights),
                            lambda c, trees: cfr_lib.iteration(solver, trees, c),
                            carry, es, num_iterations, chunk)
    avg = solver.average_policy(tree, carry.state)
    v, es = final_leaf_values(sub, evaluator, es, leaf_input(sub, tree, avg, weights))
    return SubgameState(cfr=carry.state, evaluator=es, leaf_values=v)

  # The evaluator's initial state is an argument: its arrays (e.g. the
  # continuation game of ``equilibrium``) are not compiled in as constants.
  fn = jax.jit(jax.vmap(one, in_axes=(0, None)) if batched else one)
  return lambda weights: fn(weights, evaluator.init())


