"""Online Outcome Sampling (Lisy, Lanctot, Bowling 2015, Sec. 4, Algorithm 1).

OOS is outcome-sampling MCCFR run from the root of the game with two
changes: **incremental tree building** (Sec. 4: an information state enters
memory the first time a trajectory reaches it, after which a uniform playout
finishes the trajectory; nothing below it is updated) and **in-match search
targeting** (Sec. 4.1-4.2): with probability ``delta`` an iteration samples
only terminals of the targeted part ``Z_sub`` of the game: those through the
searcher's information state ``I(m)`` (IST) or through its public state (PST).

``solver = OOS(delta=0.9, targeting="ist")``; ``state = solver.init(tree)``;
``state = solver.run(tree, state, num_steps, key, history=history)`` runs
``num_steps`` iterations (each one ``batch`` trajectories per update player,
player 0 then player 1, walked by :func:`jaxgt.solvers.walk.walk` with
targeting) in one jitted ``lax.fori_loop`` (the sampled-solver driver of
:mod:`jaxgt.solvers.sampled`: step ``t`` uses ``step_key(key, t)``); the tables
in ``state`` carry over between the moves of a match. ``history=None``
searches with an empty match history (plain MCCFR with incremental tree
building).

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
weighting factor ``w_T`` (Sec. 4.3), constant within one search, which makes a
targeted sample weigh at ``I(m)`` what an untargeted one did: the paper's
example, ``w_T = s_m / s_0``, the probability of reaching ``I(m)`` with the
current targeting over that without, under the mean profile ``pi_bar`` and
chance. Untargeted it is ``pi_bar(I)``, targeted ``(1 - delta) pi_bar(I) +
delta pi_bar(I) / pi_bar(sub)`` (``pi_bar(sub)``: reach of the targeted set,
``I(m)`` for IST, the histories of its public state for PST), so ``w_T = (1 -
delta) + delta / pi_bar(sub) >= 1``; the iteration starts with ``s_1 = s_2 =
1 / w_T`` as in Algorithm 1's initial call and the authors' implementation.
(The paper's definition in words, reach without targeting over reach with
it, and its displayed formula are the reciprocal: they would shrink the
targeted updates, against its own example; the displayed formula also has
``pi_bar(I) / pi_bar(Z_sub)`` in place of ``1 / pi_bar(sub)``, which would
give ``w_T = 1`` under IST. We follow the text's example.)

**Playout** (Sec. 4, Algorithm 1 line 13): at the first information state
outside memory the action is drawn uniformly, and so is every decision below
it; chance below it draws from its own probabilities. Neither is restricted
to ``Z_sub``: both scenarios sample the tail alike, so the leaf is drawn with
``l = (delta s_1 + (1 - delta) s_2) x`` the playout's probability, as in
``Playout(ha, (delta s_1 + (1 - delta) s_2) / |A(I)|)``.

Strategies are explorative regret matching ``gamma / |A| + (1 - gamma)
RM`` (Sec. 4.3, ``gamma = 0.01``).

Memory is a fixed-capacity table over the compiled information states
(``in_tree`` mask, ``size`` counter, at most ``capacity`` entries,
:func:`~jaxgt.solvers.sampled.grow_tree`); the targeted sets and their
ancestor chains come from :mod:`jaxgt.core.targets` (``O(K depth)`` work and
one ``[H]`` mask per search, no sweeps over the tree).

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
from flax import struct
from jax import lax

from jaxgt.core import rng, sequence_form
from jaxgt.core.checks import check_choice, check_real
from jaxgt.core.game_tree import GameTree
from jaxgt.core.dtypes import cast_tree
from jaxgt.core.sampling import mix_uniform
from jaxgt.core.tables import infostate_rows
from jaxgt.core.targets import (ancestor_chains, ancestor_mask, chain_reach, member_row,
                                search_position, target_members)
from jaxgt.solvers.sampled import SampledSolver, check_memory_config, grow_tree, memory_step
from jaxgt.solvers.walk import Draw, walk

TARGETING = ("ist", "pst")


@struct.dataclass
class OOSState:
  """OOS tables over the compiled information states (fixed capacity)."""

  regrets: tuple  # ([I0, A], [I1, A]) cumulative regrets (zero outside memory)
  cum_policy: tuple  # ([I0, A], [I1, A]) average-strategy accumulators s_I
  in_tree: tuple  # ([I0] bool, [I1] bool) information states in memory
  size: jax.Array  # [] int32 number of information states in memory
  iteration: jax.Array  # [] int32 iterations (steps) run so far (all searches)


def table_prob(tables, legal, pl, info, a):
  """Probability of action ``a`` under the normalised rows of ``tables`` (uniform where zero)."""
  row = sequence_form.normalize(infostate_rows(tables, pl, info), infostate_rows(legal, pl, info))
  return jnp.take_along_axis(row, a[..., None], axis=-1)[..., 0]


def explorative_regret_matching(regrets, legal, gamma):
  """``gamma / |A| + (1 - gamma) RM(regrets)`` over legal actions (Sec. 4.3); zero off ``legal``."""
  return mix_uniform(sequence_form.regret_matching(regrets, legal), legal, gamma)


@dataclasses.dataclass(frozen=True)
class OOS(SampledSolver):
  """Hyperparameters of Online Outcome Sampling (Sec. 4); methods are pure (:mod:`.base`)."""

  delta: float = 0.9  # probability that an iteration samples only Z_sub (targeting)
  # "ist" (information-set targeting, Sec. 4.1) or "pst" (public-subgame targeting, Sec. 4.2)
  targeting: str = "ist"
  epsilon: float = 0.6  # exploration of the update player's sampling policy Phi
  gamma: float = 0.01  # explorative regret matching gamma / |A| + (1 - gamma) RM
  capacity: int | None = None  # most information states (both players) in memory; None: all of them
  batch: int = 1  # trajectories per update player per iteration (one scatter-add)
  dtype: str = "float32"  # float dtype of the tables

  name = "oos"

  @property
  def samples_per_step(self) -> int:
    return 2 * self.batch

  def __post_init__(self):
    check_real("delta", self.delta, 0, 1)
    check_real("epsilon", self.epsilon, 0, 1, lo_open=True)
    check_real("gamma", self.gamma, 0, 1)
    check_choice("targeting", self.targeting, TARGETING)
    check_memory_config(self)

  def init(self, tree: GameTree, *, prefill: bool = False, weights=None) -> OOSState:
    """Empty memory (Sec. 4: the root information state enters on the first iteration).

    ``prefill=True`` puts every information state in memory (for comparing
    with offline MCCFR); it needs ``capacity`` to cover the game. Root
    beliefs (``weights``) are not supported.
    """
    dtype = self.init_dtype(tree, weights)
    n = tree.num_infostates
    if prefill and self.capacity is not None and self.capacity < sum(n):
      raise ValueError(f"prefill needs capacity >= {sum(n)} information states, "
                       f"got {self.capacity}")
    zeros = tuple(jnp.zeros((k, tree.num_actions), dtype) for k in n)
    return OOSState(regrets=zeros, cum_policy=zeros,
                    in_tree=tuple(jnp.full(k, prefill, bool) for k in n),
                    size=jnp.asarray(sum(n) if prefill else 0, jnp.int32),
                    iteration=jnp.zeros((), jnp.int32))

  def position(self, tree: GameTree, *, history=None, members=None) -> tuple:
    """``run``'s keywords: ``history``, ``None`` (empty match history, no targeting) or a
    history index (may be traced) where player 0 or 1 acts; ``members``, the
    :func:`~jaxgt.core.targets.target_members` table of ``tree`` (computed when ``None``)."""
    return search_position(tree, self.targeting, history, members)

  def prepare(self, tree: GameTree, state: OOSState, history, members):
    """The targeted set, its ancestors' children and ``w_T`` of a search (:func:`_targets`)."""
    member_set, anc, w_t = _targets(self, tree, state, members, history)
    return (member_set, ancestor_children(tree, anc), history >= 0), w_t

  def sample_step(self, tree: GameTree, state: OOSState, context, key) -> OOSState:
    """One iteration: ``batch`` trajectories for player 0, then for player 1."""
    target, w_t = context
    for i, k in enumerate(rng.split(key)):
      state = _half_step(self, tree, state, i, target, w_t, k)
    return state

  def targets(self, tree: GameTree, state: OOSState, history):
    """``(on_target [H] bool, w_T [])`` of match position ``history`` (``-1``: none).

    ``on_target`` marks the histories of ``Z_sub``'s trajectories: the
    targeted set, its ancestors and its descendants.
    """
    tree = cast_tree(tree, state.regrets[0].dtype)
    history = jnp.asarray(history, jnp.int32)
    members, anc, w_t = _targets(self, tree, state, jnp.asarray(
        target_members(tree, self.targeting)), history)
    par = jnp.maximum(tree.parent, 0)
    below = lax.fori_loop(0, tree.max_depth, lambda _, m: m | (m[par] & (tree.parent >= 0)),
                          members)
    return anc | below | (history < 0), w_t


