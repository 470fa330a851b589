"""UCT / Smooth UCT self-play (Heinrich & Silver 2015): reference walk, growth, convergence."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

import jaxgt
from jaxgt.games.base import CHANCE
from jaxgt.core import sequence_form as sf
from jaxgt.solvers import base
from jaxgt.solvers.base import compilations
from jaxgt.solvers import uct as uct_lib
from jaxgt.solvers import walk as walk_lib
from script_modules import load_script


def _curves(solver, tree, checkpoints, seeds):
  """Exploitability ``[checkpoints, seeds]`` of ``seeds`` vmapped runs (checkpoints in episodes)."""
  steps = [c // solver.samples_per_step for c in checkpoints]
  return base.exploitability_curve(solver, tree, steps, jax.random.key(2015), seeds)


def _reference(solver, tree, key, episodes):
  """Algorithm 1 (+ Smooth UCB), one episode at a time in NumPy, drawing the solver's uniforms.

  Episode ``e`` uses ``step_key(key, e)``, one uniform per depth step; Smooth
  UCB's choice (UCB1 with probability ``eta_k``, else the average strategy)
  is drawn in one go from the mixture ``eta_k UCB + (1 - eta_k) N / N(u)``.
  Returns ``(N, Q, e)``: ``e`` is the first episode whose UCB argmax was decided by
  rounding (two scores equal to 1e-9 but not bitwise; ``None`` if none), from which the
  device's fused arithmetic may legitimately choose the other action.
  """
  A = tree.num_actions
  pl, ch, chp = (np.asarray(x) for x in (tree.player, tree.children, tree.chance_probs))
  info, term, pay = (np.asarray(x) for x in (tree.infostate, tree.history_terminal,
                                             tree.terminal_payoff))
  legal = [np.asarray(tree.players[p].legal) for p in (0, 1)]
  N = [np.zeros((n, A), np.int64) for n in tree.num_infostates]
  Q = [np.zeros((n, A)) for n in tree.num_infostates]
  D = int(np.asarray(tree.depth).max())
  first_near_tie = None

  def pick(w, u):
    c = np.cumsum(w)
    return min(int(np.sum(c <= u * c[-1])), len(w) - 1)

  for e in range(episodes):
    uni = np.asarray(jax.random.uniform(base.step_key(key, e), (D, 1), jnp.float64))[:, 0]
    h, out, path = 0, [False, False], []
    for t in range(D):
      p = pl[h]
      if p == CHANCE:
        h = ch[h, pick(chp[h], uni[t])]
        continue
      if p < 0:
        break
      i, lg = info[h], legal[p][info[h]]
      n, q = N[p][i], Q[p][i]
      if out[p]:
        a = pick(lg / lg.sum(), uni[t])
      elif n.sum() == 0:
        a = pick(lg / lg.sum(), uni[t])
        out[p] = True
        path.append((p, i, a))
      else:
        bonus = solver.c * np.sqrt(np.log(n.sum()) / np.maximum(n, 1))
        score = np.where(lg, np.where(n > 0, q + bonus, np.inf), -np.inf)
        best = lg & (score == score.max())
        top = score.max()
        near = np.isfinite(top) and np.any(
            lg & ~best & (np.abs(score - top) <= 1e-9 * max(1, abs(top))))
        if near and first_near_tie is None:
          first_near_tie = e  # a tie up to rounding: the device may round the other way
        w = best / best.sum()
        if solver.smooth:
          eta_k = max(solver.gamma, solver.eta / (1 + solver.d * np.sqrt(n.sum())))
          w = eta_k * w + (1 - eta_k) * np.where(lg, n, 0) / n.sum()
        a = pick(w, uni[t])
        path.append((p, i, a))
      h = ch[h, a]
    r = pay[term[h]]
    for p, i, a in path:
      N[p][i, a] += 1
      Q[p][i, a] += ((r if p == 0 else -r) - Q[p][i, a]) / N[p][i, a]
  return N, Q, first_near_tie


@pytest.mark.parametrize("name", ["uct", "smooth-uct"])
def test_matches_sequential_reference(name):
  tree = jaxgt.load("kuhn_poker").device_tree("float64")
  # d large enough that eta_k mixes in the average strategy early.
  solver = (uct_lib.uct(dtype="float64") if name == "uct" else
            uct_lib.smooth_uct(d=0.5, dtype="float64"))
  key = jax.random.key(7)
  N, Q, near_tie = _reference(solver, tree, key, 300)
  episodes = 300 if near_tie is None else near_tie
  assert episodes >= 100, near_tie  # enough of the walk compared exactly
  if episodes < 300:
    N, Q, _ = _reference(solver, tree, key, episodes)
  state = solver.run(tree, solver.init(tree), episodes, key)
  for p in (0, 1):
    np.testing.assert_array_equal(np.asarray(state.visits[p]), N[p])
    np.testing.assert_allclose(np.asarray(state.values[p]), Q[p], atol=1e-12)
  assert int(state.iteration) == episodes


def test_tree_grows_one_node_per_player_per_episode():
  tree = jaxgt.load("leduc_poker").device_tree("float32")
  solver = uct_lib.smooth_uct(c=18, d=0.002)
  state, key = solver.init(tree), jax.random.key(0)
  sizes = []
  for _ in range(5):
    state = solver.run(tree, state, 7, key)
    sizes.append([int(m.sum()) for m in state.in_tree()])
  for k, s in enumerate(sizes):
    assert all(1 <= x <= 7 * (k + 1) for x in s), sizes
  assert sizes[-1][0] > sizes[0][0]
  # Counts at a node are the sum of counts entering its children's subtrees: a
  # level-0 node's total visits never exceed the episodes.
  assert all(int(v.sum(-1).max()) <= 35 for v in state.visits)


@pytest.mark.parametrize("factory", [uct_lib.uct, uct_lib.smooth_uct])
def test_same_key_same_policy_different_key_differs(factory):
  tree = jaxgt.load("kuhn_poker").device_tree("float32")
  solver = factory(batch=8)

  def run(seed):
    s = solver.run(tree, solver.init(tree), 50, jax.random.key(seed))
    return solver.average_policy(tree, s)

  a, b, c = run(3), run(3), run(4)
  for p in (0, 1):
    np.testing.assert_array_equal(np.asarray(a[p]), np.asarray(b[p]))
  assert any(not np.array_equal(np.asarray(a[p]), np.asarray(c[p])) for p in (0, 1))
  for p, pt in enumerate(tree.players):  # valid policies
    np.testing.assert_allclose(np.asarray(a[p]).sum(-1), 1.0, rtol=1e-6)
    assert not np.any(np.asarray(a[p])[~np.asarray(pt.legal)])


def test_invalid_parameters_raise_before_compilation():
  bad = [lambda: uct_lib.uct(c=-1.0), lambda: uct_lib.uct(c=float("nan")),
         lambda: uct_lib.uct(batch=0), lambda: uct_lib.uct(batch=True),
         lambda: uct_lib.smooth_uct(gamma=0.0), lambda: uct_lib.smooth_uct(eta=1.5),
         lambda: uct_lib.smooth_uct(d=-0.1), lambda: uct_lib.smooth_uct(c="2"),
         lambda: uct_lib.uct(dtype="float16"), lambda: uct_lib.for_game("uct", "chess"),
         lambda: uct_lib.for_game("ucb", "kuhn_poker")]
  for f in bad:
    with pytest.raises(ValueError):
      f()
  tree = jaxgt.load("kuhn_poker").device_tree("float32")
  solver = uct_lib.uct()
  state = solver.init(tree)
  with pytest.raises(ValueError, match="key"):
    solver.run(tree, state, 1, 0)
  for n in (-1, 2.5, True):
    with pytest.raises(ValueError, match="num_steps"):
      solver.run(tree, state, n, jax.random.key(0))


def test_paper_constants_and_mixing_schedule():
  s = uct_lib.for_game("smooth-uct", "leduc_poker")
  assert (s.c, s.gamma, s.eta, s.d) == (18.0, 0.1, 0.9, 0.002)
  assert uct_lib.for_game("uct", "kuhn_poker").c == 2.0
  k = uct_lib.smooth_uct()
  np.testing.assert_allclose(np.asarray(k.mixing(jnp.array([0, 1e6, 1e12]))),
                             [0.9, 0.9 / (1 + 0.001 * 1e3), 0.1], rtol=1e-6)
  assert float(uct_lib.uct().mixing(5)) == 1.0


def test_second_run_does_not_recompile():
  tree = jaxgt.load("kuhn_poker").device_tree("float32")
  solver = uct_lib.smooth_uct(batch=4)
  state = solver.run(tree, solver.init(tree), 3, jax.random.key(0))
  size = compilations(solver)
  solver.run(tree, state, 11, jax.random.key(0))
  assert compilations(solver) == size


def test_smooth_uct_beats_uct_kuhn_fast():
  """Sec. 4.1 in miniature: 8 seeds, 25k and 100k episodes (batches of 16)."""
  tree = jaxgt.load("kuhn_poker").device_tree("float32")
  u = _curves(uct_lib.uct(batch=16), tree, (25_000, 100_000), 8).mean(1)
  s = _curves(uct_lib.smooth_uct(batch=16), tree, (25_000, 100_000), 8).mean(1)
  # measured: UCT 0.035 -> 0.029, Smooth UCT 0.019 -> 0.008
  assert s[1] < 0.5 * u[1], (u, s)
  assert s[1] < 0.6 * s[0], s
  assert u[1] > 0.6 * u[0] and u[1] / u[0] > s[1] / s[0] + 0.2, (u, s)


@pytest.mark.slow
def test_smooth_uct_keeps_falling_uct_does_not_kuhn():
  """Sec. 4.1 / Fig. 1: 4 seeds, 250k -> 4M episodes (batches of 16)."""
  tree = jaxgt.load("kuhn_poker").device_tree("float32")
  cps = (250_000, 1_000_000, 4_000_000)
  u = _curves(uct_lib.uct(batch=16), tree, cps, 4).mean(1)
  s = _curves(uct_lib.smooth_uct(batch=16), tree, cps, 4).mean(1)
  # measured: UCT 0.035, 0.036, 0.040; Smooth UCT 0.0043, 0.0021, 0.0012
  assert np.all(np.diff(s) < 0) and s[-1] < 0.5 * s[0], s
  assert np.all(s < 0.25 * u), (u, s)
  assert u[-1] > 0.8 * u[0] and u.min() > 0.01, u


def test_leduc_smoke():
  tree = jaxgt.load("leduc_poker").device_tree("float32")
  solver = uct_lib.for_game("smooth-uct", "leduc_poker", batch=32)
  state = solver.run(tree, solver.init(tree), 100, jax.random.key(1))
  expl = jax.jit(sf.exploitability)
  e = float(expl(tree, solver.average_policy(tree, state)))
  uniform = float(expl(tree, sf.uniform_policy(tree)))
  assert np.isfinite(e) and e < uniform
  g = solver.greedy_policy(tree, state)
  for p, pt in enumerate(tree.players):
    np.testing.assert_array_equal(np.asarray(g[p]).sum(-1), 1.0)
    assert not np.any(np.asarray(g[p])[~np.asarray(pt.legal)])


def test_chunked_run_equals_one_long_run_and_curve_ends_there():
  """run(3) then run(5) is run(8) bit for bit; exploitability_curve's last point is that run's."""
  tree = jaxgt.load("kuhn_poker").device_tree("float64")
  solver = uct_lib.smooth_uct(batch=4, dtype="float64")
  key = jax.random.key(5)
  one = solver.run(tree, solver.init(tree), 8, key)
  two = solver.run(tree, solver.run(tree, solver.init(tree), 3, key), 5, key)
  for x, y in zip(jax.tree_util.tree_leaves(one), jax.tree_util.tree_leaves(two)):
    np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
  curve = base.exploitability_curve(solver, tree, (3, 8), key, seeds=2)
  first = solver.run(tree, solver.init(tree), 8, jax.random.split(key, 2)[0])
  np.testing.assert_allclose(curve[-1, 0], float(sf.exploitability(tree, solver.policy(tree, first))),
                             rtol=1e-9)


def _example(name):
  return load_script(f"examples/{name}.py", name)


def test_kuhn_mse_to_the_closest_equilibrium():
  """Heinrich & Silver's (2015) Sec. 4.1 measure: zero on every member of Kuhn's equilibrium
  family, positive off it, and the closest member is found (checked against a grid over alpha)."""
  example = _example("smooth_uct_kuhn")
  g = jaxgt.load("kuhn_poker")
  tree = g.device_tree("float64")
  keys = g.infostate_keys

  def family(alpha):
    bet = {**example.KUHN_FIXED, **{k: example.KUHN_OFFSET[k] + example.KUHN_ALPHA[k] * alpha
                                    for k in example.KUHN_ALPHA}}
    return tuple(np.stack([[1 - bet[k], bet[k]] for k in keys[p]]) for p in (0, 1))

  for alpha in (0.0, 0.1, 1 / 3):
    pol = family(alpha)
    assert float(sf.exploitability(tree, tuple(jnp.asarray(x) for x in pol))) < 1e-12
    assert example.kuhn_mse(pol, keys) < 1e-20
  uniform = tuple(np.asarray(x) for x in sf.uniform_policy(tree, jnp.float64))
  grid = min(np.mean([(a[i, 1] - b[i, 1]) ** 2 for p in (0, 1) for a, b in
                      [(uniform[p], family(t)[p])] for i in range(len(keys[p]))])
             for t in np.linspace(0, 1 / 3, 3001))
  assert example.kuhn_mse(uniform, keys) == pytest.approx(grid, rel=1e-6)
  assert example.kuhn_mse(uniform, keys) > 0.05


def test_smooth_ucb_keeps_its_maximisers_when_the_tree_is_a_compile_time_constant():
  """Inside an outer loop with the tree closed over, XLA compiles the walk's sampling loop
  differently and evaluates the UCB scores twice with different FMA contraction; an exact
  ``score == max(score)`` then matched no action and UCB1's share of the draw was lost (Kuhn,
  float64, the 11th episode of key 7: action 1 drawn with probability 0.345 where the
  distribution is (0.655, 0.345) and the uniform 0.546)."""
  tree = jaxgt.load("kuhn_poker").device_tree("float64")
  cfg = uct_lib.smooth_uct(d=0.5, dtype="float64")
  key = jax.random.key(7)
  st = cfg.run(tree, cfg.init(tree), 10, key)
  uni = jax.random.uniform(base.step_key(key, 10), (tree.max_depth, 1), jnp.float64)

  def trajectory(visits, values):
    traj, _ = walk_lib.walk(tree, uct_lib.uct_node_policy(cfg, visits, values), uni,
                            carry=jnp.zeros((1, 2), bool))
    return traj.action[:, 0], traj.sample_prob[:, 0]

  plain = jax.jit(trajectory)(st.visits, st.values)
  nested = jax.jit(lambda s: lax.fori_loop(0, 1, lambda i, c: trajectory(s.visits, s.values),
                                           jax.tree.map(jnp.zeros_like, plain)))(st)
  for a, b in zip(nested, plain):
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
  np.testing.assert_allclose(np.asarray(plain[1])[2], 0.65495342, rtol=1e-6)
