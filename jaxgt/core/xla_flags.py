"""The XLA CPU setting jaxgt applies when it is imported before JAX starts its backend.

XLA's CPU compiler turns a ``while`` loop into one compiled function (an
``xla_cpu_small_call``) when the loop reads and writes fewer than
``xla_cpu_small_while_loop_byte_threshold`` bytes per iteration (1024 by
default); any other loop runs its body operation by operation, at a fixed
cost per operation. One trajectory at a time (OOS, ISMCTS, UCT,
outcome-sampling MCCFR at batch 1) is a loop of a few dozen small
operations per depth step, so the threshold decides its speed: with 13
actions (Liar's Dice) the walk's body is just over 1 kB and ran 4-6x slower
than with the threshold at :data:`SMALL_LOOP_BYTES` (Leduc, 3 actions, is
under 1 kB either way). Larger loops (a CFR iteration over whole arrays,
batched walks) are not affected.

The threshold is read from ``XLA_FLAGS`` once, when JAX creates its first
backend, so :func:`tune_cpu` only helps if ``jaxgt`` is imported before the
first JAX computation; it leaves ``XLA_FLAGS`` alone if it already sets
``xla_backend_extra_options`` (the user's own) or if ``JAXGT_XLA_FLAGS=0``.
"""

from __future__ import annotations

import os

SMALL_LOOP_BYTES = 4096
"""The small-loop threshold jaxgt sets (bytes a loop iteration reads and writes)."""
OPT_OUT = "JAXGT_XLA_FLAGS"
"""Environment variable: ``0`` keeps ``XLA_FLAGS`` as it is."""
FLAG = ("--xla_backend_extra_options="
        f"xla_cpu_small_while_loop_byte_threshold={SMALL_LOOP_BYTES}")


def tune_cpu(environ=None) -> bool:
  """Adds :data:`FLAG` to ``environ["XLA_FLAGS"]`` (default ``os.environ``); returns whether
  it did (not when ``JAXGT_XLA_FLAGS=0`` or when ``XLA_FLAGS`` sets backend options already)."""
  environ = os.environ if environ is None else environ
  if environ.get(OPT_OUT, "1").strip() == "0":
    return False
  flags = environ.get("XLA_FLAGS", "")
  if "xla_backend_extra_options" in flags:
    return False
  environ["XLA_FLAGS"] = f"{flags} {FLAG}".strip()
  return True
