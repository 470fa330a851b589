"""Rock-Paper-Scissors+ as a sequential game (Brown, Sandholm, Amos, "Depth-Limited Solving for
Imperfect-Information Games", 2018, Fig. 1a).

Player 0 picks Rock/Paper/Scissors (``0/1/2``), then player 1 without seeing
it; a win involving Scissors pays ``scissors_payoff`` (2) instead of 1. The
unique equilibrium is (0.4, 0.4, 0.2) for both, value 0. Information states:
``"p0"``, ``"p0:<move>"`` (player 0 remembers its move) and ``"p1"``; public
state: the number of moves made. No chance.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from jaxgt import struct
from jaxgt.games.base import TERMINAL
from jaxgt.games.device import DeviceGame

PARAMS = {"scissors_payoff": 2.0}
_MOVES = 3


@struct.dataclass
class RPSState:
  moves: jnp.ndarray  # [2] int32 each player's move, -1 before it is made
  num_moves: jnp.ndarray  # [] int32


class RockPaperScissorsPlus(DeviceGame):
  name = "rps_plus"
  param_defaults = PARAMS
  num_actions = _MOVES
  public_actions = False  # player 1 never sees player 0's move
  max_length = 2
  info_key_width = 1  # player 0: its move or -1; player 1: 0
  public_key_width = 1  # moves made
  info_feature_size = _MOVES
  public_feature_size = 3

  def __init__(self, **params):
    super().__init__(**params)
    if not self.params["scissors_payoff"] > 0:
      raise ValueError("rps_plus: scissors_payoff must be positive")

  def init(self):
    return RPSState(moves=jnp.full(2, -1, jnp.int32), num_moves=jnp.int32(0))

  def current_player(self, s):
    return jnp.where(s.num_moves == 2, TERMINAL, s.num_moves).astype(jnp.int32)

  def legal_mask(self, s):
    return jnp.broadcast_to(s.num_moves < 2, (_MOVES,))

  def chance_probs(self, s):
    return jnp.zeros(0)

  def step(self, s, action):
    acting = s.num_moves < 2
    moves = jnp.where(acting & (jnp.arange(2) == s.num_moves), action, s.moves)
    return RPSState(moves=moves.astype(jnp.int32),
                    num_moves=(s.num_moves + acting).astype(jnp.int32))

  def returns(self, s):
    a, b = s.moves[0], s.moves[1]
    amount = jnp.where((a == 2) | (b == 2), self.params["scissors_payoff"], 1.0)
    wins = (a - b) % _MOVES == 1  # paper beats rock, scissors paper, rock scissors
    u0 = jnp.where(a == b, 0.0, jnp.where(wins, amount, -amount))
    u0 = jnp.where(s.num_moves == 2, u0, 0.0)
    return jnp.stack([u0, -u0])

  def info_key(self, s, player):
    own = s.moves[0] if player == 0 else jnp.int32(0)
    return jnp.reshape(own, (1,)).astype(jnp.int32)

  def info_features(self, s, player):
    if player == 1:
      return jnp.zeros(_MOVES, jnp.float32)
    return (jnp.arange(_MOVES) == s.moves[0]).astype(jnp.float32)

  def public_key(self, s):
    return jnp.reshape(s.num_moves, (1,)).astype(jnp.int32)

  def public_features(self, s):
    return (jnp.arange(3) == s.num_moves).astype(jnp.float32)

  # host side
  def info_string(self, key, player):
    own = int(np.asarray(key).reshape(-1)[0])
    return f"p0:{own}" if player == 0 and own >= 0 else f"p{player}"

  def public_name(self, key):
    return int(np.asarray(key).reshape(-1)[0])

  def action_string(self, a):
    return ("Rock", "Paper", "Scissors")[a]
