"""CFR on the factored public tree against the sequence form (history by history) of the same
game, OpenSpiel-sized enumerations and Kuhn's closed-form value."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxgt
from jaxgt.core import sequence_form
from jaxgt.core.factored import build_factored_tree
from jaxgt.games import make_from_string
from jaxgt.solvers import public_cfr


@pytest.fixture(scope="module")
def factored():
  """``name -> (FactoredTree, CompiledGame)``, built once per game."""
  cache = {}

  def get(name):
    if name not in cache:
      cache[name] = (build_factored_tree(make_from_string(name)), jaxgt.load(name))
    return cache[name]

  return get


# (game, solver factory, iterations): rounding differences between the two forms' orders of
# summation grow with the iterations where regret matching+ clips near zero; GP(3,3,2,2)
# agrees to 1e-12 at 20 iterations and drifts past 1e-6 by 50
CASES = [("kuhn_poker", jaxgt.cfr_plus, 100), ("kuhn_poker", jaxgt.discounted_cfr, 100),
         ("leduc_poker", jaxgt.cfr_plus, 60), ("leduc_poker", jaxgt.linear_cfr, 60),
         ("liars_dice(numdice=1)", jaxgt.cfr_plus, 40),
         pytest.param("generic_poker(T=3,C=3,R=2,B=2)", jaxgt.cfr_plus, 20,
                      marks=pytest.mark.slow)]


def _close(a, b, rtol=1e-6):
  a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
  scale = max(1.0, float(np.max(np.abs(b)))) if b.size else 1.0
  assert np.max(np.abs(a - b), initial=0.0) <= rtol * scale


@pytest.mark.parametrize("name,factory,iterations", CASES)
def test_factored_iterates_equal_the_sequence_form(factored, name, factory, iterations):
  ft, comp = factored(name)
  solver = factory(dtype="float64")
  tree = comp.device_tree("float64")
  seq = solver.run(tree, solver.init(tree), iterations)
  pcfr = public_cfr.PublicTreeCFR(solver)
  st = pcfr.run(ft, pcfr.init(ft), iterations)
  for p in (0, 1):
    rows, infos = public_cfr.rows_of(ft, comp, p)
    for field in ("regrets", "cum_policy"):
      _close(np.asarray(getattr(st, field)[p])[rows], np.asarray(getattr(seq, field)[p])[infos])
  policy = pcfr.policy(ft, st)
  expected = solver.policy(tree, seq)
  _close(public_cfr.exploitability(ft, policy), sequence_form.exploitability(tree, expected))
  _close(public_cfr.expected_value(ft, policy), sequence_form.expected_value(tree, expected))
  # the same policy read on the enumerated game
  hist = tuple(jnp.asarray(h) for h in public_cfr.to_policy(ft, comp, policy))
  _close(sequence_form.exploitability(tree, hist), public_cfr.exploitability(ft, policy),
         rtol=1e-9)


@pytest.mark.parametrize("name", ["kuhn_poker", "leduc_poker", "liars_dice(numdice=1)"])
def test_information_states_are_the_enumerated_games(factored, name):
  ft, comp = factored(name)
  for p in (0, 1):
    keys = [k for k in ft.infostate_strings(p) if k is not None]
    assert len(keys) == len(set(keys)) == comp.tree.num_infostates[p]
    assert set(keys) == set(comp.infostate_keys[p])


def test_kuhn_value_and_exploitability_approach_the_closed_form(factored):
  ft, _ = factored("kuhn_poker")
  pcfr = public_cfr.PublicTreeCFR(jaxgt.cfr_plus(dtype="float64"))
  st = pcfr.run(ft, pcfr.init(ft), 2000)
  policy = pcfr.policy(ft, st)
  assert float(public_cfr.exploitability(ft, policy)) < 1e-3
  assert abs(float(public_cfr.expected_value(ft, policy)) + 1 / 18) < 1e-3
  # and a best response to the uniform policy is exactly what the sequence form says
  uniform = tuple(sequence_form.uniform(np.repeat(ft.legal[p], 3, axis=0)) for p in (0, 1))
  br = public_cfr.best_response_values(ft, uniform)
  comp = jaxgt.load("kuhn_poker")
  tree = comp.device_tree("float64")
  u = sequence_form.uniform_policy(tree, jnp.float64)
  for p in (0, 1):
    _close(br[p], sequence_form.best_response_value(tree, u, p), rtol=1e-12)


def test_root_beliefs_batch_under_vmap(factored):
  ft, _ = factored("kuhn_poker")
  pcfr = public_cfr.PublicTreeCFR(jaxgt.cfr_plus(dtype="float64"))
  beliefs = [(np.ones(3), np.ones(3)), (np.array([1.0, 0.5, 0.0]), np.array([0.2, 1.0, 1.0]))]
  states = [pcfr.init(ft, root_reach=b) for b in beliefs]
  batch = jax.tree.map(lambda *x: jnp.stack(x), *states)
  out = jax.jit(jax.vmap(lambda s: pcfr.loop(ft, s, 30)))(batch)
  for i, s in enumerate(states):
    one = pcfr.run(ft, s, 30)
    _close(out.regrets[0][i], one.regrets[0], rtol=1e-12)
    _close(out.cum_policy[1][i], one.cum_policy[1], rtol=1e-12)
  assert not np.allclose(out.regrets[0][0], out.regrets[0][1])


def test_bad_input_is_refused_before_compiling(factored):
  with pytest.raises(ValueError, match="public/private factorisation"):
    build_factored_tree(make_from_string("goofspiel(num_cards=3)"))
  with pytest.raises(TypeError, match="device game"):
    build_factored_tree(jaxgt.load("kuhn_poker"))
  with pytest.raises(ValueError, match="over 5 public states"):
    build_factored_tree(make_from_string("kuhn_poker"), max_states=5)
  ft, _ = factored("kuhn_poker")
  pcfr = public_cfr.PublicTreeCFR(jaxgt.cfr_plus())
  with pytest.raises(ValueError, match="root_reach"):
    pcfr.init(ft, root_reach=(np.ones(2), np.ones(3)))
  with pytest.raises(ValueError, match="non-negative"):
    pcfr.init(ft, root_reach=(np.array([1.0, -1.0, 0.0]), np.ones(3)))
  with pytest.raises(ValueError, match="num_steps"):
    pcfr.run(ft, pcfr.init(ft), -1)
  leduc, _ = factored("leduc_poker")
  with pytest.raises(ValueError, match="another game"):
    pcfr.run(leduc, pcfr.init(ft), 1)
  with pytest.raises(ValueError, match="another game"):
    public_cfr.exploitability(leduc, pcfr.policy(ft, pcfr.init(ft)))
  with pytest.raises(TypeError, match="CFR-family"):
    public_cfr.PublicTreeCFR("cfr+")
