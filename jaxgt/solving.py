"""One call to solve a game with progress: ``jaxgt.solve("leduc_poker")``.

Runs a full-width solver (the CFR family of :mod:`jaxgt.solvers.cfr` or MMD,
:mod:`jaxgt.solvers.mmd`) or a sampling solver (``"mccfr-os"`` /
``"mccfr-es"``, driven by ``seed``) in jitted chunks of ``eval_every``
iterations, evaluating the exact exploitability of the solver's policy (the
average strategy; MMD's last iterate) between chunks (one jitted call per
chunk, so dispatch costs nothing), and reports each evaluation through
``progress`` (``True`` prints a line, a callable receives the
:class:`Evaluation`). ``last_iterate=True`` also evaluates the current
strategy (:meth:`current_policy`). ``target=eps`` stops at the first
evaluation at or below ``eps``, evaluating on a geometric grid (``eval_every``
then x :data:`TARGET_GROWTH`), so checks cost a few percent of the run.

The default solver is :data:`DEFAULT_SOLVER` (DCFR), the one that reaches 1e-4
and 1e-5 in Leduc in the fewest iterations in ``benchmarks/convergence.py`` (the
table of docs/benchmarks.md; DCFR+'s count there moves with float rounding).
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import sys
import time
from typing import Callable

import jax
import numpy as np

from jaxgt.core.checks import check_nonnegative_int, check_positive_int, check_real, check_shape
from jaxgt.core.dtypes import resolve_dtype
from jaxgt.core.compiler import compile_game, load
from jaxgt.core.game_tree import CompiledGame
from jaxgt.policy import Policy
from jaxgt.solvers import cfr as cfr_lib
from jaxgt.solvers import mmd as mmd_lib
from jaxgt.solvers.saved_state import check_same_structure
from jaxgt.core.evaluate import policy_evaluation, policy_evaluation_jit

# the full-width solvers by name: the CFR family and MMD (sampling: mccfr.SAMPLING_SOLVERS)
SOLVERS = {**cfr_lib.SOLVERS, mmd_lib.mmd().name: mmd_lib.mmd}
# the options every solver of a family shares; a factory's other parameters are hyperparameters
SHARED_OPTIONS = ("alternating", "dtype", "compensated", "exact_ties", "batch")
# the hyperparameter of the scheduled solvers (HS-PCFR+, HS-DCFR) that solve() sets to iterations
PLANNED = "planned_iterations"
SAMPLING_BATCH = 256  # trajectories per step of a sampling solver given by name (half per player)
# measured best to 1e-4 in Leduc (benchmarks/convergence.py, docs/PERFORMANCE.md)
DEFAULT_SOLVER = "dcfr"
# with a target, each evaluation comes this factor of iterations after the previous one: an
# exact evaluation costs ~15 CFR iterations in Leduc, so ~x1.25 balances checks and overshoot
TARGET_GROWTH = 1.25


def make_full_width_solver(name: str, *, iterations: int | None = None, alternating=None,
                           **kwargs):
  """A full-width solver by name (:data:`SOLVERS`).

  ``alternating=None`` keeps the solver's own default (alternating for the CFR
  family, simultaneous for MMD); a scheduled solver (HS-PCFR+, HS-DCFR) plans
  for ``iterations`` unless ``planned_iterations`` is given.
  """
  if name not in SOLVERS:
    raise ValueError(f"unknown solver {name!r}; choose one of {', '.join(SOLVERS)}")
  if alternating is not None:
    kwargs["alternating"] = alternating
  if PLANNED in hyperparameters(SOLVERS[name]) and PLANNED not in kwargs and iterations is not None:
    kwargs[PLANNED] = iterations
  try:
    return SOLVERS[name](**kwargs)
  except TypeError as e:  # a keyword the solver does not take
    raise ValueError(f"solver {name!r}: {e}") from None


def hyperparameters(factory) -> tuple:
  """The names of a solver factory's hyperparameters, in its signature's order: its named
  parameters but the options every solver of its family shares (:data:`SHARED_OPTIONS`)."""
  return tuple(n for n, p in inspect.signature(factory).parameters.items()
               if n not in SHARED_OPTIONS and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY))


@dataclasses.dataclass(frozen=True)
class Evaluation:
  iteration: int
  exploitability: float
  mbb_per_hand: float | None
  elapsed: float
  trajectories: int | None = None  # sampled trajectories so far (sampling solvers)
  last_iterate: float | None = None  # exploitability of the current strategy (last_iterate=True)


@dataclasses.dataclass(frozen=True)
class SolveResult:
  """Result of :func:`solve`: the average policy, its value and the curve."""

  game: CompiledGame
  policy: Policy
  value: float             # player 0's expected utility under ``policy``
  exploitability: float    # NashConv / 2
  evaluations: list        # [Evaluation]
  state: object            # the solver state (CFRState or MCCFRState)
  compile_seconds: float
  solve_seconds: float
  iterations: int          # iterations run (fewer than asked when a target was reached)


def _as_compiled(game) -> CompiledGame:
  if isinstance(game, CompiledGame):
    return game
  return load(game) if isinstance(game, str) else compile_game(game)


def mbb(game: CompiledGame, value: float) -> float | None:
  """Converts chips to milli-big-blinds (per hand) where the game has a big blind."""
  bb = game.game.big_blind
  return None if bb is None else 1000.0 * value / bb


def format_mbb(value: float) -> str:
  """Milli-big-blinds readable at every scale: ``12.345``, ``0.057``, ``5.50e-05``."""
  return f"{value:.3f}" if value == 0 or abs(value) >= 0.01 else f"{value:.2e}"


def format_evaluation(game: CompiledGame, e: Evaluation) -> str:
  m = f"  ({format_mbb(e.mbb_per_hand)} mbb/h)" if e.mbb_per_hand is not None else ""
  t = f"  trajectories {e.trajectories:>10d}" if e.trajectories is not None else ""
  last = f"  last-iterate {e.last_iterate:.6e}" if e.last_iterate is not None else ""
  return (f"iter {e.iteration:>8d}{t}  exploitability {e.exploitability:.6e}{m}{last}  "
          f"elapsed {e.elapsed:8.2f}s")


def solve(game, solver=DEFAULT_SOLVER, *, iterations: int = 1000,
          eval_every: int = 100, dtype="float32", alternating: bool | None = None,
          progress: bool | Callable[[Evaluation], None] = False, weights=None,
          seed: int = 0, batch: int | None = None, last_iterate: bool = False,
          target: float | None = None, state=None, checkpoint_every: int = 0,
          on_checkpoint: Callable | None = None, on_compiled: Callable | None = None,
          **solver_kwargs) -> SolveResult:
  """Solves ``game`` (name, ``Game`` or ``CompiledGame``) and tracks exploitability.

  ``solver`` is a full-width solver name (:data:`SOLVERS`: ``cfr``, ``cfr+``,
  ``lcfr``, ``dcfr``, ``pcfr+``, ``dcfr+``, ``pdcfr+``, ``hs-pcfr+``,
  ``hs-dcfr``, ``mmd``; ``solver_kwargs`` are its hyperparameters, and a
  scheduled solver plans for ``iterations``) or a
  :class:`~jaxgt.solvers.cfr.CFRSolver` / :class:`~jaxgt.solvers.mmd.MMDSolver`,
  or a sampling solver name
  (``mccfr-os``, ``mccfr-es``; keys from ``jax.random.key(seed)``) or
  :class:`~jaxgt.solvers.mccfr.MCCFRSolver`. For sampling solvers an
  iteration is one step of ``batch`` trajectories (default :data:`SAMPLING_BATCH`, even: half
  update each player, so trajectories = iterations x batch, the CLI's
  contract); a given ``MCCFRSolver`` brings its own per-player batch. ``weights`` (root beliefs) applies to
  the CFR family only. ``eval_every = 0`` evaluates only at the end. Invalid
  arguments raise ``ValueError`` before anything is compiled.
  ``alternating=None`` keeps the solver's default update order. ``target``
  (game units) stops at the first evaluation at or below it; evaluations then
  come at ``eval_every`` iterations and each :data:`TARGET_GROWTH` times the
  previous count (at most ``iterations`` in all).

  ``state`` continues a run from a solver state it returned (``SolveResult.state``), or from
  the state a function of the fresh state returns (``lambda fresh:
  jaxgt.solvers.saved_state.load_state(path, fresh)``): the run starts at ``state.iteration`` and
  ``iterations`` counts from the beginning of the run. ``on_checkpoint(state)`` is called at
  every multiple of ``checkpoint_every`` iterations (the chunks break there too) and at the
  end; ``on_compiled(seconds)`` once the run's programs are compiled. The chunk boundaries
  are a function of the iteration count alone (the evaluation grid, the checkpoint multiples
  and the end), so a run stopped at a checkpoint and continued from its state with the same
  ``eval_every``, ``checkpoint_every`` and ``seed`` ends in exactly the state of the
  uninterrupted run.
  """
  from jaxgt.solvers import mccfr as mccfr_lib
  check_positive_int("iterations", iterations)
  if not isinstance(last_iterate, bool):
    raise ValueError(f"last_iterate must be True or False, got {last_iterate!r}")
  check_nonnegative_int("eval_every", eval_every)
  check_nonnegative_int("checkpoint_every", checkpoint_every)
  if target is not None:
    target = check_real("target", target, 0.0, lo_open=True)
    if eval_every == 0:
      raise ValueError("target needs eval_every > 0 (the first evaluation)")
  dtype = resolve_dtype(dtype)
  sampling = isinstance(solver, mccfr_lib.MCCFRSolver) or (
      isinstance(solver, str) and solver in mccfr_lib.SAMPLING_SOLVERS)
  if sampling:
    if weights is not None:
      raise ValueError("root beliefs (weights) apply to the CFR family only, not to sampling solvers")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):  # any integer, even < 0
      raise ValueError(f"seed must be an integer, got {seed!r}")
    if isinstance(solver, str):
      batch = SAMPLING_BATCH if batch is None else batch
      if isinstance(batch, bool) or not isinstance(batch, (int, np.integer)) or batch < 2 or batch % 2:
        raise ValueError(f"batch must be an even integer >= 2 (trajectories per step, half for "
                         f"each player), got {batch!r}")
      solver = mccfr_lib.make_sampling_solver(solver, batch=int(batch) // 2, dtype=dtype,
                                              **solver_kwargs)
    elif batch is not None and batch != solver.samples_per_step:
      raise ValueError(f"batch={batch} conflicts with the solver's {solver.samples_per_step} "
                       f"trajectories per step")
  else:
    if batch is not None:
      raise ValueError("batch applies to sampling solvers (mccfr-os, mccfr-es) only")
    if isinstance(solver, str):
      solver = make_full_width_solver(solver, iterations=iterations, alternating=alternating,
                                      dtype=dtype, **solver_kwargs)
  compiled = _as_compiled(game)
  tree = compiled.device_tree(dtype)
  # Every solver follows jaxgt.solvers.base: init / run(..., key) / policy.
  fresh = solver.init(tree, weights=weights)  # solvers without root beliefs raise for weights
  if state is None:
    state = fresh
  else:
    state = state(fresh) if callable(state) else state
    check_same_structure(fresh, state)
  start_iteration = int(np.asarray(state.iteration))
  if last_iterate:
    solver.current_policy(tree, state)  # raises for a solver without a current strategy
  key = jax.random.key(int(seed))
  per_step = solver.samples_per_step or None
  weights = None if weights is None else jax.numpy.asarray(weights, dtype)
  report = progress if callable(progress) else (
      (lambda e: print(format_evaluation(compiled, e), file=sys.stdout, flush=True))
      if progress else (lambda e: None))

  chunk = eval_every if eval_every > 0 else iterations
  t0 = time.perf_counter()
  # Compile outside the timed loop: the iteration count is traced, so a
  # zero-iteration call compiles the loop without running it.
  jax.block_until_ready(solver.run(tree, state, 0, key))
  for current in ((False, True) if last_iterate else (False,)):
    jax.block_until_ready(_exploitability(solver, tree, state, weights, current))
  compile_seconds = time.perf_counter() - t0
  if on_compiled is not None:
    on_compiled(compile_seconds)

  evals = []
  start = time.perf_counter()
  it, next_eval = start_iteration, chunk
  while next_eval <= it:  # the evaluation grid of an uninterrupted run, past a resumed start
    next_eval = next_eval + chunk if target is None else max(next_eval + 1,
                                                             int(next_eval * TARGET_GROWTH))
  while it < iterations:
    stop = min(next_eval, iterations)
    if checkpoint_every:
      stop = min(stop, (it // checkpoint_every + 1) * checkpoint_every)
    state = solver.run(tree, state, stop - it, key)
    it = stop
    reached = False
    if it == next_eval or it == iterations:
      if it == next_eval:
        next_eval = it + chunk if target is None else max(it + 1, int(it * TARGET_GROWTH))
      if eval_every > 0 or it == iterations:
        expl = float(_exploitability(solver, tree, state, weights, False))
        last = float(_exploitability(solver, tree, state, weights, True)) if last_iterate else None
        e = Evaluation(it, expl, mbb(compiled, expl), time.perf_counter() - start,
                       None if per_step is None else it * per_step, last)
        evals.append(e)
        report(e)
        reached = target is not None and expl <= target
    if on_checkpoint is not None and (reached or it == iterations or
                                      (checkpoint_every and it % checkpoint_every == 0)):
      on_checkpoint(state)
    if reached:
      break
  if on_checkpoint is not None and it == start_iteration:
    on_checkpoint(state)
  jax.block_until_ready(state)
  solve_seconds = time.perf_counter() - start
  pol = solver.policy(tree, state)
  final = policy_evaluation_jit(tree, pol, weights)
  policy = Policy.from_arrays(compiled, [np.asarray(p, np.float64) for p in pol])
  return SolveResult(compiled, policy, float(final.value), float(final.exploitability), evals,
                     state, compile_seconds, solve_seconds, it)


@functools.partial(jax.jit, static_argnums=(0, 4))
def _exploitability(solver, tree, state, weights, current: bool):
  """The exploitability of ``solver``'s policy (``current``: its current strategy) in ``state``,
  in one jitted call (the policy computed eagerly would cost three times the evaluation)."""
  pol = solver.current_policy(tree, state) if current else solver.policy(tree, state)
  return policy_evaluation(tree, pol, weights).exploitability


def plot_curve(evaluations, path: str, title: str = "") -> None:
  """Saves exploitability versus iteration (log-log) to a PNG."""
  from jaxgt.extras import require
  require("plot", "plotting").use("Agg")
  import matplotlib.pyplot as plt
  xs = [e.iteration for e in evaluations]
  ys = [max(e.exploitability, 1e-12) for e in evaluations]
  fig, ax = plt.subplots(figsize=(6, 4))
  ax.loglog(xs, ys, marker="o", ms=3)
  ax.set_xlabel("iteration")
  ax.set_ylabel("exploitability (NashConv / 2)")
  ax.set_title(title)
  ax.grid(True, which="both", alpha=0.3)
  fig.tight_layout()
  fig.savefig(path, dpi=120)
  plt.close(fig)


@dataclasses.dataclass(frozen=True)
class BatchResult:
  """Result of :func:`solve_batch`: one policy and value per root belief."""

  policies: tuple  # ([B, I0, A], [B, I1, A]) average policies
  values: np.ndarray  # [B] player 0's expected utility of each member's policy under its belief
  exploitability: np.ndarray  # [B] NashConv / 2 of each member under its belief
  state: object  # the batched solver state


def solve_batch(game, weights, solver=DEFAULT_SOLVER, *,
                iterations: int = 1000, dtype="float32", **solver_kwargs) -> BatchResult:
  """Solves ``B`` root beliefs of one game in a single vmapped, jitted call.

  ``weights [B, T]`` are terminal weights (e.g. stacked
  :func:`jaxgt.core.sequence_form.root_chance_weights`).
  """
  check_positive_int("iterations", iterations)
  dtype = resolve_dtype(dtype)
  if isinstance(solver, str):
    solver = make_full_width_solver(solver, iterations=iterations, dtype=dtype, **solver_kwargs)
  compiled = _as_compiled(game)
  tree = compiled.device_tree(dtype)
  weights = jax.numpy.asarray(weights)
  check_shape("solve_batch: terminal weights [B, T]", weights, (None, tree.num_terminals))
  state = solver.init(tree, weights=weights)
  state = solver.run_batch(tree, state, iterations)
  pols, vals, expl = _evaluate_batch(solver, tree, state)
  return BatchResult(pols, np.asarray(vals), np.asarray(expl), state)


@functools.partial(jax.jit, static_argnums=(0,))
def _evaluate_batch(solver, tree, state):
  def one(s):
    pol = solver.policy(tree, s)
    evaluation = policy_evaluation(tree, pol, s.weights)
    return pol, evaluation.value, evaluation.exploitability
  return jax.vmap(one)(state)
