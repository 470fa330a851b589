"""Imperfect-information Goofspiel II-GS(N) (Lisy, Lanctot, Bowling, "Online Monte Carlo
Counterfactual Regret Minimization for Search in Imperfect Information Games", 2015, Sec. 4.3).

Each player holds bid cards ``0..N-1`` (shown ``1..N``); the point cards are
turned in a fixed order (``points_order``: ``"ascending"``, the default, or
``"descending"``), so there are no chance nodes. Each round both players bid
one card secretly; the higher bid wins the point card, a tie discards it.
Players observe their own bids and who won each round, never the opponent's
cards. The last round has a single legal bid each and is played
automatically, as in OpenSpiel.

The simultaneous bids are sequential here: player 0 bids, then player 1 bids
without seeing it (player 1's information state does not contain player 0's
pending bid), exactly like OpenSpiel's ``turn_based_simultaneous_game``
around ``goofspiel(imp_info=True,points_order=...,num_cards=N)``: action ids
(bid card index), tree sizes, returns and information-state strings are
identical to that game's.

Point card ``k`` is worth ``k + points_base``; the paper lists the stack as
``0..N-1``, OpenSpiel's values are ``1..N`` (``points_base=1``, the default;
only then is there an OpenSpiel equivalent). **The paper's game** is
registered as ``ii_goofspiel`` (:class:`IIGoofspiel`: ``goofspiel`` with
``points_base=0``, default ``num_cards=6``, II-GS(6)); ``goofspiel`` is
OpenSpiel's. ``returns_type`` follows OpenSpiel: ``"win_loss"`` (default)
pays +1/-1 to the player with more points (0 on a draw),
``"point_difference"`` pays each player its points minus the mean, i.e.
``(pts0 - pts1) / 2`` to player 0. Public state: the winner sequence and
whether player 0 has bid in the current round.

Keys (int32 words, each field a mixed-radix code that fits in 30 bits):

* information state ``[ceil(N / floor(30 / b)) + ceil(N / 15) + 1]`` with
  ``b`` the bits of ``N``: the own bids by round (``b`` bits each, bid + 1,
  0 for a round not played), the winners by round (2 bits each: 0 not played,
  1 player 0, 2 player 1, 3 tie), and the turn (player 0: its pending bid + 1,
  0 when none; player 1: 1 when player 0 has bid). II-GS(13): 2 + 1 + 1 = 4
  words. Hand, points, point cards and the current player follow from these.
* public state ``[ceil(N / 15) + 1]``: the winners and whether player 0 has bid.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxgt import struct
from jaxgt.games.base import TERMINAL
from jaxgt.games.device import DeviceGame

PARAMS = {"num_cards": 4, "returns_type": "win_loss", "points_base": 1,
          "points_order": "ascending"}
_RETURNS = ("win_loss", "point_difference")
_ORDERS = ("ascending", "descending")
_TIE = -3  # winner of a tied round as OpenSpiel prints it (kInvalidPlayer)
_KEY_BITS = 30  # bits used per key word
_WIN_DIGITS = _KEY_BITS // 2  # rounds per winner word
_CACHE_LIMIT = 1 << 18  # decoded parts of keys kept for info_string


@struct.dataclass
class GoofspielState:
  hands: jnp.ndarray  # [2, N] bool cards still held
  bids: jnp.ndarray  # [2, N] int32 each player's bid by round, -1 for rounds not played
  wins: jnp.ndarray  # [N] int32 winner by round: 0, 1, 2 (tie), -1 not played
  points: jnp.ndarray  # [2] int32 points so far
  round: jnp.ndarray  # [] int32 rounds played (N: terminal)
  pending: jnp.ndarray  # [] int32 player 0's bid this round, -1 before it


def _pack(digits, bits: int, words: int):
  """``[n]`` non-negative int digits below ``2^bits`` as ``[words]`` int32 words,
  ``30 // bits`` digits a word (least significant first)."""
  per = _KEY_BITS // bits
  d = jnp.zeros(words * per, jnp.int32).at[:digits.shape[0]].set(digits)
  return jnp.sum(d.reshape(words, per) << (bits * jnp.arange(per)), axis=1).astype(jnp.int32)


