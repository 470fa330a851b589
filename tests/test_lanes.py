"""Work on the asking lanes of a batch: the gathered chunks equal the whole batch's map."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxgt.core.lanes import chunks, masked_vmap


def _fn(x, y):
  return {"sum": x * 3 + y, "neg": -x}


@pytest.mark.parametrize("B", [1, 5, 64, 300])
@pytest.mark.parametrize("rate", [0.0, 0.2, 1.0])
def test_masked_map_equals_the_whole_batch_where_masked(B, rate):
  rng = np.random.default_rng(B)
  x = jnp.asarray(rng.integers(0, 100, B), jnp.int32)
  y = jnp.asarray(rng.integers(0, 100, B), jnp.int32)
  mask = jnp.asarray(rng.random(B) < rate)
  fill = {"sum": jnp.int32(-7), "neg": jnp.int32(1)}
  got = jax.jit(lambda m, x, y: masked_vmap(_fn, m, (x, y), fill, split=4))(mask, x, y)
  whole = jax.vmap(_fn)(x, y)
  for k in whole:
    np.testing.assert_array_equal(got[k], np.where(mask, whole[k], fill[k]))


def test_chunks_order_the_asking_lanes_first():
  mask = jnp.asarray([False, True, False, True, True, False, False, True, False, False])
  order, K, n = chunks(mask, 4)
  assert K == 3 and int(n) == 4
  assert np.asarray(order).tolist() == [1, 3, 4, 7] + [10] * 8
