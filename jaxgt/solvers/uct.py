"""UCT and Smooth UCT self-play search over information states (Heinrich & Silver 2015).

``solver = smooth_uct()`` returns a frozen :class:`UCTSolver` with the
interface of the sampling solvers (:mod:`jaxgt.solvers.mccfr`):
``init(tree, key) -> UCTState``, ``run(tree, state, num_steps)`` (one jitted
``lax.fori_loop``) and ``average_policy(tree, state)``, so
:func:`jaxgt.core.sequence_form.exploitability` evaluates the result. The
key lives in the state and is split at every step: a run is a pure function
of ``(tree, key, num_steps)``, bit for bit.

Extensive-form MCTS (Sec. 3, Algorithm 1): one search tree per player over
that player's information states. The compiled game already enumerates them,
so each player's tree is a fixed-capacity table ``[I_p, A]`` of visit counts
``N`` and mean returns ``Q``; an information state is *in the tree* once it
has been visited (``N(u) = sum_a N(u, a) > 0``). An episode walks from the
root: chance samples ``chance_probs``; a player still inside their tree
selects with SELECT; the first information state of a player outside their
tree is added (its action drawn from the uniform rollout policy) and that
player plays the rollout policy for the rest of the episode, so each tree
grows by at most one node per episode. At the end, every in-tree node on the
path (including the new one) gets UPDATE: ``N(u, a) += 1`` and ``Q(u, a)``
moves to the running mean of the player's return.

SELECT (Sec. 3.2, Algorithm 2): with probability
``eta_k = max(gamma, eta / (1 + d sqrt(N(u))))`` (Eq. 2) the UCB1 choice
``argmax_a Q(u, a) + c sqrt(log N(u) / N(u, a))`` (untried actions first, ties
uniformly at random), otherwise an action drawn from the average strategy
``N(u, a) / N(u)``. Plain UCT is ``eta_k = 1``. The average strategy of both
methods is the normalised visit counts (Sec. 3.2), uniform where unvisited.

Batches: one *step* runs ``batch`` episodes in parallel (``vmap``-style array
code); they all read the statistics at the start of the step and their
updates are summed (a new node added by several of them is added once). At
``batch=1`` a step is exactly one episode of Algorithm 1.

Paper constants (Sec. 4.1-4.2), also in :data:`PAPER_CONSTANTS`:

=============  =========  ==============================================
game           UCT ``c``  Smooth UCT
=============  =========  ==============================================
Kuhn poker     2          ``c=1.75, gamma=0.1, eta=0.9, d=0.001``
Leduc hold'em  20         ``c=18, gamma=0.1, eta=0.9, d=0.002``
=============  =========  ==============================================

The factory defaults are the Kuhn constants. Note the paper's exploitability
(Sec. 4.2) is NashConv; jaxgt's ``exploitability`` is NashConv / 2.
"""

from __future__ import annotations

import dataclasses
import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from jax import lax

from jaxgt.core.dtypes import resolve_dtype
from jaxgt.core.compiler import GameTree
from jaxgt.games.base import CHANCE
from jaxgt.core import sequence_form
from jaxgt.core.checks import check_key

PAPER_CONSTANTS = {
    "uct": {"kuhn_poker": {"c": 2.0}, "leduc_poker": {"c": 20.0}},
    "smooth-uct": {
        "kuhn_poker": {"c": 1.75, "gamma": 0.1, "eta": 0.9, "d": 0.001},
        "leduc_poker": {"c": 18.0, "gamma": 0.1, "eta": 0.9, "d": 0.002},
    },
}


@struct.dataclass
class UCTState:
  """State of one (Smooth) UCT self-play run.

  Attributes:
    visits: ``([I0, A], [I1, A]) int32`` action visit counts ``N(u, a)``;
      ``N(u) > 0`` marks the information states in each player's tree.
    values: ``([I0, A], [I1, A])`` mean return ``Q(u, a)`` of the player to act.
    episodes: ``[] int32`` episodes simulated so far.
    key: PRNG key for the next step.
    depth: static maximum history depth (steps of one episode walk).
  """

  visits: tuple
  values: tuple
  episodes: jax.Array
  key: jax.Array
  depth: int = struct.field(pytree_node=False)

  def in_tree(self) -> tuple:
    """``([I0] bool, [I1] bool)``: information states in each player's search tree."""
    return tuple(jnp.sum(n, axis=-1) > 0 for n in self.visits)


