"""Local best response (Lisy and Bowling 2017) against exact best responses in Leduc hold'em,
against the published exploitability of always-call in limit hold'em; the poker games'
``with_private``, ``chips`` and ``showdown_equity`` against stepping the rules; the tabular
device policy against the compiled game's information-state strings."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxgt
from jaxgt.core.compiler import compile_game
from jaxgt.evaluation.device_policy import (batch_of, fixed_action_policy, tabular_device_policy,
                                            uniform_device_policy)
from jaxgt.evaluation.local_br import _play, action_values, local_best_response, range_update
from jaxgt.games import CHANCE, TERMINAL, make
from jaxgt.games.hand_eval import hand_rank
from jaxgt.games.holdem import HAND_CARDS, hole_index
from jaxgt.policy import PolicyError

from device_game_checks import replay


_hand_rank = jax.jit(hand_rank)


@pytest.fixture(scope="module")
def leduc():
  g = make("leduc_poker")
  return g, compile_game(g)


def _pure(compiled, preference):
  """``(sigma0, sigma1)``: the first legal action of ``preference`` at every information state."""
  out = []
  for pt in compiled.tree.players:
    legal = np.asarray(pt.legal)
    sig = np.zeros(legal.shape)
    for i in range(len(legal)):
      sig[i, next(a for a in preference if legal[i, a])] = 1.0
    out.append(sig)
  return tuple(out)


def _uniform(compiled):
  return tuple(np.asarray(pt.legal) / np.asarray(pt.legal).sum(1, keepdims=True)
               for pt in compiled.tree.players)


@functools.lru_cache(maxsize=None)
def _jitted_step(game):
  return jax.jit(game.step)


def _steps(game, state, actions):
  for a in actions:
    state = _jitted_step(game)(state, jnp.int32(a))
  return state


# --- the game methods LBR uses ----------------------------------------------------------------

def test_leduc_with_private_replaces_one_card(leduc):
  g, _ = leduc
  s = _steps(g, g.init(), [0, 3, 2, 1])  # cards 0 and 3 dealt, raise, call
  for player in (0, 1):
    for k in range(6):
      t = g.with_private(s, player, k)
      assert int(g.private_index(t, player)) == k
      assert int(g.private_index(t, 1 - player)) == int(g.private_index(s, 1 - player))
      assert np.array_equal(g.public_key(t), g.public_key(s))
      assert np.array_equal(g.info_key(t, 1 - player), g.info_key(s, 1 - player))
      dealt = _steps(g, g.init(), [k, 3, 2, 1] if player == 0 else [0, k, 2, 1])
      assert all(np.array_equal(x, y) for x, y in zip(jax.tree_util.tree_leaves(t),
                                                      jax.tree_util.tree_leaves(dealt)))
  assert np.array_equal(g.chips(s), [3, 3])


def _leduc_equity_by_rules(g, prefix, player, belief):
  """WP by stepping: every opponent card and table card with their chance, both players
  checking and calling to the showdown, won/tied read from ``returns``."""
  def checked_down(s):
    while int(g.current_player(s)) not in (CHANCE, TERMINAL):
      s = g.step(s, jnp.int32(1))
    if int(g.current_player(s)) == TERMINAL:
      r = float(g.returns(s)[player])
      return 1.0 if r > 0 else 0.5 if r == 0 else 0.0
    return sum(float(p) * checked_down(g.step(s, jnp.int32(t)))
               for t, p in enumerate(np.asarray(g.chance_probs(s))) if p > 0)

  total = 0.0
  for k, b in enumerate(belief):
    if b > 0:
      cards = list(prefix[:2])
      cards[1 - player] = k
      total += b * checked_down(_steps(g, g.init(), cards + list(prefix[2:])))
  return total


@pytest.mark.parametrize("prefix", [[0, 3, 1, 2], [4, 5, 1, 1, 2, 2], [1, 2, 1, 1, 3]])
def test_leduc_showdown_equity_is_the_checked_down_outcome(leduc, prefix):
  g, _ = leduc
  s = _steps(g, g.init(), prefix)
  rng = np.random.default_rng(len(prefix))
  for player in (0, 1):
    belief = rng.random(6)
    belief[prefix[player]] = 0.0  # the card the player holds
    if len(prefix) > 4:
      belief[prefix[4]] = 0.0  # the table card
    belief /= belief.sum()
    want = _leduc_equity_by_rules(g, prefix, player, belief)
    got = float(g.showdown_equity(s, player, jnp.asarray(belief)))
    assert got == pytest.approx(want, abs=1e-12)


def test_holdem_with_private_is_the_dealt_state():
  g = make("limit_holdem")
  deal = [5, 40, 12, 33, 0, 17, 51]  # hole cards, then the flop after preflop call-check
  s = _steps(g, g.init(), deal[:4] + [1, 1] + deal[4:])
  for player in (0, 1):
    k = int(hole_index(jnp.int32(7), jnp.int32(30)))
    t = g.with_private(s, player, k)
    cards = list(deal[:4])
    cards[2 * player:2 * player + 2] = [7, 30]
    dealt = _steps(g, g.init(), cards + [1, 1] + deal[4:])
    assert int(g.private_index(t, player)) == k
    assert all(np.array_equal(x, y) for x, y in zip(jax.tree_util.tree_leaves(t),
                                                    jax.tree_util.tree_leaves(dealt)))
  assert np.array_equal(g.chips(s), [10, 10])


def test_holdem_showdown_equity_on_the_river_and_the_turn():
  g = make("limit_holdem")
  hole, board = [48, 49, 20, 21], [0, 13, 26, 39, 44]  # AcAd against 7c7d
  s = _steps(g, g.init(), hole + [1, 1] + board[:3] + [1, 1] + board[3:4])  # the turn
  river = _steps(g, s, [1, 1, board[4]])
  hands = [int(hole_index(jnp.int32(a), jnp.int32(b))) for a, b in [(20, 21), (50, 51),
                                                                     (36, 40)]]
  belief = np.zeros(1326)
  belief[hands] = [0.5, 0.3, 0.2]

  def by_rules(rivers):
    """Each hand's showdowns against the rivers that miss it, ranked by ``hand_rank``."""
    total = 0.0
    for h, b in zip(hands, belief[hands]):
      opp = [int(c) for c in HAND_CARDS[h]]
      ok = [c for c in rivers if c not in opp]
      boards = [board[:4] + [c] for c in ok]
      mine = _hand_rank(jnp.asarray([hole[:2] + x for x in boards]))
      theirs = _hand_rank(jnp.asarray([opp + x for x in boards]))
      total += b * float(jnp.mean(jnp.where(mine > theirs, 1.0, jnp.where(mine == theirs, 0.5,
                                                                          0.0))))
    return total

  equity = jax.jit(g.showdown_equity, static_argnums=(1, 4))
  exact = float(equity(river, 0, jnp.asarray(belief), jax.random.key(0), 4))
  assert exact == pytest.approx(by_rules([board[4]]), abs=1e-12)
  unseen = [c for c in range(52) if c not in hole[:2] + board[:4]]
  want = by_rules(unseen)
  got = float(equity(s, 0, jnp.asarray(belief), jax.random.key(1), 300))
  assert got == pytest.approx(want, abs=0.05)


