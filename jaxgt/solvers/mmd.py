"""Magnetic mirror descent with dilated entropy (Sokota et al., ICLR 2023): a last-iterate solver.

``solver = mmd(alpha=0.05)`` returns a frozen :class:`MMDSolver` following the
solver protocol (:mod:`jaxgt.solvers.base`). One step is the dilated-entropy
MMD update of Sokota et al. (2023), Sec. 3 and Appendix (the sequence-form
version of OpenSpiel's ``mmd_dilated.py``): with stepsize ``eta`` and
regularisation ``alpha``, player ``p``'s new behavioural strategy solves,
bottom-up over its information states,

  ``h[I, a] = (eta * v[I, a] + log sigma_t(a | I)) / (1 + eta * alpha)
              + sum over child information states J of (I, a) of logsumexp(h[J])``
  ``sigma_{t+1}(. | I) = softmax(h[I])``

where ``v[I, a]`` sums, over the terminals whose own last sequence is ``(I,
a)``, the player's utility times chance (root belief) and opponent reach
under ``sigma_t`` (the gradient of the bilinear sequence-form payoff). This
is the closed form of the dilated-entropy proximal step (the constants of
the entropy's gradient cancel in the softmax). The update has no magnet term,
as in OpenSpiel: the magnet is the centre of the dilated entropy (the
realization plan minimising it), not the uniform strategy. The centre weights
action ``a`` at ``I`` by ``prod_J Z(J)`` over the information states ``J``
just below ``(I, a)``, ``Z(J) = sum_a prod_{J' below (J, a)} Z(J')``: uniform
only where every action leads to equally many choices (Kuhn: player 0's
first decision checks with 2/3). The last iterate converges to the
``alpha``-regularised (quantal-response) equilibrium of that regulariser,
whose exploitability falls with ``alpha``; :meth:`MMDSolver.policy` is the last
iterate and :meth:`MMDSolver.average_policy` the uniform average of the
realization plans of the initial (uniform) strategy and every iterate
(OpenSpiel's ``get_avg_policies``).
Updates are simultaneous by default (the paper and OpenSpiel); ``alternating``
lets player 1 answer player 0's new strategy.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxgt import struct
from jaxgt.core import sequence_form
from jaxgt.core.checks import check_real
from jaxgt.core.game_tree import GameTree, PlayerTree
from jaxgt.core.dtypes import cast_tree, dtype_name, resolve_dtype
from jaxgt.solvers.base import FullWidthSolver


@struct.dataclass
class MMDState:
  """State of one MMD run (add a leading ``B`` to every field when batched)."""

  sigma: tuple  # ([I0, A], [I1, A]) the current (last-iterate) behavioural strategies
  cum_policy: tuple  # ([I0, A], [I1, A]) sums of own reach * sigma over the iterates
  iteration: jax.Array  # [] int32 completed steps
  weights: jax.Array  # [T] terminal weights (chance reach under the root belief)
  stepsize: jax.Array  # [] eta


def payoff_matrix_scale(tree: GameTree, weights) -> np.ndarray:
  """``max |A[s0, s1]|`` of the sequence-form payoff matrix (terminal payoffs times
  ``weights [..., T]`` summed per pair of sequences), per leading index; host NumPy.

  OpenSpiel's ``mmd_dilated`` sets the default stepsize ``alpha / max|A|^2``.
  """
  seq = np.asarray(tree.terminal_seq)
  pairs, inverse = np.unique(seq.T, axis=0, return_inverse=True)
  w = np.asarray(weights, np.float64)
  flat = w.reshape(-1, w.shape[-1]) * np.asarray(tree.terminal_payoff, np.float64)
  out = np.zeros((flat.shape[0], len(pairs)))
  for b in range(flat.shape[0]):
    np.add.at(out[b], inverse.reshape(-1), flat[b])
  return np.abs(out).max(axis=1).reshape(w.shape[:-1])


def proximal_policy(pt: PlayerTree, leaf: jax.Array, leaf_seq: jax.Array, sigma: jax.Array,
                    eta, alpha, A: int) -> jax.Array:
  """One player's dilated-entropy MMD step (module docstring): ``[I, A]``.

  ``leaf [T]`` is the player's utility times chance and opponent reach,
  ``leaf_seq [T]`` its sequence at each terminal (``None``: ``leaf`` is in
  ``pt.terminal_order``, :func:`~jaxgt.core.sequence_form.terminal_sums`), ``sigma [I, A]`` its
  current strategy (positive on legal actions).
  """
  n = pt.num_infostates
  v = sequence_form.terminal_sums(pt, leaf, leaf_seq, A)[:n * A].reshape(n, A)
  legal = jnp.asarray(pt.legal)
  log_sigma = jnp.log(jnp.where(legal, sigma, 1.0))
  base = (eta * v + log_sigma) / (1.0 + eta * alpha)
  neg = jnp.asarray(-jnp.inf, base.dtype)
  out = [None] * len(pt.levels)
  from_below = None
  for k in reversed(range(len(pt.levels))):
    lo, hi = pt.levels[k]
    h = base[lo:hi]
    if from_below is not None:
      h = h + from_below.reshape(hi - lo, A)
    h = jnp.where(legal[lo:hi], h, neg)
    node = jax.nn.logsumexp(h, axis=-1)
    out[k] = jnp.where(legal[lo:hi], jnp.exp(h - node[:, None]), 0.0)
    if k > 0:
      plo, phi = pt.levels[k - 1]
      from_below = sequence_form.segment_sum(node, pt.parent_seq[lo:hi] - plo * A,
                                             (phi - plo) * A)
  if not out:
    return sigma
  return jnp.concatenate(out)


def _reach_times_sigma(pt: PlayerTree, sigma: jax.Array) -> jax.Array:
  """``[I, A]`` own reach of each information state times ``sigma``: the realization
  plan's entries, whose sum over iterates gives the average strategy."""
  return sequence_form.infostate_reach(pt, sequence_form.realization(pt, sigma))[:, None] * sigma


