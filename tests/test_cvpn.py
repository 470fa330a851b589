"""PBS encoding, the CVPN, its fit, and the network leaf adapter against independent paths."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

import jaxgt
from jaxgt.core import public_tree as ptm
from oracle_games.rps_plus import RockPaperScissorsPlus
from jaxgt.nets import cvpn
from jaxgt.nets import encoding as enc_lib
from jaxgt.nets import gtcfr_evaluator as ge
from jaxgt.search import device_tree as dt
from jaxgt.search import evaluator as evaluators
from jaxgt.search import gtcfr as gt
from jaxgt.search import subgame


@functools.lru_cache(maxsize=None)
def _game(name):
  g = jaxgt.load(name)
  return g, enc_lib.build_encoding(g)


def _random_policy(tree, rng, alpha=1.0):
  out = []
  for p in (0, 1):
    legal = np.asarray(tree.players[p].legal)
    x = rng.dirichlet(alpha * np.ones(tree.num_actions), size=legal.shape[0]) * legal
    out.append(jnp.asarray(x / x.sum(-1, keepdims=True)))
  return tuple(out)


@pytest.mark.parametrize("name", ["kuhn_poker", "leduc_poker"])
def test_encoding_layout(name):
  g, enc = _game(name)
  pt = enc.public_tree
  P = pt.num_public_states
  assert enc.slots.shape == (P, 2, enc.k_max)
  assert enc.k_max == max(len(x) for p in (0, 1) for x in pt.infostates[p])
  for s in range(P):
    for p in (0, 1):
      k = len(pt.infostates[p][s])
      assert enc.mask[s, p].sum() == k
      np.testing.assert_array_equal(enc.slots[s, p, :k], pt.infostates[p][s])
  # Legal actions exactly at the slots whose player acts, matching the compiled game.
  for p in (0, 1):
    info = enc.policy_infostate[:, p]
    assert set(np.unique(info[info >= 0])) == set(range(g.tree.num_infostates[p]))
    np.testing.assert_array_equal(enc.legal[:, p].any(-1), info >= 0)
    np.testing.assert_array_equal(enc.legal[:, p][info >= 0],
                                  np.asarray(g.tree.players[p].legal)[info[info >= 0]])
  # Features: fixed size, and injective over public states.
  f = np.asarray(enc_lib.features(enc, np.arange(P)))
  assert f.shape == (P, enc.feature_size)
  assert len({r.tobytes() for r in f}) == P
  np.testing.assert_allclose(f[:, enc.max_depth + 1:enc.max_depth + 5].sum(-1), 1.0)
  assert np.all(enc.hist_q.sum(-1)[~pt.terminal_public] == pytest.approx(1.0))


def test_range_gather_scatter_round_trip():
  g, enc = _game("leduc_poker")
  pt = enc.public_tree
  pol = _random_policy(g.device_tree("float64"), np.random.default_rng(3))
  flat = ptm.ranges(pt, pol)
  ids = np.flatnonzero(~pt.terminal_public)
  R = enc_lib.gather_ranges(enc, ids, flat)
  assert R.shape == (len(ids), 2, enc.k_max)
  s = int(ids[7])
  local = ptm.public_belief_state(pt, s, pol)
  np.testing.assert_allclose(enc_lib.pad_ranges(enc, s, *local), R[7], atol=1e-12)
  back = enc_lib.scatter(enc, ids, R)
  for p in (0, 1):
    inside = np.isin(pt.aug_public[p], ids)
    np.testing.assert_allclose(np.asarray(back[p])[inside], np.asarray(flat[p])[inside])
  pbs = enc_lib.make_pbs(enc, ids, R)
  assert pbs.ranges.shape == R.shape
  # Policy scatter puts acting slots back into a full-game policy.
  probs = np.zeros((len(ids), 2, enc.k_max, enc.num_actions))
  for p in (0, 1):
    info = enc.policy_infostate[ids, p]
    probs[:, p] = np.where((info >= 0)[..., None], np.asarray(pol[p])[np.maximum(info, 0)], 0)
  zero = tuple(jnp.zeros_like(x) for x in pol)
  full = enc_lib.scatter_policy(enc, ids, probs, zero)
  for p in (0, 1):
    np.testing.assert_allclose(full[p], pol[p])


@pytest.mark.parametrize("name", ["kuhn_poker", "leduc_poker"])
def test_exact_cfvs_match_public_tree(name):
  """Network-scale CFVs, rescaled, equal :func:`public_tree.counterfactual_values`."""
  g, enc = _game(name)
  pt = enc.public_tree
  tree = g.device_tree("float64")
  pol = _random_policy(tree, np.random.default_rng(1))
  ref = ptm.counterfactual_values(pt, pol)
  ids = np.flatnonzero(~pt.terminal_public)
  R = enc_lib.gather_ranges(enc, ids, ptm.ranges(pt, pol))
  v = cvpn.continuation_cfvs(enc, pol)(enc_lib.PBS(public=jnp.asarray(ids), ranges=R))
  mass = enc_lib.gather_ranges(enc, ids, ptm.ranges(pt, pol, normalize=False)).sum(-1)[:, ::-1]
  got = enc_lib.scatter(enc, ids, enc_lib.to_game_scale(enc, ids, v, mass))
  for p in (0, 1):
    np.testing.assert_allclose(got[p], ref[p], atol=1e-12)
    assert float(jnp.max(jnp.abs(ref[p]))) > 0.1


def test_cvpn_shapes_and_masks():
  g, enc = _game("leduc_poker")
  model = cvpn.CVPN(enc, hidden=(32,), embed_dim=4)
  params = cvpn.init(model, jax.random.PRNGKey(0))
  rng = np.random.default_rng(0)
  ids = rng.choice(np.flatnonzero(~enc.public_tree.terminal_public), size=(3, 5))
  r = rng.random((3, 5, 2, enc.k_max)) * enc.mask[ids]
  r = r / r.sum(-1, keepdims=True)
  out = model.apply(params, enc_lib.make_pbs(enc, ids, r))
  K, A = enc.k_max, enc.num_actions
  assert out.values.shape == (3, 5, 2, K) and out.policy.shape == (3, 5, 2, K, A)
  assert np.all(np.asarray(out.values)[~enc.mask[ids]] == 0)
  legal = enc.legal[ids]
  sums = np.asarray(out.policy).sum(-1)
  np.testing.assert_allclose(sums[legal.any(-1)], 1.0, atol=1e-5)
  assert np.all(sums[~legal.any(-1)] == 0) and np.all(np.asarray(out.policy)[~legal] == 0)
  # The actor's row carries the policy at decision public states.
  for s in np.unique(ids):
    if enc.actor[s, 0] == 1:
      assert legal[ids == s][0, 0].any() and not legal[ids == s][0, 1].any()


def _same_solution(g, enc, root, ranges, ev_a, ev_b, iterations, depth):
  """Both evaluators give the same device-tree solve of the subgame at ``root``."""
  src = dt.source_from_game(g)
  tree = subgame.subgame_tree(src, root, depth_limit=depth)
  cfg = gt.make_config(src, simulations=1, capacity=tree.capacity)
  padded = gt.root_ranges(src, root, ranges)
  a = gt.solve_tree(src, cfg, ev_a, tree, padded, iterations)
  b = gt.solve_tree(src, cfg, ev_b, tree, padded, iterations)
  np.testing.assert_allclose(np.asarray(b.root_values), np.asarray(a.root_values), atol=1e-10)
  for p in (0, 1):
    np.testing.assert_allclose(np.asarray(b.policy[p]), np.asarray(a.policy[p]), atol=1e-9)
  return float(np.asarray(a.root_values)[0].sum())


def _adapter(enc, g, fn):
  """The network adapter fed by ``fn(PBS) -> cfvs`` (no prior)."""
  return ge.pbs_evaluator(dt.source_from_game(g), enc, lambda state, pbs: (fn(pbs), None))


# Leduc with -m slow; by default the adapter runs on Leduc in test_network_as_leaf_evaluator and
# test_factored_form.test_network_adapter_equals_the_compiled_games
@pytest.mark.parametrize("name,depth", [("kuhn_poker", 4),
                                        pytest.param("leduc_poker", 4, marks=pytest.mark.slow)])
def test_oracle_cfvs_through_adapter_reproduce_continuation(name, depth):
  """Exact CFVs of a continuation profile through the network adapter == the exact
  continuation evaluator (:func:`jaxgt.search.evaluator.continuation`)."""
  g, enc = _game(name)
  pol = _random_policy(g.device_tree("float64"), np.random.default_rng(2))
  src = dt.source_from_game(g)
  _same_solution(g, enc, 0, None, evaluators.continuation(src, pol),
                 _adapter(enc, g, cvpn.continuation_cfvs(enc, pol)), 300, depth)


def test_adapter_at_inner_root_uses_root_ranges():
  """Kuhn subgame at player 0's first decision (3 x 3 root infostates), non-uniform ranges."""
  g, enc = _game("kuhn_poker")
  pt = enc.public_tree
  root = int(pt.at_depth(2)[0])
  pol = _random_policy(g.device_tree("float64"), np.random.default_rng(4))
  r0, r1 = np.array([0.5, 0.3, 0.2]), np.array([0.1, 0.3, 0.6])
  v = _same_solution(g, enc, root, (r0, r1), evaluators.continuation(dt.source_from_game(g), pol),
                     _adapter(enc, g, cvpn.continuation_cfvs(enc, pol)), 300, 2)
  assert abs(v) > 1e-3


