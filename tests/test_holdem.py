"""Heads-up Limit Texas Hold'em as a device game: the hand evaluator against an independent one,
sampled lockstep with OpenSpiel's universal_poker, keys, private states and the size refusal."""

import math
import time

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxgt
from jaxgt.core.lockstep import lockstep, replay
from jaxgt.core.playout import random_playouts, trajectories
from jaxgt.games import CHANCE, TERMINAL, make
from jaxgt.games.hand_eval import CATEGORIES, category, hand_rank
from jaxgt.games.holdem import HAND_CARDS, NUM_HANDS, LimitHoldem, hole_index
from jaxgt.games.size import GameTooLargeError

GAME = LimitHoldem()
_step = jax.jit(GAME.step)
_player = jax.jit(GAME.current_player)
_legal = jax.jit(GAME.legal_mask)
_hand_rank = jax.jit(hand_rank)


def _card(name):
  return "23456789TJQKA".index(name[0]) * 4 + "cdhs".index(name[1])


def _rank(*names):
  return int(_hand_rank(jnp.array([_card(n) for n in names])))


# --- the hand evaluator -----------------------------------------------------------------------

def test_hand_rank_categories_and_kickers():
  assert _rank("As", "Ks", "Qs", "Js", "Ts", "2c", "2d") >> 20 == CATEGORIES.index("straight flush")
  wheel = _rank("Ac", "2d", "3h", "4s", "5c", "Kd", "Qh")
  six_high = _rank("2d", "3h", "4s", "5c", "6d", "Kd", "Qh")
  assert category(wheel) == CATEGORIES.index("straight") and wheel < six_high
  steel_wheel = _rank("Ah", "2h", "3h", "4h", "5h", "Kd", "Kc")
  assert category(steel_wheel) == CATEGORIES.index("straight flush")
  assert steel_wheel < _rank("2h", "3h", "4h", "5h", "6h", "Kd", "Kc")
  two_trips = _rank("9c", "9d", "9h", "4c", "4d", "4h", "Ac")  # 999-44 beats 999-33
  assert category(two_trips) == CATEGORIES.index("full house")
  assert two_trips > _rank("9c", "9d", "9h", "3c", "3d", "3h", "Ac")
  three_pairs = _rank("Ac", "Ad", "Kc", "Kd", "Qc", "Qd", "2h")  # AAKK with a Q kicker
  assert three_pairs == _rank("Ac", "Ad", "Kc", "Kd", "Qc", "3d", "2h")
  assert three_pairs > _rank("Ac", "Ad", "Kc", "Kd", "Jc", "Jd", "2h")
  flush = _rank("2s", "4s", "6s", "8s", "Ts", "Qs", "Ad")  # the best five of six spades
  assert flush == _rank("4s", "6s", "8s", "Ts", "Qs", "Ad", "Ac")
  assert flush > _rank("2d", "3h", "4s", "5c", "6d", "Ah", "Ad")  # a flush beats a straight
  assert _rank("Ac", "Ad", "Ah", "As", "2c", "3d", "Kh") > _rank("Ac", "Ad", "Ah", "As", "Qc",
                                                                 "Jd", "3h")
  assert _rank("7c", "7d", "2h", "3s", "9c", "Jd", "Kh") > _rank("7c", "7d", "2h", "3s", "9c",
                                                                 "Jd", "Qh")
  assert _rank("Ac", "Kd", "9h", "7s", "5c") > _rank("Ac", "Kd", "9h", "7s", "4c")  # 5 cards
  with pytest.raises(ValueError, match="5 to 7 cards"):
    hand_rank(jnp.zeros((3, 4), jnp.int32))


def _random_hands(n, seed):
  rng = np.random.default_rng(seed)
  return np.argsort(rng.random((n, 52)), axis=1)[:, :7].astype(np.int32)


def _assert_orders_like_phevaluator(n, seed):
  ph = pytest.importorskip("phevaluator")
  hands = _random_hands(n, seed)
  ours = np.asarray(jax.jit(hand_rank)(hands))
  theirs = np.array([ph.evaluate_7cards(*h) for h in hands.tolist()])  # 1 best, 7462 worst
  # one order on all n hands: equal classes match and sorting by ours reverses theirs
  pairs = np.unique(np.stack([ours, theirs], axis=1), axis=0)
  assert len(pairs) == len(np.unique(ours)) == len(np.unique(theirs))
  assert np.all(np.diff(pairs[:, 1]) < 0)
  # categories: phevaluator's class boundaries, best class first
  ph_class = np.searchsorted([10, 166, 322, 1599, 1609, 2467, 3325, 6185, 7462], theirs)
  np.testing.assert_array_equal(ours >> 20, 8 - ph_class)
  # the sign of random pairwise comparisons
  i, j = np.random.default_rng(seed + 1).integers(0, n, (2, n))
  np.testing.assert_array_equal(np.sign(ours[i] - ours[j]), np.sign(theirs[j] - theirs[i]))
  return len(pairs)


