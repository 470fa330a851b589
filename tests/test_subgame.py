"""Depth-limited subgames and leaf evaluators against full-game solves."""

import jax.numpy as jnp
import numpy as np
import pytest

import jaxgt
from jaxgt.search import leaf as lf
from jaxgt.core import public_tree as ptm
from jaxgt.search import subgame as sgm
from jaxgt.core import sequence_form as sf


def _full_equilibrium(name, iterations):
  g = jaxgt.load(name)
  solver = jaxgt.cfr_plus(dtype="float64")
  tree = g.device_tree("float64")
  st = solver.run(tree, solver.init(tree), iterations)
  return g, tree, solver.average_policy(tree, st)


def _end_of_round_one(g):
  pt = ptm.build_public_tree(g)
  player = np.asarray(g.tree.player)
  return [ps for ps in range(pt.num_public_states)
          if pt.depth[ps] > 2 and np.all(player[pt.histories[ps]] == -1)]


def test_leduc_depth_limited_root_value_exact_leaves():
  """Limit at the end of the first betting round; leaves solved for the current ranges."""
  g, tree, pol = _full_equilibrium("leduc_poker", 1000)
  full_value = float(sf.expected_value(tree, pol))
  assert full_value == pytest.approx(-0.0856, abs=1e-3)
  sub = sgm.extract(g, 0, leaves=_end_of_round_one(g))
  assert len(sub.leaf_public) == 5  # cc, rc, crc, rrc, crrc
  solver = jaxgt.cfr_plus(dtype="float64")
  st = lf.solve(sub, solver, sub.root_weights([1.0], [1.0]), lf.equilibrium(sub, solver), 1000)
  assert float(lf.root_value(sub, solver, st)) == pytest.approx(full_value, abs=1e-3)


def test_kuhn_depth_limited_with_one_player_in_trunk():
  """Cut after player 0's first action: the trunk has no player-1 decision."""
  g = jaxgt.load("kuhn_poker")
  sub = sgm.extract(g, 0, depth_limit=3)
  solver = jaxgt.cfr_plus(dtype="float64")
  st = lf.solve(sub, solver, sub.root_weights([1.0], [1.0]), lf.equilibrium(sub, solver), 2000)
  assert float(lf.root_value(sub, solver, st)) == pytest.approx(-1 / 18, abs=1e-3)


@pytest.mark.parametrize("solver_name", ["cfr", "cfr+", "lcfr", "dcfr"])
def test_core_solvers_run_unchanged_on_subgame(solver_name):
  """Continuation leaf values of a full equilibrium: the solved subgame keeps the value."""
  g, tree, pol = _full_equilibrium("kuhn_poker", 3000)
  sub = sgm.extract(g, 0, depth_limit=4)
  vals, _ = lf.continuation(sub, pol).apply((), None)
  st_tree = sub.with_payoff(sub.compiled.device_tree("float64"), vals)
  solver = jaxgt.make_solver(solver_name, dtype="float64")
  w = sub.root_weights([1.0], [1.0])
  state = solver.run(st_tree, solver.init(st_tree, weights=w), 2000)
  spol = solver.average_policy(st_tree, state)
  assert float(sf.exploitability(st_tree, spol, w)) < 5e-3
  assert float(sf.expected_value(st_tree, spol, w)) == pytest.approx(-1 / 18, abs=5e-3)
  # Composing the subgame policy with the continuation keeps the full game solved.
  comp = sub.to_full_policy(spol, pol)
  assert float(sf.exploitability(tree, comp)) < 5e-3


def test_batched_solve_matches_one_by_one_at_inner_public_state():
  """Subgame at Kuhn's first decision (all deals): B root ranges in one call."""
  g = jaxgt.load("kuhn_poker")
  pt = ptm.build_public_tree(g)
  root = int(pt.at_depth(2)[0])
  sub = sgm.extract(pt, root, depth_limit=2)
  solver = jaxgt.cfr_plus(dtype="float64")
  ev = lf.equilibrium(sub, solver)
  rng = np.random.default_rng(0)
  r0 = rng.dirichlet(np.ones(3), size=3)
  r1 = rng.dirichlet(np.ones(3), size=3)
  r0[0] = r1[0] = 1 / 3  # the true beliefs: the game value times 1/9 (normalised ranges)
  w = sub.root_weights(r0, r1)
  batch = lf.solve_batch(sub, solver, w, ev, 1500)
  vb = np.asarray(lf.root_value(sub, solver, batch))
  assert vb[0] == pytest.approx(-1 / 18 / 9, abs=2e-4)
  for b in (1, 2):
    one = lf.solve(sub, solver, w[b], ev, 1500)
    assert float(lf.root_value(sub, solver, one)) == pytest.approx(vb[b], abs=1e-9)
  # Reference for the other ranges: the full-depth subgame solved by plain CFR+.
  deep = sgm.extract(pt, root)
  dtree = deep.compiled.device_tree("float64")
  for b in (1, 2):
    wd = deep.root_weights(r0[b], r1[b])
    s = solver.run(dtree, solver.init(dtree, weights=wd), 3000)
    ref = float(sf.expected_value(dtree, solver.average_policy(dtree, s), wd))
    assert vb[b] == pytest.approx(ref, abs=2e-3)


