"""``jax.random``'s threefry stream with the hash unrolled: the same bits, fewer operations.

On the CPU, JAX lowers the Threefry-2x32 hash (Salmon et al. 2011, 20
rounds) as a rolled ``while`` loop of five iterations, to keep compile times
short. Inside a solver's step loop that costs one nested loop per
:func:`jax.random.fold_in`, ``split`` or ``uniform``, several microseconds
each, which is most of a step of a sampled solver at batch 1. The functions
here compute the same values as their ``jax.random`` namesakes from the
same key, bit for bit, with the 20 rounds written out: element-wise integer
operations that XLA fuses into one kernel.

They follow ``jax.random`` for ``threefry2x32`` keys (typed ``jax.random.key``
keys, or raw ``uint32 [2]`` keys when it is the default implementation) under
``jax_threefry_partitionable`` (JAX's default); for any other key, or with
that flag off, they call ``jax.random`` itself.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))


def threefry2x32(k1, k2, x1, x2):
  """Threefry-2x32 (20 rounds) of the counter pairs ``(x1, x2)`` under key ``(k1, k2)``, all
  ``uint32`` and broadcastable; returns the two output words (JAX's ``threefry2x32_p``)."""
  ks = (k1, k2, k1 ^ k2 ^ np.uint32(0x1BD11BDA))
  x1, x2 = x1 + ks[0], x2 + ks[1]
  for i in range(5):
    for r in _ROTATIONS[i % 2]:
      x1 = x1 + x2
      x2 = (x2 << np.uint32(r)) | (x2 >> np.uint32(32 - r))
      x2 = x1 ^ x2
    x1 = x1 + ks[(i + 1) % 3]
    x2 = x2 + ks[(i + 2) % 3] + np.uint32(i + 1)
  return x1, x2


def _threefry_words(key):
  """``(k1, k2)`` of a threefry key, or ``None`` where :mod:`jax.random` must handle it."""
  key = jnp.asarray(key)
  if jnp.issubdtype(key.dtype, jax.dtypes.prng_key):
    if key.shape != () or str(jax.random.key_impl(key)) != "threefry2x32":
      return None
    data = jax.random.key_data(key)
  elif key.dtype == jnp.uint32 and key.shape == (2,):
    if jax.config.jax_default_prng_impl != "threefry2x32":
      return None
    data = key
  else:
    return None
  return data[0], data[1]


def _like(key, k1, k2):
  """A key of ``key``'s kind (typed or raw) holding the words ``(k1, k2) [..., 2]``."""
  data = jnp.stack([k1, k2], axis=-1)
  if jnp.issubdtype(jnp.asarray(key).dtype, jax.dtypes.prng_key):
    return jax.random.wrap_key_data(data, impl="threefry2x32")
  return data


def _counts(shape):
  """The counter pairs ``(hi, lo) [*shape]`` of ``jax.random``: an iota over ``prod(shape)``."""
  size = int(np.prod(shape, dtype=np.int64))
  if size >= 2 ** 32:
    raise ValueError(f"at most 2**32 - 1 draws at once, got shape {shape}")
  lo = jax.lax.iota(jnp.uint32, size).reshape(shape)
  return jnp.zeros(shape, jnp.uint32), lo


def fold_in(key, data):
  """:func:`jax.random.fold_in` (the same key)."""
  words = _threefry_words(key)
  if words is None:
    return jax.random.fold_in(key, data)
  if np.ndim(data):
    raise ValueError(f"fold_in data must be a scalar, got shape {np.shape(data)}")
  # jax.random folds in the 64-bit seed (0, data) of ``data`` as uint32.
  o1, o2 = threefry2x32(words[0], words[1], jnp.uint32(0), jnp.asarray(data, jnp.uint32))
  return _like(key, o1, o2)


def split(key, num: int = 2):
  """:func:`jax.random.split` into ``num`` keys (the same keys)."""
  words = _threefry_words(key)
  if words is None or not jax.config.jax_threefry_partitionable:
    return jax.random.split(key, num)
  hi, lo = _counts((num,))
  return _like(key, *threefry2x32(words[0], words[1], hi, lo))


def uniform(key, shape=(), dtype=None):
  """:func:`jax.random.uniform` in ``[0, 1)`` of ``shape`` and float ``dtype`` (the same values;
  ``dtype`` defaults like ``jax.random``'s: float64 under ``jax_enable_x64``, else float32)."""
  shape = tuple(int(s) for s in shape)
  dtype = jnp.zeros((), float).dtype if dtype is None else jnp.dtype(dtype)
  words = _threefry_words(key)
  if words is None or not jax.config.jax_threefry_partitionable or dtype.itemsize not in (4, 8):
    return jax.random.uniform(key, shape, dtype)
  b1, b2 = threefry2x32(words[0], words[1], *_counts(shape))
  nmant = jnp.finfo(dtype).nmant
  if dtype.itemsize == 4:
    bits, udt = b1 ^ b2, jnp.uint32
  else:
    udt = jnp.uint64
    bits = (b1.astype(udt) << udt(32)) | b2.astype(udt)
  nbits = 8 * dtype.itemsize
  one = np.array(1.0, dtype).view(udt)
  floats = jax.lax.bitcast_convert_type((bits >> udt(nbits - nmant)) | one, dtype) - dtype.type(1)
  return jnp.maximum(dtype.type(0), floats)
