"""The one gather of per-player tables ``([I0, A], [I1, A])`` at the acting information state."""

from __future__ import annotations

import jax.numpy as jnp


def infostate_rows(tables, player, infostate):
  """Rows ``[..., *row]`` of ``tables = (t0 [I0, *row], t1 [I1, *row])`` at ``(player, infostate)``
  (``[...]``, traceable): ``t0``'s where ``player == 0``, else ``t1``'s; indices are clipped, so
  ``NO_INDEX`` entries read a valid row that callers mask."""
  t0, t1 = (jnp.asarray(t) for t in tables)
  info = jnp.asarray(infostate, jnp.int32)
  r0 = t0[jnp.clip(info, 0, max(t0.shape[0] - 1, 0))]
  r1 = t1[jnp.clip(info, 0, max(t1.shape[0] - 1, 0))]
  sel = (jnp.asarray(player) == 0).reshape(info.shape + (1,) * (t0.ndim - 1))
  return jnp.where(sel, r0, r1)


def acting_row(tree, tables, history):
  """Row ``[A]`` of ``tables`` at the acting information state of ``history`` (traceable)."""
  h = jnp.asarray(history, jnp.int32)
  return infostate_rows(tables, jnp.asarray(tree.player)[h], jnp.asarray(tree.infostate)[h])