@dataclasses.dataclass(frozen=True)
class UCTSolver:
  """Hyperparameters of UCT / Smooth UCT self-play; methods are pure functions.

  Attributes:
    name: ``"uct" | "smooth-uct"``.
    c: UCB1 exploration constant.
    gamma, eta, d: Smooth UCB mixing schedule (Eq. 2); unused by UCT.
    batch: episodes per step.
    dtype: float dtype of ``Q``.
  """

  name: str
  c: float
  gamma: float = 1.0
  eta: float = 1.0
  d: float = 0.0
  batch: int = 1
  dtype: str = "float32"

  @property
  def smooth(self) -> bool:
    return self.name == "smooth-uct"

  @property
  def episodes_per_step(self) -> int:
    return self.batch

  def init(self, tree: GameTree, key: jax.Array) -> UCTState:
    """Empty trees (no visits); ``key`` drives every later step."""
    dtype = resolve_dtype(self.dtype)
    key = check_key(key)
    depth = np.asarray(tree.depth)
    if depth.size == 0 or np.any(np.diff(depth) < 0):
      raise ValueError("tree histories must be in breadth-first order (non-decreasing depth)")
    A = tree.num_actions
    visits = tuple(jnp.zeros((n, A), jnp.int32) for n in tree.num_infostates)
    values = tuple(jnp.zeros((n, A), dtype) for n in tree.num_infostates)
    return UCTState(visits=visits, values=values, episodes=jnp.zeros((), jnp.int32),
                    key=key, depth=int(depth.max()))

  def step(self, tree: GameTree, state: UCTState) -> UCTState:
    """One step: ``batch`` episodes."""
    return self.run(tree, state, 1)

  def run(self, tree: GameTree, state: UCTState, num_steps) -> UCTState:
    """``num_steps`` steps (``num_steps * batch`` episodes) in one jitted call.

    ``num_steps`` may be a traced integer (e.g. inside an agent's ``act``).
    """
    if isinstance(num_steps, (bool, float)) or (
        isinstance(num_steps, (int, np.integer)) and num_steps < 0):
      raise ValueError(f"num_steps must be a non-negative integer, got {num_steps!r}")
    return _run(self, tree, state, jnp.asarray(num_steps, jnp.int32))

  def average_policy(self, tree: GameTree, state: UCTState):
    """Normalised visit counts ``N(u, a) / N(u)``, uniform outside the tree (``[I_p, A]`` each)."""
    dtype = state.values[0].dtype
    return tuple(sequence_form.normalize(n.astype(dtype), jnp.asarray(pt.legal))
                 for n, pt in zip(state.visits, tree.players))

  def greedy_policy(self, tree: GameTree, state: UCTState):
    """Deterministic ``argmax_a Q(u, a)`` over visited actions (Sec. 4.3's greedy profile)."""
    out = []
    for n, q, pt in zip(state.visits, state.values, tree.players):
      legal = jnp.asarray(pt.legal)
      score = jnp.where(legal & (n > 0), q, -jnp.inf)
      score = jnp.where(jnp.any(n > 0, axis=-1, keepdims=True), score,
                        jnp.where(legal, 0.0, -jnp.inf))
      out.append(jax.nn.one_hot(jnp.argmax(score, axis=-1), tree.num_actions, dtype=q.dtype))
    return tuple(out)

  def mixing(self, visits_total):
    """``eta_k`` of Eq. 2 at total node visits ``N(u)`` (``1`` for UCT)."""
    if not self.smooth:
      return jnp.ones_like(jnp.asarray(visits_total, jnp.float32))
    n = jnp.asarray(visits_total, jnp.float32)
    return jnp.maximum(self.gamma, self.eta / (1.0 + self.d * jnp.sqrt(n)))



def _pick(weights, u):
  """Index drawn from non-negative ``weights [B, K]`` with uniforms ``u [B]``."""
  cdf = jnp.cumsum(weights, axis=-1)
  idx = jnp.sum(cdf <= (u * cdf[:, -1])[:, None], axis=-1)
  return jnp.minimum(idx, weights.shape[-1] - 1).astype(jnp.int32)


