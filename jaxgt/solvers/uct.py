"""UCT and Smooth UCT self-play search over information states (Heinrich & Silver 2015).

``solver = smooth_uct()`` returns a frozen :class:`UCTSolver` following the
solver protocol (:mod:`jaxgt.solvers.base`; its policy is the average
strategy), so :func:`jaxgt.solvers.base.exploitability_curve` evaluates it.

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
``N(u, a) / N(u)``; the walk (:func:`jaxgt.solvers.walk.walk`) draws the
action in one go from that mixture, ``eta_k UCB + (1 - eta_k) N(u, .) /
N(u)``. Plain UCT is ``eta_k = 1``. The average strategy of both
methods is the normalised visit counts (Sec. 3.2), uniform where unvisited.

Batches: one *step* runs ``batch`` episodes in parallel (``vmap``-style array
code); they all read the statistics at the start of the step and their
updates are summed (a new node added by several of them is added once). At
``batch=1`` a step is exactly one episode of Algorithm 1 (tested against a
sequential reference). With ``batch > 1`` the episodes of a step read
statistics that are stale within the step, so it is *not* Algorithm 1: a
faster approximation. The reproduction of the paper's figures
(``examples/smooth_uct_kuhn.py``) runs at ``batch=1``.

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

import jax
import jax.numpy as jnp
from flax import struct

from jaxgt.core import rng, sequence_form
from jaxgt.core.checks import check_positive_int, check_real
from jaxgt.core.game_tree import GameTree
from jaxgt.core.dtypes import dtype_name
from jaxgt.core.sampling import mix_uniform
from jaxgt.core.tables import infostate_rows
from jaxgt.solvers.sampled import SampledSolver
from jaxgt.solvers.walk import Draw, walk

PAPER_CONSTANTS = {
    "uct": {"kuhn_poker": {"c": 2.0}, "leduc_poker": {"c": 20.0}},
    "smooth-uct": {
        "kuhn_poker": {"c": 1.75, "gamma": 0.1, "eta": 0.9, "d": 0.001},
        "leduc_poker": {"c": 18.0, "gamma": 0.1, "eta": 0.9, "d": 0.002},
    },
}


@struct.dataclass
class UCTState:
  """State of one (Smooth) UCT self-play run."""

  # ([I0, A], [I1, A]) int32 action visit counts N(u, a); N(u) > 0 marks the information states in
  # each player's tree
  visits: tuple
  values: tuple  # ([I0, A], [I1, A]) mean return Q(u, a) of the player to act
  iteration: jax.Array  # [] int32 steps run (batch episodes each)

  def in_tree(self) -> tuple:
    """``([I0] bool, [I1] bool)``: information states in each player's search tree."""
    return tuple(jnp.sum(n, axis=-1) > 0 for n in self.visits)


@dataclasses.dataclass(frozen=True)
class UCTSolver(SampledSolver):
  """Hyperparameters of UCT / Smooth UCT self-play; methods are pure functions (:mod:`.base`)."""

  name: str  # "uct" | "smooth-uct"
  c: float  # UCB1 exploration constant
  gamma: float = 1.0  # gamma, eta, d: Smooth UCB mixing schedule (Eq. 2); unused by UCT
  eta: float = 1.0
  d: float = 0.0
  batch: int = 1  # episodes per step
  dtype: str = "float32"  # float dtype of Q

  @property
  def smooth(self) -> bool:
    return self.name == "smooth-uct"

  @property
  def samples_per_step(self) -> int:
    return self.batch

  def init(self, tree: GameTree, *, weights=None) -> UCTState:
    """Empty trees (no visits); root beliefs (``weights``) are not supported."""
    dtype = self.init_dtype(tree, weights)
    A = tree.num_actions
    visits = tuple(jnp.zeros((n, A), jnp.int32) for n in tree.num_infostates)
    values = tuple(jnp.zeros((n, A), dtype) for n in tree.num_infostates)
    return UCTState(visits=visits, values=values, iteration=jnp.zeros((), jnp.int32))

  def sample_step(self, tree: GameTree, state: UCTState, context, key) -> UCTState:
    """``batch`` episodes reading ``state``, their UPDATEs summed."""
    del context
    uni = rng.uniform(key, (tree.max_depth, self.batch), state.values[0].dtype)
    traj, _ = walk(tree, uct_node_policy(self, state.visits, state.values), uni,
                   carry=jnp.zeros((self.batch, 2), bool))
    upd = traj.record
    visits, values = _update(state.visits, state.values, jnp.where(upd, traj.player, -1),
                             jnp.where(upd, traj.infostate, 0),
                             jnp.minimum(traj.action, tree.num_actions - 1), traj.payoff(tree))
    return state.replace(visits=visits, values=values)

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

  def mixing(self, visits_total, dtype=jnp.float32):
    """``eta_k`` of Eq. 2 at total node visits ``N(u)`` (``1`` for UCT), in ``dtype``."""
    if not self.smooth:
      return jnp.ones_like(jnp.asarray(visits_total, dtype))
    n = jnp.asarray(visits_total, dtype)
    return jnp.maximum(self.gamma, self.eta / (1.0 + self.d * jnp.sqrt(n)))



