"""Depth-limited subgames cut out of a compiled game at public states.

Brown, Sandholm & Amos (``004``, Sec. 3) and Student of Games (``003``,
Sec. 3): a subgame is rooted at one or more public states, with given ranges
for both players, and cut at *leaf* public states (a depth limit in public
tree levels, or an explicit set). It compiles to an ordinary
:class:`~jaxgt.core.compiler.GameTree`: a root chance node over the root
histories, the original histories below, and every leaf history a terminal
whose payoff (player 0's value of that history) is supplied per solve. The
root ranges enter as terminal weights (``pi_chance(h) r0(I0(h)) r1(I1(h))``
times chance below the root), so one compilation serves any number of root
ranges and the CFR family and exploitability run on it unchanged.

Shape letters: ``T`` subgame terminals, ``L`` leaf histories, ``R`` root
histories, ``B`` batch of root ranges.
"""

from __future__ import annotations

import dataclasses

import jax.numpy as jnp
import numpy as np

from jaxgt.core.compiler import CompiledGame, compile_game
from jaxgt.games.base import CHANCE, TERMINAL, Game
from jaxgt.core.public_tree import PublicTree, build_public_tree

_ROOT = "root"
_DUMMY = "no-decision"  # see extract(): a one-action node for a player without decisions


class _SubgameDefinition(Game):
  """The subgame as a :class:`Game` whose states are full-game history indices."""

  name = "subgame"

  def __init__(self, pt: PublicTree, roots, root_probs, leaf_mask, label, dummy,
               choices=0, chooser=1):
    super().__init__(of=label, choices=choices)
    self._dummy = dummy
    self._choices, self._chooser = choices, chooser
    self._pt, self._t = pt, pt.game.tree
    self._roots, self._probs = roots, root_probs
    self._leaf = leaf_mask
    self._keys = [[pt.aug_keys[p][i] if i >= 0 else "" for i in pt.aug[p]] for p in (0, 1)]
    self.num_actions = max(self._t.num_actions, choices)

  def initial_state(self):
    return _ROOT if self._dummy is None else _DUMMY

  def current_player(self, h):
    if h == _DUMMY:
      return self._dummy
    if isinstance(h, tuple):
      return self._chooser if len(h) == 1 else TERMINAL
    if h == _ROOT:
      return CHANCE
    if self._leaf[self._t.history_public[h]]:
      return TERMINAL if not self._choices else int(self._chooser)
    return int(self._t.player[h])

  def legal_actions(self, h):
    if h == _DUMMY:
      return [0]
    if self._choices and h != _ROOT and (isinstance(h, tuple) or self._leaf[self._t.history_public[h]]):
      return list(range(self._choices))
    return [int(a) for a in np.flatnonzero(self._t.children[h, :self.num_actions] >= 0)]

  def chance_outcomes(self, h):
    if h == _ROOT:
      return [(i, float(q)) for i, q in enumerate(self._probs)]
    c = self._t.chance_probs[h]
    return [(int(a), float(c[a])) for a in np.flatnonzero(c > 0)]

  def next_state(self, h, a):
    if h == _DUMMY:
      return _ROOT
    if self._choices and h != _ROOT and self._leaf[self._t.history_public[h]]:
      return (h, int(a))  # the chooser picked continuation ``a`` at leaf history ``h``
    if h == _ROOT:
      return int(self._roots[a])
    return int(self._t.children[h, a])

  def returns(self, h):
    if isinstance(h, tuple):
      return (0.0, 0.0)
    if self._leaf[self._t.history_public[h]]:
      return (0.0, 0.0)
    u = float(self._t.terminal_payoff[self._t.history_terminal[h]])
    return (u, -u)

  def information_state(self, h, p):
    if h == _DUMMY:
      return _DUMMY
    if self._choices and h != _ROOT and self._leaf[self._t.history_public[h]]:
      return self._keys[p][h] + "|leaf-choice"
    return self._keys[p][h]

  def public_state(self, h):
    if isinstance(h, tuple):
      return ("chosen", int(self._t.history_public[h[0]]))
    if h in (_ROOT, _DUMMY):
      return h
    if self._choices and self._leaf[self._t.history_public[h]]:
      return ("leaf", int(self._t.history_public[h]))
    return int(self._t.history_public[h])

  def game_string(self):
    return f"subgame({self.params['of']})"


