"""Self-play actors and the learner sharded over devices (issues 12 and 17)."""

import json
import os
import pathlib
import subprocess
import sys

import pytest

CHECK = pathlib.Path(__file__).with_name("training_sharding_check.py")


@pytest.mark.slow
def test_training_iterations_on_eight_devices_equal_one_device():
  """Two training iterations with the games split over 8 emulated devices and a data-parallel
  learner equal the single-device iterations (parameters, games, replay), and a device count
  that does not divide the games is refused."""
  env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=8",
             PYTHONPATH=str(CHECK.parents[1]) + os.pathsep + os.environ.get("PYTHONPATH", ""))
  out = subprocess.run([sys.executable, str(CHECK)], env=env, capture_output=True, text=True,
                       timeout=900)
  lines = [line for line in out.stdout.splitlines() if line.startswith("RESULT ")]
  assert out.returncode == 0 and lines, (out.stdout + out.stderr)[-3000:]
  r = json.loads(lines[-1][len("RESULT "):])
  assert r["devices"] == 8 and r["actor_shards"] == 8
  assert r["examples"] > 0  # the learner trained on drawn examples
  for part in ("params", "actors", "replay", "loss"):
    assert r[part] < 1e-5, (part, r)  # float32 network: reduction order differs
  assert r["refused_uneven"]
