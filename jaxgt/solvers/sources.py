"""Where a sampled solver's positions come from: a compiled tree, or a device game's rules.

The trajectory walker (:func:`jaxgt.solvers.walk.walk`) and the sampled
solvers built on it read a game through a *source* with one interface:

===========================  ===========================================================
``root(B)``                  ``B`` root positions
``node(pos)``                the :class:`~jaxgt.solvers.walk.Node` at positions ``[B]``
``chance(pos)``              ``[B, C]`` chance probabilities (zero off chance nodes)
``child(pos, a)``            positions after child ``a [B]``
``payoff(pos)``              ``[B]`` player 0's payoff at terminal positions (else 0)
``num_actions``, ``num_children``, ``max_depth``
===========================  ===========================================================

:class:`TreeSource`: positions are history indices of a compiled
:class:`~jaxgt.core.game_tree.GameTree`; a node's information state is the
tree's index. :class:`RulesSource`: positions are the states of a
:class:`~jaxgt.games.device.DeviceGame` (a batch on the leading axis); a
node's information state is its row in the acting player's
:class:`~jaxgt.core.info_table.InfoTable` (:data:`~jaxgt.core.info_table.NO_ROW`
while not in memory), found by the exact information-state key, or by an
:class:`~jaxgt.games.abstraction.Abstraction`'s key where one is given.

A solver runs on either: ``solver.init(compiled.tree)`` or
``solver.init(Rules(game), capacity=...)`` (:class:`Rules` names the game and
its abstraction; the tables live in the solver's state). On an enumerable game
both runs draw the same samples from the same key and keep the same numbers,
row for row (tested per algorithm).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxgt import struct
from jaxgt.core import info_table
from jaxgt.core.game_tree import NO_INDEX, GameTree
from jaxgt.core.lanes import masked_vmap
from jaxgt.core.tables import infostate_rows
from jaxgt.games.base import TERMINAL
from jaxgt.games.device import DeviceGame, has_chance_sampler


@struct.dataclass
class Node:
  """The current node of each of ``B`` trajectories."""

  history: Any  # [B] int32 history index (tree), or the [B]-batched game states (rules)
  player: jax.Array  # [B] int32 acting player (0, 1, CHANCE, or a terminal's code)
  # [B] int32 acting player's information state: tree index or table row (NO_INDEX off
  # decisions and, for rules, outside memory)
  infostate: jax.Array
  decision: jax.Array  # [B] bool player 0 or 1 acts
  legal: jax.Array  # [B, A] bool legal actions (all False off decisions)
  key: Any = None  # [B, W] int32 acting player's information-state key (rules; None for a tree)


@struct.dataclass
class Rules:
  """A device game (and an optional information-state abstraction) for the sampled solvers.

  A pytree with no leaves: both are static, so it passes through ``jit`` as
  the ``tree`` argument of a run.
  """

  game: DeviceGame = struct.field(pytree_node=False)
  abstraction: Any = struct.field(pytree_node=False, default=None)

  def __post_init__(self):
    if not isinstance(self.game, DeviceGame):
      raise TypeError(f"Rules needs a DeviceGame, got {type(self.game).__name__}")
    if self.abstraction is not None:
      self.abstraction.check_game(self.game)

  @property
  def num_actions(self) -> int:
    return int(self.game.num_actions)

  @property
  def max_depth(self) -> int:
    return int(self.game.max_length)

  @property
  def key_width(self) -> int:
    """Words of the keys the tables hold (the abstraction's, else the game's)."""
    if self.abstraction is not None:
      return int(self.abstraction.key_width)
    return int(self.game.info_key_width)

  def info_key(self, state, player: int):
    """int32 ``[W]``: the table key of ``player`` at one state (abstracted where given)."""
    if self.abstraction is not None:
      return self.abstraction.key(self.game, state, player)
    return jnp.asarray(self.game.info_key(state, player), jnp.int32)

  def acting_key(self, state, player):
    """int32 ``[W]``: the table key of a traced ``player`` (0 or 1) at one state: the
    abstraction's ``acting_key`` where it has one (one evaluation), else both players' keys,
    selected."""
    if self.abstraction is not None and hasattr(self.abstraction, "acting_key"):
      return self.abstraction.acting_key(self.game, state, jnp.clip(player, 0, 1))
    return jnp.where(player == 1, self.info_key(state, 1), self.info_key(state, 0))

  def acting_keys(self, states, player, mask):
    """int32 ``[B, W]``: :meth:`acting_key` of each of the states ``[B]`` where ``mask [B]``
    (the lanes whose keys are read; other lanes' keys are unspecified). An abstraction whose
    key is costly only at some states (``expensive`` and ``cheap_acting_key``, as
    :class:`~jaxgt.games.abstraction.EHS2Buckets`) has its ``acting_key`` evaluated on the
    masked costly lanes alone, gathered in chunks (:func:`jaxgt.core.lanes.masked_vmap`), and
    the cheap key taken elsewhere; otherwise :meth:`acting_key` is vmapped."""
    a = self.abstraction
    if a is None or not hasattr(a, "expensive"):
      return jax.vmap(self.acting_key)(states, player)
    p = jnp.clip(player, 0, 1)
    need = jnp.asarray(mask, bool) & jax.vmap(lambda s, q: a.expensive(self.game, s, q))(states, p)
    cheap = jax.vmap(lambda s, q: a.cheap_acting_key(self.game, s, q))(states, p)
    full = masked_vmap(self.acting_key, need, (states, p),
                       jnp.zeros(self.key_width, jnp.int32))
    return jnp.where(need[:, None], full, cheap)

  def empty_tables(self, capacity: int) -> tuple:
    """Both players' empty tables of ``capacity`` rows each."""
    return tuple(info_table.empty(capacity, self.key_width) for _ in (0, 1))


def node_at(tree: GameTree, history) -> Node:
  """The :class:`Node` at ``history [B]`` (acting player, information state, legal mask)."""
  player = tree.player[history]
  infostate = tree.infostate[history]
  decision = player >= 0
  legal = infostate_rows(tuple(pt.legal for pt in tree.players), player, infostate)
  return Node(history=history, player=player, infostate=infostate, decision=decision,
              legal=legal & decision[:, None])


@struct.dataclass
class TreeSource:
  """Positions are history indices of a compiled tree."""

  tree: GameTree

  @property
  def num_actions(self) -> int:
    return self.tree.num_actions

  @property
  def num_children(self) -> int:
    return self.tree.children.shape[1]

  @property
  def max_depth(self) -> int:
    return self.tree.max_depth

  def root(self, batch: int):
    return jnp.zeros(batch, jnp.int32)

  def node(self, history) -> Node:
    return node_at(self.tree, history)

  def chance(self, history):
    return self.tree.chance_probs[history]

  def child(self, history, a):
    return self.tree.children[history, a]

  def payoff(self, history):
    t = self.tree.history_terminal[history]
    return jnp.where(t >= 0, self.tree.terminal_payoff[jnp.maximum(t, 0)], 0.0)

  def terminal(self, history):
    return self.tree.history_terminal[history]


@struct.dataclass
class RulesSource:
  """Positions are device game states; information states are rows of the players' tables."""

  rules: Rules
  tables: tuple  # (InfoTable, InfoTable) read during the walk (inserts happen after it)
  dtype: Any = struct.field(pytree_node=False, default=jnp.float32)

  @property
  def game(self) -> DeviceGame:
    return self.rules.game

  @property
  def num_actions(self) -> int:
    return int(self.game.num_actions)

  @property
  def num_children(self) -> int:
    return int(self.game.num_distinct)

  @property
  def max_depth(self) -> int:
    return int(self.game.max_length)

  def root(self, batch: int):
    s = self.game.init()
    return jax.tree_util.tree_map(lambda x: jnp.broadcast_to(x, (batch,) + jnp.shape(x)), s)

  def keys(self, states, player: int):
    """int32 ``[B, W]``: ``player``'s table keys at states ``[B]``."""
    return jax.vmap(lambda s: self.rules.info_key(s, player))(states)

  def node(self, states, known=None) -> Node:
    """The nodes at ``states [B]``; ``known = (key [B, W], row [B])`` reuses keys and rows
    found before (the walk's replay of its own steps) instead of computing them again."""
    game = self.game
    player = jax.vmap(game.current_player)(states).astype(jnp.int32)
    decision = (player == 0) | (player == 1)
    legal = jax.vmap(game.legal_mask)(states) & decision[:, None]
    if known is not None:
      key, row = known
    else:
      key = self.rules.acting_keys(states, player, decision)
      rows = [info_table.lookup(t, key) for t in self.tables]
      row = jnp.where(player == 1, rows[1], rows[0])
    return Node(history=states, player=player, infostate=jnp.where(decision, row, NO_INDEX),
                decision=decision, legal=legal, key=key)

  def chance(self, states):
    game = self.game
    C = self.num_children
    if not game.num_outcomes:
      return jnp.zeros((jax.tree_util.tree_leaves(states)[0].shape[0], C), self.dtype)
    probs = jax.vmap(game.chance_probs)(states).astype(self.dtype)
    return jnp.pad(probs, ((0, 0), (0, C - probs.shape[1])))

  @property
  def chance_sampler(self) -> bool:
    """Whether the game draws its chance outcomes itself (:func:`has_chance_sampler`): the walk
    then never builds ``[B, C]`` chance weights."""
    return has_chance_sampler(self.game)

  def sample_chance(self, states, u):
    """int32 ``[B]``: chance outcomes drawn by the game's sampler with uniforms ``u [B]``."""
    return jax.vmap(self.game.sample_chance)(states, u).astype(jnp.int32)

  def chance_prob(self, states, a):
    """``[B]``: the chance probability of outcome ``a [B]`` at states ``[B]`` (0 off chance)."""
    probs = jax.vmap(lambda s, k: self.game.chance_probs(s)[k])(states, a)
    return probs.astype(self.dtype)

  def child(self, states, a):
    return jax.vmap(self.game.step)(states, a)

  def payoff(self, states):
    u = jax.vmap(self.game.returns)(states)[:, 0].astype(self.dtype)
    return jnp.where(jax.vmap(self.game.current_player)(states) == TERMINAL, u, 0.0)

  def terminal(self, states):
    return jnp.where(jax.vmap(self.game.current_player)(states) == TERMINAL, 0, NO_INDEX)


def source_of(tree, tables=None, dtype=jnp.float32):
  """The source of ``tree``: a :class:`GameTree` (tables unused) or :class:`Rules` (with the
  players' ``tables``); a source is returned as is."""
  if isinstance(tree, (TreeSource, RulesSource)):
    return tree
  if isinstance(tree, GameTree):
    return TreeSource(tree)
  if isinstance(tree, Rules):
    if tables is None:
      raise ValueError("a run on a device game needs the players' information-state tables")
    return RulesSource(tree, tuple(tables), dtype)
  raise TypeError(f"expected a GameTree or Rules, got {type(tree).__name__}")


def insert_rows(tables, player, keys, mask):
  """Adds the keys ``[..., W]`` of ``player [...]`` (0 or 1, where ``mask [...]``) to the
  players' tables; returns ``(tables, rows [...])``, rows :data:`NO_INDEX` where masked off or
  refused (the table counts refusals)."""
  shape = player.shape
  flat_keys = keys.reshape((-1, keys.shape[-1]))
  out_tables, rows = [], jnp.full(flat_keys.shape[0], NO_INDEX, jnp.int32)
  for p, t in enumerate(tables):
    m = (mask & (player == p)).reshape(-1)
    t, r = info_table.insert(t, flat_keys, m)
    out_tables.append(t)
    rows = jnp.where(m, r, rows)
  return tuple(out_tables), rows.reshape(shape)



def table_stats(tables) -> dict:
  """Host summary of the players' tables: ``{"rows": [n0, n1], "capacity": N, "refused":
  [r0, r1]}`` (rows in use, rows per player, insert requests refused because a table was
  full)."""
  return {"rows": [int(t.size) for t in tables], "capacity": int(tables[0].capacity),
          "refused": [int(t.refused) for t in tables]}


def memory_estimate(rules: Rules, capacity: int, row_bytes: int) -> int:
  """Bytes of both players' tables of ``capacity`` rows with ``row_bytes`` of statistics each
  (printed before a run so that a capacity that cannot fit is seen before any work)."""
  return 2 * info_table.table_bytes(capacity, rules.key_width, row_bytes)


def tree_rows(compiled, rules: Rules, tables) -> tuple:
  """Per player, int ``[rows]``: the compiled tree's information-state index of each table row
  (by the information-state string of its key; the game's own keys, no abstraction), for
  comparing a run on a device game with the same run on its compiled tree."""
  if rules.abstraction is not None:
    raise ValueError("rows map to the compiled tree only without an abstraction")
  out = []
  for p, t in enumerate(tables):
    index = {k: i for i, k in enumerate(compiled.infostate_keys[p])}
    keys = info_table.host_keys(t)
    out.append(np.array([index[rules.game.info_string(k, p)] for k in keys], np.int64))
  return tuple(out)


def table_policy(rules: Rules, tables, probs, kept=None) -> dict:
  """Host export of per-row strategies: ``{player: {information-state string: probabilities
  [A]}}`` from ``probs = ([N, A], [N, A])`` at the rows in use of each player's table (and
  where ``kept [N]`` is true, when given); strings by the game's own keys (no abstraction)."""
  if rules.abstraction is not None:
    raise ValueError("an abstraction's rows have no information-state strings of the game")
  out = {}
  for p, t in enumerate(tables):
    keys = info_table.host_keys(t)
    rows = np.asarray(probs[p], np.float64)[:len(keys)]
    keep = np.ones(len(keys), bool) if kept is None else np.asarray(kept[p])[:len(keys)]
    out[p] = {rules.game.info_string(k, p): rows[i] for i, k in enumerate(keys) if keep[i]}
  return out


@struct.dataclass
class TablePolicy:
  """Per-row strategies of a device-game run as a device policy
  (:mod:`jaxgt.evaluation.device_policy`): ``policy(states [B], player) -> [B, A]``.

  A state's key (the abstraction's where :class:`Rules` has one) is looked up in ``player``'s
  table; rows in use with mass play ``probs[player][row]`` restricted to the state's legal
  actions and renormalised, any other state the uniform policy over its legal actions (what
  the run plays there). A pytree (tables and rows are its leaves), so evaluators take it as an
  argument of their jitted programs."""

  rules: Rules = struct.field(pytree_node=False)
  tables: tuple  # (InfoTable, InfoTable)
  probs: tuple  # ([N, A], [N, A]) non-negative weights per row

  @property
  def game(self) -> DeviceGame:
    return self.rules.game

  def __call__(self, states, player: int):
    p = int(player)
    keys = jax.vmap(lambda s: self.rules.info_key(s, p))(states)
    row = info_table.lookup(self.tables[p], keys)
    weights = jnp.asarray(self.probs[p])[jnp.maximum(row, 0)]
    legal = jax.vmap(self.game.legal_mask)(states).astype(weights.dtype)
    weights = weights * legal
    total = jnp.sum(weights, axis=-1, keepdims=True)
    uniform = legal / jnp.maximum(jnp.sum(legal, axis=-1, keepdims=True), 1)
    return jnp.where((row >= 0)[:, None] & (total > 0), weights / jnp.where(total > 0, total, 1),
                     uniform)
