"""The CFR family against OpenSpiel's solvers and closed-form equilibria."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxgt
from jaxgt.solvers import cfr as cfr_lib
from jaxgt.solvers import base as solver_base
from jaxgt.solvers import cfr_iteration
from jaxgt.solvers import cfr_rules
from jaxgt.core import sequence_form as sf

pyspiel = pytest.importorskip("pyspiel")
from open_spiel.python.algorithms import cfr as os_cfr  # noqa: E402
from open_spiel.python.algorithms import discounted_cfr as os_dcfr  # noqa: E402


def _solve(name, solver, iterations):
  g = jaxgt.load(name)
  tree = g.device_tree(solver.dtype)
  state = solver.run(tree, solver.init(tree), iterations)
  return g, tree, solver.average_policy(tree, state)


def _os_avg(os_solver, g):
  """OpenSpiel's average policy as our arrays (by information-state string)."""
  avg = os_solver.average_policy()
  out = []
  for p in (0, 1):
    rows = [avg.policy_for_key(k)[:g.tree.num_actions] for k in g.infostate_keys[p]]
    out.append(np.asarray(rows))
  return out


def test_kuhn_cfr_plus_reaches_game_value():
  g, tree, pol = _solve("kuhn_poker", cfr_lib.cfr_plus(dtype="float64"), 2000)
  assert float(sf.expected_value(tree, pol)) == pytest.approx(-1 / 18, abs=1e-3)
  assert float(sf.exploitability(tree, pol)) < 1e-3


def test_uniform_policy_exploitability_kuhn():
  tree = jaxgt.load("kuhn_poker").device_tree("float64")
  assert float(sf.exploitability(tree, sf.uniform_policy(tree, jnp.float64))) == pytest.approx(11 / 24, abs=1e-12)
  assert float(sf.nash_conv(tree, sf.uniform_policy(tree, jnp.float64))) == pytest.approx(11 / 12, abs=1e-12)


@pytest.mark.parametrize("ours,theirs", [(cfr_lib.cfr_plus, pyspiel.CFRPlusSolver),
                                         (cfr_lib.cfr, pyspiel.CFRSolver)])
def test_leduc_100_iterations_equal_openspiel_cpp(ours, theirs):
  g, tree, pol = _solve("leduc_poker", ours(dtype="float64"), 100)
  game = pyspiel.load_game("leduc_poker")
  solver = theirs(game)
  for _ in range(100):
    solver.evaluate_and_update_policy()
  expected = pyspiel.exploitability(game, solver.average_policy())
  assert float(sf.exploitability(tree, pol)) == pytest.approx(expected, rel=1e-6)


def test_leduc_cfr_plus_1000_iterations_below_3e_4():
  _, tree, pol = _solve("leduc_poker", cfr_lib.cfr_plus(dtype="float64"), 1000)
  assert float(sf.exploitability(tree, pol)) <= 3e-4


@pytest.mark.parametrize("name", ["kuhn_poker", "leduc_poker"])
@pytest.mark.parametrize("variant", ["lcfr", "dcfr", "cfr+sim", "cfrsim"])
def test_iterates_equal_openspiel_python(name, variant):
  game = pyspiel.load_game(name)
  iters = 30 if name == "kuhn_poker" else 4
  if variant == "lcfr":
    ours, theirs = cfr_lib.linear_cfr(dtype="float64"), os_dcfr.LCFRSolver(game)
  elif variant == "dcfr":
    ours, theirs = cfr_lib.discounted_cfr(dtype="float64"), os_dcfr.DCFRSolver(game)
  elif variant == "cfr+sim":
    ours = cfr_lib.cfr_plus(alternating=False, dtype="float64")
    theirs = os_cfr._CFRSolver(game, regret_matching_plus=True, alternating_updates=False,
                               linear_averaging=True)
  else:
    ours = cfr_lib.cfr(alternating=False, dtype="float64")
    theirs = os_cfr._CFRSolver(game, regret_matching_plus=False, alternating_updates=False,
                               linear_averaging=False)
  g, _, pol = _solve(name, ours, iters)
  for _ in range(iters):
    theirs.evaluate_and_update_policy()
  expected = _os_avg(theirs, g)
  for p in (0, 1):
    legal = g.tree.players[p].legal
    np.testing.assert_allclose(np.where(legal, np.asarray(pol[p]), 0), np.where(legal, expected[p], 0),
                               atol=1e-9)


