"""Growing-Tree CFR on the device tree, against the CFR engine, depth-limited solving,
the re-solving gadget and policy construction."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxgt
from jaxgt.agents.gtcfr_agent import GTCFRAgent
from jaxgt.core.evaluate import evaluate
from jaxgt.core import public_tree as ptm
from jaxgt.core import sequence_form as sf
from jaxgt.core.public_tree import build_public_tree
from jaxgt.evaluation import construct as cs
from jaxgt.search import device_tree as dt
from jaxgt.search import evaluator as evaluators
from jaxgt.search import gtcfr as gt
from jaxgt.search import gtcfr_program
from jaxgt.search import regret_phase
from jaxgt.search import history_cfr
import reference_leaf as lf
import reference_resolving as rs
import reference_subgame as sgm


def counting(evaluator):
  """``evaluator`` with a count of how often it is traced (once per compilation)."""
  count = [0]

  def apply(state, leaves):
    count[0] += 1
    return evaluator.apply(state, leaves)
  return evaluators.Evaluator(init=evaluator.init, apply=apply, name="counting"), count


def _grow(src, capacity, root, depth_limit=None):
  return jax.jit(lambda r: dt.expand_all(src, dt.init_tree(src, capacity, r), depth_limit))(root)


def _tree_policy(tree, policy, p, rows_of):
  """``(mine, reference)``: the search's average policy at every acting slot of expanded
  nodes, and ``rows_of(source infostate)`` of the reference."""
  K = tree.acting_info.shape[-1]
  ai = np.asarray(tree.acting_info[p]).reshape(-1)
  m = (ai >= 0) & np.repeat(np.asarray(tree.expanded), K)
  return np.asarray(policy[p])[m], rows_of(ai[m])


def _check_depth_limited(g, src, cfg, ev, solver, depth_limit, iterations):
  """GT-CFR's regret phase on the root's depth-limited tree with exact leaves equals
  the reference depth-limited solve (``reference_leaf.solve``) with ``solver`` on the
  host-extracted subgame."""
  cap = cfg.capacity
  cut = _grow(src, cap, 0, depth_limit)
  assert int(cut.num_nodes) < cap
  res = gt.solve_tree(src, cfg, ev, cut, gt.root_ranges(src, 0), iterations)
  sub = sgm.extract(g, 0, depth_limit=depth_limit)
  st = lf.solve(sub, solver, sub.root_weights(np.ones(1), np.ones(1)),
                lf.equilibrium(sub, solver, 1), iterations)
  sub_avg = solver.average_policy(sub.compiled.device_tree("float64"), st.cfr)
  for p in (0, 1):
    pos = {int(f): k for k, f in enumerate(sub.full_infostate[p]) if f >= 0}
    mine, ref = _tree_policy(cut, res.policy, p,
                             lambda ids: np.asarray(sub_avg[p])[[pos[int(i)] for i in ids]])
    assert len(mine) > 0
    np.testing.assert_allclose(mine, ref[:, :mine.shape[1]], atol=1e-9)


def _check_against_engine_and_depth_limited(name, depth_limit, iterations):
  g = jaxgt.load(name)
  pt = build_public_tree(g)
  src = dt.source_from_game(g)
  cap = pt.num_public_states
  ev, count = counting(evaluators.exact(src))
  cfg = gt.make_config(src, simulations=1, capacity=cap)
  ranges = gt.root_ranges(src, 0)
  # A fully expanded tree: simultaneous CFR+ on the whole game (the engine).
  full = _grow(src, cap, 0)
  res = gt.solve_tree(src, cfg, ev, full, ranges, iterations)
  solver = jaxgt.cfr_plus(alternating=False, dtype="float64")
  gtree = g.device_tree("float64")
  avg = solver.average_policy(gtree, solver.run(gtree, solver.init(gtree), iterations))
  for p in (0, 1):
    mine, ref = _tree_policy(full, res.policy, p, lambda ids: np.asarray(avg[p])[ids])
    assert len(mine) == g.tree.num_infostates[p]
    np.testing.assert_allclose(mine, ref, atol=1e-9)
  # A depth-limited tree with exact leaves: the reference depth-limited solve.
  _check_depth_limited(g, src, cfg, ev, solver, depth_limit, iterations)
  # Another root public state, other ranges and another tree shape: no recompilation.
  deep = int(np.flatnonzero((pt.depth == 3) & ~pt.terminal_public)[0])
  other = gt.root_ranges(src, deep, [np.arange(1.0, len(pt.infostates[p][deep]) + 1)
                                     / np.arange(1.0, len(pt.infostates[p][deep]) + 1).sum()
                                     for p in (0, 1)])
  res = gt.solve_tree(src, cfg, ev, _grow(src, cap, deep, 2), other, iterations // 2)
  assert np.isfinite(np.asarray(res.root_values)).all()
  assert count[0] == 1


def test_kuhn_full_tree_is_cfr_plus_and_depth_limited_is_leaf_solve():
  """Fully expanded: the engine's simultaneous CFR+; depth-limited with exact leaves:
  the reference depth-limited solve (``reference_leaf.solve``) with equilibrium leaves; one
  compilation for every tree, root
  and range."""
  _check_against_engine_and_depth_limited("kuhn_poker", 4, 200)


def test_kuhn_full_tree_alternating_is_the_engines_alternating_cfr_plus():
  """With an alternating solver the regret phase updates player 0, then player 1 (each with
  its own forward pass): on a fully expanded tree it is the CFR engine's alternating CFR+."""
  g = jaxgt.load("kuhn_poker")
  pt = build_public_tree(g)
  src = dt.source_from_game(g)
  cap = pt.num_public_states
  solver = jaxgt.cfr_plus(dtype="float64")
  assert solver.alternating
  cfg = gt.make_config(src, simulations=1, capacity=cap, solver=solver)
  full = _grow(src, cap, 0)
  # the depth-limited solve's evaluator (below): a full tree has no leaves, one program serves
  ev = evaluators.exact(src, solver=solver)
  res = gt.solve_tree(src, cfg, ev, full, gt.root_ranges(src, 0), 50)
  gtree = g.device_tree("float64")
  avg = solver.average_policy(gtree, solver.run(gtree, solver.init(gtree), 50))
  sim = jaxgt.cfr_plus(alternating=False, dtype="float64")
  sim_avg = sim.average_policy(gtree, sim.run(gtree, sim.init(gtree), 50))
  for p in (0, 1):
    mine, ref = _tree_policy(full, res.policy, p, lambda ids: np.asarray(avg[p])[ids])
    assert len(mine) == g.tree.num_infostates[p]
    np.testing.assert_allclose(mine, ref, atol=1e-9)
  other = _tree_policy(full, res.policy, 0, lambda ids: np.asarray(sim_avg[0])[ids])
  assert np.abs(other[0] - other[1]).max() > 1e-6  # not the simultaneous result
  # Depth-limited with exact leaves (the continuation solved by the same alternating CFR+, one
  # query per iteration): the reference depth-limited solve on the CFR engine.
  _check_depth_limited(g, src, cfg, ev, solver, 4, 50)


