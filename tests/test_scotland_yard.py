"""Scotland Yard on the glasses map (Schmid et al. 2023): rules, public states, values; the
device game compiles to its Python oracle's arrays."""

import functools

import numpy as np
import pytest

from jaxgt.core.compiler import compile_game
from jaxgt.games import TERMINAL, check, make
from jaxgt.games import scotland_yard as sy
from jaxgt.solvers import cfr
from jaxgt.core import sequence_form as sf
from device_game_checks import assert_features_tell_keys_apart
from oracle_games import HostRules, assert_same_compiled
from oracle_games.scotland_yard import ScotlandYard as OracleScotlandYard

# The reconstructed map, written out independently of the module's tables.
ADJ = {1: {2, 5}, 2: {1, 3}, 3: {2, 4}, 4: {3, 5, 6}, 5: {1, 4}, 6: {4, 8},
       7: {8, 11}, 8: {6, 7, 9}, 9: {8, 10}, 10: {9, 11}, 11: {7, 10}}


def detectives_force_capture(rounds, x, d):
  """Reference: an AND-OR search over the detectives' public belief set of Mr X's station.

  The value is -1 iff one pure detective strategy (a function of public
  observations) catches every Mr X path.
  """

  @functools.lru_cache(maxsize=None)
  def x_turn(rnd, d, belief):
    if rnd > rounds:
      return False
    after = frozenset(n for x in belief for n in ADJ[x] if n not in d)
    if not after:  # every possible Mr X is trapped
      return True
    if rnd == 3:  # Mr X surfaces
      return all(det_turn(rnd, d, frozenset([y])) for y in after)
    return det_turn(rnd, d, after)

  def moves(d, i):
    return [n for n in ADJ[d[i]] if n != d[1 - i]] or [d[i]]

  @functools.lru_cache(maxsize=None)
  def det_turn(rnd, d, belief):
    for m1 in moves(d, 0):
      b1 = belief - {m1}
      if not b1:
        return True
      for m2 in moves((m1, d[1]), 1):
        b2 = b1 - {m2}
        if not b2 or x_turn(rnd + 1, (m1, m2), b2):
          return True
    return False

  return x_turn(1, d, frozenset([x]))


def mrx_escapes_seen(rounds, x, d):
  """Reference: Mr X escapes surely iff he wins the game where detectives see him."""

  @functools.lru_cache(maxsize=None)
  def win(rnd, x, d):
    if rnd > rounds:
      return True
    for y in ADJ[x] - set(d):
      m1s = [n for n in ADJ[d[0]] if n != d[1]] or [d[0]]
      if all(m1 != y and all(m2 != y and win(rnd + 1, y, (m1, m2))
                             for m2 in ([n for n in ADJ[d[1]] if n != m1] or [d[1]]))
             for m1 in m1s):
        return True
    return False

  return win(1, x, d)


def reference_value(rounds, x=6, d=(1, 11)):
  if detectives_force_capture(rounds, x, d):
    return -1.0
  if mrx_escapes_seen(rounds, x, d):
    return 1.0
  return None  # strictly between -1 and 1


def solve(game, iters):
  cg = compile_game(game)
  tree = cg.device_tree("float64")
  s = cfr.cfr_plus(dtype="float64")
  pol = s.average_policy(tree, s.run(tree, s.init(tree), iters))
  return cg, tree, pol


def test_map_matches_reference():
  assert sy._ADJ == {s: tuple(sorted(n)) for s, n in ADJ.items()}
  assert len(sy.EDGES) == 12


@pytest.mark.parametrize("params", [
    dict(rounds=1),
    dict(rounds=1, mrx_start=6, detective1_start=3, detective2_start=9),   # both exits covered
    dict(rounds=1, mrx_start=3, detective1_start=1, detective2_start=5),   # both exits covered
    pytest.param(dict(rounds=2), marks=pytest.mark.slow),
    pytest.param(dict(rounds=3), marks=pytest.mark.slow),
    pytest.param(dict(rounds=2, mrx_start=1, detective1_start=3, detective2_start=9),
                 marks=pytest.mark.slow)])
