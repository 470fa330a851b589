"""A compiled game read through the device game protocol (``CompiledGame.rules``)."""

import jax
import numpy as np
import pytest

import jaxgt
from jaxgt.core.compiler import compile_game
from jaxgt.core.playout import trajectories
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
