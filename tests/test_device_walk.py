"""The sampled solvers' walk on a device game's rules, and search positions on device games."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxgt
from jaxgt.core import sequence_form
from jaxgt.games import make
from jaxgt.solvers.consistent import (consistent_children, sample_information_state,
                                      search_path)
from jaxgt.solvers.sources import Rules, insert_rows, source_of, table_stats, tree_rows
from jaxgt.solvers.walk import Draw, walk


def _uniform_policy(t, node, carry):
  u = sequence_form.uniform(node.legal).astype(jnp.float32)
  return Draw(sample=u, target=u, record=node.legal), carry


@pytest.mark.parametrize("name,params", [("leduc_poker", {}), ("kuhn_poker", {}),
                                         ("liars_dice", {"numdice": 1})])
def test_walk_over_rules_draws_what_the_walk_over_the_compiled_tree_draws(name, params):
  game = make(name, **params)
  compiled = jaxgt.compile_game(game)
  tree = compiled.device_tree()
  rules = Rules(game)
  uni = jax.random.uniform(jax.random.key(3), (tree.max_depth, 256))
  on_tree, _ = walk(tree, _uniform_policy, uni)
  src = source_of(rules, rules.empty_tables(4096))
  on_rules, _ = jax.jit(lambda u: walk(src, _uniform_policy, u))(uni)
  np.testing.assert_array_equal(on_rules.action, on_tree.action)
  np.testing.assert_array_equal(on_rules.player, on_tree.player)
  np.testing.assert_allclose(on_rules.payoff(), on_tree.payoff(), rtol=1e-6)
  np.testing.assert_allclose(on_rules.sample_prob, on_tree.sample_prob, rtol=1e-6)
  # Every visited decision's key, inserted, maps back to the tree's information state.
  tables, rows = insert_rows(src.tables, on_rules.player, on_rules.key, on_rules.player >= 0)
  mapping = tree_rows(compiled, rules, tables)
  pl, info, rows = (np.asarray(x) for x in (on_tree.player, on_tree.infostate, rows))
  dec = pl >= 0
  mapped = np.where(pl == 0, mapping[0][np.maximum(rows, 0) % len(mapping[0])],
                    mapping[1][np.maximum(rows, 0) % max(len(mapping[1]), 1)])
  np.testing.assert_array_equal(mapped[dec], info[dec])
  assert table_stats(tables)["refused"] == [0, 0]


def test_sampled_information_states_follow_chance_reach_on_leduc():
  game = make("leduc_poker")
  L = game.max_length
  # Deal player 0 card 0 and player 1 card 3; player 0 raises; player 1 is to act.
  actions = jnp.array([0, 3, 2] + [-1] * (L - 3), jnp.int32)
  path = jax.jit(lambda a: search_path(game, a, 3))(actions)
  assert int(path.player) == 1 and int(path.length) == 3
  states, ok = jax.jit(lambda k: sample_information_state(game, path, k, 6000))(
      jax.random.key(0))
  assert bool(jnp.all(ok))
  keys = np.asarray(jax.vmap(lambda s: game.info_key(s, 1))(states))
  assert (keys == np.asarray(path.keys[3])).all()
  # Player 0's card is uniform over the five cards player 1 does not hold (card removal: the
  # walks that dealt card 3 to player 0 met a dead end and were drawn again).
  freq = np.bincount(np.asarray(states.cards)[:, 0], minlength=6) / 6000
  assert freq[3] == 0
  np.testing.assert_allclose(np.delete(freq, 3), 0.2, atol=0.02)


def test_consistent_children_are_those_the_searchers_observations_allow():
  game = make("leduc_poker")
  L = game.max_length
  actions = jnp.array([0, 3, 2] + [-1] * (L - 3), jnp.int32)
  path = search_path(game, actions, 3)
  # At the root (chance deals player 0's card) every card is consistent with player 1's
  # observations: player 1 sees no card of player 0.
  root = jax.tree_util.tree_map(lambda x: x[None], game.init())
  mask = np.asarray(consistent_children(game, root, 0, path))[0]
  assert mask[:6].all()
  # After player 0 got card 0, only card 3 for player 1 agrees.
  s1 = jax.tree_util.tree_map(lambda x: x[None], game.step(game.init(), 0))
  mask = np.asarray(consistent_children(game, s1, 1, path))[0]
  assert mask.tolist()[:6] == [False, False, False, True, False, False]
  # Public-state targeting: any card for player 1 agrees (the deal is private).
  mask = np.asarray(consistent_children(game, s1, 1, path, "pst"))[0]
  assert mask[:6].sum() == 5 and not mask[0]


def test_walk_over_rules_is_refused_without_tables():
  with pytest.raises(ValueError, match="tables"):
    source_of(Rules(make("kuhn_poker")))
  with pytest.raises(TypeError, match="DeviceGame"):
    Rules(jaxgt.compile_game(make("kuhn_poker")))
