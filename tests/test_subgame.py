"""Depth-limited solving on the device tree (jaxgt.search.subgame) against full-game solves and
the reference host-extracted subgames (tests/reference_subgame.py)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxgt
import reference_subgame as sgm
from test_random_games import RandomGame
from jaxgt.core import public_tree as ptm
from jaxgt.core import sequence_form as sf
from jaxgt.core.compiler import compile_game
from jaxgt.core.game_tree import CompiledGame
from jaxgt.core.public_tree import PublicTree, build_public_tree
from jaxgt.games.base import CHANCE, TERMINAL, Game
from jaxgt.search import device_tree as dt
from jaxgt.search import evaluator as evaluators
from jaxgt.search import gtcfr as gt
from jaxgt.search import subgame


def _full_equilibrium(name, iterations):
  g = jaxgt.load(name)
  solver = jaxgt.cfr_plus(dtype="float64")
  tree = g.device_tree("float64")
  st = solver.run(tree, solver.init(tree), iterations)
  return g, tree, solver.average_policy(tree, st)


def _end_of_round_one(g):
  pt = ptm.build_public_tree(g)
  player = np.asarray(g.tree.player)
  return [ps for ps in range(pt.num_public_states)
          if pt.depth[ps] > 2 and np.all(player[pt.histories[ps]] == -1)]


def _root_value(res, ranges=None):
  """Player 0's expected value at the search's root: its root counterfactual values weighted
  by its padded root range (``ranges [..., 2, K]``; default the game's root, one slot)."""
  v = np.asarray(res.root_values)[..., 0, :]
  return (v if ranges is None else v * np.asarray(ranges)[..., 0, :]).sum(-1)


def test_leduc_depth_limited_root_value_exact_leaves():
  """Limit at the end of the first betting round; leaves solved for the current ranges: the
  root value is Leduc's game value (-0.085606 for player 0)."""
  g = jaxgt.load("leduc_poker")
  leaves = _end_of_round_one(g)
  assert len(leaves) == 5  # cc, rc, crc, rrc, crrc
  res = subgame.solve(g, 0, iterations=1000, leaves=leaves)
  t = res.state.tree
  frontier = set(np.asarray(t.public)[(np.asarray(t.public) >= 0) & ~np.asarray(t.expanded)])
  assert set(leaves) <= frontier
  assert _root_value(res) == pytest.approx(-0.085606, abs=1e-3)


def test_kuhn_depth_limited_with_one_player_in_trunk():
  """Cut after player 0's first action: the trunk has no player-1 decision."""
  g = jaxgt.load("kuhn_poker")
  res = subgame.solve(g, 0, iterations=2000, depth_limit=3)
  t = res.state.tree
  assert not np.any(np.asarray(t.acting_info[1])[np.asarray(t.expanded)] >= 0)
  assert _root_value(res) == pytest.approx(-1 / 18, abs=1e-3)


# DCFR's rule on the device tree: test_gtcfr.test_leduc_full_tree_runs_the_engines_rule by default
@pytest.mark.parametrize("solver_name", ["cfr", pytest.param("cfr+", marks=pytest.mark.slow),
                                         pytest.param("lcfr", marks=pytest.mark.slow),
                                         pytest.param("dcfr", marks=pytest.mark.slow)])
def test_core_solvers_run_unchanged_on_subgame(solver_name):
  """Continuation leaf values of a full equilibrium: the solved subgame keeps the value."""
  g, tree, pol = _full_equilibrium("kuhn_poker", 3000)
  solver = jaxgt.make_solver(solver_name, dtype="float64")
  res = subgame.solve(g, 0, iterations=2000, depth_limit=4, solver=solver,
                      evaluator=evaluators.continuation(dt.source_from_game(g), pol))
  comp = subgame.to_full_policy(res, pol)
  # Composing the subgame policy with the continuation keeps the full game solved.
  assert float(sf.exploitability(tree, comp)) < 5e-3
  assert float(sf.expected_value(tree, comp)) == pytest.approx(-1 / 18, abs=5e-3)
  assert _root_value(res) == pytest.approx(-1 / 18, abs=5e-3)


def test_batched_solve_matches_one_by_one_at_inner_public_state():
  """Subgame at Kuhn's first decision (all deals): B root ranges in one vmapped call."""
  g = jaxgt.load("kuhn_poker")
  pt = ptm.build_public_tree(g)
  root = int(pt.at_depth(2)[0])
  src = dt.source_from_game(g)
  rng = np.random.default_rng(0)
  r0 = rng.dirichlet(np.ones(3), size=3)
  r1 = rng.dirichlet(np.ones(3), size=3)
  r0[0] = r1[0] = 1 / 3  # the true beliefs: the game value times 1/9 (normalised ranges)
  tree = subgame.subgame_tree(src, root, depth_limit=2)
  solver = jaxgt.cfr_plus(dtype="float64")
  cfg = gt.make_config(src, simulations=1, capacity=tree.capacity, value_average="search",
                       solver=solver)
  ev = evaluators.exact(src, solver=solver)
  ranges = np.stack([gt.root_ranges(src, root, (r0[b], r1[b])) for b in range(3)])
  trees = jax.tree_util.tree_map(lambda x: jnp.stack([x] * 3), tree)
  batch = gt.solve_tree(src, cfg, ev, trees, ranges, 1500)
  vb = _root_value(batch, ranges)
  # One tree shared by the batch: the same solves.
  shared = gt.solve_tree(src, cfg, ev, tree, ranges, 1500)
  for a, b in zip(shared.policy + (shared.root_values,), batch.policy + (batch.root_values,)):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-12, atol=1e-15)
  assert vb[0] == pytest.approx(-1 / 18 / 9, abs=2e-4)
  for b in (1, 2):
    one = gt.solve_tree(src, cfg, ev, tree, ranges[b], 1500)
    assert _root_value(one, ranges[b]) == pytest.approx(vb[b], abs=1e-9)
  # Reference for the other ranges: the full-depth subgame extracted on the host, plain CFR+.
  deep = sgm.extract(pt, root)
  dtree = deep.compiled.device_tree("float64")
  for b in (1, 2):
    wd = deep.root_weights(r0[b], r1[b])
    s = solver.run(dtree, solver.init(dtree, weights=wd), 3000)
    ref = float(sf.expected_value(dtree, solver.average_policy(dtree, s), wd))
    assert vb[b] == pytest.approx(ref, abs=2e-3)