def test_hand_rank_orders_like_phevaluator():
  assert _assert_orders_like_phevaluator(50_000, 0) > 3000


@pytest.mark.slow
def test_hand_rank_orders_like_phevaluator_on_a_million_hands():
  assert _assert_orders_like_phevaluator(1_000_000, 1) > 4700


def test_hand_rank_under_vmap_and_x64():
  hands = _random_hands(256, 2)
  plain = np.asarray(hand_rank(hands))
  with jax.enable_x64(True):
    np.testing.assert_array_equal(np.asarray(jax.jit(jax.vmap(hand_rank))(hands)), plain)
  assert hand_rank(hands).dtype == jnp.int32


# --- lockstep with OpenSpiel --------------------------------------------------------------------

def _no_fold_actions(key, batch):
  """Trajectories whose players never fold (call or raise uniformly), so most reach showdown."""
  def one(k):
    def body(s, k):
      p = GAME.current_player(s)
      legal = GAME.legal_mask(s) & (jnp.arange(3) != 0)
      w = jnp.where(p == CHANCE, GAME.chance_probs(s), jnp.zeros(52).at[:3].set(legal))
      a = jax.random.categorical(k, jnp.where(w > 0, 0.0, -jnp.inf)).astype(jnp.int32)
      a = jnp.where(p == TERMINAL, -1, a)
      return GAME.step(s, jnp.maximum(a, 0)), a
    return jax.lax.scan(body, GAME.init(), jax.random.split(k, GAME.max_length))[1]
  return jax.jit(jax.vmap(one))(jax.random.split(key, batch))


@jax.jit
def _keys(actions):
  """``[B, L + 1, 2, W]`` both players' information-state keys along each trajectory."""
  def one(acts):
    def body(s, a):
      return GAME.step(s, jnp.maximum(a, 0)), jnp.stack([GAME.info_key(s, 0),
                                                         GAME.info_key(s, 1)])
    s, keys = jax.lax.scan(body, GAME.init(), acts)
    return jnp.concatenate([keys, jnp.stack([GAME.info_key(s, 0), GAME.info_key(s, 1)])[None]])
  return jax.vmap(one)(actions)


