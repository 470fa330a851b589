"""The one CDF sampler: draws from discrete distributions with explicit uniforms (so a walk
draws all of its uniforms at once, reproducibly from a seed)."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxgt.core.sequence_form import uniform


def sample_index(weights: jax.Array, u: jax.Array) -> jax.Array:
  """``int32 [...]`` index ``min(#{k: cdf_k <= u * total}, K - 1)`` drawn from unnormalised
  ``weights [..., K]`` with uniforms ``u [...]`` (zero weights are never drawn unless all are)."""
  return sample_cdf(jnp.cumsum(weights, axis=-1), u)


def sample_cdf(cdf: jax.Array, u: jax.Array) -> jax.Array:
  """:func:`sample_index` from the cumulative sums ``cdf [..., K]`` of the weights (for tables
  whose CDFs are computed once and read many times)."""
  idx = jnp.sum(cdf <= (u * cdf[..., -1])[..., None], axis=-1)
  return jnp.minimum(idx, cdf.shape[-1] - 1).astype(jnp.int32)


def mix_uniform(policy: jax.Array, legal: jax.Array, epsilon) -> jax.Array:
  """``(1 - epsilon) * policy + epsilon * uniform(legal)`` over the last axis."""
  return (1.0 - epsilon) * policy + epsilon * uniform(legal, policy.dtype)