def test_bad_inputs():
  g = jaxgt.load("kuhn_poker")
  src = dt.source_from_game(g)
  pt = ptm.build_public_tree(g)
  root = int(pt.at_depth(2)[0])
  with pytest.raises(ValueError, match="shape"):
    subgame.solve(g, root, iterations=1, depth_limit=1, ranges=([0.5, 0.5], np.ones(3) / 3))
  with pytest.raises(ValueError, match="negative"):
    subgame.solve(g, root, iterations=1, depth_limit=1, ranges=([1.5, -0.5, 0.0], np.ones(3) / 3))
  with pytest.raises(ValueError, match="sums to"):
    subgame.solve(g, root, iterations=1, depth_limit=1, ranges=([0.5, 0.2, 0.2], np.ones(3) / 3))
  with pytest.raises(ValueError, match="another game"):
    subgame.summary_from_policy(g, jaxgt.load("leduc_poker").public_keys[5], 0,
                                sf.uniform_policy(g.device_tree("float64"), jnp.float64))
  with pytest.raises(ValueError, match="depth_limit"):
    subgame.subgame_tree(src, 0, depth_limit=0)
  with pytest.raises(ValueError, match="out of range"):
    subgame.subgame_tree(src, src.num_public_states)
  wrong = evaluators.from_callable(lambda leaves: jnp.zeros(leaves.leaf.shape[1:]))
  with pytest.raises(ValueError, match="shape"):
    subgame.solve(g, 0, iterations=10, depth_limit=4, evaluator=wrong)
  bad_prior = evaluators.from_callable(lambda leaves: (jnp.zeros(leaves.leaf.shape), jnp.zeros(3)))
  with pytest.raises(ValueError, match="prior"):
    subgame.solve(g, 0, iterations=10, depth_limit=4, evaluator=bad_prior)
  restructured = evaluators.Evaluator(
      init=lambda: (), apply=lambda state, leaves: ((jnp.zeros(leaves.leaf.shape), None), (1.0,)))
  with pytest.raises(ValueError, match="structure"):
    subgame.solve(g, 0, iterations=10, depth_limit=4, evaluator=restructured)
  with pytest.raises(ValueError, match="iterations"):
    subgame.solve(g, 0, iterations=0, depth_limit=4)