def _targets(cfg: OOS, tree: GameTree, state: OOSState, members, history):
  """Masks ``[H]`` of the targeted set and of it with its ancestors, and ``w_T >= 1`` (Sec. 4.3)."""
  row = member_row(tree, cfg.targeting, members, history)
  chain = ancestor_chains(tree, tree.max_depth, row)
  legal = tuple(pt.legal for pt in tree.players)
  reach = chain_reach(tree, chain, functools.partial(table_prob, state.cum_policy, legal))
  mass = jnp.sum(jnp.where(row >= 0, reach, 0.0))
  w_t = (1.0 - cfg.delta) + cfg.delta / jnp.maximum(mass, jnp.finfo(reach.dtype).tiny)
  w_t = jnp.where(history >= 0, w_t, 1.0).astype(reach.dtype)
  return ancestor_mask(tree, row), ancestor_mask(tree, chain), w_t


def ancestor_children(tree: GameTree, anc):
  """``[H, C] bool``: the children of each history that are in ``anc [H]`` (computed once per
  search, so that a walk step reads one row instead of gathering ``anc`` at its children)."""
  return (tree.children >= 0) & anc[jnp.maximum(tree.children, 0)]


def oos_node_policy(cfg: OOS, tree: GameTree, state: OOSState, i: int, target):
  """The OOS node policy for update player ``i`` (a :func:`~jaxgt.solvers.walk.walk` callback).

  Carry ``(head [B], below [B])``: the trajectory is still inside memory /
  has passed the targeted set. At an in-memory state the target is
  explorative regret matching ``sigma`` and the sampling policy ``Phi`` its
  ``epsilon``-mix at ``i``'s states; at the first state outside memory and
  in the playout both are uniform. ``target = (members [H], anc_child [H, C],
  has [])`` (:func:`ancestor_children`): inside memory a child is in ``Z_sub``
  when it is an ancestor of (or in) the targeted set or the trajectory has
  passed it; from the first state outside memory on, every child is (the
  playout is not targeted, Sec. 4).
  Records ``(sigma [B, A], legal [B, A], tree_node [B], new_node [B])``.
  """
  members, anc_child, has = target

  def node_policy(t, node, carry):
    del t
    head, below = carry
    below = below | members[node.history]
    rm = explorative_regret_matching(infostate_rows(state.regrets, node.player, node.infostate),
                                     node.legal, cfg.gamma)
    sig, tree_node, new_node, inside = memory_step(state.in_tree, node, head, rm)
    phi = jnp.where((tree_node & (node.player == i))[:, None],
                    mix_uniform(sig, node.legal, cfg.epsilon), sig)
    free = below | ~has | ~head | new_node  # past Z_sub's entry, no target, or the playout
    on = anc_child[node.history] | ((tree.children[node.history] >= 0) & free[:, None])
    draw = Draw(sample=phi, target=sig, record=(sig, node.legal, tree_node, new_node),
                on_target=on)
    return draw, (inside, below)

  return node_policy


