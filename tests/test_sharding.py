"""jaxgt.sharding: sharded results equal single-device ones (8 emulated devices, 2 processes)."""

import json
import os
import pathlib
import socket
import subprocess
import sys

import jax
import numpy as np
import pytest

import jaxgt
from jaxgt import sharding
from jaxgt.solvers import cfr, mccfr

CHECKS = pathlib.Path(__file__).with_name("sharding_checks.py")
ROOT = str(CHECKS.parents[1])


def _run_checks(args=(), devices=None, timeout=600):
  env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
  if devices:
    env["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={devices}"
  return subprocess.Popen([sys.executable, str(CHECKS), *args], env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True)


def _result(proc, timeout=600):
  out, _ = proc.communicate(timeout=timeout)
  lines = [l for l in out.splitlines() if l.startswith("RESULT ")]
  assert proc.returncode == 0 and lines, out[-3000:]
  return json.loads(lines[-1][len("RESULT "):])


@pytest.mark.slow  # over the default run's time budget
def test_eight_emulated_devices_give_the_single_device_results():
  r = _result(_run_checks(devices=8))
  assert r["devices"] == 8
  # Independent rows: batched CFR+ over root beliefs and batched subgame solves.
  # (rows equal up to float64 rounding: XLA fuses the per-device shape differently)
  assert r["run_batch"] < 1e-10 and r["run_batch_sharded_over"] == 8
  assert r["solve_batch"] < 1e-12
  # Sampled MCCFR: psum of 8 devices' increments == the 8 runs added on one device.
  assert r["sampled_run"] < 1e-9 and r["sampled_iteration"] == 5 and r["sampled_nonzero"] > 0
  # One game's terminal and information-state arrays over the devices, padded or not.
  for name, devices, padded in (("kuhn_poker", 8, 32), ("leduc_poker", 8, 5520),
                                ("leduc_poker", 7, 5523)):
    label = f"shard_game {name} {devices}"
    assert r[label] < 1e-11, label
    assert r[label + " terminals"][1:] == [padded, devices]
  assert r["data_parallel"] < 1e-12


def test_two_processes_through_jax_distributed():
  with socket.socket() as s:
    s.bind(("localhost", 0))
    port = s.getsockname()[1]
  args = ("--num-processes", "2", "--coordinator", f"localhost:{port}")
  procs = [_run_checks(("--process-id", str(k)) + args) for k in (0, 1)]
  results = [_result(p, timeout=300) for p in procs]
  assert sorted(r["process"] for r in results) == [0, 1]
  for r in results:
    assert r["processes"] == 2 and r["global_devices"] == 2 and r["local_devices"] == 1
    assert r["run_batch"] < 1e-12


def test_one_device_mesh_equals_the_plain_calls():
  tree = jaxgt.load("kuhn_poker").device_tree("float64")
  m = sharding.mesh()
  solver = cfr.cfr_plus(dtype="float64")
  w = np.stack([np.asarray(tree.terminal_chance)] * 3)
  state = solver.init_batch(tree, w)
  ref, got = solver.run_batch(tree, state, 7), sharding.run_batch(solver, tree, state, 7, m)
  for a, b in zip(jax.tree_util.tree_leaves(ref), jax.tree_util.tree_leaves(got)):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=0, atol=1e-14)
  os_solver = mccfr.outcome_sampling(batch=8, dtype="float64")
  key = jax.random.key(0)
  ref = os_solver.run(tree, os_solver.init(tree), 4, key)
  got = sharding.sampled_run(os_solver, tree, os_solver.init(tree), 4, key, m)
  assert int(got.iteration) == 4
  # One device draws with fold_in(key, 0): a different stream, the same algorithm.
  ref0 = os_solver.run(tree, os_solver.init(tree), 4, jax.random.fold_in(key, 0))
  for a, b in zip(ref0.regrets + ref0.cum_policy, got.regrets + got.cum_policy):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-12, atol=1e-12)
  assert not np.allclose(np.asarray(ref.regrets[0]), np.asarray(got.regrets[0]))


def test_bad_input_is_refused():
  m = sharding.mesh()
  with pytest.raises(ValueError, match="same leading"):
    sharding.shard_rows((np.zeros((3, 2)), np.zeros((4, 2))), m)
  with pytest.raises(ValueError, match="process_id"):
    sharding.initialize("localhost:1", 2, 5)
  with pytest.raises(ValueError, match="at least one device"):
    sharding.mesh([])
  tree = jaxgt.load("kuhn_poker").device_tree("float32")
  with pytest.raises(ValueError, match="num_steps"):
    sharding.sampled_run(mccfr.outcome_sampling(), tree, mccfr.outcome_sampling().init(tree), 0,
                         jax.random.key(0), m)