def test_simultaneous_cfr_plus_converges_worse_than_alternating_in_leduc():
  _, tree, alt = _solve("leduc_poker", cfr_lib.cfr_plus(dtype="float64"), 300)
  _, _, sim = _solve("leduc_poker", cfr_lib.cfr_plus(alternating=False, dtype="float64"), 300)
  assert float(sf.exploitability(tree, alt)) < float(sf.exploitability(tree, sim))


def test_rps_plus_equilibrium():
  _, tree, pol = _solve("rps_plus", cfr_lib.cfr_plus(dtype="float64"), 3000)
  for p in (0, 1):
    np.testing.assert_allclose(np.asarray(pol[p][0]), [0.4, 0.4, 0.2], atol=2e-3)
  assert float(sf.expected_value(tree, pol)) == pytest.approx(0.0, abs=1e-3)


@pytest.mark.parametrize("leftmost,expected", [(1.0, (1 / 3, 2 / 3)), (2.0, (1 / 6, 5 / 6))])
def test_nonlocality_equilibrium_at_I(leftmost, expected):
  g, tree, pol = _solve(f"nonlocality(leftmost={leftmost})", cfr_lib.cfr_plus(dtype="float64"), 3000)
  i = g.infostate_keys[1].index("I")
  np.testing.assert_allclose(np.asarray(pol[1][i]), expected, atol=2e-3)
  if leftmost == 1.0:
    assert float(sf.expected_value(tree, pol)) == pytest.approx(1.0, abs=2e-3)


def test_batched_solve_equals_individual_solves():
  g = jaxgt.load("leduc_poker")
  tree = g.device_tree("float64")
  rng = np.random.default_rng(0)
  B = 16
  probs = rng.dirichlet(np.ones(6), size=B)
  weights = jnp.stack([sf.root_chance_weights(tree, q) for q in probs])
  solver = cfr_lib.cfr_plus(dtype="float64")
  batch = solver.run_batch(tree, solver.init_batch(tree, weights), 50)
  avg_b = jax.vmap(lambda s: solver.average_policy(tree, s))(batch)
  for b in [0, 7, 15]:
    single = solver.run(tree, solver.init(tree, weights=weights[b]), 50)
    avg_s = solver.average_policy(tree, single)
    for p in (0, 1):
      np.testing.assert_allclose(np.asarray(avg_b[p][b]), np.asarray(avg_s[p]), atol=1e-10)
    v_b = sf.expected_value(tree, tuple(a[b] for a in avg_b), weights[b])
    # equal to float rounding: XLA compiles the batched and the single loop differently (their
    # regrets differ by an ulp after one iteration; after 50, 7e-13 here at git 026e011, 1.2e-12
    # with the action-major loop)
    assert float(v_b) == pytest.approx(float(sf.expected_value(tree, avg_s, weights[b])), abs=1e-11)
  # members differ from each other (the batch axis is really used)
  assert not np.allclose(np.asarray(avg_b[0][0]), np.asarray(avg_b[0][1]))


def test_second_call_does_not_recompile():
  tree = jaxgt.load("kuhn_poker").device_tree("float32")
  solver = cfr_lib.cfr_plus()
  state = solver.run(tree, solver.init(tree), 10)
  size = solver_base.compilations(solver)
  state = solver.run(tree, state, 25)
  assert solver_base.compilations(solver) == size
  assert int(state.iteration) == 35


def test_float32_default_and_float64_available():
  tree32 = jaxgt.load("kuhn_poker").device_tree()
  assert cfr_lib.cfr_plus().init(tree32).regrets[0].dtype == jnp.float32
  tree64 = jaxgt.load("kuhn_poker").device_tree("float64")
  assert cfr_lib.cfr_plus(dtype="float64").init(tree64).regrets[0].dtype == jnp.float64


