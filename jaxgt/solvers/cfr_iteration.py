"""One CFR iteration over a tree view: the regret and averaging step, written once.

A tree view (:class:`TreeView`) supplies what depends on the tree's form: each
player's strategy from its regrets, and for player ``p`` under the current
strategies its counterfactual action values ``q`` and own reach of each
information state. :func:`iteration` does the rest for every view: it updates
player 0 then player 1 (alternating: player 1 sees player 0's new strategy,
OpenSpiel's ``_CFRSolverBase`` order) or both from the same strategies
(simultaneous); each update (:func:`update_player`) takes the instantaneous
regrets ``q - sum_a sigma q`` (with the tie rule, :func:`exact_ties`) into the
solver's regret rule and ``own reach * sigma`` into its averaging rule
(:mod:`jaxgt.solvers.cfr_rules`) as a plain, compensated or blocked sum. The
views: the sequence form of a compiled game (:class:`jaxgt.solvers.cfr.SequenceView`)
and the history form of a growing public tree (:mod:`jaxgt.search.gtcfr`).
"""

from __future__ import annotations

from typing import Any, Protocol

import jax
import jax.numpy as jnp

from jaxgt import struct


@struct.dataclass
class Iterate:
  """What :func:`iteration` carries from one iteration to the next."""

  state: Any  # the :class:`~jaxgt.solvers.cfr.CFRState` (regrets, averages, iteration count)
  sigma: tuple  # ([I0, A], [I1, A]) current strategies of state (in the view's layout)
  x: tuple  # (x0, x1) what the view derives from them (sequence form: realization plans [S_p])
  root_state: Any = ()  # the view's own state (sequence form: the root transform's; () without)
  # (PartialSum, PartialSum) the average's block in progress inside CFRSolver.loop (() outside)
  partial: tuple = ()
  # static: the layout of every [I, A] array above (state, sigma, partial), and of x: False
  # [I, A] with sequences i*A + a; True [A, I] with sequences a*I + i (action-major,
  # sequence_form.action_major), where the sums over actions run along the long axis
  actions_first: bool = struct.field(pytree_node=False, default=False)
  # (legal0, legal1) in that layout when actions_first ([A, I] bools, transposed once by
  # start, outside the loop), else () (the trees' [I, A] masks)
  legal: tuple = ()


class TreeView(Protocol):
  """A tree form as :func:`iteration` sees it (built for each traced iteration; ``axis``:
  the actions' axis of its ``[I, A]`` or ``[A, I]`` arrays; ``aux``: its own state)."""

  axis: int

  def legal(self, player: int) -> jax.Array:
    """Player ``player``'s legal actions (bools shaped like its regrets)."""

  def strategy(self, player: int, regrets, extra) -> tuple:
    """``(sigma, x)``: the regret rule's strategy and what the view derives from it."""

  def begin(self, aux, players: tuple, sigma: tuple, x: tuple, t) -> Any:
    """The context of the update of ``players`` (static) at iteration ``t``."""

  def values(self, ctx, player: int, sigma: tuple, x: tuple) -> tuple:
    """``(q, reach [I], ctx)``: action values, own reach and the context."""

  def end(self, ctx, players: tuple, t) -> Any:
    """``aux`` after the update of ``players``."""


def start(view: TreeView, state, aux=(), **fields) -> Iterate:
  """The carry for ``state`` (its current strategies), with view state ``aux`` and the
  static ``fields`` of :class:`Iterate` (``actions_first``, ``legal``)."""
  pairs = [view.strategy(p, state.regrets[p], state.regret_state[p]) for p in (0, 1)]
  return Iterate(state=state, sigma=tuple(s for s, _ in pairs), x=tuple(x for _, x in pairs),
                 root_state=aux, **fields)


