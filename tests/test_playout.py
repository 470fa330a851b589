"""Batched random playouts and Knuth's size estimate over the device game protocol."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxgt
from jaxgt import struct
from jaxgt.core import playout
from jaxgt.games import make_from_string
from jaxgt.games.base import CHANCE, TERMINAL
from jaxgt.games.device import DeviceGame

WIDE_PROBS = np.arange(40) % 5 / np.sum(np.arange(40) % 5)  # every fifth outcome impossible


@struct.dataclass
class WideState:
  outcome: jnp.ndarray  # [] int32 the chance outcome, -1 before it
  action: jnp.ndarray  # [] int32 player 0's action, -1 before it


class Wide(DeviceGame):
  """Chance picks one of 40 outcomes (probability proportional to ``k mod 5``), then player 0
  one of 30 actions (the odd ones legal); player 0 wins ``100 outcome + action``. Wider than
  a cumulative sum's scan, so playouts take the matrix-product path."""

  name = "wide"
  num_actions, num_outcomes, max_length = 30, 40, 2

  def init(self):
    return WideState(outcome=jnp.int32(-1), action=jnp.int32(-1))

  def current_player(self, s):
    return jnp.where(s.outcome < 0, CHANCE, jnp.where(s.action < 0, 0, TERMINAL)).astype(
        jnp.int32)

  def legal_mask(self, s):
    return (jnp.arange(30) % 2 == 1) & (self.current_player(s) == 0)

  def chance_probs(self, s):
    return jnp.where(self.current_player(s) == CHANCE, jnp.asarray(WIDE_PROBS), 0.0)

  def step(self, s, a):
    p = self.current_player(s)
    return WideState(outcome=jnp.where(p == CHANCE, a, s.outcome).astype(jnp.int32),
                     action=jnp.where(p == 0, a, s.action).astype(jnp.int32))

  def returns(self, s):
    u = jnp.where(self.current_player(s) == TERMINAL, 100.0 * s.outcome + s.action, 0.0)
    return jnp.stack([u, -u])

  def info_key(self, s, player):
    return jnp.stack([s.outcome, s.action])

  def public_key(self, s):
    return s.action[None]

  def info_string(self, key, player):
    return str(tuple(int(k) for k in key))


def uniform_play_value(compiled):
  """Player 0's exact expected return when both players pick uniformly among legal actions
  and chance follows its probabilities (depth-sorted histories, so parents come first)."""
  t = compiled.tree
  player, children, probs = (np.asarray(x) for x in (t.player, t.children, t.chance_probs))
  reach = np.zeros(t.num_histories)
  reach[0] = 1.0
  for h in np.argsort(np.asarray(t.depth), kind="stable"):
    kids = children[h]
    legal = kids >= 0
    if player[h] == TERMINAL:
      continue
    p = probs[h] if player[h] == CHANCE else legal / legal.sum()
    reach[kids[legal]] += reach[h] * p[legal]
  return float(np.sum(reach[np.asarray(t.terminal_history)] * np.asarray(t.terminal_payoff)))


@pytest.mark.parametrize("name,rules", [
    ("kuhn_poker", lambda: make_from_string("kuhn_poker")),  # the device game
    ("leduc_poker", lambda: jaxgt.load("leduc_poker").rules()),  # a compiled tree's rules
])
def test_mean_return_of_uniform_play_is_the_exact_expectation(name, rules):
  returns = np.asarray(playout.random_playouts(rules(), jax.random.key(0), 200_000))
  exact = uniform_play_value(jaxgt.load(name))
  stderr = returns[:, 0].std() / np.sqrt(len(returns))
  assert abs(returns[:, 0].mean() - exact) < 4 * stderr
  np.testing.assert_array_equal(returns[:, 0], -returns[:, 1])  # zero-sum


def test_kuhn_uniform_value_is_one_eighth():
  assert uniform_play_value(jaxgt.load("kuhn_poker")) == pytest.approx(1 / 8)