def test_bad_solver_arguments():
  with pytest.raises(ValueError, match="unknown solver .cfr\\+\\+.; choose one of cfr, cfr\\+, lcfr, dcfr, pcfr"):
    cfr_lib.make_solver("cfr++")
  with pytest.raises(ValueError, match="dtype must be one of"):
    cfr_lib.cfr_plus(dtype="float16")
  with pytest.raises(ValueError, match="gamma must be >= 0"):
    cfr_lib.discounted_cfr(gamma=-1)
  tree = jaxgt.load("kuhn_poker").device_tree()
  solver = cfr_lib.cfr_plus()
  with pytest.raises(ValueError, match="one per terminal"):
    solver.init(tree, weights=jnp.ones(7))
  with pytest.raises(ValueError, match="non-negative integer"):
    solver.run(tree, solver.init(tree), -1)
  with pytest.raises(ValueError, match="batched"):
    solver.run(tree, solver.init_batch(tree, jnp.ones((2, tree.num_terminals))), 1)
  with pytest.raises(ValueError, match="iterations must be a positive integer"):
    jaxgt.solve("kuhn_poker", iterations=0)


def test_solve_batch_values_match_individual_solves():
  g = jaxgt.load("kuhn_poker")
  tree = g.device_tree("float64")
  probs = np.random.default_rng(1).dirichlet(np.ones(3), size=4)
  weights = jnp.stack([sf.root_chance_weights(tree, q) for q in probs])
  res = jaxgt.solve_batch(g, weights, "cfr+", iterations=300, dtype="float64")
  assert res.values.shape == (4,) and res.policies[0].shape == (4, 6, 2)
  for b in range(4):
    solver = cfr_lib.cfr_plus(dtype="float64")
    single = solver.run(tree, solver.init(tree, weights=weights[b]), 300)
    pol = solver.average_policy(tree, single)
    assert res.values[b] == pytest.approx(float(sf.expected_value(tree, pol, weights[b])), abs=1e-12)
    assert res.exploitability[b] == pytest.approx(float(sf.exploitability(tree, pol, weights[b])), abs=1e-12)


class _PredictiveRegretMatchingPlus(cfr_rules.RegretMatching):
  """PCFR+ (Farina et al. 2021) written against the rule interface: regret matching+
  on ``R + m`` with the last instantaneous regrets ``m`` as the prediction (extra state)."""

  def init(self, regrets):
    return jnp.zeros_like(regrets)

  def update(self, regrets, instant, t, extra):
    return jnp.maximum(regrets + instant, 0.0), instant

  def strategy(self, regrets, legal, extra):
    return sf.regret_matching(regrets + extra, legal)


def test_regret_rule_with_extra_state_plugs_into_the_engine():
  """A predictive rule carrying the last instantaneous regrets runs unchanged in the
  engine: its state is threaded per player and it solves Kuhn (game value -1/18)."""
  g = jaxgt.load("kuhn_poker")
  tree = g.device_tree("float64")
  solver = cfr_lib.CFRSolver("pcfr+", _PredictiveRegretMatchingPlus(),
                             cfr_rules.PowerAveraging(2.0), dtype="float64")
  one = solver.run(tree, solver.init(tree), 1)
  for p in (0, 1):  # from zero regrets: R_1 = max(r_1, 0) with r_1 the stored prediction
    np.testing.assert_allclose(np.maximum(np.asarray(one.regret_state[p]), 0),
                               np.asarray(one.regrets[p]), atol=1e-15)
  pol = solver.policy(tree, solver.run(tree, solver.init(tree), 1000))
  assert float(sf.expected_value(tree, pol)) == pytest.approx(-1 / 18, abs=1e-3)
  assert float(sf.exploitability(tree, pol)) < 1e-3
  plus = cfr_lib.cfr_plus(dtype="float64")
  ref = plus.policy(tree, plus.run(tree, plus.init(tree), 1000))
  assert not np.allclose(np.asarray(pol[0]), np.asarray(ref[0]), atol=1e-6)


def test_exploitability_curve_runs_the_cfr_family_through_the_protocol():
  """The generic curve (solvers.base) gives, for CFR+, what a direct run and exact evaluation give."""
  from jaxgt.core.evaluate import policy_evaluation
  from jaxgt.solvers import base
  tree = jaxgt.load("kuhn_poker").device_tree("float64")
  solver = cfr_lib.cfr_plus(dtype="float64")
  curve = base.exploitability_curve(solver, tree, (10, 100), jax.random.key(0), seeds=2)
  for row, n in zip(curve, (10, 100)):
    state = solver.run(tree, solver.init(tree), n)
    want = float(policy_evaluation(tree, solver.policy(tree, state)).exploitability)
    np.testing.assert_allclose(row, [want, want], rtol=1e-10)
  assert curve[1, 0] < curve[0, 0]


