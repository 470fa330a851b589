"""Fixed-capacity device ring buffers of Student of Games' training process (Schmid et al. 2023,
"Training Process", Fig. 8 and Algorithm 2): the query buffer (public belief states the
searches queried, waiting to be solved) and the replay buffer (solved belief states with
their value and policy targets). Value targets are per slot (``ReplayExample.value_mask
[..., 2, K]``): a search's example has them on every valid slot of its public state, a TD(1)
outcome example (:mod:`jaxgt.training.selfplay`) only on the two information states held in
the game that was played.

Both are :mod:`jaxgt.struct` dataclasses of arrays allocated once for a static capacity ``C``;
:func:`add` and the samplers are pure and jit-able (a batch arrives with a validity mask,
so a vmapped actor writes a fixed-size batch). Writing is a ring: the ``j``-th valid
example of a batch goes to slot ``(next + j) mod C`` and overwrites the oldest (a sliding
window, Schmid et al. 2023); if a batch holds more than ``C`` valid examples only its last ``C`` are
kept.

**Sampling probabilities.**

* :func:`sample_replay` draws ``n`` examples *with replacement*, each uniformly among the
  eligible slots (filled, and used fewer than ``max_updates`` times): each draw picks a
  given eligible slot with probability ``1 / E`` (``E`` eligible slots), independently.
  Each drawn slot's use count grows by the times it was validly drawn, which bounds the
  gradient updates per example (Table S2's "max grad updates per example"; a fractional
  bound ``b`` admits an example while ``uses < b``, so ``b <= 1`` means at most once): a
  repeated draw of a slot in one sample that would exceed the bound is returned invalid
  (so the valid draws are a uniform draw conditioned on the bound). With ``E = 0`` every
  returned entry is invalid.
* :func:`sample_queries` takes ``m = min(n, V)`` of the ``V`` filled slots *without
  replacement*, uniformly (every ``m``-subset equally likely, so each filled slot is taken
  with probability ``m / V``) and removes them from the buffer: each query is solved once.

Shape letters: ``C`` capacity, ``K`` slots per player, ``A`` actions, ``n`` a sample.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from jaxgt import struct
from jaxgt.core.checks import check_positive_int, check_real, check_shape
from jaxgt.nets.encoding import PBS, PBSEncoding


@struct.dataclass
class ReplayExample:
  """A batch of training examples (add leading batch axes ``[...]`` to every field)."""

  pbs: PBS  # public [...] int32, ranges [..., 2, K] normalised ranges
  values: Any  # [..., 2, K] network-scale counterfactual value targets
  policy: Any  # [..., 2, K, A] policy targets (zero rows where a slot does not act)
  value_mask: Any  # [..., 2, K] bool the slots with a value target (the learner's value loss)
  policy_mask: Any  # [...] bool the example has policy targets


@struct.dataclass
class ReplayBuffer:
  """The replay buffer (a sliding window of solved belief states)."""

  data: ReplayExample  # every field with a leading [C]
  filled: Any  # [C] bool the slot holds an example
  uses: Any  # [C] int32 gradient updates (draws) of the slot's example
  next: Any  # [] int32 slot of the next write
  added: Any  # [] int32 examples ever added (may exceed C)

  @property
  def capacity(self) -> int:
    return self.filled.shape[-1]


@struct.dataclass
class QueryBuffer:
  """The query buffer (belief states queried by searches, waiting to be solved)."""

  pbs: PBS  # public [C] int32, ranges [C, 2, K]
  filled: Any  # [C] bool
  next: Any  # [] int32 slot of the next write
  added: Any  # [] int32 queries ever added

  @property
  def capacity(self) -> int:
    return self.filled.shape[-1]


def _empty_pbs(encoding: PBSEncoding, capacity: int, dtype) -> PBS:
  # public state ids (zeros), or copies of a state of a device game (FactoredEncoding)
  return PBS(public=encoding.example(capacity),
             ranges=jnp.zeros((capacity, 2, encoding.k_max), dtype))


def replay_buffer(encoding: PBSEncoding, capacity: int, dtype="float32") -> ReplayBuffer:
  """An empty :class:`ReplayBuffer` of ``capacity`` examples of ``encoding``'s layout."""
  C = check_positive_int("capacity", capacity)
  K, A = encoding.k_max, encoding.num_actions
  data = ReplayExample(pbs=_empty_pbs(encoding, C, dtype), values=jnp.zeros((C, 2, K), dtype),
                       policy=jnp.zeros((C, 2, K, A), dtype),
                       value_mask=jnp.zeros((C, 2, K), bool),
                       policy_mask=jnp.zeros(C, bool))
  return ReplayBuffer(data=data, filled=jnp.zeros(C, bool), uses=jnp.zeros(C, jnp.int32),
                      next=jnp.zeros((), jnp.int32), added=jnp.zeros((), jnp.int32))


def query_buffer(encoding: PBSEncoding, capacity: int, dtype="float32") -> QueryBuffer:
  """An empty :class:`QueryBuffer` of ``capacity`` belief states of ``encoding``'s layout."""
  C = check_positive_int("capacity", capacity)
  return QueryBuffer(pbs=_empty_pbs(encoding, C, dtype), filled=jnp.zeros(C, bool),
                     next=jnp.zeros((), jnp.int32), added=jnp.zeros((), jnp.int32))


