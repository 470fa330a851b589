"""GT-CFR on a device tree grown from a device game's rules against the same search on the
enumerated game's tables, and searches on Liar's Dice with two dice each (not enumerable)."""

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


def _reach_evaluator():
  """Leaf values from the leaf's own reaches (the same numbers on both sources' slots)."""
  return evaluators.from_callable(
      lambda leaves: jnp.where(leaves.leaf, leaves.reach[0] - 0.5 * leaves.reach[1], 0.0),
      name="reach")


REACH = _reach_evaluator()


def _pair(name):
  """``(compiled, enumerated source, post-deal public state, device game, rules source, root
  state, slot maps)``; ``maps[p][j]`` is the rules slot of the enumerated root's slot ``j``."""
  comp = jaxgt.load(name)
  esrc = dt.source_from_game(comp)
  players = np.asarray(esrc.tables.player)
  public = int(np.flatnonzero(np.any((players == 0) | (players == 1), axis=1))[0])
  game = make_from_string(name)
  rsrc = rs.rules_source(game, value_scale=esrc.value_scale)
  root = rs.post_deal_root(game)
  info_id = np.asarray(esrc.tables.info_id)[public]
  maps = []
  for p in (0, 1):
    slot = {game.info_string(np.asarray(game.info_key(game.with_private(root, p, k), p)), p): k
            for k in range(game.num_private[p])}
    maps.append(np.array([slot[comp.aug_keys[p][i]] for i in info_id[p] if i >= 0]))
  return comp, esrc, public, game, rsrc, root, maps


def _ranges(K, maps, seed):
  """Random root ranges on both sources' slots."""
  rng = np.random.default_rng(seed)
  enum, rules = np.zeros((2, K)), np.zeros((2, K))
  for p in (0, 1):
    r = rng.dirichlet(np.ones(len(maps[p])))
    enum[p, :len(r)] = r
    rules[p, maps[p]] = r
  return enum, rules


def _close(a, b, tol=1e-6):
  a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
  assert np.max(np.abs(a - b), initial=0.0) <= tol * max(1.0, float(np.max(np.abs(b))))


def _same_root(res_e, res_r, maps, K):
  for p in (0, 1):
    n = len(maps[p])
    _close(np.asarray(res_r.root_values)[p, maps[p]], np.asarray(res_e.root_values)[p, :n])
    _close(np.asarray(res_r.policy[p])[maps[p]], np.asarray(res_e.policy[p])[:n])
    _close(np.asarray(res_r.node_reach)[p, maps[p]], np.asarray(res_e.node_reach)[p, :n])


@pytest.mark.slow
@pytest.mark.parametrize("name", ["kuhn_poker", "leduc_poker"])
def test_full_tree_solve_equals_the_enumerated_source(name):
  comp, esrc, public, game, rsrc, root, maps = _pair(name)
  # the whole game below the deals: every public state a node
  cap = 64 if name == "kuhn_poker" else esrc.num_public_states
  trees = []
  for src, r in ((esrc, public), (rsrc, root)):
    tree = jax.jit(lambda x, s=src: dt.expand_all(s, dt.init_tree(s, cap, x)))(r)
    trees.append(tree)
  assert int(trees[0].num_nodes) == int(trees[1].num_nodes)
  assert not np.any(np.asarray(trees[1].expanded) & ~np.asarray(trees[0].expanded)[:cap])
  enum_r, rules_r = _ranges(esrc.num_infostates, maps, 0)
  out = []
  for src, tree, ranges in ((esrc, trees[0], enum_r), (rsrc, trees[1], rules_r)):
    cfg = gtcfr.make_config(src, simulations=1, capacity=cap)
    out.append(gtcfr.solve_tree(src, cfg, REACH, tree, ranges, 50))
  _same_root(out[0], out[1], maps, esrc.num_infostates)


@pytest.mark.parametrize("name,sims,resolve", [
    pytest.param("kuhn_poker", 30, False, marks=pytest.mark.slow), ("kuhn_poker", 30, True),
    pytest.param("leduc_poker", 40, False, marks=pytest.mark.slow),
    pytest.param("leduc_poker", 40, True, marks=pytest.mark.slow),
    pytest.param("liars_dice(numdice=1)", 30, False, marks=pytest.mark.slow)])