@dataclasses.dataclass(frozen=True, eq=False)
class Subgame:
  """A compiled depth-limited subgame and its links to the full game.

  Attributes:
    full: the :class:`PublicTree` of the full game.
    compiled: the subgame as a :class:`CompiledGame` (its ``tree`` is what
      solvers run on).
    root_public: root public states (full-game indices).
    leaf_public: leaf public states (full-game indices), sorted.
    root_histories: ``[R]`` full-game root histories.
    history_of: ``[H_sub]`` full-game history of each subgame history
      (``-1`` at the added root).
    terminal_leaf: ``[T] int32`` leaf index ``0..L-1`` of each terminal, or
      ``-1`` for a real terminal.
    leaf_histories: ``[L]`` full-game leaf histories.
    base_payoff: ``[T]`` payoffs with zeros at leaves.
    chance_below_root: ``[T]`` chance reach of each terminal below its root
      history.
    terminal_root: ``[T]`` root index of each terminal.
    root_aug: ``[2, R]`` position of each root history's information state in
      the concatenated root ranges of each player.
    full_infostate: per player, ``[I_sub]`` full-game information state of each
      subgame information state (``-1`` for the added one-action node).
    root_index: subgame history of the added root chance node (0, or 1 below
      the one-action node of a player without decisions).
    leaf_choices: ``K`` continuation strategies per leaf (0: single-valued).
    leaf_nodes: ``[L]`` subgame history of each leaf.
  """

  full: PublicTree
  compiled: CompiledGame
  root_public: tuple
  leaf_public: tuple
  root_histories: np.ndarray
  history_of: np.ndarray
  terminal_leaf: np.ndarray
  leaf_histories: np.ndarray
  base_payoff: np.ndarray
  chance_below_root: np.ndarray
  terminal_root: np.ndarray
  root_aug: np.ndarray
  full_infostate: tuple
  root_index: int = 0
  leaf_choices: int = 0
  leaf_nodes: np.ndarray | None = None

  @property
  def tree(self):
    return self.compiled.tree

  @property
  def num_leaves(self) -> int:
    return len(self.leaf_histories)

  def range_sizes(self) -> tuple[int, int]:
    return tuple(sum(len(self.full.infostates[p][ps]) for ps in self.root_public) for p in (0, 1))

  def root_weights(self, range0, range1, dtype=jnp.float64) -> jnp.ndarray:
    """Terminal weights ``[T]`` (or ``[B, T]``) for root ranges ``[K0]``, ``[K1]`` (or ``[B, K]``).

    With several root public states the ranges are concatenated in
    ``root_public`` order and each block must sum to one.
    """
    rs = [self._check_ranges(p, r) for p, r in enumerate((range0, range1))]
    if rs[0].shape[:-1] != rs[1].shape[:-1]:
      raise ValueError(f"batch shapes of the two ranges differ: {rs[0].shape} vs {rs[1].shape}")
    hist_w = self.full.chance_reach[self.root_histories]
    hist_w = hist_w * rs[0][..., self.root_aug[0]] * rs[1][..., self.root_aug[1]]
    return jnp.asarray(self.chance_below_root * hist_w[..., self.terminal_root], dtype)

  def _check_ranges(self, p, r, atol=1e-6):
    r = np.asarray(r, np.float64)
    K = self.range_sizes()[p]
    if r.ndim not in (1, 2) or r.shape[-1] != K:
      raise ValueError(f"range of player {p} must have shape [{K}] or [B, {K}] (information "
                       f"states of the root public states), got {r.shape}")
    if not np.isfinite(r).all() or np.any(r < 0):
      raise ValueError(f"range of player {p} has negative or non-finite entries")
    off = 0
    for ps in self.root_public:
      k = len(self.full.infostates[p][ps])
      tot = r[..., off:off + k].sum(-1)
      if np.any(np.abs(tot - 1.0) > atol):
        raise ValueError(f"range of player {p} at public state {ps} sums to "
                         f"{np.ravel(tot)[0]}, not 1")
      off += k
    return r

  def history_weights(self, reach) -> jnp.ndarray:
    """Terminal weights ``[T]`` from a joint reach ``[R]`` of the root histories."""
    return jnp.asarray(self.chance_below_root) * jnp.asarray(reach)[self.terminal_root]

  def payoff(self, leaf_values) -> jnp.ndarray:
    """Terminal payoffs ``[..., T]`` with leaf values ``[..., L]`` (``[..., L, K]``
    with ``K`` leaf choices; player 0's utility) filled in."""
    leaf_values = jnp.asarray(leaf_values)
    K = self.leaf_choices
    want = (self.num_leaves, K) if K else (self.num_leaves,)
    if leaf_values.shape[-len(want):] != want or leaf_values.ndim < len(want):
      raise ValueError(f"leaf values must have shape [..., {', '.join(map(str, want))}] "
                       f"(one per leaf history{' and choice' if K else ''}), "
                       f"got {leaf_values.shape}")
    if K:
      leaf_values = leaf_values.reshape(leaf_values.shape[:-2] + (-1,))
    base = jnp.asarray(self.base_payoff, leaf_values.dtype)
    if not self.num_leaves:  # nothing to fill in (gathering from an empty axis fails)
      return jnp.broadcast_to(base, leaf_values.shape[:-1] + base.shape)
    idx = jnp.asarray(np.maximum(self.terminal_leaf, 0))
    return jnp.where(jnp.asarray(self.terminal_leaf >= 0), leaf_values[..., idx], base)

  def root_children(self) -> np.ndarray:
    """``[R]`` subgame history of each root history."""
    return np.asarray(self.tree.children)[self.root_index, :len(self.root_histories)]

  def with_payoff(self, tree, leaf_values):
    """``tree`` (the subgame's device tree) with leaf values filled in."""
    return tree.replace(terminal_payoff=self.payoff(leaf_values).astype(tree.terminal_payoff.dtype))

  def to_full_policy(self, sub_policy, full_policy):
    """``full_policy`` with the subgame's information states replaced by ``sub_policy``."""
    out = []
    for p in (0, 1):
      m = np.flatnonzero(self.full_infostate[p] >= 0)
      idx = jnp.asarray(self.full_infostate[p][m])
      A = jnp.asarray(full_policy[p]).shape[-1]
      out.append(jnp.asarray(full_policy[p]).at[idx].set(jnp.asarray(sub_policy[p])[m, :A]))
    return tuple(out)