@pytest.mark.slow
def test_leduc_full_tree_is_cfr_plus_and_depth_limited_is_leaf_solve():
  _check_against_engine_and_depth_limited("leduc_poker", 5, 100)


@pytest.mark.parametrize("name,alternating", [("dcfr", True), ("pcfr+", False)])
def test_leduc_full_tree_runs_the_engines_rule(name, alternating):
  """GT-CFR's regret phase with DCFR (alternating) or PCFR+ (simultaneous) as its rule: on a
  fully expanded Leduc tree its average and current policies are the CFR engine's with that
  rule, at every information state (the same iteration on another tree view)."""
  g = jaxgt.load("leduc_poker")
  src = dt.source_from_game(g)
  cap = build_public_tree(g).num_public_states
  solver = jaxgt.make_solver(name, alternating=alternating, dtype="float64")
  cfg = gt.make_config(src, simulations=1, capacity=cap, solver=solver)
  full = _grow(src, cap, 0)
  res = gt.solve_tree(src, cfg, evaluators.exact(src), full, gt.root_ranges(src, 0), 30)
  gtree = g.device_tree("float64")
  st = solver.run(gtree, solver.init(gtree), 30)
  current = history_cfr.strategy(solver, regret_phase.legal_rows(full), res.state.cfr)
  for mine_pol, ref_pol in ((res.policy, solver.average_policy(gtree, st)),
                            (current, solver.current_policy(gtree, st))):
    for p in (0, 1):
      mine, ref = _tree_policy(full, mine_pol, p, lambda ids: np.asarray(ref_pol[p])[ids])
      assert len(mine) == g.tree.num_infostates[p]
      np.testing.assert_allclose(mine, ref, atol=1e-9)


def _blueprint(name):
  """``(game, public tree, float64 CFR+ average policy after 30 iterations)``."""
  g = jaxgt.load(name)
  tree = g.device_tree("float64")
  solver = jaxgt.cfr_plus(dtype="float64")
  avg = solver.average_policy(tree, solver.run(tree, solver.init(tree), 30))
  return g, build_public_tree(g), avg


def _kuhn_summary():
  g, pt, bp = _blueprint("kuhn_poker")
  player = np.asarray(g.tree.player)
  ps = [s for s in range(pt.num_public_states)
        if not pt.terminal_public[s] and set(player[pt.histories[s]]) & {0, 1}][1]
  p = int([x for x in player[pt.histories[ps]] if x in (0, 1)][0])
  return g, pt, ps, p, rs.summary_from_policy(pt, ps, p, bp)