# --- device policies ----------------------------------------------------------------------------

def test_tabular_device_policy_plays_the_table_at_every_history(leduc):
  g, cg = leduc
  rng = np.random.default_rng(0)
  probs = tuple(np.where(np.asarray(pt.legal), rng.random(np.shape(pt.legal)), 0.0)
                for pt in cg.tree.players)
  probs = tuple(p / p.sum(1, keepdims=True) for p in probs)
  as_dict = {k: probs[p][i] for p in (0, 1) for i, k in enumerate(cg.infostate_keys[p])}
  states = replay(g, cg)
  player = np.asarray(cg.tree.player)
  for pol in (tabular_device_policy(cg, probs), tabular_device_policy(cg, as_dict)):
    for p in (0, 1):
      at = np.flatnonzero(player == p)
      got = np.asarray(jax.jit(lambda s, p=p: pol(s, p))(
          jax.tree_util.tree_map(lambda x: x[at], states)))
      keys = np.asarray(jax.vmap(lambda s, p=p: g.info_key(s, p))(
          jax.tree_util.tree_map(lambda x: x[at], states)))
      index = cg.infostate_index(p)
      want = probs[p][[index[g.info_string(k, p)] for k in keys]]
      np.testing.assert_allclose(got, want, atol=0, rtol=0)


