"""The non-locality game of Lisý, Lanctot, Bowling (2015), Figure 1.

Chance picks left/right with probability 1/2 each. The maximizing player 0
cannot tell which and picks left/right (``0/1``). After chance-left the game
ends with payoff ``leftmost`` (player 0 left) or 0 (right). After chance-right
player 1 (minimizing) acts at information set ``I`` without seeing player 0's
move; payoffs to player 0 are 3/0 after player 0 left and 0/3 after right.
With ``leftmost = 1`` the equilibrium at ``I`` is (1/3, 2/3) and the value 1;
with ``leftmost = 2`` it is (1/6, 5/6).
Public state: root, player 0 to move, player 1 to move (which reveals that
chance went right), or game over.
"""

from __future__ import annotations

from jaxgt.games.base import CHANCE, TERMINAL, Game, check_params

PARAMS = {"leftmost": 1.0}


class NonLocality(Game):
  name = "nonlocality"
  param_defaults = PARAMS
  num_actions = 2

  def __init__(self, **params):
    params = check_params(self.name, params, PARAMS)
    super().__init__(**params)

  # state: tuple of actions: (chance, p0 action[, p1 action])
  def initial_state(self):
    return ()

  def current_player(self, s):
    if len(s) == 0:
      return CHANCE
    if len(s) == 1:
      return 0
    if s[0] == 0 or len(s) == 3:
      return TERMINAL
    return 1

  def legal_actions(self, s):
    return [0, 1]

  def chance_outcomes(self, s):
    return [(0, 0.5), (1, 0.5)]

  def next_state(self, s, a):
    return s + (a,)

  def returns(self, s):
    if s[0] == 0:
      u0 = self.params["leftmost"] if s[1] == 0 else 0.0
    else:
      u0 = 3.0 if s[1] == s[2] else 0.0
    return (float(u0), -float(u0))

  def information_state(self, s, player):
    if player == 0:  # after its move player 0 remembers it (perfect recall)
      return "" if len(s) == 0 else ("max" if len(s) == 1 else f"max:{self.action_string(s[1])}")
    return "I" if len(s) >= 2 else ""

  def public_state(self, s):
    if len(s) == 0:
      return "root"
    if len(s) == 1:
      return "max to move"
    if self.current_player(s) == 1:
      return "I"
    return ("over",) + ((s[0],) if s[0] == 0 else ())

  def action_string(self, a):
    return ("left", "right")[a]