def test_growing_search_equals_the_enumerated_source(name, sims, resolve):
  comp, esrc, public, game, rsrc, root, maps = _pair(name)
  K = esrc.num_infostates
  enum_r, rules_r = _ranges(K, maps, 1)
  kw_e, kw_r = {}, {}
  if resolve:  # re-solving for player 0 with the gadget: the opponent's values mapped too
    opp = np.random.default_rng(2).normal(size=len(maps[1]))
    opp_e, opp_r = np.zeros(K), np.zeros(K)
    opp_e[:len(opp)], opp_r[maps[1]] = opp, opp
    kw_e, kw_r = dict(player=0, opp_values=opp_e), dict(player=0, opp_values=opp_r)
  # PUCT scores that tie exactly (e.g. two unvisited actions of equal value) may round
  # apart differently in the two sources' summation orders and send a simulation down
  # another branch (Leduc with the gadget, key 3, simulation 15): the keys here do not
  key = jax.random.key(0)
  out = []
  for src, r, ranges, kw in ((esrc, public, enum_r, kw_e), (rsrc, root, rules_r, kw_r)):
    cfg = gtcfr.make_config(src, simulations=sims, capacity=1 + 6 * (sims + 2))
    out.append(gtcfr.search(src, cfg, REACH, r, ranges, key, **kw))
  res_e, res_r = out
  # the same trees grew (node order may differ): as many nodes, histories and leaf queries
  assert int(res_e.state.tree.num_nodes) == int(res_r.state.tree.num_nodes) > 1 + 2
  assert int(res_e.state.num_queries) == int(res_r.state.num_queries)
  assert int(res_e.state.history_visits) == int(res_r.state.history_visits)
  _same_root(res_e, res_r, maps, K)


def test_search_on_liars_dice_two_dice_each():
  """LD(2,2) (about 10^9.6 histories): a GT-CFR search from the first public state after the
  rolls, its root grown from the rules; the rolls' chance reach is the closed form."""
  game = make_from_string("liars_dice(numdice=2)")
  src = rs.rules_source(game)
  assert (src.num_histories, src.num_infostates, src.num_children) == (21 * 21, 21, 25)
  root = rs.post_deal_root(game)
  rows = src.rows(src.root_key(root))
  # an unordered roll of two dice: 1/36 a pair, 2/36 two faces; the two players' independent
  # (the slots' order is the game's, so compared as sorted)
  rolls = np.array([(1.0 if a == b else 2.0) / 36 for a in range(6) for b in range(a, 6)])
  reach = np.asarray(rows.chance_reach).reshape(21, 21)
  np.testing.assert_allclose(np.sort(reach.sum(1)), np.sort(rolls), atol=1e-12)
  np.testing.assert_allclose(reach, np.outer(reach.sum(1), reach.sum(0)), atol=1e-12)
  ranges = gtcfr.root_ranges(src, root)
  cfg = gtcfr.make_config(src, simulations=20)
  res = gtcfr.search(src, cfg, REACH, root, ranges, jax.random.key(0))
  tree = res.state.tree
  assert int(tree.num_nodes) > 1 + 25  # the simulations grew the tree past the root's children
  assert int(res.state.num_queries) > 0
  legal = np.asarray(tree.legal[0, 0])  # [K, A] player 0 acts at the root
  policy = np.asarray(res.policy[0])[:src.num_infostates]
  assert np.all(legal[:, :24]) and not np.any(legal[:, 24])  # every bid; no "liar" first
  np.testing.assert_allclose(policy.sum(1), 1.0, atol=1e-9)
  assert np.all(policy >= 0) and np.all(policy[~legal] == 0)
  assert np.all(np.isfinite(np.asarray(res.root_values)))
  # children of the root: one per bid, the labels of their nodes
  kids = np.asarray(tree.children[0])
  np.testing.assert_array_equal(np.asarray(tree.public)[kids[:24]], np.arange(24))


def test_bad_input_is_refused():
  with pytest.raises(TypeError, match="device game"):
    rs.rules_source(jaxgt.load("kuhn_poker"))  # an enumerated game: source_from_game
  with pytest.raises(ValueError, match="factorisation"):
    rs.rules_source(make_from_string("goofspiel(num_cards=3)"))
  game = make_from_string("kuhn_poker")
  src = rs.rules_source(game)
  cfg = gtcfr.make_config(src, simulations=2)
  ev = _reach_evaluator()
  ranges = np.full((2, 3), 1 / 3)
  with pytest.raises(ValueError, match="private deals"):
    gtcfr.search(src, cfg, ev, game.init(), ranges, jax.random.key(0))
  with pytest.raises(ValueError, match="state of kuhn"):
    gtcfr.search(src, cfg, ev, 0, ranges, jax.random.key(0))
  root = rs.post_deal_root(game)
  over = game.step(game.step(root, 0), 0)  # pass, pass: the showdown
  with pytest.raises(ValueError, match="terminal"):
    gtcfr.search(src, cfg, ev, over, ranges, jax.random.key(0))
  with pytest.raises(ValueError, match=r"shape \(4,\)"):  # a batch of ranges, one root state
    gtcfr.search(src, cfg, ev, root, np.stack([ranges] * 4), jax.random.key(0))
  with pytest.raises(ValueError, match="compiled game"):
    evaluators.exact(src)
  with pytest.raises(ValueError, match="enumerated source"):
    dt.public_path(src, 0)


