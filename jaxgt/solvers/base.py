"""The protocol every solver follows (optax's ``GradientTransformation`` and mctx's keys).

A solver is a frozen dataclass made by a factory (``cfr_plus()``...); its
methods (:class:`Solver`) are pure functions of a
:class:`~jaxgt.core.game_tree.GameTree` and an immutable state pytree.
``state.iteration`` (``[] int32``) counts completed steps. Randomness enters
only through ``key``: step ``t`` uses :func:`step_key` ``(key, t)``, so
``run(n1)`` then ``run(n2)`` equals ``run(n1 + n2)``. Deterministic solvers
ignore ``key``; sampled ones raise without one. Arguments are checked on
static values before tracing (:mod:`jaxgt.core.checks`).
"""

from __future__ import annotations

import abc
import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxgt.core import rng, sequence_form
from jaxgt.core.checks import check_key, check_nonnegative_int, check_positive_int
from jaxgt.core.evaluate import policy_evaluation


class Solver(abc.ABC):
  """Base class of every solver (module docstring); ``name`` is its registry name."""

  name: str
  samples_per_step: int = 0

  @abc.abstractmethod
  def init(self, tree, *, weights=None) -> Any:
    """The initial state for ``tree`` (and a root belief ``weights [T]`` where supported)."""

  @abc.abstractmethod
  def run(self, tree, state, num_steps, key=None) -> Any:
    """``num_steps`` steps inside one jitted call."""

  def step(self, tree, state, key=None) -> Any:
    """One step (a CFR iteration, or ``samples_per_step`` trajectories or simulations)."""
    return self.run(tree, state, 1, key)

  def policy(self, tree, state) -> tuple:
    """The output strategy ``([I0, A], [I1, A])``; by default :meth:`average_policy`."""
    return self.average_policy(tree, state)

  def current_policy(self, tree, state) -> tuple:
    """The current strategy ``([I0, A], [I1, A])`` (the last iterate): by default regret
    matching of ``state.regrets`` (MCCFR, OOS); raises for a solver without regrets."""
    regrets = getattr(state, "regrets", None)
    if regrets is None:
      raise ValueError(f"{self.name} has no current strategy (no regrets in its state)")
    return tuple(sequence_form.regret_matching(r, jnp.asarray(pt.legal))
                 for r, pt in zip(regrets, tree.players))

  def average_policy(self, tree, state) -> tuple:
    """Normalised ``state.cum_policy`` (uniform where never updated): ``([I0, A], [I1, A])``."""
    return tuple(sequence_form.normalize(c, jnp.asarray(pt.legal))
                 for c, pt in zip(state.cum_policy, tree.players))

  @property
  def sampled(self) -> bool:
    """Whether the solver consumes a key."""
    return self.samples_per_step > 0

  @property
  def jitted_run(self):
    """The jitted function behind :meth:`run` (what :func:`compilations` counts), or ``None``."""
    return None


class FullWidthSolver(Solver):
  """A deterministic solver whose ``loop(tree, state, n)`` runs ``n`` traced steps.

  ``run`` jits that loop (the step count traced: one compilation serves every
  chunk size); ``run_batch`` vmaps it over the leading batch axis of a state
  from ``init_batch``. ``key`` is ignored.
  """

  @abc.abstractmethod
  def loop(self, tree, state, num_steps) -> Any:
    """``num_steps`` steps from ``state`` (traceable)."""

  def run(self, tree, state, num_steps, key=None) -> Any:
    """``num_steps`` steps inside one jitted call (``key`` is ignored)."""
    del key
    if state.iteration.ndim != 0:
      raise ValueError(f"state is batched (batch shape {state.iteration.shape}); use run_batch")
    return _run_loop(self, tree, state, check_num_steps(num_steps, traced_ok=True))

  @property
  def jitted_run(self):
    return _run_loop

  def run_batch(self, tree, state, num_steps, key=None) -> Any:
    """``run`` vmapped over the leading batch axis of ``state``."""
    del key
    return _run_loop_batch(self, tree, state, check_num_steps(num_steps))


@functools.partial(jax.jit, static_argnums=(0,))
def _run_loop(solver: FullWidthSolver, tree, state, num_steps):
  return solver.loop(tree, state, num_steps)


@functools.partial(jax.jit, static_argnums=(0,))
def _run_loop_batch(solver: FullWidthSolver, tree, state, num_steps):
  return jax.vmap(lambda s: solver.loop(tree, s, num_steps))(state)


def compilations(fn) -> int:
  """How many compiled versions the jitted ``fn`` holds (one per static configuration and
  argument shapes/dtypes); for a :class:`Solver`, those of the jitted function behind its
  ``run`` (shared by every solver of its module). A call that leaves the count unchanged
  did not recompile."""
  if isinstance(fn, Solver):
    fn = fn.jitted_run
  size = getattr(fn, "_cache_size", None)
  if size is None:
    raise ValueError(f"compilations needs a jax.jit-wrapped function or a solver whose run is "
                     f"one, got {fn!r}")
  return int(size())


def check_num_steps(num_steps, *, traced_ok: bool = False) -> jax.Array:
  """``num_steps`` as an ``int32`` array; raises unless a non-negative integer (or, with
  ``traced_ok``, traced)."""
  if isinstance(num_steps, (bool, float)) or (
      isinstance(num_steps, (int, np.integer)) and num_steps < 0) or (
      not traced_ok and not isinstance(num_steps, (int, np.integer))):
    raise ValueError(f"num_steps must be a non-negative integer, got {num_steps!r}")
  return jnp.asarray(num_steps, jnp.int32)


def require_key(solver_name: str, key) -> jax.Array:
  """``key`` checked (:func:`~jaxgt.core.checks.check_key`); a clear error when it is ``None``."""
  if key is None:
    raise ValueError(f"{solver_name} is a sampled solver: pass a jax.random key, "
                     "e.g. run(tree, state, n, jax.random.key(0))")
  return check_key(key)


def step_key(key: jax.Array, iteration) -> jax.Array:
  """The key of step ``iteration`` (0-based) of a run driven by ``key``."""
  return rng.fold_in(key, iteration)


def exploitability_curve(solver: Solver, tree, checkpoints, key: jax.Array,
                         seeds: int = 1) -> np.ndarray:
  """``[len(checkpoints), seeds]`` exact exploitabilities of ``seeds`` vmapped runs of ``solver``.

  Runs are driven by ``split(key, seeds)`` and evaluated after each of the
  increasing ``checkpoints`` (one jitted call each); the last row equals one
  run of ``checkpoints[-1]`` steps.
  """
  seeds = check_positive_int("seeds", seeds)
  steps = [check_nonnegative_int("checkpoint", c) for c in checkpoints]
  if any(b < a for a, b in zip(steps, steps[1:])):
    raise ValueError(f"checkpoints must be increasing, got {checkpoints!r}")
  keys = jax.random.split(require_key(solver.name, key), seeds)

  @jax.jit
  def advance(states, n):
    def one(s, k):
      s = solver.run(tree, s, n, k)  # deterministic solvers ignore the key
      return s, policy_evaluation(tree, solver.policy(tree, s)).exploitability
    return jax.vmap(one)(states, keys)

  state = solver.init(tree)
  states = jax.tree_util.tree_map(lambda x: jnp.broadcast_to(x, (seeds,) + x.shape), state)
  done, out = 0, []
  for c in steps:
    states, e = advance(states, c - done)
    done = c
    out.append(np.asarray(e))
  return np.asarray(out)
