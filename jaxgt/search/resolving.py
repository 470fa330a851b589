"""Safe re-solving (the gadget) and modified continual re-solving.

Re-solving (``003``, "Imperfect Information Search, Decomposition, and
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

The gadget runs inside the CFR iteration on the ordinary compiled
:class:`~jaxgt.search.subgame.Subgame` (as in DeepStack's implementation): each
iteration the gadget's regret matching gives the follow probabilities
``f [K_o]``, the opponent's root range is ``f`` (``alpha=None``: the exact
auxiliary game) or, modified as in ``003`` ("Modified Continual
Re-solving"), ``alpha f / sum(f) + (1 - alpha) r_prev`` with the opponent's
range ``r_prev`` from the previous search (``alpha = 0.5`` there); the CFR
family updates the subgame with that range (leaf evaluators of
:mod:`jaxgt.search.leaf` queried as in :func:`jaxgt.search.leaf.solve`), and the
gadget's regrets are updated from the opponent's counterfactual values of
following. The gadget uses regret matching+ when the solver does (CFR+, as in
DeepStack), plain regret matching otherwise.

Normalisation: ranges sum to one over the public state's (augmented)
information states (:class:`~jaxgt.core.public_tree.PublicTree` order);
``v_o(J) = sum_{h in J} pi_chance(h) r_i(I_i(h)) u_o(h)`` in the opponent's
utility, i.e. full-game counterfactual values divided by our total own
reach at ``s`` (:func:`summary_from_policy`).

Continual re-solving (:class:`ContinualResolvingAgent`, ``003`` "Modified
Continual Re-solving"): a player's first decision solves the game from the
root public state with both (known) root ranges; every later decision at
public state ``s`` re-solves from the previous search's summary at
``s_prev``, the deepest public state on the way to ``s`` that the previous
search covered (``s`` itself when it lay inside that tree; always below the
previous decision, so our range there is the one we actually played). The
subgame is ``s_prev``'s single branch down to ``s`` (off-branch public states
are leaves) plus ``depth_limit`` public levels below ``s``; the modified
gadget mixes in the opponent's previous range. Summaries (our range, the
opponent's range under the average policy, and the opponent's average
self-play counterfactual values, ``003`` "Self-play Values as Re-solving
Constraints") are read off the search lazily at whichever public state the
next decision needs.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from jax import lax

from jaxgt.search import leaf as leaf_lib
from jaxgt.games.base import TERMINAL
from jaxgt.core.public_tree import PublicTree, counterfactual_values, history_values, ranges
from jaxgt.solvers import cfr as cfr_lib
from jaxgt.core import sequence_form
from jaxgt.search.subgame import Subgame

DEFAULT_ALPHA = 0.5  # ``003``, "Modified Continual Re-solving"


# ------------------------------------------------------------------ summaries
@dataclasses.dataclass(frozen=True, eq=False)
class Summary:
  """Re-solving summary at one public state (``003``: "our range and the
  opponent's counterfactual values"), plus the opponent's range for mixing.

  Attributes:
    public_state: full-game public state index.
    player: ``i``, the re-solving player.
    our_range: ``[K_i]`` normalised range of player ``i``.
    opp_values: ``[K_o]`` opponent's counterfactual values (normalised as in
      the module docstring), or ``None`` (no summary: solve with fixed ranges).
    opp_range: ``[K_o]`` opponent's normalised range (for ``alpha`` mixing and
      fixed-range solves).
    reached: ``False`` when player ``i`` never reaches the public state under
      the previous search (the range is then uniform; its play there cannot
      change any exploitability).
  """

  public_state: int
  player: int
  our_range: np.ndarray
  opp_values: np.ndarray | None
  opp_range: np.ndarray
  reached: bool = True


def summary_from_policy(pt: PublicTree, public_state, player: int, policy,
                        best_response: bool = True) -> Summary:
  """The summary at ``public_state`` of a full-game ``policy`` (e.g. a blueprint).

  ``opp_values`` are the opponent's counterfactual best-response values to
  ``policy[player]`` (``best_response=True``, the safe choice) or its
  counterfactual values under ``policy``.
  """
  ps = pt.public_id(public_state)
  i, o = player, 1 - player
  tree = pt.game.device_tree("float64")
  policy = tuple(jnp.asarray(p, jnp.float64) for p in policy)
  sequence_form.check_policy(tree, policy)
  prof = list(policy)
  if best_response:
    prof[o] = sequence_form.best_response(tree, policy, o)
  reach = ranges(pt, prof, normalize=False)
  cfv = counterfactual_values(pt, tuple(prof))
  Ii, Io = pt.infostates[i][ps], pt.infostates[o][ps]
  ri = np.asarray(reach[i])[Ii]
  z = ri.sum()
  if z <= 0:
    raise ValueError(f"player {player} never reaches public state {ps} under this policy")
  ro = np.asarray(reach[o])[Io]
  ro = ro / ro.sum() if ro.sum() > 0 else np.full(len(Io), 1.0 / len(Io))
  return Summary(ps, player, ri / z, np.asarray(cfv[o])[Io] / z, ro)


# ------------------------------------------------------------------ gadget solve
@dataclasses.dataclass(frozen=True, eq=False)
class _Prepared:
  """Host-side index arrays of one subgame for re-solving player ``player``."""

  sub: Subgame
  player: int
  term_root_aug: np.ndarray   # [2, T] root range position of each terminal's root history
  term_chance: np.ndarray     # [T] full-game chance reach of each terminal
  leaf_terms: np.ndarray      # [L] terminal of each leaf (leaf order)
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
  leaf = np.flatnonzero(sub.terminal_leaf >= 0)
  leaf_terms = leaf[np.argsort(sub.terminal_leaf[leaf])]
  st = sub.tree
  H = st.num_histories
  hist_root = np.full(H, -1, np.int64)
  top = sub.root_index
  for h in range(top + 1, H):
    par = st.parent[h]
    hist_root[h] = st.action[h] if par == top else hist_root[par]
  return _Prepared(sub, int(player), sub.root_aug[:, tr], term_chance,
                   leaf_terms.astype(np.int32), hist_root, sub.range_sizes())


@struct.dataclass
class ResolveState:
  """Result of a (batched: leading ``B``) re-solve.

  Attributes:
    cfr: :class:`~jaxgt.solvers.cfr.CFRState` of the subgame (``weights`` of
      the last iteration).
    gadget_regrets: ``[K_o, 2]`` cumulative (follow, terminate) regrets.
    opp_range: ``[K_o]`` average opponent root range (average follow
      probabilities for ``alpha=None``).
    leaf_values: ``[2, L]`` leaf values for the average policy.
    evaluator: the leaf evaluator's state.
    policy: ``([I0_sub, A], [I1_sub, A])`` average policy of the subgame.
    history_values: ``[H_sub]`` average over iterations (solver's averaging
      weights) of our own reach (root range included) times player 0's value
      below each subgame history under the iterate and its leaf values: the
      self-play counterfactual values ``003`` uses as opt-out values.
    history_reach: ``[2, H_sub]`` own reach of each history under the average
      policy, root range included (ours, and the opponent's average root
      range).
  """

  cfr: Any
  gadget_regrets: Any
  opp_range: Any
  leaf_values: Any
  evaluator: Any
  policy: Any = None
  history_values: Any = None
  history_reach: Any = None


def _no_leaves() -> leaf_lib.LeafEvaluator:
  return leaf_lib.LeafEvaluator(init=lambda: (), apply=lambda s, leaves: (leaves.weight[:0], s),
                          name="none")


def default_evaluator(sub: Subgame, solver) -> leaf_lib.LeafEvaluator:
  """Exact equilibrium leaf values (:func:`jaxgt.search.leaf.equilibrium`; none without leaves)."""
  return leaf_lib.equilibrium(sub, solver) if sub.num_leaves else _no_leaves()


def resolve(sub: Subgame, solver, player: int, our_range, opp_values=None, opp_range=None, *,
            evaluator: leaf_lib.LeafEvaluator | None = None, iterations: int = 1000,
            alpha: float | None = None, chunk: int = 1) -> ResolveState:
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
    alpha: ``None`` for the exact gadget; a number in ``[0, 1]`` for ``003``'s
      modified gadget ``alpha f / sum(f) + (1 - alpha) opp_range``.
  """
  prep = _prepare(sub, player)
  args = _check_args(prep, our_range, opp_values, opp_range, alpha)
  ev = evaluator if evaluator is not None else default_evaluator(sub, solver)
  fn = _resolve_fn(prep, solver, ev, leaf_lib._int(iterations), leaf_lib._int(chunk), *args[4:])
  return _checked(fn(*[jnp.asarray(a, solver.dtype) for a in args[:4]]))


