"""Information-state abstractions for sampled search, and hold'em's E[HS^2] card buckets.

An :class:`Abstraction` maps a player's information state in one game to a
coarser key: ``key(game, state, player) -> int32 [W']``, a pure device
function (it jits and vmaps over batches of states; ``player`` a Python int).
Sampled search (MCCFR, OOS, ISMCTS, UCT, Smooth UCT) can key its tables by the
abstraction's key in place of ``game.info_key``, so every information state
with one abstract key shares one table row. The map need not respect perfect
recall: an abstract key may forget what the player knew earlier (imperfect
recall), as :class:`EHS2Buckets` forgets the buckets of earlier rounds.
An abstraction is built for one game (its ``game_string``); ``check_game``
refuses any other with a ``ValueError``.

:class:`Identity` is the game's own ``info_key`` (no abstraction).
:class:`EHS2Buckets` is the card abstraction of Heinrich and Silver, "Smooth
UCT Search in Computer Poker" (IJCAI 2015), Sec. 4.3 and Table 1, for
:class:`~jaxgt.games.holdem.LimitHoldem`: the betting stays unabstracted and
the cards of the current round become one bucket of expected hand strength
squared, E[HS^2] (Zinkevich, Johanson, Bowling, Piccione, "Regret
Minimization in Games with Incomplete Information", 2007).
The paper's exploration schedule for hold'em (its Eq. 3) is
:mod:`jaxgt.games.holdem_exploration`.
"""

from __future__ import annotations

import abc
import math

import jax
import jax.numpy as jnp
import numpy as np

from jaxgt.games.base import CHANCE, TERMINAL
from jaxgt.games.hand_eval import RANKS, card_string, hand_rank
from jaxgt.games.holdem import DECK, ROUNDS, HoldemState, LimitHoldem

PREFLOP_CLASSES = 169
"""Lossless preflop hand classes: 13 pairs, 78 suited and 78 offsuit rank pairs."""
PAPER_GRID = (PREFLOP_CLASSES, 1000, 500, 200)
"""Buckets per round (preflop, flop, turn, river): Heinrich and Silver 2015, Table 1, two-player."""
STREETS = ("preflop", "flop", "turn", "river")
_OPPONENT_HANDS = 45 * 44 // 2  # 990 opponent hands once the board is complete
_RIVER_DEN = (2 * _OPPONENT_HANDS) ** 2  # E[HS^2] on the river = wins2^2 / _RIVER_DEN
_PAIRS_45 = np.array([(a, b) for b in range(45) for a in range(b)], np.int32)  # [990, 2]
_NO_SKIP = 99  # a skipped position past every deck position


class Abstraction(abc.ABC):
  """A map of one game's information states to coarser keys (see the module docstring).

  Attributes: ``game_string`` (the game it is for), ``key_width`` (``W'``), ``name`` and
  ``description``. ``key(game, state, player)`` is int32 ``[W']``; equal game keys give equal
  abstract keys (the key is a function of the player's information state). Optional:
  ``acting_key(game, state, player)`` for a traced ``player`` (one evaluation), and, for a key
  costly only at some states, ``expensive(game, state, player) -> bool []`` with
  ``cheap_acting_key(game, state, player)`` (the key wherever ``expensive`` is false): search
  walks then evaluate the full key on the costly lanes alone
  (:meth:`jaxgt.solvers.sources.Rules.acting_keys`)."""

  name: str = "abstraction"
  description: str = ""
  game_string: str = ""
  key_width: int = 1

  def check_game(self, game) -> None:
    """``ValueError`` unless ``game`` is the game this abstraction is for (same game string)."""
    got = game.game_string() if hasattr(game, "game_string") else repr(game)
    if got != self.game_string:
      raise ValueError(f"abstraction {self.name!r} is for game {self.game_string!r}, "
                       f"not {got!r}")

  @abc.abstractmethod
  def key(self, game, state, player: int):
    """int32 ``[W']``: ``player``'s abstract information state at ``state`` (device, pure)."""

  def key_string(self, key, player: int) -> str:
    """A readable form of abstract key ``key`` (``[W']`` ints) of ``player`` (host)."""
    return f"player {player}: " + " ".join(str(int(k)) for k in np.asarray(key).reshape(-1))

  def __repr__(self) -> str:
    return f"<jaxgt abstraction {self.name} of {self.game_string}>"


