"""Monte Carlo CFR with batches of sampled trajectories: outcome and external sampling.

``solver = outcome_sampling(epsilon=0.6, batch=256)`` returns a frozen
:class:`MCCFRSolver` with the interface of :class:`~jaxgt.solvers.cfr.CFRSolver`:
``init(tree, key) -> MCCFRState``, ``step(tree, state)``, ``run(tree, state,
num_steps)`` (one jitted ``lax.fori_loop``) and ``average_policy(tree, state)``.
The key lives in the state and is split at every step, so a run is a pure
function of ``(tree, key, num_steps)``: same key, same policy, bit for bit.

One *step* updates player 0 from ``batch`` trajectories, then player 1 from
``batch`` new ones (sampled under player 0's updated regrets), so a step is
``2 * batch`` trajectories; at ``batch=1`` it is one OpenSpiel iteration.
Within a player's half-step all trajectories read the same strategy and their
updates are summed with one scatter-add.

* **Outcome sampling** (Lanctot et al. 2009; Lisy et al. 2015, Sec. 3.1, the
  ``delta = 0`` case of Algorithm 1): one terminal per trajectory; the updated
  player samples from ``epsilon * uniform + (1 - epsilon) * sigma``, the
  opponent and chance on-policy. Regrets at the updated player's states get
  ``W (1[a = a*] pi(z|ha) / q(a*) - pi(z|h))`` with ``W = u(z) / q_i(z[:h])``
  (importance weight of the updated player's sampled prefix); the opponent's
  average strategy gets ``sigma / q_i(h)`` (stochastically weighted averaging,
  as OpenSpiel's ``OutcomeSamplingSolver``).
* **External sampling** (Lanctot et al. 2009): chance and opponent actions
  sampled once per visited history, every action of the updated player
  explored. A traversal walks depth by depth over a frontier of static size
  (the most histories one traversal can reach at that depth, computed at
  ``init``): values flow up with the sampled outcome at chance/opponent
  histories and ``sigma`` at the updated player's; regrets ``q(h, a) - v(h)``
  at visited histories; the opponent's average strategy gets ``sigma`` once
  per visited history (OpenSpiel's default "simple" averaging).
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from jax import lax

from jaxgt.core.dtypes import resolve_dtype
from jaxgt.core.compiler import GameTree
from jaxgt.games.base import CHANCE
from jaxgt.core import sequence_form


@struct.dataclass
class MCCFRState:
  """State of one MCCFR run.

  Attributes:
    regrets: ``([I0, A], [I1, A])`` cumulative sampled regrets.
    cum_policy: ``([I0, A], [I1, A])`` average-strategy accumulators.
    iteration: ``[] int32`` completed steps (``2 * batch`` trajectories each).
    key: PRNG key for the next step.
    levels: static ``((lo, hi), ...)`` history slices of each depth.
    frontier: static, per player, the external-sampling frontier size of
      each depth (see :func:`_frontier_sizes`).
  """

  regrets: tuple
  cum_policy: tuple
  iteration: jax.Array
  key: jax.Array
  levels: tuple = struct.field(pytree_node=False)
  frontier: tuple = struct.field(pytree_node=False)

  @property
  def max_depth(self) -> int:
    return len(self.levels) - 1


@dataclasses.dataclass(frozen=True)
class MCCFRSolver:
  """Hyperparameters of a batched MCCFR variant; methods are pure functions.

  Attributes:
    name: ``"mccfr-os" | "mccfr-es"``.
    batch: trajectories per player per step.
    epsilon: exploration of the updated player (outcome sampling only).
    dtype: float dtype of the state.
  """

  name: str
  batch: int = 1
  epsilon: float = 0.6
  dtype: str = "float32"

  @property
  def trajectories_per_step(self) -> int:
    return 2 * self.batch

  def init(self, tree: GameTree, key: jax.Array) -> MCCFRState:
    """Zero regrets and averages; ``key`` drives every later step."""
    dtype = resolve_dtype(self.dtype)
    key = jnp.asarray(key)
    if not (jnp.issubdtype(key.dtype, jax.dtypes.prng_key) or
            (key.dtype == jnp.uint32 and key.shape == (2,))):
      raise ValueError(f"key must be a jax.random key, got dtype {key.dtype} shape {key.shape}")
    depth = np.asarray(tree.depth)
    if depth.size == 0 or np.any(np.diff(depth) < 0):
      raise ValueError("tree histories must be in breadth-first order (non-decreasing depth)")
    bounds = np.searchsorted(depth, np.arange(int(depth.max()) + 2))
    levels = tuple((int(bounds[d]), int(bounds[d + 1])) for d in range(len(bounds) - 1))
    zeros = tuple(jnp.zeros((n, tree.num_actions), dtype) for n in tree.num_infostates)
    return MCCFRState(regrets=zeros, cum_policy=zeros, iteration=jnp.zeros((), jnp.int32),
                      key=key, levels=levels, frontier=_frontier_sizes(tree, levels))

  def step(self, tree: GameTree, state: MCCFRState) -> MCCFRState:
    """One step: ``batch`` trajectories for each player."""
    return self.run(tree, state, 1)

  def run(self, tree: GameTree, state: MCCFRState, num_steps: int) -> MCCFRState:
    """``num_steps`` steps inside one jitted call."""
    if isinstance(num_steps, bool) or not isinstance(num_steps, (int, np.integer)) or num_steps < 0:
      raise ValueError(f"num_steps must be a non-negative integer, got {num_steps!r}")
    return _run(self, tree, state, jnp.asarray(num_steps, jnp.int32))

  def current_policy(self, tree: GameTree, state: MCCFRState):
    """Regret-matching strategy of the next step: ``([I0, A], [I1, A])``."""
    return tuple(sequence_form.regret_matching(r, jnp.asarray(pt.legal))
                 for r, pt in zip(state.regrets, tree.players))

  def average_policy(self, tree: GameTree, state: MCCFRState):
    """Normalised average strategy (uniform where never updated)."""
    return tuple(sequence_form.normalize(c, jnp.asarray(pt.legal))
                 for c, pt in zip(state.cum_policy, tree.players))


def _cast_tree(tree: GameTree, dtype) -> GameTree:
  return jax.tree_util.tree_map(
      lambda x: x.astype(dtype) if jnp.issubdtype(jnp.asarray(x).dtype, jnp.floating) else x, tree)


def _gather_policy(tree: GameTree, sigma, pl, info):
  """``sigma`` and legal mask ``[A]`` of the acting player at an information state."""
  i0 = jnp.clip(info, 0, sigma[0].shape[0] - 1)
  i1 = jnp.clip(info, 0, sigma[1].shape[0] - 1)
  sig = jnp.where(pl == 0, sigma[0][i0], sigma[1][i1])
  legal = jnp.where(pl == 0, tree.players[0].legal[i0], tree.players[1].legal[i1])
  return sig, legal


def _history_policies(tree: GameTree, sigma):
  """``sigma`` and legal mask of the acting player at every history ``[H, A]``."""
  pl = tree.player
  sig, legal = jax.vmap(lambda a, i: _gather_policy(tree, sigma, a, i))(pl, tree.infostate)
  dec = (pl >= 0)[:, None]
  return jnp.where(dec, sig, 0.0), legal & dec


def _os_walk_lazy(cfg: MCCFRSolver, tree: GameTree, regrets, p: int, uni):
  """Batched outcome-sampling walk, regret-matching the visited rows: ``[D, B]`` records."""
  depth, B = uni.shape
  A = tree.num_actions
  C = tree.children.shape[1]
  dtype = regrets[0].dtype
  pl = tree.player
  legal_tab = [tree.players[q].legal for q in (0, 1)]

  def body(t, carry):
    hs, rec = carry
    pl_h = pl[hs]
    info = tree.infostate[hs]
    i0 = jnp.clip(info, 0, regrets[0].shape[0] - 1)
    i1 = jnp.clip(info, 0, regrets[1].shape[0] - 1)
    r = jnp.where((pl_h == 0)[:, None], regrets[0][i0], regrets[1][i1])
    legal = jnp.where((pl_h == 0)[:, None], legal_tab[0][i0], legal_tab[1][i1]) & (pl_h >= 0)[:, None]
    sig = jnp.where(legal, sequence_form.regret_matching(r, legal), 0.0)
    nleg = jnp.maximum(jnp.sum(legal, axis=-1, keepdims=True), 1)
    q = jnp.where((pl_h == p)[:, None], cfg.epsilon * legal / nleg + (1.0 - cfg.epsilon) * sig, sig)
    probs = jnp.where((pl_h == CHANCE)[:, None], tree.chance_probs[hs],
                      jnp.pad(q, ((0, 0), (0, C - A))))
    c = jnp.cumsum(probs, axis=-1)
    a = jnp.minimum(jnp.sum(c <= (uni[t] * c[:, -1])[:, None], axis=-1), C - 1).astype(jnp.int32)
    live = (pl_h >= 0) | (pl_h == CHANCE)
    ac = jnp.minimum(a, A - 1)
    new = (jnp.where(live, hs, -1), ac, sig, legal,
           jnp.take_along_axis(sig, ac[:, None], axis=-1)[:, 0],
           jnp.take_along_axis(q, ac[:, None], axis=-1)[:, 0])
    rec = tuple(x.at[t].set(n) for x, n in zip(rec, new))
    return jnp.where(live, tree.children[hs, a], hs), rec

  rec = (jnp.full((depth, B), -1, jnp.int32), jnp.zeros((depth, B), jnp.int32),
         jnp.zeros((depth, B, A), dtype), jnp.zeros((depth, B, A), bool),
         jnp.ones((depth, B), dtype), jnp.ones((depth, B), dtype))
  hs, (path, acts, sig_t, legal_t, s_a, q_a) = lax.fori_loop(
      0, depth, body, (jnp.zeros(B, jnp.int32), rec))
  return (hs, path, acts, sig_t, legal_t, s_a, q_a)


def _os_walk_tables(cfg: MCCFRSolver, tree: GameTree, regrets, p: int, uni):
  """Batched outcome-sampling walk over ``[H, C]`` tabulated sampling distributions."""
  depth, B = uni.shape
  A = tree.num_actions
  C = tree.children.shape[1]
  pl = tree.player
  sigma = [sequence_form.regret_matching(regrets[q], tree.players[q].legal) for q in (0, 1)]
  sig_h, legal_h = _history_policies(tree, sigma)
  nleg = jnp.maximum(jnp.sum(legal_h, axis=-1, keepdims=True), 1)
  q_h = jnp.where((pl == p)[:, None],
                  cfg.epsilon * legal_h / nleg + (1.0 - cfg.epsilon) * sig_h, sig_h)
  probs = jnp.where((pl == CHANCE)[:, None], tree.chance_probs, jnp.pad(q_h, ((0, 0), (0, C - A))))
  cdf = jnp.cumsum(probs, axis=-1)

  def body(t, carry):
    hs, path, acts = carry
    c = cdf[hs]
    a = jnp.minimum(jnp.sum(c <= (uni[t] * c[:, -1])[:, None], axis=-1), C - 1).astype(jnp.int32)
    live = (pl[hs] >= 0) | (pl[hs] == CHANCE)
    path = path.at[t].set(jnp.where(live, hs, -1))
    acts = acts.at[t].set(jnp.minimum(a, A - 1))
    return jnp.where(live, tree.children[hs, a], hs), path, acts

  hs, path, acts = lax.fori_loop(
      0, depth, body, (jnp.zeros(B, jnp.int32), jnp.full((depth, B), -1, jnp.int32),
                       jnp.zeros((depth, B), jnp.int32)))
  hp = jnp.maximum(path, 0)
  s_a = jnp.take_along_axis(sig_h[hp], acts[..., None], axis=-1)[..., 0]
  q_a = jnp.take_along_axis(q_h[hp], acts[..., None], axis=-1)[..., 0]
  return hs, path, acts, sig_h[hp], legal_h[hp], s_a, q_a


def _os_half_step(cfg: MCCFRSolver, tree: GameTree, regrets, cum, p: int, depth: int, key):
  """Outcome sampling for player ``p`` from ``batch`` trajectories (one scatter-add each).

  The whole batch walks down together (one ``fori_loop`` over depth),
  regret-matching only the rows of the visited information states, with the
  ``[D, B]`` uniforms drawn in one call. Per depth ``t``
  with ``V_t = u(z) prod_{k >= t} sigma/q`` over ``p``'s sampled actions and
  ``Q_t = prod_{k < t} q`` (``p``'s sampling reach), the regret increment is
  ``(1[a = a_t] V_{t+1} / q_t - V_t) / Q_t`` and the opponent's average
  increment ``sigma / Q_t`` (chance and opponent reach cancel: both are
  sampled on-policy).
  """
  A = tree.num_actions
  dtype = regrets[0].dtype
  pl = tree.player
  B = cfg.batch
  uni = jax.random.uniform(key, (depth, B), dtype)
  # Large batches tabulate the sampling distribution of every history once;
  # small ones regret-match only the visited rows (same numbers either way).
  walk = _os_walk_tables if B * depth >= tree.num_histories else _os_walk_lazy
  hs, path, acts, sig_t, legal_t, s_a, q_a = walk(cfg, tree, regrets, p, uni)
  u = tree.terminal_payoff[tree.history_terminal[hs]] * (1.0 if p == 0 else -1.0)  # [B]
  hp = jnp.maximum(path, 0)
  plt = jnp.where(path >= 0, pl[hp], -9)  # [D, B]
  mine = plt == p
  ratio = jnp.where(mine, s_a / q_a, 1.0)
  V = u * jnp.cumprod(ratio[::-1], axis=0)[::-1]  # [D, B]
  V_next = jnp.concatenate([V[1:], u[None]])
  qp = jnp.where(mine, q_a, 1.0)
  prefix = jnp.concatenate([jnp.ones((1, B), dtype), jnp.cumprod(qp, axis=0)[:-1]])
  onehot = jax.nn.one_hot(acts, A, dtype=dtype)
  regret = (onehot * (V_next / q_a)[..., None] - V[..., None]) / prefix[..., None]
  regret = jnp.where(mine[..., None] & legal_t, regret, 0.0)
  theirs = plt == 1 - p
  avg = jnp.where(theirs[..., None], sig_t / prefix[..., None], 0.0)
  info = tree.infostate[hp]
  regrets, cum = list(regrets), list(cum)
  regrets[p] = regrets[p].at[jnp.where(mine, info, 0).reshape(-1)].add(regret.reshape(-1, A))
  cum[1 - p] = cum[1 - p].at[jnp.where(theirs, info, 0).reshape(-1)].add(avg.reshape(-1, A))
  return tuple(regrets), tuple(cum)


def _frontier_sizes(tree: GameTree, levels) -> tuple:
  """Per player ``p``, the most histories one external-sampling traversal reaches at each depth.

  ``M(h) = sum_a M(ha)`` at ``p``'s histories, ``max_a M(ha)`` at chance and
  opponent histories (one sampled outcome), computed for every target depth;
  these static bounds size the traversal's frontier arrays.
  """
  depth = np.asarray(tree.depth)
  ch = np.asarray(tree.children)
  pl = np.asarray(tree.player)
  out = []
  for p in (0, 1):
    sizes = []
    for d in range(len(levels)):
      m = (depth == d).astype(np.int64)
      for e in range(d - 1, -1, -1):
        lo, hi = levels[e]
        c = np.where(ch[lo:hi] >= 0, m[np.maximum(ch[lo:hi], 0)], 0)
        m[lo:hi] = np.where(pl[lo:hi] == p, c.sum(1), c.max(1, initial=0))
      sizes.append(max(int(m[0]), 1))
    out.append(tuple(sizes))
  return tuple(out)


def _es_traversal(tree: GameTree, rows, p: int, sizes, uni):
  """One external-sampling traversal for player ``p`` over fixed-size frontiers.

  The frontier of depth ``d`` holds at most ``sizes[d]`` histories (``-1``
  padding). Going down, ``p``'s histories keep every child and the others
  their sampled child, compacted into the next frontier; going up, a history
  is worth ``sum_a sigma(a) v(ha)`` at ``p`` and its sampled child's value
  elsewhere; ``uni [sum(sizes)]`` are the uniforms of the sampled outcomes.
  Returns per frontier slot (all depths concatenated): acting
  player, information state, regret increment ``[K, A]`` and the opponent's
  average increment ``[K, A]``.
  """
  A = tree.num_actions
  C = tree.children.shape[1]
  sign = 1.0 if p == 0 else -1.0
  fronts = [jnp.zeros(1, jnp.int32)]
  slots, sampled = [], []
  for d in range(len(sizes)):
    f = fronts[d]
    valid = f >= 0
    h = jnp.maximum(f, 0)
    pl = jnp.where(valid, tree.player[h], -9)
    sig, legal, cdf = rows(h)
    dtype = sig.dtype
    off = sum(sizes[:d])
    u = uni[off:off + sizes[d]] * cdf[:, -1]
    s = jnp.minimum(jnp.sum(cdf <= u[:, None], axis=-1), C - 1)
    sampled.append(s)
    ch = tree.children[h]
    keep = valid[:, None] & (ch >= 0) & ((pl == p)[:, None] | (jnp.arange(C) == s[:, None]))
    if d + 1 == len(sizes):
      slots.append(jnp.full(ch.shape, -1, jnp.int32))
      break
    pos = jnp.cumsum(keep.reshape(-1)).reshape(keep.shape) - 1
    slot = jnp.where(keep, pos, -1).astype(jnp.int32)
    slots.append(slot)
    nxt = jnp.full(sizes[d + 1], -1, jnp.int32)
    fronts.append(nxt.at[jnp.where(keep, pos, sizes[d + 1]).reshape(-1)].set(
        ch.reshape(-1), mode="drop"))
  value = None
  out = []
  for d in reversed(range(len(sizes))):
    f = fronts[d]
    valid = f >= 0
    h = jnp.maximum(f, 0)
    pl = jnp.where(valid, tree.player[h], -9)
    info = tree.infostate[h]
    sig, legal, _ = rows(h)
    term = tree.history_terminal[h]
    leaf = jnp.where(term >= 0, sign * tree.terminal_payoff[jnp.maximum(term, 0)], 0.0)
    if value is None:
      q = jnp.zeros(f.shape + (C,), dtype)
    else:
      q = jnp.where(slots[d] >= 0, value[jnp.maximum(slots[d], 0)], 0.0)
    mine = pl == p
    inner = jnp.where(mine, jnp.sum(sig * q[:, :A], axis=-1), jnp.sum(q, axis=-1))
    v = jnp.where(term >= 0, leaf, inner)
    regret = jnp.where((mine[:, None] & legal), q[:, :A] - v[:, None], 0.0)
    avg = jnp.where((pl == 1 - p)[:, None], sig, 0.0)
    out.append((pl, info, regret, avg))
    value = v
  return tuple(jnp.concatenate(x) for x in zip(*out))


def _es_half_step(cfg: MCCFRSolver, tree: GameTree, regrets, cum, p: int, sizes, key):
  """External sampling for player ``p`` from ``batch`` traversals (one scatter-add)."""
  A = tree.num_actions
  C = tree.children.shape[1]
  dtype = regrets[0].dtype

  def sampling(pl, sig, chance):
    probs = jnp.where((pl == CHANCE)[:, None], chance,
                      jnp.pad(jnp.where((pl == 1 - p)[:, None], sig, 0.0), ((0, 0), (0, C - A))))
    return jnp.cumsum(probs, axis=-1)

  if cfg.batch * sum(sizes) >= tree.num_histories:
    # Large batches: tabulate sigma, legal mask and sampling CDF of every history.
    sigma = [sequence_form.regret_matching(regrets[q], tree.players[q].legal) for q in (0, 1)]
    sig_h, legal_h = _history_policies(tree, sigma)
    cdf_h = sampling(tree.player, sig_h, tree.chance_probs)

    def rows(h):
      return sig_h[h], legal_h[h], cdf_h[h]
  else:
    # Small batches: regret-match only the visited rows.
    def rows(h):
      pl = tree.player[h]
      info = tree.infostate[h]
      i0 = jnp.clip(info, 0, regrets[0].shape[0] - 1)
      i1 = jnp.clip(info, 0, regrets[1].shape[0] - 1)
      r = jnp.where((pl == 0)[:, None], regrets[0][i0], regrets[1][i1])
      legal = jnp.where((pl == 0)[:, None], tree.players[0].legal[i0],
                        tree.players[1].legal[i1]) & (pl >= 0)[:, None]
      sig = jnp.where(legal, sequence_form.regret_matching(r, legal), 0.0)
      return sig, legal, sampling(pl, sig, tree.chance_probs[h])

  uni = jax.random.uniform(key, (cfg.batch, sum(sizes)), dtype)
  pl, info, regret, avg = jax.vmap(lambda u: _es_traversal(tree, rows, p, sizes, u))(uni)
  pl, info = pl.reshape(-1), info.reshape(-1)
  regrets, cum = list(regrets), list(cum)
  regrets[p] = regrets[p].at[jnp.where(pl == p, info, 0)].add(regret.reshape(-1, A))
  cum[1 - p] = cum[1 - p].at[jnp.where(pl == 1 - p, info, 0)].add(avg.reshape(-1, A))
  return tuple(regrets), tuple(cum)


@functools.partial(jax.jit, static_argnums=(0,))
def _run(cfg: MCCFRSolver, tree: GameTree, state: MCCFRState, num_steps) -> MCCFRState:
  tree = _cast_tree(tree, state.regrets[0].dtype)
  levels = state.levels

  def body(_, s):
    key, k0, k1 = jax.random.split(s.key, 3)
    regrets, cum = s.regrets, s.cum_policy
    for p, k in ((0, k0), (1, k1)):
      if cfg.name == "mccfr-os":
        regrets, cum = _os_half_step(cfg, tree, regrets, cum, p, len(levels) - 1, k)
      else:
        regrets, cum = _es_half_step(cfg, tree, regrets, cum, p, state.frontier[p], k)
    return s.replace(regrets=regrets, cum_policy=cum, iteration=s.iteration + 1, key=key)

  return lax.fori_loop(0, num_steps, body, state)


def _check_batch(batch) -> int:
  if isinstance(batch, bool) or not isinstance(batch, (int, np.integer)) or batch < 1:
    raise ValueError(f"batch must be a positive integer, got {batch!r}")
  return int(batch)


def outcome_sampling(epsilon: float = 0.6, batch: int = 1, *, dtype="float32") -> MCCFRSolver:
  """Outcome-sampling MCCFR, ``epsilon``-on-policy exploration (Lisy et al. 2015, Sec. 3.1)."""
  if not isinstance(epsilon, (int, float)) or not 0.0 < epsilon <= 1.0:
    raise ValueError(f"epsilon must be in (0, 1], got {epsilon!r}")
  return MCCFRSolver("mccfr-os", batch=_check_batch(batch), epsilon=float(epsilon),
                     dtype=jnp.dtype(resolve_dtype(dtype)).name)


def external_sampling(batch: int = 1, *, dtype="float32") -> MCCFRSolver:
  """External-sampling MCCFR (Lanctot et al. 2009)."""
  batch = _check_batch(batch)
  return MCCFRSolver("mccfr-es", batch=batch, dtype=jnp.dtype(resolve_dtype(dtype)).name)


SAMPLING_SOLVERS = {"mccfr-os": outcome_sampling, "mccfr-es": external_sampling}


def make_sampling_solver(name: str, batch: int = 1, **kwargs) -> MCCFRSolver:
  """A sampling solver by name (``mccfr-os``, ``mccfr-es``) for the CLI."""
  if name not in SAMPLING_SOLVERS:
    raise ValueError(f"unknown sampling solver {name!r}; choose one of {', '.join(SAMPLING_SOLVERS)}")
  if name == "mccfr-es" and "epsilon" in kwargs:
    raise ValueError("epsilon applies to outcome sampling (mccfr-os) only")
  return SAMPLING_SOLVERS[name](batch=batch, **kwargs)