@pytest.mark.parametrize("alpha", [None, pytest.param(0.5, marks=pytest.mark.slow)])
def test_gadget_on_device_tree_equals_resolve(alpha):
  """Re-solving with the (alpha-modified) safe gadget on a fully expanded device tree gives
  the reference ``resolve``'s policy (simultaneous CFR+)."""
  g, pt, ps, p, summ = _kuhn_summary()
  o = 1 - p
  src = dt.source_from_game(g)
  K = src.num_infostates
  cap = pt.num_public_states
  cfg = gt.make_config(src, simulations=1, capacity=cap)
  tree = _grow(src, cap, ps)
  sub = sgm.extract(pt, ps)
  sim = jaxgt.cfr_plus(alternating=False, dtype="float64")
  ref = rs.resolve(sub, sim, p, summ.our_range, summ.opp_values, summ.opp_range, iterations=100,
                   alpha=alpha)
  ranges = gt.root_ranges(src, ps, [summ.our_range, summ.opp_range][::1 if p == 0 else -1])
  ov = np.zeros(K)
  ov[:len(summ.opp_values)] = summ.opp_values
  res = gt.solve_tree(src, cfg, evaluators.exact(src), tree, ranges, 100, player=p, opp_values=ov,
                      alpha=alpha)
  pos = {int(f): k for k, f in enumerate(sub.full_infostate[p]) if f >= 0}
  mine, want = _tree_policy(tree, res.policy, p,
                            lambda ids: np.asarray(ref.policy[p])[[pos[int(i)] for i in ids]])
  assert len(mine) > 0
  np.testing.assert_allclose(mine, want[:, :mine.shape[1]], atol=1e-9)
  k = len(summ.opp_range)
  np.testing.assert_allclose(np.asarray(res.state.gadget.range_sum)[k:], 0.0)
  # Per-node summaries (the next re-solve's constraints) equal resolving.child_summaries:
  # ranges under the average policy, average self-play counterfactual values.
  targets = [c for c in pt.children[ps] if not pt.terminal_public[c]]
  want = rs.child_summaries(sub, p, ref, targets)
  pub = np.asarray(tree.public)
  for c in targets:
    n = int(np.flatnonzero(pub == c)[0])
    rows = slice(n * K, n * K + K)
    ki, ko = len(pt.infostates[p][c]), len(pt.infostates[o][c])
    ours = np.asarray(res.node_reach[p, rows])[:ki]
    np.testing.assert_allclose(ours / ours.sum(), want[c].our_range, atol=1e-9)
    opp = np.asarray(res.node_reach[o, rows])[:ko]
    np.testing.assert_allclose(opp / opp.sum(), want[c].opp_range, atol=1e-9)
    np.testing.assert_allclose(np.asarray(res.node_values[o, rows])[:ko] / ours.sum(),
                               want[c].opp_values, atol=1e-9)


@pytest.mark.parametrize("player", [pytest.param(0, marks=pytest.mark.slow), 1])
def test_alternating_depth_limited_gadget_equals_resolve(player):
  """Alternating CFR+ with the alpha = 0.5 gadget on a depth-limited device tree (exact leaves,
  one query per iteration) gives the reference ``resolve``'s policy for either re-solving
  player. With the opponent updated first (re-solving player 1) the iteration's leaf query
  sees the range of the gadget's current strategy, at the first iteration ``alpha * uniform +
  (1 - alpha) * r_prev`` (the device tree used ``r_prev`` there: 0.43 apart after 10 iterations
  here, 0.599 instead of 0.43 mbb/h in Leduc continual re-solving). A two-round poker whose
  information states below the leaves hold several opponent hands, and a non-uniform
  opponent range (the blueprint's, facing the opening bet for player 1)."""
  g, pt, bp = _blueprint("generic_poker(T=3,C=2,R=0,B=1)")
  solver = jaxgt.cfr_plus(dtype="float64")  # alternating
  acting = np.asarray(g.tree.player)
  mine_ = [s for s in range(pt.num_public_states) if set(acting[pt.histories[s]]) == {player}]
  first = [s for s in mine_ if pt.depth[s] == min(pt.depth[mine_])]

  def summary(s):
    return rs.summary_from_policy(pt, s, player, bp, best_response=False)

  ps = max(first, key=lambda s: np.ptp(summary(s).opp_range))
  summ = summary(ps)
  assert player == 0 or np.ptp(summ.opp_range) > 0.1
  src = dt.source_from_game(g)
  K, cap = src.num_infostates, pt.num_public_states
  cfg = gt.make_config(src, simulations=1, capacity=cap, solver=solver)
  tree = _grow(src, cap, ps, 1)
  sub = sgm.extract(pt, ps, depth_limit=1)
  assert sub.num_leaves > 0
  ranges = gt.root_ranges(src, ps, [summ.our_range, summ.opp_range][::1 if player == 0 else -1])
  ov = np.zeros(K)
  ov[:len(summ.opp_values)] = summ.opp_values
  pos = {int(f): k for k, f in enumerate(sub.full_infostate[player]) if f >= 0}
  ref = rs.resolve(sub, solver, player, summ.our_range, summ.opp_values, summ.opp_range,
                   iterations=10, alpha=0.5)
  res = gt.solve_tree(src, cfg, evaluators.exact(src, solver=solver), tree, ranges, 10,
                      player=player,
                      opp_values=ov, alpha=0.5)
  mine, want = _tree_policy(tree, res.policy, player, lambda ids: np.asarray(
      ref.policy[player])[[pos[int(i)] for i in ids]])
  assert len(mine) > 0
  np.testing.assert_allclose(mine, want[:, :mine.shape[1]], atol=1e-9)
  r = np.asarray(res.state.gadget.range_sum)[:len(summ.opp_range)]
  np.testing.assert_allclose(r / r.sum(), ref.opp_range, atol=1e-9)


