r"""Scotland Yard on the small "glasses" map of Schmid et al. ("Student of Games: A unified
learning algorithm for both perfect and imperfect information games", 2023).

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

Keys hold one int32 word per round, ``x + 16 d1 + 512 d2``: ``x`` is Mr X's
observation (0 not yet, his station ``1..11``, :data:`HIDDEN` where the
observer does not see it, :data:`TRAPPED` in the public key when he cannot
move), ``d1``/``d2`` a detective's station after its move plus 16 if it
caught Mr X (0 not yet). Every observation has its own bits, so equal keys
are equal observation sequences; round and mover follow from their count.

Sizes: 49,358 histories (3,944 / 3,782 information states) with the
defaults, 7,768 with ``rounds=4``. Value for Mr X: -1 with the paper's 5
rounds (the detectives can force a capture), +1 with 4 rounds or fewer.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from jaxgt import struct
from jaxgt.games.base import TERMINAL
from jaxgt.games.device import DeviceGame

NUM_STATIONS = 11
EDGES = ((1, 2), (2, 3), (3, 4), (4, 5), (5, 1), (4, 6),
         (6, 8), (7, 8), (8, 9), (9, 10), (10, 11), (11, 7))
REVEAL_ROUNDS = (3, 8, 13, 18, 24)
PASS = NUM_STATIONS
PARAMS = {"rounds": 5, "tickets": 5, "mrx_start": 6, "detective1_start": 1,
          "detective2_start": 11}
HIDDEN = 12
"""Mr X's observation code when the observer does not see his station."""
TRAPPED = 13
"""Mr X's observation code in the public key when he cannot move (the game ends)."""

_ADJ = {s: tuple(sorted({b for a, b in EDGES if a == s} | {a for a, b in EDGES if b == s}))
        for s in range(1, NUM_STATIONS + 1)}
_ADJ_MATRIX = np.zeros((NUM_STATIONS + 1, NUM_STATIONS), bool)  # [station, action]
for _s, _ns in _ADJ.items():
  _ADJ_MATRIX[_s, [n - 1 for n in _ns]] = True
_FIELD = (1, 16, 512)  # the word's multiplier of Mr X's, detective 1's, detective 2's field
_X_CODES, _D_CODES = 14, 28  # one-hot widths of the fields in the features


@struct.dataclass
class ScotlandYardState:
  mrx: jnp.ndarray  # [] int32 Mr X's station
  detectives: jnp.ndarray  # [2] int32 the detectives' stations
  mrx_tickets: jnp.ndarray  # [] int32
  detective_tickets: jnp.ndarray  # [2] int32
  moves: jnp.ndarray  # [] int32 moves made (round moves // 3 + 1, mover moves % 3)
  caught: jnp.ndarray  # [] bool
  words: jnp.ndarray  # [R] int32 observations per round, Mr X's station always shown