def _check_lockstep(n, seed):
  """``n`` uniform random trajectories and ``n / 4`` that never fold (so they reach showdowns)
  in lockstep with pyspiel, probabilities and returns exactly; keys and strings name the same
  information states."""
  pytest.importorskip("pyspiel")
  with jax.enable_x64(True):
    out = lockstep(GAME, GAME.openspiel_game_string(), trajectories=n, seed=seed, atol=0.0)
    assert out["mismatches"] == 0, out["examples"]
    assert out["states"] > 10 * n
    no_fold = np.asarray(_no_fold_actions(jax.random.PRNGKey(seed + 1), n // 4))
    out = replay(GAME, GAME.openspiel_game_string(), no_fold, atol=0.0)
    assert out["mismatches"] == 0, out["examples"]
    _, uniform, _ = trajectories(GAME, jax.random.PRNGKey(seed), n)
  keys = np.asarray(_keys(jnp.concatenate([uniform, no_fold])))
  for q in (0, 1):
    distinct = np.unique(keys[:, :, q].reshape(-1, GAME.info_key_width), axis=0)
    strings = {GAME.info_string(k, q) for k in distinct}
    assert len(strings) == len(distinct) > n


def test_lockstep_with_openspiel():
  _check_lockstep(2000, 0)


@pytest.mark.slow
def test_lockstep_with_openspiel_on_ten_thousand_trajectories():
  _check_lockstep(10_000, 10)


def test_longest_hand_is_max_length():
  s = GAME.init()
  deals = iter([51, 50, 0, 1, 10, 20, 30, 40, 44])  # aces against deuces
  betting = [[1, 2, 2, 2, 1], [1, 2, 2, 2, 2, 1], [1, 2, 2, 2, 2, 1], [1, 2, 2, 2, 2, 1]]
  steps = 0
  for r, bets in enumerate(betting):
    while int(_player(s)) == CHANCE:
      s, steps = _step(s, next(deals)), steps + 1
    for a in bets:
      assert bool(_legal(s)[a])
      s, steps = _step(s, a), steps + 1
    if r < 3:
      assert not bool(_legal(s).any())
  assert int(_player(s)) == TERMINAL and steps == GAME.max_length
  assert float(jax.jit(GAME.returns)(s)[0]) == 240.0  # 10 + 3 * 10 + 4 * 10 + 4 * 20 + 4 * 20
  assert jax.tree_util.tree_all(jax.tree_util.tree_map(
      lambda x, y: bool(jnp.all(x == y)), GAME.step(s, 1), s))  # a terminal is absorbing


def test_random_playouts_are_zero_sum_and_bounded():
  ret = np.asarray(random_playouts(GAME, jax.random.PRNGKey(3), 512))
  assert np.all(ret[:, 0] == -ret[:, 1]) and np.abs(ret).max() <= 240
  assert len(np.unique(ret[:, 0])) > 5


# --- metadata, parameters and size ------------------------------------------------------------

def test_game_string_and_metadata():
  pyspiel = pytest.importorskip("pyspiel")
  assert GAME.openspiel_game_string() == pyspiel.hulh_game_string("fcpa")
  os_game = pyspiel.load_game(GAME.openspiel_game_string())
  assert GAME.num_actions == os_game.num_distinct_actions()
  assert GAME.num_outcomes == os_game.max_chance_outcomes()
  assert GAME.max_length <= os_game.max_game_length()
  assert GAME.game_string() == "limit_holdem" and GAME.big_blind == 10.0
  assert [GAME.action_string(a) for a in range(3)] == ["Fold", "Call", "Bet"]
  assert isinstance(make("limit_holdem"), LimitHoldem)


def test_bad_parameters_are_rejected():
  with pytest.raises(ValueError, match="players must be 2"):
    make("limit_holdem", players=3)
  with pytest.raises(ValueError, match="no parameter"):
    make("limit_holdem", stack=100)
  with pytest.raises(ValueError, match="no parameter"):
    jaxgt.load("limit_holdem(raiseSize=5)")


def test_load_refuses_quickly_and_clearly():
  t0 = time.perf_counter()
  with pytest.raises(GameTooLargeError, match=r"limit_holdem: about .* histories .* refused"):
    jaxgt.load("limit_holdem")
  assert time.perf_counter() - t0 < 120


# --- private states, features -------------------------------------------------------------------

def _deal(cards, bets=()):
  """The state after dealing ``cards`` at chance nodes and playing ``bets`` at decisions."""
  s, cards, bets = GAME.init(), list(cards), list(bets)
  while cards or bets:
    s = _step(s, (cards if int(_player(s)) == CHANCE else bets).pop(0))
  return s


def test_private_index_is_the_hole_pair():
  assert len(HAND_CARDS) == NUM_HANDS == 1326 and GAME.num_private == (1326, 1326)
  idx = np.asarray(hole_index(HAND_CARDS[:, 1], HAND_CARDS[:, 0]))
  np.testing.assert_array_equal(idx, np.arange(NUM_HANDS))
  s = _deal([51, 7, 20, 3])
  assert int(GAME.private_index(s, 0)) == int(hole_index(7, 51))
  assert int(GAME.private_index(s, 1)) == int(hole_index(3, 20))
  assert int(GAME.private_index(GAME.step(GAME.init(), 5), 0)) == -1


@pytest.mark.parametrize("board", [[], [10, 11, 12], [10, 11, 12, 40, 41]])
def test_private_chance_is_the_direct_count(board):
  s = _deal([0, 1, 2, 3] + board, bets={0: [1, 1], 3: [1, 1], 5: [1] * 6}[len(board)])
  assert int(s.dealt) == 4 + len(board)
  probs = np.asarray(GAME.private_chance(s), np.float64)
  n = 52 - len(board)
  count = math.comb(n, 2) * math.comb(n - 2, 2)
  assert np.count_nonzero(probs) == count
  assert np.allclose(probs[probs > 0], 1.0 / count) and probs.sum() == pytest.approx(1.0)
  # zero exactly where the hands share a card or meet the board
  i, j = np.nonzero(probs)
  cards = np.concatenate([HAND_CARDS[i], HAND_CARDS[j]], axis=1)
  assert np.all(np.sort(cards, axis=1)[:, 1:] != np.sort(cards, axis=1)[:, :-1])
  assert not np.isin(cards, board).any()
  assert np.allclose(probs.sum(axis=1)[probs.sum(axis=1) > 0], 1.0 / math.comb(n, 2))


def test_features_hold_the_key():
  s = _deal([51, 7, 20, 3, 10, 11, 12], bets=[2, 1])
  f0, f1 = np.asarray(GAME.info_features(s, 0)), np.asarray(GAME.info_features(s, 1))
  assert f0.shape == (GAME.info_feature_size,) and f0.dtype == np.float32
  assert f0[:52].sum() == 2 and f0[[51, 7]].all() and f1[[20, 3]].all()
  assert f0[52:104].sum() == 3 and f0[52 + 10:52 + 13].all()
  np.testing.assert_array_equal(f0[52:], f1[52:])
  pub = np.asarray(GAME.public_features(s))
  assert pub.shape == (GAME.public_feature_size,) and pub[4] == 1
  np.testing.assert_array_equal(pub[5:], f0[52:])
  assert GAME.public_key(s).shape == (GAME.public_key_width,)
  name = GAME.public_name(GAME.public_key(s))
  assert name == (0, 4, "5c4s4h", "rc|")
