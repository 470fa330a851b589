"""Leduc hold'em as a device game: equal to its Python rules when compiled, sampled trajectories
equal to OpenSpiel's, private chance equal to the compiled chance reach."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxgt.core import playout
from jaxgt.core.compiler import compile_game
from jaxgt.games import CHANCE, TERMINAL, make_from_string
from oracle_games import assert_same_compiled
from oracle_games.leduc import LeducPoker as LeducOracle

from device_game_checks import (assert_features_tell_keys_apart,
                                assert_private_chance_is_chance_reach)

GAMES = ["leduc_poker", "leduc_poker(suit_isomorphism=true)"]


@pytest.fixture(scope="module", params=GAMES)
def leduc(request):
  g = make_from_string(request.param)
  return g, compile_game(g)


def test_compiles_equal_to_the_python_rules(leduc):
  g, cg = leduc
  assert_same_compiled(cg, compile_game(LeducOracle(**g.params)))


def test_private_chance_is_the_chance_reach(leduc):
  g, cg = leduc
  assert g.num_private == ((6, 6) if g.params["suit_isomorphism"] is False else (3, 3))
  assert_private_chance_is_chance_reach(g, cg)


def test_features_tell_information_states_apart(leduc):
  assert_features_tell_keys_apart(*leduc)


def _record(game, actions):
  """Per step of each trajectory: player, legal mask, chance probabilities and both players'
  keys; the returns at the end."""
  def one(path):
    def body(s, a):
      rec = (game.current_player(s), game.legal_mask(s), game.chance_probs(s),
             game.info_key(s, 0), game.info_key(s, 1))
      nxt = game.step(s, jnp.maximum(a, 0))
      return jax.tree_util.tree_map(lambda x, y: jnp.where(a >= 0, y, x), s, nxt), rec
    s, rec = jax.lax.scan(body, game.init(), path)
    return rec, game.returns(s), game.current_player(s)
  with jax.enable_x64(True):
    return jax.device_get(jax.jit(jax.vmap(one))(actions))


@pytest.mark.parametrize("name", GAMES)
def test_sampled_trajectories_equal_openspiel(name):
  pyspiel = pytest.importorskip("pyspiel")
  g = make_from_string(name)
  os_game = pyspiel.load_game(name)
  returns, actions, last = playout.trajectories(g, jax.random.PRNGKey(7), 2000)
  (player, legal, probs, k0, k1), final, final_player = _record(g, actions)
  np.testing.assert_array_equal(np.asarray(last), TERMINAL)
  np.testing.assert_array_equal(final, returns)
  names = [{}, {}]  # key bytes -> string, decoded once
  for b in range(actions.shape[0]):
    o = os_game.new_initial_state()
    for i, a in enumerate(np.asarray(actions[b])):
      if a < 0:
        break
      for q, k in ((0, k0[b, i]), (1, k1[b, i])):
        s = names[q].get(k.tobytes()) or names[q].setdefault(k.tobytes(), g.info_string(k, q))
        assert s == o.information_state_string(q), (b, i, q)
      if o.is_chance_node():
        assert player[b, i] == CHANCE
        outs = o.chance_outcomes()
        assert [int(c) for c in np.flatnonzero(probs[b, i] > 0)] == [c for c, _ in outs]
        assert [probs[b, i, c] for c, _ in outs] == pytest.approx([q for _, q in outs], rel=1e-15)
      else:
        assert player[b, i] == o.current_player()
        assert list(np.flatnonzero(legal[b, i])) == o.legal_actions()
      o.apply_action(int(a))
    assert o.is_terminal() and final_player[b] == TERMINAL
    assert tuple(final[b]) == pytest.approx(tuple(o.returns()), abs=0)
