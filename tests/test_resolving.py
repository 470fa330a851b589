"""Safe re-solving on the device tree (jaxgt.search.subgame), modified continual re-solving and
its policy construction, against the reference host-extracted re-solving
(tests/reference_resolving.py)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxgt
import reference_resolving as rs
import reference_subgame as sgm
from jaxgt import policy as pol_lib
from jaxgt.agents.resolving import ContinualResolvingAgent
from jaxgt.core import public_tree as ptm
from jaxgt.core import sequence_form as sf
from jaxgt.evaluation import construct as cs
from jaxgt.search import device_tree as dt
from jaxgt.search import evaluator as evaluators
from jaxgt.search import gtcfr as gt
from jaxgt.search import subgame
from test_gtcfr import counting


def _blueprint(name, iterations):
  g = jaxgt.load(name)
  tree = g.device_tree("float64")
  solver = jaxgt.cfr_plus(dtype="float64")
  st = solver.run(tree, solver.init(tree), iterations)
  return g, tree, solver, solver.average_policy(tree, st)


def _decision_states(g, pt):
  player = np.asarray(g.tree.player)
  out = []
  for ps in range(pt.num_public_states):
    acting = sorted(set(player[pt.histories[ps]].tolist()) & {0, 1})
    if acting:
      out.append((ps, acting[0]))
  return out


def _swap_in(res, blueprint, p):
  """The blueprint with player p's information states of the re-solve replaced."""
  new = list(blueprint)
  new[p] = subgame.to_full_policy(res, blueprint)[p]
  return tuple(new)


@pytest.mark.slow  # over the default run's time budget
def test_gadget_safety_kuhn():
  """Re-solving every decision public state of Kuhn from a weak blueprint's summary
  (our range, the opponent's best-response counterfactual values) never raises the
  opponent's best-response value (exact gadget; the alpha-mixed gadget has no such
  guarantee but stays within solver tolerance here)."""
  g, tree, solver, bp = _blueprint("kuhn_poker", 30)
  assert float(sf.exploitability(tree, bp)) > 4e-3  # far from equilibrium
  pt = ptm.build_public_tree(g)
  states = _decision_states(g, pt)
  assert len(states) == 4
  for ps, p in states:
    o = 1 - p
    summ = subgame.summary_from_policy(g, ps, p, bp)
    old = float(sf.best_response_value(tree, bp, o))
    for alpha, tol in ((None, 1e-5), (0.5, 3e-4)):
      res = subgame.solve(g, ps, iterations=1000, summary=summ, alpha=alpha, solver=solver)
      new = float(sf.best_response_value(tree, _swap_in(res, bp, p), o))
      assert new <= old + tol, (ps, alpha, old, new)
      # Per opponent information state: its best-response value at the root.
      if alpha is None:
        after = subgame.summary_from_policy(g, ps, p, _swap_in(res, bp, p))
        assert np.all(after.opp_values <= summ.opp_values + 1e-4)


def test_gadget_safety_leduc():
  """Leduc second-round public states of both players (subgames to the end of the
  game): swapping the exact-gadget re-solve into a weak blueprint does not raise the
  opponent's best-response value. (Swapping only the trunk of a depth-limited
  re-solve into the blueprint carries no such guarantee: the trunk assumed
  equilibrium play below its leaves, not the blueprint's.)"""
  g, tree, solver, bp = _blueprint("leduc_poker", 40)
  pt = ptm.build_public_tree(g)
  for ps in (10, 27):
    p = int(g.tree.player[pt.histories[ps][0]])
    o = 1 - p
    summ = subgame.summary_from_policy(g, ps, p, bp)
    res = subgame.solve(g, ps, iterations=500, summary=summ, solver=solver)
    old = float(sf.best_response_value(tree, bp, o))
    new = float(sf.best_response_value(tree, _swap_in(res, bp, p), o))
    assert new <= old + 1e-5, (ps, old, new)


