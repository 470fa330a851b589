"""``jaxgt solve GAME [options]``: solve a game, print exploitability as it falls."""

from __future__ import annotations

from jaxgt.cli.common import check_writable, load_game

SOLVER_CHOICES = ["cfr", "cfr+", "lcfr", "dcfr"]
SAMPLING_CHOICES = ["mccfr-os", "mccfr-es"]


def add_parser(sub) -> None:
  p = sub.add_parser("solve", help="solve a game")
  p.add_argument("game")
  p.add_argument("--solver", default="cfr+", choices=SOLVER_CHOICES + SAMPLING_CHOICES)
  p.add_argument("--iterations", type=int, default=1000,
                 help="iterations (for sampling solvers: steps of --batch trajectories)")
  p.add_argument("--eval-every", type=int, default=100,
                 help="evaluate exploitability every K iterations (0: only at the end)")
  p.add_argument("--simultaneous", action="store_true", help="simultaneous instead of alternating updates")
  p.add_argument("--dtype", default="float32", choices=["float32", "float64"])
  p.add_argument("--alpha", type=float, default=1.5, help="DCFR alpha")
  p.add_argument("--beta", type=float, default=0.0, help="DCFR beta")
  p.add_argument("--gamma", type=float, default=2.0, help="DCFR gamma")
  p.add_argument("--seed", type=int, default=0, help="random seed (sampling solvers)")
  p.add_argument("--batch", type=int, default=256, help="trajectories per step, even, half for each player (sampling solvers; "
                      "trajectories = iterations x batch)")
  p.add_argument("--save", metavar="POLICY", help="save the average policy (.npz)")
  p.add_argument("--plot", metavar="PNG", help="plot exploitability versus iteration")


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
  check_writable({"--save": args.save, "--plot": args.plot})
  g = load_game(args.game)
  print(f"solving {g.name} with {args.solver}: {g.tree.num_histories} histories, "
        f"information states {g.tree.num_infostates[0]}/{g.tree.num_infostates[1]}", flush=True)
  from jaxgt.solve import solve
  if args.solver in SAMPLING_CHOICES:
    res = solve(g, args.solver, iterations=args.iterations, eval_every=args.eval_every,
                seed=args.seed, batch=args.batch, dtype=args.dtype, progress=True)
  else:
    kw = {}
    if args.solver == "dcfr":
      kw = dict(alpha=args.alpha, beta=args.beta, gamma=args.gamma)
    res = solve(g, args.solver, iterations=args.iterations, eval_every=args.eval_every,
                dtype=args.dtype, alternating=not args.simultaneous, progress=True, **kw)
  from jaxgt.solve import mbb
  m = mbb(g, res.exploitability)
  mtxt = f" ({m:.3f} mbb/h)" if m is not None else ""
  print(f"final: iterations {args.iterations}  exploitability {res.exploitability:.6e}{mtxt}  "
        f"value(p0) {res.value:.6f}  compile {res.compile_seconds:.2f}s  solve {res.solve_seconds:.2f}s")
  if args.save:
    res.policy.save(args.save)
    print(f"saved policy to {args.save}")
  if args.plot:
    from jaxgt.solve import plot_curve
    plot_curve(res.evaluations, args.plot, title=f"{g.name} {args.solver}")
    print(f"saved plot to {args.plot}")
  return 0