def test_update_mask_keeps_masked_information_states_uniform():
  """``iteration(update_mask=...)``: masked-out information states keep zero regrets (a uniform
  strategy), the others follow the unmasked run's rule, and an all-True mask is no mask."""
  g = jaxgt.load("kuhn_poker")
  tree = g.device_tree("float64")
  solver = cfr_lib.cfr_plus(dtype="float64")
  run = lambda mask, n: jax.jit(lambda c: jax.lax.fori_loop(
      0, n, lambda _, it: cfr_lib.iteration(solver, tree, it, update_mask=mask), c))(
          cfr_lib.start(solver, tree, solver.init(tree)))
  ref = solver.run(tree, solver.init(tree), 20)
  full = run(tuple(jnp.ones(n, bool) for n in tree.num_infostates), 20)
  for p in (0, 1):
    np.testing.assert_array_equal(np.asarray(full.state.regrets[p]), np.asarray(ref.regrets[p]))
  mask = tuple(jnp.arange(n) % 2 == 0 for n in tree.num_infostates)
  part = run(mask, 20)
  for p in (0, 1):
    off = ~np.asarray(mask[p])
    assert np.all(np.asarray(part.state.regrets[p])[off] == 0)
    legal = np.asarray(tree.players[p].legal)[off]
    np.testing.assert_allclose(np.asarray(part.sigma[p])[off], legal / legal.sum(-1, keepdims=True))
    assert np.any(np.asarray(part.state.regrets[p])[~off] > 0)


def _standard_x(x, num_infostates, A):
  """An action-major realization plan (``sequence_form.action_major``) in the tree's numbering."""
  x = np.asarray(x)
  return np.concatenate([x[:-1].reshape(A, num_infostates).T.reshape(-1), x[-1:]])


@pytest.mark.parametrize("game", ["kuhn_poker", "leduc_poker", "goofspiel(num_cards=4)"])
def test_action_major_sequence_form_equals_the_standard_layout(game):
  """Realization plans, counterfactual values and best-response values of random policies are
  the same in the action-major layout (strategies ``[A, I]``, sequences ``a*I + i``) as in the
  standard one, grouped and ungrouped terminal sums alike."""
  tree = jaxgt.load(game).device_tree("float64")
  A = tree.num_actions
  rng = np.random.default_rng(1)
  pol = []
  for pt in tree.players:
    legal = np.asarray(pt.legal)
    r = rng.random(legal.shape) * legal
    pol.append(jnp.asarray(r / r.sum(-1, keepdims=True)))
  for p in (0, 1):
    pt, n = tree.players[p], tree.num_infostates[p]
    x = sf.realization(pt, pol[p])
    xt = sf.realization(pt, pol[p].T, actions_first=True)
    np.testing.assert_array_equal(_standard_x(xt, n, A), np.asarray(x))
    np.testing.assert_array_equal(np.asarray(sf.infostate_reach(pt, xt, True)),
                                  np.asarray(sf.infostate_reach(pt, x)))
    xo = sf.realization(tree.players[1 - p], pol[1 - p])
    xot = sf.realization(tree.players[1 - p], pol[1 - p].T, actions_first=True)
    for grouped in (True, False):
      for sig in (pol[p], None):
        leaf, seq = sf.player_leaf_values(tree, p, xo, grouped=grouped)
        leaf_t, seq_t = sf.player_leaf_values(tree, p, xot, grouped=grouped, actions_first=True)
        q, v = sf.sequence_values(pt, leaf, seq, sig, A)
        qt, vt = sf.sequence_values(pt, leaf_t, seq_t, None if sig is None else sig.T, A, True)
        np.testing.assert_allclose(np.asarray(qt).T, np.asarray(q), rtol=1e-13, atol=1e-16)
        assert float(vt) == pytest.approx(float(v), rel=1e-13, abs=1e-16)