def resolve_batch(sub: Subgame, solver, player: int, our_range, opp_values=None,
                  opp_range=None, *, evaluator: leaf_lib.LeafEvaluator | None = None,
                  iterations: int = 1000, alpha: float | None = None,
                  chunk: int = 1) -> ResolveState:
  """:func:`resolve` for ``B`` summaries at once (arrays ``[B, K]``, ``alpha`` shared; one vmapped call)."""
  prep = _prepare(sub, player)
  our_range = np.asarray(our_range, np.float64)
  if our_range.ndim != 2:
    raise ValueError(f"resolve_batch needs our_range [B, K], got {our_range.shape}")
  B = our_range.shape[0]
  rows = []
  for b in range(B):
    rows.append(_check_args(prep, our_range[b],
                            None if opp_values is None else np.asarray(opp_values)[b],
                            None if opp_range is None else np.asarray(opp_range)[b], alpha))
  ev = evaluator if evaluator is not None else default_evaluator(sub, solver)
  fn = _resolve_fn(prep, solver, ev, leaf_lib._int(iterations), leaf_lib._int(chunk), *rows[0][4:],
                   batched=True)
  stacked = [jnp.asarray(np.stack([r[k] for r in rows]), solver.dtype) for k in range(3)]
  return _checked(fn(*stacked, jnp.asarray(rows[0][3], solver.dtype)))


