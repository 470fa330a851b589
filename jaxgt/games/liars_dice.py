"""Liar's Dice LD(D1, D2) (Lisy, Lanctot, Bowling, "Online Monte Carlo Counterfactual Regret
Minimization for Search in Imperfect Information Games", 2015, Sec. 4.3).

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
``"3 1-4 2-2"``; while dice are still rolled, the own dice so far in roll
order with ``-1`` for the rest). ``numdice1``/``numdice2`` (0 = ``numdice``)
give the paper's unequal LD(D1, D2). Public state: dice rolled and the bids.

Bids only ever rise, so the bidding is the *set* of bids made: a bit mask of
``L = (D1 + D2) * sides`` bits in ``ceil(L / 31)`` int32 words, plus a Liar
flag. Keys (int32 words; every field in its own word or a mixed-radix code
that fits in 31 bits, checked when the game is built):

* information state ``[2 + ceil(L / 31)]``: the own dice as shown (base
  ``sides + 1``, digit ``face`` or 0 for a die not rolled yet; sorted once
  all dice are rolled, roll order before), ``rolled + (D1 + D2 + 1) * liar``,
  the bid mask words. LD(2,2) with six sides: 3 words.
* public state ``[1 + ceil(L / 31)]``: the same without the dice.

Private states: a player's roll as a multiset (the sorted dice its
information state shows), ``K_p = C(sides + D_p - 1, D_p)`` (21 for two
six-sided dice), indexed by the combinatorial number system of the sorted
faces (:func:`multiset_index`); ``-1`` until all the player's dice are rolled.
No chance event is public, so :meth:`LiarsDice.private_chance` is the prior:
multinomial counts over ``sides^D1 * sides^D2``.
"""

from __future__ import annotations

import itertools
import math

import jax.numpy as jnp
import numpy as np

from jaxgt import struct
from jaxgt.games.base import CHANCE, TERMINAL
from jaxgt.games.device import DeviceGame

PARAMS = {"numdice": 1, "numdice1": 0, "numdice2": 0, "dice_sides": 6,
          "bidding_rule": "reset-face"}
_RULES = ("reset-face", "reset-quantity")
_BITS = 31  # bid-mask bits per int32 word
_CACHE_LIMIT = 1 << 18  # decoded parts of keys kept for info_string


@struct.dataclass
class LiarsDiceState:
  dice: jnp.ndarray  # [D1 + D2] int32 faces 0..sides-1, roll order (player 0 first); -1 unrolled
  rolled: jnp.ndarray  # [] int32 dice rolled so far
  bids: jnp.ndarray  # [ceil(L / 31)] int32 bids made: bid b is bit b % 31 of word b // 31
  last: jnp.ndarray  # [] int32 the last bid, -1 before the first
  num_bids: jnp.ndarray  # [] int32 bids made (Liar not counted)
  liar: jnp.ndarray  # [] bool Liar was called (terminal)


def multiset_index(faces, sides: int):
  """Index of a sorted roll (faces ``0..sides-1`` ascending, ``[..., D]``) among the
  ``C(sides + D - 1, D)`` multisets: ``sum_i C(f_i + i, i + 1)`` (the combinatorial number
  system of the strictly increasing ``f_i + i``)."""
  d = faces.shape[-1]
  table = jnp.asarray(np.array([[math.comb(n, k) for k in range(d + 1)]
                                for n in range(sides + d)], np.int32))
  i = jnp.arange(d)
  return jnp.sum(table[jnp.maximum(faces, 0) + i, i + 1], axis=-1).astype(jnp.int32)


def multisets(d: int, sides: int) -> list:
  """The sorted rolls of ``d`` dice in :func:`multiset_index` order (host side)."""
  rolls = list(itertools.combinations_with_replacement(range(sides), d))
  rank = [sum(math.comb(f + i, i + 1) for i, f in enumerate(r)) for r in rolls]
  return [r for _, r in sorted(zip(rank, rolls))]


