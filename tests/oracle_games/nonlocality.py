"""The non-locality game in Python, the test oracle of :mod:`jaxgt.games.nonlocality`.

Lisý, Lanctot, Bowling (2015), Figure 1.

Chance picks left/right (1/2 each); player 0, not seeing it, picks left/right
(``0/1``). After chance-left player 0 gets ``leftmost`` (left) or 0; after
chance-right player 1 picks at ``I`` without seeing player 0's move, paying
3 for a match, else 0. With ``leftmost = 1`` the equilibrium at ``I`` is
(1/3, 2/3), value 1; with ``leftmost = 2`` (1/6, 5/6). Public state: root,
player 0 to move, player 1 to move, or game over.
"""

from __future__ import annotations

from jaxgt.games.base import CHANCE, TERMINAL, Game

PARAMS = {"leftmost": 1.0}


class NonLocality(Game):
  name = "nonlocality"
  param_defaults = PARAMS
  num_actions = 2

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
