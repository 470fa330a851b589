"""The compiled form of a game: :class:`GameTree` (static arrays) and :class:`CompiledGame`.

A :class:`GameTree` holds three views of one game side by side: the history view
(``player [H]``, ``parent [H]``, ``children [H, C]``, ...), the sequence form per
player (:class:`PlayerTree`) and the public view. :class:`CompiledGame` adds the
host-side names (information-state and public-state keys) and the views derived
from the arrays (:meth:`CompiledGame.derived`). :mod:`jaxgt.core.compiler` builds
them. Shape letters as in :mod:`jaxgt.core.compiler`.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxgt import struct
from jaxgt.core.dtypes import cast_tree, resolve_dtype
from jaxgt.games.base import Game

NO_INDEX = -1
"""Index arrays: no parent, no action, no child, no information state, no terminal."""
NO_PLAYER = -9
"""Player id of a padding step (past the end of a trajectory or a layer); never
equal to 0, 1, :data:`~jaxgt.games.base.CHANCE` or :data:`~jaxgt.games.base.TERMINAL`."""


@struct.dataclass
class PlayerTree:
  """Sequence-form structure of one player's information states."""

  legal: Any  # [I, A] bool legal actions
  parent_seq: Any  # [I] int32 own sequence leading to the information state (I * A: empty)
  public_state: Any  # [I] int32 public state the information state belongs to
  level: Any  # [I] int32 number of the player's earlier decisions
  levels: tuple = struct.field(pytree_node=False)  # static ((lo, hi), ...): level k is lo:hi
  num_infostates: int = struct.field(pytree_node=False)  # static I
  # the terminals grouped by this player's sequence (:func:`terminal_groups`), so per-sequence
  # sums over terminals are row sums, not a scatter: in terminal_order, the n_c sequences
  # reached by exactly c terminals come as an [n_c, c] block, one block per count c
  terminal_order: Any = None  # [T] int32 the terminals grouped by sequence (None: not grouped)
  terminal_group_row: Any = None  # [S] int32 each sequence's row among the blocks (all: none)
  terminal_blocks: tuple = struct.field(pytree_node=False, default=())  # static ((n_c, c), ...)


@struct.dataclass
class GameTree:
  """Static arrays of one compiled game (shape letters in the module docstring)."""

  player: Any  # [H] int32 0, 1, CHANCE (-1) or TERMINAL (-4)
  parent: Any  # [H] int32 parent history (-1 at the root)
  action: Any  # [H] int32 action/outcome leading from the parent (-1 at the root)
  depth: Any  # [H] int32 number of actions from the root
  children: Any  # [H, C] int32 child history per action/outcome, -1 if illegal
  chance_probs: Any  # [H, C] float64 outcome probabilities at chance nodes, zero elsewhere
  infostate: Any  # [H] int32 acting player's information state (-1 at chance and terminals)
  history_public: Any  # [H] int32 public state of each history
  history_terminal: Any  # [H] int32 terminal index or -1
  last_seq: Any  # [2, H] int32 each player's last own sequence on the path (empty = I_p * A)
  chance_reach: Any  # [H] float64 product of chance probabilities on the path to each history
  terminal_history: Any  # [T] int32
  terminal_payoff: Any  # [T] float64 player 0's utility (player 1 gets minus)
  terminal_chance: Any  # [T] float64 product of chance probabilities
  terminal_seq: Any  # [2, T] int32 each player's sequence reaching it
  public_parent: Any  # [P] int32 parent public state (-1 for the root's)
  public_depth: Any  # [P] int32 depth in the public tree
  players: tuple  # two :class:`PlayerTree`
  depth_levels: tuple = struct.field(pytree_node=False)  # static ((lo, hi), ...) per depth
  num_actions: int = struct.field(pytree_node=False)
  num_histories: int = struct.field(pytree_node=False)
  num_terminals: int = struct.field(pytree_node=False)
  num_public_states: int = struct.field(pytree_node=False)

  @property
  def max_depth(self) -> int:
    """Largest history depth (the number of steps of the longest trajectory)."""
    return len(self.depth_levels) - 1

  @property
  def num_infostates(self) -> tuple[int, int]:
    return (self.players[0].num_infostates, self.players[1].num_infostates)