@pytest.mark.parametrize("name", ["cfr+", "dcfr", "pdcfr+", "hs-dcfr"])
def test_action_major_loop_iterates_equal_the_standard_engine(name):
  """``CFRSolver.loop`` runs the engine action-major (``Iterate.actions_first``); its iterates
  are those of the standard layout's ``iteration`` (float64, Leduc, 30 iterations, with the
  regret rule's extra state; with an update mask too), to float rounding."""
  from jaxgt.solvers.cfr import SOLVERS
  tree = jaxgt.load("leduc_poker").device_tree("float64")
  solver = SOLVERS[name](dtype="float64", compensated=False)
  mask = tuple(jnp.asarray(np.arange(n) % 3 != 1) for n in tree.num_infostates)
  for update_mask in (None, mask):
    def run(af):
      st = solver.init(tree)
      c = cfr_lib.start(solver, tree, cfr_lib.transpose_state(tree, st) if af else st,
                        actions_first=af)
      c = jax.lax.fori_loop(0, 30, lambda _, it: cfr_lib.iteration(
          solver, tree, it, update_mask=update_mask), c)
      return (cfr_lib.transpose_state(tree, c.state) if af else c.state), c
    (std, c_std), (am, c_am) = jax.jit(lambda: run(False))(), jax.jit(lambda: run(True))()
    for p in (0, 1):
      for a, b in ((am.regrets[p], std.regrets[p]), (am.cum_policy[p], std.cum_policy[p]),
                   (c_am.sigma[p].T, c_std.sigma[p])):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-9, atol=1e-12)
      np.testing.assert_allclose(_standard_x(c_am.x[p], tree.num_infostates[p], tree.num_actions),
                                 np.asarray(c_std.x[p]), rtol=1e-9, atol=1e-12)
      jax.tree.map(lambda a, b: np.testing.assert_allclose(np.asarray(a), np.asarray(b),
                                                           rtol=1e-9, atol=1e-12),
                   am.regret_state[p], std.regret_state[p])
  # the solver's own loop (blocked average, action-major) against the standard engine
  solver = SOLVERS[name](dtype="float64")
  loop = solver.run(tree, solver.init(tree), 30)
  c = cfr_lib.start(solver, tree, solver.init(tree))
  c = jax.jit(lambda c: jax.lax.fori_loop(0, 30, lambda _, it: cfr_lib.iteration(solver, tree, it),
                                          c))(c)
  for p in (0, 1):
    np.testing.assert_allclose(np.asarray(loop.regrets[p]), np.asarray(c.state.regrets[p]),
                               rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(np.asarray(solver.average_policy(tree, loop)[p]),
                               np.asarray(solver.average_policy(tree, c.state)[p]), rtol=1e-9,
                               atol=1e-12)


@pytest.mark.parametrize("exact_ties", [True, False])
def test_tie_rule_is_an_option(exact_ties):
  """``exact_ties`` (default on) sets the rounding residual of an exact tie to zero;
  off, the instantaneous regret is the plain float difference ``q - sum(sigma q)`` (here
  -1.1e-16 at every action, all three values being 2/3)."""
  solver = cfr_lib.cfr(dtype="float64", exact_ties=exact_ties)
  assert solver.exact_ties is exact_ties and cfr_lib.cfr(dtype="float64").exact_ties
  q = jnp.full((1, 3), 2.0 / 3.0)
  sigma = jnp.array([[0.11, 0.55, 0.34]])
  plain = np.asarray(q - jnp.sum(sigma * q, axis=-1, keepdims=True))
  assert np.all(plain != 0) and np.all(np.abs(plain) < 1e-15)
  zeros = jnp.zeros((1, 3))
  regrets, *_ = cfr_iteration.update_player(solver, -1, jnp.ones((1, 3), bool), q, sigma,
                                            jnp.ones(1), jnp.int32(1), zeros, (), zeros, zeros)
  np.testing.assert_array_equal(np.asarray(regrets), 0.0 if exact_ties else plain)
  with pytest.raises(ValueError, match="exact_ties"):
    cfr_lib.cfr_plus(exact_ties=1)


def test_tie_rule_changes_leduc_dcfr_plus():
  """Leduc DCFR+ passes through exact ties (tests/test_cfr_variants.py): after 100 float64
  iterations the runs with and without the tie rule differ (0.00909 and 0.00929 under jax
  0.10.2), the earlier iterations agree."""
  tree = jaxgt.load("leduc_poker").device_tree("float64")
  out = []
  for ties in (True, False):
    solver = cfr_lib.discounted_cfr_plus(dtype="float64", exact_ties=ties)
    st = solver.run(tree, solver.init(tree), 10)
    early = float(sf.exploitability(tree, solver.average_policy(tree, st)))
    st = solver.run(tree, st, 90)
    out.append((early, float(sf.exploitability(tree, solver.average_policy(tree, st)))))
  assert out[0][0] == pytest.approx(out[1][0], rel=1e-9)
  assert abs(out[0][1] - out[1][1]) > 1e-5