def test_tabular_device_policy_refuses_what_does_not_fit(leduc):
  _, cg = leduc
  with pytest.raises(PolicyError, match="no entry"):
    tabular_device_policy(cg, {})
  with pytest.raises(PolicyError, match="shape"):
    tabular_device_policy(cg, (np.ones((3, 3)), np.ones((3, 3))))
  with pytest.raises(TypeError, match="compiled from device rules"):
    tabular_device_policy(make("leduc_poker"), _uniform(cg))


# --- one LBR decision by hand --------------------------------------------------------------------

def _card_policy(g):
  """At the root, rank ``r`` raises with probability ``(r + 1) / 4`` and checks otherwise;
  facing a re-raise it folds with probability 1/2, 1/5, 0 by rank and calls otherwise."""
  def policy(states, player):
    rank = states.cards[:, player] // 2
    raise_p = (rank + 1) / 4
    fold_p = jnp.array([0.5, 0.2, 0.0])[rank]
    opening = jnp.stack([0 * raise_p, 1 - raise_p, raise_p], axis=1)
    facing = jnp.stack([fold_p, 1 - fold_p, 0 * fold_p], axis=1)
    return jnp.where((states.raises >= 2)[:, None], facing, opening)
  return policy


@pytest.mark.parametrize("calling_range, raise_value", [(True, 0.8 + 0.8 * 118 / 48),
                                                       (False, 0.8 + 0.8 * 8 / 3)])
def test_action_values_of_one_decision_by_hand(leduc, calling_range, raise_value):
  """Player 1 holds a king (card 4) and faces player 0's raise. Range: cards 0, 1, 2, 3, 5 a
  priori equally likely, times the raise's chance 1/4, 1/4, 1/2, 1/2, 3/4: (1, 1, 2, 2, 0, 3)
  / 9. WP: 3/4 against a jack or a queen (they pair on one table card of four), 1/2 against
  the other king: 2/3. Pot 4, to call 2: calling is worth 2/3 * 4 - 1/3 * 2 = 2. A re-raise
  of 2 folds 1/2 of the jacks and 1/5 of the queens: fp = 1/5; the hands that call are
  (5, 5, 16, 16, 0, 30) / 72 with WP 31/48, worth 4/5 + 4/5 (31/48 * 6 - 17/48 * 4); against
  the whole range 4/5 + 4/5 (2/3 * 6 - 1/3 * 4)."""
  g, _ = leduc
  pol = _card_policy(g)
  root = _steps(g, g.init(), [0, 4])
  batch = jax.tree_util.tree_map(lambda x: x[None], root)
  reach = range_update(g, pol, batch, 0, jnp.array([2]), jnp.ones((1, 6)))
  np.testing.assert_allclose(reach[0] / reach[0].max(), [1 / 3, 1 / 3, 2 / 3, 2 / 3, 1, 1])
  s = jax.tree_util.tree_map(lambda x: x[None], _steps(g, root, [2]))
  values = action_values(g, pol, s, 1, reach, jax.random.key(0), calling_range=calling_range)
  np.testing.assert_allclose(values[0], [0.0, 2.0, raise_value], rtol=1e-12)


