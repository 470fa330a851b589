"""Kuhn poker, identical to OpenSpiel's ``kuhn_poker`` (two players; value -1/18).

Three cards ``0 < 1 < 2``, ante 1, one card each (player 0 first); ``0``
pass, ``1`` bet. Betting ends after ``pp`` (showdown for 1), ``bp``/``pbp``
(fold), ``bb``/``pbb`` (showdown for 2). Information states are OpenSpiel's
(card then betting, e.g. ``"1pb"``); public state: cards dealt and betting.
Private states: a player's card (``K_p = 3``).
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from jaxgt import struct
from jaxgt.games.base import CHANCE, TERMINAL
from jaxgt.games.device import DeviceGame

PARAMS = {"players": 2}
_CARDS = 3
_MAX_BETS = 3


@struct.dataclass
class KuhnState:
  cards: jnp.ndarray  # [2] int32 each player's card, -1 before it is dealt
  bets: jnp.ndarray  # [3] int32 actions so far (0 pass, 1 bet), -1 after the last
  num_bets: jnp.ndarray  # [] int32


def _bets_code(bets, n):
  """Betting as one integer ``sum_i (a_i + 1) 3^i`` (0: none), equal exactly for equal
  betting sequences."""
  digits = jnp.where(jnp.arange(_MAX_BETS) < n, bets + 1, 0)
  return jnp.sum(digits * 3 ** jnp.arange(_MAX_BETS))


class KuhnPoker(DeviceGame):
  name = "kuhn_poker"
  param_defaults = PARAMS
  num_actions = 2
  num_outcomes = _CARDS
  max_length = 2 + _MAX_BETS
  big_blind = 1.0
  max_utility = 2.0  # the ante and a called bet
  info_key_width = 2  # (own card or -1, betting code)
  public_key_width = 2  # (cards dealt, betting code)
  info_feature_size = _CARDS + 2 * _MAX_BETS
  public_feature_size = 3 + 2 * _MAX_BETS
  num_private = (_CARDS, _CARDS)

  def init(self):
    return KuhnState(cards=jnp.full(2, -1, jnp.int32), bets=jnp.full(_MAX_BETS, -1, jnp.int32),
                     num_bets=jnp.int32(0))

  def _dealt(self, s):
    return jnp.sum(s.cards >= 0)

  def _over(self, s):
    b, n = s.bets, s.num_bets
    pp_bp_bb = (n == 2) & ~((b[0] == 0) & (b[1] == 1))  # pp, bp, bb end; pb goes on
    return pp_bp_bb | (n == 3)

  def current_player(self, s):
    return jnp.where(self._dealt(s) < 2, CHANCE,
                     jnp.where(self._over(s), TERMINAL, s.num_bets % 2)).astype(jnp.int32)

  def legal_mask(self, s):
    p = self.current_player(s)
    return jnp.broadcast_to((p == 0) | (p == 1), (2,))

  def chance_probs(self, s):
    free = jnp.all(jnp.arange(_CARDS)[:, None] != s.cards[None, :], axis=1)
    probs = free / jnp.sum(free)
    return jnp.where(self.current_player(s) == CHANCE, probs, 0.0)

  def step(self, s, action):
    p = self.current_player(s)
    dealt = self._dealt(s)
    cards = jnp.where((p == CHANCE) & (jnp.arange(2) == dealt), action, s.cards)
    acting = (p == 0) | (p == 1)
    bets = jnp.where(acting & (jnp.arange(_MAX_BETS) == s.num_bets), action, s.bets)
    return KuhnState(cards=cards.astype(jnp.int32), bets=bets.astype(jnp.int32),
                     num_bets=(s.num_bets + acting).astype(jnp.int32))

  def returns(self, s):
    b, n = s.bets, s.num_bets
    folded = (b[n - 1] == 0) & jnp.any(b == 1)  # a pass after a bet: bp or pbp
    amount = jnp.where(jnp.any(b == 1) & ~folded, 2.0, 1.0)
    showdown_winner = jnp.where(s.cards[0] > s.cards[1], 0, 1)
    winner = jnp.where(folded, (n - 2) % 2, showdown_winner)  # bp: 0 wins; pbp: 1 wins
    u0 = jnp.where(winner == 0, amount, -amount)
    u0 = jnp.where(self.current_player(s) == TERMINAL, u0, 0.0)
    return jnp.stack([u0, -u0])

  def info_key(self, s, player):
    return jnp.stack([s.cards[player], _bets_code(s.bets, s.num_bets)]).astype(jnp.int32)

  def info_features(self, s, player):
    card = (jnp.arange(_CARDS) == s.cards[player]).astype(jnp.float32)
    return jnp.concatenate([card, self._bet_features(s)])

  def public_key(self, s):
    return jnp.stack([self._dealt(s), _bets_code(s.bets, s.num_bets)]).astype(jnp.int32)

  def public_features(self, s):
    dealt = (jnp.arange(3) == self._dealt(s)).astype(jnp.float32)
    return jnp.concatenate([dealt, self._bet_features(s)])

  def _bet_features(self, s):
    return (s.bets[:, None] == jnp.arange(2)[None, :]).astype(jnp.float32).reshape(-1)

  def private_index(self, s, player):
    return s.cards[player]

  def private_chance(self, s):
    return (1.0 - jnp.eye(_CARDS)) / (_CARDS * (_CARDS - 1))

  def with_private(self, s, player, k):
    return s.replace(cards=s.cards.at[player].set(jnp.asarray(k, jnp.int32)))

  # host side
  def info_string(self, key, player):
    card, code = (int(k) for k in np.asarray(key))
    bets = _decode(code)
    return f"{card}{bets}" if card >= 0 else bets

  def public_name(self, key):
    dealt, code = (int(k) for k in np.asarray(key))
    return (dealt, _decode(code))

  def action_string(self, a):
    return ("Pass", "Bet")[a]

  def openspiel_game_string(self):
    return "kuhn_poker"


def _decode(code: int) -> str:
  out = ""
  while code:
    out += "pb"[code % 3 - 1]
    code //= 3
  return out
