"""Heads-up Limit Texas Hold'em, identical to OpenSpiel's ``universal_poker`` limit hold'em.

The game of OpenSpiel's ``hulh_game_string("fcpa")`` (the ACPC limit hold'em
definition): 52 cards (ids ``rank * 4 + suit``, see :mod:`jaxgt.games.hand_eval`),
blinds 10 (player 0, the big blind) and 5 (player 1), four betting rounds
(preflop, flop, turn, river) with 0, 3, 1, 1 board cards, fixed raises of
10, 10, 20, 20 chips, at most 3, 4, 4, 4 raises a round, player 1 first
preflop and player 0 first after; no stacks (ACPC ignores them in limit
games). Fold is legal only when facing a bet. ``bettingAbstraction=fcpa`` is
the full game in limit betting (fold, call, raise; ``fullgame`` is broken for
limit games in OpenSpiel, offering a raise "to 0 chips"). Paper: Bowling,
Burch, Johanson, Tammelin, "Heads-up limit hold'em poker is solved" (2015).

Chance deals one card per chance node, uniform over the cards left, outcome
id = card id: player 0's two hole cards, player 1's two, then each round's
board cards after the previous round's betting. Actions: 0 fold, 1 call
(check), 2 raise (OpenSpiel's ``kFold, kCall, kBet``). Returns in chips.

Information states are OpenSpiel's strings (``[Round r][Player: p][Pot: ..]
[Money: ..][Private: ..][Public: ..][Sequences: ..]``), which show hole cards
and board as card *sets*; the keys hold exactly that (sorted cards), so a
board whose flop and turn cards are swapped is one information state, as in
OpenSpiel: with these information states the game forgets which board card
came on which street (not of perfect recall across streets; a key with the
flop sorted and the turn and river in place would restore it). Key words (int32): ``round * 8 + player + 4``; the own hole cards
``(lo + 1) * 53 + hi + 1`` (-1 for a card not yet dealt); the board's sorted
cards as base-53 digits (< 53^5 < 2^31); each round's actions as base-4 digits
(``action + 1``). Pot and money follow from the betting. The public key holds
the number of hole cards dealt in place of the own cards. Features: one-hots
of the own cards (52; public: hole cards dealt, 5), the board (52), each
round's six action slots (4 x 6 x 3) and the player to act (chance, 0, 1,
terminal).

Private states: a player's two hole cards, ``K_p = 1326``, the pair ``a < b``
at index ``b (b - 1) / 2 + a`` (:func:`hole_index`, :data:`HAND_CARDS`). The
game is far too large to enumerate (about ``10^19`` histories by Knuth's
estimate, cards dealt in order); it is played, sampled and searched through its
rules.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from jaxgt import struct
from jaxgt.games.base import CHANCE, TERMINAL
from jaxgt.games.device import DeviceGame, uniform_grid_index
from jaxgt.games.hand_eval import card_string, hand_rank

PARAMS = {"players": 2}
DECK = 52
HOLE = 2  # hole cards per player
ROUNDS = 4
BLINDS = (10, 5)  # chips each player has in at the start
FIRST = (1, 0, 0, 0)  # who acts first in each round
RAISE = (10, 10, 20, 20)  # chips per raise in each round
MAX_RAISES = (3, 4, 4, 4)
DEALT_BY = (4, 7, 8, 9)  # cards dealt (hole and board) before each round's betting
MAX_ACTIONS = 6  # actions in one round at most: a check, the raises, a call
STACK = 2 ** 31 - 1  # ACPC's stack in limit games (OpenSpiel's "Money" = STACK - spent)
NUM_HANDS = DECK * (DECK - 1) // 2
FOLD, CALL, RAISE_ACTION = 0, 1, 2
OPENSPIEL = ("universal_poker(betting=limit,numPlayers=2,numRounds=4,blind=10 5,"
             "firstPlayer=2 1 1 1,numSuits=4,numRanks=13,numHoleCards=2,"
             "numBoardCards=0 3 1 1,raiseSize=10 10 20 20,maxRaises=3 4 4 4,"
             "bettingAbstraction=fcpa)")
_LETTERS = "fcr"  # betting digits 1, 2, 3 (action id + 1), ACPC's action letters


@struct.dataclass
class HoldemState:
  cards: jnp.ndarray  # [9] int32 in deal order: player 0's 2, player 1's 2, board 5; -1 undealt
  dealt: jnp.ndarray  # [] int32 cards dealt
  deck: jnp.ndarray  # [2] int32 dealt cards as bits (cards 0-31, 32-51)
  round: jnp.ndarray  # [] int32 betting round 0..3
  betting: jnp.ndarray  # [4] int32 each round's actions, base-4 digits (action + 1), first lowest
  num_acts: jnp.ndarray  # [] int32 actions in the current round
  raises: jnp.ndarray  # [] int32 raises in the current round
  spent: jnp.ndarray  # [2] int32 chips each player has put in
  player: jnp.ndarray  # [] int32 0, 1, CHANCE or TERMINAL
  folded: jnp.ndarray  # [] int32 the player who folded, -1 if none


def hole_index(a, b):
  """The private-state index of hole cards ``{a, b}`` (``a != b``): ``hi (hi - 1) / 2 + lo``."""
  lo, hi = jnp.minimum(a, b), jnp.maximum(a, b)
  return hi * (hi - 1) // 2 + lo


HAND_CARDS = np.array([(a, b) for b in range(DECK) for a in range(b)], np.int32)
"""``[1326, 2]`` the two cards ``(lo, hi)`` of each private index."""
_CARD_HANDS = np.zeros((DECK, NUM_HANDS), bool)  # [52, 1326] card in hand
_CARD_HANDS[HAND_CARDS[:, 0], np.arange(NUM_HANDS)] = True
_CARD_HANDS[HAND_CARDS[:, 1], np.arange(NUM_HANDS)] = True
_DISJOINT = (_CARD_HANDS.T.astype(np.float32) @ _CARD_HANDS.astype(np.float32)) == 0
_HANDS_OF_CARD = np.array([np.flatnonzero(_CARD_HANDS[c]) for c in range(DECK)], np.int32)
"""``[52, 51]`` the hands holding each card."""
_POSITION = np.stack([np.argmax(_HANDS_OF_CARD[HAND_CARDS[:, i]] == np.arange(NUM_HANDS)[:, None],
                                axis=1) for i in range(2)], axis=1).astype(np.int32)
"""``[1326, 2]`` where each hand is in the lists of its two cards (:data:`_HANDS_OF_CARD`)."""
"""``[1326, 1326]`` the two hands share no card."""


def _pair_code(x, y):
  """Cards ``x, y`` (-1: not there) as ``(lo + 1) * 53 + hi + 1`` of the sorted pair."""
  return (jnp.minimum(x, y) + 1) * (DECK + 1) + jnp.maximum(x, y) + 1


def _board_code(board):
  """The board's card set (``[5]``, -1 undealt) as sorted base-53 digits (< 53^5 < 2^31)."""
  digits = jnp.sort(board) + 1
  return jnp.sum(digits * (DECK + 1) ** jnp.arange(5, dtype=jnp.int32)).astype(jnp.int32)


