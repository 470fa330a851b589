"""B GT-CFR searches sharded over 8 emulated devices equal the unsharded batch."""

import pathlib

import pytest

from device_subprocess import run_with_devices

CHECK = pathlib.Path(__file__).with_name("gtcfr_sharding_check.py")


@pytest.mark.slow
def test_gtcfr_searches_sharded_over_eight_devices_equal_the_batch():
  r = run_with_devices(CHECK)
  assert r["devices"] == 8
  assert r["max_diff"] < 1e-10
  assert max(r["nodes"]) > 1  # the searches grew their trees
