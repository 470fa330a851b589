"""MCCFR on device games: rows of information-state tables instead of a compiled tree's indices.

A run on ``Rules(game)`` must keep the numbers of the run on the game's compiled tree from the
same key, row for row (``sources.tree_rows`` maps table rows to tree indices).
"""

import jax
import numpy as np
import pytest

import jaxgt
from jaxgt import policy as policy_lib
from jaxgt.core import sequence_form as sf
from jaxgt.evaluation.device_policy import tabular_device_policy
from jaxgt.games import make
from jaxgt.solvers import mccfr
from jaxgt.solvers.base import compilations
from jaxgt.solvers.cfr_rules import PowerAveraging, RegretMatchingPlus
from jaxgt.solvers.mccfr_external import es_sizes
from jaxgt.solvers.sources import Rules, table_stats, tree_rows

from device_game_checks import replay

_GAMES = {}


def _game(name):
  if name not in _GAMES:
    g = make(name)
    _GAMES[name] = (g, jaxgt.compile_game(g))
  return _GAMES[name]


def _assert_rows_equal(compiled, rules, tree_state, rules_state, rtol=1e-5):
  """Table rows equal the tree's statistics at the mapped indices; the tree's other rows and
  the table's unused rows are zero."""
  rows = tree_rows(compiled, rules, rules_state.tables)
  for p in (0, 1):
    for name in ("regrets", "cum_policy"):
      want = np.asarray(getattr(tree_state, name)[p], np.float64)
      got = np.asarray(getattr(rules_state, name)[p], np.float64)
      n = len(rows[p])
      assert len(set(rows[p].tolist())) == n
      scale = max(1.0, np.abs(want).max())
      np.testing.assert_allclose(got[:n], want[rows[p]], rtol=rtol, atol=rtol * scale,
                                 err_msg=f"{name}[{p}]")
      assert not np.any(got[n:])
      assert not np.any(np.delete(want, rows[p], axis=0))


RULES = {"rm": {}, "rm+linear": {"regret_rule": RegretMatchingPlus(),
                                 "averaging": PowerAveraging(1.0)}}


# Kuhn at batch 8 and RM shares its compilations with the tests below (same solver, same shapes).
_SLOW = pytest.mark.slow  # time budget: each case compiles two runs


@pytest.mark.parametrize("name,batch,steps,rule,capacity", [
    ("kuhn_poker", 8, 30, "rm", 8), ("leduc_poker", 16, 20, "rm+linear", 600),
    pytest.param("kuhn_poker", 1, 40, "rm+linear", 8, marks=_SLOW),
    pytest.param("kuhn_poker", 1, 40, "rm", 8, marks=_SLOW),
    pytest.param("leduc_poker", 16, 20, "rm", 600, marks=_SLOW),
    pytest.param("leduc_poker", 1, 50, "rm+linear", 600, marks=_SLOW)])
def test_outcome_sampling_on_rules_equals_tree_run(name, batch, steps, rule, capacity):
  game, compiled = _game(name)
  tree, rules = compiled.device_tree(), Rules(game)
  solver = mccfr.outcome_sampling(batch=batch, **RULES[rule])
  key = jax.random.key(7)
  on_tree = solver.run(tree, solver.init(tree), steps, key)
  on_rules = solver.run(rules, solver.init(rules, capacity=capacity), steps, key)
  assert table_stats(on_rules.tables)["refused"] == [0, 0]
  assert int(on_rules.iteration) == steps
  _assert_rows_equal(compiled, rules, on_tree, on_rules)


@pytest.mark.parametrize("name,batch,steps,rule,capacity,frontier", [
    ("kuhn_poker", 4, 20, "rm", 8, None),
    pytest.param("leduc_poker", 8, 10, "rm+linear", 600, 8, marks=_SLOW),
    pytest.param("kuhn_poker", 1, 40, "rm+linear", 8, None, marks=_SLOW),
    pytest.param("leduc_poker", 8, 10, "rm", 600, 8, marks=_SLOW)])
def test_external_sampling_on_rules_equals_tree_run(name, batch, steps, rule, capacity,
                                                    frontier):
  """Leduc's traversals keep at most 6 states at a depth (es_sizes), within 8 slots."""
  game, compiled = _game(name)
  tree, rules = compiled.device_tree(), Rules(game)
  needed = max(max(sizes) for sizes, _ in es_sizes(tree)[:2])
  assert needed <= (frontier or 2 ** (game.max_length - 1))
  key = jax.random.key(5)
  solver = mccfr.external_sampling(batch=batch, **RULES[rule])
  on_tree = solver.run(tree, solver.init(tree), steps, key)
  solver = mccfr.external_sampling(batch=batch, max_frontier=frontier, **RULES[rule])
  on_rules = solver.run(rules, solver.init(rules, capacity=capacity), steps, key)
  assert table_stats(on_rules.tables)["refused"] == [0, 0]
  assert int(on_rules.frontier_overflow) == 0
  _assert_rows_equal(compiled, rules, on_tree, on_rules)


