"""The public tree of a compiled game and public belief states (Schmid et al. 2023, Sec. 3).

A *public belief state* is one range per player over its (augmented)
information states at a public state (:attr:`CompiledGame.aug`; ``K_p`` of
them for player ``p``). A *range* is the player's own reach normalised over
the public state's information states; the *counterfactual value* of ``I``
is ``sum_{h in I} pi_chance(h) pi_opp(h) u_p(h)``, so ``sum_I reach_p(I)
cfv_p(I)`` is ``p``'s value of the public state's histories.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from jaxgt.core.checks import PROB_ATOL, check_distribution, check_index, check_shape
from jaxgt.core.game_tree import NO_INDEX, CompiledGame, GameTree
from jaxgt.games.base import CHANCE, TERMINAL
from jaxgt.core import sequence_form


@dataclasses.dataclass(frozen=True, eq=False)
class PublicTree:
  """Public states of one compiled game and their augmented information states."""

  game: CompiledGame  # the :class:`CompiledGame`
  children: tuple  # per public state, a tuple of its child public states
  depth: np.ndarray  # [P] int32 depth in the public tree
  parent: np.ndarray  # [P] int32 parent public state (-1 at the root)
  histories: tuple  # per public state, int32 array of its histories
  aug: np.ndarray  # [2, H] int32 each player's augmented infostate of every history (-1: terminal)
  aug_keys: tuple  # per player, K_p information-state strings
  aug_public: tuple  # per player, [K_p] int32 public state of each one
  aug_seq: tuple  # per player, [K_p] int32 own sequence reaching it (into the realization plan)
  infostates: tuple  # per player, per public state, int32 augmented infostates (range support)
  chance_reach: np.ndarray  # [H] float64 product of chance probabilities
  terminal_public: np.ndarray  # [P] bool public states whose histories are all terminal

  @property
  def num_public_states(self) -> int:
    return len(self.histories)

  def public_id(self, public_state) -> int:
    """Index of ``public_state`` (an index or a key of ``game.public_keys``), validated."""
    P = self.num_public_states
    if isinstance(public_state, (int, np.integer)) and not isinstance(public_state, bool):
      return check_index("public state", public_state, P, f" for {self.game.name}")
    idx = self.game.public_index()
    if public_state not in idx:
      raise ValueError(f"{public_state!r} is not a public state of {self.game.name} "
                       "(is it from another game?)")
    return idx[public_state]

  def at_depth(self, d: int) -> np.ndarray:
    """Public states of depth ``d``."""
    return np.flatnonzero(self.depth == d).astype(np.int32)

  def check_range(self, public_state, player: int, r, *, atol: float = PROB_ATOL) -> np.ndarray:
    """Validates one range ``[K]`` at ``public_state``; returns it as float64."""
    ps = self.public_id(public_state)
    K = len(self.infostates[player][ps])
    r = np.asarray(r, np.float64)
    what = f"range of player {player} at public state {ps} (one entry per information state)"
    check_shape(what, r, (K,))
    if K == 0:  # a terminal public state: nothing to sum
      return r
    return check_distribution(what, r, K, atol=atol)


def build_public_tree(compiled: CompiledGame | PublicTree) -> PublicTree:
  """The :class:`PublicTree` of ``compiled`` (cached on it; a :class:`PublicTree` passes)."""
  if isinstance(compiled, PublicTree):
    return compiled
  return compiled.derived(_assemble_public_tree)


def _groups(ids: np.ndarray, n: int) -> tuple:
  """Per group ``0..n-1``, the ``int32`` positions holding it (in order)."""
  order = np.argsort(ids, kind="stable").astype(np.int32)
  bounds = np.searchsorted(ids[order], np.arange(n + 1))
  return tuple(order[bounds[i]:bounds[i + 1]] for i in range(n))


def _assemble_public_tree(compiled: CompiledGame) -> PublicTree:
  t = compiled.tree
  P = t.num_public_states
  hp = np.asarray(t.history_public)
  player = np.asarray(t.player)
  aug = np.asarray(compiled.aug)
  pub, seq, infos = [], [], []
  for p in (0, 1):
    K = len(compiled.aug_keys[p])
    m = aug[p] >= 0
    pb = np.zeros(K, np.int32)
    pb[aug[p][m]] = hp[m]
    sq = np.full(K, NO_INDEX, np.int32)
    sq[aug[p][m]] = t.last_seq[p][m]
    pub.append(pb)
    seq.append(sq)
    infos.append(_groups(pb, P))
  hists = _groups(hp, P)
  public_parent = np.asarray(t.public_parent)
  kids = _groups(public_parent, P)  # the root's parent -1 is in no group
  nonterminal = np.zeros(P, bool)
  nonterminal[hp[player != TERMINAL]] = True
  return PublicTree(game=compiled, children=tuple(tuple(int(c) for c in k) for k in kids),
                    depth=np.asarray(t.public_depth), parent=public_parent,
                    histories=hists, aug=aug, aug_keys=compiled.aug_keys,
                    aug_public=tuple(pub), aug_seq=tuple(seq), infostates=tuple(infos),
                    chance_reach=np.asarray(t.chance_reach), terminal_public=~nonterminal)


def edge_probabilities(tree: GameTree, policy) -> jax.Array:
  """``[H]`` probability of the edge into each history under ``policy`` (1 at the root)."""
  return (chance_edge_probabilities(tree) * player_edge_probabilities(tree, 0, policy[0])
          * player_edge_probabilities(tree, 1, policy[1]))


def chance_edge_probabilities(tree: GameTree) -> jax.Array:
  """``[H]`` chance probability of the outcome into each history (1 elsewhere)."""
  parent = jnp.asarray(tree.parent)
  par = jnp.maximum(parent, 0)
  act = jnp.maximum(jnp.asarray(tree.action), 0)
  chance = (parent >= 0) & (jnp.asarray(tree.player)[par] == CHANCE)
  return jnp.where(chance, jnp.asarray(tree.chance_probs)[par, act], 1.0)


def player_edge_probabilities(tree: GameTree, player, sigma: jax.Array) -> jax.Array:
  """``[H]`` probability of the action into each history when ``player``'s (possibly traced)
  moves follow ``sigma [I, A]`` (1 at the root and where another player or chance moved)."""
  if sigma.shape[0] == 0:
    return jnp.ones(tree.num_histories, sigma.dtype)
  parent = jnp.asarray(tree.parent)
  par = jnp.maximum(parent, 0)
  info = jnp.maximum(jnp.asarray(tree.infostate)[par], 0)
  act = jnp.clip(jnp.asarray(tree.action), 0, sigma.shape[1] - 1)
  mine = (parent >= 0) & (jnp.asarray(tree.player)[par] == player)
  return jnp.where(mine, sigma[info, act], 1.0)


def history_values(tree: GameTree, policy, payoff=None, *, host: GameTree | None = None) -> jax.Array:
  """``[H]`` player 0's expected utility below each history under ``policy``.

  ``payoff [T]`` replaces ``tree.terminal_payoff``; the depth layers are read
  from ``host`` (default ``tree``), so ``tree`` may be traced.
  """
  payoff = tree.terminal_payoff if payoff is None else payoff
  terminals = np.asarray((tree if host is None else host).terminal_history)
  leaf = jnp.zeros(tree.num_histories, payoff.dtype).at[terminals].set(payoff)
  return subtree_values(tree, leaf, edge_probabilities(tree, policy).astype(payoff.dtype),
                        host=host)


def subtree_values(tree: GameTree, leaf, edge, open_=None, *,
                   host: GameTree | None = None) -> jax.Array:
  """``[H]`` ``W(h) = leaf(h) + sum over the children c of h of edge(c) W(c)`` (the sum only
  where ``open_ [H]``, default everywhere), one depth level at a time from the deepest. The
  levels and parents are read from ``host`` (default ``tree``, which may then be traced)."""
  src = tree if host is None else host
  levels = src.depth_levels
  parent = src.parent if isinstance(src.parent, jax.core.Tracer) else np.asarray(src.parent)
  layers = [None] * len(levels)
  below = None
  for d in reversed(range(len(levels))):
    lo, hi = levels[d]
    v = leaf[lo:hi]
    if below is not None:
      v = v + (below if open_ is None else jnp.where(open_[lo:hi], below, 0.0))
    layers[d] = v
    if d > 0:
      plo = levels[d - 1][0]
      below = sequence_form.segment_sum(edge[lo:hi] * v, jnp.asarray(parent[lo:hi] - plo),
                                        lo - plo)
  return jnp.concatenate(layers)


def ranges(ptree: PublicTree, policy, *, normalize: bool = True):
  """Own reaches ``([K_0], [K_1])`` of every augmented information state, normalised per public
  state when ``normalize`` (uniform where the player never reaches it)."""
  tree = ptree.game.tree
  sequence_form.check_policy(tree, policy)
  out = []
  for p in (0, 1):
    x = sequence_form.realization(tree.players[p], policy[p])
    r = x[jnp.asarray(ptree.aug_seq[p])]
    if normalize:
      P = ptree.num_public_states
      ids = jnp.asarray(ptree.aug_public[p])
      tot = jax.ops.segment_sum(r, ids, P)[ids]
      cnt = jax.ops.segment_sum(jnp.ones_like(r), ids, P)[ids]
      r = sequence_form.safe_div(r, tot, 1.0 / cnt)
    out.append(r)
  return tuple(out)


def counterfactual_values(ptree: PublicTree, policy):
  """Counterfactual values ``([K_0], [K_1])`` of every augmented information state
  (Schmid et al. 2023, Sec. 3; chance and opponent reach included, each in its own player's
  utility)."""
  tree = ptree.game.tree
  sequence_form.check_policy(tree, policy)
  v = history_values(tree, policy)
  xs = [sequence_form.realization(tree.players[p], policy[p]) for p in (0, 1)]
  out = []
  last = np.asarray(tree.last_seq)
  for p in (0, 1):
    m = np.flatnonzero(ptree.aug[p] >= 0)
    o = 1 - p
    sign = 1.0 if p == 0 else -1.0
    contrib = sign * jnp.asarray(ptree.chance_reach[m], v.dtype) * xs[o][last[o, m]] * v[m]
    out.append(jax.ops.segment_sum(contrib, jnp.asarray(ptree.aug[p][m]), len(ptree.aug_keys[p])))
  return tuple(out)


def public_belief_state(ptree: PublicTree, public_state, policy):
  """Both players' ranges ``([K0_s], [K1_s])`` at one public state under ``policy``."""
  ps = ptree.public_id(public_state)
  r = ranges(ptree, policy)
  return tuple(r[p][jnp.asarray(ptree.infostates[p][ps])] for p in (0, 1))