class LiarsDice(DeviceGame):
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
    if (sides + 1) ** max(d1, d2) >= 2 ** 31:
      raise ValueError(f"liars_dice: {max(d1, d2)} dice of {sides} sides do not fit the "
                       "information-state key ((dice_sides + 1)^dice must be below 2^31)")
    self.num_dice = (d1, d2)
    self.sides = sides
    total = self.total = d1 + d2
    self.liar = total * sides  # the "Liar" action id
    self.num_actions = self.liar + 1
    self.num_outcomes = sides
    self.max_length = total + self.liar + 1  # every die, every bid in turn, Liar
    self.max_utility = 1.0  # every game ends with a call: +1 / -1
    self.bid_words = -(-self.liar // _BITS)
    self.info_key_width = 2 + self.bid_words
    self.public_key_width = 1 + self.bid_words
    self.info_feature_size = max(d1, d2) * sides + (total + 1) + self.num_actions
    self.public_feature_size = (total + 1) + self.num_actions
    self.num_private = tuple(math.comb(sides + d - 1, d) for d in (d1, d2))
    face_first = params["bidding_rule"] == "reset-face"
    bid = [((b // sides + 1, b % sides + 1) if face_first else (b % total + 1, b // total + 1))
           for b in range(self.liar)]
    self._bid_str = [f" {q}-{f}" for q, f in bid] + [" Liar"]
    self._quantity = np.array([q for q, _ in bid], np.int32)
    self._face = np.array([f - 1 for _, f in bid], np.int32)  # 0-based
    counts = []
    for d in (d1, d2):  # multinomial count of each multiset, in index order
      counts.append(np.array([math.factorial(d) // math.prod(
          math.factorial(r.count(f)) for f in set(r)) for r in multisets(d, sides)], np.float64))
    self._pair_counts = np.outer(*counts)
    self._pair_total = float(sides ** total)
    self._host_cache = {}  # bid mask words -> the bids as the strings show them

  # --- rules -------------------------------------------------------------------------------
  def init(self):
    return LiarsDiceState(dice=jnp.full(self.total, -1, jnp.int32), rolled=jnp.int32(0),
                          bids=jnp.zeros(self.bid_words, jnp.int32), last=jnp.int32(-1),
                          num_bids=jnp.int32(0), liar=jnp.bool_(False))

  def current_player(self, s):
    return jnp.where(s.rolled < self.total, CHANCE,
                     jnp.where(s.liar, TERMINAL, s.num_bids % 2)).astype(jnp.int32)

  def legal_mask(self, s):
    a = jnp.arange(self.num_actions)
    acting = (s.rolled == self.total) & ~s.liar
    return acting & jnp.where(a == self.liar, s.last >= 0, a > s.last)

  def chance_probs(self, s):
    return jnp.where(s.rolled < self.total, jnp.full(self.sides, 1.0 / self.sides), 0.0)

  def step(self, s, action):
    action = jnp.asarray(action, jnp.int32)
    chance = s.rolled < self.total
    acting = ~chance & ~s.liar
    bid = acting & (action < self.liar)
    dice = jnp.where(chance & (jnp.arange(self.total) == s.rolled), action, s.dice)
    word = jnp.arange(self.bid_words) == action // _BITS
    bids = jnp.where(bid & word, s.bids | (1 << (action % _BITS)), s.bids)
    return LiarsDiceState(dice=dice, rolled=s.rolled + chance, bids=bids,
                          last=jnp.where(bid, action, s.last), num_bids=s.num_bids + bid,
                          liar=s.liar | (acting & (action == self.liar)))

  def returns(self, s):
    last = jnp.maximum(s.last, 0)
    face = jnp.asarray(self._face)[last]
    matches = jnp.sum((s.dice == face) | (s.dice == self.sides - 1))
    caller_wins = matches < jnp.asarray(self._quantity)[last]
    caller = s.num_bids % 2
    u0 = jnp.where(caller_wins == (caller == 0), 1.0, -1.0)
    u0 = jnp.where(s.liar, u0, 0.0)
    return jnp.stack([u0, -u0])

  # --- keys and features ---------------------------------------------------------------------
  def _own(self, s, player):
    lo = 0 if player == 0 else self.num_dice[0]
    return s.dice[lo:lo + self.num_dice[player]]

  def _shown(self, s, player):
    """The own dice as the information state shows them: sorted once every die is rolled."""
    own = self._own(s, player)
    return jnp.where(s.rolled == self.total, jnp.sort(own), own)

  def _progress(self, s):
    return s.rolled + (self.total + 1) * s.liar.astype(jnp.int32)

  def info_key(self, s, player):
    shown = self._shown(s, player)
    code = jnp.sum((shown + 1) * (self.sides + 1) ** jnp.arange(shown.shape[0]))
    return jnp.concatenate([jnp.stack([code, self._progress(s)]), s.bids]).astype(jnp.int32)

  def public_key(self, s):
    return jnp.concatenate([self._progress(s)[None], s.bids]).astype(jnp.int32)

  def _public_features(self, s):
    rolled = (jnp.arange(self.total + 1) == s.rolled).astype(jnp.float32)
    b = jnp.arange(self.liar)
    made = (s.bids[b // _BITS] >> (b % _BITS)) & 1
    return jnp.concatenate([rolled, made.astype(jnp.float32), s.liar[None].astype(jnp.float32)])

  def info_features(self, s, player):
    """Own dice as shown (one-hot faces per die slot, ``max(D1, D2)`` slots), dice rolled
    (one-hot), bids made and Liar (bits)."""
    shown = self._shown(s, player)
    slots = max(self.num_dice)
    dice = jnp.full(slots, -1, jnp.int32).at[:shown.shape[0]].set(shown)
    onehot = (dice[:, None] == jnp.arange(self.sides)[None, :]).astype(jnp.float32)
    return jnp.concatenate([onehot.reshape(-1), self._public_features(s)])

  def public_features(self, s):
    """Dice rolled (one-hot), bids made and Liar (bits)."""
    return self._public_features(s)

  def private_index(self, s, player):
    own = self._own(s, player)
    done = jnp.all(own >= 0)
    return jnp.where(done, multiset_index(jnp.sort(own), self.sides), -1).astype(jnp.int32)

  def private_chance(self, s):
    return jnp.asarray(self._pair_counts) / self._pair_total

  def with_private(self, s, player, k):
    """``s`` with ``player``'s dice replaced by roll ``k`` (:func:`multisets` order, faces
    ascending)."""
    d = self.num_dice[player]
    rolls = jnp.asarray(np.array(multisets(d, self.sides), np.int32).reshape(-1, d))
    lo = 0 if player == 0 else self.num_dice[0]
    return s.replace(dice=s.dice.at[lo:lo + d].set(rolls[jnp.asarray(k, jnp.int32)]))

  # --- host side ---------------------------------------------------------------------------
  def _bid_string(self, words: tuple, liar) -> str:
    out = self._host_cache.get(words)
    if out is None:  # cached: many keys share a bidding
      if len(self._host_cache) > _CACHE_LIMIT:
        self._host_cache.clear()
      bids = [b for b in range(self.liar) if words[b // _BITS] >> (b % _BITS) & 1]
      out = self._host_cache[words] = "".join(self._bid_str[b] for b in bids)
    return out + (self._bid_str[self.liar] if liar else "")

  def info_string(self, key, player):
    key = tuple(np.asarray(key).reshape(-1).tolist())
    code, progress, words = key[0], key[1], key[2:]
    rolled, liar = progress % (self.total + 1), progress // (self.total + 1)
    digits = [code // (self.sides + 1) ** i % (self.sides + 1)
              for i in range(self.num_dice[player])]
    if rolled < self.total:
      return "".join(str(d) if d else "-1" for d in digits)
    return "".join(map(str, digits)) + self._bid_string(words, liar)

  def public_name(self, key):
    key = tuple(np.asarray(key).reshape(-1).tolist())
    rolled, liar = key[0] % (self.total + 1), key[0] // (self.total + 1)
    return (rolled, self._bid_string(key[1:], liar))

  def action_string(self, a):
    return self._bid_str[a][1:] if 0 <= a <= self.liar else str(a)

  def openspiel_game_string(self):
    d1, d2 = self.num_dice
    if d1 != d2:
      return None
    return (f"liars_dice(bidding_rule={self.params['bidding_rule']},"
            f"dice_sides={self.sides},numdice={d1})")
