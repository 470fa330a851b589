"""Information-state tables: batched inserts and lookups against a Python dictionary."""

import jax
import numpy as np
import pytest

from jaxgt.core import info_table


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
