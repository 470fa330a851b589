"""Float dtype handling: float32 by default, float64 only with x64 enabled."""

from __future__ import annotations

import jax
import jax.numpy as jnp

_NAMES = {"float32": jnp.float32, "float64": jnp.float64}


def resolve_dtype(dtype=None):
  """Returns a JAX float dtype; raises a clear error for float64 without x64."""
  if dtype is None:
    dtype = jnp.float32
  if isinstance(dtype, str):
    if dtype not in _NAMES:
      raise ValueError(f"dtype must be one of {sorted(_NAMES)}, got {dtype!r}")
    dtype = _NAMES[dtype]
  dtype = jnp.dtype(dtype)
  if dtype not in (jnp.dtype(jnp.float32), jnp.dtype(jnp.float64)):
    raise ValueError(f"dtype must be float32 or float64, got {dtype}")
  if dtype == jnp.float64 and not jax.config.read("jax_enable_x64"):
    raise ValueError(
        "float64 needs 64-bit JAX: call jax.config.update('jax_enable_x64', True) "
        "(or set JAX_ENABLE_X64=1) before creating arrays")
  return dtype


def dtype_name(dtype=None) -> str:
  """The name (``"float32"`` / ``"float64"``) of :func:`resolve_dtype` ``(dtype)`` (hashable)."""
  return jnp.dtype(resolve_dtype(dtype)).name


def cast_tree(tree, dtype):
  """``tree`` with every floating leaf cast to ``dtype`` (integer leaves unchanged)."""
  return jax.tree_util.tree_map(
      lambda x: x.astype(dtype) if jnp.issubdtype(jnp.asarray(x).dtype, jnp.floating) else x, tree)


def default_dtype():
  """float64 when 64-bit JAX is enabled, else float32 (exact evaluation's choice)."""
  return jnp.float64 if jax.config.read("jax_enable_x64") else jnp.float32
