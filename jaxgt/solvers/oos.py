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
one ``[H]`` mask per search, no sweeps over the tree). The targeted set's masks
and ``w_T``, exact on a tree and estimated on a device game, are
:mod:`jaxgt.solvers.oos_targeting`'s.

**Device games** (games given by their rules, too large to compile):
``state = solver.init(Rules(game), capacity=N)`` keeps the statistics in rows
``[N, A]`` of each player's :class:`~jaxgt.core.info_table.InfoTable`
(``state.tables``; ``in_tree`` is ``None``): a state is in memory when it has a
row, and incremental tree building inserts each trajectory's first state
outside memory after the walk. A refused insert (full table, counted in
``tables[p].refused``) leaves the state outside memory: played by the playout,
never updated. ``solver.run(Rules(game), state, n, key, path=path)`` searches
from the match position ``path``
(:func:`~jaxgt.solvers.consistent.search_path`; ``None``: no targeting).
Inside memory the targeted scenario keeps to the children consistent with
the searcher's keys (IST) or the public keys (PST) along the path
(:func:`~jaxgt.solvers.consistent.consistent_children`; the walk starts at the
root, so step ``t`` is the depth). Where card removal leaves no consistent
child the walk goes on unrestricted and records that probability as the
targeted one, so the mixture probability ``l`` stays exact. ``pi_bar(sub)``
cannot be enumerated there: each run estimates it once from
``reach_samples`` prefixes drawn through consistent children,
``mean(pi_bar(h) / q(h))`` (:func:`~jaxgt.solvers.oos_targeting.target_reach_samples`, unbiased for
``pi_bar(sub)``), so ``w_T`` is a ratio estimate; its error scales every
update of a search alike. Without a position, and from any position whose
consistent children never dead-end, a device run draws the tree run's
samples from the same key (checked on Kuhn and Leduc row by row).

With ``delta = 0`` (or ``history=None``) OOS is outcome-sampling MCCFR with
incremental tree building; with ``gamma = 0`` and ``init(..., prefill=True)``
(every information state in memory) it draws the same samples from the same
key as :func:`jaxgt.solvers.mccfr.outcome_sampling` and computes the same
regrets and averages.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
from jax import lax

from jaxgt import struct
from jaxgt.core import rng, sequence_form
from jaxgt.core.checks import check_choice, check_positive_int, check_real
from jaxgt.core.game_tree import GameTree
from jaxgt.core.dtypes import cast_tree
from jaxgt.core.sampling import mix_uniform
from jaxgt.core.tables import infostate_rows
from jaxgt.core.targets import search_position, target_members
from jaxgt.games.device import children_mask
from jaxgt.solvers.base import check_num_steps, require_key
from jaxgt.solvers.consistent import (SearchPath, check_search_path, check_targeting,
                                      consistent_children)
from jaxgt.solvers.oos_targeting import (ancestor_children, estimate_weighting_factor, reach_key,
                                         tree_targets)
from jaxgt.solvers.sampled import SampledSolver, check_memory_config, grow_tree, memory_step
from jaxgt.solvers.sources import Rules, insert_rows, memory_estimate, source_of
from jaxgt.solvers.walk import Draw, walk

TARGETING = ("ist", "pst")


