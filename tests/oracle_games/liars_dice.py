"""Liar's Dice LD(D1, D2) in Python, the test oracle of :mod:`jaxgt.games.liars_dice`.

Lisy, Lanctot, Bowling 2015, Sec. 4.3 "Domains".

Player ``i`` rolls ``D_i`` dice with ``dice_sides`` faces (player 0's dice
first, one chance node per die). Players then alternate bids, player 0
first; a bid ``q-f`` claims that at least ``q`` of all dice show face ``f``,
and the highest face is wild (it matches every face). Each bid must be a
higher bid id than the last; ``Liar`` (only after a bid) ends the game: the
bid holds -> the caller loses, otherwise the caller wins (+-1).

The paper's dice (faces 1..5 and a wild star) are ``dice_sides=6``. With
equal counts (``numdice``) the game is OpenSpiel's ``liars_dice`` (both
``bidding_rule`` values): same action ids (``Liar`` = ``(D1 + D2) * sides``),
chance outcomes, tree and strings (sorted own dice then the bids, e.g.
``"3 1-4 2-2"``). ``numdice1``/``numdice2`` (0 = ``numdice``) give the
paper's unequal LD(D1, D2). Public state: dice rolled and the bids.
"""

from __future__ import annotations

from jaxgt.games.base import CHANCE, TERMINAL, Game

PARAMS = {"numdice": 1, "numdice1": 0, "numdice2": 0, "dice_sides": 6,
          "bidding_rule": "reset-face"}
_RULES = ("reset-face", "reset-quantity")

# State: (player, faces in roll order, (s0, s1) sorted dice strings once rolled,
#         bids as in OpenSpiel's strings e.g. " 1-4 2-2", last bid id or -1, player 0's return)


class LiarsDice(Game):
  name = "liars_dice"
  param_defaults = PARAMS

  def __init__(self, **params):
    super().__init__(**params)
    params = self.params
    d1 = params["numdice1"] or params["numdice"]
    d2 = params["numdice2"] or params["numdice"]
    sides = params["dice_sides"]
    if min(params["numdice"], d1, d2) < 1 or min(params["numdice1"], params["numdice2"]) < 0:
      raise ValueError(f"liars_dice: dice counts must be positive, got {params}")
    if sides < 2:
      raise ValueError(f"liars_dice: dice_sides must be at least 2, got {sides}")
    if params["bidding_rule"] not in _RULES:
      raise ValueError(f"liars_dice: bidding_rule must be one of {_RULES}, "
                       f"got {params['bidding_rule']!r}")
    self.num_dice = (d1, d2)
    self.sides = sides
    total = d1 + d2
    self.liar = total * sides                      # the "Liar" action id
    self.num_actions = self.liar + 1
    face_first = params["bidding_rule"] == "reset-face"
    self._bid = [((b // sides + 1, b % sides + 1) if face_first
                  else (b % total + 1, b // total + 1)) for b in range(self.liar)]
    self._bid_str = [f" {q}-{f}" for q, f in self._bid] + [" Liar"]
    self._legal = [list(range(b + 1, self.liar)) + [self.liar] for b in range(self.liar)]
    self._legal_first = list(range(self.liar))
    self._chance = [(k, 1.0 / sides) for k in range(sides)]

  def initial_state(self):
    return (CHANCE, (), None, "", -1, 0.0)

  def current_player(self, s):
    return s[0]

  def legal_actions(self, s):
    return self._legal_first if s[4] < 0 else self._legal[s[4]]

  def chance_outcomes(self, s):
    return self._chance

  def next_state(self, s, a):
    player, rolls, strs, bids, last, _ = s
    if player == CHANCE:
      rolls = rolls + (a + 1,)
      if len(rolls) < self.liar // self.sides:
        return (CHANCE, rolls, None, "", -1, 0.0)
      d1 = self.num_dice[0]
      strs = ("".join(map(str, sorted(rolls[:d1]))), "".join(map(str, sorted(rolls[d1:]))))
      return (0, rolls, strs, "", -1, 0.0)
    bids = bids + self._bid_str[a]
    if a != self.liar:
      return (1 - player, rolls, strs, bids, a, 0.0)
    quantity, face = self._bid[last]
    matches = sum(1 for d in rolls if d == face or d == self.sides)
    caller_wins = matches < quantity
    u0 = 1.0 if caller_wins == (player == 0) else -1.0
    return (TERMINAL, rolls, strs, bids, last, u0)

  def returns(self, s):
    return (s[5], -s[5])

  def information_state(self, s, player):
    if s[2] is not None:
      return s[2][player] + s[3]
    # During the rolls OpenSpiel shows the dice rolled so far, unsorted, and
    # -1 for dice not rolled yet.
    d1 = self.num_dice[0]
    lo, hi = (0, d1) if player == 0 else (d1, d1 + self.num_dice[1])
    rolls = s[1]
    return "".join(str(rolls[i]) if i < len(rolls) else "-1" for i in range(lo, hi))

  def public_state(self, s):
    return (len(s[1]), s[3])

  def action_string(self, a):
    return self._bid_str[a][1:] if 0 <= a <= self.liar else str(a)

  def openspiel_game_string(self):
    d1, d2 = self.num_dice
    if d1 != d2:
      return None
    return (f"liars_dice(bidding_rule={self.params['bidding_rule']},"
            f"dice_sides={self.sides},numdice={d1})")