def test_gadget_player_and_switch_are_data():
  """The re-solving player and the gadget's on/off switch are data: one program re-solves for
  either player, the gadget switched off gives the fixed-range solve of ``player=None``, and a
  batch mixing players and switches equals the single solves."""
  g, pt, ps, p, summ = _kuhn_summary()
  src = dt.source_from_game(g)
  K, cap = src.num_infostates, pt.num_public_states
  cfg = gt.make_config(src, simulations=1, capacity=cap)
  ev, count = counting(evaluators.exact(src))
  tree = _grow(src, cap, ps)
  ranges = gt.root_ranges(src, ps, [summ.our_range, summ.opp_range][::1 if p == 0 else -1])
  ov = np.zeros(K)
  ov[:len(summ.opp_values)] = summ.opp_values
  single = {q: gt.solve_tree(src, cfg, ev, tree, ranges, 20, player=q, opp_values=ov, alpha=0.5)
            for q in (p, 1 - p)}
  off = gt.solve_tree(src, cfg, ev, tree, ranges, 20, player=p, opp_values=ov, alpha=0.5,
                      gadget=False)
  assert count[0] == 1  # both players and the switch: one program
  fixed = gt.solve_tree(src, cfg, ev, tree, ranges, 20)
  for a, b in ((off.policy, fixed.policy), (off.root_values, fixed.root_values),
               (off.node_reach, fixed.node_reach)):
    np.testing.assert_allclose(np.asarray(a[0] if isinstance(a, tuple) else a),
                               np.asarray(b[0] if isinstance(b, tuple) else b), atol=1e-12)
  # the gadget moves the opponent's range: on differs from off
  assert float(jnp.abs(single[p].node_reach - off.node_reach).max()) > 1e-6
  trees = jax.tree_util.tree_map(lambda x: jnp.stack([x] * 3), tree)
  batch = gt.solve_tree(src, cfg, ev, trees, np.stack([ranges] * 3), 20,
                        player=jnp.asarray([p, 1 - p, p]), opp_values=np.stack([ov] * 3),
                        alpha=0.5, gadget=jnp.asarray([True, True, False]))
  for row, want in enumerate((single[p], single[1 - p], off)):
    for q in (0, 1):
      np.testing.assert_allclose(np.asarray(batch.policy[q][row]), np.asarray(want.policy[q]),
                                 atol=1e-12)
    np.testing.assert_allclose(np.asarray(batch.root_values[row]), np.asarray(want.root_values),
                               atol=1e-12)
  with pytest.raises(ValueError, match="player must be 0, 1"):
    gt.solve_tree(src, cfg, ev, tree, ranges, 20, player=2, opp_values=ov)
  with pytest.raises(ValueError, match="gadget must be a bool"):
    gt.solve_tree(src, cfg, ev, tree, ranges, 20, player=p, opp_values=ov, gadget=1)