@struct.dataclass
class OOSState:
  """OOS tables over the compiled information states, or over the rows of a device game's
  information-state tables (``I_p = N``, the capacity of each player's table)."""

  regrets: tuple  # ([I0, A], [I1, A]) cumulative regrets (zero outside memory)
  cum_policy: tuple  # ([I0, A], [I1, A]) average-strategy accumulators s_I
  # ([I0] bool, [I1] bool) information states in memory; None on a device game (a state is in
  # memory when it has a row in its player's table)
  in_tree: tuple
  size: jax.Array  # [] int32 number of information states in memory
  iteration: jax.Array  # [] int32 iterations (steps) run so far (all searches)
  tables: tuple = None  # (InfoTable, InfoTable) on a device game; None on a compiled tree


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
  # device games: prefixes drawn per run to estimate the targeted set's mean-profile reach (w_T)
  reach_samples: int = 64

  name = "oos"

  @property
  def samples_per_step(self) -> int:
    return 2 * self.batch

  def __post_init__(self):
    check_real("delta", self.delta, 0, 1)
    check_real("epsilon", self.epsilon, 0, 1, lo_open=True)
    check_real("gamma", self.gamma, 0, 1)
    check_choice("targeting", self.targeting, TARGETING)
    check_positive_int("reach_samples", self.reach_samples)
    check_memory_config(self)

  def init(self, tree, *, prefill: bool = False, weights=None, capacity=None) -> OOSState:
    """Empty memory (Sec. 4: the root information state enters on the first iteration).

    On a compiled tree, ``prefill=True`` puts every information state in
    memory (for comparing with offline MCCFR); it needs ``capacity`` to cover
    the game. On a device game (``tree`` a :class:`~jaxgt.solvers.sources.Rules`)
    ``capacity`` (required) is the rows of each player's information-state
    table; any positive capacity holds a trajectory's update, since an
    iteration adds at most one state per trajectory (:meth:`memory_bytes`
    gives the tables' size). Root beliefs (``weights``) are not supported. Public-subgame
    targeting of a device game without public actions is refused
    (:func:`~jaxgt.solvers.consistent.check_targeting`).
    """
    if isinstance(tree, Rules):
      return self._init_rules(tree, prefill, weights, capacity)
    if capacity is not None:
      raise ValueError("init's capacity is the table rows of a device game; on a compiled tree "
                       "memory is bounded by OOS(capacity=...)")
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

  def _init_rules(self, rules: Rules, prefill, weights, capacity) -> OOSState:
    if weights is not None:
      raise ValueError(f"{self.name} does not support root beliefs (weights)")
    if prefill:
      raise ValueError("prefill needs a compiled tree (a device game's states are not "
                       "enumerated)")
    if self.capacity is not None:
      raise ValueError("on a device game memory is bounded by init(rules, capacity=rows per "
                       "player), not OOS(capacity=...)")
    if capacity is None:
      raise ValueError("a device game needs init(rules, capacity=N): the rows of each "
                       "player's information-state table")
    capacity = check_positive_int("capacity", capacity)
    check_targeting(rules.game, self.targeting)
    dtype = jnp.dtype(self.dtype)
    zeros = tuple(jnp.zeros((capacity, rules.num_actions), dtype) for _ in (0, 1))
    return OOSState(regrets=zeros, cum_policy=zeros, in_tree=None,
                    size=jnp.zeros((), jnp.int32), iteration=jnp.zeros((), jnp.int32),
                    tables=rules.empty_tables(capacity))

  def memory_bytes(self, rules: Rules, capacity: int) -> int:
    """Bytes of the state's tables on a device game: keys, slots, regrets and sums."""
    row = 2 * rules.num_actions * jnp.dtype(self.dtype).itemsize
    return memory_estimate(rules, check_positive_int("capacity", capacity), row)

  def run(self, tree, state, num_steps, key=None, **position) -> OOSState:
    """``num_steps`` iterations in one jitted call (:meth:`SampledSolver.run`).

    On a compiled tree the position is ``history=`` (see :meth:`position`);
    on a device game it is ``path=``, a :class:`~jaxgt.solvers.consistent.SearchPath`
    (:func:`~jaxgt.solvers.consistent.search_path` of the match so far) or
    ``None`` (no targeting), and ``w_T`` is estimated once per run from
    ``reach_samples`` prefixes (:func:`~jaxgt.solvers.oos_targeting.target_reach_samples`).
    """
    if not isinstance(tree, Rules):
      _check_tree_state(state)
      return super().run(tree, state, num_steps, key, **position)
    num_steps = check_num_steps(num_steps, traced_ok=True)
    key = require_key(self.name, key)
    _check_rules_state(tree, state)
    return self.jitted_run(self, tree, state, num_steps, key, *self.position(tree, **position),
                           key)

  def position(self, tree, *, history=None, members=None, path=None) -> tuple:
    """``run``'s keywords. On a compiled tree: ``history``, ``None`` (empty match history,
    no targeting) or a history index (may be traced) where player 0 or 1 acts; ``members``,
    the :func:`~jaxgt.core.targets.target_members` table of ``tree`` (computed when
    ``None``). On a device game: ``path``, the :class:`SearchPath` of the match position
    (``None``: no targeting)."""
    if isinstance(tree, Rules):
      if history is not None or members is not None:
        raise ValueError("on a device game the search position is path=SearchPath "
                         "(solvers.consistent.search_path), not history=/members=")
      check_targeting(tree.game, self.targeting)
      return (_search_path(tree.game, path),)
    if path is not None:
      raise ValueError("path= is a device game's search position; on a compiled tree pass "
                       "history=")
    return search_position(tree, self.targeting, history, members)

  def prepare(self, tree, state: OOSState, *position):
    """The targeted set, its ancestors' children and ``w_T`` of a search
    (:func:`~jaxgt.solvers.oos_targeting.tree_targets`); on a device game ``(path, w_T)``
    with ``w_T`` estimated (:func:`~jaxgt.solvers.oos_targeting.estimate_weighting_factor`)."""
    if isinstance(tree, Rules):
      path, key = position
      return path, estimate_weighting_factor(self, tree, state, path,
                                             reach_key(key, state.iteration))
    history, members = position
    member_set, anc, w_t = tree_targets(self, tree, state, members, history)
    return (member_set, ancestor_children(tree, anc), history >= 0), w_t

  def sample_step(self, tree, state: OOSState, context, key) -> OOSState:
    """One iteration: ``batch`` trajectories for player 0, then for player 1."""
    target, w_t = context
    keys = rng.split(key)
    if isinstance(tree, Rules):  # one traced half step (one walk to compile), players in turn
      return lax.fori_loop(0, 2, lambda i, s: _half_step_rules(
          self, tree, s, i, target, w_t, keys[i]), state)
    for i, k in enumerate(keys):
      state = _half_step(self, tree, state, i, target, w_t, k)
    return state

  def targets(self, tree: GameTree, state: OOSState, history):
    """``(on_target [H] bool, w_T [])`` of match position ``history`` (``-1``: none).

    ``on_target`` marks the histories of ``Z_sub``'s trajectories: the
    targeted set, its ancestors and its descendants.
    """
    tree = cast_tree(tree, state.regrets[0].dtype)
    history = jnp.asarray(history, jnp.int32)
    members, anc, w_t = tree_targets(self, tree, state, jnp.asarray(
        target_members(tree, self.targeting)), history)
    par = jnp.maximum(tree.parent, 0)
    below = lax.fori_loop(0, tree.max_depth, lambda _, m: m | (m[par] & (tree.parent >= 0)),
                          members)
    return anc | below | (history < 0), w_t