def test_rps_plus_multi_valued_leaves_find_equilibrium():
  """Brown, Sandholm and Amos (2018), Sec. 4: cut after player 0's move; the single-valued
  leaf (player 1's equilibrium strategy fixed) leaves player 0 indifferent, multi-valued
  leaves (blueprint plus biased versions) pin down (0.4, 0.4, 0.2)."""
  g = jaxgt.load("rps_plus")
  tree = g.device_tree("float64")
  src = dt.source_from_game(g)
  # The unique equilibrium from the full game, as the independent reference.
  solver = jaxgt.cfr_plus(dtype="float64")
  st = solver.run(tree, solver.init(tree), 3000)
  eq = solver.average_policy(tree, st)
  np.testing.assert_allclose(eq[0][0], [0.4, 0.4, 0.2], atol=1e-3)
  found = {}
  for K in (1, 4):
    pols = evaluators.biased_policies(tree, eq, 1, 10.0)[:K]
    res = subgame.solve(g, 0, iterations=2000, depth_limit=1,
                        evaluator=evaluators.continuation(src, pols))
    found[K] = subgame.to_full_policy(res, eq)[0]
    expl = float(sf.exploitability(tree, (found[K], eq[1])))
    if K == 1:
      assert expl > 0.05
    else:
      assert expl < 2e-3
  assert not np.allclose(found[1][0], [0.4, 0.4, 0.2], atol=0.02)
  np.testing.assert_allclose(found[4][0], [0.4, 0.4, 0.2], atol=0.02)
  with pytest.raises(ValueError, match="chooser"):
    evaluators.continuation(src, [eq], chooser=2)


# --------------------------------------------------------------------------- extract from arrays
# The reference: the subgame as a Python ``Game`` over full-game history
# indices, enumerated again by ``compile_game`` (how ``extract`` built subgames
# before it assembled them from arrays). Kept here only as the independent check.

_ROOT = "root"
_DUMMY = "no-decision"


