"""GT-CFR's regret phase on factored ranges against the same search on the tree's history form:
the growing search, re-solving with the gadget, other CFR rules and fixed-tree solves give the
same values, policies, reaches and counts."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxgt
from jaxgt.games import make_from_string
from jaxgt.search import device_tree as dt
from jaxgt.search import evaluator as evaluators
from jaxgt.search import gtcfr
from jaxgt.search import rules_source as rs

# leaf values from the leaves' own reaches and chance (each form must pass the same beliefs)
REACH = evaluators.from_callable(
    lambda leaves: jnp.where(leaves.leaf, leaves.reach[0] - 0.5 * leaves.reach[1]
                             + 3.0 * leaves.chance, 0.0), name="reach")


def _close(a, b, tol=1e-9):
  a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
  assert a.shape == b.shape
  assert np.max(np.abs(a - b), initial=0.0) <= tol * max(1.0, float(np.max(np.abs(b))))


def _same(res_h, res_f):
  st_h, st_f = res_h.state, res_f.state
  for a, b in ((st_h.tree.num_nodes, st_f.tree.num_nodes), (st_h.tree.public, st_f.tree.public),
               (st_h.num_queries, st_f.num_queries),
               (st_h.history_visits, st_f.history_visits)):
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
  for p in (0, 1):
    _close(res_f.policy[p], res_h.policy[p])
  _close(res_f.root_values, res_h.root_values)
  _close(res_f.node_values, res_h.node_values)
  _close(res_f.node_reach, res_h.node_reach)
  _close(res_f.root_ranges, res_h.root_ranges)
  _close(st_f.joint_reach, st_h.joint_reach)
  _close(st_f.q, st_h.q)


def _search(name, form, sims, key, solver=None, **kw):
  game = make_from_string(name)
  src = rs.rules_source(game)
  root = rs.post_deal_root(game)
  rng = np.random.default_rng(3)
  ranges = gtcfr.root_ranges(src, root, [rng.dirichlet(np.ones(k)) for k in game.num_private])
  cfg = gtcfr.make_config(src, simulations=sims, tree_form=form, solver=solver,
                          log_queries=4)
  return gtcfr.search(src, cfg, REACH, root, ranges, key, **kw)


@pytest.mark.parametrize("resolve", [pytest.param(False, marks=pytest.mark.slow), True])
def test_growing_search_equals_the_history_form(resolve):
  """Leduc (card removal at the board card: chance between public states), SoG(30, 1)."""
  kw = {}
  if resolve:
    kw = dict(player=1, opp_values=np.random.default_rng(4).normal(size=6) * 0.1)
  key = jax.random.key(2)
  res_h = _search("leduc_poker", "history", 30, key, **kw)
  res_f = _search("leduc_poker", "factored", 30, key, **kw)
  assert int(res_f.state.tree.num_nodes) > 20
  _same(res_h, res_f)
  # the query logs sampled the same leaf beliefs
  np.testing.assert_array_equal(np.asarray(res_h.state.queries.public),
                                np.asarray(res_f.state.queries.public))
  _close(res_f.state.queries.ranges, res_h.state.queries.ranges)


@pytest.mark.parametrize("solver", ["dcfr", "pcfr+"])
def test_other_rules_equal_the_history_form(solver):
  """Alternating discounted CFR and predictive CFR+ on Kuhn."""
  s = jaxgt.solvers.cfr.make_solver(solver, alternating=True, dtype="float64",
                                    compensated=False, exact_ties=False)
  key = jax.random.key(0)
  _same(_search("kuhn_poker", "history", 20, key, solver=s),
        _search("kuhn_poker", "factored", 20, key, solver=s))


@pytest.mark.parametrize("name", ["kuhn_poker", pytest.param("leduc_poker",
                                                             marks=pytest.mark.slow)])
def test_fixed_tree_solve_equals_the_history_form(name):
  """solve_tree on the game's whole tree below the deals (a batch of two ranges, one tree)."""
  game = make_from_string(name)
  src = rs.rules_source(game)
  root = rs.post_deal_root(game)
  cap = 64 if name == "kuhn_poker" else 600
  tree = jax.jit(lambda r: dt.expand_all(src, dt.init_tree(src, cap, r)))(root)
  assert not bool(jnp.any(~tree.expanded[:int(tree.num_nodes)]
                          & dt.jax.vmap(lambda n: dt.can_expand(tree, n))(
                              jnp.arange(int(tree.num_nodes)))))
  rng = np.random.default_rng(5)
  ranges = np.stack([gtcfr.root_ranges(src, root, [rng.dirichlet(np.ones(k))
                                                    for k in game.num_private])
                     for _ in range(2)])
  out = []
  for form in ("history", "factored"):
    cfg = gtcfr.make_config(src, simulations=1, capacity=cap, tree_form=form)
    out.append(gtcfr.solve_tree(src, cfg, REACH, tree, ranges, 25))
  _same(*out)
  # the full tree's root values are the game's: player 0's and 1's sum to zero against the
  # chance-weighted ranges (zero-sum, no leaves)
  res = out[1]
  total = [np.sum(np.asarray(res.root_values)[:, p] * ranges[:, p], axis=-1) for p in (0, 1)]
  _close(total[0], -total[1])


