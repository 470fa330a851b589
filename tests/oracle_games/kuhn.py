"""Kuhn poker in Python, the test oracle of :mod:`jaxgt.games.kuhn` (OpenSpiel's rules; value -1/18).

Three cards ``0 < 1 < 2``, ante 1, one card each (player 0 first); ``0``
pass, ``1`` bet. Betting ends after ``pp`` (showdown for 1), ``bp``/``pbp``
(fold), ``bb``/``pbb`` (showdown for 2). Information states are OpenSpiel's
(card then betting, e.g. ``"1pb"``); public state: cards dealt and betting.
"""

from __future__ import annotations

from jaxgt.games.base import CHANCE, TERMINAL, Game

PARAMS = {"players": 2}


class KuhnPoker(Game):
  name = "kuhn_poker"
  param_defaults = PARAMS
  num_actions = 2
  big_blind = 1.0

  # state: (cards: tuple[int, ...], bets: str)
  def initial_state(self):
    return ((), "")

  def current_player(self, s):
    cards, bets = s
    if len(cards) < 2:
      return CHANCE
    if bets in ("pp", "bp", "bb", "pbp", "pbb"):
      return TERMINAL
    return len(bets) % 2

  def legal_actions(self, s):
    return [0, 1]

  def chance_outcomes(self, s):
    rest = [c for c in range(3) if c not in s[0]]
    return [(c, 1.0 / len(rest)) for c in rest]

  def next_state(self, s, a):
    cards, bets = s
    if len(cards) < 2:
      return (cards + (a,), bets)
    return (cards, bets + "pb"[a])

  def returns(self, s):
    cards, bets = s
    if bets in ("bp", "pbp"):          # the player who passed last folded
      winner = 0 if bets == "bp" else 1
      amount = 1.0
    else:
      winner = 0 if cards[0] > cards[1] else 1
      amount = 2.0 if "b" in bets else 1.0
    u0 = amount if winner == 0 else -amount
    return (u0, -u0)

  def information_state(self, s, player):
    cards, bets = s
    return f"{cards[player]}{bets}" if len(cards) > player else bets

  def public_state(self, s):
    return (len(s[0]), s[1])

  def action_string(self, a):
    return ("Pass", "Bet")[a]

  def openspiel_game_string(self):
    return "kuhn_poker"