def test_fixed_range_solve_and_equilibrium_resolve():
  """With fixed ranges the solve at Kuhn's root keeps the game value (-1/18, the independent
  reference); re-solving at an equilibrium's summary keeps the opponent's values. (A batch of
  gadget re-solves in one vmapped call against the one-by-one re-solves runs with -m slow;
  test_gtcfr.test_gadget_player_and_switch_are_data checks a batch of gadget re-solves against
  the single re-solves by default.)"""
  g, tree, solver, eq = _blueprint("kuhn_poker", 3000)
  res = subgame.solve(g, 0, iterations=1000, depth_limit=3, ranges=([1.0], [1.0]))
  comp = subgame.to_full_policy(res, eq)
  assert float(sf.expected_value(tree, comp)) == pytest.approx(-1 / 18, abs=2e-3)
  # At player 1's public state after a bet.
  ps = 4
  s1 = subgame.summary_from_policy(g, ps, 1, eq)
  one = subgame.solve(g, ps, iterations=1000, summary=s1, solver=solver)
  after = subgame.summary_from_policy(g, ps, 1, _swap_in(one, eq, 1), best_response=False)
  np.testing.assert_allclose(after.opp_values, s1.opp_values, atol=2e-3)


@pytest.mark.slow
def test_batched_gadget_resolves_equal_one_by_one():
  """A batch of gadget re-solves (different summaries) in one vmapped call matches the
  one-by-one re-solves."""
  g, tree, solver, eq = _blueprint("kuhn_poker", 3000)
  # Batched gadget re-solves at player 1's public state after a bet.
  ps = 4
  src = dt.source_from_game(g)
  K = src.num_infostates
  s1 = subgame.summary_from_policy(g, ps, 1, eq)
  _, _, _, weak = _blueprint("kuhn_poker", 20)
  s2 = subgame.summary_from_policy(g, ps, 1, weak)
  tree1 = subgame.subgame_tree(src, ps)
  cfg = gt.make_config(src, simulations=1, capacity=tree1.capacity, solver=solver)
  ev = evaluators.exact(src, solver=solver)

  def args(s):
    ov = np.zeros(K)
    ov[:len(s.opp_values)] = s.opp_values
    return gt.root_ranges(src, ps, (s.opp_range, s.our_range)), ov

  ranges, ovs = zip(*[args(s) for s in (s1, s2)])
  trees = jax.tree_util.tree_map(lambda x: jnp.stack([x, x]), tree1)
  batch = gt.solve_tree(src, cfg, ev, trees, np.stack(ranges), 300, player=np.array([1, 1]),
                        opp_values=np.stack(ovs), alpha=0.5)
  for b, s in enumerate((s1, s2)):
    one = subgame.solve(g, ps, iterations=300, summary=s, alpha=0.5, solver=solver)
    np.testing.assert_allclose(np.asarray(batch.policy[1][b]), np.asarray(one.policy[1]),
                               atol=1e-9)


def test_value_averaging_does_not_change_the_resolve():
  """How the self-play values are averaged (the next re-solve's constraints: over the node's
  or the search's iterations) changes neither the re-solved policy nor the gadget's range;
  on a tree that does not grow both averages agree."""
  g, tree, solver, eq = _blueprint("kuhn_poker", 300)
  src = dt.source_from_game(g)
  s = subgame.summary_from_policy(g, 4, 1, eq)
  t = subgame.subgame_tree(src, 4)
  ranges = gt.root_ranges(src, 4, (s.opp_range, s.our_range))
  ov = np.zeros(src.num_infostates)
  ov[:3] = s.opp_values
  out = []
  for average in ("node", "search"):
    cfg = gt.make_config(src, simulations=1, capacity=t.capacity, value_average=average)
    out.append(gt.solve_tree(src, cfg, evaluators.exact(src), t, ranges, 200, player=1,
                             opp_values=ov, alpha=0.5))
  a, b = out
  for x, y in ((a.policy, b.policy), (a.state.gadget, b.state.gadget),
               (a.node_values, b.node_values)):
    for u, v in zip(jax.tree_util.tree_leaves(x), jax.tree_util.tree_leaves(y)):
      np.testing.assert_allclose(np.asarray(u), np.asarray(v), atol=1e-12)


