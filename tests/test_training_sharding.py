"""Self-play actors and the learner sharded over devices (issues 12 and 17)."""

import pathlib

import pytest

from device_subprocess import run_with_devices

CHECK = pathlib.Path(__file__).with_name("training_sharding_check.py")


@pytest.mark.slow
def test_training_iterations_on_eight_devices_equal_one_device():
  """Two training iterations with the games split over 8 emulated devices and a data-parallel
  learner equal the single-device iterations (parameters, games, replay), and a device count
  that does not divide the games is refused."""
  r = run_with_devices(CHECK)
  assert r["devices"] == 8 and r["actor_shards"] == 8
  assert r["examples"] > 0  # the learner trained on drawn examples
  for part in ("params", "actors", "replay", "loss"):
    assert r[part] < 1e-5, (part, r)  # float32 network: reduction order differs
  assert r["refused_uneven"]