def test_batched_searches_equal_single_searches():
  """B GT-CFR searches with different roots, ranges and keys in one vmapped call equal the
  B searches run one by one (trees, policies, root values)."""
  g = jaxgt.load("kuhn_poker")
  pt = build_public_tree(g)
  src = dt.source_from_game(g)
  cfg = gt.make_config(src, simulations=6)
  assert cfg.capacity == pt.num_public_states
  ev = evaluators.exact(src)
  roots = [0] + [int(s) for s in np.flatnonzero(~pt.terminal_public & (pt.depth == 2))[:2]]
  rng = np.random.default_rng(0)
  ranges = []
  for s in roots:
    r = [rng.random(len(pt.infostates[p][s])) + 0.1 for p in (0, 1)]
    ranges.append(gt.root_ranges(src, s, [x / x.sum() for x in r]))
  keys = jax.random.split(jax.random.PRNGKey(3), len(roots))
  batch = gt.search(src, cfg, ev, np.asarray(roots), np.stack(ranges), keys)
  for b, s in enumerate(roots):
    one = gt.search(src, cfg, ev, s, ranges[b], keys[b])
    assert int(one.state.tree.num_nodes) > 1 + len(pt.children[s]) or s != 0
    for x, y in zip(jax.tree_util.tree_leaves(one),
                    jax.tree_util.tree_leaves(jax.tree_util.tree_map(lambda z: z[b], batch))):
      np.testing.assert_allclose(np.asarray(x), np.asarray(y), atol=1e-12)


def test_evaluator_state_is_data_not_a_recompilation():
  """An evaluator's state passed as data (network parameters that change between searches):
  one compilation serves every state, and the state reaches the leaves (values scaled by it
  equal the exact evaluator's values scaled likewise)."""
  g = jaxgt.load("kuhn_poker")
  src = dt.source_from_game(g)
  # the exact evaluator's search: the program of test_batched_searches' single searches
  cfg = gt.make_config(src, simulations=6)
  exact = evaluators.exact(src)

  def apply(state, leaves):
    scale, inner = state
    (values, prior), inner = exact.apply(inner, leaves)
    return (scale * values, prior), (scale, inner)

  scaled, count = counting(evaluators.Evaluator(init=lambda: (1.0, exact.init()), apply=apply))
  r = gt.root_ranges(src, 0)
  key = jax.random.PRNGKey(0)
  out = {}
  for scale in (1.0, 0.0, 2.0):
    state = (jnp.asarray(scale), exact.init())
    out[scale] = gt.search(src, cfg, scaled, 0, r, key, evaluator_state=state)
  assert count[0] == 1
  ref = gt.search(src, cfg, exact, 0, r, key)
  np.testing.assert_allclose(np.asarray(out[1.0].root_values), np.asarray(ref.root_values),
                             atol=1e-12)
  assert float(jnp.abs(out[0.0].root_values - ref.root_values).max()) > 1e-3


@pytest.mark.parametrize("s, c", [pytest.param(5, 2.0, marks=pytest.mark.slow),
                                  (4, 1.0),
                                  pytest.param(2, 0.5, marks=pytest.mark.slow)])
