"""A fixed-capacity public tree on the device, grown by expansions (Schmid et al. 2023, GT-CFR).

Student of Games (Schmid et al. 2023, "Search via Growing-Tree CFR") searches a public
tree that grows while it is solved. Here that tree is a pytree of arrays
allocated once for a static capacity ``N`` (mctx's ``Tree`` is the model):
node ``0`` is the root public state, given as data; every expansion appends
the child public states of one node as new nodes, so node ``i`` exists once
``num_nodes > i``; ``children`` holds :data:`UNEXPANDED` until a node is
expanded. Nodes are never removed. One compiled program serves every root
public state, every tree shape and every root range.

A node is a public state. It holds, padded to the game's static maxima:

* its histories (``M`` slots): acting player, chance probability of the
  edge into the history, action, terminal payoff, the *global slot*
  ``n * M + m`` of the parent history (in the same node, e.g. a private deal,
  or in the parent node) and the slots of its children once expanded;
* per player its augmented information states (``K`` slots, Schmid et al. 2023, Sec. 3:
  the range of a public belief state is indexed by them), with their legal
  actions; each history slot names its information-state slot per player.

Everything a node holds comes from its *source*, which names each node by a
*key* (stored in :attr:`DeviceTree.keys`) and gives, for a key, the node's
arrays and the keys of its child public states (:meth:`Source.expansion`).
:func:`source_from_game` reads them from the compiled game's public view (the
key is a public-state id, :func:`public_state_rows`);
:func:`jaxgt.search.rules_source.rules_source` computes them from a device
game's rules when a node is created (the key is a representative state), so a
game too large to enumerate grows the same tree.

Shape letters: ``N`` nodes (capacity), ``M`` history slots per node, ``K``
information-state slots per node and player, ``A`` actions, ``C`` history
branching, ``Q`` child public states per public state, ``P`` public states of
the source, ``D`` public depth.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxgt import struct
from jaxgt.core.checks import check_positive_int
from jaxgt.core.game_tree import NO_INDEX, NO_PLAYER, CompiledGame
from jaxgt.core.public_tree import build_public_tree
from jaxgt.games.base import CHANCE

UNEXPANDED = NO_INDEX
"""``DeviceTree.children`` entry of a child public state not (yet) in the tree."""


@struct.dataclass
class PublicStateRows:
  """The arrays of one public state (add ``Q`` in front for its children)."""

  # [] int32 public state id (NO_INDEX: none); from a rules source the action or chance outcome
  # into the public state (0 at the root)
  public: Any
  history: Any  # [M] int32 source history ids (NO_INDEX padding)
  player: Any  # [M] int32 0, 1, CHANCE, TERMINAL (NO_PLAYER padding)
  action: Any  # [M] int32 action/outcome into the history
  chance: Any  # [M] float chance probability of the edge into the history (1 after a decision)
  chance_reach: Any  # [M] float product of chance probabilities from the game's root
  payoff: Any  # [M] float player 0's utility at terminals (0 elsewhere)
  parent_local: Any  # [M] int32 slot of the parent history in its public state (NO_INDEX: none)
  parent_same: Any  # [M] bool the parent history lies in this public state
  info: Any  # [2, M] int32 each player's information-state slot (NO_INDEX at terminals)
  depth: Any  # [M] int32 depth of each history in the game (0 at padding)
  info_id: Any  # [2, K] int32 source augmented information state of each slot (NO_INDEX padding)
  # [2, K] int32 source (sequence-form) information state where the slot's player acts, else NO_INDEX
  acting_info: Any
  legal: Any  # [2, K, A] bool legal actions where the slot's player acts
  # [M, C] int32 child history's slot, in this public state or in child public state child_of
  child_local: Any
  child_of: Any  # [M, C] int32 child public-state position (into children) or NO_INDEX: same state
  children: Any  # [Q] int32 child public states (NO_INDEX padding)


@dataclasses.dataclass(frozen=True, eq=False)
class Source:
  """Static sizes and the per-public-state tables :func:`public_state_rows` reads.

  ``tables`` is a :class:`PublicStateRows` with a leading ``P`` on every
  field (device arrays); ``public_parent [P]`` and ``public_depth [P]`` give
  a public state's path to the root (for trees rooted at a branch). A node's
  key is its public state's id (``int32 []``).

  Every source (this one and :class:`jaxgt.search.rules_source.RulesSource`) has
  the sizes below, ``dtype``, and the methods :meth:`root_key`, :meth:`padding_key`,
  :meth:`rows` and :meth:`expansion` the tree reads.
  """

  game: Any  # the :class:`CompiledGame` it was read from (None for a rules-based source)
  tables: PublicStateRows
  public_parent: Any  # [P] int32
  public_depth: Any  # [P] int32
  # [2, H] int32 information-state slot of each history within its public state (agents map a
  # history to its row)
  history_info: Any
  num_histories: int  # M
  num_infostates: int  # K
  num_actions: int  # A
  num_children: int  # Q
  branching: int  # C
  max_depth: int  # longest history path (bounds the passes over a tree)
  max_public_depth: int  # D
  num_public_states: int  # P
  value_scale: float  # largest |payoff| (PUCT's virtual-loss scale)
  # class constant: a node's history slots are not the private pairs of a factored game, so
  # the regret phase runs on the history form (jaxgt.search.regret_phase.tree_form)
  factored = False

  @property
  def dtype(self):
    return self.tables.chance.dtype

  def root_key(self, root, shape=()):
    """The key of root public state ``root`` (``int32``, of the batch ``shape``)."""
    del shape
    return jnp.asarray(root, jnp.int32)

  def padding_key(self):
    """The key of an empty node."""
    return jnp.asarray(NO_INDEX, jnp.int32)

  def rows(self, key) -> PublicStateRows:
    """The arrays of the public state of ``key`` (:func:`public_state_rows`)."""
    return public_state_rows(self, key)

  def expansion(self, key) -> tuple:
    """``(rows, child keys [Q])`` of the public state of ``key``."""
    rows = public_state_rows(self, key)
    return rows, rows.children


def source_from_game(game: CompiledGame, dtype="float64") -> Source:
  """The :class:`Source` of a compiled game, from its public view (cached on it)."""
  return game.derived(_build_source, jnp.dtype(dtype).name)


def _build_source(game: CompiledGame, dtype) -> Source:
  ptree = build_public_tree(game)
  t = game.tree
  H, P, A = t.num_histories, ptree.num_public_states, t.num_actions
  C = t.children.shape[1]
  hp = np.asarray(t.history_public).astype(np.int64)
  player = np.asarray(t.player)
  parent = np.asarray(t.parent)
  action = np.asarray(t.action)
  M = max(len(h) for h in ptree.histories)
  K = max(1, max(len(i) for p in (0, 1) for i in ptree.infostates[p]))
  Q = max(1, max(len(c) for c in ptree.children))
  local = np.zeros(H, np.int64)
  for ps, hs in enumerate(ptree.histories):
    local[hs] = np.arange(len(hs))
  hist = np.full((P, M), NO_INDEX, np.int32)
  hist[hp, local] = np.arange(H)
  valid = hist >= 0
  h = np.maximum(hist, 0)
  par = parent[h]
  has_par = valid & (par >= 0)
  same = has_par & (hp[np.maximum(par, 0)] == hp[h])
  chance_edge = np.ones((P, M))
  from_chance = has_par & (player[np.maximum(par, 0)] == CHANCE)
  chance_edge[from_chance] = np.asarray(t.chance_probs)[par[from_chance], action[h][from_chance]]
  payoff = np.zeros(H)
  term = np.asarray(t.terminal_history)
  payoff[term] = np.asarray(t.terminal_payoff)
  # Information-state slots: position of a history's augmented state in its public state's list.
  aug_local = np.full((2, H), NO_INDEX, np.int64)
  info_id = np.full((2, P, K), NO_INDEX, np.int32)
  for p in (0, 1):
    pos = np.full(len(ptree.aug_keys[p]), NO_INDEX, np.int64)
    for ps, ids in enumerate(ptree.infostates[p]):
      pos[ids] = np.arange(len(ids))
      info_id[p, ps, :len(ids)] = ids
    m = ptree.aug[p] >= 0
    aug_local[p, m] = pos[ptree.aug[p][m]]
  info = np.where(valid[None], aug_local[:, h], NO_INDEX).astype(np.int32)
  acting = np.full((2, P, K), NO_INDEX, np.int32)
  legal = np.zeros((2, P, K, A), bool)
  children = np.asarray(t.children)
  for p in (0, 1):
    hs = np.flatnonzero(player == p)
    acting[p, hp[hs], aug_local[p, hs]] = np.asarray(t.infostate)[hs]
    legal[p, hp[hs], aug_local[p, hs]] = children[hs, :A] >= 0
  kids = np.full((P, Q), NO_INDEX, np.int32)
  kid_pos = {}
  for ps, ks in enumerate(ptree.children):
    kids[ps, :len(ks)] = ks
    for j, k in enumerate(ks):
      kid_pos[k] = j
  ch = children[h]  # [P, M, C]
  ch_valid = valid[..., None] & (ch >= 0)
  chs = np.maximum(ch, 0)
  ch_same = hp[chs] == hp[h][..., None]
  child_local = np.where(ch_valid, local[chs], NO_INDEX).astype(np.int32)
  pos_of = np.full(P, NO_INDEX, np.int64)
  for k, j in kid_pos.items():
    pos_of[k] = j
  child_of = np.where(ch_valid & ~ch_same, pos_of[hp[chs]], NO_INDEX).astype(np.int32)
  if np.any(ch_valid & ~ch_same & (np.asarray(ptree.parent)[hp[chs]] != hp[h][..., None])):
    raise ValueError(f"{game.name}: a history's child lies in a public state that is not a "
                     "child of its own (the public tree is inconsistent)")
  f = jnp.dtype(dtype)
  tables = PublicStateRows(
      public=jnp.arange(P, dtype=jnp.int32), history=jnp.asarray(hist),
      player=jnp.asarray(np.where(valid, player[h], NO_PLAYER).astype(np.int32)),
      action=jnp.asarray(np.where(valid, action[h], NO_INDEX).astype(np.int32)),
      chance=jnp.asarray(np.where(valid, chance_edge, 0.0), f),
      chance_reach=jnp.asarray(np.where(valid, np.asarray(t.chance_reach)[h], 0.0), f),
      payoff=jnp.asarray(np.where(valid, payoff[h], 0.0), f),
      parent_local=jnp.asarray(np.where(has_par, local[np.maximum(par, 0)], NO_INDEX)
                               .astype(np.int32)),
      parent_same=jnp.asarray(same), info=jnp.asarray(info.transpose(1, 0, 2)),
      depth=jnp.asarray(np.where(valid, np.asarray(t.depth)[h], 0).astype(np.int32)),
      info_id=jnp.asarray(info_id.transpose(1, 0, 2)),
      acting_info=jnp.asarray(acting.transpose(1, 0, 2)),
      legal=jnp.asarray(legal.transpose(1, 0, 2, 3)),
      child_local=jnp.asarray(child_local), child_of=jnp.asarray(child_of),
      children=jnp.asarray(kids))
  hist_info = np.where(aug_local >= 0, aug_local, NO_INDEX).astype(np.int32)
  return Source(game=game, tables=tables, public_parent=jnp.asarray(ptree.parent),
                public_depth=jnp.asarray(ptree.depth), history_info=jnp.asarray(hist_info),
                num_histories=M, num_infostates=K, num_actions=A, num_children=Q, branching=C,
                max_depth=int(t.max_depth), max_public_depth=int(ptree.depth.max()),
                num_public_states=P, value_scale=float(max(np.abs(payoff).max(), 1e-12)))


def public_state_rows(source: Source, public) -> PublicStateRows:
  """The arrays of public state ``public`` (traced ``int32``, any shape ``[...]``).

  The one place a tree reads the game: expansion calls it for the child
  public states of a node. ``NO_INDEX`` gives an all-padding row.
  """
  public = jnp.asarray(public, jnp.int32)
  rows = jax.tree_util.tree_map(lambda x: x[jnp.maximum(public, 0)], source.tables)
  return rows.replace(public=jnp.where(public >= 0, rows.public, NO_INDEX),
                      history=jnp.where((public >= 0)[..., None], rows.history, NO_INDEX))


# ------------------------------------------------------------------ the tree
@struct.dataclass
class DeviceTree:
  """A public tree of fixed capacity ``N`` (module docstring for the letters).

  Global history slot ``s = n * M + m`` is slot ``m`` of node ``n``; global
  information-state slot ``n * K + k`` likewise.
  """

  public: Any  # [N] int32 public state of each node (NO_INDEX: not created)
  parent: Any  # [N] int32 parent node (NO_INDEX at the root and unused nodes)
  depth: Any  # [N] int32 public depth below the root node
  expanded: Any  # [N] bool its child public states are nodes
  children: Any  # [N, Q] int32 node of each child public state (UNEXPANDED until expanded)
  num_nodes: Any  # [] int32 nodes created
  history: Any  # [N, M] int32 source history of each slot (NO_INDEX padding)
  player: Any  # [N, M] int32 acting player, CHANCE, TERMINAL (NO_PLAYER padding)
  action: Any  # [N, M] int32 action/outcome into the slot's history
  chance: Any  # [N, M] float chance probability of the edge into it (1 after a decision)
  chance_reach: Any  # [N, M] float chance reach from the game's root
  payoff: Any  # [N, M] float player 0's terminal utility
  parent_slot: Any  # [N, M] int32 global slot of the parent history (NO_INDEX: a root history)
  entry: Any  # [N, M] bool the parent history lies in another node (or none)
  info: Any  # [2, N, M] int32 each player's information-state slot in the node
  info_id: Any  # [2, N, K] int32 source augmented information state of each slot
  acting_info: Any  # [2, N, K] int32 source information state where the player acts there
  legal: Any  # [2, N, K, A] bool
  slot_children: Any  # [N, M, C] int32 global slot of each child history (filled on expansion)
  history_depth: Any  # [N, M] int32 depth of each history (steps from the source's root)
  keys: Any  # the source's key of each node (a pytree, [N] in front of every leaf)

  @property
  def capacity(self) -> int:
    return self.public.shape[-1]


def check_capacity(source: Source, capacity) -> int:
  """``capacity`` as an int; raises unless it holds the root and its children."""
  n = check_positive_int("capacity", capacity)
  if n < 1 + source.num_children:
    raise ValueError(f"capacity {n} cannot hold a root and its {source.num_children} child "
                     f"public states; use at least {1 + source.num_children}")
  return n


def empty_tree(source: Source, capacity: int) -> DeviceTree:
  """A tree of ``capacity`` nodes with none created (host shapes only)."""
  N, M, K, A, Q, C = (capacity, source.num_histories, source.num_infostates, source.num_actions,
                      source.num_children, source.branching)
  f = source.dtype
  i32 = jnp.int32
  keys = jax.tree_util.tree_map(lambda x: jnp.broadcast_to(x, (N,) + jnp.shape(x)),
                                source.padding_key())
  return DeviceTree(
      public=jnp.full(N, NO_INDEX, i32), parent=jnp.full(N, NO_INDEX, i32),
      depth=jnp.zeros(N, i32), expanded=jnp.zeros(N, bool),
      children=jnp.full((N, Q), UNEXPANDED, i32), num_nodes=jnp.zeros((), i32),
      history=jnp.full((N, M), NO_INDEX, i32), player=jnp.full((N, M), NO_PLAYER, i32),
      action=jnp.full((N, M), NO_INDEX, i32), chance=jnp.zeros((N, M), f),
      chance_reach=jnp.zeros((N, M), f), payoff=jnp.zeros((N, M), f),
      parent_slot=jnp.full((N, M), NO_INDEX, i32), entry=jnp.zeros((N, M), bool),
      info=jnp.full((2, N, M), NO_INDEX, i32), info_id=jnp.full((2, N, K), NO_INDEX, i32),
      acting_info=jnp.full((2, N, K), NO_INDEX, i32), legal=jnp.zeros((2, N, K, A), bool),
      slot_children=jnp.full((N, M, C), NO_INDEX, i32), history_depth=jnp.zeros((N, M), i32),
      keys=keys)


def node_key(tree: DeviceTree, node):
  """The source's key of ``node`` (traced ``int32``)."""
  n = jnp.clip(jnp.asarray(node, jnp.int32), 0, tree.capacity - 1)
  return jax.tree_util.tree_map(lambda x: x[n], tree.keys)