def test_trajectories_are_legal_end_in_terminals_and_replay_to_their_returns():
  game = make_from_string("kuhn_poker")
  returns, actions, last = jax.device_get(playout.trajectories(game, jax.random.key(1), 64))
  assert actions.shape == (64, game.max_length) and np.all(last == TERMINAL)
  for b in range(64):
    s = game.init()
    for a in actions[b]:
      if a < 0:
        break
      if game.current_player(s) == CHANCE:
        assert game.chance_probs(s)[a] > 0
      else:
        assert game.legal_mask(s)[a]
      s = game.step(s, a)
    assert game.current_player(s) == TERMINAL
    assert np.all(actions[b][np.argmax(actions[b] < 0):] < 0) or np.all(actions[b] >= 0)
    np.testing.assert_array_equal(game.returns(s), returns[b])


def test_chance_outcomes_follow_their_probabilities():
  # Kuhn's first deal is uniform over three cards; the second over the two left
  _, actions, _ = playout.trajectories(make_from_string("kuhn_poker"), jax.random.key(2), 30_000)
  first, second = np.asarray(actions[:, 0]), np.asarray(actions[:, 1])
  np.testing.assert_allclose(np.bincount(first, minlength=3) / len(first), 1 / 3, atol=0.015)
  assert np.all(first != second)


def test_wide_chance_and_action_sets_are_sampled_by_their_weights():
  game = Wide()
  assert game.num_distinct > playout._SCAN_WIDTH
  r = np.asarray(playout.random_playouts(game, jax.random.key(4), 200_000)[:, 0]).astype(int)
  outcome, action = r // 100, r % 100
  assert np.all(WIDE_PROBS[outcome] > 0) and np.all(action % 2 == 1)
  np.testing.assert_allclose(np.bincount(outcome, minlength=40) / len(r), WIDE_PROBS,
                             atol=0.003)
  np.testing.assert_allclose(np.bincount(action, minlength=30)[1::2] / len(r), 1 / 15,
                             atol=0.003)


def test_sample_index_draws_by_inverse_cdf_and_never_a_zero_weight():
  weights = np.array([0, 3, 0, 0, 1, 2, 0] + [0] * 20, np.float32)  # 27: the product path
  for w in (weights, weights[:7]):  # and the cumsum path
    u = np.linspace(0, 1, 60_000, endpoint=False, dtype=np.float32)
    picks = np.asarray(jax.jit(jax.vmap(lambda x: playout.sample_index(w, x)))(u))
    np.testing.assert_allclose(np.bincount(picks, minlength=len(w)) / len(u), w / w.sum(),
                               atol=1e-4)
    assert int(playout.sample_index(w, np.float32(1 - 2 ** -24))) == 5  # the last positive
    assert int(playout.sample_index(w, 0.0)) == 1  # the first positive


def test_step_numbers_are_uniform_and_uncorrelated_and_the_key_fixes_the_playouts():
  seeds = jax.random.bits(jax.random.key(5), (100_000,), jnp.uint32)
  u = np.stack([np.asarray(playout._uniform(seeds, jnp.int32(t))) for t in range(8)])
  assert u.min() >= 0 and u.max() < 1
  np.testing.assert_allclose(np.histogram(u, bins=16, range=(0, 1))[0] / u.size, 1 / 16,
                             atol=0.002)
  corr = np.corrcoef(u)  # steps against steps, over games
  assert np.max(np.abs(corr - np.eye(8))) < 0.01
  assert abs(np.corrcoef(u[:, :-1].ravel(), u[:, 1:].ravel())[0, 1]) < 0.01  # neighbour games
  game = make_from_string("leduc_poker")
  a = [np.asarray(playout.trajectories(game, jax.random.key(k), 256)[1]) for k in (6, 6, 7)]
  np.testing.assert_array_equal(a[0], a[1])
  assert np.any(a[0] != a[2])


def test_size_estimate_is_near_the_enumerated_count():
  for name, rules in [("kuhn_poker", make_from_string("kuhn_poker")),
                      ("leduc_poker", jaxgt.load("leduc_poker").rules())]:
    est = playout.estimate_size(rules, paths=4096, seed=0)
    exact = jaxgt.load(name).tree.num_histories
    assert abs(est["log10_histories"] - np.log10(exact)) < 0.15, (name, est)
    assert not est["truncated"] and est["longest_path"] == rules.max_length


def test_bad_key_and_batch_are_refused():
  game = make_from_string("kuhn_poker")
  with pytest.raises(ValueError, match="jax.random key"):
    playout.random_playouts(game, 3, 4)
  with pytest.raises(ValueError, match="batch must be a positive integer"):
    playout.trajectories(game, jax.random.key(0), 0)
