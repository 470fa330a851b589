"""External-sampling Monte Carlo CFR over batches of traversals.

Lanctot, Waugh, Zinkevich, Bowling, "Monte Carlo Sampling for Regret
Minimization in Extensive Games" (2009): chance and opponent actions sampled
once per visited history, every action of the updated player explored.
The solver is :class:`~jaxgt.solvers.mccfr.ExternalSampling`; a step is
``2 * batch`` traversals.

A traversal is not one trajectory, so it does not use
:func:`~jaxgt.solvers.walk.walk`. The ``batch`` traversals of a half-step go
down together, depth by depth, over frontiers ``[batch, S_d]`` of the
non-terminal histories they reach (``S_d``: the most one traversal can reach
at depth ``d``, computed at ``init``; Leduc: 30 slots in all for player 0, 16
for player 1, against 9,457 histories): each slot reads its history's row of
a table built once per run (:func:`es_tables`), draws at chance and opponent
histories with the one sampler (:func:`~jaxgt.core.sampling.sample_cdf`, one
uniform per draw), and the next frontier is compacted from running child
counts. Values flow up with the sampled outcome at chance/opponent histories
and ``sigma`` at the updated player's (terminal children read from their
parent's row); regrets ``q(h, a) - v(h)`` at visited histories; the
opponent's average strategy gets ``sigma`` once per visited history
(OpenSpiel's default "simple" averaging), summed as visit counts times
``sigma``.

On a device game (:func:`rules_traversals`) the frontiers hold game states:
``[B, S]`` slots at every depth (``S = max_frontier``), each depth stepping
every slot's ``A`` children at once; the same slots in the same order as on
the compiled tree, so the same uniforms draw the same samples. A traversal
that needs more than ``max_frontier`` slots at a depth is dropped whole (its
values would be incomplete) and counted.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxgt.core.game_tree import GameTree
from jaxgt.core.sampling import sample_cdf
from jaxgt.core.tables import infostate_rows
from jaxgt.games.base import CHANCE, TERMINAL


def es_sizes(tree: GameTree) -> tuple:
  """The static sizes of external sampling: ``((sizes0, draws0), (sizes1, draws1), Hc)``, per
  player the frontier sizes and most draws of a traversal (:func:`_frontier_sizes`), then the
  number of chance histories (for :func:`es_tables`)."""
  return _frontier_sizes(tree) + (int(np.sum(np.asarray(tree.player) == CHANCE)),)


def _frontier_sizes(tree: GameTree) -> tuple:
  """Per player ``p``, ``(sizes, draws)``: the most non-terminal histories one external-sampling
  traversal reaches at each depth (trailing zeros cut), and the most chance/opponent histories
  (one draw each) it visits.

  ``M(h) = sum_a M(ha)`` at ``p``'s histories, ``max_a M(ha)`` at chance and
  opponent histories (one sampled outcome), computed for every target depth;
  these static bounds size the traversal's frontier arrays and its uniforms.
  Terminals take no frontier slot: their parents read their payoffs.
  """
  levels = tree.depth_levels
  depth = np.asarray(tree.depth)
  ch = np.asarray(tree.children)
  pl = np.asarray(tree.player)
  inner = np.asarray(tree.history_terminal) < 0
  out = []
  for p in (0, 1):
    sizes = []
    for d in range(len(levels)):
      m = ((depth == d) & inner).astype(np.int64)
      for e in range(d - 1, -1, -1):
        lo, hi = levels[e]
        c = np.where(ch[lo:hi] >= 0, m[np.maximum(ch[lo:hi], 0)], 0)
        m[lo:hi] = np.where(pl[lo:hi] == p, c.sum(1), c.max(1, initial=0))
      sizes.append(int(m[0]))
    while len(sizes) > 1 and sizes[-1] == 0:
      sizes.pop()
    draws = np.zeros(len(pl), np.int64)
    for lo, hi in reversed(levels):
      c = np.where(ch[lo:hi] >= 0, draws[np.maximum(ch[lo:hi], 0)], 0)
      draws[lo:hi] = np.where(pl[lo:hi] == p, c.sum(1), np.where(inner[lo:hi], 1 + c.max(1), 0))
    out.append((tuple(max(s, 1) for s in sizes), max(int(draws[0]), 1)))
  return tuple(out)


# Columns of a history's row in the traversal table (:func:`es_tables`): kind, number of
# non-terminal children explored, row of its distribution, information state, then per action
# its rank, explored child and payoff (float bits).
_KIND, _COUNT, _ROW, _INFO, _RANK = range(5)
# Kinds of history in a traversal for player p: p acts (every legal action explored), chance or
# the opponent acts (one sampled outcome), else padding (0).
_EXPLORE, _CHANCE, _OPPONENT = 1, 2, 3
_TERMINAL_CHILD, _ILLEGAL = -1, -2  # ranks of actions without a frontier slot


def es_tables(tree: GameTree, p: int, num_chance: int):
  """Per-history rows of an external-sampling traversal for player ``p``; row ``H`` pads.

  Returns ``(head [H + 1, 4 + 3A], tail [H + 1, 2W], chance_cdf [Hc, W])``
  with ``W = max(A, C)`` and ``Hc = num_chance`` chance histories; ``head``
  and ``tail`` are integer tables as wide as the tree's float dtype (payoffs
  as float bits), so one gather reads all a slot needs. ``head`` columns:
  kind (``_EXPLORE``, ``_CHANCE``, ``_OPPONENT``, 0), how many non-terminal
  children ``p`` explores, the row of the history's distribution in
  ``concat(table0, table1, chance_cdf)``, the acting player's information
  state; then per action, at ``p``'s histories, its rank among the
  non-terminal children ``p`` explores (``_TERMINAL_CHILD``, ``_ILLEGAL``;
  ``_ILLEGAL`` off ``p``'s turns), the explored non-terminal children in
  action order (``H`` pads) and the children's payoffs to ``p`` (zero off
  terminals). ``tail``, read at the one sampled child of chance and opponent
  histories: each child if it is not terminal (else ``H``), then each
  child's payoff to ``p``. Built once per jitted run from the tree's arrays.
  """
  A, H, C = tree.num_actions, tree.num_histories, tree.children.shape[1]
  W = max(A, C)
  dtype = tree.chance_probs.dtype
  itype = jnp.int32 if jnp.dtype(dtype).itemsize == 4 else jnp.int64
  player = tree.player
  mine = player == p
  kind = jnp.where(mine, _EXPLORE, jnp.where(
      player == CHANCE, _CHANCE, jnp.where(player == 1 - p, _OPPONENT, 0)))
  exists = tree.children >= 0
  child = jnp.maximum(tree.children, 0)
  term = tree.history_terminal
  payoff = jnp.where(exists & (term[child] >= 0), (1.0 if p == 0 else -1.0)
                     * tree.terminal_payoff[jnp.maximum(term[child], 0)], 0.0).astype(dtype)
  payoff = lax.bitcast_convert_type(jnp.pad(payoff, ((0, 0), (0, W - C))), itype)  # [H, W]
  inner = exists & (term[child] < 0)  # [H, C] children that take a frontier slot
  explored = inner[:, :A] & mine[:, None]
  rank = jnp.where(explored, jnp.cumsum(explored, axis=-1) - 1,
                   jnp.where(exists[:, :A] & mine[:, None], _TERMINAL_CHILD, _ILLEGAL))
  by_rank = jnp.stack([jnp.sum(jnp.where(rank == r, child[:, :A], 0), -1)
                       + jnp.where(jnp.any(rank == r, -1), 0, H) for r in range(A)], -1)
  count = jnp.where(mine, jnp.sum(explored, -1), 0)
  info = jnp.maximum(tree.infostate, 0)
  chance = jnp.nonzero(player == CHANCE, size=num_chance)[0]
  chance_row = jnp.zeros(H, itype).at[chance].set(jnp.arange(num_chance).astype(itype))
  I0, I1 = tree.num_infostates
  row = jnp.where(player == 0, info, jnp.where(player == 1, I0 + info, I0 + I1 + chance_row))
  head = jnp.concatenate([jnp.stack([kind, count, row, info], -1).astype(itype),
                          rank.astype(itype), by_rank.astype(itype), payoff[:, :A]], -1)
  slots = jnp.pad(jnp.where(inner, child, H), ((0, 0), (0, W - C)), constant_values=H)
  tail = jnp.concatenate([slots.astype(itype), payoff], -1)
  pad = lambda x: jnp.concatenate([x, jnp.zeros((1, x.shape[1]), itype)])
  cdf = jnp.pad(jnp.cumsum(tree.chance_probs[chance], -1), ((0, 0), (0, W - C)), mode="edge")
  return pad(head), pad(tail), cdf.astype(dtype)


def _computed_once(x, true):
  """``x``, computed into a buffer once (``true``: a traced boolean that is always true).

  XLA's CPU fusion copies a cheap elementwise producer into each consumer, so
  an array that a gather reads several times per element (a slot's value, read
  by each of its parent's ``A`` action columns; the uniforms, read once per
  frontier slot and each a threefry hash) is recomputed per read. Optimization
  barriers are gone before fusion runs; a conditional on a runtime predicate
  is not, and its result is a buffer. Values are unchanged (the false branch,
  which never runs, only keeps the two branches from being merged). Leduc
  external sampling, batch 256, one core: 511k to 1.1M traversals/s with the
  uniforms, the slots' rows, the running child counts, the children's values
  and each level's values computed once.
  """
  return lax.cond(true, lambda v: v, lambda v: jnp.where(v == v, v, jnp.zeros_like(v)), x)


def _sum_last(x):
  """``sum(x, -1)`` as unrolled adds when the axis is short (XLA's CPU reductions over a few
  elements cost far more than the adds)."""
  if x.shape[-1] > 16:
    return jnp.sum(x, -1)
  out = x[..., 0]
  for k in range(1, x.shape[-1]):
    out = out + x[..., k]
  return out


def _running_sum(x):
  """Inclusive cumulative sum of ``x [B, S]`` along ``S``: unrolled adds for the short frontiers
  of a traversal (XLA's CPU cumsum is a reduce-window), a scan for long ones."""
  if x.shape[1] > 16:
    return lax.associative_scan(jnp.add, x, axis=1)
  cols = [x[:, 0]]
  for k in range(1, x.shape[1]):
    cols.append(cols[-1] + x[:, k])
  return jnp.stack(cols, 1)


def _parents(ends, n: int):
  """``(parent, start, valid)``, each ``[B, n]``: for each slot of the next frontier, the slot
  whose kept children fill it, where that slot's children start, and whether it is filled, from
  the running child counts ``ends [B, S]`` (slot ``j``'s children fill ``ends[j - 1] ..
  ends[j] - 1``)."""
  k = jnp.arange(n, dtype=ends.dtype)
  if ends.shape[1] <= 16:
    before = ends[:, None, :] <= k[:, None]  # [B, n, S]
    parent = _sum_last(before.astype(ends.dtype))
    start = jnp.max(jnp.where(before, ends[:, None, :], 0), axis=-1)
  else:
    parent = jax.vmap(lambda e: jnp.searchsorted(e, k, side="right", method="scan"))(ends)
    start = jnp.where(parent > 0, jnp.take_along_axis(ends, jnp.maximum(parent - 1, 0), 1), 0)
  return jnp.minimum(parent, ends.shape[1] - 1), start, k < ends[:, -1:]


def es_traversals(tree: GameTree, tables, sigma, p: int, sizes, uni):
  """``B`` external-sampling traversals for player ``p``; returns ``(regret [I_p, A], visits [I_o])``.

  ``tables = es_tables(tree, p, ...)``; ``sigma = (s0 [I0, A], s1 [I1, A])``
  the current regret-matching strategies; ``uni [B, U]`` uniforms, one per
  chance/opponent history a traversal visits, in visiting order (``U`` is
  the most there can be). The frontier of depth ``d`` is ``[B, sizes[d]]``
  non-terminal histories (``H`` pads): the children of the frontier above in
  slot order, every legal child at ``p``'s histories and one child elsewhere,
  drawn with :func:`~jaxgt.core.sampling.sample_cdf` from the chance
  probabilities or the opponent's ``sigma``; terminal children are valued
  from their parent's row. Going up, a history is worth ``sum_a sigma(a)
  v(ha)`` at ``p``'s and its sampled child's value elsewhere. Returns the
  summed regret increments ``q(h, a) - v(h)`` of ``p``'s visited histories
  and how often each opponent information state was visited (its average
  strategy gets ``sigma`` per visit). The work is ``B * sum(sizes)`` slots,
  the non-terminal histories the traversals can touch, not the tree's ``H``.
  """
  head, tail, chance_cdf = tables
  once = uni[0, 0] >= 0  # always true; unknown to XLA (see _computed_once)
  uni = _computed_once(uni, once)  # read once per frontier slot, hashed once
  A, H = tree.num_actions, tree.num_histories
  W = chance_cdf.shape[1]
  B, U = uni.shape
  dtype = sigma[0].dtype
  # One row per distribution, W wide: sigma at p's information states (to value them), the CDF
  # of sigma at the opponent's and of chance's probabilities (to sample them).
  pad = lambda x, mode: jnp.pad(x, ((0, 0), (0, W - A)), mode=mode)
  rows = jnp.concatenate([pad(sigma[i], "constant") if i == p else pad(jnp.cumsum(sigma[i], -1),
                                                                        "edge")
                          for i in (0, 1)] + [chance_cdf])
  batch = jnp.arange(B)[:, None]
  front = jnp.zeros((B, 1), jnp.int32)
  drawn = jnp.zeros((B, 1), jnp.int32)  # uniforms used so far
  levels = []
  for d, n in enumerate(sizes):
    t = _computed_once(head[front], once)  # [B, S, 4 + 3A]: all a slot needs, one gather
    row = rows[t[..., _ROW]]  # [B, S, W]
    kind = t[..., _KIND]
    draws = (kind > _EXPLORE).astype(jnp.int32)
    at = drawn + _running_sum(draws) - 1
    drawn = drawn + _sum_last(draws)[:, None]
    s = sample_cdf(row, uni.reshape(-1)[batch * U + jnp.clip(at, 0, U - 1)])
    # The sampled child (H: terminal, no slot) and its payoff, read off the tail row.
    cell = front * 2 * W + s
    sampled = tail.reshape(-1)[cell]
    sampled_payoff = lax.bitcast_convert_type(tail.reshape(-1)[cell + W], dtype)
    count = jnp.where(kind == _EXPLORE, t[..., _COUNT], (draws > 0) & (sampled < H))
    ends = _computed_once(_running_sum(count.astype(jnp.int32)), once)  # read per next slot
    payoff = lax.bitcast_convert_type(t[..., _RANK + 2 * A:], dtype)
    levels.append((t, row[..., :A], payoff, sampled_payoff, count, ends - count))
    if d + 1 == len(sizes):
      break
    # The children each slot keeps, in order ([B, S, A], H-padded).
    kept = jnp.where((kind == _EXPLORE)[..., None], t[..., _RANK + A:_RANK + 2 * A],
                     jnp.where(jnp.arange(A) == 0, sampled[..., None], H))
    parent, start, valid = _parents(ends, sizes[d + 1])
    r = jnp.arange(sizes[d + 1]) - start
    at = (batch * n + parent) * A + jnp.clip(r, 0, A - 1)
    front = jnp.where(valid, kept.reshape(-1)[at], H)
  value = None
  regret_at, regrets, visit_at = [], [], []
  I_p, I_o = tree.num_infostates[p], tree.num_infostates[1 - p]
  for t, sig_h, payoff, sampled_payoff, count, start in reversed(levels):
    kind, info = t[..., _KIND], t[..., _INFO]
    rank = t[..., _RANK:_RANK + A]  # [B, S, A]
    if value is None:  # every child is terminal
      below = jnp.zeros_like(payoff)
    else:  # the children's slot values by rank (the sampled child's in column 0)
      n = value.shape[1]
      idx = jnp.minimum(start[..., None] + jnp.maximum(rank, 0), n - 1)
      below = _computed_once(value.reshape(-1)[batch[..., None] * n + idx], once)
    q = jnp.where(rank >= 0, below, payoff)
    mine = kind == _EXPLORE
    value = jnp.where(mine, _sum_last(sig_h * q), jnp.where(
        count > 0, below[..., 0], sampled_payoff))
    value = _computed_once(value, once)  # the level above reads it A times a slot
    regrets.append(jnp.where(rank >= _TERMINAL_CHILD, q - value[..., None], 0.0).reshape(-1, A))
    regret_at.append(jnp.where(mine, info, I_p).reshape(-1))
    visit_at.append(jnp.where(kind == _OPPONENT, info, I_o).reshape(-1))
  regret = jnp.zeros((I_p, A), dtype).at[jnp.concatenate(regret_at)].add(
      jnp.concatenate(regrets), mode="drop")
  visits = jnp.zeros(I_o, dtype).at[jnp.concatenate(visit_at)].add(1.0, mode="drop")
  return regret, visits



def frontier_bound(rules) -> int:
  """The most slots one depth of a device-game traversal can need, ``A^(max_length - 1)`` (a
  slot has at most ``A`` children: every action of the traverser, one sampled outcome
  elsewhere)."""
  return max(rules.num_actions, 1) ** max(rules.max_depth - 1, 0)


def rules_traversals(cfg, src, regrets, p: int, slots: int, uni):
  """``B`` external-sampling traversals for player ``p`` over a device game's states.

  ``src`` is a :class:`~jaxgt.solvers.sources.RulesSource` (its tables are read: a state not in
  them has zero regrets), ``slots`` the frontier size ``S`` of every depth, ``uni [B, U]`` the
  uniforms, one per chance/opponent state a traversal visits in visiting order (``U >= D S``
  covers any traversal; ``D = max_length``). The frontiers, draws and values are those of
  :func:`es_traversals` on the compiled tree (slots in the same order, terminal children valued
  from their parent), with game states in the slots: one ``lax.scan`` step per depth steps
  every slot's ``A`` children at once, a second scan carries the values up. A traversal whose
  frontier at some depth needs more than ``S`` slots is cut off there and reported.

  Returns per visited slot, each ``[B, D S]``: ``(explored, opponent, key [B, D S, W], regret
  [B, D S, A], sigma [B, D S, A])`` and ``overflow [B]``: the traverser's states with their
  regret increments ``q(h, a) - v(h)``, the opponent's states with their current strategy (the
  average strategy's increment per visit), the acting player's keys, and which traversals were
  cut off (their updates are to be dropped).
  """
  game = src.game
  A, C, S, D = src.num_actions, src.num_children, slots, src.max_depth
  B, U = uni.shape
  dtype = regrets[0].dtype
  once = uni[0, 0] >= 0  # always true; unknown to XLA (see _computed_once)
  uni = _computed_once(uni, once)
  batch = jnp.arange(B)[:, None]
  cols = jnp.arange(A, dtype=jnp.int32)
  leaves = jax.tree_util.tree_map
  sign = 1.0 if p == 0 else -1.0

  def down(carry, _):
    front, valid, drawn, overflow = carry
    flat = leaves(lambda x: x.reshape((B * S,) + x.shape[2:]), front)
    node = src.node(flat)
    player = node.player.reshape(B, S)
    row = node.infostate.reshape(B, S)
    legal = node.legal.reshape(B, S, A)
    mine = valid & (player == p)
    opponent = valid & (player == 1 - p)
    chance = valid & (player == CHANCE)
    reg = infostate_rows(regrets, player, row)
    sigma = cfg.strategy(jnp.where((row >= 0)[..., None], reg, 0.0), legal)  # [B, S, A]
    weights = jnp.where(chance[..., None], src.chance(flat).reshape(B, S, C),
                        jnp.pad(sigma, ((0, 0), (0, 0), (0, C - A))))
    draws = (opponent | chance).astype(jnp.int32)
    at = drawn + _running_sum(draws) - 1
    drawn = drawn + _sum_last(draws)[:, None]
    s = sample_cdf(jnp.cumsum(weights, -1), uni.reshape(-1)[batch * U + jnp.clip(at, 0, U - 1)])
    # Every action of the traverser, the sampled outcome (column 0) elsewhere.
    act = jnp.where(mine[..., None], cols, s[..., None])
    used = jnp.where(mine[..., None], legal, (cols == 0) & (draws > 0)[..., None])
    kids = jax.vmap(game.step)(leaves(lambda x: jnp.repeat(x, A, axis=0), flat), act.reshape(-1))
    over = jax.vmap(game.current_player)(kids).reshape(B, S, A) == TERMINAL
    payoff = jnp.where(used & over, sign * jax.vmap(game.returns)(kids)[:, 0].reshape(B, S, A)
                       .astype(dtype), 0.0)
    keep = used & ~over
    rank = jnp.where(keep, jnp.cumsum(keep, -1, dtype=jnp.int32) - 1,
                     jnp.where(used, _TERMINAL_CHILD, _ILLEGAL))
    count = _sum_last(keep.astype(jnp.int32))
    ends = _running_sum(count)
    overflow = overflow | (ends[:, -1] > S)
    # The next frontier: the kept children in slot order, then action order.
    by_rank = jnp.stack([_sum_last(jnp.where(rank == r, cols, 0)) for r in range(A)], -1)
    parent, start, valid = _parents(ends, S)
    r = jnp.clip(jnp.arange(S) - start, 0, A - 1)
    col = by_rank.reshape(-1)[(batch * S + parent) * A + r]
    front = leaves(lambda x: x[(batch * S + parent) * A + col], kids)
    level = (mine, opponent, node.key.reshape(B, S, -1), sigma, payoff, rank, ends - count)
    return (front, valid, drawn, overflow), level

  root = leaves(lambda x: jnp.broadcast_to(x[:, None], (B, S) + x.shape[1:]), src.root(B))
  init = (root, jnp.arange(S) == 0, jnp.zeros((B, 1), jnp.int32), jnp.zeros(B, bool))
  init = (init[0], jnp.broadcast_to(init[1], (B, S)), init[2], init[3])
  (_, valid, _, overflow), levels = lax.scan(down, init, None, length=D)
  overflow = overflow | jnp.any(valid, -1)  # a state below depth D: not a game of length D

  def up(value, level):
    mine, opponent, key, sigma, payoff, rank, start = level
    idx = jnp.minimum(start[..., None] + jnp.maximum(rank, 0), S - 1)
    below = value.reshape(-1)[batch[..., None] * S + idx]
    q = jnp.where(rank >= 0, below, payoff)
    value = jnp.where(mine, _sum_last(sigma * q), q[..., 0])
    regret = jnp.where(mine[..., None] & (rank >= _TERMINAL_CHILD), q - value[..., None], 0.0)
    return value, regret

  _, regret = lax.scan(up, jnp.zeros((B, S), dtype), levels, reverse=True)
  mine, opponent, key, sigma = levels[:4]
  flat = lambda x: jnp.moveaxis(x, 0, 1).reshape((B, D * S) + x.shape[3:])
  return tuple(flat(x) for x in (mine, opponent, key, regret, sigma)) + (overflow,)
