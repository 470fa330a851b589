"""The fixed-capacity information-state table: exact keys, no collisions, refusals counted."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

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


def test_random_batches_agree_with_a_dictionary():
  """Random batches with repeated keys, masks and full tables: equal keys share a row, distinct
  keys never do, a row holds its key, refusals are counted per lane and nothing is
  overwritten once the table is full."""
  rng = np.random.default_rng(0)
  insert, lookup = jax.jit(it.insert), jax.jit(it.lookup)
  full = 0
  for trial in range(8):
    # few shapes, few compilations; 7 rows fill up, 300 rows (1024 slots) resolve contested
    # slots by sorting the lanes rather than scattering into the slots
    capacity, width = (7, 300)[trial % 2], 2
    table, model, refused = it.empty(capacity, width), {}, 0
    for _ in range(5):
      B = 24
      keys = rng.integers(0, 10, (B, width)).astype(np.int32)
      mask = rng.random(B) < 0.8
      before = dict(model)
      table, rows = insert(table, keys, mask)
      rows = np.asarray(rows)
      for lane in range(B):
        if not mask[lane]:
          assert rows[lane] == it.NO_ROW
        elif rows[lane] != it.NO_ROW:
          assert model.setdefault(tuple(keys[lane]), int(rows[lane])) == rows[lane], trial
      for lane in np.flatnonzero(mask & (rows == it.NO_ROW)):
        assert tuple(keys[lane]) not in model and len(model) == capacity
        refused += 1
      assert all(model[k] == r for k, r in before.items())
      assert sorted(model.values()) == list(range(len(model)))
      assert int(table.size) == len(model) and int(table.refused) == refused
      stored = it.host_keys(table)
      assert all(tuple(stored[r]) == k for k, r in model.items())
      probe = rng.integers(0, 10, (16, width)).astype(np.int32)
      found = np.asarray(lookup(table, probe))
      assert [model.get(tuple(k), it.NO_ROW) for k in probe] == found.tolist()
    full += refused > 0
  assert full >= 4  # the small tables fill up
