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


def oracle_of(game):
  """The Python oracle of device game ``game`` (the class of the same name in
  ``oracle_games.<module>``, same parameters); a Python game is its own."""
  import importlib

  from jaxgt.games.device import DeviceGame
  if not isinstance(game, DeviceGame):
    return game
  module = importlib.import_module("oracle_games." + type(game).__module__.rsplit(".", 1)[1])
  return getattr(module, type(game).__name__)(**game.params)