def iteration(solver, view: TreeView, carry: Iterate, update_mask=None) -> Iterate:
  """One CFR iteration of ``solver`` (a :class:`~jaxgt.solvers.cfr.CFRSolver`: its rules,
  update order, tie rule and averaging sums) on ``view`` (module docstring); pure and
  jit/vmap-able.

  ``update_mask``: ``(m0 [I0], m1 [I1])`` bools or ``None``: information states outside
  the mask get zero instantaneous regrets (regrets that are zero stay zero, so their
  strategy stays uniform).
  """
  state = carry.state
  t = state.iteration + 1
  sigma, x = list(carry.sigma), list(carry.x)
  regrets, extra, cum = list(state.regrets), list(state.regret_state), list(state.cum_policy)
  comp, partial = list(state.cum_compensation), list(carry.partial)
  aux = carry.root_state
  for players in ((0,), (1,)) if solver.alternating else ((0, 1),):
    ctx = view.begin(aux, players, sigma, x, t)
    for p in players:
      q, reach, ctx = view.values(ctx, p, sigma, x)
      mask = None if update_mask is None else update_mask[p]
      regrets[p], extra[p], cum[p], comp[p], part = update_player(
          solver, view.axis, view.legal(p), q, sigma[p], reach, t, regrets[p], extra[p],
          cum[p], comp[p], partial[p] if partial else None, mask)
      if partial:
        partial[p] = part
    aux = view.end(ctx, players, t)
    for p in players:
      sigma[p], x[p] = view.strategy(p, regrets[p], extra[p])
  state = state.replace(regrets=tuple(regrets), cum_policy=tuple(cum), iteration=t,
                        regret_state=tuple(extra), cum_compensation=tuple(comp))
  return carry.replace(state=state, sigma=tuple(sigma), x=tuple(x), root_state=aux,
                       partial=tuple(partial))


def update_player(solver, axis: int, legal, q, sigma, reach, t, regrets, extra, cum,
                  compensation, partial=None, mask=None) -> tuple:
  """One player's regret and averaging step at iteration ``t``: ``(regrets, extra, cum,
  compensation, partial)``.

  ``q`` and ``sigma`` are its action values and strategy, ``reach [I]`` its own reach;
  ``axis`` is the actions' axis. The sum is ``partial`` (a block in progress,
  :class:`~jaxgt.solvers.cfr_rules.PartialSum`) when given, else compensated or plain as
  the solver says (``compensation`` is ``()`` for plain sums).
  """
  value = jnp.sum(sigma * q, axis=axis, keepdims=True)
  instant = q - value
  if solver.exact_ties:
    instant = exact_ties(instant, q, axis)
  instant = jnp.where(legal, instant, 0.0)
  if mask is not None:
    instant = jnp.where(jnp.expand_dims(mask, axis), instant, 0.0)
  regrets, extra = solver.regret_rule.update(regrets, instant, t, extra)
  increment = jnp.expand_dims(reach, axis) * sigma
  if partial is not None:
    partial = solver.averaging.add_partial(partial, increment, t)
  elif solver.compensated:
    cum, compensation = solver.averaging.add(cum, compensation, increment, t)
  else:
    cum = solver.averaging.accumulate(cum, increment, t)
  return regrets, extra, cum, compensation, partial


def exact_ties(regret: jax.Array, q: jax.Array, axis: int = -1) -> jax.Array:
  """Instantaneous regrets with residuals of ties set to zero (``CFRSolver.exact_ties``).

  Where an action's value equals the information state's value in exact
  arithmetic, ``q - sum(sigma q)`` comes out as a few ulps of either sign,
  depending on how XLA fuses the sum; regret matching+ then turns such a
  residual into a pure strategy. Anything within ``A eps max|q|`` of zero is
  taken for a tie and set to zero, so a run does not depend on the XLA version
  or on how it is chunked where the values tie exactly. The iterates are not
  those of exact arithmetic: rounding elsewhere (in ``q`` itself, in a
  discounted rule's ``R d + r``) stays, and a true regret within the
  tolerance is dropped.
  """
  eps = jnp.finfo(regret.dtype).eps
  scale = jnp.max(jnp.abs(q), axis=axis, keepdims=True)
  return jnp.where(jnp.abs(regret) <= q.shape[axis] * eps * scale, 0.0, regret)
