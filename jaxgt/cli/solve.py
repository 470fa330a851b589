"""``jaxgt solve GAME [options]``: solve a game, print exploitability as it falls.

The solvers and their hyperparameter flags come from the solver factories
(:data:`jaxgt.solving.SOLVERS`, :data:`jaxgt.solvers.mccfr.SAMPLING_SOLVERS`): each
hyperparameter a factory takes is a flag, typed and documented with every
solver's default as the factory states it; an unset flag keeps that default.
"""

from __future__ import annotations

import dataclasses
import inspect
import pathlib
import sys

from jaxgt.agents.spec_grammar import params_from, show
from jaxgt.cli.common import (PAYOFF, add_max_histories, check_positive, check_writable,
                              check_writable_dir, load_game, print_json, rate_and_eta)
from jaxgt.extras import require
from jaxgt.solving import (DEFAULT_SOLVER, PLANNED, SAMPLING_BATCH, SOLVERS, Evaluation,
                           hyperparameters, solve)
from jaxgt.solvers import saved_state as solve_checkpoint
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
  p.add_argument("--checkpoint", metavar="DIR",
                 help=f"save the solver state to DIR/{solve_checkpoint.FILE} at the end (and "
                      "every --checkpoint-every iterations)")
  p.add_argument("--checkpoint-every", type=int, metavar="N",
                 help="also save the solver state every N iterations (needs --checkpoint)")
  p.add_argument("--resume", action="store_true",
                 help="continue the run saved in --checkpoint DIR up to --iterations in total "
                      "(same game, solver and flags; the result equals the uninterrupted run's)")
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
  if sampling:
    kw.update(seed=seed, batch=batch)
  else:
    kw["alternating"] = False if args.simultaneous else (True if args.alternating else None)
  settings = run_settings(args, kw)
  earlier = check_checkpoint(args, settings)
  g = load_game(args.game, args.max_histories)
  info = sys.stderr if args.json else sys.stdout
  print(f"solving {g.name} with {args.solver}: {g.tree.num_histories} histories, "
        f"information states {g.tree.num_infostates[0]}/{g.tree.num_infostates[1]}", file=info,
        flush=True)
  evaluations = []  # the run's evaluations (a resumed run's from its start), elapsed since then
  offset = 0.0
  extra = {}
  if args.checkpoint:
    extra = checkpointing(args, g, settings, earlier, evaluations)
    if earlier is not None:
      if (earlier["game"], earlier["fingerprint"]) != (g.name, g.fingerprint):
        raise ValueError(f"--resume: {args.checkpoint} holds a solve of {earlier['game']}, not "
                         f"of {g.name}")
      evaluations.extend(Evaluation(**e) for e in earlier["evaluations"])
      offset = earlier["solve_seconds"]
      print(f"resuming from iteration {earlier['iterations']} of {args.checkpoint}", file=info,
            flush=True)
  from jaxgt.solving import format_evaluation, format_mbb, mbb

  start = 0 if earlier is None else earlier["iterations"]
  unit = "steps" if sampling else "it"

  def progress(e):
    rate = rate_and_eta(e.iteration - start, e.elapsed, unit,
                        None if args.target is not None else args.iterations - e.iteration)
    e = dataclasses.replace(e, elapsed=e.elapsed + offset)
    evaluations.append(e)
    print(format_evaluation(g, e) + rate, file=info, flush=True)

  from jaxgt.cli.compiling import Compiling
  compiled = Compiling(f"{args.solver} and the exact evaluation for {g.name}", info)
  res = solve(g, args.solver, iterations=args.iterations, eval_every=args.eval_every,
              dtype=args.dtype, last_iterate=args.last_iterate, target=args.target,
              progress=progress, on_compiled=compiled.done, **kw, **extra)
  res = dataclasses.replace(res, evaluations=list(evaluations),
                            solve_seconds=res.solve_seconds + offset)
  m = mbb(g, res.exploitability)
  if args.save:
    res.policy.save(args.save)
  if args.plot:
    from jaxgt.solving import plot_curve
    plot_curve(res.evaluations, args.plot, title=f"{g.name} {args.solver}")
  if args.json:
    doc = solve_document(g, args.solver, res, m, args.save, args.plot)
    doc.update(checkpoint=args.checkpoint,
               resumed_from=None if earlier is None else earlier["iterations"])
    print_json(doc)
    return 0
  mtxt = f" ({format_mbb(m)} mbb/h)" if m is not None else ""
  print(f"final: iterations {res.iterations}  exploitability {res.exploitability:.6e}{mtxt}  "
        f"value(p0) {res.value:.6f}  compile {res.compile_seconds:.2f}s  solve {res.solve_seconds:.2f}s")
  if args.save:
    print(f"saved policy to {args.save}")
  if args.plot:
    print(f"saved plot to {args.plot}")
  if args.checkpoint:
    print(f"saved the solver state to {pathlib.Path(args.checkpoint) / solve_checkpoint.FILE}")
  return 0