@_SLOW
def test_external_sampling_drops_traversals_that_overflow_the_frontier():
  """Leduc with one slot a depth: every traversal explores two or more actions somewhere, so
  all are dropped (nothing enters the tables); with two slots some are, not all."""
  game, _ = _game("leduc_poker")
  rules = Rules(game)
  key = jax.random.key(2)
  one = mccfr.external_sampling(batch=8, max_frontier=1)
  state = one.run(rules, one.init(rules, capacity=64), 3, key)
  assert int(state.frontier_overflow) == 3 * 2 * 8
  assert table_stats(state.tables)["rows"] == [0, 0]
  assert not any(np.any(np.asarray(x)) for x in state.regrets + state.cum_policy)
  two = mccfr.external_sampling(batch=8, max_frontier=2)
  state = two.run(rules, two.init(rules, capacity=64), 3, key)
  assert 0 < int(state.frontier_overflow) < 3 * 2 * 8
  assert min(table_stats(state.tables)["rows"]) > 0
  for x in state.regrets + state.cum_policy:
    assert np.isfinite(np.asarray(x)).all()


def test_external_sampling_reports_a_full_table():
  game, _ = _game("kuhn_poker")
  rules = Rules(game)
  solver = mccfr.external_sampling(batch=4)
  state = solver.run(rules, solver.init(rules, capacity=game.max_length), 5, jax.random.key(0))
  stats = table_stats(state.tables)
  assert stats["rows"] == [5, 5] and min(stats["refused"]) > 0
  assert int(state.frontier_overflow) == 0
  for x in state.regrets + state.cum_policy:
    assert np.isfinite(np.asarray(x)).all()


def test_chunked_rules_run_equals_one_long_run():
  game, _ = _game("kuhn_poker")
  rules = Rules(game)
  solver = mccfr.outcome_sampling(batch=8)
  key = jax.random.key(3)
  one = solver.run(rules, solver.init(rules, capacity=8), 9, key)
  two = solver.run(rules, solver.run(rules, solver.init(rules, capacity=8), 4, key), 5, key)
  for x, y in zip(jax.tree_util.tree_leaves(one), jax.tree_util.tree_leaves(two)):
    np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def test_full_table_is_reported_and_the_run_completes():
  """Kuhn has 6 information states per player; 5 rows each fill up and refuse the sixth, whose
  increments are dropped."""
  game, _ = _game("kuhn_poker")
  rules = Rules(game)
  solver = mccfr.outcome_sampling(batch=8)
  state = solver.run(rules, solver.init(rules, capacity=game.max_length), 10, jax.random.key(0))
  stats = table_stats(state.tables)
  assert stats["rows"] == [5, 5] and min(stats["refused"]) > 0
  for x in state.regrets + state.cum_policy:
    assert np.isfinite(np.asarray(x)).all()
  assert np.any(np.asarray(state.regrets[0])) and np.any(np.asarray(state.cum_policy[1]))
  policy = solver.average_policy(rules, state)
  np.testing.assert_allclose(np.asarray(policy[0]).sum(-1), 1.0, rtol=1e-6)


def test_exported_policy_is_evaluated_exactly_and_equals_the_tree_run():
  game, compiled = _game("kuhn_poker")
  tree, rules = compiled.device_tree(), Rules(game)
  solver = mccfr.outcome_sampling(batch=8)
  key = jax.random.key(0)
  on_rules = solver.run(rules, solver.init(rules, capacity=8), 800, key)
  on_tree = solver.run(tree, solver.init(tree), 800, key)
  table = solver.table_policy(rules, on_rules)
  assert set(table) == {0, 1} and all(len(table[p]) == 6 for p in (0, 1))
  assert all(isinstance(k, str) for k in table[0])
  exported = policy_lib.policy_from_table(compiled, table)
  tree64 = compiled.device_tree("float64")
  got = float(sf.exploitability(tree64, exported.probs))
  want = float(sf.exploitability(tree64, tuple(np.asarray(p, np.float64) for p in
                                               solver.average_policy(tree, on_tree))))
  assert got < 0.05
  np.testing.assert_allclose(got, want, atol=1e-5)
  assert got < float(sf.exploitability(tree64, sf.uniform_policy(tree64, np.float64))) / 5