def _episodes(cfg: UCTSolver, tree: GameTree, visits, values, uni):
  """``B`` episodes walked together: ``[D, B]`` records of updated nodes, and returns ``[B]``.

  ``uni [D, B, 3]``: per step, uniforms for the chance / rollout / UCB
  tie-break draw, the Smooth UCB coin and the average-strategy draw.
  """
  D, B, _ = uni.shape
  A = tree.num_actions
  C = tree.children.shape[1]
  dtype = values[0].dtype
  legal_tab = [jnp.asarray(tree.players[q].legal) for q in (0, 1)]

  def rows(tab, pl, info):
    i0 = jnp.clip(info, 0, max(tab[0].shape[0] - 1, 0))
    i1 = jnp.clip(info, 0, max(tab[1].shape[0] - 1, 0))
    return jnp.where((pl == 0)[:, None], tab[0][i0], tab[1][i1])

  def body(t, carry):
    hs, out, rec_pl, rec_info, rec_act = carry
    pl = tree.player[hs]
    info = tree.infostate[hs]
    dec = pl >= 0
    legal = rows(legal_tab, pl, info) & dec[:, None]
    n = rows(visits, pl, info)
    q = rows(values, pl, info)
    n_u = jnp.sum(n, axis=-1)
    mine_out = jnp.where(pl == 0, out[:, 0], out[:, 1])
    select = dec & ~mine_out & (n_u > 0)
    expand = dec & ~mine_out & (n_u == 0)
    # UCB1; untried legal actions score +inf; ties uniformly at random.
    nf = n.astype(dtype)
    bonus = cfg.c * jnp.sqrt(jnp.log(jnp.maximum(n_u, 1).astype(dtype))[:, None]
                             / jnp.maximum(nf, 1.0))
    score = jnp.where(n > 0, q + bonus, jnp.inf)
    score = jnp.where(legal, score, -jnp.inf)
    best = legal & (score == jnp.max(score, axis=-1, keepdims=True))
    u = uni[t]
    a_ucb = _pick(best.astype(dtype), u[:, 0])
    a_roll = _pick(legal.astype(dtype), u[:, 0])
    if cfg.smooth:
      eta_k = cfg.mixing(n_u).astype(dtype)
      a_avg = _pick(jnp.where(legal, nf, 0.0), u[:, 2])
      a_sel = jnp.where(u[:, 1] < eta_k, a_ucb, a_avg)
    else:
      a_sel = a_ucb
    a_dec = jnp.where(select, a_sel, a_roll)
    a_ch = _pick(tree.chance_probs[hs], u[:, 0])
    a = jnp.where(pl == CHANCE, a_ch, a_dec)
    live = dec | (pl == CHANCE)
    upd = select | expand
    rec_pl = rec_pl.at[t].set(jnp.where(upd, pl, -1))
    rec_info = rec_info.at[t].set(jnp.where(upd, info, 0))
    rec_act = rec_act.at[t].set(jnp.minimum(a, A - 1))
    out = out | (expand[:, None] & (jnp.arange(2) == pl[:, None]))
    hs = jnp.where(live, tree.children[hs, jnp.minimum(a, C - 1)], hs)
    return hs, out, rec_pl, rec_info, rec_act

  init = (jnp.zeros(B, jnp.int32), jnp.zeros((B, 2), bool), jnp.full((D, B), -1, jnp.int32),
          jnp.zeros((D, B), jnp.int32), jnp.zeros((D, B), jnp.int32))
  hs, _, rec_pl, rec_info, rec_act = lax.fori_loop(0, D, body, init)
  ret = tree.terminal_payoff[jnp.maximum(tree.history_terminal[hs], 0)]  # player 0's return
  return rec_pl, rec_info, rec_act, ret


def _update(visits, values, rec_pl, rec_info, rec_act, ret):
  """UPDATE of Algorithm 1 for every recorded node, summed over the batch.

  Sparse: only the recorded ``(u, a)`` entries are read and written (scatter
  adds), so a step costs O(batch x depth), not O(I x A). Records of the same
  entry in one batch add ``(r - Q) / N_new`` each, i.e. ``Q`` moves to the
  mean over all its returns so far.
  """
  visits, values = list(visits), list(values)
  i = rec_info.reshape(-1)
  a = rec_act.reshape(-1)
  for p in (0, 1):
    mine = (rec_pl == p).reshape(-1)
    r = jnp.broadcast_to(ret if p == 0 else -ret, rec_pl.shape).reshape(-1)
    n_new = visits[p].at[i, a].add(mine.astype(jnp.int32))
    q = values[p]
    step = (r - q[i, a]) / jnp.maximum(n_new[i, a], 1).astype(q.dtype)
    values[p] = q.at[i, a].add(jnp.where(mine, step, 0.0).astype(q.dtype))
    visits[p] = n_new
  return tuple(visits), tuple(values)


