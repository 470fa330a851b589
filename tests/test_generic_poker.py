"""Generic Poker GP(T,C,R,B) (Lisy et al. 2015): the device game against its Python rules and
OpenSpiel's universal_poker."""

import jax
import numpy as np
import pytest

from jaxgt.core import sequence_form as sf
from jaxgt.core.compiler import compile_game
from jaxgt.games import CHANCE, TERMINAL, check, from_openspiel, make
from jaxgt.games.generic_poker import PARAMS
from jaxgt.solvers import cfr
from oracle_games import assert_same_compiled
from oracle_games.generic_poker import GenericPoker as GenericPokerOracle

from device_game_checks import (assert_features_tell_keys_apart,
                                assert_private_chance_is_chance_reach)

pyspiel = pytest.importorskip("pyspiel")


def _solve_ours(cg, iters):
  s = cfr.cfr_plus(dtype="float64")
  tree = cg.device_tree("float64")
  pol = s.average_policy(tree, s.run(tree, s.init(tree), iters))
  return float(sf.expected_value(tree, pol)), float(sf.exploitability(tree, pol))


def _solve_openspiel(game_string, iters):
  game = pyspiel.load_game(game_string)
  solver = pyspiel.CFRPlusSolver(game)
  for _ in range(iters):
    solver.evaluate_and_update_policy()
  avg = solver.average_policy()
  value = pyspiel.expected_returns(game.new_initial_state(), avg, -1, True)[0]
  return value, pyspiel.exploitability(game, avg)


@pytest.mark.parametrize("params", [dict(T=3, C=1, R=1, B=1), dict(T=4, C=1, R=2, B=1)])
def test_sizes_match_universal_poker(params):
  g = make("generic_poker", **params)
  ours = compile_game(g).sizes()
  theirs = compile_game(from_openspiel(g.openspiel_game_string())).sizes()
  for k in ("histories", "terminals", "infostates_p0", "infostates_p1", "actions"):
    assert ours[k] == theirs[k], k


@pytest.mark.parametrize("params,iters", [
    (dict(T=3, C=1, R=1, B=1), 300),
    pytest.param(dict(T=3, C=2, R=1, B=1), 300, marks=pytest.mark.slow)])
def test_value_matches_universal_poker(params, iters):
  g = make("generic_poker", **params)
  v, e = _solve_ours(compile_game(g), iters)
  v_os, e_os = _solve_openspiel(g.openspiel_game_string(), iters)
  assert e < 5e-3 and e_os < 5e-3
  # an eps-equilibrium's value is within its NashConv (2 * exploitability) of the game value
  assert abs(v - v_os) <= 2 * (e + e_os) + 1e-9


@pytest.mark.slow
def test_gp_3_2_1_1_is_leduc():
  v, e = _solve_ours(compile_game(make("generic_poker", T=3, C=2, R=1, B=1)), 300)
  v_l, e_l = _solve_ours(compile_game(make("leduc_poker")), 300)
  assert abs(v - v_l) <= 2 * (e + e_l) + 1e-9


# every GP size compiled in tests, examples and benchmarks, and small corners (one card type,
# no raises, three bet sizes)
SIZES = [dict(), dict(T=3, C=1, R=1, B=1), dict(T=4, C=1, R=2, B=1), dict(T=3, C=2, R=1, B=1),
         dict(T=3, C=2, R=1, B=2), dict(T=3, C=3, R=1, B=1), dict(T=3, C=2, R=0, B=1),
         dict(T=1, C=3, R=0, B=3), dict(T=2, C=2, R=3, B=2)]


@pytest.mark.parametrize("params", SIZES, ids=lambda p: "GP(" + ",".join(
    str(p.get(k, PARAMS[k])) for k in "TCRB") + ")")
def test_compiles_equal_to_the_python_rules(params):
  assert_same_compiled(compile_game(make("generic_poker", **params)),
                       compile_game(GenericPokerOracle(**params)))


