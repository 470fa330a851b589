"""``jaxgt solve GAME [options]``: solve a game, print exploitability as it falls."""

from __future__ import annotations

from jaxgt.cli.common import check_writable, load_game
from jaxgt.solving import DEFAULT_SOLVER, SOLVERS
from jaxgt.solvers.mccfr import SAMPLING_SOLVERS

SOLVER_CHOICES = list(SOLVERS)  # the registries, so a new solver is a choice without an edit here
SAMPLING_CHOICES = list(SAMPLING_SOLVERS)
# the hyperparameter flags each full-width solver takes (unset flags keep the solver's defaults)
SOLVER_FLAGS = {"dcfr": ("alpha", "beta", "gamma"), "pcfr+": ("gamma",), "dcfr+": ("alpha", "gamma"),
                "pdcfr+": ("alpha", "gamma"), "hs-pcfr+": ("gamma0", "planned_iterations"),
                "hs-dcfr": ("gamma0", "planned_iterations"), "mmd": ("alpha", "stepsize")}
HYPERPARAMETERS = ("alpha", "beta", "gamma", "gamma0", "planned_iterations", "stepsize")


def add_parser(sub) -> None:
  p = sub.add_parser("solve", help="solve a game")
  p.add_argument("game")
  p.add_argument("--solver", default=DEFAULT_SOLVER, choices=SOLVER_CHOICES + SAMPLING_CHOICES,
                 help=f"default {DEFAULT_SOLVER}: the fastest to 1e-4 in benchmarks/convergence.py")
  p.add_argument("--iterations", type=int, default=1000,
                 help="iterations (for sampling solvers: steps of --batch trajectories)")
  p.add_argument("--eval-every", type=int, default=100,
                 help="evaluate exploitability every K iterations (0: only at the end)")
  p.add_argument("--simultaneous", action="store_true",
                 help="simultaneous instead of alternating updates (MMD is simultaneous anyway)")
  p.add_argument("--alternating", action="store_true", help="alternating updates for MMD")
  p.add_argument("--dtype", default="float32", choices=["float32", "float64"])
  p.add_argument("--alpha", type=float, help="dcfr: alpha (1.5); dcfr+: alpha (1.5); "
                 "pdcfr+: alpha (2.3); mmd: regularisation (0.05)")
  p.add_argument("--beta", type=float, help="dcfr: beta (0)")
  p.add_argument("--gamma", type=float, help="averaging exponent: dcfr (2), pcfr+ (2), dcfr+ (4), "
                 "pdcfr+ (5)")
  p.add_argument("--gamma0", type=float, help="hs-pcfr+, hs-dcfr: initial averaging exponent (30)")
  p.add_argument("--planned-iterations", type=int,
                 help="hs-pcfr+, hs-dcfr: the schedule's horizon (default --iterations)")
  p.add_argument("--stepsize", type=float, help="mmd: stepsize (alpha / max|A|^2)")
  p.add_argument("--no-compensation", action="store_true",
                 help="CFR family: plain average sums instead of compensated rescaled ones")
  p.add_argument("--target", type=float,
                 help="stop at the first evaluation with exploitability at or below this (game "
                      "units); evaluations then come at --eval-every and every x1.25 iterations")
  p.add_argument("--last-iterate", action="store_true",
                 help="also print the exploitability of the current strategy")
  p.add_argument("--seed", type=int, default=0, help="random seed (sampling solvers)")
  p.add_argument("--batch", type=int, default=256, help="trajectories per step, even, half for each player (sampling solvers; "
                      "trajectories = iterations x batch)")
  p.add_argument("--save", metavar="POLICY", help="save the solver's policy (.npz)")
  p.add_argument("--plot", metavar="PNG", help="plot exploitability versus iteration")


def solver_kwargs(args) -> dict:
  """The hyperparameter flags given, checked against what ``args.solver`` takes."""
  given = {k: getattr(args, k) for k in HYPERPARAMETERS if getattr(args, k, None) is not None}
  allowed = SOLVER_FLAGS.get(args.solver, ())
  wrong = [k for k in given if k not in allowed]
  if wrong:
    flags = ", ".join("--" + k.replace("_", "-") for k in wrong)
    takes = ", ".join("--" + k.replace("_", "-") for k in allowed) or "none"
    raise ValueError(f"{flags} does not apply to --solver {args.solver} (it takes: {takes})")
  kw = dict(given)
  if args.no_compensation:
    if args.solver == "mmd" or args.solver in SAMPLING_CHOICES:
      raise ValueError("--no-compensation applies to the CFR family only")
    kw["compensated"] = False
  return kw


def run(args) -> int:
  import jax
  if args.dtype == "float64":
    jax.config.update("jax_enable_x64", True)
  if args.iterations < 1:
    raise ValueError(f"--iterations must be positive, got {args.iterations}")
  if args.eval_every < 0:
    raise ValueError(f"--eval-every must be >= 0, got {args.eval_every}")
  if args.solver in SAMPLING_CHOICES and (args.batch < 2 or args.batch % 2):
    raise ValueError(f"--batch must be an even integer >= 2 (half the trajectories of a step "
                     f"update each player), got {args.batch}")
  if args.simultaneous and args.alternating:
    raise ValueError("--simultaneous and --alternating exclude each other")
  kw = solver_kwargs(args)
  check_writable({"--save": args.save, "--plot": args.plot})
  g = load_game(args.game)
  print(f"solving {g.name} with {args.solver}: {g.tree.num_histories} histories, "
        f"information states {g.tree.num_infostates[0]}/{g.tree.num_infostates[1]}", flush=True)
  from jaxgt.solving import solve
  if args.solver in SAMPLING_CHOICES:
    res = solve(g, args.solver, iterations=args.iterations, eval_every=args.eval_every,
                seed=args.seed, batch=args.batch, dtype=args.dtype, progress=True,
                last_iterate=args.last_iterate, target=args.target)
  else:
    alternating = False if args.simultaneous else (True if args.alternating else None)
    res = solve(g, args.solver, iterations=args.iterations, eval_every=args.eval_every,
                dtype=args.dtype, alternating=alternating, progress=True,
                last_iterate=args.last_iterate, target=args.target, **kw)
  from jaxgt.solving import format_mbb, mbb
  m = mbb(g, res.exploitability)
  mtxt = f" ({format_mbb(m)} mbb/h)" if m is not None else ""
  print(f"final: iterations {res.iterations}  exploitability {res.exploitability:.6e}{mtxt}  "
        f"value(p0) {res.value:.6f}  compile {res.compile_seconds:.2f}s  solve {res.solve_seconds:.2f}s")
  if args.save:
    res.policy.save(args.save)
    print(f"saved policy to {args.save}")
  if args.plot:
    from jaxgt.solving import plot_curve
    plot_curve(res.evaluations, args.plot, title=f"{g.name} {args.solver}")
    print(f"saved plot to {args.plot}")
  return 0