def run_settings(args, kw: dict) -> dict:
  """What a checkpoint must agree on to be continued: the solver, its hyperparameters (a
  scheduled solver's planned iterations resolved), the dtype, the update order, seed and batch,
  and the chunking (``--eval-every``, ``--checkpoint-every``)."""
  hyper = {k: v for k, v in kw.items() if k in HYPERPARAMETERS or k in (
      "compensated", "exact_ties", "alternating", "seed", "batch")}
  if any(p.name == PLANNED for p in SOLVER_FLAGS[args.solver]):
    hyper.setdefault(PLANNED, args.iterations)
  return {"solver": args.solver, "dtype": args.dtype, "options": hyper,
          "eval_every": args.eval_every, "checkpoint_every": args.checkpoint_every}


def check_checkpoint(args, settings: dict) -> dict | None:
  """Checks ``--checkpoint``/``--checkpoint-every``/``--resume`` before any work; returns the
  checkpoint's meta when resuming (``ValueError`` for a folder that holds no solve checkpoint,
  one of another solver or settings, or a run already past ``--iterations``)."""
  if args.checkpoint is None:
    for flag in ("checkpoint_every", "resume"):
      if getattr(args, flag):
        raise ValueError(f"--{flag.replace('_', '-')} needs --checkpoint DIR")
    return None
  check_positive(args, "checkpoint_every")
  folder = check_writable_dir("--checkpoint", args.checkpoint)
  path = folder / solve_checkpoint.FILE
  if not args.resume:
    if path.exists():
      raise ValueError(f"--checkpoint {folder} already holds a solve checkpoint; pass --resume "
                       "to continue it or choose another directory")
    return None
  if not path.exists():
    raise ValueError(f"--resume: {folder} holds no solve checkpoint (no "
                     f"{solve_checkpoint.FILE}); check the path, or drop --resume to start one")
  meta = solve_checkpoint.read_meta(path)
  if meta.get("settings") != settings:
    stored = meta.get("settings") or {}
    diff = sorted(k for k in set(stored) | set(settings) if stored.get(k) != settings.get(k))
    said = "; ".join(f"{k} {stored.get(k)!r} there, {settings.get(k)!r} here" for k in diff)
    raise ValueError(f"--resume: {path} was saved by another solve ({said}); pass the same "
                     "solver and flags")
  if meta["iterations"] >= args.iterations:
    raise ValueError(f"--resume: the checkpoint is at iteration {meta['iterations']}; pass "
                     f"--iterations above it (the run's total)")
  return meta


def checkpointing(args, g, settings: dict, earlier: dict | None, evaluations: list) -> dict:
  """The :func:`jaxgt.solve` arguments that save the state to ``--checkpoint`` (and, resuming,
  start from it)."""
  folder = pathlib.Path(args.checkpoint)
  path = folder / solve_checkpoint.FILE
  offset = 0.0 if earlier is None else earlier["solve_seconds"]

  def save(state):
    folder.mkdir(parents=True, exist_ok=True)
    solve_checkpoint.save(path, state, {
        "game": g.name, "fingerprint": g.fingerprint, "settings": settings,
        "iterations": int(state.iteration),
        "evaluations": [dataclasses.asdict(e) for e in evaluations],
        "solve_seconds": evaluations[-1].elapsed if evaluations else offset})

  extra = {"on_checkpoint": save, "checkpoint_every": args.checkpoint_every or 0}
  if earlier is not None:
    extra["state"] = lambda fresh: solve_checkpoint.load_state(path, fresh)
  return extra


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