def test_continual_resolving_kuhn_construction_matches_openspiel():
  """Modified continual re-solving on the device tree (alpha = 0.5, exact leaves, simultaneous
  CFR+) composed over every public state: one re-solve per decision public state, the
  exploitability the host-extracted re-solving (the reference ``resolve`` on extracted
  subgames, the agent's previous implementation) gives with the same simultaneous CFR+
  (2.620946951e-3, measured with that implementation), and OpenSpiel's exploitability of the
  exported policy agrees."""
  g = jaxgt.load("kuhn_poker")
  sim = jaxgt.cfr_plus(alternating=False, dtype="float64")
  agent = ContinualResolvingAgent(g, depth_limit=1, iterations=1000, solver=sim)
  result = cs.evaluate(agent, seeds=(0,))
  assert agent.num_searches == 4
  expl = result.avg
  assert expl == pytest.approx(2.6209469510993e-3, abs=1e-10)
  pyspiel = pytest.importorskip("pyspiel")
  from open_spiel.python.algorithms import exploitability
  policy = pol_lib.Policy.from_arrays(g, result.policies[0])
  os_game = pyspiel.load_game(pol_lib.openspiel_game_string(g))
  ref = exploitability.exploitability(os_game, pol_lib.to_openspiel(policy, g, os_game))
  assert ref == pytest.approx(expl, abs=1e-9)


@pytest.mark.slow  # over the default run's time budget
def test_first_resolve_equals_host_extracted_resolve():
  """The first decision's re-solve on the device tree (branch from the root, depth limit 1,
  exact leaves) gives the policy of the reference ``resolve`` on the host-extracted
  subgame with the same simultaneous CFR+ (a second implementation)."""
  g = jaxgt.load("kuhn_poker")
  sim = jaxgt.cfr_plus(alternating=False, dtype="float64")
  agent = ContinualResolvingAgent(g, depth_limit=1, iterations=50, solver=sim)
  pt = agent.public_tree
  s = 2  # a decision public state of player 1 below the root
  h = int(pt.histories[s][0])
  p = int(g.tree.player[h])
  sub = sgm.extract(pt, 0, leaves=rs.branch_leaves(pt, 0, s, 1))
  ranges = ptm.public_belief_state(pt, 0, sf.uniform_policy(g.device_tree("float64"),
                                                            jnp.float64))
  ref = rs.resolve(sub, sim, p, np.asarray(ranges[p]), None, np.asarray(ranges[1 - p]),
                   evaluator=rs.default_evaluator(sub, sim), iterations=50)
  pos = {int(f): k for k, f in enumerate(sub.full_infostate[p]) if f >= 0}
  start = agent.init(jax.random.PRNGKey(0))
  for h in pt.histories[s]:
    I = int(g.tree.infostate[h])
    probs, _ = agent.act(jax.random.PRNGKey(0), start, int(h))
    want = np.asarray(ref.policy[p])[pos[I], :g.tree.num_actions]
    np.testing.assert_allclose(np.asarray(probs), want, atol=1e-9)


@pytest.mark.slow  # over the default run's time budget
def test_continual_resolving_compiles_once_per_mode():
  """A whole policy construction (different roots, ranges, opponent values and tree shapes)
  compiles the re-solve once per mode: fixed ranges (first decisions) and the gadget (its
  player is data: one program for both); a second construction compiles nothing."""
  g = jaxgt.load("kuhn_poker")
  ev, count = counting(evaluators.exact(dt.source_from_game(g)))
  agent = ContinualResolvingAgent(g, depth_limit=1, iterations=3, evaluator=ev)
  cs.construct_policy(agent, jax.random.PRNGKey(0))
  # one evaluator trace per compilation (alternating CFR+ queries it once per iteration)
  assert agent.num_searches == 4 and count[0] == 2
  first = count[0]
  agent2 = ContinualResolvingAgent(g, depth_limit=1, iterations=7, evaluator=ev)
  cs.construct_policy(agent2, jax.random.PRNGKey(1))
  assert count[0] == first


def test_continual_resolving_agent_is_traceable():
  """``act`` traces with a traced history (jitted matches through the referee)."""
  from jaxgt.evaluation import referee
  g = jaxgt.load("kuhn_poker")
  assert referee.traceable(ContinualResolvingAgent(g, depth_limit=1, iterations=5), g,
                           jax.random.PRNGKey(0))