class ScotlandYard(DeviceGame):
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
    rounds = params["rounds"]
    self.max_length = 3 * rounds
    self.info_key_width = rounds
    self.public_key_width = rounds
    self.info_feature_size = rounds * (_X_CODES + 2 * _D_CODES)
    self.public_feature_size = self.info_feature_size
    self._revealed = np.array([r + 1 in REVEAL_ROUNDS for r in range(rounds)])

  def init(self):
    p = self.params
    t = p["tickets"]
    return ScotlandYardState(
        mrx=jnp.int32(p["mrx_start"]),
        detectives=jnp.array([p["detective1_start"], p["detective2_start"]], jnp.int32),
        mrx_tickets=jnp.int32(t), detective_tickets=jnp.full(2, t, jnp.int32),
        moves=jnp.int32(0), caught=jnp.bool_(False),
        words=jnp.zeros(self.params["rounds"], jnp.int32))

  def _x_moves(self, s):
    """bool ``[11]``: Mr X's moves (by action) as if he were to move."""
    occupied = jnp.any(jnp.arange(1, NUM_STATIONS + 1)[:, None] == s.detectives[None, :], axis=1)
    return jnp.asarray(_ADJ_MATRIX)[s.mrx] & ~occupied & (s.mrx_tickets > 0)

  def _trapped(self, s):
    over = s.caught | (s.moves >= self.max_length)
    return ~over & (s.moves % 3 == 0) & ~jnp.any(self._x_moves(s))

  def current_player(self, s):
    over = s.caught | (s.moves >= self.max_length) | self._trapped(s)
    return jnp.where(over, TERMINAL, jnp.minimum(s.moves % 3, 1)).astype(jnp.int32)

  def legal_mask(self, s):
    mover = s.moves % 3
    i = jnp.maximum(mover - 1, 0)
    d, other = s.detectives[i], s.detectives[1 - i]
    det = (jnp.asarray(_ADJ_MATRIX)[d] & (jnp.arange(1, NUM_STATIONS + 1) != other)
           & (s.detective_tickets[i] > 0))
    det = jnp.append(det, ~jnp.any(det))
    x = jnp.append(self._x_moves(s), False)
    mask = jnp.where(mover == 0, x, det)
    return mask & (self.current_player(s) != TERMINAL)

  def chance_probs(self, s):
    return jnp.zeros(0)

  def step(self, s, action):
    live = self.current_player(s) != TERMINAL
    mover = s.moves % 3
    rnd = s.moves // 3
    action = jnp.asarray(action, jnp.int32)
    station = action + 1
    x_moves = live & (mover == 0)
    d_moves = live & (mover > 0)
    i = jnp.maximum(mover - 1, 0)
    goes = d_moves & (action != PASS)
    mine = jnp.arange(2) == i
    detectives = jnp.where(goes & mine, station, s.detectives)
    mrx = jnp.where(x_moves, station, s.mrx)
    caught = d_moves & (detectives[i] == mrx)
    obs = jnp.where(x_moves, station, detectives[i] + 16 * caught)
    field = jnp.asarray(_FIELD, jnp.int32)[mover]
    words = jnp.where(live & (jnp.arange(self.params["rounds"]) == rnd), s.words + field * obs,
                      s.words)
    return ScotlandYardState(
        mrx=mrx.astype(jnp.int32), detectives=detectives.astype(jnp.int32),
        mrx_tickets=(s.mrx_tickets - x_moves).astype(jnp.int32),
        detective_tickets=(s.detective_tickets - (goes & mine)).astype(jnp.int32),
        moves=(s.moves + live).astype(jnp.int32), caught=s.caught | caught,
        words=words.astype(jnp.int32))

  def returns(self, s):
    lost = s.caught | self._trapped(s)
    u0 = jnp.where(lost, -1.0, 1.0)
    u0 = jnp.where(self.current_player(s) == TERMINAL, u0, 0.0)
    return jnp.stack([u0, -u0])

  def _hide(self, words, hide_all):
    """Words with Mr X's station replaced by :data:`HIDDEN` where it is not revealed."""
    x = words % 16
    hide = (x > 0) & (hide_all | ~jnp.asarray(self._revealed))
    return words - x + jnp.where(hide, HIDDEN, x)

  def info_key(self, s, player):
    return (s.words if player == 0 else self._hide(s.words, False)).astype(jnp.int32)

  def public_key(self, s):
    words = self._hide(s.words, False)
    slot = jnp.arange(self.params["rounds"]) == s.moves // 3
    return jnp.where(self._trapped(s) & slot, TRAPPED, words).astype(jnp.int32)

  def _features(self, words):
    x, d1, d2 = words % 16, words // 16 % 32, words // 512
    hot = lambda v, n: (v[:, None] == jnp.arange(n)[None, :]).astype(jnp.float32).reshape(-1)
    return jnp.concatenate([hot(x, _X_CODES), hot(d1, _D_CODES), hot(d2, _D_CODES)])

  def info_features(self, s, player):
    return self._features(self.info_key(s, player))

  def public_features(self, s):
    return self._features(self.public_key(s))

  # host side
  def _observations(self, key):
    """``[(mover, code), ...]`` of the observations a key holds, in order."""
    out = []
    for w in (int(k) for k in np.asarray(key).reshape(-1)):
      for mover, code in enumerate((w % 16, w // 16 % 32, w // 512)):
        if code:
          out.append((mover, code))
    return out

  def info_string(self, key, player):
    obs = self._observations(key)
    p = self.params
    path, d = [p["mrx_start"]], [p["detective1_start"], p["detective2_start"]]
    public = []
    for k, (mover, code) in enumerate(obs):
      if mover == 0:
        path.append(code)
        public.append(f"X@{code}" if self._revealed[k // 3] else "X")
      else:
        d[mover - 1] = code % 16
        public.append(f"D{mover}>{code % 16}" + ("!" if code >= 16 else ""))
    rnd, mover = len(obs) // 3 + 1, len(obs) % 3
    out = f"[Round {rnd}][Mover: {'X' if mover == 0 else f'D{mover}'}]"
    if player == 0:
      out += f"[Mr X: {' '.join(map(str, path))}]"
    return out + f"[Detectives: {d[0]} {d[1]}][Public: {' '.join(public)}]"

  def public_name(self, key):
    out = []
    for mover, code in self._observations(key):
      if mover == 0:
        out.append(("X", "trapped") if code == TRAPPED else
                   ("X", None) if code == HIDDEN else ("X", code))
      else:
        out.append(("D", mover, code % 16, code >= 16))
    return tuple(out)

  def action_string(self, a):
    return "pass" if a == PASS else str(a + 1)