def _check_args(prep: _Prepared, our_range, opp_values, opp_range, alpha):
  sub, i = prep.sub, prep.player
  o = 1 - i
  ps = sub.root_public[0]
  pt = sub.full
  ri = pt.check_range(ps, i, our_range)
  Ko = prep.sizes[o]
  gadget = opp_values is not None
  if gadget:
    vo = np.asarray(opp_values, np.float64)
    if vo.shape != (Ko,):
      raise ValueError(f"opponent values at public state {ps} must have shape ({Ko},) (one per "
                       f"opponent information state), got {vo.shape}")
    if not np.isfinite(vo).all():
      raise ValueError("opponent values contain NaN or infinite entries")
  else:
    vo = np.zeros(Ko)
  mixed = gadget and alpha is not None
  if alpha is not None and (isinstance(alpha, bool) or not 0.0 <= float(alpha) <= 1.0):
    raise ValueError(f"alpha must be None or in [0, 1], got {alpha!r}")
  if opp_range is None:
    if not gadget or mixed:
      raise ValueError("opp_range is needed for a fixed-range solve and for alpha mixing")
    ro = np.full(Ko, 1.0 / max(Ko, 1))
  else:
    ro = pt.check_range(ps, o, opp_range)
  return ri, ro, vo, float(1.0 if alpha is None else alpha), gadget, mixed


def _checked(st: ResolveState) -> ResolveState:
  if not np.isfinite(np.asarray(st.leaf_values)).all():
    raise ValueError("leaf evaluator returned NaN or infinite values")
  return st


