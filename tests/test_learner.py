"""The learner: loss against a NumPy hand computation, the learning-rate schedule, a tiny
run that lowers the loss, bounded updates per example, masks."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxgt
from jaxgt.core import sequence_form as sf
from jaxgt.nets import cvpn
from jaxgt.nets.encoding import PBS, build_encoding
from jaxgt.training import buffers
from jaxgt.training import learner as lr


@functools.lru_cache(maxsize=None)
def _setup(name="leduc_poker"):
  g = jaxgt.load(name)
  enc = build_encoding(g)
  return g, enc, cvpn.CVPN(enc, hidden=(32, 32))


def _random_pbs(enc, rng, n):
  ids = rng.choice(np.flatnonzero(~enc.public_tree.terminal_public), size=n)
  r = rng.random((n, 2, enc.k_max)) * enc.mask[ids]
  tot = r.sum(-1, keepdims=True)
  r = np.where(tot > 0, r / np.where(tot > 0, tot, 1), 0.0)
  return PBS(public=jnp.asarray(ids, jnp.int32), ranges=jnp.asarray(r, jnp.float32))


def _examples(enc, rng, n, policy):
  """Exact continuation targets of ``policy`` at random PBSs; policy targets ``policy``."""
  pbs = _random_pbs(enc, rng, n)
  values = cvpn.continuation_cfvs(enc, policy)(pbs)
  ids = np.asarray(pbs.public)
  pol = np.zeros((n, 2, enc.k_max, enc.num_actions))
  info = enc.policy_infostate[ids]  # [n, 2, K]
  for p in (0, 1):
    ok = info[:, p] >= 0
    pol[:, p][ok] = np.asarray(policy[p])[info[:, p][ok]]
  return buffers.ReplayExample(pbs=pbs, values=jnp.asarray(values, jnp.float32),
                               policy=jnp.asarray(pol, jnp.float32),
                               value_mask=jnp.ones((n, 2, enc.k_max), bool),
                               policy_mask=jnp.asarray(rng.random(n) < 0.7))


def _huber(x, d):
  a = np.abs(x)
  return np.where(a <= d, 0.5 * x * x, d * (a - 0.5 * d))


def test_loss_equals_hand_computation():
  g, enc, model = _setup()
  rng = np.random.default_rng(0)
  params = cvpn.init(model, jax.random.PRNGKey(3))
  pol = sf.uniform_policy(g.device_tree("float64"), jnp.float64)
  ex = _examples(enc, rng, 6, pol)
  # Garbage on padded slots and illegal actions must not count.
  ids = np.asarray(ex.pbs.public)
  K, A = enc.k_max, enc.num_actions
  vals = np.asarray(ex.values).copy()
  vals[~enc.mask[ids]] = 50.0
  tp = rng.dirichlet(np.ones(A), size=(6, 2, K)) * enc.legal[ids]
  tp = np.where(tp.sum(-1, keepdims=True) > 0, tp / np.maximum(tp.sum(-1, keepdims=True), 1e-30),
                0.0)
  tp_bad = tp + 7.0 * ~enc.legal[ids]
  # Per-slot value masks: example 2 has no value targets, example 3 only one slot per player
  # (a TD(1) outcome row), the others all their slots.
  vmask = np.ones((6, 2, K), bool)
  vmask[2] = False
  vmask[3] = False
  vmask[3, 0, np.flatnonzero(enc.mask[ids[3], 0])[-1]] = True
  vmask[3, 1, np.flatnonzero(enc.mask[ids[3], 1])[0]] = True
  ex = ex.replace(values=jnp.asarray(vals, jnp.float32), policy=jnp.asarray(tp_bad, jnp.float32),
                  value_mask=jnp.asarray(vmask),
                  policy_mask=jnp.asarray([True, False, True, True, True, True]))
  valid = np.array([True, True, True, True, True, False])
  cfg = lr.LearnerConfig(huber_delta=0.3, value_weight=0.7, policy_weight=0.05)
  total, (vl, pl) = lr.loss(model, params, ex, cfg, jnp.asarray(valid))
  out = model.apply(params, ex.pbs)
  v, logits = np.asarray(out.values, np.float64), np.asarray(out.logits, np.float64)
  value_terms, n_value, kl_sum, n_pol = 0.0, 0, 0.0, 0
  legal = enc.legal[ids]
  for b in range(6):
    if not valid[b]:
      continue
    for p in (0, 1):
      for k in range(K):
        if vmask[b, p, k] and enc.mask[ids[b], p, k]:
          value_terms += _huber(v[b, p, k] - vals[b, p, k], 0.3)
          n_value += 1
    if np.asarray(ex.policy_mask)[b]:
      n_pol += 1
      for p in (0, 1):
        for k in range(K):
          lg = legal[b, p, k]
          if not lg.any():
            continue
          z = logits[b, p, k][lg]
          logq = z - np.log(np.exp(z - z.max()).sum()) - z.max()
          t = tp[b, p, k][lg]
          nz = t > 0
          kl_sum += np.sum(t[nz] * (np.log(t[nz]) - logq[nz]))
  want_v = value_terms / n_value
  want_p = kl_sum / n_pol
  assert float(vl) == pytest.approx(want_v, rel=1e-5)
  assert float(pl) == pytest.approx(want_p, rel=1e-5)
  assert float(total) == pytest.approx(0.7 * want_v + 0.05 * want_p, rel=1e-5)
  assert want_p > 0.01 and want_v > 1e-4


def test_value_loss_is_the_mean_over_masked_in_slots():
  """A TD(1) row (two held slots) next to a search row (all slots): the value loss is the
  Huber sum over the masked-in slots divided by their count, by hand; targets on masked-out
  slots (garbage here) and a mask-only change move nothing else."""
  g, enc, model = _setup("kuhn_poker")
  params = cvpn.init(model, jax.random.PRNGKey(0))
  s = int(np.flatnonzero(enc.mask.sum((1, 2)) == 6)[0])  # a public state with 3 + 3 slots
  K = enc.k_max
  pbs = PBS(public=jnp.asarray([s, s], jnp.int32),
            ranges=jnp.full((2, 2, K), 1.0 / 3, jnp.float32))
  targets = np.array([[[0.5, -0.25, 1.0], [-0.5, 0.0, 0.75]],
                      [[0.0, 0.2, 9e3], [-0.2, 9e3, 9e3]]], np.float32)  # garbage: masked out
  vmask = np.zeros((2, 2, K), bool)
  vmask[0] = True  # the search row
  vmask[1, 0, 1] = vmask[1, 1, 0] = True  # the TD(1) row: player 0 holds slot 1, player 1 slot 0
  ex = buffers.ReplayExample(pbs=pbs, values=jnp.asarray(targets),
                             policy=jnp.zeros((2, 2, K, enc.num_actions), jnp.float32),
                             value_mask=jnp.asarray(vmask), policy_mask=jnp.zeros(2, bool))
  cfg = lr.LearnerConfig(huber_delta=1.0)
  _, (vl, pl) = lr.loss(model, params, ex, cfg)
  v = np.asarray(model.apply(params, pbs).values, np.float64)
  terms = [_huber(v[0, p, k] - targets[0, p, k], 1.0) for p in (0, 1) for k in range(3)]
  terms += [_huber(v[1, 0, 1] - targets[1, 0, 1], 1.0), _huber(v[1, 1, 0] - targets[1, 1, 0], 1.0)]
  assert float(vl) == pytest.approx(sum(terms) / 8, rel=1e-6)
  assert float(pl) == 0.0
  # The TD(1) row alone: its two slots, mean over 2.
  _, (vl1, _) = lr.loss(model, params, ex, cfg, jnp.asarray([False, True]))
  assert float(vl1) == pytest.approx(sum(terms[6:]) / 2, rel=1e-6)
  # Nothing masked in: zero (the normalisation's floor of 1), not NaN.
  _, (vl0, _) = lr.loss(model, params, ex.replace(value_mask=jnp.zeros_like(ex.value_mask)), cfg)
  assert float(vl0) == 0.0


def test_expected_value_space_fits_values_over_their_mass_in_payoff_units():
  """With ``value_space="expected"`` the value loss compares the value head with the targets
  divided by the counterfactual mass and the largest payoff: in Kuhn's first public state
  after the deal, uniform ranges give every card mass 2 deals x 1/6 x 1/3 = 1/9, and the
  payoff unit is 2 (by hand); the network's values are the head times 1/9 x 2; a slot the
  opponent's range gives no weight has no target."""
  g = jaxgt.load("kuhn_poker")
  enc = build_encoding(g)
  model = cvpn.CVPN(enc, hidden=(16,), value_space="expected")
  params = cvpn.init(model, jax.random.PRNGKey(0))
  s = int(np.flatnonzero(enc.mask.sum((1, 2)) == 6)[0])
  K = enc.k_max
  ranges = np.full((2, 2, K), 1.0 / 3)
  ranges[1, 1] = [0.5, 0.5, 0.0]  # example 1: player 1 never holds slot 2's card
  pbs = PBS(public=jnp.asarray([s, s], jnp.int32), ranges=jnp.asarray(ranges, jnp.float32))
  targets = np.array([[[0.05, -0.1, 0.2], [-0.05, 0.0, 0.15]],
                      [[0.1, 0.02, -0.08], [0.0, 0.1, -0.2]]], np.float32)
  ex = buffers.ReplayExample(pbs=pbs, values=jnp.asarray(targets),
                             policy=jnp.zeros((2, 2, K, enc.num_actions), jnp.float32),
                             value_mask=jnp.ones((2, 2, K), bool), policy_mask=jnp.zeros(2, bool))
  _, (vl, _) = lr.loss(model, params, ex, lr.LearnerConfig(huber_delta=1.0))
  out = model.apply(params, pbs)
  head = np.asarray(out.head, np.float64)
  # example 1, player 0's slot a: the deals where player 1 holds another card, each 1/6,
  # times r_1 of player 1's slot with that card (slots name cards in each player's order)
  card = [[int(g.aug_keys[p][i][0]) for i in enc.slots[s, p]] for p in (0, 1)]
  mass = np.full((2, 2, K), 1.0 / 9)
  mass[1, 0] = [sum(ranges[1, 1, b] / 6 for b in range(K) if card[1][b] != card[0][a])
                for a in range(K)]
  np.testing.assert_allclose(np.asarray(enc.counterfactual_mass(pbs.public, pbs.ranges)), mass,
                             rtol=1e-6)
  np.testing.assert_allclose(np.asarray(out.values), head * mass * 2.0, rtol=1e-5, atol=1e-8)
  terms = [_huber(head[b, p, k] - targets[b, p, k] / (mass[b, p, k] * 2.0), 1.0)
           for b in (0, 1) for p in (0, 1) for k in range(K)]
  assert float(vl) == pytest.approx(np.mean(terms), rel=1e-5)
  # player 1 surely holds slot 2's card: player 0's slot 2 has no mass, and no target
  ranges[1, 1] = np.asarray(card[1]) == card[0][2]
  pbs0 = pbs.replace(ranges=jnp.asarray(ranges, jnp.float32))
  m0 = np.asarray(enc.counterfactual_mass(pbs0.public, pbs0.ranges))
  assert m0[1, 0, 2] == 0.0 and np.all(m0[1, 0, :2] > 0)
  _, (vl0, _) = lr.loss(model, params, ex.replace(pbs=pbs0), lr.LearnerConfig(huber_delta=1.0))
  head0 = np.asarray(model.apply(params, pbs0).head, np.float64)
  terms0 = [_huber(head0[b, p, k] - targets[b, p, k] / (m0[b, p, k] * 2.0), 1.0)
            for b in (0, 1) for p in (0, 1) for k in range(K) if (b, p, k) != (1, 0, 2)]
  assert float(vl0) == pytest.approx(np.mean(terms0), rel=1e-5)


