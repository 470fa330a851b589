"""Online Outcome Sampling (Lisy, Lanctot, Bowling 2015, Sec. 4, Algorithm 1).

OOS is outcome-sampling MCCFR run from the root of the game with two
changes: **incremental tree building** (Sec. 4: an information state enters
memory the first time a trajectory reaches it, after which a uniform playout
finishes the trajectory; nothing below it is updated) and **in-match search
targeting** (Sec. 4.1-4.2): with probability ``delta`` an iteration samples
only terminals of the targeted part ``Z_sub`` of the game: those through the
searcher's information state ``I(m)`` (IST) or through its public state (PST).

``solver = OOS(delta=0.9, targeting="ist")``; ``state = solver.init(tree)``;
``state = solver.search(tree, state, key, history, num_iterations)`` runs
``num_iterations`` iterations (each one ``batch`` trajectories per update
player, player 0 then player 1) in one jitted ``lax.fori_loop``; the tables in
``state`` carry over between the moves of a match. ``history=None`` searches
with an empty match history (plain MCCFR with incremental tree building).

The search reads only what the acting player of ``history`` knows: its
information state, the acting player and the public state of ``history``
(they define ``Z_sub``); the histories of ``I(m)`` are sampled by the targeted
scenario, never read off ``history``.

Per trajectory both scenario probabilities are tracked exactly (Algorithm 1's
``s_1``: targeted, ``s_2``: untargeted): at every node with base distribution
``d`` (chance, the epsilon-on-policy ``Phi``, or uniform at a new node and in
the playout) and target mask ``m`` over its children, ``s_1 *= d(a) m(a) /
sum(d m)`` and ``s_2 *= d(a)``; the leaf is sampled with ``l = delta s_1 + (1 -
delta) s_2``. Regrets at the update player's in-memory states get ``W (x(ha)
1[a'=a] - x(h))``, ``W = u pi_{-i}(h) / l`` (``x`` the tail reach under the
played strategies and chance, ``pi_{-i}`` chance and opponent reach); the
opponent's average strategy gets ``pi_{-i}(h) sigma(I) / (delta s_1(h) + (1 -
delta) s_2(h))`` (Algorithm 1, lines 20-29). Both are multiplied by the
weighting factor ``w_T`` (Sec. 4.3), constant within one search: the
probability of reaching ``I(m)`` without targeting over that with the current
targeting, under the mean profile ``pi_bar`` and chance. Untargeted it is
``pi_bar(I)``, targeted ``(1 - delta) pi_bar(I) + delta pi_bar(I) / pi_bar(sub)``
(``pi_bar(sub)``: reach of the targeted set, ``I(m)`` for IST, the histories of
its public state for PST), so ``1 / w_T = (1 - delta) + delta / pi_bar(sub)``.
(The paper's printed formula has ``pi_bar(I) / pi_bar(Z_sub)`` in place of
``1 / pi_bar(sub)``, which would make ``w_T = 1`` under IST; we follow the
text.) Strategies are explorative regret matching ``gamma / |A| + (1 - gamma)
RM`` (Sec. 4.3, ``gamma = 0.01``).

Memory is a fixed-capacity table over the compiled information states
(``in_tree`` mask, ``size`` counter, at most ``capacity`` entries); the
targeted sets come from a host-side table (:func:`target_members`, ``[R, K]``
histories per information state or public state) and their ancestor chains
(``O(K depth)`` work and one ``[H]`` mask per search, no sweeps over the tree).

With ``delta = 0`` (or ``history=None``) OOS is outcome-sampling MCCFR with
incremental tree building; with ``gamma = 0`` and ``init(..., prefill=True)``
(every information state in memory) it draws the same samples from the same
key as :func:`jaxgt.solvers.mccfr.outcome_sampling` and computes the same
regrets and averages.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from jax import lax

from jaxgt.core.checks import (check_decision_history, check_key, check_positive_int, max_depth)
from jaxgt.core.dtypes import cast_tree, resolve_dtype
from jaxgt.core.compiler import GameTree
from jaxgt.games.base import CHANCE
from jaxgt.core import sequence_form

TARGETING = ("ist", "pst")


@struct.dataclass
class OOSState:
  """OOS tables over the compiled information states (fixed capacity).

  Attributes:
    regrets: ``([I0, A], [I1, A])`` cumulative regrets (zero outside memory).
    cum_policy: ``([I0, A], [I1, A])`` average-strategy accumulators ``s_I``.
    in_tree: ``([I0] bool, [I1] bool)`` information states in memory.
    size: ``[] int32`` number of information states in memory.
    iterations: ``[] int32`` iterations run so far (all searches).
    depth: static largest history depth (trajectory length).
  """

  regrets: tuple
  cum_policy: tuple
  in_tree: tuple
  size: jax.Array
  iterations: jax.Array
  depth: int = struct.field(pytree_node=False)


def target_members(tree: GameTree, targeting: str) -> np.ndarray:
  """Host-side ``[R, K] int32`` decision histories of every targetable set (``-1`` padded).

  Rows are information states (``infostate``, plus ``I0`` for player 1) for
  ``"ist"``, public states for ``"pst"``; ``K`` is the largest set.
  """
  pl = np.asarray(tree.player)
  dec = np.flatnonzero(pl >= 0)
  if targeting == "ist":
    info = np.asarray(tree.infostate)[dec]
    key = np.where(pl[dec] == 0, info, tree.num_infostates[0] + info)
    rows = sum(tree.num_infostates)
  else:
    key = np.asarray(tree.history_public)[dec]
    rows = tree.num_public_states
  order = np.argsort(key, kind="stable")
  key, hist = key[order], dec[order]
  counts = np.bincount(key, minlength=rows)
  start = np.concatenate([[0], np.cumsum(counts)[:-1]])
  table = np.full((rows, max(int(counts.max(initial=0)), 1)), -1, np.int32)
  table[key, np.arange(len(key)) - start[key]] = hist
  return table


def member_row(tree: GameTree, targeting: str, members, history):
  """``[K]`` histories targeted from ``history`` (``-1``: none): those of its acting player's
  information state (IST) or of its public state (PST); reads nothing else off ``history``."""
  m = jnp.maximum(history, 0)
  if targeting == "ist":
    r = jnp.where(tree.player[m] == 0, tree.infostate[m],
                  tree.players[0].num_infostates + tree.infostate[m])
  else:
    r = tree.history_public[m]
  return jnp.where(history >= 0, members[r], -1)


def ancestor_chains(tree: GameTree, depth: int, row):
  """``[depth + 1, K]``: ``row`` and its ancestors level by level (``-1`` above the root)."""
  def up(x, _):
    return jnp.where(x >= 0, tree.parent[jnp.maximum(x, 0)], -1), x
  return lax.scan(up, row, None, length=depth + 1)[1]


def chain_reach(tree: GameTree, chain, decision_prob=None):
  """``[K]`` reach of the chains' bottom histories: chance times ``decision_prob(pl, info, a)``
  at decisions (``None``: chance reach only)."""
  x = jnp.maximum(chain, 0)
  par = tree.parent[x]
  pp = jnp.maximum(par, 0)
  act = tree.action[x]
  pl = tree.player[pp]
  edge = tree.chance_probs[pp, act]
  if decision_prob is not None:
    dec = decision_prob(pl, tree.infostate[pp], jnp.minimum(act, tree.num_actions - 1))
    edge = jnp.where(pl == CHANCE, edge, dec)
  else:
    edge = jnp.where(pl == CHANCE, edge, 1.0)
  return jnp.prod(jnp.where((chain >= 0) & (par >= 0), edge, 1.0), axis=0)


def table_prob(tables, legal, pl, info, a):
  """Probability of action ``a`` under the normalised rows of ``tables`` (uniform where zero)."""
  n0, n1 = tables[0].shape[0], tables[1].shape[0]
  i0, i1 = jnp.clip(info, 0, n0 - 1), jnp.clip(info, 0, n1 - 1)
  sel = (pl == 0)[..., None]
  row = jnp.where(sel, tables[0][i0], tables[1][i1])
  leg = jnp.where(sel, legal[0][i0], legal[1][i1])
  row = jnp.where(leg, row, 0.0)
  tot = jnp.sum(row, axis=-1)
  num = jnp.take_along_axis(row, a[..., None], axis=-1)[..., 0]
  uni = (jnp.take_along_axis(leg, a[..., None], axis=-1)[..., 0] /
         jnp.maximum(jnp.sum(leg, axis=-1), 1))
  return jnp.where(tot > 0, num / jnp.where(tot > 0, tot, 1.0), uni)


def ancestor_mask(tree: GameTree, chain):
  """``[H] bool``: the histories on the chains (the targeted set and its ancestors)."""
  H = tree.num_histories
  return jnp.zeros(H, bool).at[jnp.where(chain >= 0, chain, H).reshape(-1)].set(True, mode="drop")


@dataclasses.dataclass(frozen=True)
class OOS:
  """Hyperparameters of Online Outcome Sampling (Sec. 4); methods are pure.

  Attributes:
    delta: probability that an iteration samples only ``Z_sub`` (targeting).
    targeting: ``"ist"`` (information-set targeting, Sec. 4.1) or ``"pst"``
      (public-subgame targeting, Sec. 4.2).
    epsilon: exploration of the update player's sampling policy ``Phi``.
    gamma: explorative regret matching ``gamma / |A| + (1 - gamma) RM``.
    capacity: most information states (both players) in memory; ``None``:
      all of them.
    batch: trajectories per update player per iteration (one scatter-add).
    dtype: float dtype of the tables.
  """

  delta: float = 0.9
  targeting: str = "ist"
  epsilon: float = 0.6
  gamma: float = 0.01
  capacity: int | None = None
  batch: int = 1
  dtype: str = "float32"

  def __post_init__(self):
    for name, lo, lo_open in (("delta", 0.0, False), ("epsilon", 0.0, True), ("gamma", 0.0, False)):
      v = getattr(self, name)
      if isinstance(v, bool) or not isinstance(v, (int, float, np.floating)) or not (
          (lo < v if lo_open else lo <= v) and v <= 1.0):
        raise ValueError(f"{name} must be in {'(' if lo_open else '['}0, 1], got {v!r}")
    if self.targeting not in TARGETING:
      raise ValueError(f"targeting must be one of {TARGETING}, got {self.targeting!r}")
    if self.capacity is not None:
      check_positive_int("capacity", self.capacity)
    check_positive_int("batch", self.batch)
    object.__setattr__(self, "dtype", jnp.dtype(resolve_dtype(self.dtype)).name)

  def init(self, tree: GameTree, *, prefill: bool = False) -> OOSState:
    """Empty memory (Sec. 4: the root information state enters on the first iteration).

    ``prefill=True`` puts every information state in memory (for comparing
    with offline MCCFR); it needs ``capacity`` to cover the game.
    """
    dtype = resolve_dtype(self.dtype)
    n = tree.num_infostates
    if prefill and self.capacity is not None and self.capacity < sum(n):
      raise ValueError(f"prefill needs capacity >= {sum(n)} information states, "
                       f"got {self.capacity}")
    zeros = tuple(jnp.zeros((k, tree.num_actions), dtype) for k in n)
    return OOSState(regrets=zeros, cum_policy=zeros,
                    in_tree=tuple(jnp.full(k, prefill, bool) for k in n),
                    size=jnp.asarray(sum(n) if prefill else 0, jnp.int32),
                    iterations=jnp.zeros((), jnp.int32), depth=max_depth(tree))

  def search(self, tree: GameTree, state: OOSState, key, history, num_iterations: int, *,
             members=None) -> OOSState:
    """``num_iterations`` OOS iterations targeted at match position ``history``.

    ``history``: ``None`` (empty match history, no targeting) or a history
    index (may be traced) where player 0 or 1 acts. ``members``: the
    :func:`target_members` table of ``tree`` (computed here when ``None``).
    """
    num_iterations = check_positive_int("num_iterations", num_iterations)
    key = check_key(key)
    if history is None:
      history = -1
    else:
      check_decision_history(tree, history)
    if members is None:
      members = target_members(tree, self.targeting)
    return _search(self, tree, state, key, jnp.asarray(history, jnp.int32),
                   jnp.asarray(num_iterations, jnp.int32), jnp.asarray(members))

  def average_policy(self, tree: GameTree, state: OOSState):
    """Normalised ``s_I`` (uniform where never updated): ``([I0, A], [I1, A])``."""
    return tuple(sequence_form.normalize(c, jnp.asarray(pt.legal))
                 for c, pt in zip(state.cum_policy, tree.players))

  def current_policy(self, tree: GameTree, state: OOSState):
    """Explorative regret matching of the next iteration (uniform outside memory)."""
    out = []
    for r, pt in zip(state.regrets, tree.players):
      legal = jnp.asarray(pt.legal)
      unif = legal / jnp.maximum(legal.sum(-1, keepdims=True), 1)
      out.append(self.gamma * unif + (1.0 - self.gamma) * sequence_form.regret_matching(r, legal))
    return tuple(out)

  def targets(self, tree: GameTree, state: OOSState, history):
    """``(on_target [H] bool, w_T [])`` of match position ``history`` (``-1``: none).

    ``on_target`` marks the histories of ``Z_sub``'s trajectories: the
    targeted set, its ancestors and its descendants.
    """
    tree = cast_tree(tree, state.regrets[0].dtype)
    history = jnp.asarray(history, jnp.int32)
    row, anc, w_t = _targets(self, tree, state, jnp.asarray(target_members(tree, self.targeting)),
                             history)
    par = jnp.maximum(tree.parent, 0)
    below = lax.fori_loop(0, state.depth, lambda _, m: m | (m[par] & (tree.parent >= 0)),
                          jnp.isin(jnp.arange(tree.num_histories), row))
    return anc | below | (history < 0), w_t


def _targets(cfg: OOS, tree: GameTree, state: OOSState, members, history):
  """Targeted histories ``[K]``, their ancestor mask ``[H]`` and ``w_T`` (Sec. 4.3)."""
  row = member_row(tree, cfg.targeting, members, history)
  chain = ancestor_chains(tree, state.depth, row)
  legal = tuple(pt.legal for pt in tree.players)
  reach = chain_reach(tree, chain, functools.partial(table_prob, state.cum_policy, legal))
  mass = jnp.sum(jnp.where(row >= 0, reach, 0.0))
  inv_w = (1.0 - cfg.delta) + cfg.delta / jnp.maximum(mass, jnp.finfo(reach.dtype).tiny)
  w_t = jnp.where(history >= 0, 1.0 / inv_w, 1.0).astype(reach.dtype)
  return row, ancestor_mask(tree, chain), w_t


def _walk(cfg: OOS, tree: GameTree, state: OOSState, i: int, target, targeted, uni):
  """One batch of OOS trajectories for update player ``i``: per-depth ``[D, B]`` records.

  ``target = (row [K], anc [H], has [])``: a child is in ``Z_sub`` when it is
  an ancestor of (or in) the targeted set or the trajectory has passed it.
  """
  row, anc, has = target
  D, B = uni.shape
  A = tree.num_actions
  C = tree.children.shape[1]
  dtype = state.regrets[0].dtype
  pl_tab = tree.player
  n0, n1 = (r.shape[0] for r in state.regrets)

  def rows(table, pl, info):
    i0 = jnp.clip(info, 0, n0 - 1)
    i1 = jnp.clip(info, 0, n1 - 1)
    sel = (pl == 0).reshape(pl.shape + (1,) * (table[0].ndim - 1))
    return jnp.where(sel, table[0][i0], table[1][i1])

  legal_tab = tuple(pt.legal for pt in tree.players)

  def body(t, carry):
    hs, head, below, rec = carry
    below = below | jnp.any(hs[:, None] == row[None, :], axis=-1)
    pl = pl_tab[hs]
    info = tree.infostate[hs]
    dec = pl >= 0
    live = dec | (pl == CHANCE)
    legal = rows(legal_tab, pl, info) & dec[:, None]
    mem = rows(state.in_tree, pl, info) & dec
    nleg = jnp.maximum(jnp.sum(legal, axis=-1, keepdims=True), 1)
    rm = jnp.where(legal, sequence_form.regret_matching(rows(state.regrets, pl, info), legal), 0.0)
    if cfg.gamma > 0:  # explorative regret matching (Sec. 4.3)
      rm = cfg.gamma * legal / nleg + (1.0 - cfg.gamma) * rm
    sig_rm = rm.astype(dtype)
    unif = (legal / nleg).astype(dtype)
    tree_node = dec & head & mem
    new_node = dec & head & ~mem
    sig = jnp.where(tree_node[:, None], sig_rm, unif)
    phi = jnp.where((tree_node & (pl == i))[:, None],
                    cfg.epsilon * legal / nleg + (1.0 - cfg.epsilon) * sig, sig).astype(dtype)
    d = jnp.where((pl == CHANCE)[:, None], tree.chance_probs[hs],
                  jnp.pad(phi, ((0, 0), (0, C - A))))
    ch = tree.children[hs]
    on = (ch >= 0) & (anc[jnp.maximum(ch, 0)] | below[:, None] | ~has)
    dm = jnp.where(on, d, 0.0)
    tot = jnp.sum(dm, axis=-1)
    samp = jnp.where((targeted & (tot > 0))[:, None], dm, d)
    c = jnp.cumsum(samp, axis=-1)
    a = jnp.minimum(jnp.sum(c <= (uni[t] * c[:, -1])[:, None], axis=-1), C - 1).astype(jnp.int32)
    d_a = jnp.take_along_axis(d, a[:, None], axis=-1)[:, 0]
    f1 = jnp.where(tot > 0, jnp.take_along_axis(dm, a[:, None], axis=-1)[:, 0] /
                   jnp.where(tot > 0, tot, 1.0), 0.0)
    ac = jnp.minimum(a, A - 1)
    pol = jnp.where(pl == CHANCE, d_a, jnp.take_along_axis(sig, ac[:, None], axis=-1)[:, 0])
    one = jnp.ones_like(d_a)
    new = (jnp.where(live, hs, -1), ac, sig, legal, jnp.where(live, pol, one),
           jnp.where(live, f1, one), jnp.where(live, d_a, one), tree_node, new_node)
    rec = tuple(x.at[t].set(n) for x, n in zip(rec, new))
    return jnp.where(live, tree.children[hs, a], hs), head & ~new_node, below, rec

  rec = (jnp.full((D, B), -1, jnp.int32), jnp.zeros((D, B), jnp.int32),
         jnp.zeros((D, B, A), dtype), jnp.zeros((D, B, A), bool),
         jnp.ones((D, B), dtype), jnp.ones((D, B), dtype), jnp.ones((D, B), dtype),
         jnp.zeros((D, B), bool), jnp.zeros((D, B), bool))
  hs, _, _, rec = lax.fori_loop(
      0, D, body, (jnp.zeros(B, jnp.int32), jnp.ones(B, bool), jnp.zeros(B, bool), rec))
  return hs, rec


def grow_tree(in_tree, size, capacity, plt, info, new_node):
  """Incremental tree building (Sec. 4): each trajectory's first state outside memory enters it.

  ``plt, info, new_node [D, B]``: acting player, information state and the
  flag of the (at most one per column) state reached outside memory. Distinct
  new states are admitted in index order (player 0's first) while
  ``capacity`` lasts. Returns ``(in_tree, size, admitted [D, B])``,
  ``admitted`` marking the new states that entered memory (they are updated
  like states in memory).
  """
  n0, n1 = in_tree[0].shape[0], in_tree[1].shape[0]
  B = plt.shape[1]
  gid = jnp.where(plt == 0, info, n0 + info)
  prop = jnp.max(jnp.where(new_node, gid, -1), axis=0)  # [B], -1: none
  order = jnp.argsort(prop, stable=True)
  sp = prop[order]
  first = (sp >= 0) & jnp.concatenate([jnp.ones(1, bool), sp[1:] != sp[:-1]])
  group = jnp.cumsum(first) - 1
  room = (n0 + n1 if capacity is None else capacity) - size
  enter = first & (group < room)
  group_in = jnp.zeros(B, bool).at[jnp.where(enter, group, B)].set(True, mode="drop")
  entered = jnp.zeros(B, bool).at[order].set((sp >= 0) & group_in[jnp.maximum(group, 0)])
  in_tree = (in_tree[0].at[jnp.where(enter & (sp < n0), sp, n0)].set(True, mode="drop"),
             in_tree[1].at[jnp.where(enter & (sp >= n0), sp - n0, n1)].set(True, mode="drop"))
  return in_tree, size + jnp.sum(enter).astype(jnp.int32), new_node & entered[None, :]


def _exclusive_cumprod(x):
  return jnp.concatenate([jnp.ones_like(x[:1]), jnp.cumprod(x, axis=0)[:-1]])


def _half_step(cfg: OOS, tree: GameTree, state: OOSState, i: int, target, w_t, key):
  """``batch`` trajectories for update player ``i``, one scatter-add each table."""
  A = tree.num_actions
  dtype = state.regrets[0].dtype
  D = state.depth
  B = cfg.batch
  uni = jax.random.uniform(key, (D, B), dtype)
  targeted = jax.random.uniform(jax.random.fold_in(key, 1), (B,), dtype) < cfg.delta
  hs, (path, acts, sig, legal, pol, f1, f2, tree_node, new_node) = _walk(
      cfg, tree, state, i, target, targeted, uni)
  u = tree.terminal_payoff[tree.history_terminal[hs]] * (1.0 if i == 0 else -1.0)  # [B]
  hp = jnp.maximum(path, 0)
  plt = jnp.where(path >= 0, tree.player[hp], -9)  # [D, B]
  inv_w = 1.0 / w_t
  s_pre = inv_w * (cfg.delta * _exclusive_cumprod(f1) + (1.0 - cfg.delta) * _exclusive_cumprod(f2))
  l = inv_w * (cfg.delta * jnp.prod(f1, axis=0) + (1.0 - cfg.delta) * jnp.prod(f2, axis=0))
  pi_o = _exclusive_cumprod(jnp.where(plt != i, pol, 1.0))  # chance and opponent reach
  x = jnp.cumprod(pol[::-1], axis=0)[::-1]  # tail reach x(h) of each depth
  x_next = jnp.concatenate([x[1:], jnp.ones_like(x[:1])])
  info = tree.infostate[hp]
  in_tree, size, admitted = grow_tree(state.in_tree, state.size, cfg.capacity, plt, info, new_node)
  upd = tree_node | admitted
  onehot = jax.nn.one_hot(acts, A, dtype=dtype)
  W = (pi_o * u / l)[..., None]
  regret = W * (onehot * x_next[..., None] - x[..., None])
  mine = upd & (plt == i)
  regret = jnp.where(mine[..., None] & legal, regret, 0.0)
  theirs = upd & (plt == 1 - i)
  avg = jnp.where(theirs[..., None], sig * (pi_o / s_pre)[..., None], 0.0)
  regrets, cum = list(state.regrets), list(state.cum_policy)
  regrets[i] = regrets[i].at[jnp.where(mine, info, 0).reshape(-1)].add(regret.reshape(-1, A))
  cum[1 - i] = cum[1 - i].at[jnp.where(theirs, info, 0).reshape(-1)].add(avg.reshape(-1, A))
  return state.replace(regrets=tuple(regrets), cum_policy=tuple(cum), in_tree=in_tree, size=size)


@functools.partial(jax.jit, static_argnums=(0,))
def _search(cfg: OOS, tree: GameTree, state: OOSState, key, history, num_iterations,
            members) -> OOSState:
  tree = cast_tree(tree, state.regrets[0].dtype)
  row, anc, w_t = _targets(cfg, tree, state, members, history)
  target = (row, anc, history >= 0)

  def body(_, carry):
    s, key = carry
    key, k0, k1 = jax.random.split(key, 3)
    for i, k in ((0, k0), (1, k1)):
      s = _half_step(cfg, tree, s, i, target, w_t, k)
    return s.replace(iterations=s.iterations + 1), key

  state, _ = lax.fori_loop(0, num_iterations, body, (state, key))
  return state
