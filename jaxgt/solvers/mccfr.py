"""Monte Carlo CFR with batches of sampled trajectories: outcome and external sampling.

``solver = outcome_sampling(epsilon=0.6, batch=256)`` returns a frozen
:class:`MCCFRSolver` following the solver protocol (:mod:`jaxgt.solvers.base`);
its policy is the average strategy.

One *step* updates player 0 from ``batch`` trajectories, then player 1 from
``batch`` new ones (sampled under player 0's updated regrets), so a step is
``2 * batch`` trajectories; at ``batch=1`` it is one OpenSpiel iteration.
Within a player's half-step all trajectories read the same strategy and their
updates are summed with one scatter-add.

* **Outcome sampling** (Lanctot et al. 2009; Lisy et al. 2015, Sec. 3.1, the
  ``delta = 0`` case of Algorithm 1): one terminal per trajectory, walked by
  :func:`jaxgt.solvers.walk.walk` (the node policy is below); the updated
  player samples from ``epsilon * uniform + (1 - epsilon) * sigma``, the
  opponent and chance on-policy. Regrets at the updated player's states get
  ``W (1[a = a*] pi(z|ha) / q(a*) - pi(z|h))`` with ``W = u(z) / q_i(z[:h])``
  (importance weight of the updated player's sampled prefix); the opponent's
  average strategy gets ``sigma / q_i(h)`` (stochastically weighted averaging,
  as OpenSpiel's ``OutcomeSamplingSolver``).
* **External sampling** (Lanctot et al. 2009): chance and opponent actions
  sampled once per visited history, every action of the updated player
  explored. This is a traversal, not one trajectory, so it does not use
  :func:`~jaxgt.solvers.walk.walk`; it reads the same nodes
  (:func:`~jaxgt.solvers.walk.node_at`), regret-matches with the same
  function and draws chance/opponent outcomes with the same weights
  (:func:`~jaxgt.solvers.walk.with_chance`) and sampler. A traversal walks
  depth by depth over a frontier of static size
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

from jaxgt.core import sequence_form
from jaxgt.core.checks import check_positive_int, check_real
from jaxgt.core.compiler import NO_PLAYER, GameTree
from jaxgt.core.dtypes import cast_tree, dtype_name
from jaxgt.core.sampling import mix_uniform, sample_index
from jaxgt.core.tables import infostate_rows
from jaxgt.solvers.base import (Solver, check_num_steps, require_key, step_key,
                                walking_init_dtype)
from jaxgt.solvers.walk import Draw, node_at, walk, walk_tables, with_chance


@struct.dataclass
class MCCFRState:
  """State of one MCCFR run."""

  regrets: tuple  # ([I0, A], [I1, A]) cumulative sampled regrets
  cum_policy: tuple  # ([I0, A], [I1, A]) average-strategy accumulators
  iteration: jax.Array  # [] int32 completed steps (2 * batch trajectories each)
  # static, per player, the external-sampling frontier size of each depth (see
  # :func:`_frontier_sizes`)
  frontier: tuple = struct.field(pytree_node=False)


@dataclasses.dataclass(frozen=True)
class MCCFRSolver(Solver):
  """Hyperparameters of a batched MCCFR variant; methods are pure functions (:mod:`.base`)."""

  name: str  # "mccfr-os" | "mccfr-es"
  batch: int = 1  # trajectories per player per step
  epsilon: float = 0.6  # exploration of the updated player (outcome sampling only)
  dtype: str = "float32"  # float dtype of the state

  @property
  def samples_per_step(self) -> int:
    return 2 * self.batch

  def init(self, tree: GameTree, *, weights=None) -> MCCFRState:
    """Zero regrets and averages (root beliefs are not supported)."""
    dtype = walking_init_dtype(self, tree, weights)
    zeros = tuple(jnp.zeros((n, tree.num_actions), dtype) for n in tree.num_infostates)
    return MCCFRState(regrets=zeros, cum_policy=zeros, iteration=jnp.zeros((), jnp.int32),
                      frontier=_frontier_sizes(tree) if self.name == "mccfr-es" else ())

  @property
  def jitted_run(self):
    return _run

  def run(self, tree: GameTree, state: MCCFRState, num_steps, key=None) -> MCCFRState:
    """``num_steps`` steps inside one jitted call; step ``t`` uses ``step_key(key, t)``."""
    num_steps = check_num_steps(num_steps, traced_ok=True)
    return _run(self, tree, state, num_steps, require_key(self.name, key))



def regret_matching_at(tree: GameTree, regrets, tabulate: bool):
  """``sigma(node) -> [B, A]``: regret matching of ``regrets`` at the nodes' information states.

  ``tabulate`` regret-matches every information state once (large batches);
  otherwise only the visited rows are regret-matched (same numbers).
  Zero off decisions.
  """
  if tabulate:
    sigma = tuple(sequence_form.regret_matching(r, pt.legal) for r, pt in zip(regrets, tree.players))
    return lambda node: jnp.where(node.decision[:, None],
                                  infostate_rows(sigma, node.player, node.infostate), 0.0)
  return lambda node: sequence_form.regret_matching(
      infostate_rows(regrets, node.player, node.infostate), node.legal)


def outcome_walk(cfg: MCCFRSolver, tree: GameTree, regrets, p: int, uniforms, *,
                 tabulate: bool):
  """Outcome-sampling trajectories for updated player ``p`` (:func:`walk`).

  Target: regret matching ``sigma``; sampling: ``epsilon``-on-policy at
  ``p``'s states, ``sigma`` at the opponent's. Returns the
  :class:`Trajectory` and ``sigma, legal [D, B, A]`` of each step.
  ``tabulate`` (large batches) computes both distributions of every
  history once and the walk only gathers rows; otherwise only the visited
  rows are regret-matched (same numbers).
  """
  sigma_at = regret_matching_at(tree, regrets, tabulate)

  def distributions(node):
    sig = sigma_at(node)
    q = jnp.where((node.player == p)[:, None], mix_uniform(sig, node.legal, cfg.epsilon), sig)
    return sig, q

  if not tabulate:
    def node_policy(t, node, carry):
      del t
      sig, q = distributions(node)
      return Draw(sample=q, target=sig, record=(sig, node.legal)), carry

    traj = walk(tree, node_policy, uniforms)[0]
    return (traj,) + traj.record
  every = node_at(tree, jnp.arange(tree.num_histories, dtype=jnp.int32))
  sig_h, q_h = distributions(every)
  traj = walk_tables(tree, q_h, sig_h, uniforms)
  h = jnp.maximum(traj.history, 0)
  return traj, jnp.where((traj.history >= 0)[..., None], sig_h[h], 0.0), every.legal[h]


def _os_half_step(cfg: MCCFRSolver, tree: GameTree, regrets, cum, p: int, key):
  """Outcome sampling for player ``p`` from ``batch`` trajectories (one scatter-add each).

  The whole batch walks down together (:func:`outcome_walk`), with the
  ``[D, B]`` uniforms drawn in one call. Per depth ``t``
  with ``V_t = u(z) prod_{k >= t} sigma/q`` over ``p``'s sampled actions and
  ``Q_t = prod_{k < t} q`` (``p``'s sampling reach), the regret increment is
  ``(1[a = a_t] V_{t+1} / q_t - V_t) / Q_t`` and the opponent's average
  increment ``sigma / Q_t`` (chance and opponent reach cancel: both are
  sampled on-policy).
  """
  A = tree.num_actions
  dtype = regrets[0].dtype
  B = cfg.batch
  uni = jax.random.uniform(key, (tree.max_depth, B), dtype)
  # Large batches regret-match every information state once; small ones
  # only the visited rows (same numbers either way).
  traj, sig_t, legal_t = outcome_walk(cfg, tree, regrets, p, uni,
                                      tabulate=B * tree.max_depth >= tree.num_histories)
  s_a, q_a = traj.target_prob, traj.sample_prob
  u = traj.payoff(tree) * (1.0 if p == 0 else -1.0)  # [B]
  mine = traj.player == p
  ratio = jnp.where(mine, s_a / q_a, 1.0)
  V = u * jnp.cumprod(ratio[::-1], axis=0)[::-1]  # [D, B]
  V_next = jnp.concatenate([V[1:], u[None]])
  qp = jnp.where(mine, q_a, 1.0)
  prefix = jnp.concatenate([jnp.ones((1, B), dtype), jnp.cumprod(qp, axis=0)[:-1]])
  onehot = jax.nn.one_hot(traj.action, A, dtype=dtype)
  regret = (onehot * (V_next / q_a)[..., None] - V[..., None]) / prefix[..., None]
  regret = jnp.where(mine[..., None] & legal_t, regret, 0.0)
  theirs = traj.player == 1 - p
  avg = jnp.where(theirs[..., None], sig_t / prefix[..., None], 0.0)
  info = traj.infostate
  regrets, cum = list(regrets), list(cum)
  regrets[p] = regrets[p].at[jnp.where(mine, info, 0).reshape(-1)].add(regret.reshape(-1, A))
  cum[1 - p] = cum[1 - p].at[jnp.where(theirs, info, 0).reshape(-1)].add(avg.reshape(-1, A))
  return tuple(regrets), tuple(cum)


def _frontier_sizes(tree: GameTree) -> tuple:
  """Per player ``p``, the most histories one external-sampling traversal reaches at each depth.

  ``M(h) = sum_a M(ha)`` at ``p``'s histories, ``max_a M(ha)`` at chance and
  opponent histories (one sampled outcome), computed for every target depth;
  these static bounds size the traversal's frontier arrays.
  """
  levels = tree.depth_levels
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


def _es_traversal(tree: GameTree, sigma_at, p: int, sizes, uni):
  """One external-sampling traversal for player ``p`` over fixed-size frontiers.

  The frontier of depth ``d`` holds at most ``sizes[d]`` histories (``-1``
  padding). Going down, ``p``'s histories keep every child and the others
  their sampled child (drawn like a :func:`~jaxgt.solvers.walk.walk` step:
  :func:`~jaxgt.solvers.walk.with_chance` weights, the one sampler), compacted
  into the next frontier; going up, a history is worth ``sum_a sigma(a)
  v(ha)`` at ``p`` and its sampled child's value elsewhere; ``uni
  [sum(sizes)]`` are the uniforms of the sampled outcomes. Returns per
  frontier slot (all depths concatenated): acting player, information
  state, regret increment ``[K, A]`` and the opponent's average increment
  ``[K, A]``.
  """
  A = tree.num_actions
  C = tree.children.shape[1]
  sign = 1.0 if p == 0 else -1.0
  fronts = [jnp.zeros(1, jnp.int32)]
  slots, nodes = [], []
  for d in range(len(sizes)):
    f = fronts[d]
    valid = f >= 0
    node = node_at(tree, jnp.maximum(f, 0))
    sig = sigma_at(node)
    nodes.append((valid, node, sig))
    off = sum(sizes[:d])
    # Chance and the opponent sample one outcome; p's own draw is unused.
    s = sample_index(with_chance(tree, node, jnp.where((node.player == 1 - p)[:, None], sig, 0.0)),
                     uni[off:off + sizes[d]])
    ch = tree.children[node.history]
    pl = jnp.where(valid, node.player, NO_PLAYER)
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
    valid, node, sig = nodes[d]
    pl = jnp.where(valid, node.player, NO_PLAYER)
    term = tree.history_terminal[node.history]
    leaf = jnp.where(term >= 0, sign * tree.terminal_payoff[jnp.maximum(term, 0)], 0.0)
    if value is None:
      q = jnp.zeros(node.history.shape + (C,), sig.dtype)
    else:
      q = jnp.where(slots[d] >= 0, value[jnp.maximum(slots[d], 0)], 0.0)
    mine = pl == p
    inner = jnp.where(mine, jnp.sum(sig * q[:, :A], axis=-1), jnp.sum(q, axis=-1))
    v = jnp.where(term >= 0, leaf, inner)
    regret = jnp.where((mine[:, None] & node.legal), q[:, :A] - v[:, None], 0.0)
    avg = jnp.where((pl == 1 - p)[:, None], sig, 0.0)
    out.append((pl, node.infostate, regret, avg))
    value = v
  return tuple(jnp.concatenate(x) for x in zip(*out))


def _es_half_step(cfg: MCCFRSolver, tree: GameTree, regrets, cum, p: int, sizes, key):
  """External sampling for player ``p`` from ``batch`` traversals (one scatter-add)."""
  A = tree.num_actions
  dtype = regrets[0].dtype
  # Large batches regret-match every information state once, small ones the visited rows.
  sigma_at = regret_matching_at(tree, regrets, cfg.batch * sum(sizes) >= tree.num_histories)
  uni = jax.random.uniform(key, (cfg.batch, sum(sizes)), dtype)
  pl, info, regret, avg = jax.vmap(lambda u: _es_traversal(tree, sigma_at, p, sizes, u))(uni)
  pl, info = pl.reshape(-1), info.reshape(-1)
  regrets, cum = list(regrets), list(cum)
  regrets[p] = regrets[p].at[jnp.where(pl == p, info, 0)].add(regret.reshape(-1, A))
  cum[1 - p] = cum[1 - p].at[jnp.where(pl == 1 - p, info, 0)].add(avg.reshape(-1, A))
  return tuple(regrets), tuple(cum)


@functools.partial(jax.jit, static_argnums=(0,))
def _run(cfg: MCCFRSolver, tree: GameTree, state: MCCFRState, num_steps, key) -> MCCFRState:
  tree = cast_tree(tree, state.regrets[0].dtype)

  def body(_, s):
    k0, k1 = jax.random.split(step_key(key, s.iteration))
    regrets, cum = s.regrets, s.cum_policy
    for p, k in ((0, k0), (1, k1)):
      if cfg.name == "mccfr-os":
        regrets, cum = _os_half_step(cfg, tree, regrets, cum, p, k)
      else:
        regrets, cum = _es_half_step(cfg, tree, regrets, cum, p, state.frontier[p], k)
    return s.replace(regrets=regrets, cum_policy=cum, iteration=s.iteration + 1)

  return lax.fori_loop(0, num_steps, body, state)


def outcome_sampling(epsilon: float = 0.6, batch: int = 1, *, dtype="float32") -> MCCFRSolver:
  """Outcome-sampling MCCFR, ``epsilon``-on-policy exploration (Lisy et al. 2015, Sec. 3.1)."""
  return MCCFRSolver("mccfr-os", epsilon=check_real("epsilon", epsilon, 0, 1, lo_open=True),
                     batch=check_positive_int("batch", batch), dtype=dtype_name(dtype))


def external_sampling(batch: int = 1, *, dtype="float32") -> MCCFRSolver:
  """External-sampling MCCFR (Lanctot et al. 2009)."""
  batch = check_positive_int("batch", batch)
  return MCCFRSolver("mccfr-es", batch=batch, dtype=dtype_name(dtype))


SAMPLING_SOLVERS = {"mccfr-os": outcome_sampling, "mccfr-es": external_sampling}


def make_sampling_solver(name: str, batch: int = 1, **kwargs) -> MCCFRSolver:
  """A sampling solver by name (``mccfr-os``, ``mccfr-es``) for the CLI."""
  if name not in SAMPLING_SOLVERS:
    raise ValueError(f"unknown sampling solver {name!r}; choose one of {', '.join(SAMPLING_SOLVERS)}")
  if name == "mccfr-es" and "epsilon" in kwargs:
    raise ValueError("epsilon applies to outcome sampling (mccfr-os) only")
  return SAMPLING_SOLVERS[name](batch=batch, **kwargs)
