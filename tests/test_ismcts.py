"""Information-set MCTS baselines (Lisy, Lanctot, Bowling 2015, Sec. 5.1)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxgt
from jaxgt.core.compiler import compile_game
from jaxgt.solvers.base import compilations
from jaxgt.agents.ismcts_agent import ISMCTSAgent
from jaxgt.solvers.ismcts import ISMCTS


def _nonlocality(leftmost=1.0):
  g = compile_game(jaxgt.games.make("nonlocality", leftmost=leftmost))
  return g, [int(h) for h in np.flatnonzero(np.asarray(g.tree.player) == 1)]


def _policy_at_I(solver, leftmost, keys, sims=2000):
  g, (h, _) = _nonlocality(leftmost)
  tree = g.device_tree("float64")
  f = jax.vmap(lambda k: solver.policy(
      tree, solver.run(tree, solver.init(tree), sims, k, history=h))[1][0])
  return np.asarray(f(keys))


@pytest.mark.parametrize("selection,final", [("uct", "frequency"), ("rm", "mean")])
def test_nonlocality_ismcts_ignores_the_leftmost_leaf(selection, final):
  """From I, ISMCTS cannot see the leftmost leaf (Sec. 2.3): no (1/3, 2/3) or (1/6, 5/6)."""
  solver = ISMCTS(selection=selection, final=final, batch=8, dtype="float64")
  keys = jax.random.split(jax.random.key(0), 16)
  one = _policy_at_I(solver, 1.0, keys)
  two = _policy_at_I(solver, 2.0, keys)
  np.testing.assert_array_equal(one, two)  # same samples, same answer for either game
  left = one[:, 0]
  # Both actions are worth 1.5 to the searcher at I: no preference, the
  # answer scatters around 1/2 (UCT's visit split tightly, RM's mean strategy
  # drifts), never towards 1/3 or 1/6.
  assert abs(left.mean() - 0.5) < 0.1 and abs(left.mean() - 1 / 3) > 0.1, left
  if selection == "uct":
    assert np.all(np.abs(left - 0.5) < 0.15), left


def test_uct_finds_the_dominant_action():
  # Kuhn poker, player 1 holding the king facing a bet: calling always wins.
  g = jaxgt.load("kuhn_poker")
  tree = g.device_tree("float64")
  i = g.infostate_keys[1].index("2b")
  h = int(np.flatnonzero((np.asarray(tree.player) == 1) & (np.asarray(tree.infostate) == i))[0])
  for selection in ("uct", "rm"):
    solver = ISMCTS(selection=selection, batch=4, dtype="float64")
    s = solver.run(tree, solver.init(tree), 200, jax.random.key(0), history=h)
    probs = np.asarray(solver.policy(tree, s)[1][i])
    assert probs[1] > 0.8, (selection, probs)  # action 1 = bet/call


def test_same_key_same_result_different_key_different_and_capacity():
  g, (h, _) = _nonlocality()
  tree = g.device_tree("float64")
  solver = ISMCTS(batch=2, dtype="float64")
  a, b, c = (solver.run(tree, solver.init(tree), 30, jax.random.key(k), history=None) for k in (1, 1, 2))
  for p in (0, 1):
    np.testing.assert_array_equal(np.asarray(a.visits[p]), np.asarray(b.visits[p]))
    np.testing.assert_array_equal(np.asarray(a.values[p]), np.asarray(b.values[p]))
  assert a.regrets is None and a.cum_policy is None  # UCT keeps visits and values only
  assert any(not np.array_equal(np.asarray(a.values[p]), np.asarray(c.values[p])) for p in (0, 1))
  small = ISMCTS(batch=2, capacity=1, dtype="float64")
  s = small.run(tree, small.init(tree), 30, jax.random.key(1), history=None)
  assert int(s.size) == 1 and int(np.asarray(s.in_tree[0]).sum()) == 1  # the root state only
  assert not np.asarray(s.visits[1]).any()


def test_agent_act_is_traceable():
  g, (h, _) = _nonlocality()
  agent = ISMCTSAgent(g, simulations=50, solver=ISMCTS(selection="rm", dtype="float64"))
  hs = jnp.asarray([h, 1, 2], jnp.int32)
  keys = jax.random.split(jax.random.key(3), 3)
  state = agent.init(jax.random.key(0))
  probs, states = jax.jit(jax.vmap(agent.act, in_axes=(0, None, 0)))(keys, state, hs)
  p0, s0 = agent.act(keys[0], state, h)
  np.testing.assert_allclose(np.asarray(probs[0]), np.asarray(p0), rtol=1e-12)
  np.testing.assert_allclose(np.asarray(probs).sum(-1), 1.0)
  compiled = compilations(agent.solver)
  _, s1 = agent.act(keys[1], s0, 1)  # another history: no recompilation
  assert int(s1.moves) == 2 and compilations(agent.solver) == compiled


def test_bad_input_raises_before_compilation():
  g, _ = _nonlocality()
  tree = g.device_tree("float64")
  for kwargs in ({"selection": "ucb"}, {"c": -1.0}, {"exploration": 0.0}, {"final": "max"},
                 {"selection": "uct", "final": "mean"},
                 {"capacity": 0}, {"batch": 0}):
    with pytest.raises(ValueError):
      ISMCTS(**kwargs)
  with pytest.raises(ValueError, match="simulations"):
    ISMCTSAgent(g, simulations=0)
  solver = ISMCTS(dtype="float64")
  with pytest.raises(ValueError, match="num_steps"):
    solver.run(tree, solver.init(tree), -3, jax.random.key(0), history=None)
  agent = ISMCTSAgent(g, simulations=5, solver=solver)
  for h in (0, 3, 99):  # chance root, terminal, out of range
    with pytest.raises(ValueError, match="history"):
      agent.act(jax.random.key(0), agent.init(None), h)


def test_chunked_run_equals_one_long_run():
  """Step t draws from step_key(key, t): run(4) then run(6) is run(10), bit for bit."""
  tree = jaxgt.load("kuhn_poker").device_tree("float64")
  for selection in ("uct", "rm"):
    solver = ISMCTS(selection=selection, batch=4, dtype="float64")
    key = jax.random.key(2)
    one = solver.run(tree, solver.init(tree), 10, key)
    two = solver.run(tree, solver.run(tree, solver.init(tree), 4, key), 6, key)
    assert int(one.iteration) == 10
    for x, y in zip(jax.tree_util.tree_leaves(one), jax.tree_util.tree_leaves(two)):
      np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


@pytest.mark.parametrize("selection", ["uct", pytest.param("rm", marks=pytest.mark.slow)])
def test_agent_exposes_its_search_statistics_for_aggregation(selection):
  """Lisy et al. (2015, Sec. 5.2) aggregate "visit counts in ISMCTS": the agent keeps the last
  search's."""
  from jaxgt.evaluation import aggregate
  g = jaxgt.load("kuhn_poker")
  tree = g.device_tree("float64")
  solver = ISMCTS(selection=selection, batch=2, dtype="float64")
  agent = ISMCTSAgent(g, simulations=100, solver=solver)
  i = g.infostate_keys[1].index("1b")
  h = int(np.flatnonzero((np.asarray(tree.player) == 1) & (np.asarray(tree.infostate) == i))[0])
  key = jax.random.key(4)
  _, state = agent.act(key, agent.init(key), h)
  direct = solver.run(tree, solver.init(tree), 100, key, history=h)
  expect = direct.visits if selection == "uct" else direct.cum_policy
  for p in (0, 1):
    np.testing.assert_array_equal(np.asarray(agent.statistics(state, p)), np.asarray(expect[p]))
  assert float(np.asarray(state.statistics[1])[i].sum()) == pytest.approx(
      200.0 if selection == "uct" else 200.0)  # every simulation passes I once (or sigma sums 1)
  res = aggregate.aggregate_policy(g, agent, 8, jax.random.key(1))
  w = np.asarray(res.weights[1])
  # The played move is one-hot (UCT) or one row; the statistics put 200 per search at the
  # searched information state and more below it, so rows sum well beyond the 4 matches.
  assert w.sum(-1).max() >= 200.0
  if selection == "uct":
    np.testing.assert_array_equal(w, np.round(w))  # sums of visit counts
    assert (np.count_nonzero(w, axis=-1) == 2).any()  # a mixed row: not the one-hot move
