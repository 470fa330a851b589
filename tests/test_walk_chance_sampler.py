"""Walks through a device game's own chance sampler (``DeviceGame.sample_chance``): chance
outcomes come from the sampler, their probabilities from ``chance_probs``, and a sampled solver
keeps the numbers of its run on the compiled tree when the sampler draws as the CDF does."""

import jax
import jax.numpy as jnp
import numpy as np
from cdf_leduc import CdfLeduc

import jaxgt
from jaxgt.core import rng
from jaxgt.games import CHANCE, make
from jaxgt.games.device import has_chance_sampler
from jaxgt.games.holdem import DECK
from jaxgt.solvers import mccfr
from jaxgt.solvers.mccfr_outcome import outcome_walk
from jaxgt.solvers.sources import Rules, source_of, table_stats, tree_rows


def test_outcome_sampling_through_a_chance_sampler_equals_the_tree_run():
  game = CdfLeduc()
  assert has_chance_sampler(game)
  compiled = jaxgt.compile_game(make("leduc_poker"))
  tree, rules = compiled.device_tree(), Rules(game)
  solver = mccfr.outcome_sampling(batch=16)
  key = jax.random.key(3)
  on_tree = solver.run(tree, solver.init(tree), 12, key)
  on_rules = solver.run(rules, solver.init(rules, capacity=600), 12, key)
  assert table_stats(on_rules.tables)["refused"] == [0, 0]
  rows = tree_rows(compiled, rules, on_rules.tables)
  for p in (0, 1):
    for name in ("regrets", "cum_policy"):
      want = np.asarray(getattr(on_tree, name)[p])
      got = np.asarray(getattr(on_rules, name)[p])
      np.testing.assert_allclose(got[:len(rows[p])], want[rows[p]], rtol=1e-5,
                                 atol=1e-5 * max(1.0, np.abs(want).max()))


def test_holdem_walk_deals_with_its_sampler_at_the_deal_probability():
  game = make("limit_holdem")
  rules = Rules(game)
  solver = mccfr.outcome_sampling(batch=64)
  state = solver.init(rules, capacity=4096)
  src = source_of(rules, state.tables)
  uni = rng.uniform(jax.random.key(1), (src.max_depth, 64), jnp.float32)
  traj, _, _ = jax.jit(lambda r: outcome_walk(solver, src, r, 0, uni, tabulate=False))(
      state.regrets)
  chance = np.asarray(traj.player) == CHANCE
  assert chance.sum() >= 4 * 64  # the hole cards at least
  dealt = np.asarray(traj.history.dealt)
  np.testing.assert_allclose(np.asarray(traj.sample_prob)[chance], 1.0 / (DECK - dealt[chance]),
                             rtol=1e-6)
  np.testing.assert_array_equal(np.asarray(traj.target_prob)[chance],
                                np.asarray(traj.sample_prob)[chance])
  want = jax.vmap(jax.vmap(game.sample_chance))(traj.history, uni)
  np.testing.assert_array_equal(np.asarray(traj.action)[chance], np.asarray(want)[chance])
  cards = np.asarray(traj.last.cards)  # [B, 9] the cards dealt: never the same card twice
  for row, n in zip(cards, np.asarray(traj.last.dealt)):
    assert len(set(row[:n].tolist())) == n
