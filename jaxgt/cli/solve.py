"""``jaxgt solve GAME [options]``: solve a game, print exploitability as it falls.

The solvers and their hyperparameter flags come from the solver factories
(:data:`jaxgt.solving.SOLVERS`, :data:`jaxgt.solvers.mccfr.SAMPLING_SOLVERS`): each
hyperparameter a factory takes is a flag, typed and documented with every
solver's default as the factory states it; an unset flag keeps that default.
"""

from __future__ import annotations

import inspect
import sys

from jaxgt.agents.spec_grammar import params_from, show
from jaxgt.cli.common import (PAYOFF, add_max_histories, check_positive, check_writable,
                              load_game, print_json)
from jaxgt.extras import require
from jaxgt.solving import (DEFAULT_SOLVER, PLANNED, SAMPLING_BATCH, SOLVERS, hyperparameters,
                           solve)
from jaxgt.solvers.mccfr import SAMPLING_SOLVERS

# what each hyperparameter means (the flags' help; names, types and defaults are the factories')
MEANING = {
    "alpha": "regret discount exponent (DCFR family) or regularisation (MMD)",
    "beta": "negative-regret discount exponent",
    "gamma": "averaging exponent",
    "planned_iterations": "the schedule's horizon (default --iterations)",
    "gamma0": "initial averaging exponent",
    "stepsize": "stepsize (none: alpha / max|A|^2)",
    "epsilon": "exploration of the sampling policy",
}
# {solver: its hyperparameters (Param: name, type, default, help)}, read from the factories
SOLVER_FLAGS = {name: params_from(factory, **{k: MEANING.get(k, k)
                                              for k in hyperparameters(factory)})
                for name, factory in {**SOLVERS, **SAMPLING_SOLVERS}.items()}
HYPERPARAMETERS = tuple(dict.fromkeys(p.name for ps in SOLVER_FLAGS.values() for p in ps))
_SOLVE = inspect.signature(solve).parameters  # the defaults of jaxgt.solve


def _flag(name: str) -> str:
  return "--" + name.replace("_", "-")


def _true_false(text: str) -> bool:
  """A boolean flag's value: ``true`` or ``false``."""
  if text.lower() not in ("true", "false"):
    raise ValueError(f"expected true or false, got {text!r}")
  return text.lower() == "true"


def _hyperparameter_help(name: str) -> str:
  """``meaning: solver (default), ...`` over the solvers that take ``name``."""
  uses = [(solver, p) for solver, ps in SOLVER_FLAGS.items() for p in ps if p.name == name]
  shown = ", ".join(solver if p.default is None or name == PLANNED
                    else f"{solver} ({show(p.default)})" for solver, p in uses)
  return f"{uses[0][1].help}: {shown}"


def add_parser(sub) -> None:
  p = sub.add_parser("solve", help="solve a game")
  p.add_argument("game")
  p.add_argument("--solver", default=DEFAULT_SOLVER, choices=list(SOLVER_FLAGS),
                 help=f"default {DEFAULT_SOLVER}: the fastest to 1e-4 in benchmarks/convergence.py")
  p.add_argument("--iterations", type=int, default=_SOLVE["iterations"].default,
                 help="iterations (for sampling solvers: steps of --batch trajectories)")
  p.add_argument("--eval-every", type=int, default=_SOLVE["eval_every"].default,
                 help="evaluate exploitability every K iterations (0: only at the end)")
  p.add_argument("--simultaneous", action="store_true",
                 help="simultaneous instead of alternating updates (MMD is simultaneous anyway)")
  p.add_argument("--alternating", action="store_true", help="alternating updates for MMD")
  p.add_argument("--dtype", default=_SOLVE["dtype"].default, choices=["float32", "float64"])
  for name in HYPERPARAMETERS:
    kind = next(q.type for ps in SOLVER_FLAGS.values() for q in ps if q.name == name)
    p.add_argument(_flag(name), type=_true_false if kind is bool else kind,
                   metavar="true|false" if kind is bool else None, help=_hyperparameter_help(name))
  p.add_argument("--no-compensation", action="store_true",
                 help="CFR family: plain average sums instead of compensated rescaled ones")
  p.add_argument("--no-exact-ties", action="store_true",
                 help="CFR family: keep rounding residuals where action values tie exactly "
                      "(the tie rule sets them to zero by default)")
  p.add_argument("--target", type=float,
                 help="stop at the first evaluation with exploitability at or below this (game "
                      "units); evaluations then come at --eval-every and every x1.25 iterations")
  p.add_argument("--last-iterate", action="store_true",
                 help="also print the exploitability of the current strategy")
  p.add_argument("--seed", type=int, default=None,
                 help=f"random seed (sampling solvers only; default {_SOLVE['seed'].default})")
  p.add_argument("--batch", type=int, default=None,
                 help="trajectories per step, even, half for each player (sampling solvers "
                      f"only; trajectories = iterations x batch; default {SAMPLING_BATCH})")
  p.add_argument("--save", metavar="POLICY", help="save the solver's policy (.npz)")
  p.add_argument("--plot", metavar="PNG", help="plot exploitability versus iteration")
  p.add_argument("--json", action="store_true",
                 help="print one JSON object (the progress lines go to stderr)")
  add_max_histories(p)


