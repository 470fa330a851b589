"""Python twins of jaxgt's games (one state at a time, :class:`jaxgt.games.base.Game`).

Test oracles only: the library's games are device games (:mod:`jaxgt.games.device`);
each test compiles both and compares the arrays, keys and fingerprints
(:func:`assert_same_compiled`).
"""

import jax
import numpy as np


def assert_same_compiled(a, b):
  """Two :class:`~jaxgt.core.game_tree.CompiledGame` s have equal arrays, information-state
  keys (strings), augmented keys, public-state names and fingerprints."""
  la, lb = jax.tree_util.tree_leaves(a.tree), jax.tree_util.tree_leaves(b.tree)
  assert len(la) == len(lb)
  for x, y in zip(la, lb):
    np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
  assert a.tree.depth_levels == b.tree.depth_levels
  for p in (0, 1):
    assert a.tree.players[p].levels == b.tree.players[p].levels
    assert a.tree.players[p].terminal_blocks == b.tree.players[p].terminal_blocks
  assert a.infostate_keys == b.infostate_keys
  assert a.aug_keys == b.aug_keys
  np.testing.assert_array_equal(a.aug, b.aug)
  assert a.public_keys == b.public_keys
  assert a.fingerprint == b.fingerprint


class HostRules:
  """A device game read one state at a time with a Python game's method names (jitted device
  functions; strings through ``info_string`` / ``public_name``), for tests that walk a game."""

  def __init__(self, game):
    self.game = game
    self.name, self.num_actions, self.params = game.name, game.num_actions, game.params
    self._player = jax.jit(game.current_player)
    self._legal = jax.jit(game.legal_mask)
    self._probs = jax.jit(game.chance_probs)
    self._step = jax.jit(game.step)
    self._returns = jax.jit(game.returns)
    self._keys = jax.jit(lambda s: (game.info_key(s, 0), game.info_key(s, 1), game.public_key(s)))

  def initial_state(self):
    return self.game.init()

  def current_player(self, s):
    return int(self._player(s))

  def legal_actions(self, s):
    return np.flatnonzero(np.asarray(self._legal(s))).tolist()

  def chance_outcomes(self, s):
    probs = np.asarray(self._probs(s), np.float64)
    return [(int(a), float(probs[a])) for a in np.flatnonzero(probs > 0)]

  def next_state(self, s, a):
    return self._step(s, np.int32(a))

  def returns(self, s):
    return tuple(float(x) for x in self._returns(s))

  def information_state(self, s, p):
    return self.game.info_string(np.asarray(self._keys(s)[p]), p)

  def public_state(self, s):
    return self.game.public_name(np.asarray(self._keys(s)[2]))


def oracle_of(game):
  """The Python oracle of device game ``game`` (the class of the same name in
  ``oracle_games.<module>``, same parameters); a Python game is its own."""
  import importlib

  from jaxgt.games.device import DeviceGame
  if not isinstance(game, DeviceGame):
    return game
  module = importlib.import_module("oracle_games." + type(game).__module__.rsplit(".", 1)[1])
  return getattr(module, type(game).__name__)(**game.params)