def test_network_as_leaf_evaluator():
  g, enc = _game("leduc_poker")
  src = dt.source_from_game(g)
  model = cvpn.CVPN(enc, hidden=(16,))
  params = cvpn.init(model, jax.random.PRNGKey(1))
  tree = subgame.subgame_tree(src, 0, depth_limit=4)
  cfg = gt.make_config(src, simulations=1, capacity=tree.capacity)
  ev = ge.cvpn_evaluator(src, model, params, chunk=5)
  res = gt.solve_tree(src, cfg, ev, tree, gt.root_ranges(src, 0), 20)
  assert np.isfinite(np.asarray(res.root_values)).all()
  bad = _adapter(enc, g, lambda pbs: jnp.zeros((1, 2, enc.k_max)))
  with pytest.raises(ValueError, match="network values must have shape"):
    gt.solve_tree(src, cfg, bad, tree, gt.root_ranges(src, 0), 2)


@pytest.mark.slow  # over the default run's time budget
def test_fit_kuhn_exact_targets():
  """Values of a fixed continuation profile at PBSs from random policies; held-out
  loss far below the initial one and the per-slot mean predictor; the policy head
  learns the continuation policy (cross entropy -> its entropy)."""
  g, enc = _game("kuhn_poker")
  pt = enc.public_tree
  tree = g.device_tree("float64")
  rng = np.random.default_rng(0)
  cont = _random_policy(tree, rng)
  ids = np.flatnonzero(~pt.terminal_public)
  gather = jax.jit(lambda pol: enc_lib.gather_ranges(enc, ids, ptm.ranges(pt, pol)))
  n, n_train = 300, 240
  R = np.concatenate([np.asarray(gather(_random_policy(tree, rng, 0.5))) for _ in range(n)])
  pub = np.tile(ids, n)
  pbs = enc_lib.make_pbs(enc, pub, R)
  values = cvpn.continuation_cfvs(enc, cont)(pbs)
  policy = np.zeros(enc.legal[pub].shape)
  for p in (0, 1):
    info = enc.policy_infostate[pub, p]
    policy[:, p] = np.where((info >= 0)[..., None], np.asarray(cont[p])[np.maximum(info, 0)], 0)
  data = (pbs, cvpn.CVPNTargets(values=values, policy=jnp.asarray(policy)))
  cut = n_train * len(ids)
  train = jax.tree_util.tree_map(lambda a: a[:cut], data)
  test = jax.tree_util.tree_map(lambda a: a[cut:], data)
  model = cvpn.CVPN(enc, hidden=(64, 64))
  params = cvpn.init(model, jax.random.PRNGKey(0))
  v0, c0 = cvpn.losses(model, params, *test)
  mean = np.zeros((pt.num_public_states, 2, enc.k_max))
  for s in ids:
    mean[s] = np.asarray(train[1].values)[np.asarray(train[0].public) == s].mean(0)
  tp = np.asarray(test[0].public)
  m = enc.mask[tp]
  base = np.asarray(optax.huber_loss(mean[tp], np.asarray(test[1].values)))
  baseline = base[m].mean()
  params, trace = cvpn.fit(model, params, *train, steps=600, learning_rate=3e-3, batch_size=256,
                           policy_weight=0.1, key=jax.random.PRNGKey(1))
  assert trace.shape == (600,) and np.all(np.isfinite(trace))
  v1, c1 = cvpn.losses(model, params, *test)
  p = policy[cut:]
  rows = p.sum(-1) > 0
  entropy = -np.sum(np.where(p > 0, p * np.log(np.where(p > 0, p, 1)), 0), -1)[rows].mean()
  print(f"held-out value loss {float(v1):.2e}, initial {float(v0):.2e}, mean predictor "
        f"{baseline:.2e}; policy CE {float(c1):.4f} vs entropy {entropy:.4f}")
  assert float(v1) < 0.05 * baseline and float(v1) < 1e-3 * float(v0)
  assert float(c1) < float(c0) and float(c1) - entropy < 0.02


