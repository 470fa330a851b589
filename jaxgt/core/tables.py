"""Per-player tables ``([I0, A], [I1, A])`` indexed by histories.

Solvers, agents and the match referee all read "the row of the acting
player's information state at history ``h``"; this module is the one place
that gather lives.
"""

from __future__ import annotations

import jax.numpy as jnp


def acting_row(tree, tables, history):
  """Row ``[A]`` of ``tables = ([I0, A], [I1, A])`` at the acting player's information state.

  ``tree`` is a :class:`~jaxgt.core.compiler.GameTree` (NumPy or device arrays);
  traceable in ``history`` (an ``int32`` scalar, concrete or traced).
  """
  h = jnp.asarray(history, jnp.int32)
  pl = jnp.asarray(tree.player)[h]
  info = jnp.asarray(tree.infostate)[h]
  t0, t1 = (jnp.asarray(t) for t in tables)
  r0 = t0[jnp.clip(info, 0, max(t0.shape[0] - 1, 0))]
  r1 = t1[jnp.clip(info, 0, max(t1.shape[0] - 1, 0))]
  return jnp.where(pl == 0, r0, r1)