def _write(tree: DeviceTree, nodes, rows: PublicStateRows, parent_nodes, depth,
           keys) -> DeviceTree:
  """``tree`` with ``rows [B]`` and ``keys [B]`` written at ``nodes [B]`` (out-of-range nodes
  are dropped)."""
  M = tree.history.shape[1]
  same = rows.parent_same
  par_node = jnp.where(same, nodes[:, None], parent_nodes[:, None])
  parent_slot = jnp.where(rows.parent_local >= 0, par_node * M + rows.parent_local, NO_INDEX)
  has_parent_node = (parent_nodes >= 0)[:, None]
  parent_slot = jnp.where(same | has_parent_node, parent_slot, NO_INDEX)
  entry = (rows.history >= 0) & ~same

  def put(x, v, axis=0):
    idx = (slice(None),) * axis + (nodes,)
    return x.at[idx].set(v, mode="drop")

  return tree.replace(
      public=put(tree.public, rows.public), parent=put(tree.parent, parent_nodes),
      depth=put(tree.depth, depth),
      history=put(tree.history, rows.history), player=put(tree.player, rows.player),
      action=put(tree.action, rows.action), chance=put(tree.chance, rows.chance),
      chance_reach=put(tree.chance_reach, rows.chance_reach),
      payoff=put(tree.payoff, rows.payoff), parent_slot=put(tree.parent_slot, parent_slot),
      entry=put(tree.entry, entry),
      info=put(tree.info, jnp.moveaxis(rows.info, 0, 1), 1),
      info_id=put(tree.info_id, jnp.moveaxis(rows.info_id, 0, 1), 1),
      acting_info=put(tree.acting_info, jnp.moveaxis(rows.acting_info, 0, 1), 1),
      legal=put(tree.legal, jnp.moveaxis(rows.legal, 0, 1), 1),
      history_depth=put(tree.history_depth, rows.depth),
      keys=jax.tree_util.tree_map(put, tree.keys, keys))