def solver_kwargs(args) -> dict:
  """The hyperparameter flags given, checked against what ``args.solver`` takes."""
  given = {k: getattr(args, k) for k in HYPERPARAMETERS if getattr(args, k, None) is not None}
  allowed = [p.name for p in SOLVER_FLAGS[args.solver]]
  wrong = [k for k in given if k not in allowed]
  if wrong:
    takes = ", ".join(map(_flag, allowed)) or "none"
    raise ValueError(f"{', '.join(map(_flag, wrong))} does not apply to --solver {args.solver} "
                     f"(it takes: {takes})")
  kw = dict(given)
  options = inspect.signature({**SOLVERS, **SAMPLING_SOLVERS}[args.solver]).parameters
  for flag, option in (("no_compensation", "compensated"), ("no_exact_ties", "exact_ties")):
    if getattr(args, flag):
      if option not in options:
        raise ValueError(f"--{flag.replace('_', '-')} applies to the CFR family only")
      kw[option] = False
  return kw


def run(args) -> int:
  import jax
  if args.dtype == "float64":
    jax.config.update("jax_enable_x64", True)
  if args.iterations < 1:
    raise ValueError(f"--iterations must be positive, got {args.iterations}")
  if args.eval_every < 0:
    raise ValueError(f"--eval-every must be >= 0, got {args.eval_every}")
  sampling = args.solver in SAMPLING_SOLVERS
  if not sampling:
    given = [flag for flag in ("seed", "batch") if getattr(args, flag) is not None]
    if given:
      raise ValueError(f"{' and '.join('--' + f for f in given)} applies to the sampling solvers "
                       f"only ({', '.join(SAMPLING_SOLVERS)}); --solver {args.solver} is "
                       "deterministic")
  seed = _SOLVE["seed"].default if args.seed is None else args.seed
  batch = SAMPLING_BATCH if args.batch is None else args.batch
  if sampling and (batch < 2 or batch % 2):
    raise ValueError(f"--batch must be an even integer >= 2 (half the trajectories of a step "
                     f"update each player), got {batch}")
  if seed < 0:
    raise ValueError(f"--seed must be >= 0, got {seed}")
  if args.target is not None:
    check_positive(args, "target")
    if args.target == float("inf") or args.eval_every == 0:
      raise ValueError(f"--target {args.target} needs a finite target and --eval-every > 0")
  check_positive(args, "max_histories")
  if args.simultaneous and args.alternating:
    raise ValueError("--simultaneous and --alternating exclude each other")
  kw = solver_kwargs(args)
  check_writable({"--save": args.save, "--plot": args.plot})
  if args.plot:
    require("plot", "--plot")
  g = load_game(args.game, args.max_histories)
  info = sys.stderr if args.json else sys.stdout
  print(f"solving {g.name} with {args.solver}: {g.tree.num_histories} histories, "
        f"information states {g.tree.num_infostates[0]}/{g.tree.num_infostates[1]}", file=info,
        flush=True)
  if sampling:
    kw.update(seed=seed, batch=batch)
  else:
    kw["alternating"] = False if args.simultaneous else (True if args.alternating else None)
  from jaxgt.solving import format_evaluation, format_mbb, mbb
  res = solve(g, args.solver, iterations=args.iterations, eval_every=args.eval_every,
              dtype=args.dtype, last_iterate=args.last_iterate, target=args.target,
              progress=lambda e: print(format_evaluation(g, e), file=info, flush=True), **kw)
  m = mbb(g, res.exploitability)
  if args.save:
    res.policy.save(args.save)
  if args.plot:
    from jaxgt.solving import plot_curve
    plot_curve(res.evaluations, args.plot, title=f"{g.name} {args.solver}")
  if args.json:
    print_json(solve_document(g, args.solver, res, m, args.save, args.plot))
    return 0
  mtxt = f" ({format_mbb(m)} mbb/h)" if m is not None else ""
  print(f"final: iterations {res.iterations}  exploitability {res.exploitability:.6e}{mtxt}  "
        f"value(p0) {res.value:.6f}  compile {res.compile_seconds:.2f}s  solve {res.solve_seconds:.2f}s")
  if args.save:
    print(f"saved policy to {args.save}")
  if args.plot:
    print(f"saved plot to {args.plot}")
  return 0


def solve_document(g, solver: str, res, mbb_per_hand, save, plot) -> dict:
  """The ``jaxgt solve --json`` object of result ``res`` (docs/CLI.md)."""
  return {
      "game": g.name, "solver": solver, "iterations": res.iterations,
      "exploitability": res.exploitability, "mbb_per_hand": mbb_per_hand, "value": res.value,
      "evaluations": [{"iteration": e.iteration, "exploitability": e.exploitability,
                       "mbb_per_hand": e.mbb_per_hand, "seconds": e.elapsed,
                       "trajectories": e.trajectories, "last_iterate": e.last_iterate}
                      for e in res.evaluations],
      "compile_seconds": res.compile_seconds, "solve_seconds": res.solve_seconds,
      "policy": save, "plot": plot,
      "units": {"exploitability": PAYOFF, "value": PAYOFF + " (player 0)",
                "mbb_per_hand": "milli-big-blinds per hand", "seconds": "seconds"}}