class _SubgameDefinition(Game):
  """The subgame as a :class:`Game` whose states are full-game history indices."""

  name = "subgame"

  def __init__(self, pt: PublicTree, roots, root_probs, leaf_mask, label, dummy,
               choices=0, chooser=1):
    super().__init__(of=label, choices=choices)
    self._dummy = dummy
    self._choices, self._chooser = choices, chooser
    self._pt, self._t = pt, pt.game.tree
    self._roots, self._probs = roots, root_probs
    self._leaf = leaf_mask
    self._keys = [[pt.aug_keys[p][i] if i >= 0 else "" for i in pt.aug[p]] for p in (0, 1)]
    self.num_actions = max(self._t.num_actions, choices)

  def initial_state(self):
    return _ROOT if self._dummy is None else _DUMMY

  def current_player(self, h):
    if h == _DUMMY:
      return self._dummy
    if isinstance(h, tuple):
      return self._chooser if len(h) == 1 else TERMINAL
    if h == _ROOT:
      return CHANCE
    if self._leaf[self._t.history_public[h]]:
      return TERMINAL if not self._choices else int(self._chooser)
    return int(self._t.player[h])

  def legal_actions(self, h):
    if h == _DUMMY:
      return [0]
    if self._choices and h != _ROOT and (isinstance(h, tuple) or self._leaf[self._t.history_public[h]]):
      return list(range(self._choices))
    return [int(a) for a in np.flatnonzero(self._t.children[h, :self.num_actions] >= 0)]

  def chance_outcomes(self, h):
    if h == _ROOT:
      return [(i, float(q)) for i, q in enumerate(self._probs)]
    c = self._t.chance_probs[h]
    return [(int(a), float(c[a])) for a in np.flatnonzero(c > 0)]

  def next_state(self, h, a):
    if h == _DUMMY:
      return _ROOT
    if self._choices and h != _ROOT and self._leaf[self._t.history_public[h]]:
      return (h, int(a))  # the chooser picked continuation ``a`` at leaf history ``h``
    if h == _ROOT:
      return int(self._roots[a])
    return int(self._t.children[h, a])

  def returns(self, h):
    if isinstance(h, tuple):
      return (0.0, 0.0)
    if self._leaf[self._t.history_public[h]]:
      return (0.0, 0.0)
    u = float(self._t.terminal_payoff[self._t.history_terminal[h]])
    return (u, -u)

  def information_state(self, h, p):
    if h in (_DUMMY, _ROOT):
      return h
    if self._choices and h != _ROOT and self._leaf[self._t.history_public[h]]:
      return self._keys[p][h] + "|leaf-choice"
    return self._keys[p][h]

  def public_state(self, h):
    if isinstance(h, tuple):
      return ("chosen", int(self._t.history_public[h[0]]))
    if h in (_ROOT, _DUMMY):
      return h
    if self._choices and self._leaf[self._t.history_public[h]]:
      return ("leaf", int(self._t.history_public[h]))
    return int(self._t.history_public[h])

  def game_string(self):
    return f"subgame({self.params['of']})"