# --- local best response in Leduc against the exact best response --------------------------------

LEDUC_GAMES = 4000  # one batch per seat, the same for every Leduc test: one compilation


def _lbr(g, cg, probs, num_games=LEDUC_GAMES, seed=0, progress=False):
  ev = jaxgt.evaluate(cg, probs)
  res = local_best_response(g, tabular_device_policy(cg, probs), jax.random.key(seed),
                            num_games, batch_size=num_games, progress=progress)
  return ev, res


def _assert_lower_bound(ev, res):
  for p in (0, 1):
    assert res.seat_values[p] <= ev.best_response[p] + res.seat_half_widths[p]
  assert res.value <= ev.exploitability + res.half_width


def test_lbr_is_a_lower_bound_against_uniform_random(leduc):
  ev, res = _lbr(*leduc, _uniform(leduc[1]))
  _assert_lower_bound(ev, res)
  assert res.num_games == LEDUC_GAMES and res.payoffs.shape == (2, LEDUC_GAMES)
  assert res.value > 0.8 * ev.exploitability  # close to the best response, far above zero


def test_lbr_is_the_best_response_against_always_call(leduc):
  """Against a policy that never folds nor raises, check/call to the end is exactly what the
  opponent does, so the greedy choice is the best response (value 22/15)."""
  ev, res = _lbr(*leduc, _pure(leduc[1], (1,)), seed=1)
  assert ev.exploitability == pytest.approx(22 / 15)
  _assert_lower_bound(ev, res)
  assert abs(res.value - ev.exploitability) <= res.half_width


def test_lbr_takes_every_pot_from_fold_to_any_bet(leduc, capsys):
  """Folding to every bet (checking otherwise) loses the ante whenever LBR bets: both best
  response and LBR win exactly one chip a game."""
  ev, res = _lbr(*leduc, _pure(leduc[1], (0, 1)), progress=True)
  printed = capsys.readouterr().out.splitlines()
  assert printed == [f"local BR seat {p}: {LEDUC_GAMES}/{LEDUC_GAMES} games, 1.0000 +- 0.0000"
                     for p in (0, 1)]
  assert ev.best_response == pytest.approx((1.0, 1.0))
  np.testing.assert_array_equal(res.payoffs, 1.0)
  assert res.value == 1.0 and res.half_width == 0.0


def test_lbr_against_a_cfr_policy_is_small(leduc):
  g, cg = leduc
  solved = jaxgt.solve(cg, "cfr+", iterations=200, eval_every=0)
  ev, res = _lbr(g, cg, solved.policy)
  assert ev.exploitability < 0.05
  _assert_lower_bound(ev, res)
  assert res.value < 0.15  # against uniform random LBR wins over 2 chips a game


def test_lbr_without_the_calling_range_is_a_weaker_lower_bound(leduc):
  """Against a partly solved policy, WP against the hands that call a raise finds more than WP
  against the whole range (both are strategies of the game, so both are lower bounds)."""
  g, cg = leduc
  probs = jaxgt.solve(cg, "cfr", iterations=20, eval_every=0).policy
  ev = jaxgt.evaluate(cg, probs)
  pol = tabular_device_policy(cg, probs)
  out = [local_best_response(g, pol, jax.random.key(4), LEDUC_GAMES, batch_size=LEDUC_GAMES,
                             calling_range=c) for c in (True, False)]
  for res in out:
    _assert_lower_bound(ev, res)
  assert out[0].value > out[1].value + out[1].half_width
  assert out[0].value > 0.5 * ev.exploitability


def test_lbr_in_generic_poker_is_a_lower_bound():
  g = make("generic_poker", T=3, C=2, R=1, B=2)
  cg = compile_game(g)
  ev, res = _lbr(g, cg, _uniform(cg), num_games=2000, seed=3)
  _assert_lower_bound(ev, res)
  assert res.value > 0.5 * ev.exploitability