@dataclasses.dataclass(frozen=True, eq=False)
class CompiledGame:
  """A compiled game: the array tree plus host-side names and metadata."""

  game: Game  # the definition it was compiled from
  tree: GameTree  # NumPy arrays
  infostate_keys: tuple  # per player, I information-state strings in index order
  public_keys: tuple  # P public-state keys in index order
  # [2, H] int32 each player's *augmented* information state (its key at every non-terminal
  # history, acting or not), numbered by first appearance of (public state, key); -1 at terminals
  aug: np.ndarray
  aug_keys: tuple  # per player, K_p augmented information-state strings
  fingerprint: str  # digest of game string, legal masks, sequence structure, payoffs
  enumeration_seconds: float  # how long compilation took
  nbytes: int  # array memory
  _cache: dict = dataclasses.field(default_factory=dict, repr=False)

  @property
  def name(self) -> str:
    return self.game.game_string()

  def derived(self, build, *args):
    """``build(self, *args)``, computed once per compiled game and hashable ``args``: a view
    derived from the immutable compiled arrays (device arrays, public tree, search tables),
    keyed by the function that builds it, so each layer owns its views' keys (never a
    traced value)."""
    key = (build, args)
    if key not in self._cache:
      self._cache[key] = build(self, *args)
    return self._cache[key]

  def rules(self, dtype=None):
    """This game read through the device game protocol (:class:`~jaxgt.core.tree_rules.TreeRules`;
    the state is a history index; floats in ``dtype``, cached)."""
    from jaxgt.core.tree_rules import TreeRules
    return self.derived(TreeRules, jnp.dtype(resolve_dtype(dtype)).name)

  def device_tree(self, dtype=None) -> GameTree:
    """The tree as device arrays with floats in ``dtype`` (cached)."""
    return self.derived(_device_tree, jnp.dtype(resolve_dtype(dtype)).name)

  def infostate_index(self, player: int) -> dict:
    """``{key: index}`` of ``player``'s information states."""
    return self.derived(_infostate_index, player)

  def public_index(self) -> dict:
    """``{key: index}`` of the public states."""
    return self.derived(_public_index)

  def sizes(self) -> dict:
    t = self.tree
    return {"histories": t.num_histories, "terminals": t.num_terminals,
            "infostates_p0": t.num_infostates[0], "infostates_p1": t.num_infostates[1],
            "public_states": t.num_public_states, "actions": t.num_actions}

  def __repr__(self) -> str:
    s = self.sizes()
    return (f"<CompiledGame {self.name}: {s['histories']} histories, "
            f"{s['terminals']} terminals, infostates {s['infostates_p0']}/"
            f"{s['infostates_p1']}, {s['public_states']} public states>")


def ancestor_at_depth(parent, depth, nodes, target) -> np.ndarray:
  """Ancestor at depth ``target`` (broadcasts against ``nodes``) of each of ``nodes`` (host).

  ``parent``/``depth`` describe any rooted tree (histories or public states);
  nodes no deeper than ``target`` are returned unchanged.
  """
  parent, depth = np.asarray(parent), np.asarray(depth)
  out = np.array(nodes, dtype=np.int64, copy=True).reshape(-1)
  target = np.broadcast_to(np.asarray(target), np.shape(nodes)).reshape(-1)
  todo = np.flatnonzero(depth[out] > target)
  while len(todo):
    out[todo] = parent[out[todo]]
    todo = todo[depth[out[todo]] > target[todo]]
  return out.reshape(np.shape(nodes))


def first_seen_ids(codes) -> tuple[np.ndarray, np.ndarray]:
  """``(ids [N], first [U])``: ``codes [N]`` numbered by first appearance, ``first[i]`` where
  code ``i`` first appears."""
  codes = np.asarray(codes)
  if not len(codes):
    return np.zeros(0, np.int32), np.zeros(0, np.int64)
  _, first, inv = np.unique(codes, return_index=True, return_inverse=True)
  order = np.argsort(first, kind="stable")
  rank = np.empty(len(first), np.int64)
  rank[order] = np.arange(len(first))
  return rank[inv.reshape(-1)].astype(np.int32), first[order]


def infostate_histories(tree: GameTree, player: int) -> np.ndarray:
  """``[I_p]`` int64: the first (breadth-first) history of each of ``player``'s information
  states (host; every information state has one)."""
  hs = np.flatnonzero(np.asarray(tree.player) == player)
  _, first = np.unique(np.asarray(tree.infostate)[hs], return_index=True)
  return hs[first]


# at most this many distinct counts of terminals per sequence are grouped (each group is one


def _device_tree(game: CompiledGame, dtype: str) -> GameTree:
  """:meth:`CompiledGame.device_tree`'s view."""
  with jax.ensure_compile_time_eval():  # concrete even inside a trace
    return cast_tree(jax.tree_util.tree_map(jnp.asarray, game.tree), dtype)


def _infostate_index(game: CompiledGame, player: int) -> dict:
  return {k: i for i, k in enumerate(game.infostate_keys[player])}


def _public_index(game: CompiledGame) -> dict:
  return {k: i for i, k in enumerate(game.public_keys)}