def _reference_extract(game: CompiledGame | PublicTree, root=0, *, depth_limit: int | None = None,
            leaves=None, leaf_choices: int = 0, chooser: int = 1) -> sgm.Subgame:
  """The subgame rooted at public state(s) ``root``, cut ``depth_limit`` public levels below.

  ``root`` is one public state (index or key) or a sequence of them;
  ``leaves`` (an explicit set of public states) or ``depth_limit`` (public
  states that many levels below a root become leaves; ``None`` and no
  ``leaves`` = no cut) choose the leaves. Leaf public states whose histories
  are all terminal stay ordinary terminals.

  Multi-valued states (Brown et al. 2018, Sec. 4): with ``leaf_choices = K > 0``, at
  every leaf history player ``chooser`` picks one of ``K`` continuation
  strategies at its (augmented) information state there; leaf values then
  have shape ``[L, K]``.
  """
  if isinstance(leaf_choices, bool) or not isinstance(leaf_choices, (int, np.integer)) \
      or leaf_choices < 0:
    raise ValueError(f"leaf_choices must be a non-negative integer, got {leaf_choices!r}")
  if chooser not in (0, 1):
    raise ValueError(f"chooser must be 0 or 1, got {chooser!r}")
  pt = game if isinstance(game, PublicTree) else build_public_tree(game)
  t = pt.game.tree
  roots_ps, leaf_mask = sgm.roots_and_leaves(pt, root, depth_limit, leaves)
  roots_h = []
  for r in roots_ps:
    hs = pt.histories[r]
    inside = np.isin(t.parent[hs], hs)
    roots_h.extend(int(h) for h in hs[~inside])
  roots_h = np.asarray(roots_h, np.int32)
  cr = pt.chance_reach[roots_h]
  label = f"{pt.game.name}@{','.join(map(str, roots_ps))}"
  # The compiler needs a decision node of each player; a player without one
  # in the subgame gets a single-action node above the root (it changes no
  # value and no other information state).
  acting = _acting_players(pt, roots_h, leaf_mask) | ({chooser} if leaf_choices else set())
  dummy = next((p for p in (0, 1) if p not in acting), None)
  definition = _SubgameDefinition(pt, roots_h, cr / cr.sum(), leaf_mask, label, dummy,
                                  int(leaf_choices), chooser)
  sub = compile_game(definition)
  st = sub.tree
  top = 0 if dummy is None else 1  # index of the root chance node
  # Full-game history of each subgame history: replay the enumeration order.
  H = st.num_histories
  hist_of = np.full(H, -1, np.int64)
  choice = np.full(H, -1, np.int64)
  for h in range(top + 1, H):
    par = st.parent[h]
    if par == top:
      hist_of[h] = roots_h[st.action[h]]
    elif leaf_choices and leaf_mask[t.history_public[hist_of[par]]]:
      hist_of[h], choice[h] = hist_of[par], st.action[h]
    else:
      hist_of[h] = t.children[hist_of[par], st.action[h]]
  safe = np.maximum(hist_of, 0)
  node_leaf = ((hist_of >= 0) & (choice < 0) & leaf_mask[t.history_public[safe]]
               & (t.player[safe] != TERMINAL))
  leaf_nodes = np.flatnonzero(node_leaf)
  leaf_hist = hist_of[leaf_nodes]
  leaf_of_node = np.full(H, -1, np.int64)
  leaf_of_node[leaf_nodes] = np.arange(len(leaf_nodes))
  z = np.asarray(st.terminal_history)
  if leaf_choices:
    is_leaf = choice[z] >= 0
    terminal_leaf = np.where(is_leaf, leaf_of_node[st.parent[z]] * leaf_choices + choice[z], -1)
  else:
    is_leaf = node_leaf[z]
    terminal_leaf = np.where(is_leaf, leaf_of_node[z], -1)
  terminal_leaf = terminal_leaf.astype(np.int32)
  # Root of each terminal: walk up to depth 1.
  h = np.asarray(st.terminal_history).copy()
  while np.any(st.depth[h] > top + 1):
    h = np.where(st.depth[h] > top + 1, st.parent[h], h)
  terminal_root = st.action[h].astype(np.int32)
  below = st.terminal_chance / (cr / cr.sum())[terminal_root]
  root_aug = np.zeros((2, len(roots_h)), np.int32)
  for p in (0, 1):
    pos = {}
    for ps in roots_ps:
      for i in pt.infostates[p][ps]:
        pos[int(i)] = len(pos)
    root_aug[p] = [pos[int(pt.aug[p][h])] for h in roots_h]
  index = [pt.game.infostate_index(p) for p in (0, 1)]
  full_info = tuple(np.asarray([index[p].get(k, -1) for k in sub.infostate_keys[p]], np.int32)
                    for p in (0, 1))
  # Subgame's fields in declaration order.
  return sgm.Subgame(pt, sub, roots_ps, tuple(int(x) for x in np.flatnonzero(leaf_mask)), roots_h,
                     hist_of, terminal_leaf, leaf_hist.astype(np.int32),
                     np.where(is_leaf, 0.0, st.terminal_payoff), below, terminal_root, root_aug,
                     full_info, top, int(leaf_choices), leaf_nodes.astype(np.int32))


def _acting_players(pt: PublicTree, roots_h, leaf_mask) -> set:
  t = pt.game.tree
  seen, frontier = set(), list(int(h) for h in roots_h)
  while frontier and len(seen) < 2:
    nxt = []
    for h in frontier:
      if leaf_mask[t.history_public[h]]:
        continue
      if t.player[h] in (0, 1):
        seen.add(int(t.player[h]))
      nxt.extend(int(c) for c in t.children[h] if c >= 0)
    frontier = nxt
  return seen


class _LayeredRandomGame(RandomGame):
  """A random game whose public state is the depth and whether it ended (so it has
  subgames below the root)."""

  def information_state(self, h, p):
    return f"{super().information_state(h, p)}@{len(h)}"

  def public_state(self, h):
    return (len(h), self.nodes[h][0] == "end")