def extract(game: CompiledGame | PublicTree, root=0, *, depth_limit: int | None = None,
            leaves=None, leaf_choices: int = 0, chooser: int = 1) -> Subgame:
  """The subgame rooted at public state(s) ``root``, cut ``depth_limit`` public levels below.

  ``root`` is one public state (index or key) or a sequence of them;
  ``leaves`` (an explicit set of public states) or ``depth_limit`` (public
  states that many levels below a root become leaves; ``None`` and no
  ``leaves`` = no cut) choose the leaves. Leaf public states whose histories
  are all terminal stay ordinary terminals.

  Multi-valued states (``004``, Sec. 4): with ``leaf_choices = K > 0``, at
  every leaf history player ``chooser`` picks one of ``K`` continuation
  strategies at its (augmented) information state there; leaf values then
  have shape ``[L, K]``.
  """
  if isinstance(leaf_choices, bool) or not isinstance(leaf_choices, (int, np.integer)) \
      or leaf_choices < 0:
    raise ValueError(f"leaf_choices must be a non-negative integer, got {leaf_choices!r}")
  if chooser not in (0, 1):
    raise ValueError(f"chooser must be 0 or 1, got {chooser!r}")
  pt = game if isinstance(game, PublicTree) else build_public_tree(game)
  t = pt.game.tree
  roots_ps = root if isinstance(root, (list, tuple, np.ndarray)) and not (
      isinstance(root, tuple) and _is_key(pt, root)) else [root]
  roots_ps = tuple(pt.public_id(r) for r in roots_ps)
  if len(set(roots_ps)) != len(roots_ps):
    raise ValueError("repeated root public state")
  P = pt.num_public_states
  leaf_mask = np.zeros(P, bool)
  if leaves is not None:
    for l in leaves:
      leaf_mask[pt.public_id(l)] = True
  elif depth_limit is not None:
    if isinstance(depth_limit, bool) or not isinstance(depth_limit, (int, np.integer)) \
        or depth_limit < 1:
      raise ValueError(f"depth_limit must be a positive integer, got {depth_limit!r}")
    for r in roots_ps:
      leaf_mask[(pt.depth == pt.depth[r] + depth_limit) & _descends(pt, r)] = True
  leaf_mask &= ~pt.terminal_public
  for r in roots_ps:
    if pt.terminal_public[r]:
      raise ValueError(f"root public state {r} is terminal")
    leaf_mask[r] = False
  roots_h = []
  for r in roots_ps:
    hs = pt.histories[r]
    inside = np.isin(t.parent[hs], hs)
    roots_h.extend(int(h) for h in hs[~inside])
  roots_h = np.asarray(roots_h, np.int32)
  cr = pt.chance_reach[roots_h]
  label = f"{pt.game.name}@{','.join(map(str, roots_ps))}"
  # The compiler needs a decision node of each player; a player without one
  # in the subgame gets a single-action node above the root (it changes no
  # value and no other information state).
  acting = _acting_players(pt, roots_h, leaf_mask) | ({chooser} if leaf_choices else set())
  dummy = next((p for p in (0, 1) if p not in acting), None)
  definition = _SubgameDefinition(pt, roots_h, cr / cr.sum(), leaf_mask, label, dummy,
                                  int(leaf_choices), chooser)
  sub = compile_game(definition)
  st = sub.tree
  top = 0 if dummy is None else 1  # index of the root chance node
  # Full-game history of each subgame history: replay the enumeration order.
  H = st.num_histories
  hist_of = np.full(H, -1, np.int64)
  choice = np.full(H, -1, np.int64)
  for h in range(top + 1, H):
    par = st.parent[h]
    if par == top:
      hist_of[h] = roots_h[st.action[h]]
    elif leaf_choices and leaf_mask[t.history_public[hist_of[par]]]:
      hist_of[h], choice[h] = hist_of[par], st.action[h]
    else:
      hist_of[h] = t.children[hist_of[par], st.action[h]]
  safe = np.maximum(hist_of, 0)
  node_leaf = ((hist_of >= 0) & (choice < 0) & leaf_mask[t.history_public[safe]]
               & (t.player[safe] != TERMINAL))
  leaf_nodes = np.flatnonzero(node_leaf)
  leaf_hist = hist_of[leaf_nodes]
  leaf_of_node = np.full(H, -1, np.int64)
  leaf_of_node[leaf_nodes] = np.arange(len(leaf_nodes))
  z = np.asarray(st.terminal_history)
  if leaf_choices:
    is_leaf = choice[z] >= 0
    terminal_leaf = np.where(is_leaf, leaf_of_node[st.parent[z]] * leaf_choices + choice[z], -1)
  else:
    is_leaf = node_leaf[z]
    terminal_leaf = np.where(is_leaf, leaf_of_node[z], -1)
  terminal_leaf = terminal_leaf.astype(np.int32)
  # Root of each terminal: walk up to depth 1.
  h = np.asarray(st.terminal_history).copy()
  while np.any(st.depth[h] > top + 1):
    h = np.where(st.depth[h] > top + 1, st.parent[h], h)
  terminal_root = st.action[h].astype(np.int32)
  below = st.terminal_chance / (cr / cr.sum())[terminal_root]
  root_aug = np.zeros((2, len(roots_h)), np.int32)
  for p in (0, 1):
    pos = {}
    for ps in roots_ps:
      for i in pt.infostates[p][ps]:
        pos[int(i)] = len(pos)
    root_aug[p] = [pos[int(pt.aug[p][h])] for h in roots_h]
  full_info = []
  for p in (0, 1):
    idx = pt.game.infostate_index(p)
    full_info.append(np.asarray([idx.get(k, -1) for k in sub.infostate_keys[p]], np.int32))
  return Subgame(full=pt, compiled=sub, root_public=roots_ps,
                 leaf_public=tuple(int(x) for x in np.flatnonzero(leaf_mask)),
                 root_histories=roots_h, history_of=hist_of, terminal_leaf=terminal_leaf,
                 leaf_histories=leaf_hist.astype(np.int32),
                 base_payoff=np.where(is_leaf, 0.0, st.terminal_payoff),
                 chance_below_root=below, terminal_root=terminal_root, root_aug=root_aug,
                 full_infostate=tuple(full_info), root_index=top,
                 leaf_choices=int(leaf_choices), leaf_nodes=leaf_nodes.astype(np.int32))


def _acting_players(pt: PublicTree, roots_h, leaf_mask) -> set:
  t = pt.game.tree
  seen, frontier = set(), list(int(h) for h in roots_h)
  while frontier and len(seen) < 2:
    nxt = []
    for h in frontier:
      if leaf_mask[t.history_public[h]]:
        continue
      if t.player[h] in (0, 1):
        seen.add(int(t.player[h]))
      nxt.extend(int(c) for c in t.children[h] if c >= 0)
    frontier = nxt
  return seen


def _is_key(pt, x) -> bool:
  return x in pt._key_index()


def _descends(pt: PublicTree, r: int) -> np.ndarray:
  """``[P] bool`` public states in the subtree of ``r``."""
  out = np.zeros(pt.num_public_states, bool)
  stack = [r]
  while stack:
    u = stack.pop()
    out[u] = True
    stack.extend(pt.children[u])
  return out