def test_device_policy_plays_the_exported_table_at_every_history():
  """The run's device policy (a table lookup per state) equals the tabular device policy of the
  exported policy at every decision of Kuhn, including states the run never averaged."""
  game, compiled = _game("kuhn_poker")
  rules = Rules(game)
  solver = mccfr.outcome_sampling(batch=8)
  state = solver.run(rules, solver.init(rules, capacity=8), 2, jax.random.key(0))
  table = solver.table_policy(rules, state)
  assert 0 < sum(len(table[p]) for p in (0, 1)) < 12  # some states still unaveraged
  want = tabular_device_policy(compiled, policy_lib.policy_from_table(compiled, table).probs)
  got = solver.device_policy(rules, state)
  states = replay(game, compiled)
  player = np.asarray(compiled.tree.player)
  for p in (0, 1):
    at = jax.tree_util.tree_map(lambda x: x[np.flatnonzero(player == p)], states)
    played = jax.jit(lambda pol, s, p=p: pol(s, p))(got, at)  # the policy as an argument
    np.testing.assert_allclose(np.asarray(played), np.asarray(want(at, p)), rtol=1e-6)


def test_policy_from_table_fills_missing_states_and_rejects_strangers():
  game, compiled = _game("kuhn_poker")
  policy = policy_lib.policy_from_table(compiled, {0: {}, 1: {}})
  np.testing.assert_allclose(policy.probs[0], 0.5)
  with pytest.raises(policy_lib.PolicyError, match="not an information state"):
    policy_lib.policy_from_table(compiled, {0: {"no such state": np.array([0.5, 0.5])}})
  key = compiled.infostate_keys[1][0]
  with pytest.raises(policy_lib.PolicyError, match="sum to"):
    policy_lib.policy_from_table(compiled, {1: {key: np.array([0.5, 0.6])}})


def test_bad_input_is_refused_before_compiling():
  game, compiled = _game("kuhn_poker")
  rules, tree = Rules(game), compiled.device_tree()
  solver = mccfr.outcome_sampling(batch=3)
  before = compilations(solver)
  with pytest.raises(ValueError, match="needs capacity"):
    solver.init(rules)
  with pytest.raises(ValueError, match="capacity"):
    solver.init(rules, capacity=0)
  with pytest.raises(ValueError, match="max_length"):
    solver.init(rules, capacity=game.max_length - 1)
  with pytest.raises(ValueError, match="capacity applies to device games"):
    solver.init(tree, capacity=10)
  with pytest.raises(TypeError, match="DeviceGame"):
    Rules(compiled)
  with pytest.raises(ValueError, match="root beliefs"):
    solver.init(rules, capacity=10, weights=np.ones(6))
  with pytest.raises(ValueError, match="state was made for a compiled tree"):
    solver.run(rules, solver.init(tree), 1, jax.random.key(0))
  with pytest.raises(ValueError, match="device game"):
    solver.run(tree, solver.init(rules, capacity=10), 1, jax.random.key(0))
  with pytest.raises(ValueError, match="num_steps"):
    solver.run(rules, solver.init(rules, capacity=10), -1, jax.random.key(0))
  with pytest.raises(ValueError, match="needs capacity"):
    solver.memory_bytes(rules, None)
  assert compilations(solver) == before
  assert solver.memory_bytes(rules, 10) > 10 * 2 * 2 * 4 * 2
  es = mccfr.external_sampling(batch=2)
  before = compilations(es)
  with pytest.raises(ValueError, match="max_frontier"):
    mccfr.external_sampling(max_frontier=0)
  with pytest.raises(ValueError, match="needs max_frontier"):
    es.init(Rules(make("leduc_poker")), capacity=100)
  with pytest.raises(ValueError, match="max_frontier applies to device games"):
    mccfr.external_sampling(max_frontier=4).init(tree)
  with pytest.raises(ValueError, match="needs capacity"):
    es.init(rules)
  assert compilations(es) == before


def test_holdem_outcome_sampling_fills_rows():
  """A game too large to enumerate: rows fill, numbers stay finite."""
  rules = Rules(make("limit_holdem"))
  solver = mccfr.outcome_sampling(batch=64)
  state = solver.run(rules, solver.init(rules, capacity=100_000), 3, jax.random.key(0))
  stats = table_stats(state.tables)
  assert min(stats["rows"]) > 64 and stats["refused"] == [0, 0]
  for x in state.regrets + state.cum_policy:
    assert np.isfinite(np.asarray(x)).all()
  assert np.any(np.asarray(state.regrets[0])) and np.any(np.asarray(state.cum_policy[0]))
  table = solver.table_policy(rules, state)
  assert 0 < len(table[1]) <= stats["rows"][1]
  for probs in list(table[1].values())[:50]:
    np.testing.assert_allclose(probs.sum(), 1.0, rtol=1e-5)
