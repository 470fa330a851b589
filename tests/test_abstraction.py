"""Information-state abstractions: hold'em's E[HS^2] buckets against brute-force enumeration with
the hand evaluator, the 169 preflop classes, abstract keys over betting and cards, the game check,
and Heinrich and Silver's (2015) exploration schedule on hands worked out by hand."""

import itertools
from fractions import Fraction

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxgt.core.playout import trajectories
from jaxgt.games import CHANCE, TERMINAL, make
from jaxgt.games.abstraction import (PAPER_GRID, EHS2Buckets, Identity, canonical_suits, ehs2,
                                     make_abstraction, preflop_class, preflop_class_name)
from jaxgt.games.holdem_exploration import (MAX_POT, exploration_constant, pot,
                                            remaining_potential, round_start)
from jaxgt.games.hand_eval import hand_rank
from jaxgt.games.holdem import HAND_CARDS, LimitHoldem

GAME = LimitHoldem()
ABS = EHS2Buckets()
_step = jax.jit(GAME.step)
_player = jax.jit(GAME.current_player)
_hand_rank = jax.jit(hand_rank)
_ehs2 = jax.jit(ehs2)
_ehs2_seeds = jax.jit(jax.vmap(lambda seed, h, b: ehs2(h, b, seed=seed), in_axes=(0, None, None)))
_KEY_BATCH = 32  # every batch of abstract keys has this size: one compilation


@jax.jit
@jax.vmap
def _keys_both(state):
  """int32 ``[B, 2, 7]``: both players' abstract keys of a batch of states."""
  return jnp.stack([ABS.key(GAME, state, 0), ABS.key(GAME, state, 1)])


def _keys(states):
  """``[N, 2, 7]`` keys of a list of states (or a stacked batch), in batches of _KEY_BATCH."""
  if isinstance(states, list):
    states = jax.tree_util.tree_map(lambda *x: jnp.stack(x), *states)
  n = states.round.shape[0]
  pad = -n % _KEY_BATCH
  states = jax.tree_util.tree_map(
      lambda x: jnp.concatenate([x, jnp.repeat(x[:1], pad, axis=0)]), states)
  out = [np.asarray(_keys_both(jax.tree_util.tree_map(lambda x: x[i:i + _KEY_BATCH], states)))
         for i in range(0, n + pad, _KEY_BATCH)]
  return np.concatenate(out)[:n]


def _card(name):
  return "23456789TJQKA".index(name[0]) * 4 + "cdhs".index(name[1])


def _cards(text):
  return [_card(c) for c in text.split()]


def _board(cards):
  return np.array(list(cards) + [-1] * (5 - len(cards)), np.int32)


def _play(deals, actions):
  """The state after dealing ``deals`` (card names: player 0's two, player 1's two, the board)
  and betting ``actions`` (ids, in order; chance nodes take the next deal)."""
  s, deals, actions = GAME.init(), iter(_cards(deals)), iter(actions)
  while True:
    p = int(_player(s))
    if p == TERMINAL:
      return s
    nxt = next(deals if p == CHANCE else actions, None)
    if nxt is None:
      return s
    s = _step(s, nxt)


# --- brute-force references (NumPy enumeration, jaxgt's hand evaluator) ------------------------

_CHUNK = 1 << 16


