"""Leduc hold'em in Python, the test oracle of :mod:`jaxgt.games.leduc` (OpenSpiel's ``leduc_poker``).

Six cards ``0..5`` (rank ``card // 2``); ante 1, one private card each,
betting round 1 (raise 2), a public card, round 2 (raise 4); at most two
raises per round, player 0 opens. ``0`` fold (facing a bet), ``1``
call/check, ``2`` raise. A pair with the public card wins, else the higher
rank; equal ranks split. Information states are OpenSpiel's strings; public
state: cards dealt, the public card, both rounds' actions. Big blind: one chip.

``suit_isomorphism=True`` (OpenSpiel's parameter, the same game as its
``leduc_poker(suit_isomorphism=True)``): chance deals ranks ``0..2`` (rank
``r`` with probability copies of ``r`` left / cards left) and the strings
show ranks; information states that differ only by suits are one. The suits
never matter to payoffs, so it is the full game's quotient by the suit
permutation (1939 histories and 144 information states per player against
9457 and 468): a strategy of it, played in the full game at every
information state with the same ranks (:func:`jaxgt.games.leduc.suit_isomorphic_key`,
:func:`jaxgt.policy.lift`), has the same exploitability there, and CFR's
iterates on it are the full game's iterates (float64: equal to rounding).
"""

from __future__ import annotations

from jaxgt.games.base import CHANCE, TERMINAL, Game

PARAMS = {"players": 2, "suit_isomorphism": False}
_STACK = 100
_SUITS = 2
_RANKS = 3


def _round_over(acts) -> bool:
  return len(acts) >= 2 and acts[-1] == 1


def _contributions(r1, r2):
  c = [1, 1]
  for acts, size in ((r1, 2), (r2, 4)):
    for i, a in enumerate(acts):
      p = i % 2
      if a == 1:
        c[p] = max(c)
      elif a == 2:
        c[p] = max(c) + size
  return c


class LeducPoker(Game):
  name = "leduc_poker"
  param_defaults = PARAMS
  num_actions = 3
  big_blind = 1.0

  def __init__(self, **params):
    super().__init__(**params)
    self._suits = 1 if self.params["suit_isomorphism"] else _SUITS  # cards of a rank told apart

  # state: (private cards tuple, public card or None, round1 actions, round2 actions)
  def initial_state(self):
    return ((), None, (), ())

  def current_player(self, s):
    priv, pub, r1, r2 = s
    if len(priv) < 2:
      return CHANCE
    acts = r1 if pub is None else r2
    if acts and acts[-1] == 0:
      return TERMINAL
    if pub is None:
      return CHANCE if _round_over(r1) else len(r1) % 2
    return TERMINAL if _round_over(r2) else len(r2) % 2

  def legal_actions(self, s):
    acts = s[2] if s[1] is None else s[3]
    return ([0] if acts and acts[-1] == 2 else []) + [1] + ([2] if acts.count(2) < 2 else [])

  def chance_outcomes(self, s):
    priv, k = s[0], self._suits
    left = [_SUITS // k - priv.count(d) for d in range(_RANKS * k)]  # copies of each card left
    return [(c, n / sum(left)) for c, n in enumerate(left) if n > 0]

  def next_state(self, s, a):
    priv, pub, r1, r2 = s
    if len(priv) < 2:
      return (priv + (a,), pub, r1, r2)
    if pub is None:
      if _round_over(r1):
        return (priv, a, r1, r2)
      return (priv, pub, r1 + (a,), r2)
    return (priv, pub, r1, r2 + (a,))

  def returns(self, s):
    priv, pub, r1, r2 = s
    c = _contributions(r1, r2)
    acts = r1 if pub is None else r2
    if acts and acts[-1] == 0:
      folder = (len(acts) - 1) % 2
      u0 = -c[0] if folder == 0 else c[1]
      return (float(u0), float(-u0))
    ranks = [self._rank(priv[p] // self._suits, pub // self._suits) for p in (0, 1)]
    if ranks[0] == ranks[1]:
      return (0.0, 0.0)
    u0 = c[1] if ranks[0] > ranks[1] else -c[0]
    return (float(u0), float(-u0))

  @staticmethod
  def _rank(r, rp):
    """Showdown strength of rank ``r`` with the public card's rank ``rp``."""
    return 100 + r if r == rp else r

  def information_state(self, s, player):
    priv, pub, r1, r2 = s
    c = _contributions(r1, r2)
    cur = self.current_player(s)
    # OpenSpiel's round counter moves to 2 as soon as round 1's betting ends.
    rnd = 2 if pub is not None or (cur == CHANCE and len(priv) == 2) else 1
    private = priv[player] if len(priv) > player else -10000
    out = (f"[Observer: {player}][Private: {private}][Round {rnd}][Player: {cur}]"
           f"[Pot: {c[0] + c[1]}][Money: {_STACK - c[0]} {_STACK - c[1]}]")
    if pub is not None:
      out += f"[Public: {pub}]"
    out += f"[Round1: {' '.join(map(str, r1))}][Round2: {' '.join(map(str, r2))}]"
    return out

  def public_state(self, s):
    priv, pub, r1, r2 = s
    return (len(priv), pub, r1, r2)

  def action_string(self, a):
    return ("Fold", "Call", "Raise")[a]

  def openspiel_game_string(self):
    return self.game_string()
