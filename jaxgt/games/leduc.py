"""Leduc hold'em, identical to OpenSpiel's ``leduc_poker`` (two players).

Six cards ``0..5`` (rank ``card // 2``); ante 1, one private card each,
betting round 1 (raise 2), a public card, round 2 (raise 4); at most two
raises per round, player 0 opens. ``0`` fold (facing a bet), ``1``
call/check, ``2`` raise. A pair with the public card wins, else the higher
rank; equal ranks split. Information states are OpenSpiel's strings; public
state: cards dealt, the public card, both rounds' actions. Private states: a
player's card (``K_p = 6``). Big blind: one chip. The rules are Generic
Poker's GP(3, 2, 1, 1) with suits as labels
(:class:`jaxgt.games.generic_poker.TwoRoundPoker`).

``suit_isomorphism=True`` (OpenSpiel's parameter, the same game as its
``leduc_poker(suit_isomorphism=True)``): chance deals ranks ``0..2`` (rank
``r`` with probability copies of ``r`` left / cards left) and the strings
show ranks; information states that differ only by suits are one
(``K_p = 3``). The suits never matter to payoffs, so it is the full game's
quotient by the suit permutation (1939 histories and 144 information states
per player against 9457 and 468): a strategy of it, played in the full game
at every information state with the same ranks (:func:`suit_isomorphic_key`,
:func:`jaxgt.policy.lift`), has the same exploitability there, and CFR's
iterates on it are the full game's iterates (float64: equal to rounding).
"""

from __future__ import annotations

import re

from jaxgt.games.base import CHANCE
from jaxgt.games.generic_poker import TwoRoundPoker

PARAMS = {"players": 2, "suit_isomorphism": False}
_STACK = 100
_SUITS = 2
_RANKS = 3


class LeducPoker(TwoRoundPoker):
  name = "leduc_poker"
  param_defaults = PARAMS
  max_raises = 1
  num_bets = 1
  key_has_player = True  # OpenSpiel's strings show whose turn it is

  def __init__(self, **params):
    super().__init__(**params)
    iso = self.params["suit_isomorphism"]
    self.suits = 1 if iso else _SUITS  # cards of a rank told apart
    self.num_cards, self.copies = _RANKS * self.suits, _SUITS // self.suits
    self.set_shapes()

  def info_string(self, key, player):
    own, pub, cur, (r1, r2) = self.key_parts(key)
    c = self.contributions(r1, r2)
    # OpenSpiel's round counter moves to 2 as soon as round 1's betting ends.
    rnd = 2 if pub >= 0 or (cur == CHANCE and r1) else 1
    private = own if own >= 0 else -10000
    out = (f"[Observer: {player}][Private: {private}][Round {rnd}][Player: {cur}]"
           f"[Pot: {c[0] + c[1]}][Money: {_STACK - c[0]} {_STACK - c[1]}]")
    if pub >= 0:
      out += f"[Public: {pub}]"
    out += f"[Round1: {' '.join(map(str, r1))}][Round2: {' '.join(map(str, r2))}]"
    return out

  def public_name(self, key):
    return self.public_parts(key)

  def action_string(self, a):
    return ("Fold", "Call", "Raise")[a]

  def openspiel_game_string(self):
    return self.game_string()


_CARD = re.compile(r"\[(Private|Public): (\d+)\]")


def suit_isomorphic_key(key: str) -> str:
  """The ``leduc_poker(suit_isomorphism=True)`` information state of a ``leduc_poker`` one
  (its cards replaced by their ranks), for :func:`jaxgt.policy.lift`."""
  return _CARD.sub(lambda m: f"[{m.group(1)}: {int(m.group(2)) // _SUITS}]", key)