def _assert_same_subgame(new, ref):
  a, b = new.compiled, ref.compiled
  assert a.infostate_keys == b.infostate_keys
  assert a.public_keys == b.public_keys
  assert a.fingerprint == b.fingerprint
  assert a.name == b.name
  assert a.tree.depth_levels == b.tree.depth_levels
  np.testing.assert_array_equal(a.aug, b.aug)
  assert a.aug_keys == b.aug_keys
  la, lb = jax.tree_util.tree_leaves(a.tree), jax.tree_util.tree_leaves(b.tree)
  assert len(la) == len(lb)
  for x, y in zip(la, lb):
    x, y = np.asarray(x), np.asarray(y)
    assert x.dtype == y.dtype and x.shape == y.shape
    np.testing.assert_array_equal(x, y)
  for f in ("root_public", "leaf_public", "root_index", "leaf_choices"):
    assert getattr(new, f) == getattr(ref, f), f
  for f in ("root_histories", "history_of", "terminal_leaf", "leaf_histories", "base_payoff",
            "chance_below_root", "terminal_root", "root_aug", "leaf_nodes"):
    x, y = np.asarray(getattr(new, f)), np.asarray(getattr(ref, f))
    assert x.shape == y.shape, f
    np.testing.assert_array_equal(x, y, err_msg=f)
  for p in (0, 1):
    np.testing.assert_array_equal(new.full_infostate[p], ref.full_infostate[p])


def _extract_cases(pt, rng, n):
  """Roots at every non-terminal public state (a sample of ``n``), cut 1 or 2 levels below,
  single- and multi-valued leaves, plus a two-root case."""
  cands = [ps for ps in range(pt.num_public_states) if not pt.terminal_public[ps]]
  picks = cands if len(cands) <= n else list(rng.choice(cands, n, replace=False))
  cases = []
  for i, ps in enumerate(picks):
    cases.append(dict(root=int(ps), depth_limit=1 + i % 2, leaf_choices=2 * (i % 3 == 0),
                      chooser=i % 2))
    cases.append(dict(root=int(ps)))
  same_depth = [ps for ps in cands if pt.depth[ps] == pt.depth[cands[-1]]]
  if len(same_depth) > 1:
    cases.append(dict(root=[int(x) for x in same_depth[:2]], depth_limit=1))
  return cases


@pytest.mark.parametrize("name", ["kuhn_poker", "leduc_poker", "random"])
def test_extract_from_arrays_equals_recompiled_definition(name):
  """``extract`` assembles the subgame's arrays directly; the result is identical (history
  order, information-state numbering, terminal order, every link) to enumerating the
  subgame as a ``Game`` with ``compile_game``."""
  if name == "random":
    g = jaxgt.compile_game(_LayeredRandomGame(3))
  else:
    g = jaxgt.load(name)
  pt = ptm.build_public_tree(g)
  for kw in _extract_cases(pt, np.random.default_rng(0), 12):
    try:
      ref = _reference_extract(pt, **kw)
    except ValueError:  # the reference rejects it: so must the new path
      with pytest.raises(ValueError):
        sgm.extract(pt, **kw)
      continue
    _assert_same_subgame(sgm.extract(pt, **kw), ref)


def test_constant_leaf_values_give_cfr_on_the_reference_subgame():
  """Leaves valued by a fixed continuation profile: the device-tree solve runs the same
  iterations as plain CFR+ on the host-extracted subgame with those leaf values filled in."""
  g, _, pol = _full_equilibrium("kuhn_poker", 300)
  sim = jaxgt.cfr_plus(alternating=False, dtype="float64")
  src = dt.source_from_game(g)
  res = subgame.solve(g, 0, iterations=50, depth_limit=4, solver=sim,
                      evaluator=evaluators.continuation(src, pol))
  sub = sgm.extract(g, 0, depth_limit=4)
  w = sub.root_weights([1.0], [1.0])
  vals = ptm.history_values(g.device_tree("float64"), pol)[jnp.asarray(sub.leaf_histories)]
  st_tree = sub.with_payoff(sub.compiled.device_tree("float64"), vals)
  ref = sim.average_policy(st_tree, sim.run(st_tree, sim.init(st_tree, weights=w), 50))
  want = sub.to_full_policy(ref, pol)
  mine = subgame.to_full_policy(res, pol)
  for p in (0, 1):
    np.testing.assert_allclose(mine[p], np.asarray(want[p]), atol=1e-9)
