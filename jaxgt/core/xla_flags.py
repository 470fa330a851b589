"""The XLA CPU settings jaxgt applies when it is imported before JAX starts its backend.

1. **The small-loop limit.** XLA's CPU compiler turns a ``while`` loop into one
   compiled function (an ``xla_cpu_small_call``) when the loop reads and writes
   fewer than ``xla_cpu_small_while_loop_byte_threshold`` bytes per iteration
   (1024 by default); any other loop runs its body operation by operation, at a
   fixed cost per operation. One trajectory at a time (OOS, ISMCTS, UCT,
   outcome-sampling MCCFR at batch 1) is a loop of a few dozen small operations
   per depth step, so the threshold decides its speed: with 13 actions (Liar's
   Dice) the walk's body is just over 1 kB and ran 4-6x slower than with the
   threshold at :data:`SMALL_LOOP_BYTES` (Leduc, 3 actions, is under 1 kB either
   way). Larger loops (a CFR iteration over whole arrays, batched walks) are not
   affected. (:data:`FLAG`, a backend option.)
2. **No YNNPACK reductions.** Recent XLA:CPU hands reductions to YNNPACK fusions,
   which ran the CFR iteration's sums over actions (``sum_a sigma q`` on ``[1, A,
   I]``) up to 50x slower than XLA's own loops: a batched CFR+ iteration of LD(1,1)
   at ``B = 1`` took 15-19 ms, 8x the unbatched one, and 1.8-2.0 ms without them;
   unbatched LD(1,1) 1.7-1.9 against 2.3-2.6 ms, GT-CFR's SoG(100, 1) search on
   Leduc 5.0-5.3 against 3.0-3.7 searches/s (docs/PERFORMANCE.md).
   (:data:`YNN_FLAG`, only where the installed jaxlib has the flag:
   :func:`jaxlib_has_flag`; XLA aborts the process on a flag it does not know.)

Both are read from ``XLA_FLAGS`` once, when JAX creates its first backend, so
:func:`tune_cpu` only helps if ``jaxgt`` is imported before the first JAX
computation; each is left out where ``XLA_FLAGS`` already sets it (the small-loop
limit wherever ``xla_backend_extra_options`` is set: the user's own options), and
both where ``JAXGT_XLA_FLAGS=0``.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import mmap
import os
import pathlib
import re

SMALL_LOOP_BYTES = 4096
"""The small-loop threshold jaxgt sets (bytes a loop iteration reads and writes)."""
OPT_OUT = "JAXGT_XLA_FLAGS"
"""Environment variable: ``0`` keeps ``XLA_FLAGS`` as it is."""
FLAG = ("--xla_backend_extra_options="
        f"xla_cpu_small_while_loop_byte_threshold={SMALL_LOOP_BYTES}")
YNN_NAME = "xla_cpu_experimental_ynn_fusion_type"
YNN_FLAG = f"--{YNN_NAME}=-reduce"
"""Removes reductions from XLA:CPU's YNNPACK fusion types (its other types stay)."""
YNN_MIN_JAXLIB = (0, 10)
"""The first jaxlib release whose ``-reduce`` form of :data:`YNN_FLAG` was checked."""


def jaxlib_has_flag(name: str = YNN_NAME, minimum=YNN_MIN_JAXLIB) -> bool:
  """Whether the installed jaxlib (at least ``minimum``) knows the XLA flag ``name``: its
  version, and the name in one of its shared libraries (where XLA's flag parser spells
  it). Nothing is imported."""
  try:
    version = importlib.metadata.version("jaxlib")
    spec = importlib.util.find_spec("jaxlib")
  except (importlib.metadata.PackageNotFoundError, ImportError, ValueError):
    return False
  if tuple(int(x) for x in re.findall(r"\d+", version)[:2]) < tuple(minimum):
    return False
  if spec is None or not spec.submodule_search_locations:
    return False
  needle = name.encode()
  for folder in spec.submodule_search_locations:
    libs = [p for p in pathlib.Path(folder).iterdir()
            if p.is_file() and p.suffix in (".so", ".dylib", ".pyd", ".dll")]
    for lib in sorted(libs, key=lambda p: p.stat().st_size):
      try:
        with open(lib, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
          if m.find(needle) >= 0:
            return True
      except (OSError, ValueError):
        continue
  return False


def tune_cpu(environ=None, has_ynn_flag=None) -> bool:
  """Adds :data:`FLAG` and :data:`YNN_FLAG` to ``environ["XLA_FLAGS"]`` (default
  ``os.environ``) where ``XLA_FLAGS`` does not set them already (module docstring);
  :data:`YNN_FLAG` only if ``has_ynn_flag`` (default :func:`jaxlib_has_flag`). Returns
  whether it added either (never when ``JAXGT_XLA_FLAGS=0``)."""
  environ = os.environ if environ is None else environ
  if environ.get(OPT_OUT, "1").strip() == "0":
    return False
  flags = environ.get("XLA_FLAGS", "")
  added = []
  if "xla_backend_extra_options" not in flags:
    added.append(FLAG)
  if YNN_NAME not in flags and (jaxlib_has_flag() if has_ynn_flag is None else has_ynn_flag):
    added.append(YNN_FLAG)
  if added:
    environ["XLA_FLAGS"] = " ".join([flags] + added).strip()
  return bool(added)
