"""Suit-isomorphic Leduc: the full game's quotient by the suit permutation (strategies lifted
back with jaxgt.policy.lift keep their exploitability; CFR's iterates are the full game's)."""

import numpy as np
import pytest

import jaxgt
from jaxgt import policy as pol_lib
from jaxgt.core import sequence_form as sf
from jaxgt.games.leduc import suit_isomorphic_key
from jaxgt.policy import PolicyError
from jaxgt.solvers.cfr import discounted_cfr

ISO = "leduc_poker(suit_isomorphism=true)"


@pytest.fixture(scope="module")
def games():
  return jaxgt.load("leduc_poker"), jaxgt.load(ISO)


def _random_policy(g, seed):
  rng = np.random.default_rng(seed)
  out = []
  for pt in g.tree.players:
    legal = np.asarray(pt.legal)
    w = rng.gamma(0.3, size=legal.shape) * legal + 1e-12 * legal
    out.append(w / w.sum(-1, keepdims=True))
  return tuple(out)


def test_sizes_and_value_equal_generic_poker_3_2_1_1(games):
  # a second implementation of the same quotient: GP(T=3, C=2, R=1, B=1) deals card types
  full, iso = games
  gp = jaxgt.load("generic_poker(T=3,C=2,R=1,B=1)")
  assert {k: v for k, v in iso.sizes().items() if k != "public_states"} == \
         {k: v for k, v in gp.sizes().items() if k != "public_states"}
  assert (iso.tree.num_histories, iso.tree.num_infostates) == (1939, (144, 144))
  values = []
  for g in (full, iso, gp):
    tree = g.device_tree("float64")
    s = discounted_cfr(dtype="float64")
    st = s.run(tree, s.init(tree), 200)
    pol = s.policy(tree, st)
    values.append((float(sf.expected_value(tree, pol)), float(sf.exploitability(tree, pol))))
  # the game value (-0.0856, Leduc's known value) within the exploitabilities; iso == GP exactly
  assert values[1] == pytest.approx(values[2], rel=1e-9)
  for v, e in values:
    assert abs(v - (-0.085606)) <= 2 * e + 1e-4


def test_lifted_policy_keeps_its_exploitability(games):
  full, iso = games
  tf, ti = full.device_tree("float64"), iso.device_tree("float64")
  for seed in range(3):
    pol = _random_policy(iso, seed)
    lifted = pol_lib.lift(pol, iso, full, suit_isomorphic_key)
    assert float(sf.exploitability(tf, lifted.probs)) == pytest.approx(
        float(sf.exploitability(ti, pol)), rel=1e-12)
    assert float(sf.expected_value(tf, lifted.probs)) == pytest.approx(
        float(sf.expected_value(ti, pol)), rel=1e-12, abs=1e-15)
    # both best-response values, not only their sum
    for p in (0, 1):
      assert float(sf.best_response_value(tf, lifted.probs, p)) == pytest.approx(
          float(sf.best_response_value(ti, pol, p)), rel=1e-12, abs=1e-15)


def test_cfr_iterates_are_the_full_games(games):
  # exact arithmetic gives equal iterates; float64 differs by rounding only, which CFR's
  # regret matching amplifies slowly (about 1e-13 relative after 20 iterations)
  full, iso = games
  tf, ti = full.device_tree("float64"), iso.device_tree("float64")
  s = discounted_cfr(dtype="float64")
  for n in (1, 5, 20):
    a = s.policy(tf, s.run(tf, s.init(tf), n))
    b = s.policy(ti, s.run(ti, s.init(ti), n))
    lifted = pol_lib.lift(tuple(np.asarray(x) for x in b), iso, full, suit_isomorphic_key)
    for p in (0, 1):
      np.testing.assert_allclose(np.asarray(a[p]), lifted.probs[p], atol=1e-10)


def test_suit_isomorphic_key():
  key = ("[Observer: 1][Private: 4][Round 2][Player: 1][Pot: 10][Money: 95 95][Public: 5]"
         "[Round1: 2 2 1][Round2: 1]")
  assert suit_isomorphic_key(key) == key.replace("[Private: 4]", "[Private: 2]").replace(
      "[Public: 5]", "[Public: 2]")


def test_lift_rejects_a_wrong_map_or_policy(games):
  full, iso = games
  pol = _random_policy(iso, 0)
  with pytest.raises(PolicyError, match="does not have"):
    pol_lib.lift(pol, iso, full, lambda k: k)  # full-game keys are not the quotient's
  with pytest.raises(PolicyError, match="shape"):
    pol_lib.lift(_random_policy(full, 0), iso, full, suit_isomorphic_key)
  other = pol_lib.Policy.from_arrays(full, _random_policy(full, 1))
  with pytest.raises(PolicyError, match="policy is for game"):
    pol_lib.lift(other, iso, full, suit_isomorphic_key)
  kuhn = jaxgt.load("kuhn_poker")
  with pytest.raises(PolicyError, match="actions"):
    pol_lib.lift(_random_policy(kuhn, 0), kuhn, full, suit_isomorphic_key)


def test_bad_parameter_is_rejected():
  with pytest.raises(ValueError, match="suit_isomorphism"):
    jaxgt.load("leduc_poker(suit_isomorphism=2)")
