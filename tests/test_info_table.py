"""The fixed-capacity information-state table: exact keys, no collisions, refusals counted."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxgt.core import info_table
from jaxgt.core import info_table as it


def test_insert_then_lookup_returns_one_row_per_distinct_key():
  rng = np.random.default_rng(0)
  keys = rng.integers(-3, 4, size=(3000, 3)).astype(np.int32)  # many repeats, 343 distinct
  t = it.empty(400, 3)
  t, rows = jax.jit(it.insert)(t, keys)
  rows = np.asarray(rows)
  distinct = {tuple(k) for k in keys}
  assert int(t.size) == len(distinct) and int(t.refused) == 0
  by_key = {}
  for k, r in zip(map(tuple, keys), rows):
    assert by_key.setdefault(k, r) == r  # equal keys share a row
  assert len(set(by_key.values())) == len(distinct)  # distinct keys never share one
  np.testing.assert_array_equal(np.asarray(it.lookup(t, keys)), rows)
  stored = it.host_keys(t)
  for k, r in by_key.items():
    assert tuple(stored[r]) == k


def test_hash_collisions_are_resolved_by_full_key_comparison():
  # Keys that differ only in a later word collide often in a tiny table.
  keys = np.stack([np.zeros(64, np.int32), np.arange(64, dtype=np.int32)], axis=1)
  t, rows = it.insert(it.empty(64, 2), keys)
  assert sorted(np.asarray(rows).tolist()) == list(range(64))
  absent = np.array([[0, 64], [1, 0]], np.int32)
  np.testing.assert_array_equal(np.asarray(it.lookup(t, absent)), [-1, -1])


def test_a_full_table_refuses_and_counts_without_overwriting():
  keys = np.arange(20, dtype=np.int32)[:, None]
  t, rows = it.insert(it.empty(8, 1), keys)
  rows = np.asarray(rows)
  assert int(t.size) == 8 and int(t.refused) == 12
  assert np.sum(rows >= 0) == 8 and np.sum(rows < 0) == 12
  before = it.host_keys(t).copy()
  t2, rows2 = it.insert(t, keys[::-1])  # a second batch: the stored keys keep their rows
  np.testing.assert_array_equal(it.host_keys(t2), before)
  kept = rows >= 0
  np.testing.assert_array_equal(np.asarray(rows2)[::-1][kept], rows[kept])
  assert int(t2.refused) == 24


def test_masked_lanes_are_not_inserted():
  keys = np.arange(6, dtype=np.int32)[:, None]
  t, rows = it.insert(it.empty(10, 1), keys, np.array([1, 0, 1, 0, 1, 0], bool))
  assert int(t.size) == 3
  np.testing.assert_array_equal(np.asarray(rows) < 0, [False, True] * 3)


def test_tables_vmap_over_a_batch_of_independent_tables():
  keys = jnp.arange(12, dtype=jnp.int32).reshape(3, 4, 1)  # 3 tables, 4 keys each
  tables = jax.vmap(lambda _: it.empty(4, 1))(jnp.arange(3))
  tables, rows = jax.jit(jax.vmap(it.insert))(tables, keys)
  np.testing.assert_array_equal(np.asarray(tables.size), [4, 4, 4])
  found = jax.vmap(it.lookup)(tables, keys)
  np.testing.assert_array_equal(np.asarray(found), np.asarray(rows))


def test_memory_estimate_counts_keys_slots_and_statistics():
  assert it.num_slots(1000) == 2048
  assert it.table_bytes(1000, 7, 24) == 1000 * (28 + 24) + 4 * 2048


@pytest.mark.parametrize("bad", [0, -3, 2.5])
def test_bad_capacity_is_refused(bad):
  with pytest.raises(ValueError, match="capacity"):
    it.empty(bad, 2)


def test_keys_of_the_wrong_width_or_dtype_are_refused():
  t = it.empty(4, 2)
  with pytest.raises(ValueError, match=r"\[batch, 2\]"):
    it.lookup(t, np.zeros((3, 3), np.int32))
  with pytest.raises(TypeError, match="integers"):
    it.insert(t, np.zeros((3, 2), np.float32))


def _check_against_dict(capacity, batches):
  """Inserts ``batches`` of ``(keys [B, W], mask [B])``; checks rows, keys, size and refusals
  against a dictionary filled in the same order."""
  width = batches[0][0].shape[1]
  table = info_table.empty(capacity, width)
  insert, lookup = jax.jit(info_table.insert), jax.jit(info_table.lookup)
  rows_of, refused = {}, 0
  for keys, mask in batches:
    table, rows = insert(table, keys, mask)
    rows = np.asarray(rows)
    before, fresh = len(rows_of), {}
    for lane, (k, m) in enumerate(zip(map(tuple, keys), mask)):
      if not m:
        assert rows[lane] == info_table.NO_ROW
      elif k in rows_of:
        assert rows[lane] == rows_of[k], (k, lane)
      else:  # a new key: one row (or a refusal) for all its lanes
        assert fresh.setdefault(k, rows[lane]) == rows[lane], (k, lane)
        refused += int(rows[lane] < 0)
    taken = sorted(int(r) for r in fresh.values() if r >= 0)
    assert taken == list(range(before, before + len(taken)))  # fresh rows, dense
    rows_of.update({k: r for k, r in fresh.items() if r >= 0})
    assert len(taken) == len(fresh) or len(rows_of) == capacity  # refused only when full
    assert int(table.size) == len(rows_of) and int(table.refused) == refused
    stored = info_table.host_keys(table)
    for k, r in rows_of.items():
      np.testing.assert_array_equal(stored[r], k)
    found = np.asarray(lookup(table, keys))
    np.testing.assert_array_equal(found, [rows_of.get(tuple(k), info_table.NO_ROW) for k in keys])
  return rows_of, refused


@pytest.mark.parametrize("batch", [1, 2, 24])
def test_insert_matches_a_dictionary_with_repeats_probing_and_a_full_table(batch):
  rng = np.random.default_rng(batch)
  # Few distinct keys (repeats in a batch and across batches); 2 words; the table fills.
  batches = [(rng.integers(0, 6, (batch, 2)).astype(np.int32), rng.random(batch) < 0.8)
             for _ in range(12)]
  rows_of, refused = _check_against_dict(7, batches)
  assert len(rows_of) == 7 and (refused > 0 or batch == 1)


def test_many_distinct_keys_probe_and_fill_the_table():
  """64 lanes of 3-word keys from 60 values into 40 rows (64 slots: long probe chains)."""
  rng = np.random.default_rng(0)
  batches = [(rng.integers(0, 60, (64, 1)).astype(np.int32) * np.array([[1, 1000, -7]],
                                                                          np.int32),
              np.ones(64, bool)) for _ in range(3)]
  rows_of, refused = _check_against_dict(40, batches)
  assert len(rows_of) == 40 and refused > 0


@pytest.mark.parametrize("M", [16, 1 << 16])  # lanes scattered into the claims / lanes sorted
def test_a_contested_slot_goes_to_its_lowest_lane(M):
  rng = np.random.default_rng(M)
  for _ in range(5):
    wanted = rng.integers(0, 9, 24).astype(np.int32) * (M // 16)
    wanted[rng.random(24) < 0.3] = M  # lanes wanting no slot
    want = [w < M and lane == int(np.flatnonzero(wanted == w)[0])
            for lane, w in enumerate(wanted)]
    np.testing.assert_array_equal(np.asarray(it._first_lanes(jnp.asarray(wanted), M)), want)
  batches = [(rng.integers(0, 60, (24, 2)).astype(np.int32), rng.random(24) < 0.9)
             for _ in range(4)]
  _check_against_dict(M // 2, batches)


@pytest.mark.parametrize("density", [0.05, 0.3, 1.0])  # one chunk of asking lanes, or several
def test_large_batches_insert_their_asking_lanes_in_chunks_like_a_dictionary(density):
  rng = np.random.default_rng(int(density * 100))
  batches = [(rng.integers(0, 400, (512, 2)).astype(np.int32), rng.random(512) < density)
             for _ in range(3)]
  rows_of, _ = _check_against_dict(300, batches)
  assert len(rows_of) > 0


def test_a_full_table_refuses_a_large_batch_of_one_new_key_at_once():
  """Lanes sharing a new key that a full table refuses are all refused in the same round, so a
  whole batch of them costs one probe chain, not one round per lane."""
  t, first = it.insert(it.empty(16, 1), np.arange(16, dtype=np.int32)[:, None])
  keys = np.concatenate([np.full((20000, 1), 99, np.int32),
                         np.arange(100, 20100, dtype=np.int32)[:, None],
                         np.arange(16, dtype=np.int32)[:, None]])
  t2, rows = jax.jit(it.insert)(t, keys)
  rows = np.asarray(rows)
  assert int(t2.size) == 16 and int(t2.refused) == 40000
  assert np.all(rows[:40000] == it.NO_ROW)
  np.testing.assert_array_equal(rows[40000:], np.asarray(first))  # stored keys keep their rows
  np.testing.assert_array_equal(it.host_keys(t2), it.host_keys(t))