def _check_player(player) -> int:
  if isinstance(player, bool) or not isinstance(player, (int, np.integer)) or player not in (0, 1):
    raise ValueError(f"player must be the Python int 0 or 1, got {player!r}")
  return int(player)


class Identity(Abstraction):
  """No abstraction: the game's own ``info_key`` (width ``game.info_key_width``)."""

  name = "identity"
  description = "the game's exact information states"

  def __init__(self, game):
    self.game_string = game.game_string()
    self.key_width = int(game.info_key_width)
    self._game = game

  def key(self, game, state, player: int):
    self.check_game(game)
    return game.info_key(state, _check_player(player)).astype(jnp.int32)

  def key_string(self, key, player: int) -> str:
    return self._game.info_string(np.asarray(key), _check_player(player))


# --- cards -------------------------------------------------------------------------------------

def preflop_class(a, b):
  """int32 ``[]``: the lossless class in ``[0, 169)`` of hole cards ``a != b`` (card ids): rank
  ``hi * 13 + lo`` suited, ``lo * 13 + hi`` offsuit and pairs (ranks ``0..12`` for ``2..A``)."""
  a, b = jnp.asarray(a, jnp.int32), jnp.asarray(b, jnp.int32)
  hi, lo = jnp.maximum(a // 4, b // 4), jnp.minimum(a // 4, b // 4)
  return jnp.where(a % 4 == b % 4, hi * 13 + lo, lo * 13 + hi).astype(jnp.int32)


def preflop_class_name(cls: int) -> str:
  """``"AKs"``, ``"T9o"``, ``"77"`` for a :func:`preflop_class` value (host)."""
  row, col = divmod(int(cls), 13)
  if row == col:
    return RANKS[row] * 2
  return (RANKS[row] + RANKS[col] + "s") if row > col else (RANKS[col] + RANKS[row] + "o")


def canonical_suits(hole, board):
  """``(hole [2], board [5])`` with the suits renamed canonically (-1 stays): suits ordered by
  (hole ranks, board ranks) as 13-bit masks, highest first, become suits 0, 1, ... Hands equal
  up to a renaming of suits (isomorphic: equal E[HS^2]) map to equal card sets; suits with
  equal masks are interchangeable, so their order does not matter."""
  hole, board = jnp.asarray(hole, jnp.int32), jnp.asarray(board, jnp.int32)

  def masks(cards):
    bit = jnp.where(cards >= 0, jnp.left_shift(jnp.int32(1), jnp.maximum(cards, 0) // 4), 0)
    return jnp.sum(jnp.where(cards[:, None] % 4 == jnp.arange(4), bit[:, None], 0), axis=0)

  sig = (masks(hole) << 13) | masks(board)  # [4]
  order = jnp.argsort(-sig, stable=True)  # suits, canonical first
  rename = jnp.argsort(order).astype(jnp.int32)  # suit -> its canonical name

  def apply(cards):
    return jnp.where(cards >= 0, cards // 4 * 4 + rename[cards % 4], -1).astype(jnp.int32)

  return apply(hole), apply(board)


def _known_rest(hole, board):
  """int32 ``[50]``: the cards not in ``hole [2]`` nor the dealt part of ``board [5]``, in
  increasing order, then the known cards."""
  cards = jnp.concatenate([hole, board])
  known = jnp.zeros(DECK, bool).at[jnp.where(cards >= 0, cards, DECK)].set(True, mode="drop")
  return jnp.argsort(known, stable=True)[:DECK - 2].astype(jnp.int32)


def _skip(pos, s1, s2):
  """Deck positions ``pos`` (int32 ``[...]``) renumbered to skip positions ``s1 < s2``."""
  pos = pos + (pos >= s1)
  return pos + (pos >= s2)


def _fmix(x):
  """The MurmurHash3 32-bit finalizer (a bijection of uint32 that mixes every bit)."""
  x = (x ^ (x >> 16)) * jnp.uint32(0x85EBCA6B)
  x = (x ^ (x >> 13)) * jnp.uint32(0xC2B2AE35)
  return x ^ (x >> 16)


def _draw(base, shape, stream: int, n: int):
  """int32 ``shape`` uniform in ``[0, n)``: ``fmix(base ^ fmix(golden * counter + stream
  constant)) mod n`` (bias below ``n / 2^32``), a counter hash an order cheaper than
  threefry here."""
  count = jnp.arange(math.prod(shape), dtype=jnp.uint32).reshape(shape)
  x = _fmix(base ^ _fmix(count * jnp.uint32(0x9E3779B9) + jnp.uint32(0x7F4A7C15 + 0x1000193
                                                                    * stream)))
  return (x % jnp.uint32(n)).astype(jnp.int32)


def _card_seed(seed, hole, board):
  """uint32 ``[]``: ``seed`` hashed with the hole cards' and the board's card sets (sorted), so
  the draws, and so the estimate, are a fixed function of the cards."""
  x = _fmix(jnp.asarray(seed, jnp.uint32) * jnp.uint32(0x9E3779B9) + jnp.uint32(0x632BE5AB))
  for c in jnp.concatenate([jnp.sort(hole), jnp.sort(board)]):
    x = _fmix(x ^ (c + 1).astype(jnp.uint32))
  return x


def _ehs2_counts(hole, board, base, runouts: int, opponents: int):
  """``(num int32 [], per_runout int32 [R])``: E[HS^2] of ``hole [2]`` on ``board [5]`` (-1
  undealt; 3 to 5 dealt) as ``num / den``. On the river ``num = wins2^2``, ``wins2`` twice the
  wins plus the ties against all 990 opponent hands, ``den = 1980^2``; on the flop and turn
  ``den = 4 R M (M - 1)`` and ``num`` the sum over ``R`` runouts of ``S^2 - Q``, ``S`` and
  ``Q`` the sums of ``2 X`` and of ``(2 X)^2`` over ``M`` independent uniform opponent hands
  (``X`` 1 win, 1/2 tie, 0 loss): ``(S^2 - Q) / (4 M (M - 1))`` is unbiased for the runout's
  ``HS^2``."""
  hole = jnp.asarray(hole, jnp.int32)
  board = jnp.asarray(board, jnp.int32)
  nb = jnp.sum(board >= 0)
  rest = _known_rest(hole, board)  # [50]: 47, 46 or 45 unknown cards first
  r_idx = jnp.arange(runouts, dtype=jnp.int32)
  # runout positions in `rest`: the flop draws two distinct of 47, the turn enumerates the
  # 46 river cards (runout r takes card r mod 46), the river has none
  a = _draw(base, (runouts,), 0, 47)
  b = _draw(base, (runouts,), 1, 46)
  b = b + (b >= a)
  flop, turn = nb == 3, nb == 4
  p1 = jnp.where(flop, jnp.minimum(a, b), jnp.where(turn, r_idx % 46, _NO_SKIP))
  p2 = jnp.where(flop, jnp.maximum(a, b), _NO_SKIP)
  fill = jnp.stack([rest[jnp.clip(p1, 0, 49)], rest[jnp.clip(p2, 0, 49)]], axis=1)  # [R, 2]
  slot3 = jnp.where(flop, fill[:, 0], board[3])
  slot4 = jnp.where(flop, fill[:, 1], jnp.where(turn, fill[:, 0], board[4]))
  full = jnp.concatenate([jnp.broadcast_to(board[:3], (runouts, 3)), slot3[:, None],
                          slot4[:, None]], axis=1)  # [R, 5]
  # opponent positions among the 45 cards left after the runout
  c = _draw(base, (runouts, opponents), 2, 45)
  d = _draw(base, (runouts, opponents), 3, 44)
  d = d + (d >= c)
  slot = r_idx[:, None] * opponents + jnp.arange(opponents, dtype=jnp.int32)  # [R, M]
  river = nb == 5
  valid = ~river | (slot < _OPPONENT_HANDS)
  pair = jnp.asarray(_PAIRS_45)[jnp.minimum(slot, _OPPONENT_HANDS - 1)]  # [R, M, 2]
  opp_pos = jnp.where(river, pair, jnp.stack([c, d], axis=-1))
  opp_pos = _skip(opp_pos, p1[:, None, None], p2[:, None, None])
  opp = rest[jnp.clip(opp_pos, 0, 49)]  # [R, M, 2]
  two = jnp.concatenate([jnp.broadcast_to(hole, (runouts, 1, 2)), opp], axis=1)  # [R, 1 + M, 2]
  ranks = hand_rank(jnp.concatenate(
      [two, jnp.broadcast_to(full[:, None, :], (runouts, 1 + opponents, 5))], axis=2))
  own, theirs = ranks[:, 0], ranks[:, 1:]  # [R], [R, M]
  x2 = ((own[:, None] > theirs).astype(jnp.int32) * 2 + (own[:, None] == theirs)) * valid
  s = jnp.sum(x2, axis=1)
  per_runout = s * s - jnp.sum(x2 * x2, axis=1)  # [R]
  wins2 = jnp.sum(x2)
  num = jnp.where(river, wins2 * wins2, jnp.sum(per_runout))
  return num.astype(jnp.int32), per_runout.astype(jnp.int32)


def _mc_den(runouts: int, opponents: int) -> int:
  return 4 * runouts * opponents * (opponents - 1)


def _check_sampling(runouts, opponents) -> tuple[int, int]:
  for name, v in (("runouts", runouts), ("opponents", opponents)):
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
      raise ValueError(f"{name} must be a positive int, got {v!r}")
  runouts, opponents = int(runouts), int(opponents)
  if runouts % 46:
    raise ValueError(f"runouts must be a multiple of 46 (the turn enumerates the 46 river "
                     f"cards), got {runouts}")
  if opponents < 2:
    raise ValueError(f"opponents must be at least 2 (E[HS^2] multiplies two independent "
                     f"opponent hands), got {opponents}")
  if runouts * opponents < _OPPONENT_HANDS:
    raise ValueError(f"runouts * opponents must be at least {_OPPONENT_HANDS} (the river "
                     f"enumerates every opponent hand), got {runouts} * {opponents}")
  if _mc_den(runouts, opponents) * 2 >= 2 ** 31:
    raise ValueError(f"runouts={runouts}, opponents={opponents}: too many samples for int32 "
                     f"counts")
  return runouts, opponents


def ehs2(hole, board, *, runouts: int = 184, opponents: int = 6, seed: int = 0):
  """``(estimate float [], standard_error float [])``: E[HS^2] of ``hole [2]`` on ``board
  [5]`` (card ids, -1 undealt; 3, 4 or 5 dealt), the expected squared hand strength against
  one uniformly random opponent hand (ties half), the expectation over the board cards to
  come. The river is exact (standard error 0); the flop and turn are unbiased estimates of
  ``runouts`` completions times ``opponents`` opponent hands (see :class:`EHS2Buckets`), drawn
  from a hash of ``seed`` and the cards (suits renamed by :func:`canonical_suits`, so
  isomorphic hands get one estimate); the standard error is the runouts' sample
  standard deviation over ``sqrt(runouts)`` (conservative on the turn, whose river cards are
  enumerated evenly). Pure; vmap for batches."""
  runouts, opponents = _check_sampling(runouts, opponents)
  hole, board = canonical_suits(hole, board)
  num, per = _ehs2_counts(hole, board, _card_seed(seed, hole, board), runouts, opponents)
  river = jnp.sum(board >= 0) == 5
  f = jnp.zeros(()).dtype
  est = jnp.where(river, num.astype(f) / _RIVER_DEN, num.astype(f) / _mc_den(runouts, opponents))
  u = per.astype(f) / (4 * opponents * (opponents - 1))
  se = jnp.std(u, ddof=1) / math.sqrt(runouts)
  return est, jnp.where(river, 0.0, se).astype(f)


def _thresholds(den: int, n: int, width: int) -> np.ndarray:
  """int32 ``[width]``: ``ceil(k den / n)`` for ``k = 1..n-1``, padded with ``2^31 - 1``:
  ``num / den >= k / n`` exactly when ``num >= t[k - 1]``."""
  t = np.full(width, 2 ** 31 - 1, np.int64)
  t[:n - 1] = [-(-k * den // n) for k in range(1, n)]
  return t.astype(np.int32)


class EHS2Buckets(Abstraction):
  """The E[HS^2] card abstraction of Heinrich and Silver, "Smooth UCT Search in Computer Poker"
  (IJCAI 2015), Sec. 4.3, for :class:`~jaxgt.games.holdem.LimitHoldem`.

  Key (int32 ``[7]``, ``key_width = 7``): ``[round * 8 + acting player + 4`` (the game's own
  first key word), ``player``, ``bucket``, the four rounds' betting codes ``]``: the betting
  of all rounds unabstracted, the round, and one bucket of the current round's cards only
  (imperfect recall: earlier rounds' buckets are forgotten, as in the paper). Buckets:

  * preflop: the 169 lossless hand classes (:func:`preflop_class`; ``grid[0]`` must be 169);
  * flop, turn, river: ``floor(E[HS^2] * n)`` (clipped to ``n - 1``) on the equidistant grid of
    ``n = grid[1], grid[2], grid[3]`` cells over ``[0, 1]`` (Table 1: 1000, 500, 200), computed
    in exact integer arithmetic from the counts below, so buckets do not depend on float
    precision;
  * ``-1`` before the player's hole cards are dealt; while a round's board cards are being
    dealt (chance nodes) the bucket of the last complete round's cards.

  E[HS^2] is the mean over the board cards to come of ``HS^2``, ``HS`` the hand's share of
  the opponent's 990 possible hands it beats (ties half) on the complete board. The river is
  exact (all 990 hands). The flop and turn use ``R = runouts`` board completions (the flop's
  two cards drawn uniformly; the turn's river card enumerated, each of the 46 equally often)
  and, on each, ``M = opponents`` independent uniform opponent hands with outcomes ``X_i``
  (1, 1/2, 0): ``sum_{i != j} X_i X_j / (M (M - 1))`` is unbiased for that completion's
  ``HS^2`` (products of independent opponents), and their mean for E[HS^2]. The draws come
  from a counter hash of ``seed`` and the hole cards' and the board's card sets after
  :func:`canonical_suits`, so a bucket is a fixed function of the cards, the same for hands
  equal up to a renaming of suits. Defaults ``R = 184``, ``M = 6``: ``R (M + 1) = 1288``
  evaluations of :func:`~jaxgt.games.hand_eval.hand_rank` a key, the same array shapes on every
  round so batches of mixed rounds vmap. Standard error of E[HS^2] (:func:`ehs2` reports it),
  measured over random hands: about 0.02 on the flop (0.017 to 0.028), about 0.018 reported on
  the turn (at most 0.025; the actual error is smaller, root mean square 0.013, the river
  cards being enumerated evenly), that is some 20 and 9 cells of Table 1's flop and turn
  grids. More ``runouts`` lower it as ``1 / sqrt(R)``.

  Cost, measured vmapped and jitted over 4096 states of mixed rounds on 2 CPU cores: about 80
  microseconds a key when the cores are idle, 1.5 to 2 times the time of its 1288 bare hand
  evaluations (the draws, the deck and the grid lookup make the rest); preflop states cost the
  same under ``vmap`` (a batch computes every round's arrays). A search walk evaluates only
  its decision lanes past the flop (:meth:`expensive`, :meth:`cheap_acting_key`).
  """

  name = "ehs2"
  key_width = 7

  def __init__(self, grid=PAPER_GRID, *, runouts: int = 184, opponents: int = 6, seed: int = 0):
    grid = tuple(grid)
    if len(grid) != ROUNDS or any(isinstance(n, bool) or not isinstance(n, (int, np.integer))
                                  or n < 1 for n in grid):
      raise ValueError(f"grid must be {ROUNDS} positive ints (preflop, flop, turn, river), "
                       f"got {grid!r}")
    if grid[0] != PREFLOP_CLASSES:
      raise ValueError(f"the preflop buckets are the {PREFLOP_CLASSES} lossless hand classes: "
                       f"grid[0] must be {PREFLOP_CLASSES}, got {grid[0]}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
      raise ValueError(f"seed must be a non-negative int, got {seed!r}")
    self.grid = tuple(int(n) for n in grid)
    self.runouts, self.opponents = _check_sampling(runouts, opponents)
    self.seed = int(seed)
    self.game_string = LimitHoldem().game_string()
    self.description = (f"E[HS^2] buckets {'/'.join(map(str, self.grid))} (preflop/flop/turn/"
                        f"river), betting unabstracted, imperfect recall")
    mc = _mc_den(self.runouts, self.opponents)
    width = max(self.grid[1:]) - 1 or 1
    self._thresholds = np.stack([_thresholds(mc, self.grid[1], width),
                                 _thresholds(mc, self.grid[2], width),
                                 _thresholds(_RIVER_DEN, self.grid[3], width)])  # [3, width]

  def card_bucket(self, hole, board):
    """int32 ``[]``: the bucket of hole cards ``hole [2]`` with ``board [5]`` (-1 undealt),
    of the round of the board cards dealt (0, 3, 4, 5; 1 or 2: preflop); -1 without hole
    cards."""
    hole, board = canonical_suits(hole, board)
    nb = jnp.sum(board >= 0)
    num, _ = _ehs2_counts(hole, board, _card_seed(self.seed, hole, board), self.runouts,
                          self.opponents)
    thr = jnp.asarray(self._thresholds)[jnp.clip(nb - 3, 0, 2)]
    post = jnp.sum(num >= thr).astype(jnp.int32)
    out = jnp.where(nb >= 3, post, preflop_class(hole[0], hole[1]))
    return jnp.where(jnp.all(hole >= 0), out, -1).astype(jnp.int32)

  def key(self, game, state: HoldemState, player: int):
    self.check_game(game)
    p = _check_player(player)
    bucket = self.card_bucket(state.cards[2 * p:2 * p + 2], state.cards[4:])
    return _ehs2_key(state, jnp.int32(p), bucket)

  def acting_key(self, game, state: HoldemState, player):
    """:meth:`key` for a traced ``player`` (int32 ``[]``, 0 or 1): one E[HS^2] evaluation where
    computing both players' keys and selecting would cost two (what a search walk asks at
    every node, for the acting player)."""
    self.check_game(game)
    p = jnp.asarray(player, jnp.int32)
    return _ehs2_key(state, p, self.card_bucket(_hole(state, p), state.cards[4:]))

  def expensive(self, game, state: HoldemState, player) -> jax.Array:
    """bool ``[]``: whether ``player``'s key (traced int32 ``[]``) at ``state`` needs E[HS^2]
    (hole cards dealt and a flop on the board); elsewhere :meth:`cheap_acting_key` is it."""
    p = jnp.asarray(player, jnp.int32)
    return jnp.all(_hole(state, p) >= 0) & (jnp.sum(state.cards[4:] >= 0) >= 3)

  def cheap_acting_key(self, game, state: HoldemState, player):
    """int32 ``[7]``: :meth:`acting_key` where :meth:`expensive` is false (the preflop class,
    or -1 before the deal) without any hand evaluation; bucket -1 where it is true. Search
    walks (:meth:`jaxgt.solvers.sources.Rules.acting_keys`) evaluate :meth:`acting_key` on
    the expensive decision lanes alone (under uniform play about 7% of a hold'em walk's
    lane-steps) and take this key on the others."""
    self.check_game(game)
    p = jnp.asarray(player, jnp.int32)
    hole = _hole(state, p)
    preflop = jnp.all(hole >= 0) & (jnp.sum(state.cards[4:] >= 0) < 3)
    return _ehs2_key(state, p, jnp.where(preflop, preflop_class(hole[0], hole[1]), -1))

  def key_string(self, key, player: int) -> str:
    """``[Round 1][Player: 0][Acting: 1][Bucket: flop 734/1000][Sequences: cr|c]`` (host)."""
    head, p, bucket, *betting = (int(k) for k in np.asarray(key).reshape(-1))
    round_, acting = head >> 3, (head & 7) - 4
    acting_s = {CHANCE: "chance", TERMINAL: "terminal"}.get(acting, str(acting))
    street = round_ - (acting == CHANCE and round_ > 0)  # a deal shows the last round's cards
    if bucket < 0:
      b = "none"
    elif street == 0:
      b = f"preflop {preflop_class_name(bucket)}"
    else:
      b = f"{STREETS[street]} {bucket}/{self.grid[street]}"
    return (f"[Round {round_}][Player: {p}][Acting: {acting_s}][Bucket: {b}]"
            f"[Sequences: {_sequences(round_, betting)}]")

  def bucket_of(self, hole, board) -> int:
    """:meth:`card_bucket` of host card ids ``hole [2]``, ``board [5]`` (-1 undealt), jitted
    once per abstraction (host)."""
    if not hasattr(self, "_card_bucket_jit"):
      self._card_bucket_jit = jax.jit(self.card_bucket)
    return int(self._card_bucket_jit(jnp.asarray(hole, jnp.int32), jnp.asarray(board, jnp.int32)))

  def hand_string(self, hole, board) -> str:
    """``"AsKs | QsJsTs: flop bucket 999/1000"`` for host card ids (-1 undealt)."""
    hole = [int(c) for c in hole]
    board = [int(c) for c in board] + [-1] * (5 - len(board))
    b = self.bucket_of(hole, board)
    nb = sum(c >= 0 for c in board)
    street = {3: 1, 4: 2, 5: 3}.get(nb, 0)
    what = preflop_class_name(b) if street == 0 else f"{b}/{self.grid[street]}"
    return (f"{_cards_string([c for c in hole if c >= 0])} | "
            f"{_cards_string([c for c in board if c >= 0])}: {STREETS[street]} bucket {what}")


def _hole(state: HoldemState, p):
  """int32 ``[2]``: player ``p``'s hole cards (traced ``p``; -1 undealt)."""
  return jax.lax.dynamic_slice(state.cards, (2 * p,), (2,))


def _ehs2_key(state: HoldemState, p, bucket):
  """int32 ``[7]``: :class:`EHS2Buckets`' key of player ``p`` with card bucket ``bucket``."""
  head = (state.round << 3) | (state.player + 4)
  return jnp.concatenate([jnp.stack([head, jnp.asarray(p, jnp.int32), bucket]),
                          state.betting]).astype(jnp.int32)


def _cards_string(cards) -> str:
  """``"AsKs"``: host card ids, highest first (OpenSpiel's card-set order)."""
  return "".join(card_string(c) for c in sorted(cards, reverse=True))


def _sequences(round_: int, betting) -> str:
  """``"cr|c"``: each round's actions up to ``round_`` as ACPC's letters (host)."""
  out = []
  for code in betting[:round_ + 1]:
    letters = ""
    while code:
      letters += "fcr"[(code & 3) - 1]
      code >>= 2
    out.append(letters)
  return "|".join(out)


ABSTRACTIONS = {"identity": "the game's own information states (any game)",
                "ehs2": "E[HS^2] card buckets of Heinrich and Silver 2015 (limit_holdem)"}
"""The abstractions :func:`make_abstraction` builds, by name."""


def make_abstraction(name: str, game, **params) -> Abstraction:
  """The abstraction ``name`` (:data:`ABSTRACTIONS`) for ``game``, with ``params`` for its
  constructor (``EHS2Buckets(grid, runouts=, opponents=, seed=)``); ``ValueError`` for an
  unknown name or a game it is not for."""
  if name == "identity":
    if params:
      raise ValueError(f"the identity abstraction takes no parameters, got {sorted(params)}")
    return Identity(game)
  if name == "ehs2":
    out = EHS2Buckets(**params)
    out.check_game(game)
    return out
  raise ValueError(f"unknown abstraction {name!r}; known: {', '.join(sorted(ABSTRACTIONS))}")
