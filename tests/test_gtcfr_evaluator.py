"""The network as GT-CFR's leaf evaluator (jaxgt.nets.gtcfr_evaluator) against the
reference depth-limited solve of host-extracted subgames (tests/reference_leaf.py), and the
query / target maps."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxgt
from jaxgt.core import public_tree as ptm
from jaxgt.core import sequence_form as sf
from jaxgt.nets import cvpn
from jaxgt.nets import encoding as enc_lib
from jaxgt.nets import gtcfr_evaluator as ge
from jaxgt.search import device_tree as dt
from jaxgt.search import evaluator as evaluators
from jaxgt.search import gtcfr as gt
from jaxgt.search import regret_phase
import reference_leaf as lf
import reference_subgame as sgm


@functools.lru_cache(maxsize=None)
def _game(name):
  g = jaxgt.load(name)
  return g, enc_lib.build_encoding(g), dt.source_from_game(g)


def _random_policy(tree, rng):
  out = []
  for p in (0, 1):
    legal = np.asarray(tree.players[p].legal)
    x = rng.dirichlet(np.ones(tree.num_actions), size=legal.shape[0]) * legal
    out.append(jnp.asarray(x / x.sum(-1, keepdims=True)))
  return tuple(out)


def _grow(src, capacity, root, depth_limit=None):
  return jax.jit(lambda r: dt.expand_all(src, dt.init_tree(src, capacity, r), depth_limit))(root)


def _oracle(enc, src, policy, chunk=None):
  """The evaluator fed by exact continuation CFVs of ``policy`` (no prior)."""
  fn = cvpn.continuation_cfvs(enc, policy)
  return ge.pbs_evaluator(src, enc, lambda state, pbs: (fn(pbs), None), name="oracle",
                          chunk=chunk)


@pytest.mark.parametrize("name,depth", [("kuhn_poker", 4),
                                        pytest.param("leduc_poker", 4, marks=pytest.mark.slow)])
def test_exact_cfvs_through_adapter_equal_leaf_continuation(name, depth):
  """solve_tree on a depth-limited device tree with exact continuation CFVs through the
  adapter == the reference depth-limited solve with ``reference_leaf.continuation``."""
  g, enc, src = _game(name)
  pol = _random_policy(g.device_tree("float64"), np.random.default_rng(3))
  cap = int(np.sum(enc.public_tree.depth <= depth))  # exactly the depth-limited tree
  tree = _grow(src, cap, 0, depth)
  assert int(tree.num_nodes) == cap < src.num_public_states
  cfg = gt.make_config(src, simulations=1, capacity=cap)
  iterations = 60
  res = gt.solve_tree(src, cfg, _oracle(enc, src, pol), tree, gt.root_ranges(src, 0), iterations)
  solver = jaxgt.cfr_plus(alternating=False, dtype="float64")
  sub = sgm.extract(g, 0, depth_limit=depth)
  assert sub.num_leaves > 0
  st = lf.solve(sub, solver, sub.root_weights(np.ones(1), np.ones(1)), lf.continuation(sub, pol),
                iterations)
  sub_avg = solver.average_policy(sub.compiled.device_tree("float64"), st.cfr)
  K = src.num_infostates
  checked = 0
  for p in (0, 1):
    pos = {int(f): k for k, f in enumerate(sub.full_infostate[p]) if f >= 0}
    ai = np.asarray(tree.acting_info[p]).reshape(-1)
    m = (ai >= 0) & np.repeat(np.asarray(tree.expanded), K)
    mine = np.asarray(res.policy[p])[m]
    ref = np.asarray(sub_avg[p])[[pos[int(i)] for i in ai[m]]]
    np.testing.assert_allclose(mine, ref[:, :mine.shape[1]], atol=1e-9)
    checked += len(mine)
  assert checked > 0
  # Valuing only the nodes with leaves, two at a time, gives the same search.
  chunked = gt.solve_tree(src, cfg, _oracle(enc, src, pol, chunk=2), tree, gt.root_ranges(src, 0),
                          iterations)
  for p in (0, 1):
    np.testing.assert_allclose(np.asarray(chunked.policy[p]), np.asarray(res.policy[p]),
                               atol=1e-12)
  # The policy is not uniform: the leaf values mattered.
  assert float(np.max(np.abs(np.asarray(res.policy[0])[np.asarray(tree.acting_info[0]).reshape(-1)
                                                        >= 0] - 0.5))) > 1e-3


def test_network_evaluator_shapes_masks_and_params_as_data():
  g, enc, src = _game("leduc_poker")
  model = cvpn.CVPN(enc, hidden=(16,))
  params = cvpn.init(model, jax.random.PRNGKey(0))
  ev = ge.cvpn_evaluator(src, model, params)
  assert ev.init() is params
  with pytest.raises(ValueError, match="evaluator_state"):
    ge.cvpn_evaluator(src, model).init()
  cap = 14
  tree = _grow(src, cap, 0, 4)  # 10 nodes: 4 padded ones
  cfg = gt.make_config(src, simulations=1, capacity=cap)
  forest = regret_phase.tree_forest(src, tree)
  N, M = cap, src.num_histories
  fw_own = jnp.ones((2, N * M))
  leaves = evaluators.LeafInput(tree=tree, leaf=forest.leaf.reshape(N, M),
                                reach=fw_own.reshape(2, N, M),
                                chance=jnp.asarray(tree.chance_reach),
                                root_ranges=jnp.zeros((2, enc.k_max)))
  (values, prior), state = jax.jit(ev.apply)(params, leaves)
  assert values.shape == (2, N, M) and prior.shape == (2, N, src.num_infostates, src.num_actions)
  leaf = np.asarray(leaves.leaf)
  assert np.all(np.asarray(values)[:, ~leaf] == 0) and np.any(np.asarray(values)[:, leaf] != 0)
  legal = np.asarray(tree.legal)
  p_ = np.asarray(prior)
  assert np.all(p_[~legal] == 0)
  frontier = ~np.asarray(tree.expanded) & (np.asarray(tree.public) >= 0)
  acting = legal.any(-1) & frontier[None, :, None]
  np.testing.assert_allclose(p_.sum(-1)[acting], 1.0, atol=1e-5)
  # Padded nodes (not created) carry no values.
  assert np.all(np.asarray(values)[:, np.asarray(tree.public) < 0] == 0)
  # Parameters are data: two parameter sets, one compilation, different searches.
  ranges = gt.root_ranges(src, 0)
  a = gt.solve_tree(src, cfg, ev, tree, ranges, 3, evaluator_state=params)
  other = jax.tree_util.tree_map(lambda x: x + 0.3, params)
  b = gt.solve_tree(src, cfg, ev, tree, ranges, 3, evaluator_state=other)
  assert not np.allclose(np.asarray(a.root_values), np.asarray(b.root_values))
  with pytest.raises(ValueError, match="encoding is for"):
    ge.cvpn_evaluator(src, cvpn.CVPN(_game("kuhn_poker")[1]))


@pytest.mark.slow
def test_query_pbs_are_the_leaf_beliefs():
  """Queries of the first iteration (uniform strategies) carry the leaf public states'
  beliefs under the uniform policy (core.public_tree.ranges, an independent path)."""
  g, enc, src = _game("leduc_poker")
  cap = 40
  tree = _grow(src, cap, 0, 5)
  cfg = gt.make_config(src, simulations=1, capacity=cap, log_queries=64)
  pol = sf.uniform_policy(g.device_tree("float64"), jnp.float64)
  res = gt.solve_tree(src, cfg, _oracle(enc, src, pol), tree, gt.root_ranges(src, 0), 1,
                      key=jax.random.PRNGKey(0))
  pbs, valid = ge.query_pbs(enc, src, res.state.queries)
  v = np.asarray(valid)
  frontier = (~np.asarray(tree.expanded) & (np.asarray(tree.public) >= 0)
              & ~enc.public_tree.terminal_public[np.maximum(np.asarray(tree.public), 0)])
  assert v.sum() == frontier.sum() > 0
  ids = np.asarray(pbs.public)[v]
  assert sorted(ids.tolist()) == sorted(np.asarray(tree.public)[frontier].tolist())
  flat = ptm.ranges(enc.public_tree, pol, normalize=False)
  want = np.asarray(enc_lib.gather_ranges(enc, ids, flat))
  want = want / want.sum(-1, keepdims=True)
  got = np.asarray(pbs.ranges)[v]
  np.testing.assert_allclose(got, want, atol=1e-12)
  enc_lib.make_pbs(enc, ids, got)  # valid PBSs


@pytest.mark.slow
def test_search_targets_are_network_scale_values():
  """One iteration (uniform CFR+ iterate): root targets equal the exact network-scale
  CFVs of the uniform policy at the root PBS (encoding.exact_cfvs)."""
  g, enc, src = _game("leduc_poker")
  gtree = g.device_tree("float64")
  pol = sf.uniform_policy(gtree, jnp.float64)
  pt = enc.public_tree
  root = int(np.flatnonzero((pt.depth == 5) & ~pt.terminal_public)[0])
  smap = ge.slot_map(src, enc)
  assert smap.leaf_ok.all()  # no public state holds internal non-terminal histories
  rng = np.random.default_rng(0)
  ranges = gt.root_ranges(src, root, [rng.dirichlet(np.ones(len(pt.infostates[p][root])))
                                      for p in (0, 1)])
  below = np.zeros(pt.num_public_states, bool)
  below[root] = True
  for s in np.argsort(pt.depth):  # parents first
    below[s] |= pt.parent[s] >= 0 and below[pt.parent[s]]
  cap = int(below.sum())
  tree = _grow(src, cap, root)
  assert int(tree.num_nodes) == cap
  cfg = gt.make_config(src, simulations=1, capacity=cap)
  res = gt.solve_tree(src, cfg, _oracle(enc, src, pol), tree, ranges, 1)
  pbs, values, policy = ge.search_targets(enc, src, res, ranges)
  assert int(pbs.public) == root
  hv = ptm.history_values(gtree, pol)
  want = enc_lib.exact_cfvs(enc, pbs.public, pbs.ranges,
                            enc_lib.history_utilities(enc, pbs.public, hv))
  np.testing.assert_allclose(np.asarray(values), np.asarray(want), atol=1e-12)
  assert float(np.abs(np.asarray(want)).max()) > 1e-3
  legal = enc.legal[root]
  np.testing.assert_allclose(np.asarray(policy)[legal.any(-1)].sum(-1), 1.0, atol=1e-12)
  assert np.all(np.asarray(policy)[~legal] == 0)
  # Default ranges: the root reach of the result.
  pbs2, _, _ = ge.search_targets(enc, src, res)
  np.testing.assert_allclose(np.asarray(pbs2.ranges), np.asarray(pbs.ranges), atol=1e-12)


def test_slot_maps_permute_both_ways():
  """A non-identity slot order (device slot k = encoding slot K_s - 1 - k) maps values,
  ranges and policies there and back (the registered games' orders coincide)."""
  _, enc, src = _game("kuhn_poker")
  smap = ge.slot_map(src, enc)
  np.testing.assert_array_equal(smap.to_encoding[enc.mask], smap.to_device[enc.mask])
  P, _, K = smap.to_encoding.shape
  rev = np.where(enc.mask, enc.mask.sum(-1, keepdims=True) - 1 - np.arange(K), -1).astype(np.int32)
  fake = ge.SlotMap(source=src, encoding=enc, to_encoding=rev, to_device=rev,
                    leaf_ok=smap.leaf_ok)
  rng = np.random.default_rng(0)
  public = jnp.asarray([3, 5, 3])
  x = jnp.asarray(rng.random((3, 2, K, 4))) * enc.mask[np.asarray(public)][..., None]
  y = ge.to_encoding_order(fake, public, x)
  for b, s in enumerate(np.asarray(public)):
    for p in (0, 1):
      n = int(enc.mask[s, p].sum())
      np.testing.assert_array_equal(np.asarray(y)[b, p, :n], np.asarray(x)[b, p, :n][::-1])
  np.testing.assert_array_equal(np.asarray(ge.to_device_order(fake, public, y)), np.asarray(x))


@pytest.mark.slow  # compiling a vmapped search takes about a minute on the loaded machine
def test_batched_network_search_gives_valid_queries_and_targets():
  """The contract path of self-play: a vmapped GT-CFR search valued by the network, its
  logged queries and root targets, all valid PBSs in the network's layout."""
  g, enc, src = _game("kuhn_poker")
  model = cvpn.CVPN(enc, hidden=(8,))
  ev = ge.cvpn_evaluator(src, model, cvpn.init(model, jax.random.PRNGKey(0)))
  cfg = gt.make_config(src, simulations=4, log_queries=8)
  roots = np.array([3, 3, 4])
  rng = np.random.default_rng(1)
  ranges = np.stack([gt.root_ranges(src, int(s), [rng.dirichlet(np.ones(len(enc.public_tree.infostates[p][s])))
                                                  for p in (0, 1)]) for s in roots])
  res = gt.search(src, cfg, ev, roots, ranges, jax.random.split(jax.random.PRNGKey(0), 3),
                  evaluator_state=ev.init())
  pbs, values, policy = ge.search_targets(enc, src, res, ranges)
  assert values.shape == (3, 2, enc.k_max) and policy.shape == (3, 2, enc.k_max, enc.num_actions)
  np.testing.assert_array_equal(np.asarray(pbs.public), roots)
  enc_lib.make_pbs(enc, np.asarray(pbs.public), np.asarray(pbs.ranges))
  assert np.all(np.asarray(values)[~enc.mask[roots]] == 0)
  q, valid = ge.query_pbs(enc, src, res.state.queries)
  v = np.asarray(valid)
  assert q.ranges.shape == (3, 8, 2, enc.k_max) and v.any()
  np.testing.assert_array_equal(v.sum(1), np.minimum(np.asarray(res.state.queries.count), 8))
  enc_lib.make_pbs(enc, np.asarray(q.public)[v], np.asarray(q.ranges)[v])
