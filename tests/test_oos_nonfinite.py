"""OOS drops an update whose sample weight is not finite instead of writing inf/nan."""

import jax
import jax.numpy as jnp
import numpy as np

import jaxgt
from jaxgt.core.dtypes import cast_tree
from jaxgt.solvers import oos
from jaxgt.solvers.oos import OOS

B, BAD = 8, 3  # trajectories per update player; the one whose weight overflows


def _step(solver, tree, state, w_t, key):
  """One OOS iteration (both update players) with the weighting factor ``w_t`` ([] or [B])."""
  position = solver.position(tree, history=_history(tree))
  target, _ = solver.prepare(tree, state, *position)
  return solver.sample_step(tree, state, (target, w_t), key)


def _history(tree):
  """Player 1's first decision after player 0 bets (a searcher's match position)."""
  return int(np.flatnonzero(np.asarray(tree.player) == 1)[-1])


def test_a_non_finite_sample_weight_drops_that_trajectory_update(monkeypatch):
  """A trajectory whose ``w_T`` is infinite (its leaf probability ``l`` becomes 0 and its
  weight ``u pi_{-i} / l`` infinite or NaN) leaves tables that are finite and equal to those of
  the same iteration with that trajectory left out of the update."""
  tree = cast_tree(jaxgt.load("kuhn_poker").device_tree("float64"), jnp.float64)
  solver = OOS(delta=0.5, batch=B, dtype="float64")
  state = solver.run(tree, solver.init(tree), 20, jax.random.key(0), history=_history(tree))
  key = jax.random.key(1)
  w_bad = jnp.ones(B).at[BAD].set(jnp.inf)
  got = _step(solver, tree, state, w_bad, key)

  update = oos._update
  keep = jnp.arange(B) != BAD
  monkeypatch.setattr(oos, "_update", lambda cfg, s, i, traj, info, upd, w_t: update(
      cfg, s, i, traj, info, upd & keep[None], w_t))
  want = _step(solver, tree, state, jnp.ones(B), key)
  monkeypatch.undo()
  full = _step(solver, tree, state, jnp.ones(B), key)

  for p in (0, 1):
    for name in ("regrets", "cum_policy"):
      g, w = np.asarray(getattr(got, name)[p]), np.asarray(getattr(want, name)[p])
      assert np.all(np.isfinite(g))
      np.testing.assert_array_equal(g, w)
  # the left-out trajectory did update something, so its weight had something to spoil
  assert any(not np.array_equal(np.asarray(getattr(full, name)[p]),
                                np.asarray(getattr(want, name)[p]))
             for p in (0, 1) for name in ("regrets", "cum_policy"))
