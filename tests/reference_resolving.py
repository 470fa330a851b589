"""Reference implementation for the tests: safe re-solving of host-extracted subgames (the
library's re-solving before the device tree), an independent oracle.

Safe re-solving from summaries, and the summaries continual re-solving carries.

Re-solving (Schmid et al. 2023, "Imperfect Information Search, Decomposition, and
Re-Solving"; DeepStack; Burch et al. 2014): a subgame rooted at public state
``s`` is re-solved from summary information only: *our* range ``r_i [K_i]``
at ``s`` and the opponent's counterfactual values ``v_o [K_o]`` there. In the
auxiliary game the opponent, at each of its information states ``J`` at
``s``, either *terminates* (receives ``v_o(J)``) or *follows* into the
subgame; the follow probabilities are its range. Solving this game gives
every opponent information state at most ``v_o(J)`` against the re-solved
strategy (up to the solver's regret), so with ``v_o`` the opponent's
best-response values to the old strategy, swapping the new strategy in never
raises the opponent's best-response value (the safety property tested in
``tests/test_resolving.py``).

The gadget (:mod:`jaxgt.search.gadget`) runs inside the CFR engine's
iteration on the ordinary compiled :class:`~jaxgt.search.subgame.Subgame`, as
in DeepStack's implementation; leaf evaluators (:mod:`jaxgt.search.leaf`) are
queried by the same chunked driver as :func:`jaxgt.search.leaf.solve`.

Normalisation: ranges sum to one over the public state's (augmented)
information states (:class:`~jaxgt.core.public_tree.PublicTree` order);
``v_o(J) = sum_{h in J} pi_chance(h) r_i(I_i(h)) u_o(h)`` in the opponent's
utility, i.e. full-game counterfactual values divided by our total own
reach at ``s`` (:func:`summary_from_policy`).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxgt import struct
from jaxgt.core import sequence_form
from jaxgt.core.checks import check_distribution, check_nonnegative_int, check_positive_int
from jaxgt.core.public_tree import PublicTree, history_values
from jaxgt.games.base import TERMINAL
import reference_leaf as leaf_lib
from jaxgt.core.sequence_form import safe_div as normalized
from jaxgt.search.gadget import Gadget, check_alpha
from reference_subgame import Subgame
from jaxgt.solvers import cfr as cfr_lib
from jaxgt.search.subgame import summary_from_policy  # noqa: F401  (the summaries the tests use)



# ------------------------------------------------------------------ summaries
@dataclasses.dataclass(frozen=True, eq=False)
class Summary:
  """Re-solving summary at one public state (Schmid et al. 2023: "our range and the
  opponent's counterfactual values"), plus the opponent's range for mixing.
  """

  public_state: int  # full-game public state index
  player: int  # i, the re-solving player
  our_range: np.ndarray  # [K_i] normalised range of player i
  # [K_o] opponent's counterfactual values (normalised as in the module docstring), or None (no
  # summary: solve with fixed ranges)
  opp_values: np.ndarray | None
  # [K_o] opponent's normalised range (for alpha mixing and fixed-range solves)
  opp_range: np.ndarray
  # False when player i never reaches the public state under the previous search (the range is then
  # uniform; its play there cannot change any exploitability)
  reached: bool = True


# ------------------------------------------------------------------ gadget solve
@dataclasses.dataclass(frozen=True, eq=False)
class _Prepared:
  """Host-side index arrays of one subgame for re-solving player ``player``."""

  sub: Subgame
  player: int
  term_root_aug: np.ndarray   # [2, T] root range position of each terminal's root history
  term_chance: np.ndarray     # [T] full-game chance reach of each terminal
  hist_root: np.ndarray       # [H_sub] root index of each subgame history (-1 above the roots)
  sizes: tuple                # (K_0, K_1)


@functools.lru_cache(maxsize=256)
def _prepare(sub: Subgame, player: int) -> _Prepared:
  if len(sub.root_public) != 1:
    raise ValueError("re-solving needs a subgame with one root public state, got "
                     f"{len(sub.root_public)}")
  if sub.leaf_choices:
    raise ValueError("re-solving supports single-valued leaves only (leaf_choices=0)")
  if player not in (0, 1):
    raise ValueError(f"player must be 0 or 1, got {player!r}")
  tr = sub.terminal_root
  term_chance = sub.chance_below_root * sub.full.chance_reach[sub.root_histories][tr]
  hist_root = np.full(sub.tree.num_histories, -1, np.int64)
  hist_root[sub.root_index + 1:] = sub.root_of(np.arange(sub.root_index + 1, len(hist_root)))
  return _Prepared(sub, int(player), sub.root_aug[:, tr], term_chance, hist_root,
                   sub.range_sizes())


@struct.dataclass
class ResolveState:
  """Result of a (batched: leading ``B``) re-solve."""

  cfr: Any  # :class:`~jaxgt.solvers.cfr.CFRState` of the subgame (weights of the last iteration)
  gadget_regrets: Any  # [K_o, 2] cumulative (follow, terminate) regrets
  opp_range: Any  # [K_o] average opponent root range (average follow probabilities for alpha=None)
  leaf_values: Any  # [2, L] leaf values for the average policy
  evaluator: Any  # the leaf evaluator's state
  policy: Any = None  # ([I0_sub, A], [I1_sub, A]) average policy of the subgame
  # [H_sub] average over iterations (solver's averaging weights) of our own reach (root range
  # included) times player 0's value below each subgame history under the iterate and its leaf
  # values: the self-play counterfactual values Schmid et al. (2023) use as opt-out values (None
  # unless asked for with self_play_values)
  history_values: Any = None
  # [2, H_sub] own reach of each history under the average policy, root range included (ours, and
  # the opponent's average root range)
  history_reach: Any = None


def _no_leaves() -> leaf_lib.LeafEvaluator:
  return leaf_lib.LeafEvaluator(init=lambda: (), apply=lambda s, leaves: (leaves.weight[:0], s),
                                name="none")


def default_evaluator(sub: Subgame, solver) -> leaf_lib.LeafEvaluator:
  """Exact equilibrium leaf values (:func:`jaxgt.search.leaf.equilibrium`; none without leaves)."""
  return leaf_lib.equilibrium(sub, solver) if sub.num_leaves else _no_leaves()


def resolve(sub: Subgame, solver, player: int, our_range, opp_values=None, opp_range=None, *,
            evaluator: leaf_lib.LeafEvaluator | None = None, iterations: int = 1000,
            alpha: float | None = None, chunk: int = 1,
            self_play_values: bool = True) -> ResolveState:
  """Re-solves ``sub`` for ``player`` with the gadget (one jitted call).

  Args:
    sub: a subgame with one root public state (:func:`jaxgt.search.subgame.extract`).
    solver: a CFR-family solver (float64 recommended).
    player: ``i``, whose strategy is re-solved.
    our_range: ``[K_i]`` player ``i``'s range at the root.
    opp_values: ``[K_o]`` the opponent's counterfactual values at the root
      (terminate values); ``None`` solves with the fixed ``opp_range``.
    opp_range: ``[K_o]`` the opponent's previous range (needed for
      ``alpha`` mixing and fixed-range solves).
    evaluator: leaf evaluator; default :func:`default_evaluator`.
    iterations: CFR iterations; ``chunk``: evaluator queried every ``chunk``.
    alpha: ``None`` for the exact gadget; a number in ``[0, 1]`` for Schmid et al.'s
      modified gadget ``alpha f / sum(f) + (1 - alpha) opp_range``.
    self_play_values: also average the self-play values below every history
      (``ResolveState.history_values``, read by :func:`child_summaries`;
      one more pass over the subgame per iteration).
  """
  return _resolve(sub, solver, player, (our_range, opp_values, opp_range), evaluator,
                  iterations, alpha, chunk, self_play_values, batched=False)


def _resolve(sub, solver, player, summary, evaluator, iterations, alpha, chunk,
             self_play_values, batched):
  prep = _prepare(sub, player)
  batch_shape = ()
  if batched:
    shape = np.shape(summary[0])
    if len(shape) != 2:
      raise ValueError(f"resolve_batch needs our_range [B, K], got shape {shape}")
    batch_shape = shape[:1]
  arrays, gadget, mixed = _check_summary(prep, *summary, alpha, batch_shape)
  ev = evaluator if evaluator is not None else default_evaluator(sub, solver)
  fn = _resolve_fn(prep, solver, ev, check_nonnegative_int("iterations", iterations),
                   check_positive_int("chunk", chunk), gadget, mixed, bool(self_play_values),
                   batched)
  return leaf_lib.check_finite_leaf_values(fn(*[jnp.asarray(a, solver.dtype) for a in arrays]))


def _check_summary(prep: _Prepared, our_range, opp_values, opp_range, alpha, batch_shape):
  """``((r_i, r_prev, v_term, alpha), gadget, mixed)`` checked (vectorised over a batch)."""
  i, o = prep.player, 1 - prep.player
  ps = prep.sub.root_public[0]
  sizes = prep.sizes
  alpha = check_alpha(alpha)

  def distribution(name, p, r):
    r = check_distribution(f"{name} (range of player {p} at public state {ps})", r, sizes[p])
    if r.shape != batch_shape + (sizes[p],):
      raise ValueError(f"{name} must have shape {batch_shape + (sizes[p],)}, got {r.shape}")
    return r

  r_i = distribution("our_range", i, our_range)
  gadget = opp_values is not None
  v_term = np.zeros(batch_shape + (sizes[o],))
  if gadget:
    v_term = np.asarray(opp_values, np.float64)
    if v_term.shape != batch_shape + (sizes[o],):
      raise ValueError(f"opponent values at public state {ps} must have shape "
                       f"{batch_shape + (sizes[o],)} (one per opponent information state), "
                       f"got {v_term.shape}")
    if not np.isfinite(v_term).all():
      raise ValueError("opponent values contain NaN or infinite entries")
  mixed = gadget and alpha is not None
  if opp_range is None:
    if not gadget or mixed:
      raise ValueError("opp_range is needed for a fixed-range solve and for alpha mixing")
    r_prev = np.full(batch_shape + (sizes[o],), 1.0 / max(sizes[o], 1))
  else:
    r_prev = distribution("opp_range", o, opp_range)
  return (r_i, r_prev, v_term, 1.0 if alpha is None else alpha), gadget, mixed


@functools.lru_cache(maxsize=16)
def _resolve_fn(prep: _Prepared, solver, evaluator, iterations, chunk, gadget, mixed,
                self_play_values, batched):
  sub = prep.sub
  tree = sub.compiled.device_tree(solver.dtype)
  dtype = tree.terminal_payoff.dtype
  i, o = prep.player, 1 - prep.player
  root_position = [jnp.asarray(prep.term_root_aug[p]) for p in (0, 1)]
  term_chance = jnp.asarray(prep.term_chance, dtype)
  hist_position = [jnp.asarray(sub.root_aug[p][np.maximum(prep.hist_root, 0)]) for p in (0, 1)]
  above = jnp.asarray(prep.hist_root < 0)

  def own_root(p, r):  # [H_sub] player p's root range at each history (0 above the roots)
    return jnp.where(above, 0.0, r[hist_position[p]])

  def opponent_reach(r_o):
    return tuple(r_o[root_position[o]] if p == o else None for p in (0, 1))

  def run(our_range, previous_range, terminate_values, alpha, es):
    base = term_chance * our_range[root_position[i]]  # the opponent's counterfactual weights
    ours = own_root(i, our_range)
    transform = Gadget(solver, o, root_position[o], terminate_values if gadget else None,
                       previous_range, alpha if mixed else None)
    carry = cfr_lib.start(solver, tree, solver.init(tree, weights=base), transform.init())

    def leaves(c):
      it = c[0]
      return leaf_lib.leaf_input(sub, tree, it.sigma, base,
                                 opponent_reach(transform.opponent_range(it.root_state)))

    def step(c, trees):
      it, acc = c
      if self_play_values:
        # Self-play values of this iterate (Schmid et al. 2023: average counterfactual values
        # as the next re-solve's opt-out values): our reach times player 0's value.
        value = history_values(trees[o], it.sigma, host=tree)
        acc = solver.averaging.accumulate(acc, ours * it.x[i][tree.last_seq[i]] * value,
                                          it.state.iteration + 1)
      return cfr_lib.iteration(solver, trees, it, root=transform), acc

    acc = jnp.zeros(tree.num_histories, dtype) if self_play_values else ()
    (carry, acc), es = leaf_lib.run_chunked(sub, tree, evaluator, leaves, step, (carry, acc), es,
                                            iterations, chunk)
    gs = carry.root_state
    r_avg = transform.average_range(gs)
    avg = solver.average_policy(tree, carry.state)
    r_leaf = normalized(gs.range_sum, gs.range_sum.sum(), 1.0)
    v, es = leaf_lib.final_leaf_values(sub, evaluator, es,
                                       leaf_lib.leaf_input(sub, tree, avg, base,
                                                           opponent_reach(r_leaf)))
    own = [None, None]
    own[i], own[o] = ours, own_root(o, r_avg)
    reach = jnp.stack([own[p] * sequence_form.realization(tree.players[p], avg[p])[tree.last_seq[p]]
                       for p in (0, 1)])
    return ResolveState(
        cfr=carry.state.replace(weights=base * gs.range[root_position[o]]),
        gadget_regrets=gs.regrets, opp_range=r_avg, leaf_values=v, evaluator=es, policy=avg,
        history_values=normalized(acc, gs.weight_sum, 0.0) if self_play_values else None,
        history_reach=reach)

  # The evaluator's initial state is an argument, not compiled-in constants.
  fn = jax.jit(jax.vmap(run, in_axes=(0, 0, 0, None, None)) if batched else run)
  return lambda *a: fn(*a, evaluator.init())


# ------------------------------------------------------------------ summaries below the root
def child_summaries(sub: Subgame, player: int, state: ResolveState, targets) -> dict:
  """``{public state: Summary}`` at public states ``targets`` inside ``sub`` after a
  (single) re-solve for ``player``: our range and the opponent's range under the
  average policy, the opponent's average self-play counterfactual values (Schmid et al. 2023,
  "Self-play Values as Re-solving Constraints")."""
  if state.history_values is None:
    raise ValueError("the re-solve did not keep self-play values: resolve with "
                     "self_play_values=True")
  pt = sub.full
  i, o = player, 1 - player
  reach = np.asarray(state.history_reach, np.float64)
  cf = np.asarray(state.history_values, np.float64)
  hof = sub.history_of
  full_tree = pt.game.tree
  hist_public = np.asarray(full_tree.history_public)
  out = {}
  sign_o = 1.0 if o == 0 else -1.0
  for c in targets:
    hs = np.flatnonzero((hof >= 0) & (hist_public[np.maximum(hof, 0)] == c))
    full_h = hof[hs]
    keep = np.asarray(full_tree.player)[full_h] != TERMINAL
    hs, full_h = hs[keep], full_h[keep]
    infos = [pt.infostates[p][c] for p in (0, 1)]
    pos = [np.searchsorted(infos[p], pt.aug[p][full_h]) for p in (0, 1)]
    ri = np.zeros(len(infos[i]))
    ri[pos[i]] = reach[i, hs]
    ro = np.zeros(len(infos[o]))
    ro[pos[o]] = reach[o, hs]
    vo = np.zeros(len(infos[o]))
    np.add.at(vo, pos[o], sign_o * pt.chance_reach[full_h] * cf[hs])
    z = ri.sum()
    reached = bool(z > 1e-12)
    ri = ri / z if reached else np.full(len(ri), 1.0 / len(ri))
    ro = ro / ro.sum() if ro.sum() > 1e-12 else np.full(len(ro), 1.0 / len(ro))
    out[int(c)] = Summary(int(c), i, ri, vo / z if reached else None, ro, reached)
  return out


def branch_leaves(pt: PublicTree, root: int, target: int, depth_limit: int) -> list:
  """Leaves of the re-solving subgame: ``root``'s single branch to ``target``
  (off-branch children are leaves, Schmid et al. 2023 "Modified Continual Re-solving")
  plus the public states ``depth_limit`` levels below ``target``."""
  path = [target]
  while path[-1] != root:
    u = int(pt.parent[path[-1]])
    if u < 0:
      raise ValueError(f"public state {target} is not below {root}")
    path.append(u)
  path = path[::-1]
  on = set(path)
  leaves = [c for u in path[:-1] for c in pt.children[u] if c not in on]
  frontier = [target]
  for _ in range(depth_limit):
    frontier = [c for u in frontier for c in pt.children[u]]
  return leaves + frontier
