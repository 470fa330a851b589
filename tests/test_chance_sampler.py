"""Game-provided chance samplers (``DeviceGame.sample_chance``): hold'em's k-th card left,
checked against the clear bits of its deck, against ``chance_probs`` on the whole grid of
``u``, and through random playouts against the generic draw from ``chance_probs``."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from jaxgt.core import playout
from jaxgt.games import CHANCE, make
from jaxgt.games.device import DeviceGame, has_chance_sampler, uniform_grid_index
from jaxgt.games.holdem import DECK, LimitHoldem, kth_free_card

GAME = make("limit_holdem")
GRID = 1 << 24  # the resolution of the playouts' uniform numbers


class GenericHoldem(LimitHoldem):
  """Hold'em without its sampler: playouts draw its deals from ``chance_probs``."""

  sample_chance = DeviceGame.sample_chance


def _all_u():
  return jnp.arange(GRID, dtype=jnp.float32) / GRID


def _deck(dealt):
  """int32 ``[2]`` of a set of card ids, as the game keeps it (bit 31 wraps to negative)."""
  bits = np.zeros(2, np.uint32)
  for c in dealt:
    bits[c >> 5] |= np.uint32(1) << np.uint32(c & 31)
  return bits.view(np.int32)


def test_which_games_have_a_sampler():
  assert has_chance_sampler(GAME) and not has_chance_sampler(GenericHoldem())
  assert not has_chance_sampler(make("kuhn_poker")) and not has_chance_sampler(object())


@pytest.mark.parametrize("n", [1, 3, 44, 52])
def test_grid_index_splits_the_grid_into_equal_parts(n):
  k = np.asarray(jax.jit(lambda u: uniform_grid_index(u, n))(_all_u()))
  counts = np.bincount(k, minlength=n)
  assert len(counts) == n and counts.sum() == GRID
  assert np.all((counts == GRID // n) | (counts == -(-GRID // n)))
  assert np.all(np.diff(k) >= 0)  # parts are intervals of u


def test_kth_free_card_is_the_kth_clear_bit():
  rng = np.random.default_rng(0)
  decks, ks, want = [], [], []
  for dealt in list(range(0, 52)) * 20:
    cards = rng.choice(DECK, size=dealt, replace=False)
    if rng.random() < 0.3:  # the sign bit of the first word and the last card, often
      cards = np.unique(np.concatenate([cards[:max(dealt - 2, 0)], [31, 51][:min(dealt, 2)]]))
    free = np.setdiff1d(np.arange(DECK), cards)
    k = rng.integers(len(free), size=4)
    decks += [_deck(cards)] * 4
    ks += list(k)
    want += list(free[k])
  got = jax.jit(jax.vmap(kth_free_card))(jnp.asarray(np.stack(decks)), jnp.asarray(ks, jnp.int32))
  np.testing.assert_array_equal(np.asarray(got), want)


@pytest.mark.parametrize("deals", [[], [31, 51, 0], [5, 17, 31, 40, 51, 2]])
def test_sample_chance_on_every_u_of_the_grid_is_chance_probs(deals):
  s = GAME.init()
  for i, c in enumerate(deals):
    if i == 4:  # the preflop betting: player 1 calls, player 0 checks
      s = GAME.step(GAME.step(s, 1), 1)
    s = GAME.step(s, c)
  assert int(GAME.current_player(s)) == CHANCE
  cards = np.asarray(jax.jit(jax.vmap(lambda u: GAME.sample_chance(s, u)))(_all_u()))
  counts = np.bincount(cards, minlength=DECK)
  probs = np.asarray(GAME.chance_probs(s), np.float64)
  assert len(counts) == DECK and np.all((counts > 0) == (probs > 0))
  assert np.all(np.abs(counts - probs * GRID) < 1)  # 2^24 p rounded up or down


def test_playout_deals_are_uniform_and_distinct():
  _, actions, _ = jax.device_get(playout.trajectories(GAME, jax.random.key(0), 40_000))
  hole = actions[:, :4]  # the four hole cards, dealt first in every hand
  assert np.all(np.sort(hole, axis=1)[:, 1:] != np.sort(hole, axis=1)[:, :-1])
  for column, others in ((hole[:, 0], 0), ((hole[:, 1] - hole[:, 0]) % DECK - 1, 1)):
    counts = np.bincount(column, minlength=DECK - others)
    assert len(counts) == DECK - others
    assert stats.chisquare(counts).pvalue > 1e-4


def test_playouts_with_and_without_the_sampler_have_the_same_returns():
  """Mean and spread of player 0's return under uniform play: the sampled deals and the
  generic draw from chance_probs are two independent estimates of the same distribution."""
  a = np.asarray(playout.random_playouts(GAME, jax.random.key(1), 100_000)[:, 0], np.float64)
  b = np.asarray(playout.random_playouts(GenericHoldem(), jax.random.key(2), 100_000)[:, 0],
                 np.float64)
  assert stats.ks_2samp(a, b).pvalue > 1e-4
  stderr = np.sqrt(a.var() / len(a) + b.var() / len(b))
  assert abs(a.mean() - b.mean()) < 4.5 * stderr
  assert np.mean(a != 0) > 0.9 and abs(a.std() / b.std() - 1) < 0.05