@pytest.mark.parametrize("params", [dict(), dict(T=4, C=1, R=2, B=1)])
def test_private_chance_is_the_chance_reach(params):
  g = make("generic_poker", **params)
  assert g.num_private == (g.params["T"],) * 2
  assert_private_chance_is_chance_reach(g, compile_game(g))


def test_features_tell_information_states_apart():
  g = make("generic_poker", T=3, C=2, R=1, B=2)
  assert_features_tell_keys_apart(g, compile_game(g))


def test_rules_by_hand():
  g = make("generic_poker", T=3, C=3, R=2, B=2)

  def legal(s):
    return [int(a) for a in np.flatnonzero(np.asarray(g.legal_mask(s)))]

  def key(s, p):
    return g.info_string(np.asarray(g.info_key(s, p)), p)

  s = g.init()
  assert list(np.asarray(g.chance_probs(s))) == [1 / 3, 1 / 3, 1 / 3]
  s = g.step(s, 2)
  assert list(np.asarray(g.chance_probs(s))) == [3 / 8, 3 / 8, 2 / 8]
  s = g.step(s, 1)
  assert int(g.current_player(s)) == 0 and legal(s) == [1, 2, 3]
  for a in (3, 2, 3):  # bet 4, raise 2, raise 4: R=2 raises after the bet
    s = g.step(s, a)
  assert legal(s) == [0, 1]
  s = g.step(s, 1)  # call: contributions 1 + 4 + 2 + 4 = 11 each
  assert int(g.current_player(s)) == CHANCE and legal(s) == []
  s = g.step(s, 1)  # table card pairs player 1
  assert legal(s) == [1, 2, 3]
  s = g.step(g.step(s, 1), 3)  # check, bet 8
  betting = "[Public: 1][Round1: b4 r2 r4 c][Round2: k b8][Pot: 11 19]"
  assert key(s, 0) == "[Player: 0][Private: 2]" + betting
  assert key(s, 1) == "[Player: 1][Private: 1]" + betting
  assert tuple(np.asarray(g.returns(g.step(s, 0)))) == (-11.0, 11.0)
  assert tuple(np.asarray(g.returns(g.step(s, 1)))) == (-19.0, 19.0)
  t = g.step(s, 1)
  assert int(g.current_player(t)) == TERMINAL
  assert jax.tree_util.tree_all(jax.tree_util.tree_map(  # a terminal stays as it is
      lambda x, y: bool(np.array_equal(x, y)), g.step(t, 2), t))


def test_python_rules_by_hand():
  g = GenericPokerOracle(T=3, C=3, R=2, B=2)
  s = g.initial_state()
  assert g.chance_outcomes(s) == [(0, 1 / 3), (1, 1 / 3), (2, 1 / 3)]
  s = g.next_state(s, 2)
  assert g.chance_outcomes(s) == [(0, 3 / 8), (1, 3 / 8), (2, 2 / 8)]
  s = g.next_state(s, 1)
  assert g.current_player(s) == 0 and g.legal_actions(s) == [1, 2, 3]
  for a in (3, 2, 3):
    s = g.next_state(s, a)
  assert g.legal_actions(s) == [0, 1]
  s = g.next_state(g.next_state(g.next_state(g.next_state(s, 1), 1), 1), 3)
  info = g.information_state(s, 0)
  assert info == "[Player: 0][Private: 2][Public: 1][Round1: b4 r2 r4 c][Round2: k b8][Pot: 11 19]"
  assert g.returns(g.next_state(s, 0)) == (-11.0, 11.0)
  assert g.returns(g.next_state(s, 1)) == (-19.0, 19.0)


def test_conformance_and_public_states():
  check(GenericPokerOracle(T=3, C=2, R=1, B=2))  # the device game compiles equal to it
  cg = compile_game(make("generic_poker", T=3, C=2, R=1, B=2))
  assert cg.sizes()["actions"] == 4


@pytest.mark.parametrize("bad", [dict(T=1, C=2), dict(R=-1), dict(B=0), dict(T=2.5)])
def test_invalid_parameters(bad):
  with pytest.raises(ValueError):
    make("generic_poker", **bad)
