"""The non-locality game of Lisý, Lanctot, Bowling, "Online Monte Carlo Counterfactual Regret
Minimization for Search in Imperfect Information Games" (2015), Figure 1.

Chance picks left/right (1/2 each); player 0, not seeing it, picks left/right
(``0/1``). After chance-left player 0 gets ``leftmost`` (left) or 0; after
chance-right player 1 picks at ``I`` without seeing player 0's move, paying
3 for a match, else 0. With ``leftmost = 1`` the equilibrium at ``I`` is
(1/3, 2/3), value 1; with ``leftmost = 2`` (1/6, 5/6). Information states:
player 0 ``""``, ``"max"``, ``"max:<move>"``; player 1 ``""``, ``"I"``.
Public state: ``"root"``, ``"max to move"``, ``"I"``, or game over (with
chance's ``0`` after chance-left: ``("over", 0)``, else ``("over",)``).
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from jaxgt import struct
from jaxgt.games.base import CHANCE, TERMINAL
from jaxgt.games.device import DeviceGame

PARAMS = {"leftmost": 1.0}
_PUBLIC = ("root", "max to move", "I", ("over", 0), ("over",))


@struct.dataclass
class NonLocalityState:
  actions: jnp.ndarray  # [3] int32 chance's side, player 0's and player 1's moves; -1 before
  num_actions: jnp.ndarray  # [] int32 steps taken


class NonLocality(DeviceGame):
  name = "nonlocality"
  param_defaults = PARAMS
  num_actions = 2
  num_outcomes = 2
  max_length = 3
  info_key_width = 1  # player 0: 0 root, 1 to move, 2 + move after; player 1: 0 or 1 (at I)
  public_key_width = 1  # an index into _PUBLIC
  info_feature_size = 4
  public_feature_size = len(_PUBLIC)

  def init(self):
    return NonLocalityState(actions=jnp.full(3, -1, jnp.int32), num_actions=jnp.int32(0))

  def current_player(self, s):
    n, side = s.num_actions, s.actions[0]
    over = ((n == 2) & (side == 0)) | (n == 3)
    return jnp.where(n == 0, CHANCE, jnp.where(n == 1, 0, jnp.where(over, TERMINAL, 1))
                     ).astype(jnp.int32)

  def legal_mask(self, s):
    p = self.current_player(s)
    return jnp.broadcast_to((p == 0) | (p == 1), (2,))

  def chance_probs(self, s):
    return jnp.where(s.num_actions == 0, jnp.full(2, 0.5), 0.0)

  def step(self, s, action):
    live = self.current_player(s) != TERMINAL
    actions = jnp.where(live & (jnp.arange(3) == s.num_actions), action, s.actions)
    return NonLocalityState(actions=actions.astype(jnp.int32),
                            num_actions=(s.num_actions + live).astype(jnp.int32))

  def returns(self, s):
    side, a0, a1 = s.actions[0], s.actions[1], s.actions[2]
    u0 = jnp.where(side == 0, jnp.where(a0 == 0, self.params["leftmost"], 0.0),
                   jnp.where(a0 == a1, 3.0, 0.0))
    u0 = jnp.where(self.current_player(s) == TERMINAL, u0, 0.0)
    return jnp.stack([u0, -u0])

  def _info_code(self, s, player):
    n = s.num_actions
    if player == 0:
      return jnp.where(n == 0, 0, jnp.where(n == 1, 1, 2 + s.actions[1]))
    return (n >= 2).astype(jnp.int32)

  def info_key(self, s, player):
    return jnp.reshape(self._info_code(s, player), (1,)).astype(jnp.int32)

  def info_features(self, s, player):
    return (jnp.arange(4) == self._info_code(s, player)).astype(jnp.float32)

  def _public_code(self, s):
    n, side = s.num_actions, s.actions[0]
    over = self.current_player(s) == TERMINAL
    return jnp.where(over, jnp.where(side == 0, 3, 4), jnp.minimum(n, 2))

  def public_key(self, s):
    return jnp.reshape(self._public_code(s), (1,)).astype(jnp.int32)

  def public_features(self, s):
    return (jnp.arange(len(_PUBLIC)) == self._public_code(s)).astype(jnp.float32)

  # host side
  def info_string(self, key, player):
    code = int(np.asarray(key).reshape(-1)[0])
    if player == 1:
      return "I" if code else ""
    return ("", "max", "max:left", "max:right")[code]

  def public_name(self, key):
    return _PUBLIC[int(np.asarray(key).reshape(-1)[0])]

  def action_string(self, a):
    return ("left", "right")[a]