def test_search_grows_the_tree_and_counts_queries(s, c):
  """SoG(s, c): s simulations grow the tree (k = infinity: all children at once, never more
  than the capacity), ceil(1/c) CFR updates per phase, every update queries the leaves."""
  g = jaxgt.load("kuhn_poker")
  src = dt.source_from_game(g)
  if True:
    cfg = gt.make_config(src, simulations=s, expansions_per_update=c, capacity=11,
                         log_queries=64)
    res = gt.search(src, cfg, evaluators.exact(src), 0, gt.root_ranges(src, 0),
                    jax.random.PRNGKey(0))
    st = res.state
    # The query log: at iteration 1 (uniform strategies) each queried public belief state is
    # the uniform policy's (core.public_tree), in tree order.
    log = jax.tree_util.tree_map(np.asarray, st.queries)
    pt = build_public_tree(g)
    uniform = sf.uniform_policy(g.device_tree("float64"), jnp.float64)
    first = np.flatnonzero(log.iteration == 1)
    assert len(first) > 0 and 0 < int(log.count) <= 64
    for i in first:
      want = ptm.public_belief_state(pt, int(log.public[i]), uniform)
      for p in (0, 1):
        np.testing.assert_allclose(log.ranges[i, p, :len(want[p])], want[p], atol=1e-12)
    assert int(st.cfr.iteration) == cfg.num_phases * cfg.updates_per_phase
    assert cfg.num_phases == -(-s // cfg.sims_per_phase)
    assert int(st.num_queries) > 0
    if s >= 4:  # the first two expansions cross Kuhn's chance-only public states
      assert float(jnp.sum(st.visits)) > 0
    assert 1 + src.num_children <= int(st.tree.num_nodes) <= 11


def test_arguments_checked():
  g = jaxgt.load("kuhn_poker")
  src = dt.source_from_game(g)
  with pytest.raises(ValueError, match="simulations"):
    gt.make_config(src, simulations=0)
  with pytest.raises(ValueError, match="expansions_per_update"):
    gt.make_config(src, simulations=5, expansions_per_update=0)
  # alternating solvers are accepted (player 0's update, then player 1's: the re-solving agent)
  alternating = gt.make_config(src, simulations=5, solver=jaxgt.cfr_plus(dtype="float64"))
  assert alternating.solver.alternating
  cfg_default = gt.make_config(src, simulations=5)
  # a rule by name: the search's defaults (simultaneous updates, Student of Games' order; plain
  # sums; no tie rule) in the config's dtype
  named = gt.make_config(src, simulations=5, solver="dcfr", dtype="float32")
  assert named.solver == jaxgt.discounted_cfr(alternating=False, dtype="float32",
                                              compensated=False, exact_ties=False)
  assert gt.make_config(src, simulations=5, solver="cfr+").solver == cfg_default.solver
  with pytest.raises(ValueError, match="unknown solver"):
    gt.make_config(src, simulations=5, solver="cfr++")
  with pytest.raises(ValueError, match="CFRSolver"):
    gt.make_config(src, simulations=5, solver=3)
  cfg = gt.make_config(src, simulations=5)
  with pytest.raises(ValueError, match="root ranges"):
    gt.search(src, cfg, evaluators.exact(src), 0, np.ones(3), jax.random.PRNGKey(0))
  with pytest.raises(ValueError, match="opp_values"):
    gt.search(src, cfg, evaluators.exact(src), 0, gt.root_ranges(src, 0), jax.random.PRNGKey(0),
              player=0)
  with pytest.raises(ValueError, match="range of player 0"):
    gt.root_ranges(src, 0, [np.array([0.5]), np.array([1.0])])
  with pytest.raises(ValueError, match="evaluator"):
    GTCFRAgent(g, simulations=5, evaluator="bogus")
  with pytest.raises(ValueError, match="chance"):
    gt.make_config(src, simulations=5, chance="exact")
  with pytest.raises(ValueError, match="select_policy"):
    gt.make_config(src, simulations=5, select_policy="mean")
  with pytest.raises(ValueError, match="value_average"):
    gt.make_config(src, simulations=5, value_average="all")
  with pytest.raises(ValueError, match="puct_visit_offset"):
    GTCFRAgent(g, simulations=5, puct_visit_offset=-1.0)


def test_puct_scores_are_the_documented_formula():
  """``puct_scores`` against a NumPy transcription of :func:`make_config`'s formula; at an
  information state's first visit the exploration term vanishes without a visit offset
  (the largest ``q`` wins) and follows the prior with one."""
  src = dt.source_from_game(jaxgt.load("kuhn_poker"))
  rng = np.random.default_rng(0)
  legal = np.array([True, True, False])
  for c, off, vl in [(1.0, 0.0, 1.0), (0.25, 1.0, 2.0), (4.0, 0.5, 0.0)]:
    cfg = gt.make_config(src, simulations=5, puct_constant=c, puct_visit_offset=off,
                         virtual_loss=vl)
    q, n, v = rng.normal(size=3), rng.integers(0, 5, 3).astype(float), rng.integers(0, 2, 3)
    prior = np.array([0.3, 0.7, 0.0])
    want = q - vl * 2.0 * v / (n + 1) + c * 2.0 * prior * np.sqrt(n.sum() + off) / (1 + n)
    got = np.asarray(gtcfr_program.puct_scores(cfg, 2.0, q, n, v, prior, legal))
    np.testing.assert_allclose(got[:2], want[:2], rtol=1e-12)
    assert got[2] == -np.inf
  q, zero, prior = np.array([0.1, 0.0, 0.0]), np.zeros(3), np.array([0.0, 1.0, 0.0])
  for off, best in [(0.0, 0), (1.0, 1)]:
    cfg = gt.make_config(src, simulations=5, puct_visit_offset=off)
    assert int(np.argmax(gtcfr_program.puct_scores(cfg, 1.0, q, zero, zero, prior, legal))) == best


def test_virtual_loss_is_inert_with_one_simulation_per_phase():
  """With ``ceil(c) = 1`` a phase's single simulation visits each information state once,
  after scoring it: the virtual loss cannot change the search (it separates the ``ceil(c)``
  simulations of one phase)."""
  g = jaxgt.load("kuhn_poker")
  src = dt.source_from_game(g)
  out = []
  for vl in (1.0, 5.0):  # the default (the program of test_batched_searches' single searches)
    cfg = gt.make_config(src, simulations=6, virtual_loss=vl)
    out.append(gt.search(src, cfg, evaluators.exact(src), 0, gt.root_ranges(src, 0),
                         jax.random.PRNGKey(3)))
  assert int(out[0].state.tree.num_nodes) == int(out[1].state.tree.num_nodes)
  np.testing.assert_array_equal(np.asarray(out[0].state.tree.public),
                                np.asarray(out[1].state.tree.public))
  for p in (0, 1):
    np.testing.assert_array_equal(np.asarray(out[0].policy[p]), np.asarray(out[1].policy[p]))


@pytest.mark.slow
def test_agent_policy_table_is_policy_construction():
  """The batched policy table equals policy construction through ``act`` (single searches)."""
  g = jaxgt.load("kuhn_poker")
  agent = GTCFRAgent(g, simulations=10, resolve=False)
  key = jax.random.PRNGKey(0)
  table = agent.policy_table(key, batch=8)
  built = cs.construct_policy(agent, key)
  for p in (0, 1):
    np.testing.assert_allclose(table[p], built[p], atol=1e-12)


@pytest.mark.slow
def test_continual_resolving_agent_improves_with_simulations():
  """Policy construction of SoG(s, 1) with continual re-solving on Kuhn (exact leaves): the
  exploitability falls as s grows and ends below the root-anchored searches' composition."""
  g = jaxgt.load("kuhn_poker")
  expl = {}
  for s in (10, 1000):
    agent = GTCFRAgent(g, simulations=s)
    expl[s] = np.mean([evaluate(g, cs.construct_policy(agent, jax.random.PRNGKey(k)))
                       .exploitability for k in range(2)])
  anchored = GTCFRAgent(g, simulations=1000, resolve=False)
  root_only = evaluate(g, anchored.policy_table(jax.random.PRNGKey(0), batch=8)).exploitability
  assert expl[1000] < 0.2 * expl[10]
  assert expl[1000] < 0.6 * root_only


def test_agent_is_traceable():
  """``act`` traces with a traced history (jitted matches)."""
  from jaxgt.evaluation import referee
  g = jaxgt.load("kuhn_poker")
  assert referee.traceable(GTCFRAgent(g, simulations=4), g, jax.random.PRNGKey(0))


@pytest.mark.slow
def test_agent_plays_jitted_matches():
  from jaxgt.agents.base import PolicyAgent
  from jaxgt.evaluation.match import play
  g = jaxgt.load("kuhn_poker")
  uniform = PolicyAgent(g, sf.uniform_policy(g.device_tree("float64"), jnp.float64))
  res = play(g, GTCFRAgent(g, simulations=20), uniform, 64, jax.random.PRNGKey(0), mode="jit")
  assert np.isfinite(res.mean)


@pytest.mark.slow
def test_node_weights_count_the_iterations_each_node_was_in_the_tree():
  """``node_weight`` of a node is the sum of ``t^gamma`` from the update after the expansion
  that added it (found from the shorter searches, which share the key's phases); nodes of
  the initial tree have the whole search's weight. ``value_average="node"`` divides a node's
  summed self-play values by it (the default), ``"search"`` by the whole search's weight."""
  g = jaxgt.load("kuhn_poker")
  src = dt.source_from_game(g)
  s, cap = 6, 11
  ranges, key = gt.root_ranges(src, 0), jax.random.PRNGKey(1)
  initial = np.asarray(jax.jit(lambda: dt.expand(src, dt.init_tree(src, cap, 0), 0))().public)
  trees = [initial]
  for j in range(1, s + 1):
    cfg = gt.make_config(src, simulations=max(j, 1), capacity=cap)
    assert cfg.value_average == "node"
    res = gt.search(src, cfg, evaluators.exact(src), 0, ranges, key)
    trees.append(np.asarray(res.state.tree.public))
  st = res.state
  gamma = cfg.solver.averaging.exponent
  weight = lambda first: sum(float(t) ** gamma for t in range(first, s + 1))  # noqa: E731
  added = 0
  for n in range(cap):
    if trees[s][n] < 0:
      continue
    j = next(j for j in range(s + 1) if trees[j][n] >= 0)  # 0: the initial tree
    first = j + 1
    added += first > 1
    np.testing.assert_allclose(float(st.node_weight[n]), weight(first), rtol=1e-12)
  assert added > 0
  np.testing.assert_allclose(float(st.value_weight), weight(1), rtol=1e-12)
  K = src.num_infostates
  nw = np.repeat(np.asarray(st.node_weight), K)
  want = np.where(nw > 0, np.asarray(st.node_values) / np.where(nw > 0, nw, 1.0), 0.0)
  np.testing.assert_allclose(np.asarray(res.node_values), want, rtol=1e-12)
  cfg = gt.make_config(src, simulations=s, capacity=cap, value_average="search")
  whole = gt.search(src, cfg, evaluators.exact(src), 0, ranges, key)
  np.testing.assert_allclose(np.asarray(whole.node_values),
                             np.asarray(st.node_values) / float(st.value_weight), rtol=1e-12)


def test_query_log_is_a_uniform_sample_of_all_queries():
  """Over many keys, each of a solve's ``n`` leaf queries is in the log of ``L`` with
  frequency ``L / n`` (binomial bound; logging the first ``L`` queries keeps queries 0 .. L -
  1 always), and each logged entry is the query of its index (the full log, ``L >= n``)."""
  g = jaxgt.load("kuhn_poker")
  src = dt.source_from_game(g)
  cap = 11
  tree = _grow(src, cap, 0, 1)
  frontier = int(np.sum(~np.asarray(tree.expanded) & (np.asarray(tree.public) >= 0)))
  iterations, L, B = 10, 4, 2000
  n = iterations * frontier
  assert n > 2 * L
  ev = evaluators.exact(src)
  ranges = gt.root_ranges(src, 0)
  full_cfg = gt.make_config(src, simulations=1, capacity=cap, log_queries=n)
  full = jax.tree_util.tree_map(np.asarray, gt.solve_tree(
      src, full_cfg, ev, tree, ranges, iterations, key=jax.random.PRNGKey(7)).state.queries)
  np.testing.assert_array_equal(np.sort(full.index), np.arange(n))
  order = np.argsort(full.index)  # the full log in query order
  full = full.replace(public=full.public[order], ranges=full.ranges[order],
                      iteration=full.iteration[order], index=full.index[order])
  np.testing.assert_array_equal(full.iteration, np.repeat(np.arange(1, iterations + 1),
                                                          frontier))
  cfg = gt.make_config(src, simulations=1, capacity=cap, log_queries=L)
  keys = jax.random.split(jax.random.PRNGKey(3), B)
  log = jax.tree_util.tree_map(np.asarray, gt.solve_tree(
      src, cfg, ev, tree, np.broadcast_to(ranges, (B,) + ranges.shape), iterations,
      key=keys).state.queries)
  assert np.all(log.count == n)
  # L distinct queries per solve, each entry the query of its index
  assert np.all(np.diff(np.sort(log.index, axis=1), axis=1) > 0) and np.all(log.index >= 0)
  np.testing.assert_array_equal(log.public, full.public[log.index])
  np.testing.assert_array_equal(log.iteration, full.iteration[log.index])
  np.testing.assert_allclose(log.ranges, full.ranges[log.index], atol=1e-12)
  kept = np.bincount(log.index.reshape(-1), minlength=n) / B
  p = L / n
  sd = np.sqrt(p * (1 - p) / B)
  assert np.all(np.abs(kept - p) < 5 * sd), (kept, p)
  # pairs are kept together as often as in a uniform L-subset: L (L - 1) / (n (n - 1))
  both = np.mean(np.any(log.index == 0, 1) & np.any(log.index == n - 1, 1))
  p2 = L * (L - 1) / (n * (n - 1))
  assert abs(both - p2) < 5 * np.sqrt(p2 * (1 - p2) / B)


@pytest.mark.slow
def test_growing_search_logs_a_uniform_sample_of_its_queries():
  """In GT-CFR searches (growing trees, a different number of queries ``n`` per key) the log
  of ``L`` holds queries of the full log (``L >= n``, the same search: the log's draws do not
  steer it), each query ``i`` kept with probability ``L / n``: per index, the count over the
  keys is within a binomial bound of the sum of those probabilities."""
  g = jaxgt.load("kuhn_poker")
  src = dt.source_from_game(g)
  B, L, s = 1500, 2, 4
  keys = jax.random.split(jax.random.PRNGKey(7), B)
  ranges = np.broadcast_to(gt.root_ranges(src, 0), (B, 2, src.num_infostates))
  roots = np.zeros(B, np.int32)
  ev = evaluators.exact(src)
  full_cfg = gt.make_config(src, simulations=s, capacity=11, log_queries=32)
  full = jax.tree_util.tree_map(np.asarray, gt.search(src, full_cfg, ev, roots, ranges,
                                                      keys).state.queries)
  n = full.count
  assert np.all(n <= 32) and np.all(n > L) and len(set(n.tolist())) > 1
  cfg = gt.make_config(src, simulations=s, capacity=11, log_queries=L)
  log = jax.tree_util.tree_map(np.asarray, gt.search(src, cfg, ev, roots, ranges,
                                                     keys).state.queries)
  np.testing.assert_array_equal(log.count, n)
  for b in range(B):
    at = {int(i): j for j, i in enumerate(full.index[b]) if i >= 0}
    rows = [at[int(i)] for i in log.index[b]]
    np.testing.assert_array_equal(log.public[b], full.public[b, rows])
    np.testing.assert_array_equal(log.iteration[b], full.iteration[b, rows])
  p = np.where(np.arange(32)[None, :] < n[:, None], L / n[:, None], 0.0)  # [B, 32]
  kept = np.zeros((B, 32))
  np.put_along_axis(kept, log.index, 1.0, axis=1)
  for i in range(int(n.max())):
    mean, var = p[:, i].sum(), (p[:, i] * (1 - p[:, i])).sum()
    assert abs(kept[:, i].sum() - mean) < 5 * np.sqrt(var) + 1e-9, (i, kept[:, i].sum(), mean)
