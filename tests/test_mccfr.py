"""Batched MCCFR (outcome / external sampling) against OpenSpiel's C++ solvers."""

import jax
import numpy as np
import pytest

import jaxgt
from jaxgt import policy as policy_lib
from jaxgt.solvers import mccfr, mccfr_external, mccfr_outcome
from jaxgt.solvers.base import compilations
from jaxgt.solvers.cfr_rules import (PowerAveraging, PredictiveRegretMatchingPlus, RegretMatching,
                                     RegretMatchingPlus)
from jaxgt.core import sequence_form as sf
from jaxgt.core.game_tree import NO_PLAYER
from jaxgt.core.evaluate import policy_evaluation

pyspiel = pytest.importorskip("pyspiel")
from open_spiel.python.algorithms import exploitability as os_expl  # noqa: E402

SOLVERS = {"os": mccfr.outcome_sampling, "es": mccfr.external_sampling}


def _run(game, kind, batch, steps, seed):
  g = jaxgt.load(game)
  tree = g.device_tree("float64")
  solver = SOLVERS[kind](batch=batch, dtype="float64")
  state = solver.run(tree, solver.init(tree), steps, jax.random.key(seed))
  return g, tree, solver.average_policy(tree, state)


@pytest.mark.parametrize("kind", ["os", "es"])
def test_same_key_same_policy_different_key_different(kind):
  _, _, a = _run("kuhn_poker", kind, 8, 50, 3)
  _, _, b = _run("kuhn_poker", kind, 8, 50, 3)
  _, _, c = _run("kuhn_poker", kind, 8, 50, 4)
  for p in (0, 1):
    np.testing.assert_array_equal(np.asarray(a[p]), np.asarray(b[p]))
  assert any(not np.array_equal(np.asarray(a[p]), np.asarray(c[p])) for p in (0, 1))


@pytest.mark.parametrize("game,kind,batch,steps", [
    ("kuhn_poker", "os", 16, 20), ("kuhn_poker", "es", 8, 5),
    ("leduc_poker", "os", 64, 20),
    pytest.param("leduc_poker", "es", 16, 5, marks=pytest.mark.slow)])  # time budget
def test_exploitability_falls_with_samples(game, kind, batch, steps):
  g = jaxgt.load(game)
  tree = g.device_tree("float64")
  solver = SOLVERS[kind](batch=batch, dtype="float64")
  state, key = solver.init(tree), jax.random.key(0)
  uniform = float(sf.exploitability(tree, sf.uniform_policy(tree, np.float64)))
  values = []
  for n in (steps, 3 * steps, 12 * steps):  # after steps, 4 * steps, 16 * steps
    state = solver.run(tree, state, n, key)
    values.append(float(sf.exploitability(tree, solver.average_policy(tree, state))))
  assert values[2] < uniform
  assert values[2] < values[0]


# Equal sample counts: OpenSpiel iteration = one trajectory per player = our batch-1 step.
@pytest.mark.parametrize("game,kind,iterations", [
    ("kuhn_poker", "os", 2000), ("kuhn_poker", "es", 2000),
    ("leduc_poker", "os", 2000),
    pytest.param("leduc_poker", "es", 400, marks=pytest.mark.slow)])  # time budget
def test_within_spread_of_openspiel_cpp(game, kind, iterations):
  os_game = pyspiel.load_game(game)
  cls = {"os": pyspiel.OutcomeSamplingMCCFRSolver, "es": pyspiel.ExternalSamplingMCCFRSolver}[kind]
  ref = []
  for seed in range(5):
    solver = cls(os_game, seed=seed)
    for _ in range(iterations):
      solver.run_iteration()
    ref.append(pyspiel.exploitability(os_game, solver.average_policy()))
  ours = []
  for seed in range(5):
    g, _, pol = _run(game, kind, 1, iterations, seed)
    if game == "kuhn_poker":  # measured with OpenSpiel's own exploitability
      os_pol = policy_lib.to_openspiel(policy_lib.Policy.from_arrays(g, pol), g)
      ours.append(os_expl.exploitability(os_game, os_pol))
    else:
      ours.append(float(sf.exploitability(g.device_tree("float64"), pol)))
  spread = max(ref) - min(ref)
  assert min(ref) - spread <= np.mean(ours) <= max(ref) + spread, (ref, ours)