def _unpack(words, bits: int, n: int) -> list:
  per = _KEY_BITS // bits
  return [int(words[i // per]) >> (bits * (i % per)) & ((1 << bits) - 1) for i in range(n)]


class Goofspiel(DeviceGame):
  name = "goofspiel"
  param_defaults = PARAMS
  public_actions = False  # bids are secret; only who won each round is seen

  def __init__(self, **params):
    """Checks ``params`` and sizes the state and keys; point card ``k`` is worth
    ``k + points_base`` (0 for II-Goofspiel, which has no such parameter)."""
    super().__init__(**params)
    params = self.params
    self.points_base = params.get("points_base", 0)
    if params["num_cards"] < 1:
      raise ValueError(f"goofspiel: num_cards must be positive, got {params['num_cards']}")
    if params["returns_type"] not in _RETURNS:
      raise ValueError(f"goofspiel: returns_type must be one of {_RETURNS}, "
                       f"got {params['returns_type']!r}")
    if params["points_order"] not in _ORDERS:
      raise ValueError(f"goofspiel: points_order must be one of {_ORDERS}, "
                       f"got {params['points_order']!r}")
    n = self.num_cards = params["num_cards"]
    self.num_actions = n
    self.max_length = 2 * max(n - 1, 1)  # the last of N >= 2 rounds is played automatically
    self._bid_bits = max(1, n.bit_length())
    if self._bid_bits > _KEY_BITS:
      raise ValueError(f"goofspiel: num_cards={n} is too large")
    self._bid_words = -(-n // (_KEY_BITS // self._bid_bits))
    self._win_words = -(-n // _WIN_DIGITS)
    self.info_key_width = self._bid_words + self._win_words + 1
    self.public_key_width = self._win_words + 1
    self.info_feature_size = n + n * n + 3 * n + 1 + n
    self.public_feature_size = 3 * n + 1
    # point card index turned in round r, and its value
    self._point = [r if params["points_order"] == "ascending" else n - 1 - r for r in range(n)]
    self._value = np.array([c + self.points_base for c in self._point], np.int32)
    self.max_utility = self._max_utility()
    self._host_cache = {}  # decoded key words -> their part of the strings

  def _max_utility(self):
    """The largest ``|u0|``: one round must be lost if any is won (both bid the same cards), and
    winning every round but the cheapest is reachable (bid ``k + 1`` against ``k``, and ``1``
    against ``N`` in the cheapest round), so the widest point gap is the point total minus
    twice the smallest value (nonnegative values; ``None`` otherwise); one card: a tie."""
    values = self._value
    if values.min() < 0:
      return None
    gap = 0 if self.num_cards == 1 else int(values.sum() - 2 * values.min())
    return gap / 2.0 if self.params["returns_type"] == "point_difference" else float(gap > 0)

  # --- rules -------------------------------------------------------------------------------
  def init(self):
    n = self.num_cards
    return GoofspielState(hands=jnp.ones((2, n), bool), bids=jnp.full((2, n), -1, jnp.int32),
                          wins=jnp.full(n, -1, jnp.int32), points=jnp.zeros(2, jnp.int32),
                          round=jnp.int32(0), pending=jnp.int32(-1))

  def current_player(self, s):
    return jnp.where(s.round == self.num_cards, TERMINAL,
                     (s.pending >= 0).astype(jnp.int32)).astype(jnp.int32)

  def legal_mask(self, s):
    p = jnp.clip(self.current_player(s), 0, 1)
    return s.hands[p] & (s.round < self.num_cards)

  def chance_probs(self, s):
    return jnp.zeros(0)

  def _resolve(self, s, b0, b1):
    """The round played with bids ``b0`` and ``b1``."""
    cards = jnp.arange(self.num_cards)
    b = jnp.stack([b0, b1])
    hands = s.hands & (cards[None, :] != b[:, None])
    this = cards == s.round
    bids = jnp.where(this[None, :], b[:, None], s.bids)
    winner = jnp.where(b0 > b1, 0, jnp.where(b1 > b0, 1, 2))
    value = jnp.asarray(self._value)[jnp.minimum(s.round, self.num_cards - 1)]
    points = s.points + jnp.where(jnp.arange(2) == winner, value, 0)
    return GoofspielState(hands=hands, bids=bids, wins=jnp.where(this, winner, s.wins),
                          points=points, round=s.round + 1, pending=jnp.int32(-1))

  def step(self, s, action):
    action = jnp.asarray(action, jnp.int32)
    p = self.current_player(s)
    played = self._resolve(s, s.pending, action)
    # one card left each: the last round is played at once
    forced = played.round == self.num_cards - 1
    last = self._resolve(played, jnp.argmax(played.hands[0]).astype(jnp.int32),
                         jnp.argmax(played.hands[1]).astype(jnp.int32))
    played = jax.tree_util.tree_map(lambda x, y: jnp.where(forced, y, x), played, last)
    bid0 = s.replace(pending=action)
    return jax.tree_util.tree_map(lambda a, b, c: jnp.where(p == 0, a, jnp.where(p == 1, b, c)),
                                  bid0, played, s)

  def returns(self, s):
    diff = (s.points[0] - s.points[1]) * 1.0  # JAX's default float
    u0 = diff / 2.0 if self.params["returns_type"] == "point_difference" else jnp.sign(diff)
    u0 = jnp.where(s.round == self.num_cards, u0, 0.0)
    return jnp.stack([u0, -u0])

  # --- keys and features ---------------------------------------------------------------------
  def _turn(self, s, player):
    return s.pending + 1 if player == 0 else (s.pending >= 0).astype(jnp.int32)

  def info_key(self, s, player):
    return jnp.concatenate([_pack(s.bids[player] + 1, self._bid_bits, self._bid_words),
                            _pack(s.wins + 1, 2, self._win_words),
                            self._turn(s, player)[None]]).astype(jnp.int32)

  def public_key(self, s):
    return jnp.concatenate([_pack(s.wins + 1, 2, self._win_words),
                            (s.pending >= 0)[None]]).astype(jnp.int32)

  def _public_features(self, s):
    wins = (s.wins[:, None] == jnp.arange(3)[None, :]).astype(jnp.float32).reshape(-1)
    return jnp.concatenate([wins, (s.pending >= 0)[None].astype(jnp.float32)])

  def info_features(self, s, player):
    """Own hand, own bid by round (one-hot), winner by round (one-hot), player 0 has bid,
    player 0's pending bid (one-hot; zeros for player 1)."""
    n = self.num_cards
    own = (s.bids[player][:, None] == jnp.arange(n)[None, :]).astype(jnp.float32).reshape(-1)
    pending = (jnp.arange(n) == s.pending) & (player == 0)
    return jnp.concatenate([s.hands[player].astype(jnp.float32), own, self._public_features(s),
                            pending.astype(jnp.float32)])

  def public_features(self, s):
    """Winner by round (one-hot) and whether player 0 has bid this round."""
    return self._public_features(s)

  # --- host side ---------------------------------------------------------------------------
  def _winners(self, words: tuple) -> tuple:
    """Winners by round (0, 1, -3 for a tie) of the winner words, with the rest of the string
    they determine (win sequence, points, point cards); cached: keys share them."""
    out = self._host_cache.get(("w",) + words)
    if out is None:
      if len(self._host_cache) > _CACHE_LIMIT:
        self._host_cache.clear()
      n = self.num_cards
      wins = tuple((0, 1, _TIE)[d - 1] for d in _unpack(words, 2, n) if d)
      points = [0, 0]
      for k, w in enumerate(wins):
        if w != _TIE:
          points[w] += int(self._value[k])
      dealt = "".join(f"{self._point[k] + 1} " for k in range(min(len(wins) + 1, n)))
      text = (f"Point card sequence: {dealt}\n"
              f"Win sequence: {''.join(f'{w} ' for w in wins)}\n"
              f"Points: {points[0]} {points[1]} \n")
      out = self._host_cache[("w",) + words] = (wins, text)
    return out

  def _own_bids(self, words: tuple, player: int) -> str:
    out = self._host_cache.get((player,) + words)
    if out is None:
      if len(self._host_cache) > _CACHE_LIMIT:
        self._host_cache.clear()
      n = self.num_cards
      bids = [d - 1 for d in _unpack(words, self._bid_bits, n) if d]
      hand = "".join(f"{c + 1} " for c in range(n) if c not in bids)
      out = self._host_cache[(player,) + words] = (
          f"P{player} hand: {hand}\nP{player} action sequence: {''.join(f'{b} ' for b in bids)}\n")
    return out

  def info_string(self, key, player):
    key = tuple(np.asarray(key).reshape(-1).tolist())
    wins, text = self._winners(key[self._bid_words:-1])
    turn = key[-1]
    cur = TERMINAL if len(wins) == self.num_cards else int(turn > 0)
    head = f"Current player: {cur}\n"
    if player == 0 and cur == 1:
      head += f"Observer's action this turn: {turn - 1}\n"
    return (f"{head}{self._own_bids(key[:self._bid_words], player)}{text}"
            f"Terminal?: {int(cur == TERMINAL)}\n")

  def public_name(self, key):
    key = tuple(np.asarray(key).reshape(-1).tolist())
    return (self._winners(key[:-1])[0], bool(key[-1]))

  def action_string(self, a):
    return f"Bid: {a + 1}"

  def openspiel_game_string(self):
    if self.points_base != 1:
      return None
    return ("turn_based_simultaneous_game(game=goofspiel(imp_info=True,num_cards="
            f"{self.num_cards},points_order={self.params['points_order']},"
            f"returns_type={self.params['returns_type']}))")


class IIGoofspiel(Goofspiel):
  """II-GS(N) exactly as Lisy, Lanctot, Bowling (2015, Sec. 5.3) define it: point cards worth
  ``0..N-1`` (:class:`Goofspiel` with ``points_base=0``); II-GS(6) by default."""

  name = "ii_goofspiel"
  param_defaults = {"num_cards": 6, "returns_type": "win_loss", "points_order": "ascending"}