def _ranks(hands):
  """``hand_rank`` of ``hands [..., 7]`` in fixed-size chunks (one compilation for every size)."""
  hands = np.asarray(hands, np.int32)
  flat = hands.reshape(-1, 7)
  n = len(flat)
  padded = np.tile(np.arange(7, dtype=np.int32), (-(-n // _CHUNK) * _CHUNK, 1))
  padded[:n] = flat
  out = [np.asarray(_hand_rank(jnp.asarray(c))) for c in np.split(padded, len(padded) // _CHUNK)]
  return np.concatenate(out)[:n].reshape(hands.shape[:-1])


def _strengths(hole, board, runs):
  """``[len(runs)]`` HS of ``hole`` on ``board`` completed by each of ``runs`` against every
  opponent hand of the cards left (ties half), enumerated."""
  rest = np.array([c for c in range(52) if c not in set(hole) | set(board)], np.int32)
  pairs = np.array(list(itertools.combinations(rest, 2)), np.int32)  # [P, 2]
  runs = np.asarray(runs, np.int32).reshape(len(runs), -1)
  full = np.concatenate([np.broadcast_to(np.asarray(board, np.int32), (len(runs), len(board))),
                         runs], axis=1)  # [R, 5]
  own = _ranks(np.concatenate([np.broadcast_to(hole, (len(runs), 2)), full], axis=1))  # [R]
  theirs = _ranks(np.concatenate([np.broadcast_to(pairs, (len(runs),) + pairs.shape),
                                  np.broadcast_to(full[:, None], (len(runs), len(pairs), 5))],
                                 axis=2))  # [R, P]
  ok = ~np.any(pairs[None, :, :, None] == runs[:, None, None, :], axis=(2, 3))  # [R, P]
  assert np.all(ok.sum(axis=1) == 990)
  x = (own[:, None] > theirs) + 0.5 * (own[:, None] == theirs)
  return np.sum(x * ok, axis=1) / 990


def _exact_ehs2(hole, board):
  """E[HS^2] of ``hole`` on the dealt ``board`` (3 or 4 cards): every runout, every opponent."""
  rest = [c for c in range(52) if c not in set(hole) | set(board)]
  runs = list(itertools.combinations(rest, 5 - len(board)))
  return float(np.mean(_strengths(hole, board, runs) ** 2))


def _random_deal(rng, n):
  return rng.permutation(52)[:n].astype(np.int32)


# --- E[HS^2] -----------------------------------------------------------------------------------

def test_river_ehs2_and_bucket_match_enumeration():
  rng = np.random.default_rng(0)
  deals = [_random_deal(rng, 7) for _ in range(4)] + [np.array(_cards("2c 7d 2h 9s Jd Qc 4h"))]
  for d in deals:
    hole, board = list(d[:2]), list(d[2:])
    wins2 = int(round(_strengths(hole, board[:3], [board[3:]])[0] * 1980))  # twice wins + ties
    want = Fraction(wins2, 1980) ** 2
    est, se = _ehs2(jnp.asarray(hole), jnp.asarray(board))
    assert float(se) == 0.0
    assert float(est) == pytest.approx(float(want), rel=1e-12, abs=0)
    assert ABS.bucket_of(hole, board) == min(int(want * PAPER_GRID[3]), PAPER_GRID[3] - 1)


def test_flop_and_turn_estimates_are_within_their_standard_error_of_enumeration():
  rng = np.random.default_rng(1)
  for nb in (3, 3, 4, 4):
    d = _random_deal(rng, 2 + nb)
    exact = _exact_ehs2(list(d[:2]), list(d[2:]))
    est, se = _ehs2(jnp.asarray(d[:2]), jnp.asarray(_board(d[2:])))
    assert 0.005 < float(se) < 0.035
    assert abs(float(est) - exact) < 4 * float(se), (d, exact, float(est), float(se))
    bucket = ABS.bucket_of(d[:2], _board(d[2:]))
    n = PAPER_GRID[nb - 2]
    assert abs(bucket - exact * n) < 4 * float(se) * n + 1


@pytest.mark.slow
def test_documented_standard_errors_on_random_hands():
  """The standard errors :class:`EHS2Buckets` states: about 0.02 on the flop and 0.018 reported
  on the turn, the turn's actual error smaller."""
  rng = np.random.default_rng(11)
  for nb, (lo, hi), rms_max in ((3, (0.012, 0.03), 0.03), (4, (0.008, 0.027), 0.02)):
    errs, ses = [], []
    for _ in range(16):
      d = _random_deal(rng, 2 + nb)
      est, se = _ehs2(jnp.asarray(d[:2]), jnp.asarray(_board(d[2:])))
      errs.append(float(est) - _exact_ehs2(list(d[:2]), list(d[2:])))
      ses.append(float(se))
    assert lo < np.mean(ses) < hi and max(ses) < 0.035
    assert np.sqrt(np.mean(np.square(errs))) < rms_max
    assert np.all(np.abs(errs) < 4 * np.array(ses))


def test_flop_estimate_is_unbiased_over_seeds():
  hole, flop = _cards("Th 9h"), _cards("8h 2h Jc")  # a straight draw and a flush draw
  exact = _exact_ehs2(hole, flop)
  seeds = 256
  est, se = (np.asarray(x) for x in _ehs2_seeds(jnp.arange(seeds), jnp.asarray(hole),
                                                 jnp.asarray(_board(flop))))
  sd = float(np.std(est))
  assert sd == pytest.approx(float(np.mean(se)), rel=0.25)  # the reported error is the spread
  assert abs(float(np.mean(est)) - exact) < 4 * sd / np.sqrt(seeds)


def test_nuts_have_ehs2_one_and_the_top_bucket():
  hole = _cards("As Ks")
  for board, top in ((_cards("Qs Js Ts"), 999), (_cards("Qs Js Ts 2c"), 499),
                     (_cards("Qs Js Ts 2c 3d"), 199)):
    est, _ = _ehs2(jnp.asarray(hole), jnp.asarray(_board(board)))
    assert float(est) == 1.0
    assert ABS.bucket_of(hole, _board(board)) == top
  # the second nuts: ties with the other ace-high straights count half
  hole, board = _cards("Ah Kd"), _cards("Qs Jc Tc 2d 3h")
  hs = _strengths(hole, board[:3], [board[3:]])[0]
  assert 0.9 < hs < 1.0
  assert float(_ehs2(jnp.asarray(hole), jnp.asarray(board))[0]) == pytest.approx(hs ** 2)


def test_estimates_are_fixed_functions_of_the_card_sets():
  hole, flop = _cards("Ad 7c"), _cards("Kh 7s 2d")
  a = _ehs2(jnp.asarray(hole), jnp.asarray(_board(flop)))
  b = _ehs2(jnp.asarray(hole[::-1]), jnp.asarray(_board(flop[::-1])))  # same sets, other order
  assert float(a[0]) == float(b[0]) and ABS.bucket_of(hole, _board(flop)) == \
      ABS.bucket_of(hole[::-1], _board(flop[::-1]))
  est, _ = _ehs2_seeds(jnp.arange(256), jnp.asarray(hole), jnp.asarray(_board(flop)))
  assert float(est[0]) == float(a[0]) and len(np.unique(np.asarray(est))) > 100  # seed 0, others


def test_hands_equal_up_to_suits_share_estimates_and_buckets():
  rng = np.random.default_rng(3)
  canon = jax.jit(canonical_suits)
  for nb in (3, 4, 3, 4):
    d = _random_deal(rng, 2 + nb)
    perm = rng.permutation(4)
    e = d // 4 * 4 + perm[d % 4]  # the same hand with the suits renamed
    assert set(e.tolist()) != set(d.tolist())  # another information state
    cd, ce = (canon(jnp.asarray(h[:2]), jnp.asarray(_board(h[2:]))) for h in (d, e))
    assert set(np.asarray(cd[0]).tolist()) == set(np.asarray(ce[0]).tolist())
    assert set(np.asarray(cd[1]).tolist()) == set(np.asarray(ce[1]).tolist())
    assert float(_ehs2(jnp.asarray(d[:2]), jnp.asarray(_board(d[2:])))[0]) == \
        float(_ehs2(jnp.asarray(e[:2]), jnp.asarray(_board(e[2:])))[0])
    assert ABS.bucket_of(d[:2], _board(d[2:])) == ABS.bucket_of(e[:2], _board(e[2:]))


def test_preflop_buckets_are_the_169_lossless_classes():
  holes = jnp.asarray(HAND_CARDS)
  buckets = np.asarray(jax.jit(jax.vmap(
      lambda h: ABS.card_bucket(h, jnp.full(5, -1, jnp.int32))))(holes))
  np.testing.assert_array_equal(buckets, np.asarray(jax.jit(jax.vmap(
      lambda h: preflop_class(h[0], h[1])))(holes)))
  values, counts = np.unique(buckets, return_counts=True)
  assert len(values) == 169 and values.min() >= 0 and values.max() < 169
  assert sorted(counts.tolist()) == [4] * 78 + [6] * 13 + [12] * 78  # suited, pairs, offsuit
  # the classes are (high rank, low rank, suited), and the names say so
  for (a, b), k in zip(HAND_CARDS, buckets):
    hi, lo, suited = max(a // 4, b // 4), min(a // 4, b // 4), a % 4 == b % 4
    name = preflop_class_name(k)
    assert name[:2] == "23456789TJQKA"[hi] + "23456789TJQKA"[lo]
    assert name[2:] == ("" if hi == lo else "s" if suited else "o")


def test_buckets_do_not_depend_on_float_precision():
  rng = np.random.default_rng(5)
  cases = [(d[:2], _board(d[2:2 + n])) for d in (_random_deal(rng, 7) for _ in range(3))
           for n in (3, 4, 5)]
  want = [ABS.bucket_of(h, b) for h, b in cases]
  with jax.enable_x64(False):
    f32 = jax.jit(ABS.card_bucket)
    assert [int(f32(jnp.asarray(h), jnp.asarray(b))) for h, b in cases] == want


# --- abstract keys -----------------------------------------------------------------------------

def test_keys_merge_equal_buckets_and_keep_the_betting():
  betting = [1, 1, 1, 2, 1, 1, 1, 1]  # preflop call, check; flop check, bet, call; turn checks;
  states = [  # and player 0 checks the river: player 1 to act
      _play("Ah Kh 2d 3d 2c 7d 9s Jc 4d", betting),
      _play("Ad Kd 5s 6s 2c 7h 9s Jc 4h", betting),  # hearts and diamonds swapped
      _play("Ah Kh 5s 6s 2c 7d 9s Jc 4d", betting),  # other cards for player 1
      _play("Ah Kh 2d 3d 2c 7d 9s Jc 4d", [1, 1, 2, 1, 1, 1, 1]),  # other betting
      _play("2c 3d 5s 6s Ts Js Qs Ks As", betting),  # a royal flush on the board: all tie
      _play("7h 8c 5h 6h Ts Js Qs Ks As", betting),
      _play("Ah Kh 2d 3d 2c 7d 9s Jc", [1, 1, 1, 2, 1, 1]),  # the same cards on the turn
  ]
  a, b, c, d, e, f, g = states
  k = _keys(states)[:, 0]  # player 0's keys
  assert int(a.round) == 3 and int(_player(a)) == 1 == int(_player(d))
  info = np.asarray(GAME.info_key(a, 0))
  assert k[0, 0] == info[0] and k[0, 0] >> 3 == 3 and k[0, 1] == 0
  np.testing.assert_array_equal(k[0, 3:], info[3:])
  # isomorphic river hands: different information states, one exact bucket, one key
  assert not np.array_equal(GAME.info_key(b, 0), info)
  np.testing.assert_array_equal(k[1], k[0])
  # the opponent's cards are not the player's information
  np.testing.assert_array_equal(k[2], k[0])
  # other betting, the same cards and acting player: the same bucket in another key
  assert k[3, 2] == k[0, 2] and not np.array_equal(k[3], k[0])
  # imperfect recall: other preflop classes, one river bucket (every hand ties, HS = 1/2,
  # E[HS^2] = 1/4: bucket 50 of 200) and one key
  assert ABS.bucket_of(e.cards[:2], _board([])) != ABS.bucket_of(f.cards[:2], _board([]))
  assert k[4, 2] == 50
  np.testing.assert_array_equal(k[4], k[5])
  # the same cards a round earlier: the turn's round and bucket
  assert k[6, 0] >> 3 == 2 and k[6, 2] == ABS.bucket_of(g.cards[:2], g.cards[4:])


def test_key_string_reads_the_key():
  states = [_play("As Ks 2d 3d Qs Js Ts", [1, 1, 1]), _play("As Ks 2d 3d", [2]), GAME.init()]
  k = _keys(states)
  assert ABS.key_string(k[0, 0], 0) == \
      "[Round 1][Player: 0][Acting: 1][Bucket: flop 999/1000][Sequences: cc|c]"
  assert ABS.key_string(k[1, 0], 0) == \
      "[Round 0][Player: 0][Acting: 0][Bucket: preflop AKs][Sequences: r]"
  assert ABS.key_string(k[2, 1], 1) == \
      "[Round 0][Player: 1][Acting: chance][Bucket: none][Sequences: ]"
  assert ABS.hand_string(_cards("As Ks"), _cards("Qs Js Ts")) == \
      "AsKs | QsJsTs: flop bucket 999/1000"


@pytest.fixture(scope="module")
def playout_states():
  """Every state along 32 uniform random hands (leaves ``[32 * max_length, ...]``)."""
  _, actions, _ = trajectories(GAME, jax.random.PRNGKey(0), 32)

  @jax.jit
  @jax.vmap
  def along(acts):
    def body(s, a):
      nxt = jax.lax.cond(a >= 0, lambda: GAME.step(s, a), lambda: s)
      return nxt, nxt
    return jax.lax.scan(body, GAME.init(), acts)[1]

  return jax.tree_util.tree_map(lambda x: x.reshape((-1,) + x.shape[2:]), along(actions))


def test_keys_vmap_over_random_playouts(playout_states):
  flat = playout_states
  keys = _keys(flat)  # [N, 2, 7]
  cards = np.asarray(flat.cards)
  nb = np.sum(cards[:, 4:] >= 0, axis=1)
  street = np.select([nb == 5, nb == 4, nb == 3], [3, 2, 1], 0)
  for p in (0, 1):
    info = np.asarray(jax.jit(jax.vmap(lambda s: GAME.info_key(s, p)))(flat))
    kp = keys[:, p]
    np.testing.assert_array_equal(kp[:, 0], info[:, 0])
    np.testing.assert_array_equal(kp[:, 3:], info[:, 3:])
    assert np.all(kp[:, 1] == p)
    # a function of the information state: equal information keys, equal abstract keys
    seen = {}
    for k, i in zip(kp, info):
      assert seen.setdefault(i.tobytes(), k.tobytes()) == k.tobytes()
    # each bucket in its round's range, and the bucket of the cards alone
    dealt = cards[:, 2 * p + 1] >= 0
    grid = np.array(PAPER_GRID)[street]
    assert np.all(np.where(dealt, (kp[:, 2] >= 0) & (kp[:, 2] < grid), kp[:, 2] == -1))
    rng = np.random.default_rng(p)
    for i in rng.choice(np.flatnonzero(nb >= 3), 6, replace=False):
      assert kp[i, 2] == ABS.bucket_of(cards[i, 2 * p:2 * p + 2], cards[i, 4:])
  assert len(np.unique(keys[nb >= 3][:, :, 2])) > 10


def test_batched_acting_keys_equal_the_acting_key_on_their_lanes(playout_states):
  # A walk's batched keys evaluate E[HS^2] on the masked lanes after the flop only, in
  # chunks; on every masked lane they equal the one-state key.
  from jaxgt.solvers.sources import Rules
  rules = Rules(GAME, ABS)
  flat = jax.tree_util.tree_map(lambda x: x[:256], playout_states)
  player = jnp.asarray(np.arange(256) % 2, jnp.int32)
  mask = jnp.asarray(np.random.default_rng(0).random(256) < 0.3)
  one = np.asarray(jax.jit(jax.vmap(lambda s, p: ABS.acting_key(GAME, s, p)))(flat, player))
  for m in (mask, jnp.ones(256, bool)):
    got = np.asarray(jax.jit(rules.acting_keys)(flat, player, m))
    np.testing.assert_array_equal(got[np.asarray(m)], one[np.asarray(m)])
  nb = np.sum(np.asarray(flat.cards)[:, 4:] >= 0, axis=1)
  assert np.any(np.asarray(mask) & (nb >= 3)) and np.any(np.asarray(mask) & (nb < 3))
  one_lane = jax.tree_util.tree_map(lambda x: x[-1:], flat)  # a batch of one, on the river
  got = rules.acting_keys(one_lane, player[-1:], jnp.ones(1, bool))
  np.testing.assert_array_equal(np.asarray(got)[0], one[-1])


# --- the game check and the identity -----------------------------------------------------------

def test_abstractions_refuse_another_game():
  leduc = make("leduc_poker")
  with pytest.raises(ValueError, match="is for game 'limit_holdem', not 'leduc_poker'"):
    ABS.check_game(leduc)
  with pytest.raises(ValueError, match="not 'leduc_poker'"):
    ABS.key(leduc, leduc.init(), 0)
  ABS.check_game(make("limit_holdem"))
  ident = Identity(leduc)
  assert ident.key_width == leduc.info_key_width and ident.game_string == "leduc_poker"
  with pytest.raises(ValueError, match="not 'limit_holdem'"):
    ident.check_game(GAME)
  with pytest.raises(ValueError, match="player must be"):
    ABS.key(GAME, GAME.init(), 2)
  with pytest.raises(ValueError, match="is for game 'limit_holdem'"):
    make_abstraction("ehs2", leduc)
  assert make_abstraction("ehs2", GAME, runouts=92, opponents=11).runouts == 92
  assert isinstance(make_abstraction("identity", leduc), Identity)
  with pytest.raises(ValueError, match="unknown abstraction 'buckets'; known: ehs2, identity"):
    make_abstraction("buckets", GAME)


def test_bad_parameters_are_refused():
  with pytest.raises(ValueError, match="grid\\[0\\] must be 169"):
    EHS2Buckets((100, 1000, 500, 200))
  with pytest.raises(ValueError, match="4 positive ints"):
    EHS2Buckets((169, 1000, 500))
  with pytest.raises(ValueError, match="multiple of 46"):
    EHS2Buckets(runouts=100)
  with pytest.raises(ValueError, match="at least 990"):
    EHS2Buckets(runouts=46, opponents=5)
  with pytest.raises(ValueError, match="at least 2"):
    EHS2Buckets(runouts=46 * 22, opponents=1)
  with pytest.raises(ValueError, match="C must be"):
    exploration_constant(GAME.init(), C=-1.0)


def test_identity_is_the_games_information_key():
  s = _play("As Ks 2d 3d Qs Js Ts", [1, 2])
  ident = Identity(GAME)
  for p in (0, 1):
    np.testing.assert_array_equal(ident.key(GAME, s, p), GAME.info_key(s, p))
  assert ident.key_string(ident.key(GAME, s, 0), 0) == GAME.info_string(GAME.info_key(s, 0), 0)


# --- the exploration schedule ------------------------------------------------------------------

def _schedule(s, **kw):
  return (int(pot(s)), int(remaining_potential(s)), float(exploration_constant(s, **kw)))


def test_exploration_schedule_on_hands_worked_out_by_hand():
  assert MAX_POT == 480  # 2 * (10 + 3 * 10 + 4 * 10 + 4 * 20 + 4 * 20)
  # root: blinds 10 + 5; preflop each can reach 40, later rounds 2 * (40 + 80 + 80)
  assert _schedule(GAME.init()) == (15, 30 + 35 + 400, 24.0)  # min(24, 1.5 + 0.5 * 46.5)
  # player 1 raised preflop to 20: the pot and the potential at the state itself
  s = _play("As Ks 2d 3d", [2])
  assert (int(pot(s)), int(remaining_potential(s))) == (30, 30 + 20 + 400)
  assert float(exploration_constant(s, at_round_start=False)) == 24.0
  assert float(exploration_constant(s, k=0.1, at_round_start=False)) == pytest.approx(3 + 4.5)
  assert float(exploration_constant(s, k=0.1)) == pytest.approx(1.5 + 4.65)  # the round's start
  # flop after a limped preflop: pot 20, 400 to come: c = 2 + 20 = 22
  assert _schedule(_play("As Ks 2d 3d Qs Js Ts", [1, 1])) == (20, 400, 22.0)
  # turn after checks: pot 20, 2 * (80 + 80) to come: 2 + 16 = 18; river: 2 + 8 = 10, the least
  assert _schedule(_play("As Ks 2d 3d Qs Js Ts 2c", [1, 1, 1, 1])) == (20, 320, 18.0)
  river = _play("As Ks 2d 3d Qs Js Ts 2c 3h", [1, 1, 1, 1, 1, 1])
  assert _schedule(river) == (20, 160, 10.0)
  assert float(exploration_constant(river, in_chips=True)) == 100.0
  assert float(jax.jit(lambda s, C, k: exploration_constant(s, C, k))(river, 9.0, 0.25)) == 6.0
  # a bet and a call on the flop, then the turn: pot 40, c = 4 + 16 = 20
  assert _schedule(_play("As Ks 2d 3d Qs Js Ts 2c", [1, 1, 2, 1])) == (40, 320, 20.0)
  # mid-river after a bet: the state's own values, and the round start's for c
  bet = _play("As Ks 2d 3d Qs Js Ts 2c 3h", [1, 1, 1, 1, 1, 1, 2])
  assert (int(pot(bet)), int(remaining_potential(bet))) == (40, 140)  # 20 + 60 + 60 = 140
  assert float(exploration_constant(bet)) == 10.0
  assert float(exploration_constant(bet, at_round_start=False)) == pytest.approx(4 + 7)
  assert int(pot(round_start(bet))) == 20
  # a fold ends the hand: nothing left to add
  folded = _play("As Ks 2d 3d", [2, 0])
  assert int(_player(folded)) == TERMINAL and int(remaining_potential(folded)) == 0
  # preflop capped: pot 80, the flop starts with 400 to come, c = min(24, 8 + 20)
  capped = _play("As Ks 2d 3d Qs Js Ts", [2, 2, 2, 1])
  assert _schedule(capped) == (80, 400, 24.0)
  assert int(pot(capped)) + int(remaining_potential(capped)) == MAX_POT


def test_exploration_constant_vmaps_and_stays_in_the_papers_range(playout_states):
  flat = playout_states

  @jax.jit
  @jax.vmap
  def schedule(s):
    return (exploration_constant(s), pot(s) + remaining_potential(s),
            GAME.current_player(s) != TERMINAL)

  c, total, live = (np.asarray(x) for x in schedule(flat))
  assert np.all((c[live] >= 10.0) & (c[live] <= 24.0))  # the paper's [10, 24]
  assert len(np.unique(c[live])) > 3
  assert np.all(total[live] <= MAX_POT) and np.all(total[live] >= 180)  # a checked-down river
