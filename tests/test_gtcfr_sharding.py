"""B GT-CFR searches sharded over 8 emulated devices equal the unsharded batch (issue 17)."""

import json
import os
import pathlib
import subprocess
import sys

import pytest

CHECK = pathlib.Path(__file__).with_name("gtcfr_sharding_check.py")


@pytest.mark.slow
def test_gtcfr_searches_sharded_over_eight_devices_equal_the_batch():
  env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=8",
             PYTHONPATH=str(CHECK.parents[1]) + os.pathsep + os.environ.get("PYTHONPATH", ""))
  out = subprocess.run([sys.executable, str(CHECK)], env=env, capture_output=True, text=True,
                       timeout=900)
  lines = [line for line in out.stdout.splitlines() if line.startswith("RESULT ")]
  assert out.returncode == 0 and lines, (out.stdout + out.stderr)[-3000:]
  r = json.loads(lines[-1][len("RESULT "):])
  assert r["devices"] == 8
  assert r["max_diff"] < 1e-10
  assert max(r["nodes"]) > 1  # the searches grew their trees
