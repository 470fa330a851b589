"""Work on the few lanes of a batch that need it: the asking lanes gathered, in lane order, and
handled a chunk at a time.

A batched walk asks expensive questions at every step of every lane, yet few lanes need the
answer (the others are at chance nodes, finished, or padding). :func:`chunks` orders the asking
lanes first; :func:`masked_vmap` maps a function over them in chunks of a fixed fraction of the
batch inside a ``while`` loop, so a step costs the asking lanes rounded up to a chunk, not the
batch. The table insert (:func:`jaxgt.core.info_table.insert`) and a search walk's costly
abstract keys (:meth:`jaxgt.solvers.sources.Rules.acting_keys`: hold'em's E[HS^2] buckets) run
this way.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax


def prefix_sum(flags):
  """int32 ``[B]``: inclusive prefix sums of ``flags [B]`` (a log-depth scan: XLA's cumsum on
  the CPU is a windowed reduction several times slower)."""
  return lax.associative_scan(jnp.add, flags.astype(jnp.int32))


def chunks(mask, split: int):
  """``(order int32 [C * K], K, n)``: the lanes where ``mask [B]`` in lane order, then ``B``
  (no lane) to fill ``C = ceil(B / K)`` chunks of ``K = ceil(B / split)``; ``n`` the asking
  lanes (chunk ``i`` is ``order[i K:(i + 1) K]``; ``ceil(n / K)`` chunks hold every one)."""
  B = mask.shape[0]
  K = -(-B // split)
  C = -(-B // K)
  lanes = jnp.arange(B, dtype=jnp.int32)
  order = jnp.full(C * K, B, jnp.int32).at[
      jnp.where(mask, prefix_sum(mask) - 1, C * K)].set(lanes, mode="drop")
  return order, K, jnp.sum(mask, dtype=jnp.int32)


def masked_vmap(fn, mask, args, fill, split: int = 8):
  """``vmap(fn)(*args)`` where ``mask [B]``, ``fill`` elsewhere (a pytree like ``fn``'s output
  for one lane): ``fn`` runs on ``ceil(n / K)`` chunks of ``K = ceil(B / split)`` gathered
  asking lanes (``n`` of them), not on all ``B``. Equal to ``where(mask, vmap(fn)(*args),
  fill)`` lane by lane."""
  B = mask.shape[0]
  order, K, n = chunks(mask, split)
  out = jax.tree_util.tree_map(lambda f: jnp.broadcast_to(f, (B,) + jnp.shape(f)), fill)

  def cond(c):
    return c[0] * K < n

  def body(c):
    i, out = c
    lane = lax.dynamic_slice_in_dim(order, i * K, K)
    take = jnp.minimum(lane, B - 1)
    got = jax.vmap(fn)(*jax.tree_util.tree_map(lambda x: x[take], args))
    return i + 1, jax.tree_util.tree_map(lambda o, g: o.at[lane].set(g, mode="drop"), out, got)

  return lax.while_loop(cond, body, (jnp.zeros((), jnp.int32), out))[1]
