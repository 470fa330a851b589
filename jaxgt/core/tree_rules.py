"""A compiled game read through the device game protocol: the state is a history index.

:class:`TreeRules` makes every :class:`~jaxgt.core.game_tree.CompiledGame`
(including OpenSpiel imports and user games written in Python) a
:class:`~jaxgt.games.device.DeviceGame`, so code written against the protocol
runs on enumerated games and on games given only by their rules alike.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from jaxgt.games.base import CHANCE, TERMINAL
from jaxgt.games.device import DeviceGame


class TreeRules(DeviceGame):
  """The device rules of a compiled game (state: int32 ``[]`` history index).

  Information-state keys are ``[1]`` ids of the information-state strings
  (both players, acting or not), public keys ``[1]`` public-state indices;
  ``info_string`` and ``public_name`` give back the compiled names.
  """

  def __init__(self, compiled, dtype=None):
    """The rules of ``compiled`` with chance probabilities and returns in ``dtype`` (float32
    by default; float64 needs x64, and is what enumeration reads)."""
    g, t = compiled.game, compiled.tree
    self.compiled = compiled
    self.name, self.params, self.param_defaults = g.name, dict(g.params), dict(g.param_defaults)
    self.num_actions, self.big_blind, self.public_actions = (
        g.num_actions, g.big_blind, g.public_actions)
    self.num_outcomes = int(np.asarray(t.children).shape[1])
    self.max_length = int(t.max_depth)
    key_ids, names = [], []
    for p in (0, 1):  # one id per distinct string among the augmented information states
      uniq = {}
      per_aug = np.array([uniq.setdefault(k, len(uniq)) for k in compiled.aug_keys[p]] + [-1],
                         np.int32)
      key_ids.append(per_aug[compiled.aug[p]])  # aug -1 (terminal) maps to the -1 appended
      names.append(tuple(uniq))
    self._names = tuple(names)
    tree = compiled.device_tree(dtype)
    self.tree = tree  # the device GameTree these rules read
    payoff = np.zeros(t.num_histories)
    payoff[np.asarray(t.terminal_history)] = np.asarray(t.terminal_payoff)
    self._payoff = jnp.asarray(payoff, tree.chance_probs.dtype)
    self._keys = jnp.asarray(np.stack(key_ids))

  def game_string(self) -> str:
    return self.compiled.game.game_string()

  def openspiel_game_string(self):
    return self.compiled.game.openspiel_game_string()

  def action_string(self, action: int) -> str:
    return self.compiled.game.action_string(action)

  def init(self):
    return jnp.int32(0)

  def current_player(self, h):
    return self.tree.player[h]

  def legal_mask(self, h):
    acting = (self.tree.player[h] == 0) | (self.tree.player[h] == 1)
    return (self.tree.children[h, :self.num_actions] >= 0) & acting

  def chance_probs(self, h):
    return jnp.where(self.tree.player[h] == CHANCE, self.tree.chance_probs[h], 0.0)

  def step(self, h, action):
    child = self.tree.children[h, action]
    return jnp.where(self.tree.player[h] == TERMINAL, h, child).astype(jnp.int32)

  def returns(self, h):
    u = jnp.where(self.tree.player[h] == TERMINAL, self._payoff[h], 0.0)
    return jnp.stack([u, -u])

  def info_key(self, h, player: int):
    return self._keys[player, h][None]

  def public_key(self, h):
    return self.tree.history_public[h][None]

  def info_string(self, key, player: int) -> str:
    return self._names[player][int(np.asarray(key).reshape(-1)[0])]

  def public_name(self, key):
    return self.compiled.public_keys[int(np.asarray(key).reshape(-1)[0])]


def rules_of(game, dtype=None) -> DeviceGame:
  """The device rules of ``game``: a device game's own, a compiled game's
  (:meth:`~jaxgt.core.game_tree.CompiledGame.rules`, floats in ``dtype``); ``TypeError`` for
  anything else (a Python game is compiled first)."""
  if isinstance(game, DeviceGame):
    return game
  rules = getattr(game, "rules", None)
  if rules is None or not hasattr(game, "tree"):
    raise TypeError(f"expected a DeviceGame or a CompiledGame (compile a Python game first), "
                    f"got {type(game).__name__}")
  return rules(dtype)
