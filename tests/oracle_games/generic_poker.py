"""Generic Poker in Python, the test oracle of :mod:`jaxgt.games.generic_poker` (GP(T, C, R, B)).

Generic Poker of Lisy, Lanctot and Bowling (AAMAS 2015, Sec. 5).

Both players ante one chip and get a private card; a betting round, one
public card, a second betting round, showdown: a private card matching the
table card wins, else the higher card; otherwise the pot is split. ``T``
card types, ``C`` cards of each, ``R`` raises per round after the opening
bet, ``B`` bet sizes (the paper's experiments: GP(3,3,2,2)).

Left open by the paper, taken from Leduc hold'em (GP(3,2,1,1)): sizes ``2,
4, ..., 2B`` in round 1 and ``4, ..., 4B`` in round 2, a raise first matching
the bet; player 0 opens both rounds; a round ends on check-check or a call;
fold only facing a bet; stacks never bind; chance deals card *types* (type
``t`` with probability copies left / cards left).

Actions: ``0`` fold, ``1`` check/call, ``2 + k`` bet/raise of size ``k``.
Information states, e.g. ``[Player: 1][Private: 2][Public: 0][Round1: b2 c]
[Round2: k b4][Pot: 7 3]`` (``k`` check, ``c`` call, ``f`` fold, ``b``/``r``
bet/raise with its size, chips per player). Public state: cards dealt, table
card, betting. OpenSpiel's ``universal_poker`` expresses GP(T, C, R, 1) with
``C`` suits as strategically irrelevant labels (:meth:`openspiel_game_string`:
same value, same tree size for ``C = 1``).
"""

from __future__ import annotations

from jaxgt.games.base import CHANCE, TERMINAL, Game

PARAMS = {"T": 3, "C": 3, "R": 2, "B": 2}
FOLD, CALL = 0, 1


def _round_over(acts) -> bool:
  return len(acts) >= 2 and acts[-1] == CALL


class GenericPoker(Game):
  name = "generic_poker"
  param_defaults = PARAMS
  big_blind = 1.0

  def __init__(self, **params):
    super().__init__(**params)
    t, c, r, b = (self.params[k] for k in "TCRB")
    if t < 1 or c < 1 or t * c < 3:
      raise ValueError(f"generic_poker: need T >= 1, C >= 1 and T*C >= 3 cards "
                       f"(two private, one public); got T={t}, C={c}")
    if r < 0:
      raise ValueError(f"generic_poker: R (raises per round) must be >= 0; got {r}")
    if b < 1:
      raise ValueError(f"generic_poker: B (bet sizes) must be >= 1; got {b}")
    self.num_actions = 2 + b
    self.sizes = (tuple(2 * (k + 1) for k in range(b)), tuple(4 * (k + 1) for k in range(b)))

  # state: (dealt card types: priv0, priv1, table; round-1 actions; round-2 actions)
  def initial_state(self):
    return ((), (), ())

  def current_player(self, s):
    cards, r1, r2 = s
    acts = r1 if len(cards) < 3 else r2
    if len(cards) < 2:
      return CHANCE
    if acts and acts[-1] == FOLD:
      return TERMINAL
    if len(cards) == 2:
      return CHANCE if _round_over(r1) else len(r1) % 2
    return TERMINAL if _round_over(r2) else len(r2) % 2

  def legal_actions(self, s):
    acts = s[1] if len(s[0]) < 3 else s[2]
    legal = [FOLD] if acts and acts[-1] >= 2 else []
    legal.append(CALL)
    if sum(a >= 2 for a in acts) <= self.params["R"]:
      legal.extend(range(2, self.num_actions))
    return legal

  def chance_outcomes(self, s):
    cards = s[0]
    c, left = self.params["C"], self.params["T"] * self.params["C"] - len(cards)
    out = []
    for t in range(self.params["T"]):
      n = c - cards.count(t)
      if n > 0:
        out.append((t, n / left))
    return out

  def next_state(self, s, a):
    cards, r1, r2 = s
    if len(cards) < 2 or (len(cards) == 2 and _round_over(r1)):
      return (cards + (a,), r1, r2)
    if len(cards) == 2:
      return (cards, r1 + (a,), r2)
    return (cards, r1, r2 + (a,))

  def _contributions(self, r1, r2):
    c = [1, 1]
    for acts, sizes in zip((r1, r2), self.sizes):
      for i, a in enumerate(acts):
        if a == CALL:
          c[i % 2] = max(c)
        elif a >= 2:
          c[i % 2] = max(c) + sizes[a - 2]
    return c

  def returns(self, s):
    cards, r1, r2 = s
    c = self._contributions(r1, r2)
    acts = r1 if len(cards) < 3 else r2
    if acts and acts[-1] == FOLD:
      u0 = -c[0] if (len(acts) - 1) % 2 == 0 else c[1]
      return (float(u0), float(-u0))
    table = cards[2]
    strength = [(cards[p] == table, cards[p]) for p in (0, 1)]
    if strength[0] == strength[1]:
      return (0.0, 0.0)
    u0 = c[1] if strength[0] > strength[1] else -c[0]
    return (float(u0), float(-u0))

  def _betting(self, acts, sizes):
    out, facing = [], False
    for a in acts:
      if a == FOLD:
        out.append("f")
      elif a == CALL:
        out.append("c" if facing else "k")
        facing = False
      else:
        out.append(("r" if facing else "b") + str(sizes[a - 2]))
        facing = True
    return " ".join(out)

  def information_state(self, s, player):
    cards, r1, r2 = s
    c = self._contributions(r1, r2)
    private = cards[player] if len(cards) > player else "?"
    table = cards[2] if len(cards) > 2 else "-"
    return (f"[Player: {player}][Private: {private}][Public: {table}]"
            f"[Round1: {self._betting(r1, self.sizes[0])}]"
            f"[Round2: {self._betting(r2, self.sizes[1])}][Pot: {c[0]} {c[1]}]")

  def public_state(self, s):
    cards, r1, r2 = s
    return (len(cards), cards[2] if len(cards) > 2 else None, r1, r2)

  def action_string(self, a):
    return ("Fold", "Call")[a] if a < 2 else f"Raise{a - 1}"

  def openspiel_game_string(self):
    """The suited universal_poker game with GP's value (``B = 1`` only)."""
    p = self.params
    if p["B"] != 1:
      return None
    stack = 1 + (p["R"] + 1) * (self.sizes[0][0] + self.sizes[1][0])
    return ("universal_poker(betting=limit,numPlayers=2,numRounds=2,blind=1 1,"
            f"raiseSize={self.sizes[0][0]} {self.sizes[1][0]},firstPlayer=1 1,"
            f"numSuits={p['C']},numRanks={p['T']},numHoleCards=1,numBoardCards=0 1,"
            f"maxRaises={p['R'] + 1} {p['R'] + 1},stack={stack} {stack})")
