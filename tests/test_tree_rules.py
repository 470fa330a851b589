"""A compiled game read through the device game protocol (``CompiledGame.rules``)."""

import jax
import numpy as np
import pytest

import jaxgt
from jaxgt.core.compiler import compile_game
from jaxgt.core.playout import sample_index, trajectories
from oracle_games import assert_same_compiled


@pytest.mark.parametrize("name", ["kuhn_poker", "leduc_poker", "liars_dice(dice_sides=4)",
                                  "goofspiel(num_cards=4)"])
def test_enumerating_a_compiled_games_rules_gives_it_back(name):
  g = jaxgt.load(name)
  with jax.enable_x64(True):
    again = compile_game(g.rules("float64"))
  assert_same_compiled(again, g)


def test_random_playouts_through_tree_rules_end_at_terminals_with_tree_payoffs():
  g = jaxgt.load("leduc_poker")
  rules = g.rules()
  returns, actions, last = (np.asarray(x) for x in trajectories(rules, jax.random.key(3), 256))
  assert (last == jaxgt.games.TERMINAL).all()
  t = g.tree
  for r, path in zip(returns, actions):  # walk each recorded path down the tree
    h = 0
    for a in path[path >= 0]:
      h = int(t.children[h, a])
    assert t.player[h] == jaxgt.games.TERMINAL
    assert r[0] == pytest.approx(t.terminal_payoff[t.history_terminal[h]])
    assert r[0] + r[1] == 0


@pytest.mark.parametrize("weights", [[1.0] * 50 + [0.0, 1.0], list(range(13)), [0.0, 1.0, 1.0],
                                     [0.0] * 9 + [2.0]])
def test_playout_sampling_draws_each_index_by_its_weight(weights):
  w = jax.numpy.asarray(weights, jax.numpy.float32)
  u = jax.random.uniform(jax.random.key(5), (200_000,))
  picks = np.asarray(jax.jit(jax.vmap(lambda x: sample_index(w, x)))(u))
  expected = np.asarray(weights) / np.sum(weights) * len(u)
  counts = np.bincount(picks, minlength=len(weights))
  assert counts[expected == 0].sum() == 0 and len(counts) == len(weights)
  assert np.all(np.abs(counts - expected) < 5 * np.sqrt(expected) + 1)
  assert int(sample_index(w, jax.numpy.float32(1 - 2 ** -24))) == np.flatnonzero(weights)[-1]
  assert int(sample_index(w, 0.0)) == np.flatnonzero(weights)[0]