def test_second_run_does_not_recompile():
  tree = jaxgt.load("kuhn_poker").device_tree("float64")
  solver = mccfr.outcome_sampling(batch=4, dtype="float64")
  state = solver.run(tree, solver.init(tree), 3, jax.random.key(0))
  before = compilations(solver)
  solver.run(tree, state, 7, jax.random.key(0))
  assert compilations(solver) == before
  # The counter is live: a new static configuration compiles once more.
  other = mccfr.outcome_sampling(batch=5, dtype="float64")
  other.run(tree, other.init(tree), 1, jax.random.key(0))
  assert compilations(other) == before + 1
  with pytest.raises(ValueError, match="jax.jit"):
    compilations(len)


def test_bad_parameters():
  with pytest.raises(ValueError, match="epsilon"):
    mccfr.outcome_sampling(epsilon=0.0)
  with pytest.raises(ValueError, match="batch"):
    mccfr.outcome_sampling(batch=0)
  with pytest.raises(ValueError, match="unknown sampling solver"):
    mccfr.make_sampling_solver("mccfr-xx", batch=4)
  with pytest.raises(ValueError, match="epsilon"):
    mccfr.make_sampling_solver("mccfr-es", batch=4, epsilon=0.5)
  tree = jaxgt.load("kuhn_poker").device_tree("float64")
  solver = mccfr.make_sampling_solver("mccfr-es", batch=4, dtype="float64")
  with pytest.raises(ValueError, match="key"):
    solver.run(tree, solver.init(tree), 1, 0)
  with pytest.raises(ValueError, match="key"):
    solver.run(tree, solver.init(tree), 1)
  with pytest.raises(ValueError, match="num_steps"):
    solver.run(tree, solver.init(tree), -1, jax.random.key(0))


@pytest.mark.parametrize("game,kind,batch,tol", [
    ("kuhn_poker", "os", 50_000, 0.02), ("kuhn_poker", "es", 20_000, 0.015),
    pytest.param("leduc_poker", "es", 10_000, 0.04, marks=pytest.mark.slow)])  # time budget
def test_sampled_regret_is_unbiased(game, kind, batch, tol):
  """Mean sampled regret of the first half-step = exact counterfactual regret (uniform play)."""
  tree = jaxgt.load(game).device_tree("float64")
  solver = SOLVERS[kind](batch=batch, dtype="float64")
  state = solver.run(tree, solver.init(tree), 1, jax.random.key(1))
  uniform = sf.uniform_policy(tree, np.float64)
  q, _ = sf.counterfactual_values(tree, uniform, 0)
  exact = np.where(tree.players[0].legal, q - np.sum(uniform[0] * q, -1, keepdims=True), 0.0)
  np.testing.assert_allclose(np.asarray(state.regrets[0]) / batch, exact, atol=tol)


def test_outcome_walks_agree():
  """The tabulated (large batch) and row-wise (small batch) walks sample the same trajectories."""
  tree = jaxgt.load("leduc_poker").device_tree("float64")
  solver = mccfr.outcome_sampling(batch=4, dtype="float64")
  state = solver.run(tree, solver.init(tree), 50, jax.random.key(0))
  uni = jax.random.uniform(jax.random.key(5), (tree.max_depth, 32), np.float64)
  for p in (0, 1):
    (ta, *rest_a) = mccfr_outcome.outcome_walk(solver, tree, state.regrets, p, uni, tabulate=False)
    (tb, *rest_b) = mccfr_outcome.outcome_walk(solver, tree, state.regrets, p, uni, tabulate=True)
    for name in ("history", "player", "infostate", "action", "sample_prob", "target_prob",
                 "terminal", "last"):
      np.testing.assert_allclose(np.asarray(getattr(ta, name)), np.asarray(getattr(tb, name)),
                                 atol=1e-12, err_msg=name)
    for x, y in zip(rest_a, rest_b, strict=True):
      np.testing.assert_allclose(np.asarray(x), np.asarray(y), atol=1e-12)