def test_bad_inputs():
  g = jaxgt.load("kuhn_poker")
  eq = sf.uniform_policy(g.device_tree("float64"), jnp.float64)
  good = subgame.summary_from_policy(g, 4, 1, eq)

  def call(**kw):
    s = subgame.Summary(**dict(dict(public_state=4, player=1, our_range=good.our_range,
                                    opp_values=good.opp_values, opp_range=good.opp_range), **kw))
    return subgame.solve(g, 4, iterations=5, summary=s, alpha=kw.get("alpha", 0.5))

  with pytest.raises(ValueError, match="shape"):
    call(our_range=np.ones(2) / 2)
  with pytest.raises(ValueError, match="negative"):
    call(our_range=np.array([1.5, -0.5, 0.0]))
  with pytest.raises(ValueError, match="sums to"):
    call(our_range=np.array([0.5, 0.2, 0.2]))
  with pytest.raises(ValueError, match="shape"):
    call(opp_values=np.zeros(4))
  with pytest.raises(ValueError, match="NaN"):
    call(opp_values=np.array([0.0, np.nan, 0.0]))
  with pytest.raises(ValueError, match="sums to"):
    call(opp_range=np.array([0.3, 0.3, 0.3]))
  with pytest.raises(ValueError, match="alpha"):
    subgame.solve(g, 4, iterations=5, summary=good, alpha=2.0)
  with pytest.raises(ValueError, match="public state 4"):
    subgame.solve(g, 3, iterations=5, summary=good)
  with pytest.raises(ValueError, match="needs a summary"):
    subgame.solve(g, 4, iterations=5, alpha=0.5, ranges=(good.opp_range, good.our_range))
  with pytest.raises(ValueError, match="not both"):
    subgame.solve(g, 4, iterations=5, summary=good, ranges=(good.opp_range, good.our_range))
  with pytest.raises(ValueError, match="another game"):
    subgame.summary_from_policy(g, jaxgt.load("leduc_poker").public_keys[30], 1, eq)
  with pytest.raises(ValueError, match="player"):
    subgame.summary_from_policy(g, 4, 2, eq)
  # Leaf evaluators returning the wrong shape (depth-limited re-solve).
  wrong = evaluators.from_callable(lambda leaves: jnp.zeros(leaves.leaf.shape[-1] + 1))
  with pytest.raises(ValueError, match="shape"):
    subgame.solve(g, 2, iterations=5, depth_limit=1, evaluator=wrong,
                  ranges=(np.ones(3) / 3, np.ones(3) / 3))


@pytest.mark.slow
def test_leduc_acceptance_continual_resolving():
  """Leduc, exact leaf values, depth limit 2, 1000 alternating CFR+
  iterations per re-solve on the device tree, alpha = 0.5: composed policy <= 0.55 mbb/h
  (0.428 here; the host-extracted implementation gave 0.47, root ranges off by one rounding
  unit give 0.43-0.47; with the gadget's first-iteration range taken before the mix, 0.611),
  checked with OpenSpiel's exploitability on the exported policy; one compiled re-solve per
  mode (fixed ranges, gadget) for all 186 re-solves."""
  g = jaxgt.load("leduc_poker")
  # the agent's default leaves: the continuation solved by its own (alternating) CFR+
  ev, count = counting(evaluators.exact(dt.source_from_game(g),
                                        solver=jaxgt.cfr_plus(dtype="float64")))
  agent = ContinualResolvingAgent(g, depth_limit=2, iterations=1000, evaluator=ev)
  result = cs.evaluate(agent, seeds=(0,))
  assert agent.num_searches == 186 and count[0] == 2  # one query per iteration
  assert result.max <= 0.00055
  pyspiel = pytest.importorskip("pyspiel")
  from open_spiel.python.algorithms import exploitability
  policy = pol_lib.Policy.from_arrays(g, result.policies[0])
  os_game = pyspiel.load_game(pol_lib.openspiel_game_string(g))
  ref = exploitability.exploitability(os_game, pol_lib.to_openspiel(policy, g, os_game))
  assert ref == pytest.approx(result.max, abs=1e-9)
  assert ref <= 0.00055


@pytest.mark.slow
def test_batched_policy_table_is_the_policy_construction():
  """``ContinualResolvingAgent.policy_table`` (the re-solves of one public depth in one vmapped
  call) composes the same policy as ``construct_policy``'s one-by-one acts."""
  g = jaxgt.load("kuhn_poker")
  agent = ContinualResolvingAgent(g, depth_limit=1, iterations=50)
  batched = agent.policy_table(jax.random.PRNGKey(0), batch=4)
  assert agent.num_searches == 4
  ref = cs.construct_policy(ContinualResolvingAgent(g, depth_limit=1, iterations=50),
                            jax.random.PRNGKey(0))
  for x, y in zip(batched, ref):
    np.testing.assert_allclose(x, y, atol=1e-12)