def test_value_matches_reference(params):
  g = make("scotland_yard", **params)
  want = reference_value(params["rounds"], g.params["mrx_start"],
                         (g.params["detective1_start"], g.params["detective2_start"]))
  assert want is not None
  _, tree, pol = solve(g, 200)
  assert float(sf.exploitability(tree, pol)) < 1e-3
  assert float(sf.expected_value(tree, pol)) == pytest.approx(want, abs=2e-3)


@pytest.mark.slow  # over the default run's time budget
def test_hidden_position_gives_mixed_value():
  # Neither side can force a win (reference searches), so the value is strictly inside;
  # were Mr X visible, the detectives would win.
  params = dict(rounds=3, mrx_start=4, detective1_start=6, detective2_start=8)
  assert reference_value(3, 4, (6, 8)) is None and not mrx_escapes_seen(3, 4, (6, 8))
  _, tree, pol = solve(make("scotland_yard", **params), 300)
  assert float(sf.exploitability(tree, pol)) < 2e-3
  assert -0.99 < float(sf.expected_value(tree, pol)) < 0.99


def _make(**params):
  return HostRules(make("scotland_yard", **params))


def test_rules_by_hand():
  g = _make()
  s = g.initial_state()
  assert g.current_player(s) == 0 and g.legal_actions(s) == [3, 7]  # stations 4, 8
  s = g.next_state(s, 3)
  assert g.current_player(s) == 1 and g.legal_actions(s) == [1, 4]  # detective 1: 2, 5
  assert "4" not in g.information_state(s, 1).split("[Public:")[1]
  assert g.information_state(s, 0).startswith("[Round 1][Mover: D1][Mr X: 6 4]")
  s = g.next_state(g.next_state(s, 4), 9)  # detectives to 5 and 10
  assert g.legal_actions(s) == [2, 5]  # Mr X at 4: 3 or 6 (5 is occupied)
  s = g.next_state(s, 2)  # Mr X to 3, then D1 from 5 to 4, D2 to 11
  s = g.next_state(g.next_state(s, 3), 10)
  s = g.next_state(s, 1)  # round 3: Mr X to 2 and surfaces
  assert g.public_state(s)[-1] == ("X", 2)
  s = g.next_state(s, 2)  # D1 from 4 to 3: no capture
  assert g.current_player(s) == 1 and g.public_state(s)[-1] == ("D", 1, 3, False)
  g = _make(rounds=1, mrx_start=3, detective1_start=1, detective2_start=5)
  s = g.next_state(g.initial_state(), 1)  # Mr X to 2
  assert g.legal_actions(s) == [1]  # detective 1 at 1: 2 (5 is detective 2's)
  s = g.next_state(s, 1)
  assert g.current_player(s) == TERMINAL and g.returns(s) == (-1.0, 1.0)
  assert g.public_state(s)[-1] == ("D", 1, 2, True)
  g = _make(rounds=1, mrx_start=6, detective1_start=4, detective2_start=8)
  s = g.initial_state()  # Mr X cannot move: caught
  assert g.current_player(s) == TERMINAL and g.returns(s) == (-1.0, 1.0)
  assert g.public_state(s) == (("X", "trapped"),)
  g = _make(rounds=1, mrx_start=3, detective1_start=1, detective2_start=5)
  s = g.next_state(g.next_state(g.initial_state(), 3), 1)  # Mr X to 4, D1 to 2 ...
  s = g.next_state(s, 3)  # ... D2 from 5 to 4 catches
  assert g.current_player(s) == TERMINAL and g.returns(s) == (-1.0, 1.0)
  g = _make(rounds=1)
  s = g.initial_state()
  for a in (3, 1, 9):  # Mr X to 4, detectives to 2 and 10: the last round ends, Mr X is free
    s = g.next_state(s, a)
  assert g.current_player(s) == TERMINAL and g.returns(s) == (1.0, -1.0)


def test_conformance():
  assert check(make("scotland_yard", rounds=3))["trajectories"] == 1000
  assert check(make("scotland_yard", rounds=24, tickets=24), trajectories=200)["passed"]