@dataclasses.dataclass(frozen=True)
class MMDSolver(FullWidthSolver):
  """Dilated-entropy MMD (module docstring); methods are pure functions."""

  name: str = "mmd"
  alpha: float = 0.05  # regularisation temperature (the last iterate -> alpha-QRE)
  stepsize: float | None = None  # eta; None: alpha / max|A|^2 (OpenSpiel's default)
  alternating: bool = False  # simultaneous (default, the paper's) or alternating updates
  dtype: str = "float32"

  def init(self, tree: GameTree, *, weights=None) -> MMDState:
    """Uniform strategies; ``weights [T]`` (or ``[B, T]``) defaults to chance reach."""
    dtype = resolve_dtype(self.dtype)
    weights = jnp.asarray(tree.terminal_chance if weights is None else weights, dtype)
    batch = sequence_form.check_weights(tree, weights)
    if self.stepsize is None:
      scale = payoff_matrix_scale(tree, weights)
      eta = np.where(scale > 0, self.alpha / np.maximum(scale, 1e-300) ** 2, 1.0)
    else:
      eta = np.full(batch, self.stepsize)
    uniform = sequence_form.uniform_policy(tree, dtype)
    sigma = tuple(jnp.broadcast_to(s, batch + s.shape) for s in uniform)
    cum = tuple(jnp.broadcast_to(_reach_times_sigma(pt, s), batch + s.shape)
                for pt, s in zip(tree.players, uniform))
    return MMDState(sigma=sigma, cum_policy=cum, iteration=jnp.zeros(batch, jnp.int32),
                    weights=weights, stepsize=jnp.asarray(eta, dtype))

  def loop(self, tree: GameTree, state: MMDState, num_steps) -> MMDState:
    """``num_steps`` MMD steps (traceable; ``run``/``run_batch`` jit it)."""
    tree = cast_tree(tree, state.weights.dtype)
    return lax.fori_loop(0, num_steps, lambda _, s: step(self, tree, s), state)

  def policy(self, tree, state) -> tuple:
    """The last iterate (MMD's output)."""
    return self.current_policy(tree, state)

  def current_policy(self, tree, state) -> tuple:
    """The current strategies ``([I0, A], [I1, A])``."""
    del tree
    return state.sigma


def step(solver: MMDSolver, tree: GameTree, state: MMDState) -> MMDState:
  """One MMD step (module docstring); pure and jit/vmap-able."""
  sigma = list(state.sigma)
  x = [sequence_form.realization(tree.players[p], sigma[p]) for p in (0, 1)]
  for p in (0, 1):
    pt = tree.players[p]
    leaf, leaf_seq = sequence_form.player_leaf_values(tree, p, x[1 - p], state.weights)
    sigma[p] = proximal_policy(pt, leaf, leaf_seq, sigma[p], state.stepsize, solver.alpha,
                               tree.num_actions)
    if solver.alternating:
      x[p] = sequence_form.realization(pt, sigma[p])
  cum = [c + _reach_times_sigma(pt, s) for c, pt, s in zip(state.cum_policy, tree.players, sigma)]
  return state.replace(sigma=tuple(sigma), cum_policy=tuple(cum), iteration=state.iteration + 1)



def mmd(alpha: float = 0.05, stepsize: float | None = None, *, alternating: bool = False,
        dtype="float32") -> MMDSolver:
  """Dilated-entropy MMD (Sokota et al. 2023) with regularisation ``alpha`` and stepsize
  ``stepsize`` (default ``alpha / max|A|^2``, OpenSpiel's)."""
  alpha = check_real("mmd: alpha", alpha, 0.0, lo_open=True)
  if stepsize is not None:
    stepsize = check_real("mmd: stepsize", stepsize, 0.0, lo_open=True)
  if not isinstance(alternating, bool):
    raise ValueError(f"alternating must be True or False, got {alternating!r}")
  return MMDSolver("mmd", alpha, stepsize, alternating, dtype_name(dtype))