@pytest.mark.slow
def test_branch_and_batch_match_the_enumerated_source():
  """A search growing the single branch to a later decision first (re-solving's tree: the path
  is the actions from the root with a rules source) and a batch of two searches."""
  comp, esrc, public, game, rsrc, root, maps = _pair("kuhn_poker")
  K = esrc.num_infostates
  tables = esrc.tables
  kids = [int(c) for c in np.asarray(tables.children[public]) if c >= 0]
  bet = next(c for c in kids if int(np.asarray(tables.action[c])[0]) == 1)
  D = esrc.max_public_depth + 1
  path_e = np.full(D, -1, np.int32)
  path_e[:2] = public, bet
  path_r = np.full(rsrc.max_public_depth + 1, -1, np.int32)
  path_r[:2] = 0, 1
  enum_r, rules_r = _ranges(K, maps, 4)
  cfg_e = gtcfr.make_config(esrc, simulations=20, capacity=64)
  cfg_r = gtcfr.make_config(rsrc, simulations=20, capacity=64)
  key = jax.random.key(5)
  res_e = gtcfr.search(esrc, cfg_e, REACH, public, enum_r, key, path=path_e)
  res_r = gtcfr.search(rsrc, cfg_r, REACH, root, rules_r, key, path=path_r)
  focus = int(res_r.state.focus)
  assert int(res_r.state.tree.public[focus]) == 1 and int(res_r.state.tree.parent[focus]) == 0
  assert int(res_e.state.tree.public[int(res_e.state.focus)]) == bet
  _same_root(res_e, res_r, maps, K)
  # a batch: both roots the same state, two keys
  keys = jax.random.split(jax.random.key(6), 2)
  batch_root = jax.tree_util.tree_map(lambda x: jnp.stack([x, x]), root)
  ranges = np.stack([rules_r, np.roll(rules_r, 1, axis=1)])
  batch = gtcfr.search(rsrc, cfg_r, REACH, batch_root, ranges, keys)
  for b in range(2):
    one = gtcfr.search(rsrc, cfg_r, REACH, root, ranges[b], keys[b])
    _close(np.asarray(batch.root_values)[b], np.asarray(one.root_values), 1e-9)
    _close(np.asarray(batch.policy[0])[b], np.asarray(one.policy[0]), 1e-9)


@pytest.mark.slow
def test_resolving_on_liars_dice_two_dice_each():
  """Re-solving for player 1 at LD(2,2)'s first bid with the gadget: the opponent's average
  gadget range is a follow probability per private state and the policy is valid."""
  game = make_from_string("liars_dice(numdice=2)")
  src = rs.rules_source(game)
  root = game.step(rs.post_deal_root(game), 3)  # player 0's first bid; player 1 to act
  rng = np.random.default_rng(0)
  ranges = gtcfr.root_ranges(src, root, [rng.dirichlet(np.ones(21)) for _ in (0, 1)])
  cfg = gtcfr.make_config(src, simulations=10)
  opp = rng.normal(size=21) * 0.01
  res = gtcfr.search(src, cfg, REACH, root, ranges, jax.random.key(1), player=1, opp_values=opp)
  gadget_range = np.asarray(res.node_reach)[0, :21]
  assert np.all(gadget_range >= -1e-12) and np.all(gadget_range <= 1 + 1e-9)
  assert np.all(np.isfinite(np.asarray(res.root_values)))
  policy = np.asarray(res.policy[1])[:21]
  legal = np.asarray(res.state.tree.legal[1, 0])[:21]
  assert legal[:, 24].all() and not legal[:, :4].any()  # "liar", or a bid above the first
  np.testing.assert_allclose(policy.sum(1), 1.0, atol=1e-9)
  assert np.all(policy[~legal] == 0)