def test_learning_rate_schedule_and_config_checks():
  cfg = lr.LearnerConfig(alpha_init=0.1, decay=0.5, decay_steps=1000)
  sched = lr.learning_rate(cfg)
  for t in (0, 1, 500, 1000, 2500):
    assert float(sched(t)) == pytest.approx(0.1 * 0.5 ** (t / 1000), rel=1e-6)
  assert lr.SCOTLAND_YARD_TABLE_S2.batch_size == 1024
  for bad in (dict(batch_size=0), dict(decay=1.5), dict(optimizer="rmsprop"),
              dict(huber_delta=0.0), dict(max_updates=0)):
    with pytest.raises(ValueError):
      lr.LearnerConfig(**bad)


@pytest.mark.parametrize("optimizer", ["adam", pytest.param("sgd", marks=pytest.mark.slow)])
def test_tiny_run_lowers_the_loss_with_bounded_updates(optimizer):
  g, enc, model = _setup()
  rng = np.random.default_rng(1)
  tree = g.device_tree("float64")
  legal = [np.asarray(tree.players[p].legal) for p in (0, 1)]
  pol = tuple(jnp.asarray(x / x.sum(-1, keepdims=True))
              for x in (rng.dirichlet(np.ones(tree.num_actions), l.shape[0]) * l for l in legal))
  ex = _examples(enc, rng, 256, pol)
  replay = buffers.add_replay(buffers.replay_buffer(enc, 512), ex, jnp.ones(256, bool))
  cfg = lr.LearnerConfig(batch_size=64, alpha_init=3e-3 if optimizer == "adam" else 0.3,
                         optimizer=optimizer, max_updates=40, momentum=0.9 if optimizer == "sgd"
                         else 0.0)
  state = lr.init_learner(model, jax.random.PRNGKey(0), cfg)
  before = float(lr.loss(model, state.params, ex, cfg)[0])
  drawn = 0
  for t in range(120):
    state, replay, m = lr.learner_step(model, cfg, state, replay, jax.random.fold_in(
        jax.random.PRNGKey(5), t))
    drawn += int(m["examples"])
  after = float(lr.loss(model, state.params, ex, cfg)[0])
  assert after < (0.5 if optimizer == "adam" else 0.7) * before, (before, after)
  assert int(state.step) == 120
  uses = np.asarray(replay.uses)
  assert uses.sum() == drawn > 0.9 * 120 * 64 and uses.max() <= 40
  # Bounded updates: a used-up buffer leaves the state unchanged.
  replay = replay.replace(uses=jnp.full_like(replay.uses, 40))
  st2, _, m = lr.learner_step(model, cfg, state, replay, jax.random.PRNGKey(0))
  assert int(m["examples"]) == 0 and int(st2.step) == int(state.step)
  for a, b in zip(jax.tree_util.tree_leaves(st2.params), jax.tree_util.tree_leaves(state.params)):
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
