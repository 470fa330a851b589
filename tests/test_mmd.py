"""MMD's magnet is the centre of the dilated entropy (the realization plan minimising it), not
the uniform strategy: without payoffs the iterates converge to it and stay there."""

import jax.numpy as jnp
import numpy as np
import pytest

import jaxgt
from jaxgt.core import sequence_form
from jaxgt.solvers import mmd as mmd_lib


def dilated_entropy_centre(pt) -> np.ndarray:
  """NumPy reference ``[I, A]``: the behavioural strategy minimising the dilated entropy
  ``sum_I x(parent seq of I) sum_a sigma(a|I) log sigma(a|I)``, bottom-up:
  ``sigma(a|I) ~ prod_{J below (I, a)} Z(J)`` with ``Z(J) = sum_a prod_{J' below (J, a)} Z(J')``."""
  legal = np.asarray(pt.legal)
  parent_seq = np.asarray(pt.parent_seq)
  n, A = legal.shape
  log_below = np.zeros(n * A + 1)  # sum of log Z over the information states below a sequence
  sigma = np.zeros((n, A))
  for i in sorted(range(n), key=lambda i: -int(np.asarray(pt.level)[i])):
    h = np.where(legal[i], log_below[i * A:(i + 1) * A], -np.inf)
    log_z = np.logaddexp.reduce(h)
    sigma[i] = np.where(legal[i], np.exp(h - log_z), 0.0)
    log_below[parent_seq[i]] += log_z
  return sigma


def dilated_entropy(pt, sigma) -> float:
  x = np.asarray(sequence_form.realization(pt, jnp.asarray(sigma)))
  n, A = sigma.shape
  reach = x[np.asarray(pt.parent_seq)]
  ent = np.where(sigma > 0, sigma * np.log(np.where(sigma > 0, sigma, 1.0)), 0.0).sum(1)
  return float((reach * ent).sum())


@pytest.mark.parametrize("game", ["kuhn_poker", "leduc_poker"])
def test_mmd_magnet_is_the_dilated_entropy_centre(game):
  tree = jaxgt.load(game).device_tree("float64")
  solver = mmd_lib.mmd(alpha=1.0, stepsize=1.0, dtype="float64")
  state = solver.init(tree, weights=jnp.zeros(tree.num_terminals))  # no payoff gradient
  state = solver.run(tree, state, 80)  # contracts towards the magnet by 1 / (1 + eta alpha)
  centre = [dilated_entropy_centre(pt) for pt in tree.players]
  for p in (0, 1):
    np.testing.assert_allclose(np.asarray(state.sigma[p]), centre[p], atol=1e-12)
  # the centre is a fixed point of one step
  fixed = solver.run(tree, state.replace(sigma=tuple(jnp.asarray(c) for c in centre)), 1)
  for p in (0, 1):
    np.testing.assert_allclose(np.asarray(fixed.sigma[p]), centre[p], atol=1e-14)
  # and the minimiser of the dilated entropy over behavioural strategies
  rng = np.random.default_rng(0)
  for p, pt in enumerate(tree.players):
    legal = np.asarray(pt.legal)
    best = dilated_entropy(pt, centre[p])
    for _ in range(10):
      x = rng.gamma(1.0, size=legal.shape) * legal
      assert dilated_entropy(pt, x / x.sum(1, keepdims=True)) >= best - 1e-12


def test_mmd_magnet_is_not_uniform_in_kuhn():
  """Kuhn, player 0's first decision: checking leads to one more decision (fold or call a bet)
  and betting to none, so the centre checks with 2/3."""
  compiled = jaxgt.load("kuhn_poker")
  pt = compiled.device_tree("float64").players[0]
  centre = dilated_entropy_centre(pt)
  first = [i for i, k in enumerate(compiled.infostate_keys[0]) if int(np.asarray(pt.level)[i]) == 0]
  assert first
  for i in first:
    np.testing.assert_allclose(centre[i], [2 / 3, 1 / 3], atol=1e-15)
