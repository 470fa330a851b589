"""The fixed-capacity device public tree against the compiled public tree."""

import jax
import numpy as np
import pytest

import jaxgt
from jaxgt.core.game_tree import NO_INDEX
from jaxgt.core.public_tree import build_public_tree
from jaxgt.search import device_tree as dt


def _full_tree(name):
  g = jaxgt.load(name)
  pt = build_public_tree(g)
  src = dt.source_from_game(g)
  P = pt.num_public_states
  tree = jax.jit(lambda r: dt.expand_all(src, dt.init_tree(src, P, r)))(0)
  return g, pt, src, jax.tree_util.tree_map(np.asarray, tree)


@pytest.mark.parametrize("name", ["kuhn_poker", "leduc_poker"])
def test_expanded_tree_is_the_public_tree(name):
  """Expanding everything from the root reproduces the compiled public tree: the same
  public states and parents, each node's histories, parent links between history
  slots, child slots, information states and legal actions."""
  g, pt, src, tree = _full_tree(name)
  P, M = pt.num_public_states, src.num_histories
  t = g.tree
  assert int(tree.num_nodes) == P
  pub, par = tree.public, tree.parent
  assert sorted(pub.tolist()) == list(range(P))
  for n in range(P):
    assert pt.parent[pub[n]] == (pub[par[n]] if par[n] >= 0 else NO_INDEX)
    assert tree.depth[n] == pt.depth[pub[n]]
    hs = tree.history[n][tree.history[n] >= 0]
    np.testing.assert_array_equal(np.sort(hs), np.sort(pt.histories[pub[n]]))
    for p in (0, 1):
      ids = tree.info_id[p, n][tree.info_id[p, n] >= 0]
      np.testing.assert_array_equal(ids, pt.infostates[p][pub[n]])
    kids = tree.children[n][tree.children[n] >= 0]
    assert sorted(pub[kids].tolist()) == sorted(pt.children[pub[n]])
  flat = tree.history.reshape(-1)
  ps = tree.parent_slot.reshape(-1)
  m = (flat >= 0) & (ps >= 0)
  np.testing.assert_array_equal(flat[ps[m]], t.parent[flat[m]])
  assert np.sum((flat >= 0) & (ps < 0)) == 1  # only the game's root history has no parent
  kids = tree.slot_children.reshape(P * M, -1)
  valid = flat >= 0
  want = np.asarray(t.children)[flat[valid]]
  got = np.where(kids[valid] >= 0, flat[np.maximum(kids[valid], 0)], NO_INDEX)
  np.testing.assert_array_equal(got, want)
  for p in (0, 1):  # augmented information states and legal actions of acting histories
    info = tree.info[p].reshape(-1)
    node = np.arange(P * M) // M
    nonterm = valid & (t.player[np.maximum(flat, 0)] != -4)
    np.testing.assert_array_equal(tree.info_id[p][node[nonterm], info[nonterm]],
                                  pt.aug[p][flat[nonterm]])
    acting = valid & (t.player[np.maximum(flat, 0)] == p)
    np.testing.assert_array_equal(tree.acting_info[p][node[acting], info[acting]],
                                  t.infostate[flat[acting]])
    np.testing.assert_array_equal(tree.legal[p][node[acting], info[acting]],
                                  np.asarray(t.children)[flat[acting], :t.num_actions] >= 0)


def test_expansion_order_capacity_and_noops():
  """Node i is created by the expansions in order; a full tree or a terminal node does not
  expand; children stay UNEXPANDED until their node is expanded."""
  g = jaxgt.load("kuhn_poker")
  pt = build_public_tree(g)
  src = dt.source_from_game(g)
  expand = jax.jit(lambda t, n: dt.expand(src, t, n))
  init = jax.jit(lambda r: dt.init_tree(src, 4, r))
  tree = init(0)
  assert int(tree.num_nodes) == 1 and not bool(tree.expanded[0])
  assert np.all(np.asarray(tree.children) == dt.UNEXPANDED)
  tree = expand(tree, 0)
  k = len(pt.children[0])
  assert int(tree.num_nodes) == 1 + k and bool(tree.expanded[0])
  np.testing.assert_array_equal(np.asarray(tree.public)[1:1 + k], pt.children[0])
  assert int(expand(tree, 0).num_nodes) == 1 + k  # already expanded: no-op
  tree = expand(tree, 1)  # node 1's children are node 1 + k onwards
  kids = pt.children[int(tree.public[1])]
  np.testing.assert_array_equal(np.asarray(tree.public)[1 + k:1 + k + len(kids)], kids)
  assert int(tree.num_nodes) == 1 + k + len(kids) <= 4
  n = int(tree.num_nodes)
  grown = expand(tree, n - 1)  # its children do not fit in the capacity: no-op
  assert int(grown.num_nodes) == n and not bool(grown.expanded[n - 1])
  terminal = [ps for ps in range(pt.num_public_states) if pt.terminal_public[ps]][0]
  leaf = init(terminal)
  assert not bool(dt.can_expand(leaf, 0))
  assert int(expand(leaf, 0).num_nodes) == 1


def test_public_path_and_branch():
  """The root-to-state path of a deep Leduc public state and the single-branch tree."""
  g = jaxgt.load("leduc_poker")
  pt = build_public_tree(g)
  src = dt.source_from_game(g)
  s = int(np.flatnonzero((pt.depth == 7) & ~pt.terminal_public)[3])
  path = np.asarray(jax.jit(lambda x: dt.public_path(src, x))(s))
  want = [s]
  while pt.parent[want[-1]] >= 0:
    want.append(int(pt.parent[want[-1]]))
  want = want[::-1]
  np.testing.assert_array_equal(path[:len(want)], want)
  assert np.all(path[len(want):] == NO_INDEX)
  tree, focus = jax.jit(lambda p: dt.grow_branch(src, dt.init_tree(src, 200, 0), p))(path)
  assert int(tree.public[int(focus)]) == s
  assert int(tree.num_nodes) == 1 + sum(len(pt.children[u]) for u in want)
  assert bool(tree.expanded[int(focus)])


def test_capacity_checked():
  src = dt.source_from_game(jaxgt.load("leduc_poker"))
  with pytest.raises(ValueError, match="capacity"):
    dt.check_capacity(src, src.num_children)
  with pytest.raises(ValueError, match="positive integer"):
    dt.check_capacity(src, 0)