@functools.partial(jax.jit, static_argnums=(0,))
def _run(cfg: UCTSolver, tree: GameTree, state: UCTState, num_steps) -> UCTState:
  dtype = state.values[0].dtype
  tree = jax.tree_util.tree_map(
      lambda x: x.astype(dtype) if jnp.issubdtype(jnp.asarray(x).dtype, jnp.floating) else x, tree)

  def body(_, s):
    key, sub = jax.random.split(s.key)
    uni = jax.random.uniform(sub, (s.depth, cfg.batch, 3), dtype)
    rec = _episodes(cfg, tree, s.visits, s.values, uni)
    visits, values = _update(s.visits, s.values, *rec)
    return s.replace(visits=visits, values=values, episodes=s.episodes + cfg.batch, key=key)

  return lax.fori_loop(0, num_steps, body, state)


def _check_batch(batch) -> int:
  if isinstance(batch, bool) or not isinstance(batch, (int, np.integer)) or batch < 1:
    raise ValueError(f"batch must be a positive integer, got {batch!r}")
  return int(batch)


def _check_real(name, x, lo, hi, lo_open=True, hi_open=False):
  if isinstance(x, bool) or not isinstance(x, (int, float, np.integer, np.floating)):
    raise ValueError(f"{name} must be a real number, got {x!r}")
  x = float(x)
  ok = math.isfinite(x) and (x > lo if lo_open else x >= lo) and (x < hi if hi_open else x <= hi)
  if not ok:
    l, r = ("(" if lo_open else "["), (")" if hi_open else "]")
    raise ValueError(f"{name} must be in {l}{lo}, {hi}{r}, got {x!r}")
  return x


def uct(c: float = 2.0, *, batch: int = 1, dtype="float32") -> UCTSolver:
  """Extensive-form UCT self-play (Sec. 3.1); ``c=2`` for Kuhn, ``c=20`` for Leduc (Sec. 4)."""
  return UCTSolver("uct", c=_check_real("c", c, 0.0, math.inf, lo_open=False, hi_open=True),
                   batch=_check_batch(batch), dtype=jnp.dtype(resolve_dtype(dtype)).name)


def smooth_uct(c: float = 1.75, gamma: float = 0.1, eta: float = 0.9, d: float = 0.001, *,
               batch: int = 1, dtype="float32") -> UCTSolver:
  """Extensive-form Smooth UCT self-play (Sec. 3.2, Algorithm 2).

  Defaults are the Kuhn constants (Sec. 4.1); Leduc uses ``c=18, d=0.002``
  (Sec. 4.2; see :func:`for_game`).
  """
  return UCTSolver("smooth-uct",
                   c=_check_real("c", c, 0.0, math.inf, lo_open=False, hi_open=True),
                   gamma=_check_real("gamma", gamma, 0.0, 1.0),
                   eta=_check_real("eta", eta, 0.0, 1.0),
                   d=_check_real("d", d, 0.0, math.inf, lo_open=False, hi_open=True),
                   batch=_check_batch(batch), dtype=jnp.dtype(resolve_dtype(dtype)).name)


def exploitability_curve(solver, tree: GameTree, checkpoints, key: jax.Array, seeds: int = 1):
  """``[len(checkpoints), seeds]`` exact exploitabilities of ``seeds`` vmapped runs.

  Runs ``seeds`` independent self-play runs (keys ``split(key, seeds)``) and
  evaluates each run's average strategy after ``checkpoints[k]`` episodes
  (increasing multiples of ``solver.batch``); one jitted call per
  checkpoint. Any solver with ``init(tree, key)``, ``run`` and
  ``average_policy`` (also :mod:`jaxgt.solvers.mccfr`) works.
  """
  @jax.jit
  def advance(states, n):
    def one(s):
      s = solver.run(tree, s, n)
      return s, sequence_form.exploitability(tree, solver.average_policy(tree, s))
    return jax.vmap(one)(states)

  states = jax.vmap(lambda k: solver.init(tree, k))(jax.random.split(key, seeds))
  done, out = 0, []
  for c in checkpoints:
    states, e = advance(states, (c - done) // solver.batch)
    done = c
    out.append(np.asarray(e))
  return np.asarray(out)


def for_game(name: str, game: str, **kwargs) -> UCTSolver:
  """``uct`` or ``smooth-uct`` with the paper's constants for ``kuhn_poker`` / ``leduc_poker``."""
  if name not in PAPER_CONSTANTS:
    raise ValueError(f"unknown solver {name!r}; choose one of {', '.join(PAPER_CONSTANTS)}")
  if game not in PAPER_CONSTANTS[name]:
    raise ValueError(f"the paper gives no constants for {game!r}; choose one of "
                     f"{', '.join(PAPER_CONSTANTS[name])} or pass them explicitly")
  factory = uct if name == "uct" else smooth_uct
  return factory(**{**PAPER_CONSTANTS[name][game], **kwargs})