def test_factored_form_needs_a_rules_source():
  comp = jaxgt.load("kuhn_poker")
  src = dt.source_from_game(comp)
  with pytest.raises(ValueError, match="private pairs"):
    gtcfr.make_config(src, simulations=2, tree_form="factored")
  with pytest.raises(ValueError, match="tree_form"):
    gtcfr.make_config(src, simulations=2, tree_form="sequence")


def _equivariant(pbs):
  """Network-scale values from the ranges alone, the same function of every private state
  (so neither player's slot order matters in the two layouts)."""
  r = pbs.ranges
  other = jnp.flip(r, axis=-2)
  return 0.3 * r - 0.7 * r ** 2 + 0.5 * jnp.sum(other ** 2, axis=-1, keepdims=True)


def test_network_adapter_equals_the_compiled_games():
  """The network adapter on a tree grown from Leduc's rules (PBSs of representative states,
  values scaled by the pairs' chance given the board) gives the depth-limited solve the
  enumerated source's adapter gives, for the same network function (leaves three public
  levels down: below the first round's chance node too)."""
  from jaxgt.nets import encoding as enc_lib
  from jaxgt.nets import gtcfr_evaluator as ge
  from jaxgt.nets.factored_encoding import FactoredEncoding
  import test_rules_source as trs
  comp, esrc, public, game, rsrc, root, maps = trs._pair("leduc_poker")
  K = esrc.num_infostates
  enum_r, rules_r = trs._ranges(K, maps, 7)
  fn = lambda state, pbs: (_equivariant(pbs), None)  # noqa: E731
  out = []
  for src, r0, ranges, enc in ((esrc, public, enum_r, enc_lib.build_encoding(comp)),
                               (rsrc, root, rules_r, FactoredEncoding(game))):
    tree = jax.jit(lambda r, s=src: dt.expand_all(s, dt.init_tree(s, 64, s.root_key(r)),
                                                 depth_limit=3))(r0)
    cfg = gtcfr.make_config(src, simulations=1, capacity=64)
    ev = ge.pbs_evaluator(src, enc, fn, name="f")
    out.append(gtcfr.solve_tree(src, cfg, ev, tree, ranges, 20))
  res_e, res_r = out
  assert int(res_e.state.tree.num_nodes) == int(res_r.state.tree.num_nodes) > 20
  assert int(res_e.state.num_queries) == int(res_r.state.num_queries) > 0
  trs._same_root(res_e, res_r, maps, K)
  with pytest.raises(ValueError, match="FactoredEncoding"):
    ge.pbs_evaluator(rsrc, enc_lib.build_encoding(comp), fn)


# the enumerated source with -m slow (the default run's time budget)
@pytest.mark.parametrize("rules", [True, pytest.param(False, marks=pytest.mark.slow)])
def test_an_expected_value_head_values_leaves_as_its_counterfactual_values_do(rules):
  """A CVPN whose head predicts expected values hands them to the search directly; the
  depth-limited solve equals the one from its counterfactual values divided by the masses,
  on the tree grown from the rules and on the enumerated source."""
  from jaxgt.nets import cvpn
  from jaxgt.nets import encoding as enc_lib
  from jaxgt.nets import gtcfr_evaluator as ge
  from jaxgt.nets.factored_encoding import FactoredEncoding
  import test_rules_source as trs
  comp, esrc, public, game, rsrc, root, maps = trs._pair("leduc_poker")
  enum_r, rules_r = trs._ranges(esrc.num_infostates, maps, 7)
  sources = [(rsrc, root, rules_r, FactoredEncoding(game))] if rules else [
      (esrc, public, enum_r, enc_lib.build_encoding(comp))]
  for src, r0, ranges, enc in sources:
    model = cvpn.CVPN(enc, hidden=(32,), value_space="expected")
    params = cvpn.init(model, jax.random.PRNGKey(3))
    tree = jax.jit(lambda r, s=src: dt.expand_all(s, dt.init_tree(s, 64, s.root_key(r)),
                                                 depth_limit=3))(r0)
    cfg = gtcfr.make_config(src, simulations=1, capacity=64)

    def scaled(state, pbs, model=model):
      out = model.apply(state, pbs)
      return out.values, out.policy

    direct = gtcfr.solve_tree(src, cfg, ge.cvpn_evaluator(src, model, params), tree, ranges, 20)
    via_mass = gtcfr.solve_tree(src, cfg, ge.pbs_evaluator(src, enc, scaled, init=lambda: params),
                                tree, ranges, 20)
    assert int(direct.state.num_queries) > 0
    assert float(np.max(np.abs(np.asarray(direct.root_values)))) > 1e-3
    for p in (0, 1):
      _close(direct.policy[p], via_mass.policy[p], 1e-4)
    _close(direct.root_values, via_mass.root_values, 1e-4)
  with pytest.raises(ValueError, match="value_space"):
    ge.pbs_evaluator(rsrc, FactoredEncoding(game), scaled, value_space="cfv")
