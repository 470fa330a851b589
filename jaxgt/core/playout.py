"""Batched trajectories through a :class:`~jaxgt.games.device.DeviceGame`'s rules.

:func:`random_playouts` plays a batch of games to the end (players uniform
over legal actions, chance by its probabilities); :func:`trajectories` also
records the actions; :func:`estimate_size` is Knuth's random-path estimate of
the number of histories ("Estimating the efficiency of backtrack programs",
1975) over a batch of uniform paths, so a game's size is told in a second
without enumerating it.

Each step is one call of the rules vmapped over the whole batch (the batch
as the states' last axis) inside a ``lax.while_loop`` that stops as soon as
every game has ended (at most ``max_length`` steps). An action is drawn by
inverting the cumulative sum of the step's weights (legal mask or chance
probabilities) at one uniform number per game and step: a hash of the step
and of a seed per game drawn from the caller's key (:func:`_uniform`), so
the same key gives the same playouts. A game that defines
:meth:`~jaxgt.games.device.DeviceGame.sample_chance` draws its chance outcomes
itself from that number (hold'em: the k-th card left), without ``[C]`` weights.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from jaxgt.core.checks import check_key, check_positive_int
from jaxgt.games.base import CHANCE, TERMINAL
from jaxgt.games.device import DeviceGame, has_chance_sampler


def _weights(game: DeviceGame, state, uniform_chance: bool, sampled: bool = False):
  """``(legal float32 [A], chance float32 [C], player int32 [])`` of one state: the legal mask
  (all zero unless a player acts) and the outcome probabilities (their support when
  ``uniform_chance``; all zero unless chance acts; ``[0]`` when ``sampled``: the game's
  :meth:`~DeviceGame.sample_chance` draws the outcomes)."""
  player = game.current_player(state)
  legal = game.legal_mask(state).astype(jnp.float32)
  if not game.num_outcomes or sampled:
    return legal, jnp.zeros(0, jnp.float32), player
  probs = game.chance_probs(state).astype(jnp.float32)
  if uniform_chance:
    probs = (probs > 0).astype(jnp.float32)
  return legal, jnp.where(player == CHANCE, probs, 0.0), player


_SCAN_WIDTH = 8
"""Above this many actions/outcomes the cumulative sum is a matrix product (see :func:`_choose`)."""


def _choose(weights, u):
  """int32 ``[B]``: index ``i`` with probability ``weights[i] / sum`` (``weights [n, B]``
  non-negative, ``u [B]`` uniform in ``[0, 1)``): the number of cumulative weights not above
  ``u * sum``.

  Any summation order that is the same for every prefix keeps the cumulative weights
  non-decreasing and equal across a zero weight (rounding is monotone, adding zero is
  exact), and ``u * sum < sum`` for ``u <= 1 - 2^-24``, so a zero weight is never chosen (0
  where every weight is zero). Up to :data:`_SCAN_WIDTH` entries a ``cumsum``; wider, the
  product with a lower-triangular matrix of ones (XLA's CPU ``cumsum`` over a long leading
  axis is a reduce-window: 4x slower for Liar's Dice's 25 bids and hold'em's 52 cards,
  1.3-1.5x for 12-13 at batch 65536, while the product is 1.3-2x slower for 4-6)."""
  n = weights.shape[0]
  if n > _SCAN_WIDTH:
    c = jnp.matmul(jnp.tril(jnp.ones((n, n), weights.dtype)), weights,
                   precision=jax.lax.Precision.HIGHEST)
  else:
    c = jnp.cumsum(weights, axis=0)
  return jnp.sum(c <= u * c[-1], axis=0).astype(jnp.int32)


_REJECTION_ROUNDS = 12
"""Rounds of rejection sampling at wide chance nodes before the inverse CDF (see :func:`_draw`)."""


def _draw(weights, seeds, t, stream: int):
  """int32 ``[B]`` drawn with probability ``weights [n, B] / sum`` from the step's numbers.

  Up to :data:`_SCAN_WIDTH` entries, or for stream 0 (player actions), by inverse CDF
  (:func:`_choose`). Wider chance nodes (hold'em's 52 cards) are drawn by rejection, exact
  for any weights: a candidate uniform over ``[0, n)`` is kept with probability
  ``weight / max weight``; over :data:`_REJECTION_ROUNDS` rounds a lane keeps its first kept
  candidate, and the inverse CDF serves the lanes that kept none (a branch taken only when
  some lane needs it: for uniform deals from at least 44 of 52 cards, once in ~10^9 lanes).
  """
  n = weights.shape[0]
  if stream == 0 or n <= _SCAN_WIDTH:
    return _choose(weights, _uniform(seeds, t, stream))
  top = jnp.max(weights, axis=0)
  pick = jnp.zeros(weights.shape[1], jnp.int32)
  done = top <= 0  # nothing to draw (not a chance node)
  for r in range(_REJECTION_ROUNDS):
    c = jnp.minimum((_uniform(seeds, t, stream + 2 * r) * n).astype(jnp.int32), n - 1)
    w = jnp.take_along_axis(weights, c[None], axis=0)[0]
    keep = ~done & (w > _uniform(seeds, t, stream + 2 * r + 1) * top)
    pick = jnp.where(keep, c, pick)
    done = done | keep
  return jax.lax.cond(jnp.all(done), lambda: pick,
                      lambda: jnp.where(done, pick, _choose(weights, _uniform(seeds, t, 0))))


def sample_index(weights, u):
  """int32 ``[]``: an index drawn with probability proportional to ``weights [n]``
  (non-negative, some positive) from one uniform ``u`` in ``[0, 1)`` by inverse CDF (``u =
  0``: the first positive weight; ``u`` near 1: the last), as every playout step draws."""
  weights = jnp.asarray(weights, jnp.float32)
  return _choose(weights[:, None], jnp.asarray(u, jnp.float32)[None])[0]


def _fmix(x):
  """The MurmurHash3 32-bit finalizer (a bijection of uint32 that mixes every bit)."""
  x = (x ^ (x >> 16)) * jnp.uint32(0x85EBCA6B)
  x = (x ^ (x >> 13)) * jnp.uint32(0xC2B2AE35)
  return x ^ (x >> 16)


def _uniform(seeds, t, stream: int = 0):
  """float32 ``[B]`` in ``[0, 1)``: step ``t``'s number ``stream`` of each game, 24 bits of
  ``fmix(seed ^ fmix(golden * (t + 2^16 stream) + c))``. Computed inside the loop from ``B``
  seeds, where threefry numbers for every step drawn up front took a fifth of Leduc's playout
  time."""
  t = t.astype(jnp.uint32) + jnp.uint32(stream << 16)
  x = _fmix(seeds ^ _fmix(t * jnp.uint32(0x9E3779B9) + jnp.uint32(0x7F4A7C15)))
  return (x >> 8).astype(jnp.float32) * jnp.float32(1.0 / (1 << 24))


def _walk(game: DeviceGame, key, batch: int, uniform_chance: bool, visit, carry):
  """Plays ``batch`` games from the root to their terminals; ``visit(carry, t, branching [B]
  (children of each state), actions [B], live [B]) -> carry`` sees each step. Returns
  ``(final states, carry)``, the states' leaves with the batch as their LAST axis: the rules
  are vmapped over that axis, so XLA's loops run along the batch (contiguous, vectorised)
  rather than along a state's few entries (2.8x the playouts per second of batch-first
  states on Leduc at batch 4096)."""
  length = int(game.max_length)
  over_batch = functools.partial(jax.vmap, in_axes=-1, out_axes=-1)
  states = over_batch(lambda _: game.init())(jnp.arange(batch))
  seeds = jax.random.bits(key, (batch,), jnp.uint32)
  # the game's own chance sampler where it has one (Knuth's estimate counts the outcomes)
  sampled = bool(game.num_outcomes) and not uniform_chance and has_chance_sampler(game)
  weigh = over_batch(lambda s: _weights(game, s, uniform_chance, sampled))
  sample = jax.vmap(game.sample_chance, in_axes=(-1, 0)) if sampled else None
  step = jax.vmap(game.step, in_axes=(-1, 0), out_axes=-1)

  def draw(s, t):
    """The step-``t`` action of each state, its branching and its player (``[B]`` each)."""
    legal, probs, player = weigh(s)
    chance = player == CHANCE
    a = _draw(legal, seeds, t, 0)
    if sampled:  # branching is not read: Knuth's estimate counts outcomes, so never samples
      return jnp.where(chance, sample(s, _uniform(seeds, t, 1)), a), jnp.zeros_like(a), player
    if game.num_outcomes:
      a = jnp.where(chance, _draw(probs, seeds, t, 1), a)
    branching = jnp.where(chance, jnp.sum(probs > 0, axis=0), jnp.sum(legal > 0, axis=0))
    return a, branching, player

  def cond(c):
    t, _, _, going, _ = c
    return going & (t < length)

  # With a game's sampler, each step's action is drawn at the end of the step before and
  # carried, so the loop holds it as one array. Drawn in the step that uses it, XLA fuses the
  # hashing and the sampler into the update of every state field and computes them once per
  # field (8 times for hold'em); carried, hold'em plays 2.5x the playouts per second. Without
  # a sampler the draw stays in place (carried measured 0.84x-0.93x on Leduc).
  ahead = sampled

  def body(c):
    t, s, drawn, _, extra = c
    a, branching, player = drawn if ahead else draw(s, t)
    live = player != TERMINAL
    nxt = jax.tree_util.tree_map(lambda old, new: jnp.where(live, new, old), s, step(s, a))
    if ahead:
      drawn = draw(nxt, t + 1)
      going = jnp.any(drawn[2] != TERMINAL)
    else:
      going = jnp.any(live)
    return t + 1, nxt, drawn, going, visit(extra, t, branching, a, live)

  first = draw(states, jnp.int32(0)) if ahead else ()  # nothing carried without a sampler
  _, s, _, _, carry = jax.lax.while_loop(
      cond, body, (jnp.int32(0), states, first, jnp.bool_(True), carry))
  return s, carry


def _final(game: DeviceGame, states):
  """``(returns [B, 2], current player [B])`` of batch-last states."""
  return (jax.vmap(game.returns, in_axes=-1)(states),
          jax.vmap(game.current_player, in_axes=-1)(states))


@functools.partial(jax.jit, static_argnums=(0, 2, 3))
def _play(game: DeviceGame, key, batch: int, record: bool):
  def visit(acts, t, branching, a, live):
    return acts.at[t].set(jnp.where(live, a, -1)) if record else acts

  acts = jnp.full((game.max_length, batch) if record else (0, batch), -1, jnp.int32)
  s, acts = _walk(game, key, batch, False, visit, acts)
  returns, player = _final(game, s)
  return returns, acts.T, player


def _checked(key, batch: int):
  """``(key, batch)`` checked: a ``jax.random`` key and a positive batch size."""
  return check_key(key), check_positive_int("batch", batch)


def trajectories(game: DeviceGame, key, batch: int):
  """``(returns [B, 2], actions [B, L], last_player [B])`` of ``batch`` random playouts
  (``L = max_length``; ``-1`` pads after the terminal). Players pick uniformly among legal
  actions, chance by its probabilities; ``last_player`` is :data:`TERMINAL` unless a game
  outlasted its ``max_length``."""
  return _play(game, *_checked(key, batch), True)


def random_playouts(game: DeviceGame, key, batch: int):
  """Returns ``[B, 2]`` of ``batch`` random playouts (see :func:`trajectories`; the actions
  are not recorded)."""
  return _play(game, *_checked(key, batch), False)[0]


@functools.partial(jax.jit, static_argnums=(0, 2))
def _knuth(game: DeviceGame, key, batch: int):
  def visit(c, t, branching, a, live):
    prod, total, depth = c
    b = branching.astype(jnp.float32)
    prod = jnp.where(live, prod + jnp.log(jnp.maximum(b, 1.0)), prod)
    total = jnp.where(live, jnp.logaddexp(total, prod), total)
    return prod, total, depth + live

  zeros = jnp.zeros(batch, jnp.float32)
  s, (_, total, depth) = _walk(game, key, batch, True, visit,
                               (zeros, zeros, jnp.zeros(batch, jnp.int32)))
  return total, depth, _final(game, s)[1] == TERMINAL


def knuth_log10(log_totals) -> float:
  """log10 of Knuth's estimate from the per-path natural-log estimates ``[N]``: the median of
  16 group means (the per-path estimates are right-skewed; the median errs low, the safe side
  for a refusal)."""
  groups = np.array_split(np.asarray(log_totals, np.float64), 16)
  means = [np.logaddexp.reduce(g) - np.log(len(g)) for g in groups if len(g)]
  return float(np.median(means) / np.log(10))


def estimate_size(game: DeviceGame, *, paths: int = 4096, seed: int = 0) -> dict:
  """Knuth's estimate of the number of histories over ``paths`` uniform random paths:
  ``{"log10_histories", "longest_path", "paths", "truncated"}`` (log10 of the median of 16
  group means, which errs low on the skewed per-path estimates; ``truncated``: a path
  had not ended after ``max_length`` steps, a defect of the game's ``max_length``)."""
  log_total, depth, ended = jax.device_get(_knuth(game, jax.random.key(seed), int(paths)))
  return {"log10_histories": knuth_log10(log_total),
          "longest_path": int(np.max(depth)), "paths": int(paths),
          "truncated": bool(not np.all(ended))}