def init_tree(source: Source, capacity: int, root) -> DeviceTree:
  """The tree holding only the root as node 0: public state ``root`` (traced ``int32``), or
  the root key of another source (:meth:`Source.root_key`)."""
  tree = empty_tree(source, capacity)
  key = source.root_key(root)
  one = lambda x: jnp.asarray(x)[None]
  rows = jax.tree_util.tree_map(one, source.rows(key))
  tree = _write(tree, jnp.zeros(1, jnp.int32), rows, jnp.full(1, NO_INDEX, jnp.int32),
                jnp.zeros(1, jnp.int32), jax.tree_util.tree_map(one, key))
  return tree.replace(num_nodes=jnp.ones((), jnp.int32))


def can_expand(tree: DeviceTree, node) -> jax.Array:
  """``[]`` bool: ``node`` exists, is not expanded and holds a non-terminal history."""
  node = jnp.asarray(node, jnp.int32)
  n = jnp.clip(node, 0, tree.capacity - 1)
  live = jnp.any((tree.player[n] == 0) | (tree.player[n] == 1) | (tree.player[n] == CHANCE))
  return (node >= 0) & (node < tree.num_nodes) & ~tree.expanded[n] & live


def expand(source: Source, tree: DeviceTree, node) -> DeviceTree:
  """``tree`` with the child public states of ``node`` added as new nodes (``k = infinity``).

  Traceable in ``node``; a no-op when the node cannot be expanded
  (:func:`can_expand`) or the children do not fit in the capacity. The
  children come from the source (:meth:`Source.expansion`, then :meth:`Source.rows` of
  each child's key); the node's history slots get their child slots (``slot_children``).
  """
  node = jnp.asarray(node, jnp.int32)
  N, M = tree.capacity, tree.history.shape[1]
  n = jnp.clip(node, 0, N - 1)
  own, kid_keys = source.expansion(node_key(tree, n))
  kids = own.children  # [Q]
  valid = kids >= 0
  count = jnp.sum(valid, dtype=jnp.int32)
  ok = can_expand(tree, node) & (tree.num_nodes + count <= N)
  ids = tree.num_nodes + jnp.cumsum(valid, dtype=jnp.int32) - 1
  ids = jnp.where(valid & ok, ids, N)  # N: dropped
  rows = jax.vmap(source.rows)(kid_keys)
  out = _write(tree, ids, rows, jnp.full(kids.shape, node), jnp.full(kids.shape, tree.depth[n] + 1),
               kid_keys)
  # Child slots of the node's histories: in the node itself or in a new child node.
  child_node = jnp.where(own.child_of >= 0, ids[jnp.maximum(own.child_of, 0)], n)
  slots = jnp.where(own.child_local >= 0, child_node * M + own.child_local, NO_INDEX)
  slots = jnp.where(slots < N * M, slots, NO_INDEX)
  return out.replace(
      children=jnp.where(ok, out.children.at[n].set(jnp.where(valid, ids, UNEXPANDED)),
                         out.children),
      expanded=out.expanded.at[n].set(out.expanded[n] | ok),
      num_nodes=tree.num_nodes + jnp.where(ok, count, 0),
      slot_children=jnp.where(ok, out.slot_children.at[n].set(slots), out.slot_children))


