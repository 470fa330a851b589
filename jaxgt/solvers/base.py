"""The protocol every solver follows (optax's ``GradientTransformation`` and mctx's keys).

A solver is a frozen dataclass made by a factory (``cfr_plus()``,
``outcome_sampling(batch=256)``, ``OOS(delta=0.9)``...) that closes over its
hyperparameters; its methods are pure functions of a compiled
:class:`~jaxgt.core.compiler.GameTree` and an immutable state pytree:

=========================================  =====================================
method                                     computes
=========================================  =====================================
``init(tree, *, weights=None) -> state``   the initial state (``weights [T]``:
                                           a root belief, where the solver
                                           supports one)
``step(tree, state, key=None) -> state``   one step (one iteration of the
                                           CFR family; ``samples_per_step``
                                           trajectories / simulations of a
                                           sampled solver)
``run(tree, state, num_steps, key=None)``  ``num_steps`` steps in one jitted
                                           call
``policy(tree, state) -> (s0, s1)``        the solver's output strategy
                                           ``([I0, A], [I1, A])`` (the average
                                           strategy for the CFR family, MCCFR,
                                           OOS and UCT)
=========================================  =====================================

Conventions shared by all of them:

* **Counters.** ``state.iteration`` (``[] int32``) counts completed steps;
  ``solver.samples_per_step`` says how many sampled trajectories or
  simulations one step is (``0`` for the deterministic CFR family).
* **Keys.** Randomness enters only through the explicit ``key`` argument of
  ``step``/``run``, never through the state. Step ``t`` (0-based, counted by
  ``state.iteration``) uses :func:`step_key` ``(key, t)``, so ``run(n1)``
  then ``run(n2)`` with one key equals ``run(n1 + n2)``: chunking for
  progress reports does not change results. Deterministic solvers accept and
  ignore ``key``; sampled solvers raise a clear error without one.
* **Errors.** Arguments are checked on static values before anything is
  traced (:mod:`jaxgt.core.checks`).
"""

from __future__ import annotations

import abc
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxgt.core import sequence_form
from jaxgt.core.checks import check_key, check_nonnegative_int, check_positive_int, max_depth
from jaxgt.core.dtypes import resolve_dtype
from jaxgt.core.evaluate import policy_evaluation


class Solver(abc.ABC):
  """Base class of every solver (see module docstring for the protocol).

  Subclasses are frozen dataclasses; ``name`` is the solver's registry name
  and ``samples_per_step`` its trajectories or simulations per step.
  """

  name: str
  samples_per_step: int = 0

  @abc.abstractmethod
  def init(self, tree, *, weights=None) -> Any:
    """The initial state for ``tree`` (and a root belief ``weights [T]`` where supported)."""

  @abc.abstractmethod
  def run(self, tree, state, num_steps, key=None) -> Any:
    """``num_steps`` steps inside one jitted call."""

  def step(self, tree, state, key=None) -> Any:
    """One step."""
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


def check_num_steps(num_steps, *, traced_ok: bool = False) -> jax.Array:
  """``num_steps`` as an ``int32`` array; raises unless a non-negative integer.

  With ``traced_ok`` a traced integer passes (agents run a traced number of
  steps inside ``act``).
  """
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


def walking_init_dtype(solver: Solver, tree, weights):
  """The float dtype of a root-walking solver's state (MCCFR, OOS, ISMCTS, UCT).

  Raises for root beliefs (``weights``), which such solvers do not support,
  and for a tree not in breadth-first order.
  """
  if weights is not None:
    raise ValueError(f"{solver.name} does not support root beliefs (weights)")
  max_depth(tree)
  return resolve_dtype(solver.dtype)


def step_key(key: jax.Array, iteration) -> jax.Array:
  """The key of step ``iteration`` (0-based) of a run driven by ``key``."""
  return jax.random.fold_in(key, iteration)


def exploitability_curve(solver: Solver, tree, checkpoints, key: jax.Array,
                         seeds: int = 1) -> np.ndarray:
  """``[len(checkpoints), seeds]`` exact exploitabilities of ``seeds`` vmapped runs of ``solver``.

  Works for every solver through the protocol: ``seeds`` runs from
  ``solver.init(tree)`` driven by the keys ``split(key, seeds)`` (sampled
  solvers; deterministic ones get no key), each evaluated after
  ``checkpoints[k]`` steps (increasing) with
  :func:`jaxgt.core.evaluate.policy_evaluation` of ``solver.policy``; one
  jitted call per checkpoint. Chunking does not change a run (step keys), so
  the last column equals one run of ``checkpoints[-1]`` steps.
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