# Every Scotland Yard game string compiled in the tests, examples and benchmarks.
_COMPILED = [dict(rounds=1), dict(rounds=1, mrx_start=6, detective1_start=3, detective2_start=9),
             dict(rounds=1, mrx_start=3, detective1_start=1, detective2_start=5),
             dict(rounds=1, mrx_start=6, detective1_start=4, detective2_start=8),
             dict(rounds=2), dict(rounds=3), dict(rounds=4), dict(),
             dict(rounds=3, mrx_start=4, detective1_start=6, detective2_start=8),
             dict(rounds=2, mrx_start=1, detective1_start=3, detective2_start=9),
             dict(rounds=9, tickets=3), dict(rounds=3, tickets=0)]


@pytest.mark.parametrize("params", _COMPILED, ids=lambda p: ",".join(f"{k}={v}" for k, v in
                                                                      p.items()) or "default")
def test_device_game_compiles_to_the_oracle(params):
  device = compile_game(make("scotland_yard", **params))
  assert_same_compiled(device, compile_game(OracleScotlandYard(**params)))


@pytest.mark.parametrize("params", [dict(rounds=3), dict(rounds=4, tickets=3)])
def test_features_tell_keys_apart(params):
  g = make("scotland_yard", **params)
  assert_features_tell_keys_apart(g, compile_game(g))


def test_keys_and_features_fit():
  g = make("scotland_yard", rounds=24, tickets=24)
  assert (g.max_length, g.info_key_width, g.public_key_width) == (72, 24, 24)
  s = g.init()
  for a in (3, 1, 9, 2):
    s = g.step(s, a)
  assert g.info_features(s, 0).shape == (g.info_feature_size,)
  assert float(g.info_features(s, 0).sum()) == 24 * 3  # one code per field of each round word
  assert int(g.info_key(s, 1)[1]) == sy.HIDDEN  # round 2's move stays hidden to detectives
  assert int(g.info_key(s, 0)[1]) == 3



def _walk(g):
  """All decision histories as (state, player); iterative DFS."""
  out, stack = [], [g.initial_state()]
  while stack:
    s = stack.pop()
    p = g.current_player(s)
    if p == TERMINAL:
      continue
    out.append((s, p))
    stack.extend(g.next_state(s, a) for a in g.legal_actions(s))
  return out


def test_public_states_hide_mr_x():
  g = _make(rounds=4)
  pub_of_info, x_of_pub = {}, {}
  for s, p in _walk(g):
    pub = g.public_state(s)
    for q in (0, 1):
      assert pub_of_info.setdefault((q, g.information_state(s, q)), pub) == pub
    x_of_pub.setdefault(pub, set()).add(int(s.mrx))
    for k, obs in enumerate(pub):
      if obs[0] == "X":
        rnd = k // 3 + 1
        assert obs[1] is None or (rnd in sy.REVEAL_ROUNDS and obs[1] == int(s.words[rnd - 1]) % 16)
  # Mr X's station is hidden before round 3: many public states hold several stations ...
  hidden = [pub for pub, xs in x_of_pub.items() if len(xs) > 1]
  assert any(len(pub) < 6 for pub in hidden)
  # ... and known right after he surfaces in round 3.
  for pub, xs in x_of_pub.items():
    if len(pub) == 7:
      assert len(xs) == 1 and pub[6] == ("X", next(iter(xs)))


@pytest.mark.slow  # over the default run's time budget
def test_cfr_plus_reduces_exploitability():
  g = make("scotland_yard", rounds=4)
  cg, tree, pol = solve(g, 300)
  uniform = tuple(np.asarray(pt.legal, np.float64) / np.asarray(pt.legal).sum(1, keepdims=True)
                  for pt in tree.players)
  e_uniform = float(sf.exploitability(tree, uniform))
  e = float(sf.exploitability(tree, pol))
  assert e_uniform > 0.1 and e < 1e-2 * e_uniform
  assert float(sf.expected_value(tree, pol)) == pytest.approx(reference_value(4), abs=1e-2)


@pytest.mark.slow
def test_default_game_size_and_value():
  g = make("scotland_yard")
  cg, tree, pol = solve(g, 500)
  assert cg.sizes()["histories"] < 300_000
  assert float(sf.expected_value(tree, pol)) == pytest.approx(reference_value(5), abs=1e-2)


@pytest.mark.parametrize("bad", [dict(rounds=0), dict(rounds=25), dict(tickets=-1),
                                 dict(mrx_start=1), dict(detective2_start=12)])
def test_invalid_parameters(bad):
  with pytest.raises(ValueError):
    make("scotland_yard", **bad)