def test_bad_inputs():
  g = jaxgt.load("kuhn_poker")
  sub = sgm.extract(g, 0, depth_limit=4)
  with pytest.raises(ValueError, match="shape"):
    sub.root_weights([0.5, 0.5], [1.0])
  with pytest.raises(ValueError, match="negative"):
    sub.root_weights([-1.0], [1.0])
  with pytest.raises(ValueError, match="sums to"):
    sub.root_weights([0.5], [1.0])
  with pytest.raises(ValueError, match="another game"):
    sgm.extract(g, jaxgt.load("leduc_poker").public_keys[5], depth_limit=1)
  solver = jaxgt.cfr_plus(dtype="float64")
  w = sub.root_weights([1.0], [1.0])
  wrong = lf.from_callable(sub, lambda leaves: jnp.zeros(sub.num_leaves + 1))
  with pytest.raises(ValueError, match="shape"):
    lf.solve(sub, solver, w, wrong, 10)
  nan = lf.from_callable(sub, lambda leaves: jnp.full(sub.num_leaves, jnp.nan))
  with pytest.raises(ValueError, match="NaN"):
    lf.solve(sub, solver, w, nan, 10)
  with pytest.raises(ValueError, match="depth_limit"):
    sgm.extract(g, 0, depth_limit=0)


def test_rps_plus_multi_valued_leaves_find_equilibrium():
  """``004`` Sec. 4: cut after player 0's move; the single-valued leaf (player 1's
  equilibrium strategy fixed) leaves player 0 indifferent, multi-valued leaves
  (blueprint plus biased versions) pin down (0.4, 0.4, 0.2)."""
  g = jaxgt.load("rps_plus")
  tree = g.device_tree("float64")
  # The unique equilibrium from the full game, as the independent reference.
  solver = jaxgt.cfr_plus(dtype="float64")
  st = solver.run(tree, solver.init(tree), 3000)
  eq = solver.average_policy(tree, st)
  np.testing.assert_allclose(eq[0][0], [0.4, 0.4, 0.2], atol=1e-3)
  found = {}
  for K in (1, 4):
    pols = lf.biased_policies(tree, eq, 1, 10.0)[:K]
    sub = sgm.extract(g, 0, depth_limit=1, leaf_choices=K)
    s = lf.solve(sub, solver, sub.root_weights([1.0], [1.0]), lf.multi_valued(sub, pols), 2000)
    sp = solver.average_policy(sub.compiled.device_tree("float64"), s.cfr)
    found[K] = sub.to_full_policy(sp, eq)[0]
    expl = float(sf.exploitability(tree, (found[K], eq[1])))
    if K == 1:
      assert expl > 0.05
    else:
      assert expl < 2e-3
  assert not np.allclose(found[1][0], [0.4, 0.4, 0.2], atol=0.02)
  np.testing.assert_allclose(found[4][0], [0.4, 0.4, 0.2], atol=0.02)
  with pytest.raises(ValueError, match="continuation policies"):
    lf.multi_valued(sgm.extract(g, 0, depth_limit=1, leaf_choices=2), [eq])


def test_chunk_size_does_not_change_a_solve_with_fixed_leaf_values():
  """The chunked driver with a constant evaluator: any ``chunk`` (with a remainder
  chunk) runs the same iterations as ``chunk=1`` and as plain CFR on the subgame
  with those leaf values filled in."""
  g, _, pol = _full_equilibrium("kuhn_poker", 300)
  sub = sgm.extract(g, 0, depth_limit=4)
  solver = jaxgt.cfr_plus(dtype="float64")
  w = sub.root_weights([1.0], [1.0])
  ev = lf.continuation(sub, pol)
  a = lf.solve(sub, solver, w, ev, 50)
  b = lf.solve(sub, solver, w, ev, 50, chunk=7)
  st_tree = sub.with_payoff(sub.compiled.device_tree("float64"), ev.apply((), None)[0])
  c = solver.run(st_tree, solver.init(st_tree, weights=w), 50)
  for p in (0, 1):
    np.testing.assert_allclose(np.asarray(a.cfr.cum_policy[p]), np.asarray(b.cfr.cum_policy[p]),
                               atol=1e-12)
    np.testing.assert_allclose(np.asarray(a.cfr.cum_policy[p]), np.asarray(c.cum_policy[p]),
                               atol=1e-12)
  with pytest.raises(ValueError, match="chunk"):
    lf.solve(sub, solver, w, ev, 50, chunk=0)