def child_node(tree: DeviceTree, node, public) -> jax.Array:
  """Node of child public state ``public`` of ``node`` (NO_INDEX if not in the tree); with a
  rules source ``public`` is the action or chance outcome into the child."""
  n = jnp.clip(jnp.asarray(node, jnp.int32), 0, tree.capacity - 1)
  kids = tree.children[n]
  pubs = tree.public[jnp.maximum(kids, 0)]
  hit = (kids >= 0) & (pubs == public)
  return jnp.where(jnp.any(hit), kids[jnp.argmax(hit)], NO_INDEX)


def public_path(source: Source, public) -> jax.Array:
  """``[D + 1]`` int32 public states from the root to ``public`` (traced), NO_INDEX padded
  (an enumerated source's; from a rules source's root, the path is the root's entry, any
  non-negative, then the actions and chance outcomes, see :func:`grow_branch`)."""
  if getattr(source, "public_parent", None) is None:
    raise ValueError("public_path needs an enumerated source (source_from_game); from a rules "
                     "source's root give the path as [0, actions and chance outcomes...]")
  D = source.max_public_depth

  def up(i, path):
    prev = path[D - i]
    return path.at[D - i - 1].set(jnp.where(prev >= 0, source.public_parent[jnp.maximum(prev, 0)],
                                            NO_INDEX))

  path = jnp.full(D + 1, NO_INDEX, jnp.int32).at[D].set(jnp.asarray(public, jnp.int32))
  path = lax.fori_loop(0, D, up, path)
  # Shift so that the root comes first.
  first = jnp.argmax(path >= 0)
  return jnp.where(jnp.arange(D + 1) + first <= D, jnp.roll(path, -first), NO_INDEX)


