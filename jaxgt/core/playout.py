"""Batched trajectories through a :class:`~jaxgt.games.device.DeviceGame`'s rules.

:func:`random_playouts` plays a batch of games to the end, each step one
vmapped call (players uniform over legal actions, chance by its
probabilities, each step's pick drawn from one uniform by :func:`sample_index`);
:func:`trajectories` records the actions; :func:`estimate_size`
is Knuth's random-path estimate of the number of histories ("Estimating the
efficiency of backtrack programs", 1975) over a batch of uniform paths, so a
game's size is told in a second without enumerating it.
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np

from jaxgt.core.checks import check_key
from jaxgt.games.base import TERMINAL
from jaxgt.games.device import DeviceGame


def _first_above(weights, x):
  """The first index whose running sum of ``weights [n]`` exceeds ``x >= 0`` (so its weight is
  positive), or the last positive weight where rounding leaves none: a count of the running
  sums not above ``x`` (cumsum and argmax are slow on XLA:CPU; the sums are a triangular
  multiply-and-reduce)."""
  n = weights.shape[-1]
  cdf = jnp.sum(weights[:, None] * jnp.triu(jnp.ones((n, n), weights.dtype)), axis=0)
  last = jnp.max(jnp.where(weights > 0, jnp.arange(n), -1))
  return jnp.minimum(jnp.sum(cdf <= x), last)


def _block_size(n: int) -> int:
  """Weights per block of :func:`sample_index`: the largest divisor of ``n`` up to
  ``sqrt(n)`` (padding the weights costs more than the blocks save), or ``ceil(sqrt(n))``
  with padding where ``n`` has no such divisor but 1."""
  root = math.isqrt(n)
  block = next(b for b in range(root, 0, -1) if n % b == 0)
  return block if block > 1 or n <= 4 else root + (root * root < n)


def sample_index(weights, u):
  """An index drawn with probability proportional to ``weights [n]`` (non-negative, some
  positive) from one uniform ``u`` in ``[0, 1)`` by inverse CDF, in two levels: a block of
  about ``sqrt(n)`` weights by the blocks' totals, then an index within it (so ``O(n)`` work,
  and never an index of weight 0)."""
  n = weights.shape[-1]
  block = _block_size(n)
  m = -(-n // block)
  if m * block != n:
    weights = jnp.zeros(m * block, weights.dtype).at[:n].set(weights)
  rows = weights.reshape(m, block)
  totals = rows.sum(axis=1)
  x = u * totals.sum()
  j = _first_above(totals, x)
  x = jnp.maximum(x - jnp.sum(jnp.where(jnp.arange(m) < j, totals, 0.0)), 0.0)
  row = jnp.sum(jnp.where((jnp.arange(m) == j)[:, None], rows, 0.0), axis=0)
  return (j * block + _first_above(row, x)).astype(jnp.int32)


def _pick(game: DeviceGame, state, u, uniform_chance: bool):
  """One action from a uniform ``u`` in ``[0, 1)`` (:func:`sample_index`) and the children
  mask: uniform over legal actions (and over outcomes when ``uniform_chance``), else chance by
  its probabilities; ``-1`` at a terminal. One uniform per step, not one random number per
  action, keeps sampling cheap; the weights add the padded legal mask and chance
  probabilities, which the protocol makes zero outside decisions and chance nodes."""
  n = game.num_distinct
  weights = jnp.pad(game.legal_mask(state).astype(jnp.zeros(()).dtype),
                    (0, n - game.num_actions))
  if game.num_outcomes:
    probs = game.chance_probs(state)
    probs = (probs > 0).astype(probs.dtype) if uniform_chance else probs
    weights = weights.astype(probs.dtype) + jnp.pad(probs, (0, n - game.num_outcomes))
  a = sample_index(weights, u)
  return jnp.where(game.current_player(state) == TERMINAL, -1, a).astype(jnp.int32), weights > 0


@functools.partial(jax.jit, static_argnums=(0, 2))
def _play(game: DeviceGame, key, batch: int):
  def one(us):
    def body(s, u):
      a, _ = _pick(game, s, u, False)
      return game.step(s, jnp.maximum(a, 0)), a  # a terminal steps to itself
    s, acts = jax.lax.scan(body, game.init(), us)
    return game.returns(s), acts, game.current_player(s)
  return jax.vmap(one)(jax.random.uniform(key, (batch, game.max_length)))


def trajectories(game: DeviceGame, key, batch: int):
  """``(returns [B, 2], actions [B, L], last_player [B])`` of ``batch`` random playouts
  (``L = max_length``; ``-1`` pads after the terminal). Players pick uniformly among legal
  actions, chance by its probabilities."""
  key = check_key(key)
  if batch < 1:
    raise ValueError(f"batch must be positive, got {batch}")
  return _play(game, key, int(batch))


def random_playouts(game: DeviceGame, key, batch: int):
  """Returns ``[B, 2]`` of ``batch`` random playouts (see :func:`trajectories`)."""
  return trajectories(game, key, batch)[0]


@functools.partial(jax.jit, static_argnums=(0, 2))
def _knuth(game: DeviceGame, key, batch: int):
  def one(k):
    def body(carry, u):
      s, prod, total, depth = carry
      a, mask = _pick(game, s, u, True)
      live = a >= 0
      b = jnp.sum(mask).astype(jnp.float32)
      prod = jnp.where(live, prod + jnp.log(jnp.maximum(b, 1.0)), prod)
      total = jnp.where(live, jnp.logaddexp(total, prod), total)
      nxt = game.step(s, jnp.maximum(a, 0))
      s = jax.tree_util.tree_map(lambda x, y: jnp.where(live, y, x), s, nxt)
      return (s, prod, total, depth + live), None
    init = (game.init(), jnp.float32(0.0), jnp.float32(0.0), jnp.int32(0))
    (s, _, total, depth), _ = jax.lax.scan(body, init, jax.random.uniform(k, (game.max_length,)))
    return total, depth, game.current_player(s) == TERMINAL
  return jax.vmap(one)(jax.random.split(key, batch))


def estimate_size(game: DeviceGame, *, paths: int = 4096, seed: int = 0) -> dict:
  """Knuth's estimate of the number of histories over ``paths`` uniform random paths:
  ``{"log10_histories", "longest_path", "paths", "truncated"}`` (log10 of the median of 16
  group means, which errs low on the skewed per-path estimates; ``truncated``: a path
  had not ended after ``max_length`` steps, a defect of the game's ``max_length``)."""
  log_total, depth, ended = jax.device_get(_knuth(game, jax.random.PRNGKey(seed), int(paths)))
  log_total = np.asarray(log_total, np.float64)
  groups = np.array_split(log_total, 16)
  means = [np.logaddexp.reduce(g) - np.log(len(g)) for g in groups if len(g)]
  return {"log10_histories": float(np.median(means) / np.log(10)),
          "longest_path": int(np.max(depth)), "paths": int(paths),
          "truncated": bool(not np.all(ended))}
