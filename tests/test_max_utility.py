"""Device games' max_utility (the largest absolute payoff in closed form) against the compiled
tree's payoffs, and on hold'em against a line that reaches it and random play."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxgt
from jaxgt.core.compiler import compile_game
from jaxgt.games.base import CHANCE


@pytest.mark.parametrize("name,params", [
    ("kuhn_poker", {}),
    ("leduc_poker", {}),
    ("leduc_poker", {"suit_isomorphism": True}),
    ("generic_poker", {"T": 2, "C": 2, "R": 0, "B": 2}),
    ("generic_poker", {"T": 3, "C": 1, "R": 2, "B": 1}),
    ("liars_dice", {}),
    ("liars_dice", {"numdice1": 1, "numdice2": 2, "dice_sides": 3}),
    ("goofspiel", {"num_cards": 1}),
    ("goofspiel", {"num_cards": 3}),
    ("goofspiel", {"num_cards": 4, "returns_type": "point_difference"}),
    ("goofspiel", {"num_cards": 4, "returns_type": "point_difference", "points_base": 0,
                   "points_order": "descending"}),
    ("goofspiel", {"num_cards": 1, "returns_type": "point_difference"}),
    ("goofspiel", {"num_cards": 2, "returns_type": "point_difference", "points_base": 3}),
    ("ii_goofspiel", {"num_cards": 4}),
    ("ii_goofspiel", {"num_cards": 5, "returns_type": "point_difference"}),
])
def test_max_utility_is_the_compiled_trees_largest_payoff(name, params):
  game = jaxgt.games.make(name, **params)
  tree = compile_game(game).device_tree("float64")
  assert game.max_utility == pytest.approx(float(np.max(np.abs(np.asarray(tree.terminal_payoff)))))


def _random_returns(game, n, key):
  """Player 0's returns ``[n]`` of uniformly random play (chance by its probabilities)."""

  def one(k):
    def body(t, s):
      kt = jax.random.fold_in(k, t)
      chance = game.current_player(s) == CHANCE
      C = game.num_distinct
      w = jnp.where(chance, jnp.pad(game.chance_probs(s), (0, C - game.num_outcomes)),
                    jnp.pad(game.legal_mask(s).astype(float), (0, C - game.num_actions)))
      a = jax.random.categorical(kt, jnp.log(jnp.where(w > 0, w, 1e-30)))
      return game.step(s, a)
    return game.returns(jax.lax.fori_loop(0, game.max_length, body, game.init()))[0]

  return np.asarray(jax.jit(jax.vmap(one))(jax.random.split(key, n)))


def test_holdem_max_utility_is_reached_and_never_exceeded():
  game = jaxgt.games.make("limit_holdem")
  assert game.max_utility == 240.0
  # Player 0 holds two aces, the board gives them trips; every round is raised to the cap.
  deals = iter([51, 50, 0, 5, 49, 44, 36, 29, 22])
  s = game.init()
  while int(game.current_player(s)) != -4:
    if int(game.current_player(s)) == CHANCE:
      s = game.step(s, next(deals))
    else:
      legal = np.asarray(game.legal_mask(s))
      s = game.step(s, 2 if legal[2] else 1)
  assert float(game.returns(s)[0]) == game.max_utility
  u = _random_returns(game, 2000, jax.random.key(0))
  assert np.abs(u).max() <= game.max_utility and np.abs(u).max() > 0
