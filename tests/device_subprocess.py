"""Runs a check script in a subprocess with emulated CPU devices (the test process has one)."""

import json
import os
import pathlib
import subprocess
import sys


def run_with_devices(script: pathlib.Path, devices: int = 8, timeout: int = 900) -> dict:
  """The ``RESULT {json}`` line ``script`` prints, run with ``devices`` emulated devices;
  fails with the script's output tail when it exits non-zero or prints no result."""
  env = dict(os.environ, XLA_FLAGS=f"--xla_force_host_platform_device_count={devices}",
             PYTHONPATH=str(script.parents[1]) + os.pathsep + os.environ.get("PYTHONPATH", ""))
  out = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True,
                       timeout=timeout)
  lines = [line for line in out.stdout.splitlines() if line.startswith("RESULT ")]
  assert out.returncode == 0 and lines, (out.stdout + out.stderr)[-3000:]
  return json.loads(lines[-1][len("RESULT "):])