def _ring_write(buffer, what: str, stored, rows, batch_shape, mask):
  """``(positions [B], stored with rows [B] written, the ring's updated fields)``: ring slots
  of the valid entries of a batch (``capacity``, i.e. dropped, for invalid ones and for valid
  ones beyond the batch's last ``capacity``); ``mask`` must have ``batch_shape``."""
  check_shape(f"{what}: the validity mask (the batch shape)", mask, batch_shape)
  capacity = buffer.capacity
  mask = jnp.asarray(mask, bool).reshape(-1)
  rank = jnp.cumsum(mask, dtype=jnp.int32) - 1
  count = jnp.sum(mask, dtype=jnp.int32)
  keep = mask & (rank >= count - capacity)
  pos = jnp.where(keep, (buffer.next + rank) % capacity, capacity)
  new = jax.tree_util.tree_map(lambda x, r: _put(x, pos, r), stored, rows)
  return pos, new, {"filled": buffer.filled.at[pos].set(True, mode="drop"),
                    "next": (buffer.next + count) % capacity, "added": buffer.added + count}


def _put(x, pos, rows):
  """``x [C, ...]`` with ``rows [B, ...]`` written at ``pos [B]`` (``C``: dropped)."""
  rows = jnp.asarray(rows, x.dtype).reshape((pos.shape[0],) + x.shape[1:])
  return x.at[pos].set(rows, mode="drop")


def add_replay(buffer: ReplayBuffer, examples: ReplayExample, mask) -> ReplayBuffer:
  """``buffer`` with the valid examples of a batch ``examples [B]`` (``mask [B]``) written
  (ring order, module docstring); their use counts start at zero."""
  pos, data, ring = _ring_write(buffer, "add_replay", buffer.data, examples,
                                jnp.shape(examples.values)[:-2], mask)
  return buffer.replace(data=data, uses=buffer.uses.at[pos].set(0, mode="drop"), **ring)


def add_queries(buffer: QueryBuffer, pbs: PBS, mask) -> QueryBuffer:
  """``buffer`` with the valid belief states of ``pbs [B]`` (``mask [B]``) written."""
  _, new, ring = _ring_write(buffer, "add_queries", buffer.pbs, pbs, jnp.shape(pbs.ranges)[:-2],
                            mask)
  return buffer.replace(pbs=new, **ring)


def replay_size(buffer: ReplayBuffer) -> jax.Array:
  """``[]`` int32 filled slots."""
  return jnp.sum(buffer.filled, dtype=jnp.int32)


def eligible(buffer: ReplayBuffer, max_updates: float) -> jax.Array:
  """``[C]`` bool slots :func:`sample_replay` may draw (filled, ``uses < max_updates``)."""
  return buffer.filled & (buffer.uses < max_updates)


def sample_replay(buffer: ReplayBuffer, key, n: int, max_updates: float | None = None):
  """``(buffer, examples [n], valid [n])``: ``n`` draws with replacement, uniform over the
  eligible slots (module docstring), with the drawn slots' use counts increased
  (``max_updates=None``: unbounded)."""
  n = check_positive_int("n", n)
  max_updates = (float("inf") if max_updates is None
                 else check_real("max_updates", max_updates, 0, lo_open=True))
  ok = eligible(buffer, max_updates)
  E = jnp.sum(ok)
  p = jnp.where(E > 0, ok / jnp.maximum(E, 1), 1.0 / buffer.capacity)
  idx = jax.random.choice(key, buffer.capacity, (n,), replace=True, p=p)
  # Draws past an example's remaining budget within this sample are invalid.
  valid = (E > 0) & (buffer.uses[idx] + _repeat_rank(idx) < max_updates)
  examples = jax.tree_util.tree_map(lambda x: x[idx], buffer.data)
  uses = buffer.uses.at[idx].add(valid.astype(jnp.int32))
  return buffer.replace(uses=uses), examples, valid


def _repeat_rank(idx):
  """``[n]`` int32: how many earlier entries of ``idx [n]`` equal each entry."""
  n = idx.shape[0]
  order = jnp.argsort(idx, stable=True)
  srt = idx[order]
  pos = jnp.arange(n, dtype=jnp.int32)
  start = jnp.concatenate([jnp.ones(1, bool), srt[1:] != srt[:-1]])
  first = jax.lax.cummax(jnp.where(start, pos, 0))
  return jnp.zeros(n, jnp.int32).at[order].set(pos - first)


def sample_queries(buffer: QueryBuffer, key, n: int):
  """``(buffer, pbs [n], valid [n])``: ``min(n, V)`` of the ``V`` filled slots taken
  uniformly without replacement and removed (module docstring); the rest invalid."""
  n = check_positive_int("n", n)
  if n > buffer.capacity:
    raise ValueError(f"cannot take {n} queries from a buffer of capacity {buffer.capacity}")
  V = jnp.sum(buffer.filled)
  p = jnp.where(V > 0, buffer.filled / jnp.maximum(V, 1), 1.0 / buffer.capacity)
  idx = jax.random.choice(key, buffer.capacity, (n,), replace=False, p=p)
  valid = jnp.arange(n) < V
  pbs = jax.tree_util.tree_map(lambda x: x[idx], buffer.pbs)
  filled = buffer.filled.at[jnp.where(valid, idx, buffer.capacity)].set(False, mode="drop")
  return buffer.replace(filled=filled), pbs, valid
