"""Rock-Paper-Scissors+ in Python, the test oracle of :mod:`jaxgt.games.rps_plus`.

A sequential game (Brown, Sandholm, Amos 2018, Fig. 1a).

Player 0 picks Rock/Paper/Scissors (``0/1/2``), then player 1 without seeing
it; a win involving Scissors pays ``scissors_payoff`` (2) instead of 1. The
unique equilibrium is (0.4, 0.4, 0.2) for both, value 0. Public state: moves made.
"""

from __future__ import annotations

from jaxgt.games.base import TERMINAL, Game

PARAMS = {"scissors_payoff": 2.0}
_BEATS = {(0, 2), (1, 0), (2, 1)}


class RockPaperScissorsPlus(Game):
  name = "rps_plus"
  param_defaults = PARAMS
  num_actions = 3
  public_actions = False  # player 1 never sees player 0's move

  def __init__(self, **params):
    super().__init__(**params)
    if not self.params["scissors_payoff"] > 0:
      raise ValueError("rps_plus: scissors_payoff must be positive")

  def initial_state(self):
    return ()

  def current_player(self, s):
    return TERMINAL if len(s) == 2 else len(s)

  def legal_actions(self, s):
    return [0, 1, 2]

  def next_state(self, s, a):
    return s + (a,)

  def returns(self, s):
    a, b = s
    if a == b:
      return (0.0, 0.0)
    amount = self.params["scissors_payoff"] if 2 in (a, b) else 1.0
    u0 = amount if (a, b) in _BEATS else -amount
    return (u0, -u0)

  def information_state(self, s, player):
    # Player 1 does not see player 0's move; player 0 remembers its own.
    if player == 0 and s:
      return f"p0:{s[0]}"
    return f"p{player}"

  def public_state(self, s):
    return len(s)

  def action_string(self, a):
    return ("Rock", "Paper", "Scissors")[a]
