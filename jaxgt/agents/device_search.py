"""Search agents on device games: OOS and ISMCTS over information-state tables.

A game too large to enumerate has no tree to index; :class:`DeviceSearchAgent`
searches it through its rules (:class:`~jaxgt.solvers.sources.Rules`) with
the solver's statistics in fixed-capacity tables keyed by exact
information-state keys (:mod:`jaxgt.core.info_table`). At each move it replays
the match's actions to its own observations
(:func:`~jaxgt.solvers.consistent.search_path`: its keys along the path, the
public keys), runs ``iterations`` steps of the solver targeted there (OOS) or
determinized there (ISMCTS), and plays the move policy at its information
state (uniform over the legal actions if the search never stored it, or where its float
statistics there are not finite). The
agent never reads hidden information off the position: the path's states are
replayed only to compute the searcher's own keys.

OOS keeps its tables for the whole match (Lisy, Lanctot, Bowling 2015,
Sec. 4); ISMCTS starts every move from empty statistics (Sec. 5.1).
:meth:`DeviceSearchAgent.memory` reports each table's rows in use and its
refused inserts.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp

from jaxgt.agents.base import Agent
from jaxgt.core import info_table, sequence_form
from jaxgt.core.checks import check_choice, check_positive_int
from jaxgt.core.memory import available_device_memory, gib
from jaxgt.games.device import DeviceGame
from jaxgt.solvers.consistent import search_path
from jaxgt.solvers.ismcts import ISMCTS
from jaxgt.solvers.oos import OOS
from jaxgt.solvers.sources import Rules, memory_estimate, table_stats

PLAY = ("average", "current")


@dataclasses.dataclass(frozen=True, eq=False)
class DeviceSearchAgent(Agent):
  """OOS or ISMCTS playing a device game: ``iterations`` solver steps per move.

  ``capacity`` rows per player's table; ``play`` (OOS): the average strategy
  ``s_I`` or the current (regret-matching) one. ``act`` is traceable, so
  matches run jitted and vmapped over matches.
  """

  game: DeviceGame
  solver: Any  # an OOS or ISMCTS instance
  iterations: int = 1000
  capacity: int = 100_000
  abstraction: Any = None
  play: str = "average"

  reads_position = True

  def __post_init__(self):
    if not isinstance(self.game, DeviceGame):
      raise TypeError(f"a device search agent plays a DeviceGame, got {type(self.game).__name__}")
    if not isinstance(self.solver, (OOS, ISMCTS)):
      raise ValueError(f"solver must be an OOS or ISMCTS instance, got {type(self.solver).__name__}")
    check_positive_int("iterations", self.iterations)
    check_positive_int("capacity", self.capacity)
    check_choice("play", self.play, PLAY)
    rules = Rules(self.game, self.abstraction)
    object.__setattr__(self, "rules", rules)
    shapes = jax.eval_shape(lambda: self.solver.init(rules, capacity=self.capacity))
    object.__setattr__(self, "_shapes", shapes)
    need, free = self.memory_bytes(), available_device_memory()
    if free is not None and need > free:  # before the tables are allocated
      raise ValueError(f"capacity {self.capacity:,} rows per player needs {gib(need)} of "
                       f"tables, more than the {gib(free)} free: lower the capacity")
    object.__setattr__(self, "_fresh", self.solver.init(rules, capacity=self.capacity))

  @property
  def keeps_memory(self) -> bool:
    """OOS keeps its tables between moves; ISMCTS searches each move afresh."""
    return isinstance(self.solver, OOS)

  def memory_bytes(self) -> int:
    """Bytes of the agent's tables (keys, slots and statistics of both players)."""
    stats = sum(x.size * x.dtype.itemsize for x in jax.tree_util.tree_leaves(self._shapes)
                if x.ndim == 2 and x.shape[0] == self.capacity and x.dtype != jnp.int32)
    return memory_estimate(self.rules, self.capacity, 0) + int(stats)

  def init(self, key):
    del key
    return self._fresh

  def act(self, key, state, position):
    path = search_path(self.game, position.actions, position.length)
    start = state if self.keeps_memory else self._fresh
    s = self.solver.run(self.rules, start, self.iterations, key, path=path)
    own = position.state
    player = jnp.asarray(self.game.current_player(own), jnp.int32)
    legal = jnp.asarray(self.game.legal_mask(own), bool)
    keys = jnp.stack([self.rules.info_key(own, p) for p in (0, 1)])
    rows = jnp.stack([info_table.lookup(s.tables[p], keys[p][None])[0] for p in (0, 1)])
    row = jnp.where(player == 1, rows[1], rows[0])
    probs = self._move(s, player, jnp.maximum(row, 0), legal)
    # uniform where the search never stored the state or its statistics overflowed
    usable = (row >= 0) & jnp.all(jnp.isfinite(probs)) & (jnp.sum(jnp.where(legal, probs, 0)) > 0)
    probs = jnp.where(usable, probs, sequence_form.uniform(legal).astype(probs.dtype))
    return probs, s

  def _move(self, s, player, row, legal):
    """The move policy ``[A]`` at table row ``row`` of ``player``."""
    def pick(tables):
      return jnp.where(player == 1, tables[1][row], tables[0][row])

    if isinstance(self.solver, OOS):
      if self.play == "current":
        return sequence_form.regret_matching(pick(s.regrets), legal)
      return sequence_form.normalize(pick(s.cum_policy), legal)
    cum = None if s.cum_policy is None else pick(s.cum_policy)
    return self.solver.move_policy(pick(s.visits), cum, legal)

  def memory_array(self, state):
    """int32 ``[2, 2]``: each player's table's ``(rows in use, refused inserts)`` (traceable;
    the match referee keeps its largest values, see :class:`~jaxgt.evaluation.match.MatchResult`)."""
    return jnp.stack([jnp.stack([t.size, t.refused]) for t in state.tables]).astype(jnp.int32)

  def memory(self, state) -> dict:
    """``{"rows": [n0, n1], "capacity": N, "refused": [r0, r1]}`` of the agent's tables."""
    return table_stats(state.tables)
