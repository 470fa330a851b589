"""History-form passes over a device tree (``search.history_cfr``) against a plain NumPy walk."""

import jax
import jax.numpy as jnp
import numpy as np

import jaxgt
from jaxgt.agents.resolving import _resolving_tree, resolving_capacity
from jaxgt.games.base import TERMINAL
from jaxgt.search import device_tree as dt
from jaxgt.search import regret_phase
from jaxgt.search import history_cfr


def _numpy_reference(forest, sigma, root_own, leaf_values):
  """Reaches by walking each live slot's parents, values by recursion over children."""
  f = jax.tree_util.tree_map(np.asarray, forest)
  sigma = [np.asarray(s) for s in sigma]
  S = len(f.parent)

  def edge(s):
    par = f.parent[s]
    if par < 0:
      return np.ones(3)
    out = np.ones(3)
    pp = f.player[par]
    if pp in (0, 1):
      out[pp] = sigma[pp][f.info[pp][par], f.action[s]]
    else:
      out[2] = f.chance[s]
    return out

  reach = np.zeros((3, S))
  for s in np.flatnonzero(f.live):
    x, u = np.ones(3), s
    while f.parent[u] >= 0:
      x *= edge(u)
      u = f.parent[u]
    reach[:, s] = x * np.append(root_own[:, u], f.chance[u])
  children = [[] for _ in range(S)]
  for s in np.flatnonzero(f.live & (f.parent >= 0)):
    children[f.parent[s]].append(s)

  def value(s, r):
    if f.leaf[s]:
      return leaf_values[r, s]
    if f.player[s] == TERMINAL:
      return f.payoff[s]
    return sum(np.prod(edge(c)) * value(c, r) for c in children[s])

  vals = np.zeros((2, S))
  for s in np.flatnonzero(f.live):
    vals[:, s] = [value(s, r) for r in (0, 1)]
  return reach, vals


def test_forward_and_values_equal_a_numpy_walk_of_a_resolving_tree():
  """The passes stop once a pass changes nothing (the tree is shallower than the static bound)
  and still give every live slot's reach and value."""
  jax.config.update("jax_enable_x64", True)
  g = jaxgt.load("leduc_poker")
  src = dt.source_from_game(g, "float64")
  cap = resolving_capacity(g, 2)
  tables = src.tables
  decision = int(np.flatnonzero(np.any(np.asarray(tables.player) == 1, axis=1))[3])
  tree, _ = jax.jit(lambda r, p: _resolving_tree(src, cap, 2, r, p))(
      jnp.int32(0), jnp.asarray(dt.public_path(src, decision), jnp.int32))
  forest = regret_phase.tree_forest(src, tree)
  assert int(jnp.sum(forest.leaf)) > 0
  rng = np.random.default_rng(0)
  legal = regret_phase.legal_rows(tree)
  sigma = tuple(jnp.asarray(np.where(np.asarray(l), rng.random(l.shape), 0.0)) for l in legal)
  sigma = tuple(s / jnp.maximum(s.sum(-1, keepdims=True), 1e-300) for s in sigma)
  root_own = jnp.asarray(rng.random((2, forest.parent.shape[0])))
  leaf_values = jnp.asarray(rng.normal(size=(2, forest.parent.shape[0])))
  fw = history_cfr.forward(forest, sigma, root_own)
  v = history_cfr.values(forest, fw.edge, leaf_values)
  reach, vals = _numpy_reference(forest, sigma, np.asarray(root_own), np.asarray(leaf_values))
  live = np.asarray(forest.live)
  np.testing.assert_allclose(np.asarray(fw.own)[:, live], reach[:2, live], rtol=1e-12)
  np.testing.assert_allclose(np.asarray(fw.chance)[live], reach[2, live], rtol=1e-12)
  np.testing.assert_allclose(np.asarray(v)[:, live], vals[:, live], rtol=1e-10, atol=1e-12)
