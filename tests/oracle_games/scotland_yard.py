r"""Scotland Yard in Python, the test oracle of :mod:`jaxgt.games.scotland_yard`.

The small "glasses" map of Schmid et al. (Student of Games, 2023).

The paper (supplement, Fig. S3): Mr X starts at 6, detectives at 1 and 11,
5 taxi tickets each, 5 rounds, reward +1/-1. The map is only drawn; jaxgt
uses this reconstruction (symmetric under ``i <-> 12 - i``)::

      2 - 3                 9 - 10
     /     \               /      \
    1       4 --- 6 --- 8         11
     \     /               \      /
      5 --                   -- 7

A round is: Mr X moves, then detective 1, then detective 2, each move along
an edge using one ticket. Mr X may not move onto a detective and is caught
when he cannot move; detectives may not share a station, pass (action 11)
when they cannot move, and catch Mr X by moving onto him. Mr X's station is
revealed after his move in rounds 3, 8, 13, 18, 24 (the board game's
schedule). Payoff to Mr X: -1 if caught, +1 if free after ``rounds`` rounds.

Player 0 is Mr X, player 1 both detectives (two decisions per round); no
chance. Station ``s`` is action ``s - 1``. The public state is the sequence
of public observations; detectives see exactly it, Mr X also his path, e.g.
``[Round 2][Mover: X][Mr X: 6 4][Detectives: 2 10][Public: X D1>2 D2>10]``.

Sizes: 49,358 histories (3,944 / 3,782 information states) with the
defaults, 7,768 with ``rounds=4``. Value for Mr X: -1 with the paper's 5
rounds (the detectives can force a capture), +1 with 4 rounds or fewer.
"""

from __future__ import annotations

from jaxgt.games.base import TERMINAL, Game

NUM_STATIONS = 11
EDGES = ((1, 2), (2, 3), (3, 4), (4, 5), (5, 1), (4, 6),
         (6, 8), (7, 8), (8, 9), (9, 10), (10, 11), (11, 7))
REVEAL_ROUNDS = (3, 8, 13, 18, 24)
PASS = NUM_STATIONS
PARAMS = {"rounds": 5, "tickets": 5, "mrx_start": 6, "detective1_start": 1,
          "detective2_start": 11}

_ADJ = {s: tuple(sorted({b for a, b in EDGES if a == s} | {a for a, b in EDGES if b == s}))
        for s in range(1, NUM_STATIONS + 1)}


class ScotlandYard(Game):
  name = "scotland_yard"
  param_defaults = PARAMS
  num_actions = NUM_STATIONS + 1

  def __init__(self, **params):
    super().__init__(**params)
    params = self.params
    if not 1 <= params["rounds"] <= 24:
      raise ValueError(f"scotland_yard: rounds must be in 1..24; got {params['rounds']}")
    if params["tickets"] < 0:
      raise ValueError(f"scotland_yard: tickets must be >= 0; got {params['tickets']}")
    starts = [params[k] for k in ("mrx_start", "detective1_start", "detective2_start")]
    if any(not 1 <= s <= NUM_STATIONS for s in starts) or len(set(starts)) != 3:
      raise ValueError(f"scotland_yard: start stations must be distinct and in "
                       f"1..{NUM_STATIONS}; got {starts}")

  # state: (round, mover 0/1/2, Mr X's station, detectives' stations, Mr X's tickets,
  #         detectives' tickets, Mr X's path, public observations, caught)
  def initial_state(self):
    p = self.params
    t = p["tickets"]
    return (1, 0, p["mrx_start"], (p["detective1_start"], p["detective2_start"]), t,
            (t, t), (p["mrx_start"],), (), False)

  def _x_moves(self, s):
    _, _, x, d, xt, _, _, _, _ = s
    return [] if xt == 0 else [n for n in _ADJ[x] if n not in d]

  def current_player(self, s):
    rnd, mover, *_, caught = s
    if caught or rnd > self.params["rounds"]:
      return TERMINAL
    if mover == 0:
      return 0 if self._x_moves(s) else TERMINAL
    return 1

  def legal_actions(self, s):
    _, mover, x, d, _, dt, _, _, _ = s
    if mover == 0:
      return [n - 1 for n in self._x_moves(s)]
    i = mover - 1
    moves = [] if dt[i] == 0 else [n - 1 for n in _ADJ[d[i]] if n != d[1 - i]]
    return moves or [PASS]

  def next_state(self, s, a):
    rnd, mover, x, d, xt, dt, path, pub, _ = s
    if mover == 0:
      x = a + 1
      shown = x if rnd in REVEAL_ROUNDS else None
      return (rnd, 1, x, d, xt - 1, dt, path + (x,), pub + (("X", shown),), False)
    i = mover - 1
    if a != PASS:
      d = tuple(a + 1 if j == i else d[j] for j in (0, 1))
      dt = tuple(dt[j] - (j == i) for j in (0, 1))
    caught = d[i] == x
    obs = ("D", mover, d[i], caught)
    if mover == 1:
      return (rnd, 2, x, d, xt, dt, path, pub + (obs,), caught)
    return (rnd + 1, 0, x, d, xt, dt, path, pub + (obs,), caught)

  def returns(self, s):
    rnd, mover, *_, caught = s
    if caught or (rnd <= self.params["rounds"] and mover == 0):
      return (-1.0, 1.0)
    return (1.0, -1.0)

  @staticmethod
  def _public_string(pub):
    out = []
    for o in pub:
      if o[0] == "X":
        out.append("X" if o[1] is None else f"X@{o[1]}")
      else:
        out.append(f"D{o[1]}>{o[2]}" + ("!" if o[3] else ""))
    return " ".join(out)

  def information_state(self, s, player):
    rnd, mover, x, d, _, _, path, pub, _ = s
    who = "X" if mover == 0 else f"D{mover}"
    out = f"[Round {rnd}][Mover: {who}]"
    if player == 0:
      out += f"[Mr X: {' '.join(map(str, path))}]"
    return out + f"[Detectives: {d[0]} {d[1]}][Public: {self._public_string(pub)}]"

  def public_state(self, s):
    rnd, mover, *_, pub, caught = s
    if mover == 0 and not caught and rnd <= self.params["rounds"] and not self._x_moves(s):
      return pub + (("X", "trapped"),)  # the game visibly ends: Mr X cannot move
    return pub

  def action_string(self, a):
    return "pass" if a == PASS else str(a + 1)