def oos_node_policy(cfg: OOS, tree: GameTree, state: OOSState, i: int, target):
  """The OOS node policy for update player ``i`` (a :func:`~jaxgt.solvers.walk.walk` callback).

  Carry ``(head [B], below [B])``: the trajectory is still inside memory /
  has passed the targeted set. At an in-memory state the target is
  explorative regret matching ``sigma`` and the sampling policy ``Phi`` its
  ``epsilon``-mix at ``i``'s states; at the first state outside memory and
  in the playout both are uniform. ``target = (members [H], anc_child [H, C],
  has [])`` (:func:`~jaxgt.solvers.oos_targeting.ancestor_children`): inside
  memory a child is in ``Z_sub`` when it is an ancestor of (or in) the
  targeted set or the trajectory has passed it; from the first state
  outside memory on, every child is (the playout is not targeted, Sec. 4).
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
  B = cfg.batch
  uni = rng.uniform(key, (tree.max_depth, B), state.regrets[0].dtype)
  targeted = rng.uniform(rng.fold_in(key, 1), (B,), uni.dtype) < cfg.delta
  traj, _ = walk(tree, oos_node_policy(cfg, tree, state, i, target), uni,
                 carry=(jnp.ones(B, bool), jnp.zeros(B, bool)), targeted=targeted)
  _, _, tree_node, new_node = traj.record
  info = traj.infostate
  in_tree, size, admitted = grow_tree(state.in_tree, state.size, cfg.capacity, traj.player, info,
                                      new_node)
  state = _update(cfg, state, i, traj, info, tree_node | admitted, w_t)
  return state.replace(in_tree=in_tree, size=size)


def _update(cfg: OOS, state: OOSState, i, traj, info, upd, w_t) -> OOSState:
  """Algorithm 1's updates (lines 20-29) of the trajectories ``traj`` for update player ``i``
  (an int, or traced) at the states ``upd [D, B]`` (in memory), rows ``info [D, B]``."""
  sig, legal, _, _ = traj.record
  A = sig.shape[-1]
  dtype = state.regrets[0].dtype
  pol, f1, f2 = traj.target_prob, traj.targeted_prob, traj.sample_prob
  u = traj.payoff() * (1.0 - 2.0 * i)  # [B] update player's utility
  plt = traj.player  # [D, B]
  inv_w = 1.0 / w_t  # Algorithm 1's initial s_1 = s_2 = 1 / w_T
  s_pre = inv_w * (cfg.delta * _exclusive_cumprod(f1) + (1.0 - cfg.delta) * _exclusive_cumprod(f2))
  l = inv_w * (cfg.delta * jnp.prod(f1, axis=0) + (1.0 - cfg.delta) * jnp.prod(f2, axis=0))
  pi_o = _exclusive_cumprod(jnp.where(plt != i, pol, 1.0))  # chance and opponent reach
  x = jnp.cumprod(pol[::-1], axis=0)[::-1]  # tail reach x(h) of each depth
  x_next = jnp.concatenate([x[1:], jnp.ones_like(x[:1])])
  onehot = jax.nn.one_hot(traj.action, A, dtype=dtype)
  W = (pi_o * u / l)[..., None]
  regret = W * (onehot * x_next[..., None] - x[..., None])
  mine = upd & (plt == i)
  # an update whose weights under- or overflowed (a reach estimate w_T of 0, sampling
  # probabilities below the float range on long games) is dropped, not written as inf/nan
  regret = jnp.where(mine[..., None] & legal & jnp.isfinite(regret), regret, 0.0).reshape(-1, A)
  theirs = upd & (plt == 1 - i)
  avg = sig * (pi_o / s_pre)[..., None]
  avg = jnp.where(theirs[..., None] & jnp.isfinite(avg), avg, 0.0).reshape(-1, A)
  regrets, cum = list(state.regrets), list(state.cum_policy)
  if isinstance(i, int):
    regrets[i] = regrets[i].at[jnp.where(mine, info, 0).reshape(-1)].add(regret)
    cum[1 - i] = cum[1 - i].at[jnp.where(theirs, info, 0).reshape(-1)].add(avg)
  else:  # traced: both players' tables, rows of the other player's dropped
    for p in (0, 1):
      n = regrets[p].shape[0]
      regrets[p] = regrets[p].at[jnp.where(mine & (i == p), info, n).reshape(-1)].add(
          regret, mode="drop")
      cum[p] = cum[p].at[jnp.where(theirs & (i != p), info, n).reshape(-1)].add(
          avg, mode="drop")
  return state.replace(regrets=tuple(regrets), cum_policy=tuple(cum))


# ---------------------------------------------------------------------------------------------
# Device games: memory is the players' information-state tables, targeting reads a SearchPath.

def _check_tree_state(state: OOSState) -> None:
  if state.tables is not None:
    raise ValueError("this OOS state holds a device game's tables; run it on the Rules it was "
                     "made for")


def _check_rules_state(rules: Rules, state: OOSState) -> None:
  """Raises unless ``state`` was made by ``init(rules, capacity=...)`` for this game."""
  if state.tables is None:
    raise ValueError("this OOS state is a compiled tree's; make one for the device game with "
                     "init(Rules(game), capacity=N)")
  width = state.tables[0].width
  if width != rules.key_width or state.regrets[0].shape[-1] != rules.num_actions:
    raise ValueError(f"this OOS state's tables hold {width}-word keys and "
                     f"{state.regrets[0].shape[-1]} actions; {rules.game.game_string()} has "
                     f"{rules.key_width}-word keys and {rules.num_actions} actions")


def _search_path(game, path) -> SearchPath:
  """``path`` checked (:func:`~jaxgt.solvers.consistent.check_search_path`); ``None``: no
  position, nothing targeted (what ``consistent.no_path`` gives, without replaying a match)."""
  if path is None:
    L = int(game.max_length)
    return SearchPath(keys=jnp.zeros((L + 1, int(game.info_key_width)), jnp.int32),
                      public=jnp.zeros((L + 1, int(game.public_key_width)), jnp.int32),
                      length=jnp.asarray(-1, jnp.int32), player=jnp.asarray(-1, jnp.int32))
  return check_search_path(game, path)


def rules_node_policy(cfg: OOS, rules: Rules, state: OOSState, i: int, path: SearchPath):
  """The OOS node policy on a device game (:func:`oos_node_policy`, memory = table rows).

  Carry ``head [B]``: the trajectory is still inside memory. A state is in
  memory when it has a row (``node.infostate >= 0``). Inside memory a child
  is on target when it agrees with ``path`` at the next depth
  (:func:`~jaxgt.solvers.consistent.consistent_children`; the walk starts at
  the root, so step ``t`` is the depth, and every child agrees past the
  position); from the first state outside memory on, every child is (the
  playout is not targeted, Sec. 4).
  """
  game = rules.game

  def node_policy(t, node, head):
    rm = explorative_regret_matching(infostate_rows(state.regrets, node.player, node.infostate),
                                     node.legal, cfg.gamma)
    tree_node = node.decision & head & (node.infostate >= 0)
    new_node = node.decision & head & (node.infostate < 0)
    uniform = mix_uniform(jnp.zeros_like(rm), node.legal, 1.0)
    sig = jnp.where(tree_node[:, None], rm, uniform)
    phi = jnp.where((tree_node & (node.player == i))[:, None],
                    mix_uniform(sig, node.legal, cfg.epsilon), sig)
    free = ~head | new_node
    exists = jax.vmap(lambda s: children_mask(game, s))(node.history)
    active = ~free & (t < path.length)
    on = lax.cond(jnp.any(active),
                  lambda: consistent_children(game, node.history, t, path, cfg.targeting),
                  lambda: exists)
    on = jnp.where(free[:, None], exists, on)
    draw = Draw(sample=phi, target=sig, record=(sig, node.legal, tree_node, new_node),
                on_target=on)
    return draw, head & ~new_node

  return node_policy


def _half_step_rules(cfg: OOS, rules: Rules, state: OOSState, i: int, path, w_t, key):
  """:func:`_half_step` on a device game: the first state outside memory of each trajectory is
  inserted into its player's table after the walk; a refused insert (full table) leaves it
  outside memory, played by the playout and not updated (counted in ``tables[p].refused``)."""
  B = cfg.batch
  dtype = state.regrets[0].dtype
  src = source_of(rules, state.tables, dtype)
  uni = rng.uniform(key, (src.max_depth, B), dtype)
  targeted = rng.uniform(rng.fold_in(key, 1), (B,), dtype) < cfg.delta
  traj, _ = walk(src, rules_node_policy(cfg, rules, state, i, path), uni,
                 carry=jnp.ones(B, bool), targeted=targeted)
  _, _, tree_node, new_node = traj.record
  tables, rows = insert_rows(state.tables, traj.player, traj.key, new_node)
  admitted = new_node & (rows >= 0)
  info = jnp.where(new_node, rows, traj.infostate)
  state = _update(cfg, state, i, traj, info, tree_node | admitted, w_t)
  return state.replace(tables=tables, size=tables[0].size + tables[1].size)
