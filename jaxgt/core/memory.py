"""Free memory where arrays live: the host's for the CPU, the accelerator's own otherwise.

Work whose size is known before it compiles (an enumeration's histories, a match program's
search tables) checks it against these figures first, so a run too large for the machine is
refused in one line instead of failing in the allocator after minutes of compilation.
"""

from __future__ import annotations

import os

import jax


def rss_bytes() -> int:
  """Resident memory of this process (Linux ``/proc``; else the peak from ``resource``)."""
  try:
    with open("/proc/self/statm") as f:
      return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
  except (OSError, ValueError, IndexError):
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def available_memory() -> int | None:
  """``MemAvailable`` of ``/proc/meminfo`` in bytes (None where unknown)."""
  try:
    with open("/proc/meminfo") as f:
      for line in f:
        if line.startswith("MemAvailable:"):
          return int(line.split()[1]) * 1024
  except OSError:
    pass
  return None


def available_device_memory(device=None) -> int | None:
  """Bytes free on ``device`` (default: JAX's first device): its allocator's limit less what
  is in use where the device reports them (GPUs, TPUs), else the host's available memory (the
  CPU). None where neither is known."""
  device = jax.devices()[0] if device is None else device
  try:
    stats = device.memory_stats()
  except Exception:  # backends without memory statistics
    stats = None
  if stats and "bytes_limit" in stats:
    return max(0, int(stats["bytes_limit"]) - int(stats.get("bytes_in_use", 0)))
  return available_memory()


def gib(n: int) -> str:
  """``n`` bytes in GiB with two decimals (``"1.50 GiB"``)."""
  return f"{n / 2 ** 30:.2f} GiB"