def grow_branch(source: Source, tree: DeviceTree, path) -> tuple[DeviceTree, jax.Array]:
  """Expands the node of every public state of ``path [D + 1]`` (root first, NO_INDEX
  padded; ``path[0]`` is the root node's) in turn: the single branch to the last
  one with all off-branch children as leaves (Schmid et al. 2023, "Modified Continual
  Re-solving"), and that state's children. Returns ``(tree, node of the last state)``. With a
  rules source, ``path[1:]`` are the actions and chance outcomes from the root (``path[0]``
  any non-negative number)."""

  def body(i, carry):
    tree, node, last = carry
    go = (path[i] >= 0) & (node >= 0)
    tree = lax.cond(go, lambda t: expand(source, t, node), lambda t: t, tree)
    nxt = jnp.where(i + 1 < path.shape[0], path[jnp.minimum(i + 1, path.shape[0] - 1)], NO_INDEX)
    last = jnp.where(go, node, last)
    node = jnp.where(go & (nxt >= 0), child_node(tree, node, nxt), NO_INDEX)
    return tree, node, last

  tree, _, last = lax.fori_loop(0, path.shape[0], body,
                                (tree, jnp.zeros((), jnp.int32), jnp.zeros((), jnp.int32)))
  return tree, last


def expand_all(source: Source, tree: DeviceTree, depth_limit=None, leaves=None) -> DeviceTree:
  """Expands nodes in creation order until none can be expanded or the capacity is full;
  with ``depth_limit`` only nodes less than that many public levels below the root (a
  depth-limited tree whose leaves are the public states ``depth_limit`` levels down), and
  with ``leaves`` (``[P]`` bool) not the nodes of those public states."""
  def body(i, tree):
    ok = jnp.ones((), bool) if depth_limit is None else tree.depth[i] < depth_limit
    if leaves is not None:
      ok = ok & ~jnp.asarray(leaves)[jnp.maximum(tree.public[i], 0)]
    return lax.cond(ok, lambda t: expand(source, t, i), lambda t: t, tree)
  return lax.fori_loop(0, tree.capacity, body, tree)


def expand_below(source: Source, tree: DeviceTree, node, depth_limit: int) -> DeviceTree:
  """Expands, in creation order, every node in the subtree of ``node`` (traced) less than
  ``depth_limit`` public levels below it: with :func:`grow_branch` this is the re-solving
  subgame of Schmid et al. 2023 ("Modified Continual Re-solving"): the single branch to the
  decision, off-branch children as leaves, and ``depth_limit`` levels below the decision."""
  node = jnp.asarray(node, jnp.int32)
  limit = tree.depth[jnp.clip(node, 0, tree.capacity - 1)] + depth_limit

  def body(i, carry):
    tree, below = carry
    par = tree.parent[i]
    inside = (i == node) | ((par >= 0) & below[jnp.maximum(par, 0)])
    below = below.at[i].set(inside & (i < tree.num_nodes))
    ok = inside & (tree.depth[i] < limit)
    return lax.cond(ok, lambda t: expand(source, t, i), lambda t: t, tree), below

  return lax.fori_loop(0, tree.capacity, body, (tree, jnp.zeros(tree.capacity, bool)))[0]