class _ForgetfulRPS(RockPaperScissorsPlus):
  """Player 0's augmented information state at player 1's move forgets its own move."""

  def information_state(self, s, player):
    return "p0:waiting" if player == 0 and s else super().information_state(s, player)


def test_bad_inputs():
  g, enc = _game("kuhn_poker")
  s = 2  # 3 x 3 information states
  with pytest.raises(ValueError, match=r"shape \(3,\)"):
    enc_lib.pad_ranges(enc, s, [0.5, 0.5], [1 / 3] * 3)
  with pytest.raises(ValueError, match="sums to"):
    enc_lib.pad_ranges(enc, s, [0.5, 0.5, 0.5], [1 / 3] * 3)
  with pytest.raises(ValueError, match="another game"):
    enc_lib.pad_ranges(enc, jaxgt.load("leduc_poker").public_keys[5], [1.0], [1.0])
  good = enc_lib.pad_ranges(enc, s, [0.2, 0.3, 0.5], [1 / 3] * 3)
  with pytest.raises(ValueError, match="shape"):
    enc_lib.make_pbs(enc, [s], good[None, :, :2])
  with pytest.raises(ValueError, match="padding"):
    enc_lib.make_pbs(enc, [1], good[None])  # public state 1: player 1 has one infostate
  with pytest.raises(ValueError, match="sum to one"):
    enc_lib.make_pbs(enc, [s], 2 * good[None])
  with pytest.raises(ValueError, match="out of range|lie in"):
    enc_lib.make_pbs(enc, [99], good[None])
  with pytest.raises(ValueError, match="augmented information state"):
    enc_lib.gather_ranges(enc, [s], (jnp.ones(4), jnp.ones(4)))
  with pytest.raises(ValueError, match="value_space must be one of"):
    cvpn.init(cvpn.CVPN(enc, hidden=(8,), value_space="conditional"), jax.random.PRNGKey(0))
  model = cvpn.CVPN(enc, hidden=(8,))
  params = cvpn.init(model, jax.random.PRNGKey(0))
  with pytest.raises(ValueError, match="PBS ranges must have shape"):
    model.apply(params, enc_lib.PBS(public=jnp.array([s]), ranges=jnp.zeros((1, 2, 6))))
  pbs = enc_lib.make_pbs(enc, [s], good[None])
  with pytest.raises(ValueError, match="value targets"):
    cvpn.losses(model, params, pbs, cvpn.CVPNTargets(values=jnp.zeros((1, 2, 2))))
  with pytest.raises(ValueError, match="leading batch"):
    cvpn.fit(model, params, pbs, cvpn.CVPNTargets(values=jnp.zeros((2, 2, 3))), steps=1,
             key=jax.random.PRNGKey(0))
  # An encoding of another game.
  with pytest.raises(ValueError, match="encoding is for"):
    ge.slot_map(dt.source_from_game(jaxgt.load("leduc_poker")), enc)
  # Imperfect-recall augmented information states have no well-defined range.
  with pytest.raises(ValueError, match="imperfect recall"):
    enc_lib.build_encoding(jaxgt.compile_game(_ForgetfulRPS()))
