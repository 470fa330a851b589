"""A search's log of leaf queries: a uniform sample of every public belief state the evaluator
was queried at (Schmid et al. 2023, Student of Games, Algorithm 1: the inputs the network is
trained on).

Every query draws a uniform priority and the log keeps the ``L`` queries of smallest
priority seen so far (bottom-``k`` sampling, the reservoir sampling of a whole stream): after
``n`` queries it holds ``min(L, n)`` of them, every subset of that size equally likely, so each
query is kept with probability ``min(L, n) / n`` whichever CFR iteration made it.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from jax import lax

from jaxgt import struct
from jaxgt.core import rng
from jaxgt.core.game_tree import NO_INDEX


@struct.dataclass
class QueryLog:
  """``L`` entries, valid ones first (by priority; ``index`` gives the query order)."""

  public: Any  # [L] int32 public state of each query (NO_INDEX: unused)
  node: Any  # [L] int32 the queried node of the search tree (nodes stay: read its key there)
  ranges: Any  # [L, 2, K] both players' normalised ranges over the public state's slots
  iteration: Any  # [L] int32 CFR iteration of the query
  index: Any  # [L] int32 the query's place among all the search's queries (0, 1, ...)
  priority: Any  # [L] the query's uniform priority (inf: unused)
  key: Any  # the jax.random key the priorities are drawn from (fold_in of the iteration)
  count: Any  # [] int32 queries made (may exceed L; the sample is uniform over all of them)


QUERY_STREAM = 0x7FFFFFFF
"""``fold_in`` data of a search's key that draws its query log's priorities (the expansion
phases use ``fold_in`` data ``0 .. num_phases - 1``)."""


def required_key(log_queries: int, key):
  """``key``, required where a search logs queries (it draws their sample); without a log
  nothing is drawn from it, so a fixed key stands in."""
  if key is not None:
    return key
  if log_queries:
    raise ValueError("the search logs queries (config.log_queries > 0) and samples them with "
                     "a jax.random key: pass key=")
  return jax.random.PRNGKey(0)


def search_key(log_queries: int, key):
  """The key a search's log draws its priorities from (its own stream of ``key``)."""
  return rng.fold_in(required_key(log_queries, key), QUERY_STREAM)


def empty(log_queries: int, num_infostates: int, dtype, key) -> QueryLog:
  """An empty :class:`QueryLog` of ``log_queries`` entries drawing priorities from ``key``."""
  L, K = log_queries, num_infostates
  return QueryLog(public=jnp.full(L, NO_INDEX, jnp.int32), node=jnp.full(L, NO_INDEX, jnp.int32),
                  ranges=jnp.zeros((L, 2, K), dtype),
                  iteration=jnp.zeros(L, jnp.int32), index=jnp.full(L, NO_INDEX, jnp.int32),
                  priority=jnp.full(L, jnp.inf, dtype), key=key,
                  count=jnp.zeros((), jnp.int32))


def offer(log: QueryLog, queried, public, ranges, t) -> QueryLog:
  """``log`` after iteration ``t``'s queries: ``queried [N]`` which of the tree's ``N`` nodes
  were queried, ``public [N]`` their public states, ``ranges [N, 2, K]`` their normalised
  ranges; each queried one draws a uniform priority and the ``L`` smallest stay."""
  L, N = log.public.shape[0], queried.shape[0]
  count = log.count + jnp.sum(queried, dtype=jnp.int32)
  if not L:
    return log.replace(count=count)
  u = rng.uniform(rng.fold_in(log.key, jnp.asarray(t, jnp.int32)), (N,), log.priority.dtype)
  prio = jnp.concatenate([log.priority, jnp.where(queried, u, jnp.inf)])  # [L + N]
  order = log.count + jnp.cumsum(queried, dtype=jnp.int32) - 1
  index = jnp.concatenate([log.index, jnp.where(queried, order, NO_INDEX).astype(jnp.int32)])
  _, keep = lax.top_k(-prio, L)  # the L smallest priorities, unused entries (inf) last
  pub = jnp.concatenate([log.public, jnp.where(queried, public, NO_INDEX)])
  nodes = jnp.where(queried, jnp.arange(N, dtype=jnp.int32), NO_INDEX)
  node = jnp.concatenate([log.node, nodes])
  new_ranges = jnp.concatenate([log.ranges, ranges.astype(log.ranges.dtype)])
  iteration = jnp.concatenate([log.iteration, jnp.full(N, t, jnp.int32)])
  return log.replace(public=pub[keep], node=node[keep], ranges=new_ranges[keep],
                     iteration=iteration[keep], index=index[keep], priority=prio[keep],
                     count=count)