@pytest.mark.parametrize("kind", ["os", "es"])
def test_chunked_run_equals_one_long_run(kind):
  """Step t draws from step_key(key, t): run(3) then run(4) is run(7), bit for bit."""
  tree = jaxgt.load("kuhn_poker").device_tree("float64")
  solver = SOLVERS[kind](batch=4, dtype="float64")
  key = jax.random.key(11)
  one = solver.run(tree, solver.init(tree), 7, key)
  two = solver.run(tree, solver.run(tree, solver.init(tree), 3, key), 4, key)
  assert int(one.iteration) == int(two.iteration) == 7
  for x, y in zip(jax.tree_util.tree_leaves(one), jax.tree_util.tree_leaves(two)):
    np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def test_walk_records_probabilities_of_the_drawn_actions():
  """Trajectory.sample_prob / target_prob are the sampling / regret-matching probabilities."""
  tree = jaxgt.load("kuhn_poker").device_tree("float64")
  solver = mccfr.outcome_sampling(epsilon=0.5, batch=4, dtype="float64")
  state = solver.run(tree, solver.init(tree), 20, jax.random.key(0))
  uni = jax.random.uniform(jax.random.key(1), (tree.max_depth, 64), np.float64)
  traj = mccfr_outcome.outcome_walk(solver, tree, state.regrets, 0, uni, tabulate=False)[0]
  sigma = [np.asarray(sf.regret_matching(r, pt.legal)) for r, pt in zip(state.regrets, tree.players)]
  legal = [np.asarray(pt.legal) for pt in tree.players]
  chance = np.asarray(tree.chance_probs)
  for t in range(tree.max_depth):
    for b in range(64):
      h, p, a = (int(np.asarray(x)[t, b]) for x in (traj.history, traj.player, traj.action))
      if h < 0:
        assert p == NO_PLAYER and float(traj.sample_prob[t, b]) == 1.0
        continue
      assert int(np.asarray(tree.children)[h, a]) == (int(traj.history[t + 1, b])
                                                      if t + 1 < tree.max_depth and
                                                      int(traj.history[t + 1, b]) >= 0 else
                                                      int(traj.last[b]))
      if p < 0:
        want_q = want_s = chance[h, a]
      else:
        i = int(np.asarray(tree.infostate)[h])
        want_s = sigma[p][i, a]
        want_q = 0.5 * want_s + 0.5 / legal[p][i].sum() if p == 0 else want_s
      np.testing.assert_allclose(float(traj.sample_prob[t, b]), want_q, rtol=1e-12)
      np.testing.assert_allclose(float(traj.target_prob[t, b]), want_s, rtol=1e-12)
  assert np.all(np.asarray(traj.terminal) >= 0)


def _reference_traversal(tree, sigma, p, uniforms):
  """One external-sampling traversal in NumPy: histories breadth first (children in action
  order, terminals skipped), one uniform per chance/opponent history in that order, values by
  recursion. Returns (regret increments {info: [A]}, opponent visits {info: count})."""
  ch, pl = np.asarray(tree.children), np.asarray(tree.player)
  info, term = np.asarray(tree.infostate), np.asarray(tree.history_terminal)
  payoff, cp = np.asarray(tree.terminal_payoff), np.asarray(tree.chance_probs)
  legal = [np.asarray(t.legal) for t in tree.players]
  A = tree.num_actions
  sampled, level, k = {}, [0], 0
  while level:
    nxt = []
    for h in level:
      if pl[h] == p:
        kids = [ch[h, a] for a in range(A) if legal[p][info[h], a]]
      else:
        w = cp[h] if pl[h] < 0 else np.pad(sigma[pl[h]][info[h]], (0, ch.shape[1] - A))
        cdf = np.cumsum(w)
        s = min(int(np.sum(cdf <= uniforms[k] * cdf[-1])), len(w) - 1)
        k += 1
        sampled[h] = s
        kids = [ch[h, s]]
      nxt += [c for c in kids if term[c] < 0]
    level = nxt
  regret, visits = {}, {}

  def value(h):
    if term[h] >= 0:
      return payoff[term[h]] * (1 if p == 0 else -1)
    if pl[h] != p:
      if pl[h] == 1 - p:
        visits[info[h]] = visits.get(info[h], 0) + 1
      return value(ch[h, sampled[h]])
    q = np.array([value(ch[h, a]) if legal[p][info[h], a] else 0.0 for a in range(A)])
    v = float(np.sum(sigma[p][info[h]] * q))
    regret[info[h]] = regret.get(info[h], 0) + np.where(legal[p][info[h]], q - v, 0.0)
    return v

  value(0)
  return regret, visits, k


