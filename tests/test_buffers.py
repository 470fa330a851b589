"""Device ring buffers of the training process: ring writes and sampling probabilities."""

import functools
import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxgt
from jaxgt.nets.encoding import PBS, build_encoding
from jaxgt.training import buffers

# Chi-square critical values at significance 0.001 (standard tables), by degrees of freedom.
_CHI2_999 = {2: 13.816, 3: 16.266, 5: 20.515}


def _chi2(counts, probs):
  counts = np.asarray(counts, np.float64)
  expected = counts.sum() * np.asarray(probs, np.float64)
  return float(np.sum((counts - expected) ** 2 / expected))


@functools.lru_cache(maxsize=None)
def _enc():
  return build_encoding(jaxgt.load("kuhn_poker"))


def _examples(ids):
  """Examples whose every field encodes its id (so the slot contents can be read back)."""
  enc = _enc()
  ids = np.asarray(ids)
  B, K, A = len(ids), enc.k_max, enc.num_actions
  f = ids.astype(np.float32)
  return buffers.ReplayExample(
      pbs=PBS(public=jnp.asarray(ids % enc.num_public_states, jnp.int32),
              ranges=jnp.broadcast_to(f[:, None, None], (B, 2, K))),
      values=jnp.broadcast_to(-f[:, None, None], (B, 2, K)),
      policy=jnp.broadcast_to(f[:, None, None, None], (B, 2, K, A)),
      value_mask=jnp.ones((B, 2, K), bool), policy_mask=jnp.asarray(ids % 2 == 0))


def test_ring_writes_keep_the_latest_valid_examples():
  buf = buffers.replay_buffer(_enc(), 5)
  add = jax.jit(buffers.add_replay)
  buf = add(buf, _examples([1, 2, 3, 4]), jnp.asarray([True, False, True, True]))
  assert int(buf.next) == 3 and int(buf.added) == 3
  np.testing.assert_array_equal(np.asarray(buf.data.values[:3, 0, 0]), [-1, -3, -4])
  assert list(np.asarray(buf.filled)) == [True] * 3 + [False] * 2
  buf = add(buf, _examples([5, 6, 7, 8]), jnp.ones(4, bool))  # wraps: 5, 6 then 7, 8 over 1, 3
  np.testing.assert_array_equal(np.asarray(buf.data.pbs.ranges[:, 0, 0]), [7, 8, 4, 5, 6])
  assert int(buf.next) == 2 and int(buf.added) == 7 and bool(buf.filled.all())
  np.testing.assert_array_equal(np.asarray(buf.data.policy_mask), [False, True, True, False, True])
  # More valid examples than the capacity: only the batch's last C are kept.
  buf = add(buf, _examples(np.arange(10, 18)), jnp.ones(8, bool))
  assert sorted(np.asarray(buf.data.values[:, 0, 0]).tolist()) == [-17, -16, -15, -14, -13]
  with pytest.raises(ValueError, match="validity mask"):
    buffers.add_replay(buf, _examples([1, 2]), jnp.ones(3, bool))


def test_replay_sampling_is_uniform_over_eligible_slots_with_bounded_uses():
  buf = buffers.replay_buffer(_enc(), 6)
  buf = buffers.add_replay(buf, _examples([0, 1, 2, 3]), jnp.ones(4, bool))
  bound = 10 ** 6
  buf = buf.replace(uses=buf.uses.at[1].set(bound))  # slot 1 used up
  n = 30000
  sample = jax.jit(buffers.sample_replay, static_argnums=(2, 3))
  out, ex, valid = sample(buf, jax.random.PRNGKey(0), n, bound)
  assert bool(valid.all())
  drawn = np.asarray(ex.pbs.ranges[:, 0, 0]).astype(int)
  counts = np.bincount(drawn, minlength=6)
  assert counts[1] == 0 and counts[4:].sum() == 0  # used up / empty slots never drawn
  stat = _chi2(counts[[0, 2, 3]], [1 / 3] * 3)
  assert stat < _CHI2_999[2], (counts, stat)
  # Use counts grew by the draws.
  np.testing.assert_array_equal(np.asarray(out.uses)[[0, 2, 3]], counts[[0, 2, 3]])
  # Repeated draws within one sample respect the bound: at most 2 valid draws per slot.
  out, ex, valid = sample(buf.replace(uses=buf.uses.at[1].set(2)), jax.random.PRNGKey(1), 40, 2)
  per = np.bincount(np.asarray(ex.pbs.ranges[:, 0, 0]).astype(int)[np.asarray(valid)],
                    minlength=6)
  np.testing.assert_array_equal(per, [2, 0, 2, 2, 0, 0])
  np.testing.assert_array_equal(np.asarray(out.uses)[:4], [2, 2, 2, 2])
  # With max_updates=1, a slot drawn once is never drawn again; nothing eligible -> invalid.
  b = buf
  seen = []
  for t in range(4):
    b, ex, valid = buffers.sample_replay(b, jax.random.PRNGKey(t), 1, 1)
    if bool(valid[0]):
      seen.append(int(ex.pbs.ranges[0, 0, 0]))
  assert sorted(seen) == [0, 2, 3]
  b, _, valid = buffers.sample_replay(b, jax.random.PRNGKey(9), 3, 1)
  assert not bool(valid.any())
  empty = buffers.replay_buffer(_enc(), 3)
  assert not bool(buffers.sample_replay(empty, jax.random.PRNGKey(0), 2)[2].any())
  with pytest.raises(ValueError, match="max_updates"):
    buffers.sample_replay(buf, jax.random.PRNGKey(0), 2, 0)


def test_query_sampling_takes_uniform_subsets_without_replacement():
  enc = _enc()
  buf = buffers.query_buffer(enc, 6)
  ids = jnp.asarray([0, 1, 2, 3, 4], jnp.int32)
  pbs = PBS(public=ids, ranges=jnp.broadcast_to(ids[:, None, None].astype(jnp.float32),
                                                 (5, 2, enc.k_max)))
  buf = buffers.add_queries(buf, pbs, jnp.asarray([True, True, False, True, True]))
  assert int(buf.added) == 4 and int(jnp.sum(buf.filled)) == 4
  trials = 6000
  take = jax.jit(jax.vmap(lambda k: buffers.sample_queries(buf, k, 2)))
  after, got, valid = take(jax.random.split(jax.random.PRNGKey(1), trials))
  assert bool(valid.all())
  pairs = np.sort(np.asarray(got.public), axis=1)
  assert np.all(pairs[:, 0] != pairs[:, 1])  # without replacement
  subsets = list(itertools.combinations([0, 1, 3, 4], 2))
  counts = [int(np.sum(np.all(pairs == s, axis=1))) for s in subsets]
  assert sum(counts) == trials  # only filled slots are taken
  assert _chi2(counts, [1 / 6] * 6) < _CHI2_999[5], counts
  # Taken queries are removed: two left, then none.
  b, first, _ = buffers.sample_queries(buf, jax.random.PRNGKey(0), 2)
  assert int(jnp.sum(b.filled)) == 2
  b, second, valid = buffers.sample_queries(b, jax.random.PRNGKey(1), 3)
  assert list(np.asarray(valid)) == [True, True, False]
  assert sorted(np.asarray(first.public).tolist() + np.asarray(second.public)[:2].tolist()) == \
      [0, 1, 3, 4]
  assert int(jnp.sum(b.filled)) == 0
  with pytest.raises(ValueError, match="capacity"):
    buffers.sample_queries(buf, jax.random.PRNGKey(0), 7)