@functools.lru_cache(maxsize=16)
def _resolve_fn(prep: _Prepared, solver, evaluator, iterations, chunk, gadget, mixed,
                batched=False):
  sub = prep.sub
  tree = sub.compiled.device_tree(solver.dtype)
  dtype = tree.terminal_payoff.dtype
  i = prep.player
  o = 1 - i
  ra = [jnp.asarray(prep.term_root_aug[p]) for p in (0, 1)]
  tc = jnp.asarray(prep.term_chance, dtype)
  leaf_terms = jnp.asarray(prep.leaf_terms)
  leaf_ra_o = ra[o][leaf_terms]
  nodes = jnp.asarray(sub.leaf_nodes)
  Ko = prep.sizes[o]
  sign_o = 1.0 if o == 0 else -1.0
  L = sub.num_leaves
  chunks, rest = divmod(iterations, max(chunk, 1))
  exp = solver.averaging_exponent

  def run(r_i, r_prev, v_term, alpha, es0):
    base = tc * r_i[ra[i]]  # chance times our root range: the opponent's counterfactual weights

    def opp_range(gr):
      if not gadget:
        return r_prev, jnp.ones(Ko, dtype)
      pos = jnp.maximum(gr, 0.0)
      tot = pos.sum(-1)
      f = jnp.where(tot > 0, pos[:, 0] / jnp.where(tot > 0, tot, 1.0), 0.5)
      if not mixed:
        return f, f
      s = f.sum()
      fn = jnp.where(s > 0, f / jnp.where(s > 0, s, 1.0), r_prev)
      return alpha * fn + (1.0 - alpha) * r_prev, f

    def leaf_in(pol, r_o):
      xs = [sequence_form.realization(tree.players[p], pol[p]) for p in (0, 1)]
      reach = [xs[p][tree.last_seq[p][nodes]] for p in (0, 1)]
      reach[o] = reach[o] * r_o[leaf_ra_o]
      return leaf_lib.LeafInput(reach=jnp.stack(reach), weight=base[leaf_terms])

    def query(st, gr, es):
      r_o, _ = opp_range(gr)
      v, es = evaluator.apply(es, leaf_in(solver.current_policy(tree, st), r_o))
      return leaf_lib._two_rows(jnp.asarray(v, dtype), (L,)), es

    def iteration(carry, values):
      # Alternating updates in the solver's order (player 0, then player 1);
      # the opponent's half updates its subgame regrets and the gadget from
      # the same strategies, our half sees its new range.
      st, gr, cum, acc = carry
      t = st.iteration + 1
      sigma, x = cfr_lib.policies(tree, st.regrets)
      wt = t.astype(dtype) ** exp if exp else jnp.asarray(1.0, dtype)
      # Self-play values of this iterate (``003``: average counterfactual values
      # as the next re-solve's opt-out values): our reach times player 0's value.
      V = history_values(sub.with_payoff(tree, values[o]), tuple(sigma))
      acc = acc + wt * own_root[i] * x[i][tree.last_seq[i]] * V
      regrets, cpol = list(st.regrets), list(st.cum_policy)
      r_o, f = opp_range(gr)
      for p in (0, 1):
        tp = sub.with_payoff(tree, values[p])
        if p == o:
          regrets[o], cpol[o] = cfr_lib.player_update(solver, tp, st.replace(weights=base), o,
                                                      sigma, x, t)
          if gadget:
            c = sign_o * tp.terminal_payoff * base * x[i][tree.terminal_seq[i]] \
                * x[o][tree.terminal_seq[o]]
            v_follow = jax.ops.segment_sum(c, ra[o], Ko)
            total = f * v_follow + (1.0 - f) * v_term
            gr = gr + jnp.stack([v_follow - total, v_term - total], -1)
            if solver.regret_matching_plus:
              gr = jnp.maximum(gr, 0.0)
        else:
          r_used = r_o
          w_full = base * r_o[ra[o]]
          regrets[i], cpol[i] = cfr_lib.player_update(solver, tp, st.replace(weights=w_full), i,
                                                      sigma, x, t)
        if solver.alternating:
          sigma[p] = sequence_form.regret_matching(regrets[p], tree.players[p].legal)
          x[p] = sequence_form.realization(tree.players[p], sigma[p])
          if p == o:
            r_o, f = opp_range(gr)
      st = st.replace(regrets=tuple(regrets), cum_policy=tuple(cpol), iteration=t,
                      weights=base * r_used[ra[o]])
      return st, gr, cum + wt * r_used, acc

    def body(n, carry):
      st, gr, cum, acc, es, _ = carry
      v, es = query(st, gr, es)
      st, gr, cum, acc = lax.fori_loop(0, n, lambda _, c: iteration(c, v), (st, gr, cum, acc))
      return st, gr, cum, acc, es, v

    hr = jnp.asarray(np.maximum(prep.hist_root, 0))
    above = jnp.asarray(prep.hist_root < 0)
    own_root = [None, None]
    own_root[i] = jnp.where(above, 0.0, r_i[jnp.asarray(sub.root_aug[i])[hr]])
    st = solver.init(tree, base)
    carry = (st, jnp.zeros((Ko, 2), dtype), jnp.zeros(Ko, dtype),
             jnp.zeros(tree.num_histories, dtype), es0, jnp.zeros((2, L), dtype))
    carry = lax.fori_loop(0, chunks, lambda _, c: body(chunk, c), carry)
    if rest:
      carry = body(rest, carry)
    st, gr, cum, acc, es, _ = carry
    wsum = (jnp.sum(jnp.arange(1, iterations + 1, dtype=dtype) ** exp) if exp
            else jnp.asarray(float(iterations), dtype))
    s = cum.sum()
    r_avg = jnp.where(s > 0, cum / jnp.where(s > 0, s, 1.0), 1.0 / max(Ko, 1))
    if gadget and not mixed:  # report the average follow probabilities themselves
      r_avg = cum / jnp.maximum(wsum, 1.0)
    avg = solver.average_policy(tree, st)
    fin = evaluator.final or evaluator.apply
    r_leaf = jnp.where(s > 0, cum / jnp.where(s > 0, s, 1.0), 1.0)
    v, es = fin(es, leaf_in(avg, r_leaf))
    v = leaf_lib._two_rows(jnp.asarray(v, dtype), (L,))
    xs = [sequence_form.realization(tree.players[p], avg[p]) for p in (0, 1)]
    own_root[o] = jnp.where(above, 0.0, r_avg[jnp.asarray(sub.root_aug[o])[hr]])
    reach = jnp.stack([own_root[p] * xs[p][tree.last_seq[p]] for p in (0, 1)])
    cf = acc / jnp.maximum(wsum, 1.0)
    return ResolveState(cfr=st, gadget_regrets=gr, opp_range=r_avg, leaf_values=v, evaluator=es,
                        policy=avg, history_values=cf, history_reach=reach)

  # The evaluator's initial state is an argument, not compiled-in constants.
  fn = jax.jit(jax.vmap(run, in_axes=(0, 0, 0, None, None)) if batched else run)
  return lambda *a: fn(*a, evaluator.init())


def root_opponent_values(sub: Subgame, solver, player: int, state: ResolveState,
                         our_range) -> np.ndarray:
  """``[K_o]`` opponent's average self-play counterfactual values at the root of a
  (single) re-solve, normalised like ``opp_values``."""
  return _child_summaries(sub, solver, player, state, our_range,
                          [sub.root_public[0]])[sub.root_public[0]].opp_values


# ------------------------------------------------------------------ summaries below the root
def _child_summaries(sub: Subgame, solver, player: int, state: ResolveState, our_range,
                     targets) -> dict:
  """Summaries at public states ``targets`` inside ``sub`` after a (single) re-solve:
  our range and the opponent's range under the average policy, the opponent's
  average self-play counterfactual values (``003``, "Self-play Values as
  Re-solving Constraints")."""
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
  (off-branch children are leaves, ``003`` "Modified Continual Re-solving")
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