def _digits(code):
  """``[..., 6]`` the base-4 digits of betting codes (0: no action)."""
  return (code[..., None] >> (2 * jnp.arange(MAX_ACTIONS))) & 3


class LimitHoldem(DeviceGame):
  name = "limit_holdem"
  param_defaults = PARAMS
  num_actions = 3
  num_outcomes = DECK
  max_length = 4 + 5 + (MAX_ACTIONS - 1) + (ROUNDS - 1) * MAX_ACTIONS  # 9 deals; 5 preflop bets
  big_blind = 10.0
  # the loser's chips: the big blind and every raise of every round called
  max_utility = float(BLINDS[0] + sum(r * k for r, k in zip(RAISE, MAX_RAISES)))
  info_key_width = 3 + ROUNDS  # (round and player, own cards, board, betting per round)
  public_key_width = 3 + ROUNDS  # (round and player, hole cards dealt, board, betting)
  info_feature_size = 2 * DECK + ROUNDS * MAX_ACTIONS * 3 + 4
  public_feature_size = 5 + DECK + ROUNDS * MAX_ACTIONS * 3 + 4
  num_private = (NUM_HANDS, NUM_HANDS)

  def init(self):
    return HoldemState(
        cards=jnp.full(4 + 5, -1, jnp.int32), dealt=jnp.int32(0),
        deck=jnp.zeros(2, jnp.int32), round=jnp.int32(0),
        betting=jnp.zeros(ROUNDS, jnp.int32), num_acts=jnp.int32(0), raises=jnp.int32(0),
        spent=jnp.array(BLINDS, jnp.int32), player=jnp.int32(CHANCE), folded=jnp.int32(-1))

  def current_player(self, s):
    return s.player

  def legal_mask(self, s):
    acting = (s.player == 0) | (s.player == 1)
    own = s.spent[jnp.clip(s.player, 0, 1)]
    can_raise = s.raises < jnp.array(MAX_RAISES, jnp.int32)[s.round]
    return acting & jnp.stack([own < jnp.max(s.spent), jnp.bool_(True), can_raise])

  def chance_probs(self, s):
    bits = jnp.concatenate([s.deck[0] >> jnp.arange(32, dtype=jnp.int32),
                            s.deck[1] >> jnp.arange(DECK - 32, dtype=jnp.int32)]) & 1
    return jnp.where((s.player == CHANCE) & (bits == 0), 1.0 / (DECK - s.dealt), 0.0)

  def sample_chance(self, s, u):
    """int32 ``[]``: the ``k``-th card not yet dealt (in id order), ``k = floor(u (52 -
    dealt))`` on ``u``'s grid (:func:`~jaxgt.games.device.uniform_grid_index`): uniform over
    the cards left, as :meth:`chance_probs`, without the 52-wide weights."""
    return kth_free_card(s.deck, uniform_grid_index(u, DECK - s.dealt))

  def step(self, s, action):
    action = jnp.asarray(action, jnp.int32)
    p = s.player
    chance = p == CHANCE
    acting = (p == 0) | (p == 1)
    # a deal
    cards = jnp.where(chance & (jnp.arange(9) == s.dealt), action, s.cards)
    dealt = s.dealt + chance
    deck = s.deck | jnp.where(chance & (jnp.arange(2) == action >> 5),
                              jnp.left_shift(jnp.int32(1), action & 31), 0)
    first = jnp.array(FIRST, jnp.int32)[s.round]
    after_deal = jnp.where(dealt < jnp.array(DEALT_BY, jnp.int32)[s.round], CHANCE, first)
    # a bet
    fold, call, raise_ = acting & (action == FOLD), acting & (action == CALL), \
        acting & (action == RAISE_ACTION)
    to = jnp.max(s.spent) + jnp.where(raise_, jnp.array(RAISE, jnp.int32)[s.round], 0)
    spent = jnp.where((jnp.arange(2) == p) & (call | raise_), to, s.spent)
    betting = s.betting + jnp.where(acting & (jnp.arange(ROUNDS) == s.round),
                                    (action + 1) << (2 * s.num_acts), 0)
    num_acts = s.num_acts + acting
    over = call & (num_acts >= 2)
    last = s.round == ROUNDS - 1
    advance = over & ~last
    after_bet = jnp.where(fold | (over & last), TERMINAL, jnp.where(over, CHANCE, 1 - p))
    player = jnp.where(chance, after_deal, jnp.where(acting, after_bet, p))
    return HoldemState(
        cards=cards.astype(jnp.int32), dealt=dealt.astype(jnp.int32), deck=deck.astype(jnp.int32),
        round=(s.round + advance).astype(jnp.int32), betting=betting.astype(jnp.int32),
        num_acts=jnp.where(advance, 0, num_acts).astype(jnp.int32),
        raises=jnp.where(advance, 0, s.raises + raise_).astype(jnp.int32),
        spent=spent.astype(jnp.int32), player=player.astype(jnp.int32),
        folded=jnp.where(fold, p, s.folded).astype(jnp.int32))

  def hand_values(self, s):
    """int32 ``[2]``: each player's :func:`~jaxgt.games.hand_eval.hand_rank` with the full
    board (meaningful once all cards are dealt)."""
    board = jnp.broadcast_to(s.cards[4:], (2, 5))
    return hand_rank(jnp.concatenate([s.cards[:4].reshape(2, HOLE), board], axis=1))

  def returns(self, s):
    v = self.hand_values(s)
    showdown = jnp.where(v[0] > v[1], s.spent[1], jnp.where(v[0] < v[1], -s.spent[0], 0))
    u0 = jnp.where(s.folded == 0, -s.spent[0], jnp.where(s.folded == 1, s.spent[1], showdown))
    u0 = jnp.where(s.player == TERMINAL, u0, 0).astype(jnp.zeros(()).dtype)
    return jnp.stack([u0, -u0])

  def _head(self, s):
    return (s.round << 3) | (s.player + 4)

  def info_key(self, s, player):
    own = _pair_code(s.cards[2 * player], s.cards[2 * player + 1])
    return jnp.concatenate([jnp.stack([self._head(s), own, _board_code(s.cards[4:])]),
                            s.betting]).astype(jnp.int32)

  def public_key(self, s):
    return jnp.concatenate([jnp.stack([self._head(s), jnp.minimum(s.dealt, 4),
                                       _board_code(s.cards[4:])]), s.betting]).astype(jnp.int32)

  def _common_features(self, s):
    bets = (_digits(s.betting)[..., None] == jnp.arange(1, 4)).astype(jnp.float32).reshape(-1)
    who = (jnp.array([CHANCE, 0, 1, TERMINAL]) == s.player).astype(jnp.float32)
    board = jnp.any(jnp.arange(DECK)[:, None] == s.cards[None, 4:], axis=1)
    return board.astype(jnp.float32), bets, who

  def info_features(self, s, player):
    own = jnp.any(jnp.arange(DECK)[:, None] == s.cards[None, 2 * player:2 * player + 2], axis=1)
    return jnp.concatenate([own.astype(jnp.float32), *self._common_features(s)])

  def public_features(self, s):
    hole = (jnp.arange(5) == jnp.minimum(s.dealt, 4)).astype(jnp.float32)
    return jnp.concatenate([hole, *self._common_features(s)])

  def private_index(self, s, player):
    a, b = s.cards[2 * player], s.cards[2 * player + 1]
    return jnp.where(b >= 0, hole_index(a, b), -1).astype(jnp.int32)

  def private_chance(self, s):
    """``[1326, 1326]``: ``1 / (C(52 - n, 2) C(50 - n, 2))`` for each pair of disjoint hands
    disjoint from the ``n`` board cards dealt, 0 elsewhere."""
    hit = jnp.any(jnp.asarray(_CARD_HANDS)[jnp.clip(s.cards[4:], 0)]
                  & (s.cards[4:, None] >= 0), axis=0)  # [1326] hand meets the board
    ok = jnp.asarray(_DISJOINT) & ~hit[:, None] & ~hit[None, :]
    n = jnp.sum(s.cards[4:] >= 0)
    left = DECK - n
    total = (left * (left - 1) // 2) * ((left - 2) * (left - 3) // 2)
    return ok / total

  def terminal_values(self, s, player: int, opp_reach):
    """float ``[1326]``: ``sum_k' private_chance(s)[k, k'] u(k, k') opp_reach[k']`` at a
    terminal ``s`` (``u`` ``player``'s utility with hand ``k`` against ``k'``), without the
    ``[1326, 1326]`` matrix (Johanson et al. 2011, "Accelerating best response calculation in
    large extensive games", Sec. 4): a fold pays a constant, so only the opponent's reach on
    hands disjoint from ``k`` counts, by inclusion-exclusion over ``k``'s two cards; a showdown
    sorts the hands by strength and takes, per hand, the reach of the weaker and of the
    stronger hands (a cumulative sum in strength order) minus those of the 51 hands that share
    each of its cards. The strengths, the order and the masks depend on ``s`` only (constant
    in a solver's loop)."""
    cards = jnp.asarray(_CARD_HANDS)  # [52, K]
    board = s.cards[4:]
    hit = jnp.any(cards[jnp.clip(board, 0)] & (board[:, None] >= 0), axis=0)  # [K]
    r = jnp.where(hit, 0.0, jnp.asarray(opp_reach))
    n = jnp.sum(board >= 0)
    left = DECK - n
    total = ((left * (left - 1) // 2) * ((left - 2) * (left - 3) // 2)).astype(r.dtype)
    lo, hi = jnp.asarray(HAND_CARDS[:, 0]), jnp.asarray(HAND_CARDS[:, 1])
    pos = jnp.asarray(_POSITION)
    of_card = jnp.asarray(_HANDS_OF_CARD)  # [52, 51]
    r_card = r[of_card]  # [52, 51] the reach of the hands holding each card
    per_card = jnp.sum(r_card, axis=1)
    # reach of the opponent's hands disjoint from each hand (the hand itself added back)
    disjoint = jnp.sum(r) - per_card[lo] - per_card[hi] + r
    o = 1 - player
    fold_u = jnp.where(s.folded == player, -s.spent[player], s.spent[o]).astype(r.dtype)
    # showdown: strengths with the full board
    hands = jnp.concatenate([jnp.asarray(HAND_CARDS), jnp.broadcast_to(board, (NUM_HANDS, 5))],
                            axis=1)
    strength = hand_rank(hands)  # [K]
    order = jnp.argsort(strength)
    sorted_s = strength[order]
    below = jnp.searchsorted(sorted_s, strength, side="left")  # hands strictly weaker
    upto = jnp.searchsorted(sorted_s, strength, side="right")  # weaker or tied
    cum = jnp.concatenate([jnp.zeros(1, r.dtype), jnp.cumsum(r[order])])  # [K + 1]
    # per card c, the reach of c's hands weaker than (or as strong as) each of c's hands
    s_card = strength[of_card]  # [52, 51]
    diff = s_card[:, None, :] - s_card[:, :, None]  # [52, i, j]: hand j against hand i
    less_card = jnp.einsum("cij,cj->ci", (diff < 0).astype(r.dtype), r_card)
    le_card = jnp.einsum("cij,cj->ci", (diff <= 0).astype(r.dtype), r_card)
    less = less_card[lo, pos[:, 0]] + less_card[hi, pos[:, 1]]
    less_eq = le_card[lo, pos[:, 0]] + le_card[hi, pos[:, 1]]
    weaker = cum[below] - less
    # k ties with itself: the sums over its cards remove it twice, so it is added back once
    stronger = disjoint - (cum[upto] - less_eq + r)
    win = s.spent[o].astype(r.dtype)  # equal at a showdown: both called
    showdown = win * (weaker - stronger)
    values = jnp.where(s.folded >= 0, fold_u * disjoint, showdown) / total
    return jnp.where(hit | (s.player != TERMINAL), 0.0, values)

  # poker evaluation (local best response)
  def with_private(self, s, player: int, k):
    """``s`` with ``player``'s hole cards replaced by hand ``k`` (int ``[]`` in ``[0, 1326)``,
    cards :data:`HAND_CARDS` ``[k]``; the dealt-card bits follow): the same public history
    under another deal. A hand that shares a card with the rest of the deal gives a state of
    zero chance reach, which :meth:`private_chance` weighs zero."""
    hand = jnp.asarray(HAND_CARDS)[jnp.asarray(k, jnp.int32)]
    cards = s.cards.at[2 * player:2 * player + 2].set(hand)
    return s.replace(cards=cards, deck=_deck_bits(cards))

  def chips(self, s):
    """int32 ``[2]``: the chips each player has put in the pot."""
    return s.spent

  def showdown_equity(self, s, player: int, belief, key, num_boards: int = 64):
    """float ``[]``: ``player``'s probability of winning the showdown (ties count half) against
    an opponent whose hand has distribution ``belief [1326]`` (sums to one; zero on hands
    that meet the cards ``player`` sees), the rest of the board dealt by chance.

    Estimated from ``num_boards`` completions of the board drawn with ``key`` (uniform over
    the cards ``player`` does not see); each opponent hand is scored on the completions that
    miss it, so each hand's estimate is unbiased. Exact once the board is complete."""
    own = s.cards[2 * player:2 * player + 2]
    board = s.cards[4:]
    seen = jnp.zeros(DECK, bool).at[jnp.where(own >= 0, own, DECK)].set(True, mode="drop")
    seen = seen.at[jnp.where(board >= 0, board, DECK)].set(True, mode="drop")
    noise = jnp.where(seen, jnp.inf, jax.random.uniform(key, (num_boards, DECK)))
    fresh = jnp.argsort(noise, axis=1)[:, :5].astype(jnp.int32)  # [M, 5] distinct unseen cards
    boards = jnp.where(board >= 0, board, fresh)  # [M, 5] dealt slots kept, the rest drawn
    mine = hand_rank(jnp.concatenate([jnp.broadcast_to(own, (num_boards, HOLE)), boards], 1))
    hands = jnp.asarray(HAND_CARDS)
    seven = jnp.concatenate([jnp.broadcast_to(hands, (num_boards, NUM_HANDS, HOLE)),
                             jnp.broadcast_to(boards[:, None], (num_boards, NUM_HANDS, 5))], 2)
    theirs = hand_rank(seven)  # [M, 1326]
    ok = ~jnp.any(hands[None, :, :, None] == boards[:, None, None, :], axis=(2, 3))
    score = jnp.where(mine[:, None] > theirs, 1.0, jnp.where(mine[:, None] == theirs, 0.5, 0.0))
    n = jnp.sum(ok, axis=0)
    equity = jnp.where(n > 0, jnp.sum(ok * score, axis=0) / jnp.maximum(n, 1), 0.5)
    return jnp.sum(belief * equity)

  # host side
  def info_string(self, key, player):
    head, own, board, *betting = (int(k) for k in np.asarray(key))
    cards = [c for c in (own // (DECK + 1) - 1, own % (DECK + 1) - 1) if c >= 0]
    return _string(head, cards, _decode_board(board), betting)

  def public_name(self, key):
    head, hole, board, *betting = (int(k) for k in np.asarray(key))
    return (head & 7) - 4, hole, _cards_string(_decode_board(board)), _sequences(head >> 3,
                                                                                 betting)

  def action_string(self, a):
    return ("Fold", "Call", "Bet")[a]

  def openspiel_game_string(self):
    return OPENSPIEL


def _select_bit(x, k):
  """int32 ``[]``: the position of the ``k``-th (from 0) set bit of ``x`` (uint32 ``[]``
  with more than ``k`` set bits), by halving: five population counts."""
  pos = jnp.int32(0)
  for width in (16, 8, 4, 2, 1):
    low = x & jnp.uint32((1 << width) - 1)
    c = jax.lax.population_count(low).astype(jnp.int32)
    up = k >= c
    k = jnp.where(up, k - c, k)
    x = jnp.where(up, x >> width, low)
    pos = pos + jnp.where(up, width, 0)
  return pos


def kth_free_card(deck, k):
  """int32 ``[]``: the ``k``-th (from 0) card id whose bit is clear in ``deck`` (int32 ``[2]``,
  cards 0-31 and 32-51 as bits; ``0 <= k <`` the number of clear bits)."""
  free0 = ~jax.lax.bitcast_convert_type(deck[0], jnp.uint32)
  free1 = ~jax.lax.bitcast_convert_type(deck[1], jnp.uint32) & jnp.uint32((1 << (DECK - 32)) - 1)
  n0 = jax.lax.population_count(free0).astype(jnp.int32)
  high = k >= n0
  return jnp.where(high, 32, 0) + _select_bit(jnp.where(high, free1, free0),
                                              jnp.where(high, k - n0, k))


def _deck_bits(cards):
  """int32 ``[2]``: the cards ``cards`` (``[9]``, -1 undealt) as bits (cards 0-31, 32-51)."""
  bit = jnp.where(cards >= 0, jnp.left_shift(jnp.int32(1), cards & 31), 0)
  word = cards >> 5
  return jnp.stack([functools.reduce(jnp.bitwise_or, list(jnp.where(word == w, bit, 0)))
                    for w in (0, 1)]).astype(jnp.int32)


def _decode_board(code: int) -> list:
  out = []
  for _ in range(5):
    code, d = divmod(code, DECK + 1)
    if d:
      out.append(d - 1)
  return out


def _cards_string(cards) -> str:
  """OpenSpiel's ``CardSet::ToString``: highest rank first, suits ``s h d c``."""
  return "".join(card_string(c) for c in sorted(cards, reverse=True))


def _letters(code: int) -> str:
  out = ""
  while code:
    out += _LETTERS[(code & 3) - 1]
    code >>= 2
  return out


def _sequences(round_: int, betting) -> str:
  return "|".join(_letters(betting[r]) for r in range(round_ + 1))


def replay(betting) -> tuple[list, int]:
  """``(spent [2], folded player or -1)`` after the betting codes ``betting [4]``."""
  spent, folded = list(BLINDS), -1
  for r, code in enumerate(betting):
    p = FIRST[r]
    for letter in _letters(code):
      if letter == "f":
        folded = p
      else:
        spent[p] = max(spent) + (RAISE[r] if letter == "r" else 0)
      p = 1 - p
  return spent, folded


def _string(head: int, own, board, betting) -> str:
  round_, player = head >> 3, (head & 7) - 4
  spent, folded = replay(betting)
  pot = max(spent) * (2 - (folded >= 0))
  money = " ".join(str(STACK - x) for x in spent)
  return (f"[Round {round_}][Player: {player}][Pot: {pot}][Money: {money}]"
          f"[Private: {_cards_string(own)}][Public: {_cards_string(board)}]"
          f"[Sequences: {_sequences(round_, betting)}]")

