"""A fixed-capacity device table of information states, keyed by their exact keys.

Games too large to enumerate have no information-state indices; the sampled
solvers and search agents keep their statistics in rows ``[capacity, ...]``
instead and find a state's row through this table: open addressing with
linear probing over the exact ``int32 [W]`` keys of the device game protocol
(:meth:`~jaxgt.games.device.DeviceGame.info_key`, or an abstraction's key).
Keys are compared in full, so two information states never share a row.

Rows are handed out densely in insertion order (``0, 1, ...``), so statistics
arrays need ``capacity`` rows, not one per slot; the slots (``2 x capacity``
rounded up to a power of two, load at most one half) hold row ids. Lookups
and inserts take a batch of keys and run under ``jit`` and ``vmap``; a batch
of inserts resolves its collisions deterministically (the lowest lane wins a
contested slot; rows are assigned in lane order). When the table is full an
insert is *refused*: it returns row ``-1``, nothing is overwritten, and the
table counts it in :attr:`InfoTable.refused`; each algorithm documents what it
does with a refused state (typically: it stays outside memory and is played
by the playout policy, or its update is dropped).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxgt import struct
from jaxgt.core.checks import check_positive_int
from jaxgt.core.lanes import chunks, prefix_sum

NO_ROW = -1


@struct.dataclass
class InfoTable:
  """Information states in memory (``N = capacity``, ``M`` slots, ``W`` key width)."""

  keys: jax.Array  # [N, W] int32 the key of each row (rows >= size: unused)
  slots: jax.Array  # [M] int32 row id held by each slot (NO_ROW: empty)
  size: jax.Array  # [] int32 rows in use
  refused: jax.Array  # [] int32 insert requests refused because the table was full (cumulative)

  @property
  def capacity(self) -> int:
    return self.keys.shape[-2]

  @property
  def width(self) -> int:
    return self.keys.shape[-1]


def num_slots(capacity: int) -> int:
  """Slots of a table of ``capacity`` rows: the power of two ``>= 2 * capacity``."""
  return 1 << max(1, int(2 * capacity - 1).bit_length())


def table_bytes(capacity: int, width: int, row_bytes: int = 0) -> int:
  """Bytes of a table of ``capacity`` rows of ``width``-word keys, plus ``row_bytes`` of
  statistics per row (what an algorithm keeps per information state)."""
  return capacity * (4 * width + row_bytes) + 4 * num_slots(capacity)


def empty(capacity: int, width: int) -> InfoTable:
  """An empty table of ``capacity`` rows for keys of ``width`` int32 words."""
  capacity = check_positive_int("capacity", capacity)
  width = check_positive_int("key width", width)
  if num_slots(capacity) > 2 ** 31 - 1:
    raise ValueError(f"capacity {capacity} is too large for int32 slot indices")
  return InfoTable(keys=jnp.zeros((capacity, width), jnp.int32),
                   slots=jnp.full(num_slots(capacity), NO_ROW, jnp.int32),
                   size=jnp.zeros((), jnp.int32), refused=jnp.zeros((), jnp.int32))


def _fmix(x):
  """The MurmurHash3 32-bit finalizer."""
  x = (x ^ (x >> 16)) * jnp.uint32(0x85EBCA6B)
  x = (x ^ (x >> 13)) * jnp.uint32(0xC2B2AE35)
  return x ^ (x >> 16)


def key_hash(keys):
  """uint32 ``[...]`` hash of keys ``[..., W]`` (every word mixed in turn)."""
  keys = jnp.asarray(keys).astype(jnp.uint32)
  h = jnp.full(keys.shape[:-1], 0x811C9DC5, jnp.uint32)
  for w in range(keys.shape[-1]):
    h = _fmix((h ^ keys[..., w]) * jnp.uint32(0x01000193) + jnp.uint32(w))
  return h


def _check_keys(table: InfoTable, keys):
  keys = jnp.asarray(keys)
  if keys.ndim != 2 or keys.shape[1] != table.width:
    raise ValueError(f"keys must be [batch, {table.width}] to match the table, got shape "
                     f"{tuple(keys.shape)}")
  if not jnp.issubdtype(keys.dtype, jnp.integer):
    raise TypeError(f"keys must be integers, got {keys.dtype}")
  return keys.astype(jnp.int32)


def lookup(table: InfoTable, keys) -> jax.Array:
  """int32 ``[B]``: the row of each key ``[B, W]`` (:data:`NO_ROW` where absent)."""
  keys = _check_keys(table, keys)
  mask = table.slots.shape[0] - 1
  start = key_hash(keys).astype(jnp.int32) & mask

  def cond(c):
    return jnp.any(c[1])

  def body(c):
    probe, pending, row = c
    r = table.slots[(start + probe) & mask]
    hit = (r >= 0) & jnp.all(table.keys[jnp.maximum(r, 0)] == keys, axis=-1)
    done = pending & ((r < 0) | hit)
    row = jnp.where(done & hit, r, row)
    return probe + (pending & ~done), pending & ~done, row

  B = keys.shape[0]
  init = (jnp.zeros(B, jnp.int32), jnp.ones(B, bool), jnp.full(B, NO_ROW, jnp.int32))
  return lax.while_loop(cond, body, init)[2]


def _first_lanes(wanted, M: int):
  """bool ``[B]``: whether each lane is the lowest one wanting its slot ``wanted [B]`` (``M``:
  none). A scatter of each slot's lowest lane into ``M`` claims costs a fill of ``M``; lanes
  sorted by slot cost ``O(B log B)``, less only when the slots outnumber the lanes by more than
  :data:`CLAIMS_PER_LANE` (on the CPU, 16384 lanes into 2M slots: 0.2 ms claimed, 2.7 ms
  sorted)."""
  B = wanted.shape[0]
  lanes = jnp.arange(B, dtype=jnp.int32)
  if M <= CLAIMS_PER_LANE * B:
    claim = jnp.full(M, B, jnp.int32).at[wanted].min(lanes, mode="drop")
    return claim[jnp.minimum(wanted, M - 1)] == lanes
  order = jnp.argsort(wanted, stable=True)
  ws = wanted[order]
  first = (ws < M) & jnp.concatenate([jnp.ones(1, bool), ws[1:] != ws[:-1]])
  return jnp.zeros(B, bool).at[order].set(first)


def insert(table: InfoTable, keys, mask=None) -> tuple[InfoTable, jax.Array]:
  """Adds keys ``[B, W]`` (where ``mask [B]``, default all) not yet present; returns the new
  table and each lane's row (existing or new; :data:`NO_ROW` where masked off or refused).

  Lanes holding the same new key get the same row. When rows run out, the
  remaining new keys are refused: row ``NO_ROW``, counted in ``refused``, the
  table otherwise unchanged.
  """
  keys = _check_keys(table, keys)
  B = keys.shape[0]
  pending = jnp.ones(B, bool) if mask is None else jnp.asarray(mask, bool)
  if B == 1:
    # One lane gets a second, masked-off one: XLA compiles a one-element scatter into the
    # slots inside the loop as an update that copies all M slots each round.
    table, row = insert(table, jnp.concatenate([keys, keys]),
                        jnp.concatenate([pending, jnp.zeros(1, bool)]))
    return table, row[:1]
  if B < COMPACT_LANES:
    return _insert_lanes(table, keys, pending)
  # Typically few lanes ask (a trajectory's padding steps and the states its walk found are
  # masked off): the asking lanes are gathered in lane order and inserted K = B / 8 at a time,
  # so a probing round costs K lanes, not B. Earlier lanes go first (a contested slot still
  # goes to the lowest lane, rows are still handed out in lane order).
  order, K, n = chunks(pending, COMPACT_SPLIT)

  def cond(c):
    return c[0] * K < n

  def body(c):
    i, table, rows = c
    lane = lax.dynamic_slice_in_dim(order, i * K, K)
    table, row = _insert_lanes(table, keys[jnp.minimum(lane, B - 1)], lane < B)
    return i + 1, table, rows.at[lane].set(row, mode="drop")

  _, table, rows = lax.while_loop(cond, body, (jnp.zeros((), jnp.int32), table,
                                               jnp.full(B, NO_ROW, jnp.int32)))
  return table, rows


# Slots per lane up to which a probing round resolves contested slots by claims (_first_lanes).
CLAIMS_PER_LANE = 1024
# Batches of at least this many lanes insert their asking lanes in chunks (insert).
COMPACT_LANES = 64
# A chunk of asking lanes is this fraction of the batch's lanes (insert).
COMPACT_SPLIT = 8


def _insert_lanes(table: InfoTable, keys, pending) -> tuple[InfoTable, jax.Array]:
  """:func:`insert` of keys ``[B, W]`` where ``pending [B]``, probing all ``B`` lanes."""
  B = keys.shape[0]
  M = table.slots.shape[0]
  capacity = table.capacity
  start = key_hash(keys).astype(jnp.int32) & (M - 1)
  lanes = jnp.arange(B, dtype=jnp.int32)
  size0 = table.size

  # The loop carries the slots and per-lane arrays only: the key of a row taken in this call
  # is read from its lane (``taker``) and the keys are stored once after the loop, so a round
  # costs no copy of the [N, W] keys; a contested slot goes to its lowest lane
  # (:func:`_first_lanes`: claims, or the lanes sorted by slot when the slots are far more).
  def cond(c):
    return jnp.any(c[2])

  def body(c):
    slots, probe, pending, row, size, taker, refused = c
    slot = (start + probe) & (M - 1)
    r = slots[slot]
    fresh = r >= size0  # a row taken in this call
    stored = jnp.where(fresh[:, None], keys[taker[jnp.clip(r - size0, 0, B - 1)]],
                       table.keys[jnp.maximum(r, 0)])
    hit = pending & (r >= 0) & jnp.all(stored == keys, axis=-1)
    occupied = pending & (r >= 0) & ~hit
    free = pending & (r < 0)
    # A free slot goes to the lowest lane that wants it; winners take rows in lane order
    # while rows last, the others are refused.
    won = free & _first_lanes(jnp.where(free, slot, M), M)
    rank = prefix_sum(won) - 1
    take = won & (rank < capacity - size)
    new_row = size + rank
    slots = slots.at[jnp.where(take, slot, M)].set(new_row, mode="drop")
    # A free slot still free after the round means its winner was refused: rows ran out, so
    # every lane that met a free slot and did not take it is refused now (not one lane per
    # round: a full table meets whole batches of new keys).
    refuse = free & ~take & (slots[slot] < 0)
    taker = taker.at[jnp.where(take, new_row - size0, B)].set(lanes, mode="drop")
    # A lane whose slot another lane claimed looks at it again next round (same key: found;
    # else it probes on). Slots outnumber rows twice, so a new key always meets a free slot.
    row = jnp.where(hit, r, jnp.where(take, new_row, row))
    done = hit | take | refuse
    probe = probe + occupied
    return (slots, probe, pending & ~done, row, size + jnp.sum(take).astype(jnp.int32), taker,
            refused + jnp.sum(refuse).astype(jnp.int32))

  init = (table.slots, jnp.zeros(B, jnp.int32), pending, jnp.full(B, NO_ROW, jnp.int32),
          size0, jnp.zeros(B, jnp.int32), jnp.zeros((), jnp.int32))
  slots, _, _, row, size, taker, refused = lax.while_loop(cond, body, init)
  new = jnp.arange(B, dtype=jnp.int32) < size - size0
  stored = table.keys.at[jnp.where(new, size0 + lanes, capacity)].set(keys[taker], mode="drop")
  return table.replace(keys=stored, slots=slots, size=size,
                       refused=table.refused + refused), row


def host_keys(table: InfoTable) -> np.ndarray:
  """``[size, W]`` the stored keys in row order, on the host."""
  return np.asarray(table.keys)[:int(table.size)]
