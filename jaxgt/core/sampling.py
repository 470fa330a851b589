"""Drawing from discrete distributions with explicit uniforms: the one CDF sampler.

Every sampled algorithm (MCCFR, OOS, ISMCTS, UCT) and the match referee draw
actions the same way: a uniform ``u`` from a ``jax.random`` key, then the
first index whose cumulative weight exceeds ``u`` times the total. Passing
the uniforms in (instead of keys) lets a walk draw all of its uniforms at
once and keeps results reproducible bit for bit from a seed.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


def sample_index(weights: jax.Array, u: jax.Array) -> jax.Array:
  """Index drawn from non-negative ``weights [..., K]`` with uniforms ``u [...]`` in ``[0, 1)``.

  Weights need not be normalised; the draw is ``min(#{k: cdf_k <= u * total}, K - 1)``,
  so a zero-weight entry is never drawn (unless every weight is zero, when
  ``K - 1`` is returned). ``int32``, shape ``[...]``.
  """
  cdf = jnp.cumsum(weights, axis=-1)
  idx = jnp.sum(cdf <= (u * cdf[..., -1])[..., None], axis=-1)
  return jnp.minimum(idx, weights.shape[-1] - 1).astype(jnp.int32)


def mix_uniform(policy: jax.Array, legal: jax.Array, epsilon) -> jax.Array:
  """``(1 - epsilon) * policy + epsilon * uniform(legal)`` over the last axis."""
  uniform = legal / jnp.maximum(jnp.sum(legal, axis=-1, keepdims=True), 1)
  return (1.0 - epsilon) * policy + epsilon * uniform.astype(policy.dtype)