@pytest.mark.parametrize("game", ["kuhn_poker", "leduc_poker"])
def test_external_traversals_match_a_numpy_traversal(game):
  """The batched traversal equals a recursive NumPy traversal fed the same uniforms, for a
  non-uniform profile, both players: regrets, visit counts, and no more draws than sized."""
  tree = jaxgt.load(game).device_tree("float64")
  static = mccfr_external.es_sizes(tree)
  rng = np.random.default_rng(0)
  sigma = []
  for t in tree.players:  # a random profile with some zero probabilities
    w = rng.random(t.legal.shape) * np.asarray(t.legal) * (rng.random(t.legal.shape) > 0.2)
    sigma.append(np.asarray(sf.regret_matching(w, t.legal)))
  B = 48
  traversals = jax.jit(mccfr_external.es_traversals, static_argnums=(3, 4))
  for p in (0, 1):
    sizes, draws = static[p]
    uni = rng.random((B, draws))
    regret, visits = traversals(tree, mccfr_external.es_tables(tree, p, static[2]), tuple(sigma), p, sizes,
                                uni)
    want_r = np.zeros(np.shape(regret))
    want_v = np.zeros(np.shape(visits))
    used = 0
    for b in range(B):
      r, v, k = _reference_traversal(tree, sigma, p, uni[b])
      used = max(used, k)
      for i, x in r.items():
        want_r[i] += x
      for i, x in v.items():
        want_v[i] += x
    assert used <= draws
    np.testing.assert_allclose(np.asarray(regret), want_r, atol=1e-9)
    np.testing.assert_array_equal(np.asarray(visits), want_v)
    assert np.abs(want_r).sum() > 0 and want_v.sum() > 0


@pytest.mark.parametrize("kind", ["os", "es"])
def test_regret_matching_plus_converges_on_kuhn(kind):
  """Through the CFR engine's RM+ rule and linear averaging, MCCFR's regrets stay non-negative
  and its average strategy nears Kuhn's game value -1/18 (closed form) with falling
  exploitability."""
  tree = jaxgt.load("kuhn_poker").device_tree("float64")
  solver = SOLVERS[kind](batch=16, dtype="float64", regret_rule=RegretMatchingPlus(),
                         averaging=PowerAveraging(1.0))
  state, key, out = solver.init(tree), jax.random.key(0), []
  for n in (100, 2900):
    state = solver.run(tree, state, n, key)
    assert all(float(np.min(r)) >= 0.0 for r in state.regrets)
    ev = policy_evaluation(tree, solver.average_policy(tree, state))
    out.append((float(ev.value), float(ev.exploitability)))
  assert abs(out[-1][0] + 1 / 18) < 0.01
  assert out[-1][1] < 0.05 and out[-1][1] < out[0][1]


def test_rules_refused_or_default():
  """A predictive rule is refused; the default rules are regret matching with uniform
  averaging, the same numbers as naming them."""
  with pytest.raises(ValueError, match="prediction"):
    mccfr.outcome_sampling(regret_rule=PredictiveRegretMatchingPlus())
  with pytest.raises(ValueError, match="averaging"):
    mccfr.external_sampling(averaging="linear")
  tree = jaxgt.load("kuhn_poker").device_tree("float64")
  for kind in ("os", "es"):
    a, b = (SOLVERS[kind](batch=4, dtype="float64", **kw) for kw in (
        {}, {"regret_rule": RegretMatching(), "averaging": PowerAveraging(0.0)}))
    sa = a.run(tree, a.init(tree), 30, jax.random.key(2))
    sb = b.run(tree, b.init(tree), 30, jax.random.key(2))
    for x, y in zip(jax.tree_util.tree_leaves(sa), jax.tree_util.tree_leaves(sb)):
      np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