def uct_node_policy(cfg: UCTSolver, visits, values):
  """The (Smooth) UCT node policy (a :func:`~jaxgt.solvers.walk.walk` callback; sampling = target).

  Carry ``out [B, 2]``: each player has left their tree. A player inside
  their tree at a visited node SELECTs (``eta_k`` UCB1 with uniform ties,
  ``1 - eta_k`` average strategy); at their first unvisited node (added to
  the tree) and afterwards they play the uniform rollout policy. Records
  ``updated [B]``: the node gets UPDATE (SELECT or the newly added node).
  """

  def node_policy(t, node, out):
    del t
    pl, info, legal = node.player, node.infostate, node.legal
    dtype = values[0].dtype
    n = infostate_rows(visits, pl, info)
    q = infostate_rows(values, pl, info)
    n_u = jnp.sum(n, axis=-1)
    mine_out = jnp.where(pl == 0, out[:, 0], out[:, 1])
    select = node.decision & ~mine_out & (n_u > 0)
    expand = node.decision & ~mine_out & (n_u == 0)
    # UCB1; untried legal actions score +inf; ties uniformly at random.
    nf = n.astype(dtype)
    bonus = cfg.c * jnp.sqrt(jnp.log(jnp.maximum(n_u, 1).astype(dtype))[:, None]
                             / jnp.maximum(nf, 1.0))
    score = jnp.where(n > 0, q + bonus, jnp.inf)
    score = jnp.where(legal, score, -jnp.inf)
    # The maximisers, up to rounding: XLA may evaluate `score` once for the max and again for
    # this comparison, in different fusions whose FMA contraction differs in the last bit, and
    # then no action would equal the max (UCB1's share of the draw lost); A ulps of |top| are a
    # tie (the untried actions' +inf compare exactly).
    top = jnp.max(score, axis=-1, keepdims=True)
    slack = score.shape[-1] * jnp.finfo(dtype).eps * jnp.abs(top)
    best = legal & jnp.where(jnp.isinf(top), score == top, score >= top - slack)
    sel = best / jnp.maximum(jnp.sum(best, axis=-1, keepdims=True), 1).astype(dtype)
    if cfg.smooth:
      eta_k = cfg.mixing(n_u, dtype)[:, None]
      sel = eta_k * sel + (1.0 - eta_k) * sequence_form.normalize(nf, legal)
    roll = mix_uniform(jnp.zeros_like(sel), legal, 1.0)
    sample = jnp.where(select[:, None], sel, roll)
    out = out | (expand[:, None] & (jnp.arange(2) == pl[:, None]))
    return Draw(sample=sample, target=sample, record=select | expand), out

  return node_policy


def _update(visits, values, rec_pl, rec_info, rec_act, ret):
  """UPDATE of Algorithm 1 for every recorded node ``[D, B]`` (``rec_pl = -1``: none), summed over the batch.

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


def uct(c: float = 2.0, *, batch: int = 1, dtype="float32") -> UCTSolver:
  """Extensive-form UCT self-play (Sec. 3.1); ``c=2`` for Kuhn, ``c=20`` for Leduc (Sec. 4)."""
  return UCTSolver("uct", c=check_real("c", c, 0, hi_open=True),
                   batch=check_positive_int("batch", batch), dtype=dtype_name(dtype))


def smooth_uct(c: float = 1.75, gamma: float = 0.1, eta: float = 0.9, d: float = 0.001, *,
               batch: int = 1, dtype="float32") -> UCTSolver:
  """Extensive-form Smooth UCT self-play (Sec. 3.2, Algorithm 2).

  Defaults are the Kuhn constants (Sec. 4.1); Leduc uses ``c=18, d=0.002``
  (Sec. 4.2; see :func:`for_game`).
  """
  return UCTSolver("smooth-uct",
                   c=check_real("c", c, 0, hi_open=True),
                   gamma=check_real("gamma", gamma, 0, 1, lo_open=True),
                   eta=check_real("eta", eta, 0, 1, lo_open=True),
                   d=check_real("d", d, 0, hi_open=True),
                   batch=check_positive_int("batch", batch), dtype=dtype_name(dtype))


def for_game(name: str, game: str, **kwargs) -> UCTSolver:
  """``uct`` or ``smooth-uct`` with the paper's constants for ``kuhn_poker`` / ``leduc_poker``."""
  if name not in PAPER_CONSTANTS:
    raise ValueError(f"unknown solver {name!r}; choose one of {', '.join(PAPER_CONSTANTS)}")
  if game not in PAPER_CONSTANTS[name]:
    raise ValueError(f"the paper gives no constants for {game!r}; choose one of "
                     f"{', '.join(PAPER_CONSTANTS[name])} or pass them explicitly")
  factory = uct if name == "uct" else smooth_uct
  return factory(**{**PAPER_CONSTANTS[name][game], **kwargs})