def _exclusive_cumprod(x):
  return jnp.concatenate([jnp.ones_like(x[:1]), jnp.cumprod(x, axis=0)[:-1]])


def _half_step(cfg: OOS, tree: GameTree, state: OOSState, i: int, target, w_t, key):
  """``batch`` trajectories for update player ``i``, one scatter-add each table."""
  A = tree.num_actions
  dtype = state.regrets[0].dtype
  B = cfg.batch
  uni = rng.uniform(key, (tree.max_depth, B), dtype)
  targeted = rng.uniform(rng.fold_in(key, 1), (B,), dtype) < cfg.delta
  traj, _ = walk(tree, oos_node_policy(cfg, tree, state, i, target), uni,
                 carry=(jnp.ones(B, bool), jnp.zeros(B, bool)), targeted=targeted)
  sig, legal, tree_node, new_node = traj.record
  pol, f1, f2 = traj.target_prob, traj.targeted_prob, traj.sample_prob
  u = traj.payoff(tree) * (1.0 if i == 0 else -1.0)  # [B]
  plt = traj.player  # [D, B]
  inv_w = 1.0 / w_t  # Algorithm 1's initial s_1 = s_2 = 1 / w_T
  s_pre = inv_w * (cfg.delta * _exclusive_cumprod(f1) + (1.0 - cfg.delta) * _exclusive_cumprod(f2))
  l = inv_w * (cfg.delta * jnp.prod(f1, axis=0) + (1.0 - cfg.delta) * jnp.prod(f2, axis=0))
  pi_o = _exclusive_cumprod(jnp.where(plt != i, pol, 1.0))  # chance and opponent reach
  x = jnp.cumprod(pol[::-1], axis=0)[::-1]  # tail reach x(h) of each depth
  x_next = jnp.concatenate([x[1:], jnp.ones_like(x[:1])])
  info = traj.infostate
  in_tree, size, admitted = grow_tree(state.in_tree, state.size, cfg.capacity, plt, info, new_node)
  upd = tree_node | admitted
  onehot = jax.nn.one_hot(traj.action, A, dtype=dtype)
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
