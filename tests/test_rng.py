"""jaxgt.core.rng: jax.random's threefry stream bit for bit, with the hash unrolled."""

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxgt.core import rng


def _data(key):
  key = jnp.asarray(key)
  return np.asarray(jax.random.key_data(key) if jnp.issubdtype(key.dtype, jax.dtypes.prng_key)
                    else key)


KEYS = {"typed": lambda s: jax.random.key(s), "raw": lambda s: jax.random.PRNGKey(s),
        "rbg": lambda s: jax.random.key(s, impl="rbg")}  # rbg: jax.random's own functions


@pytest.mark.parametrize("kind", sorted(KEYS))
@pytest.mark.parametrize("seed", [0, 12345])
def test_fold_in_split_uniform_equal_jax_random(kind, seed):
  key = KEYS[kind](seed)
  for d in (0, 1, 7, np.int32(-1), np.uint32(2 ** 31 + 3)):
    got = jax.jit(rng.fold_in)(key, d)
    want = jax.random.fold_in(key, d)
    assert got.dtype == want.dtype and np.array_equal(_data(got), _data(want))
  for n in (1, 2, 3, 8):
    got = jax.jit(rng.split, static_argnums=1)(key, n)
    want = jax.random.split(key, n)
    assert got.shape == want.shape and np.array_equal(_data(got), _data(want))
  for shape in ((), (1,), (11, 1), (3, 5, 7)):
    for dtype in (jnp.float32, jnp.float64):
      got = jax.jit(rng.uniform, static_argnums=(1, 2))(key, shape, dtype)
      want = jax.random.uniform(key, shape, dtype)
      assert got.dtype == want.dtype and got.shape == want.shape
      np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_uniform_default_shape_and_dtype_follow_jax_random():
  """No shape gives a scalar; no dtype gives jax.random's default float (float64 under x64, as
  in these tests), the same values."""
  key = jax.random.key(5)
  got, want = jax.jit(rng.uniform)(key), jax.random.uniform(key)
  assert got.shape == want.shape == () and got.dtype == want.dtype == jnp.float64
  np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_fold_in_under_vmap_and_traced_data_equal_jax_random():
  keys = jax.random.split(jax.random.key(3), 4)
  steps = jnp.arange(4, dtype=jnp.int32)
  got = jax.jit(jax.vmap(rng.fold_in))(keys, steps)
  want = jax.vmap(jax.random.fold_in)(keys, steps)
  assert np.array_equal(_data(got), _data(want))


def test_unrolled_hash_compiles_without_a_loop():
  """On the CPU jax.random's threefry is a rolled while loop; ours is straight-line code."""
  key = jax.random.key(0)
  ours = jax.jit(lambda k: rng.uniform(rng.fold_in(k, 1), (11, 1))).lower(key).compile().as_text()
  assert not re.search(r"\bwhile\(", ours)


def test_fold_in_rejects_array_data():
  with pytest.raises(ValueError, match="scalar"):
    rng.fold_in(jax.random.key(0), np.arange(2))
