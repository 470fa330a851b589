"""Argument checks shared by every layer, on static values (a clear ``ValueError`` before
any compilation); probability vectors use one tolerance, :data:`PROB_ATOL`."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from jaxgt.games.base import PROB_ATOL  # noqa: F401  (defined with the game protocol, below core)


def check_key(key, batch_shape: tuple = ()) -> jax.Array:
  """Returns ``key`` as an array; raises unless it is a ``jax.random`` key (typed, or raw
  ``uint32 [2]``) of batch shape ``batch_shape`` (one key per batched problem)."""
  if not isinstance(key, jax.Array):  # a jax.Array is checked as it is (no dispatch)
    key = jnp.asarray(key)
  typed = jnp.issubdtype(key.dtype, jax.dtypes.prng_key)
  batch = key.shape if typed else key.shape[:-1]
  if not (typed or (key.dtype == jnp.uint32 and key.shape[-1:] == (2,))) or \
     batch != tuple(batch_shape):
    what = f"a batch {tuple(batch_shape)} of jax.random keys" if batch_shape else \
        "a jax.random key"
    raise ValueError(f"key must be {what}, got dtype {key.dtype} shape {key.shape}")
  return key


def check_index(name: str, value, size: int, context: str = ""):
  """``value`` (an integer, or an integer array) checked to lie in ``[0, size)``; returns it as
  ``int`` (or ``int32`` array). The error names ``name``, the first bad value and ``context``."""
  ids = np.asarray(value)
  if ids.dtype == bool or not np.issubdtype(ids.dtype, np.integer):
    raise ValueError(f"{name} must be an integer, got {value!r}{context}")
  bad = (ids < 0) | (ids >= size)
  if np.any(bad):
    raise ValueError(f"{name} {ids[bad].flat[0]} out of range [0, {size}){context}")
  return int(ids) if ids.ndim == 0 else ids.astype(np.int32)


def check_shape(what: str, x, shape) -> tuple:
  """Raises unless ``x``'s shape matches ``shape``: an int is a size, ``None`` any size, a
  leading ``...`` any batch axes. Returns the axes ``...`` matched (``()`` without one)."""
  got, want = tuple(jnp.shape(x)), tuple(shape)
  lead = bool(want) and want[0] is Ellipsis
  tail = want[1:] if lead else want
  n = len(got) - len(tail)
  if not ((n >= 0 if lead else n == 0)
          and all(w is None or w == g for w, g in zip(tail, got[max(n, 0):]))):
    spelled = ", ".join("..." if w is Ellipsis else "?" if w is None else str(w) for w in want)
    raise ValueError(f"{what} must have shape ({spelled}{',' if len(want) == 1 else ''}), "
                     f"got {got}")
  return got[:n]


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
  check_index("history", h, tree.num_histories)
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
