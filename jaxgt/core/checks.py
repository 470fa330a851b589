"""Argument checks shared by every layer, on static values (a clear ``ValueError`` before
any compilation); probability vectors use one tolerance, :data:`PROB_ATOL`."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

PROB_ATOL = 1e-6
"""Tolerance on ``sum == 1`` for probability vectors, ranges and policies."""


def check_key(key) -> jax.Array:
  """Returns ``key`` as an array; raises unless it is a ``jax.random`` key."""
  key = jnp.asarray(key)
  if not (jnp.issubdtype(key.dtype, jax.dtypes.prng_key) or
          (key.dtype == jnp.uint32 and key.shape == (2,))):
    raise ValueError(f"key must be a jax.random key, got dtype {key.dtype} shape {key.shape}")
  return key


def check_positive_int(name: str, value) -> int:
  """``int(value)``; raises unless it is a positive integer (``bool`` is not)."""
  if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
    raise ValueError(f"{name} must be a positive integer, got {value!r}")
  return int(value)


def check_nonnegative_int(name: str, value) -> int:
  """``int(value)``; raises unless it is a non-negative integer (``bool`` is not)."""
  if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
    raise ValueError(f"{name} must be a non-negative integer, got {value!r}")
  return int(value)


def check_real(name: str, value, lo: float = -math.inf, hi: float = math.inf, *,
               lo_open: bool = False, hi_open: bool = False) -> float:
  """``float(value)``; raises unless a finite number (not ``bool``) in ``[lo, hi]`` (or open)."""
  if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
    raise ValueError(f"{name} must be a real number, got {value!r}")
  x = float(value)
  if not (math.isfinite(x) and (x > lo if lo_open else x >= lo)
          and (x < hi if hi_open else x <= hi)):
    raise ValueError(f"{name} must be in {'(' if lo_open else '['}{lo:g}, {hi:g}"
                     f"{')' if hi_open else ']'}, got {value!r}")
  return x


def check_choice(name: str, value, choices) -> None:
  """Raises a ValueError naming ``choices`` unless ``value`` is one of them."""
  if value not in choices:
    raise ValueError(f"{name} must be one of {', '.join(choices)}; got {value!r}")


def concrete_int(x):
  """``int(x)`` when ``x`` is concrete, else ``None`` (a tracer)."""
  try:
    return int(x)
  except (TypeError, jax.errors.ConcretizationTypeError, jax.errors.TracerIntegerConversionError):
    return None


def check_decision_history(tree, history) -> None:
  """Raises ``ValueError`` when a concrete ``history`` is out of range or not a decision."""
  h = concrete_int(history)
  if h is None:
    return
  if not 0 <= h < tree.num_histories:
    raise ValueError(f"history {h} outside [0, {tree.num_histories})")
  p = int(np.asarray(tree.player)[h])
  if p not in (0, 1):
    raise ValueError(f"history {h} is not a decision of player 0 or 1 (player {p})")


def max_depth(tree) -> int:
  """Largest history depth (static walk length); checks breadth-first order."""
  depth = np.asarray(tree.depth)
  if depth.size == 0 or np.any(np.diff(depth) < 0):
    raise ValueError("tree histories must be in breadth-first order (non-decreasing depth)")
  return int(depth.max())


def check_distribution(what: str, values, size: int | None = None, *,
                       atol: float = PROB_ATOL) -> np.ndarray:
  """Validates probability vectors ``[..., size]`` (``what`` names them); returns float64."""
  r = np.asarray(values, np.float64)
  if size is not None and (r.ndim < 1 or r.shape[-1] != size):
    raise ValueError(f"{what} must have shape [..., {size}], got {r.shape}")
  if not np.isfinite(r).all() or np.any(r < 0):
    raise ValueError(f"{what} has negative or non-finite entries")
  tot = r.sum(-1)
  if np.any(np.abs(tot - 1.0) > atol):
    raise ValueError(f"{what} sums to {np.ravel(tot)[np.argmax(np.ravel(np.abs(tot - 1.0)))]}, "
                     "not 1")
  return r