# --- limit hold'em --------------------------------------------------------------------------------

ALWAYS_CALL_MBB = 1163.48
"""Exploitability of always-call in heads-up limit hold'em, mbb/game: Johanson, Waugh, Bowling,
Zinkevich, "Accelerating Best Response Calculation in Large Extensive Games" (2011)."""


@pytest.mark.slow
def test_lbr_beats_always_call_in_limit_holdem():
  g = make("limit_holdem")
  res = local_best_response(g, fixed_action_policy(g, (1,)), jax.random.key(2), 96,
                            batch_size=96, num_boards=16)
  assert res.payoffs.shape == (2, 96) and res.num_games == 96
  assert res.value - res.half_width > 1.0  # over 100 mbb a game even at the interval's low end
  assert np.all(np.abs(res.payoffs) <= 240)  # at most 24 big blinds change hands in a game


@pytest.mark.slow
def test_lbr_against_always_call_in_limit_holdem_is_near_its_exploitability():
  g = make("limit_holdem")
  res = local_best_response(g, fixed_action_policy(g, (1,)), jax.random.key(3), 1024,
                            batch_size=256, num_boards=32)
  hw = 1000 * res.half_width / res.big_blind
  assert res.mbb_per_game - hw > 500
  assert res.mbb_per_game - hw <= ALWAYS_CALL_MBB  # below the exact best response


# --- bad input ------------------------------------------------------------------------------------

def test_bad_input_is_refused_before_compiling(leduc):
  g, cg = leduc
  good = uniform_device_policy(g)
  before = _play._cache_size()
  key = jax.random.key(0)
  with pytest.raises(TypeError, match=r"\[2, 3\].*\(2, 2\)"):
    local_best_response(g, lambda s, p: jnp.ones((2, 2)) / 2, key, 10)
  with pytest.raises(TypeError, match="float"):
    local_best_response(g, lambda s, p: jnp.ones((2, 3), jnp.int32), key, 10)
  with pytest.raises(TypeError, match="device policy failed"):
    local_best_response(g, lambda s, p: s.nothing, key, 10)
  with pytest.raises(TypeError, match="device policy is a function"):
    local_best_response(g, _uniform(cg), key, 10)
  with pytest.raises(TypeError, match="kuhn_poker is not one"):
    local_best_response(make("kuhn_poker"), good, key, 10)
  with pytest.raises(TypeError, match="pass its .game"):
    local_best_response(cg, good, key, 10)
  for bad in (0, -3, 2.5, True):
    with pytest.raises(ValueError, match="num_games"):
      local_best_response(g, good, key, bad)
  with pytest.raises(ValueError, match="batch_size"):
    local_best_response(g, good, key, 10, batch_size=0)
  with pytest.raises(ValueError, match="key"):
    local_best_response(g, good, 7, 10)
  with pytest.raises(TypeError, match="calling_range"):
    local_best_response(g, good, key, 10, calling_range="yes")
  iso = make("leduc_poker", suit_isomorphism=True)
  with pytest.raises(TypeError, match="tabular device policy is for leduc_poker"):
    local_best_response(iso, tabular_device_policy(cg, _uniform(cg)), key, 10)
  with pytest.raises(ValueError, match="preference"):
    fixed_action_policy(g, (3,))
  assert _play._cache_size() == before


def test_device_policy_helpers_are_distributions():
  g = make("limit_holdem")
  s = _steps(g, g.init(), [0, 1, 2, 3, 2])  # player 0 faces a raise... after player 1 raised
  batch = jax.tree_util.tree_map(lambda x: x[None], s)
  np.testing.assert_allclose(uniform_device_policy(g)(batch, 0), [[1 / 3, 1 / 3, 1 / 3]])
  np.testing.assert_allclose(fixed_action_policy(g, (0, 1))(batch, 0), [[1, 0, 0]])
  root = batch_of(g, 4)
  assert uniform_device_policy(g)(root, 0).shape == (4, 3)
