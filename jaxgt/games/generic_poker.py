"""Generic Poker GP(T, C, R, B) of Lisy, Lanctot and Bowling (AAMAS 2015, Sec. 5).

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
card, betting. Private states: a player's card type (``K_p = T``).
OpenSpiel's ``universal_poker`` expresses GP(T, C, R, 1) with ``C`` suits as
strategically irrelevant labels (:meth:`openspiel_game_string`: same value,
same tree size for ``C = 1``).

:class:`TwoRoundPoker` holds the device rules this game shares with Leduc
hold'em (:mod:`jaxgt.games.leduc`): a state of a few small integers, and
information-state keys that hold each card and each action in its own int32
word (lossless for every ``R`` and ``B``).
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from jaxgt import struct
from jaxgt.games.base import CHANCE, TERMINAL
from jaxgt.games.device import DeviceGame

PARAMS = {"T": 3, "C": 3, "R": 2, "B": 2}
FOLD, CALL = 0, 1


@struct.dataclass
class PokerState:
  cards: jnp.ndarray  # [3] int32 player 0's card, player 1's, the table card; -1 until dealt
  acts: jnp.ndarray  # [2, L] int32 each betting round's actions, -1 after the last
  num_acts: jnp.ndarray  # [] int32 actions so far in the current round
  raises: jnp.ndarray  # [] int32 bets and raises so far in the current round
  last: jnp.ndarray  # [] int32 the current round's last action (-1 before its first)
  contrib: jnp.ndarray  # [2] int32 chips each player has put in the pot
  player: jnp.ndarray  # [] int32 the player to act (CHANCE, TERMINAL, 0 or 1), kept by ``step``


class TwoRoundPoker(DeviceGame):
  """One private card each, a betting round, one table card, a betting round, showdown.

  Set by subclasses: ``num_cards`` card ids chance deals (``copies`` of each), ``suits``
  (a card's rank is ``card // suits``), ``max_raises`` bets and raises per round after the
  first, ``num_bets`` bet sizes (``2 (k + 1)`` chips in round 1, ``4 (k + 1)`` in round 2),
  ``key_has_player`` (the information state shows whose turn it is). Then
  :meth:`set_shapes` sets the shapes. Information-state key of player ``p``: ``[own card,
  table card, (current player,) round-1 actions [L], round-2 actions [L]]`` (``-1`` for
  what is not there); public key: ``[private cards dealt, table card, actions [2 L]]``.
  """

  num_cards: int = 0
  copies: int = 1
  suits: int = 1
  max_raises: int = 0
  num_bets: int = 1
  key_has_player: bool = False
  big_blind = 1.0

  def set_shapes(self):
    """Sets the protocol's sizes from the subclass's parameters (called by its ``__init__``)."""
    self.round_length = self.max_raises + 3  # L: check, bet, R raises, call
    self.num_actions = 2 + self.num_bets
    self.num_outcomes = self.num_cards
    self.max_length = 3 + 2 * self.round_length
    self.num_private = (self.num_cards, self.num_cards)
    head = 3 if self.key_has_player else 2
    self.info_key_width = head + 2 * self.round_length
    self.public_key_width = 2 + 2 * self.round_length
    bets = 2 * self.round_length * self.num_actions
    self.info_feature_size = 2 * self.num_cards + 3 * self.key_has_player + bets
    self.public_feature_size = 3 + self.num_cards + bets
    # the loser's chips: the ante and R + 1 bets of the largest size in each round
    self.max_utility = float(1 + (self.max_raises + 1) * self.num_bets * (2 + 4))

  # --- device functions -------------------------------------------------------------------
  def init(self):
    z = jnp.int32(0)
    return PokerState(cards=jnp.full(3, -1, jnp.int32),
                      acts=jnp.full((2, self.round_length), -1, jnp.int32),
                      num_acts=z, raises=z, last=jnp.int32(-1),
                      contrib=jnp.ones(2, jnp.int32), player=jnp.int32(CHANCE))

  def current_player(self, s):
    return s.player

  @staticmethod
  def _player(cards, num_acts, last):
    """int32 ``[]``: who acts after the deals ``cards`` (dealt in order; the table card
    starts round 2) and the current round's betting (``num_acts`` actions, the ``last``
    one)."""
    round_over = (num_acts >= 2) & (last == CALL)
    return jnp.where(cards[1] < 0, CHANCE,
                     jnp.where(last == FOLD, TERMINAL,
                               jnp.where(round_over, jnp.where(cards[2] < 0, CHANCE, TERMINAL),
                                         num_acts & 1))).astype(jnp.int32)

  def legal_mask(self, s):
    a = jnp.arange(self.num_actions, dtype=jnp.int32)
    legal = jnp.where(a == FOLD, s.last >= 2,
                      jnp.where(a == CALL, True, s.raises <= self.max_raises))
    return legal & (s.player >= 0)

  def chance_probs(self, s):
    cards = jnp.arange(self.num_cards, dtype=jnp.int32)
    left = self.copies - jnp.sum(cards[:, None] == s.cards[None, :], axis=1)
    total = self.num_cards * self.copies - jnp.sum(s.cards >= 0)
    probs = left / total  # count / total, as the Python rules compute it
    return jnp.where(s.player == CHANCE, probs, 0.0)

  def step(self, s, action):
    a = jnp.asarray(action, jnp.int32)
    p = s.player
    chance, acting = p == CHANCE, p >= 0
    # Chance deals player 0's card, player 1's, then (after round 1's betting) the table card.
    new_round = chance & (s.num_acts > 0)
    slot = jnp.where(new_round, 2, (s.cards[0] >= 0).astype(jnp.int32))
    cards = jnp.where(chance & (jnp.arange(3, dtype=jnp.int32) == slot), a, s.cards)
    top = jnp.maximum(s.contrib[0], s.contrib[1])
    rnd = (s.cards[2] >= 0).astype(jnp.int32)  # the betting round, 0 or 1
    size = jnp.where(rnd == 0, 2, 4) * (a - 1)  # bet k = a - 2: 2 (k + 1) or 4 (k + 1)
    mine = jnp.where(a == CALL, top, top + size)  # a fold leaves the chips as they are
    contrib = jnp.where((jnp.arange(2, dtype=jnp.int32) == p) & (a != FOLD), mine, s.contrib)
    L = self.round_length
    at = jnp.arange(2 * L, dtype=jnp.int32).reshape(2, L) == rnd * L + s.num_acts
    acts = jnp.where(acting & at, a, s.acts)
    num_acts = jnp.where(acting, s.num_acts + 1, jnp.where(new_round, 0, s.num_acts))
    last = jnp.where(acting, a, jnp.where(new_round, -1, s.last))
    return PokerState(
        cards=cards, acts=acts, num_acts=num_acts,
        raises=jnp.where(acting & (a >= 2), s.raises + 1, jnp.where(new_round, 0, s.raises)),
        last=last, contrib=contrib, player=self._player(cards, num_acts, last))

  def returns(self, s):
    folder = (s.num_acts - 1) % 2
    fold_u0 = jnp.where(folder == 0, -s.contrib[0], s.contrib[1])
    ranks = s.cards // self.suits
    strength = (ranks[:2] == ranks[2]) * self.num_cards + ranks[:2]  # a pair, then the rank
    show_u0 = jnp.where(strength[0] > strength[1], s.contrib[1],
                        jnp.where(strength[0] < strength[1], -s.contrib[0], 0))
    u0 = jnp.where(s.last == FOLD, fold_u0, show_u0)
    u0 = jnp.where(s.player == TERMINAL, u0, 0).astype(jnp.zeros(()).dtype)
    return jnp.stack([u0, -u0])

  def info_key(self, s, player):
    head = [s.cards[player], s.cards[2]]
    if self.key_has_player:
      head.append(self.current_player(s))
    return jnp.concatenate([jnp.stack(head), s.acts.reshape(-1)]).astype(jnp.int32)

  def info_features(self, s, player):
    parts = [self._one_hot(s.cards[player], self.num_cards),
             self._one_hot(s.cards[2], self.num_cards)]
    if self.key_has_player:
      parts.append(self._one_hot(self.current_player(s) + 1, 3))  # chance, 0, 1
    return jnp.concatenate(parts + [self._bet_features(s)])

  def public_key(self, s):
    head = jnp.stack([jnp.sum(s.cards[:2] >= 0), s.cards[2]])
    return jnp.concatenate([head, s.acts.reshape(-1)]).astype(jnp.int32)

  def public_features(self, s):
    return jnp.concatenate([self._one_hot(jnp.sum(s.cards[:2] >= 0), 3),
                            self._one_hot(s.cards[2], self.num_cards), self._bet_features(s)])

  @staticmethod
  def _one_hot(x, n):
    return (jnp.arange(n) == x).astype(jnp.float32)

  def _bet_features(self, s):
    return (s.acts[..., None] == jnp.arange(self.num_actions)).astype(jnp.float32).reshape(-1)

  def private_index(self, s, player):
    return s.cards[player]

  def private_chance(self, s):
    """``[K, K]``: the probability of each pair of private cards given the table card dealt so
    far (the deals' chance reach, count / total per card, normalised; zero for impossible
    pairs)."""
    k = jnp.arange(self.num_cards)
    n, c = self.num_cards * self.copies, self.copies
    pair = (c / n) * ((c - (k[:, None] == k[None, :])) / (n - 1))
    t = s.cards[2]
    left = jnp.maximum(c - (k[:, None] == t) - (k[None, :] == t), 0)
    joint = jnp.where(t >= 0, pair * (left / (n - 2)), pair)
    return joint / jnp.sum(joint)

  # --- poker evaluation (local best response) ---------------------------------------------
  def with_private(self, s, player: int, k):
    """``s`` with ``player``'s card replaced by card ``k`` (int ``[]`` in ``[0, K)``): the same
    public history under another deal. A card that cannot be dealt there (all its copies
    already out) gives a state of zero chance reach, which :meth:`private_chance` weighs
    zero."""
    return s.replace(cards=s.cards.at[player].set(jnp.asarray(k, jnp.int32)))

  def chips(self, s):
    """int32 ``[2]``: the chips each player has put in the pot."""
    return s.contrib

  def showdown_equity(self, s, player: int, belief, key=None, num_boards: int = 0):
    """float ``[]``: ``player``'s probability of winning the showdown (ties count half) against
    an opponent whose card has distribution ``belief [K]`` (sums to one), the table card (if
    not yet dealt) dealt by chance given both private cards. Exact: ``key`` and
    ``num_boards`` are ignored."""
    del key, num_boards
    k = jnp.arange(self.num_cards, dtype=jnp.int32)
    own, table = s.cards[player], s.cards[2]
    tables = jnp.where(table >= 0, table, k)  # [T] the table cards considered
    left = self.copies - (tables[None, :] == own) - (tables[None, :] == k[:, None])
    n = self.num_cards * self.copies - 2
    p_table = jnp.where(table >= 0, (tables[None, :] == table).astype(jnp.float32),
                        jnp.maximum(left, 0) / n)  # [K, T] table card given the private cards

    def strength(card, t):
      rank, t_rank = card // self.suits, t // self.suits
      return (rank == t_rank) * self.num_cards + rank

    mine = strength(own, tables)[None, :]  # [1, T]
    theirs = strength(k[:, None], tables[None, :])  # [K, T]
    score = jnp.where(mine > theirs, 1.0, jnp.where(mine == theirs, 0.5, 0.0))
    equity = jnp.sum(p_table * score, axis=1) / jnp.maximum(jnp.sum(p_table, axis=1), 1e-30)
    return jnp.sum(belief * equity)

  # --- host side --------------------------------------------------------------------------
  def key_parts(self, key):
    """``(own card, table card, current player or None, (round-1 actions, round-2 actions))``
    of an information-state key, actions as tuples."""
    k = [int(x) for x in np.asarray(key).reshape(-1)]
    head = 3 if self.key_has_player else 2
    L = self.round_length
    rounds = tuple(tuple(a for a in k[head + r * L:head + (r + 1) * L] if a >= 0)
                   for r in (0, 1))
    return k[0], k[1], (k[2] if self.key_has_player else None), rounds

  def public_parts(self, key):
    """``(private cards dealt, table card or None, round-1 actions, round-2 actions)``."""
    k = [int(x) for x in np.asarray(key).reshape(-1)]
    L = self.round_length
    r1 = tuple(a for a in k[2:2 + L] if a >= 0)
    r2 = tuple(a for a in k[2 + L:2 + 2 * L] if a >= 0)
    return k[0], (k[1] if k[1] >= 0 else None), r1, r2

  def contributions(self, r1, r2):
    """Chips each player has put in after round-1 actions ``r1`` and round-2 actions ``r2``."""
    c = [1, 1]
    for acts, unit in ((r1, 2), (r2, 4)):
      for i, a in enumerate(acts):
        if a == CALL:
          c[i % 2] = max(c)
        elif a >= 2:
          c[i % 2] = max(c) + unit * (a - 1)
    return c


class GenericPoker(TwoRoundPoker):
  name = "generic_poker"
  param_defaults = PARAMS

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
    self.num_cards, self.copies, self.max_raises, self.num_bets = t, c, r, b
    self.set_shapes()
    self.sizes = (tuple(2 * (k + 1) for k in range(b)), tuple(4 * (k + 1) for k in range(b)))

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

  def info_string(self, key, player):
    own, table, _, (r1, r2) = self.key_parts(key)
    c = self.contributions(r1, r2)
    private = own if own >= 0 else "?"
    public = table if table >= 0 else "-"
    return (f"[Player: {player}][Private: {private}][Public: {public}]"
            f"[Round1: {self._betting(r1, self.sizes[0])}]"
            f"[Round2: {self._betting(r2, self.sizes[1])}][Pot: {c[0]} {c[1]}]")

  def public_name(self, key):
    dealt, table, r1, r2 = self.public_parts(key)
    return (dealt + (table is not None), table, r1, r2)

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
