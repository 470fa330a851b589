"""Per-player tables ``([I0, A], [I1, A])`` indexed by information states.

Solvers, agents and the match referee all read "the row of the acting
player's information state"; :func:`infostate_rows` is the one place that
gather lives (batched), :func:`acting_row` its single-history form.
"""

from __future__ import annotations

import jax.numpy as jnp


def infostate_rows(tables, player, infostate):
  """Rows ``[..., *row]`` of ``tables = (t0 [I0, *row], t1 [I1, *row])`` at ``(player, infostate)``.

  ``player`` and ``infostate`` are ``int32`` arrays of one shape ``[...]``
  (traceable); the row of ``t0`` is taken where ``player == 0``, of ``t1``
  elsewhere. Indices are clipped into range, so chance, terminal and
  padding entries (``NO_INDEX`` information states) read a valid row that
  callers mask.
  """
  t0, t1 = (jnp.asarray(t) for t in tables)
  info = jnp.asarray(infostate, jnp.int32)
  r0 = t0[jnp.clip(info, 0, max(t0.shape[0] - 1, 0))]
  r1 = t1[jnp.clip(info, 0, max(t1.shape[0] - 1, 0))]
  sel = (jnp.asarray(player) == 0).reshape(info.shape + (1,) * (t0.ndim - 1))
  return jnp.where(sel, r0, r1)


def acting_row(tree, tables, history):
  """Row ``[A]`` of ``tables = ([I0, A], [I1, A])`` at the acting player's information state.

  ``tree`` is a :class:`~jaxgt.core.compiler.GameTree` (NumPy or device arrays);
  traceable in ``history`` (an ``int32`` scalar, concrete or traced).
  """
  h = jnp.asarray(history, jnp.int32)
  return infostate_rows(tables, jnp.asarray(tree.player)[h], jnp.asarray(tree.infostate)[h])
