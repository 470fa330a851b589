"""Fixed-capacity information-state tables against a Python dictionary of the same keys."""

import jax
import numpy as np

from jaxgt.core import info_table


def test_insert_and_lookup_agree_with_a_dictionary():
  """Random batches with repeated keys, masks and full tables: equal keys share a row, distinct
  keys never do, a row holds its key, refusals are counted per lane and nothing is
  overwritten once the table is full."""
  rng = np.random.default_rng(0)
  insert, lookup = jax.jit(info_table.insert), jax.jit(info_table.lookup)
  full = 0
  for trial in range(8):
    # few shapes, few compilations; 7 rows fill up, 300 rows (1024 slots) resolve contested
    # slots by sorting the lanes rather than scattering into the slots
    capacity, width = (7, 300)[trial % 2], 2
    table, model, refused = info_table.empty(capacity, width), {}, 0
    for _ in range(5):
      B = 24
      keys = rng.integers(0, 10, (B, width)).astype(np.int32)
      mask = rng.random(B) < 0.8
      before = dict(model)
      table, rows = insert(table, keys, mask)
      rows = np.asarray(rows)
      for lane in range(B):
        if not mask[lane]:
          assert rows[lane] == info_table.NO_ROW
        elif rows[lane] != info_table.NO_ROW:
          assert model.setdefault(tuple(keys[lane]), int(rows[lane])) == rows[lane], trial
      for lane in np.flatnonzero(mask & (rows == info_table.NO_ROW)):
        assert tuple(keys[lane]) not in model and len(model) == capacity
        refused += 1
      assert all(model[k] == r for k, r in before.items())
      assert sorted(model.values()) == list(range(len(model)))
      assert int(table.size) == len(model) and int(table.refused) == refused
      stored = info_table.host_keys(table)
      assert all(tuple(stored[r]) == k for k, r in model.items())
      probe = rng.integers(0, 10, (16, width)).astype(np.int32)
      found = np.asarray(lookup(table, probe))
      assert [model.get(tuple(k), info_table.NO_ROW) for k in probe] == found.tolist()
    full += refused > 0
  assert full >= 4  # the small tables fill up
