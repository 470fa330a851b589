"""The ``jaxgt`` command line (also ``python -m jaxgt``).

  jaxgt games                          list registered games and parameters
  jaxgt info GAME                      sizes, enumeration time and memory
  jaxgt check GAME                     conformance checks of a game
  jaxgt solve GAME [options]           solve, print exploitability as it falls
  jaxgt export POLICY --openspiel OUT  write the policy for OpenSpiel

GAME is a registered name with optional parameters in OpenSpiel's syntax,
e.g. ``leduc_poker`` or ``liars_dice(numdice=1)``.
"""

from __future__ import annotations

import argparse
import sys

SOLVER_CHOICES = ["cfr", "cfr+", "lcfr", "dcfr"]
SAMPLING_CHOICES = ["mccfr-os", "mccfr-es"]


def _parser() -> argparse.ArgumentParser:
  ap = argparse.ArgumentParser(prog="jaxgt", description=__doc__.split("\n\n")[0])
  sub = ap.add_subparsers(dest="command", required=True)
  sub.add_parser("games", help="list registered games")
  p = sub.add_parser("info", help="print the sizes of a game")
  p.add_argument("game")
  p = sub.add_parser("check", help="run the conformance checks on a game")
  p.add_argument("game")
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
  p = sub.add_parser("export", help="export a saved policy")
  p.add_argument("policy")
  p.add_argument("--openspiel", metavar="OUT.json", required=True,
                 help="write {game, policy: {info_state_string: [[action, prob], ...]}}")
  return ap


def _load(text: str):
  from jaxgt.core.compiler import load
  return load(text)


def cmd_games(args) -> int:
  from jaxgt.games import registry
  for name, spec in sorted(registry().items()):
    params = ", ".join(f"{k}={v}" for k, v in spec.params.items())
    print(f"{name:<16} {spec.description}" + (f"  [{params}]" if params else ""))
  return 0


def cmd_info(args) -> int:
  g = _load(args.game)
  s = g.sizes()
  print(f"game            {g.name}")
  for k in ("histories", "terminals", "infostates_p0", "infostates_p1", "public_states", "actions"):
    print(f"{k:<15} {s[k]}")
  print(f"enumeration     {g.enumeration_seconds:.3f} s")
  print(f"memory          {g.nbytes / 2**20:.2f} MiB")
  print(f"fingerprint     {g.fingerprint}")
  return 0


def cmd_check(args) -> int:
  from jaxgt import games
  g = _load(args.game)
  report = games.check(g)
  print(f"{g.name}: all checks passed")
  for k, v in report.items():
    print(f"  {k}: {v}")
  return 0


def cmd_solve(args) -> int:
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
  g = _load(args.game)
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


def cmd_export(args) -> int:
  from jaxgt import policy as pol_lib
  pol, g = pol_lib.load(args.policy)
  pol_lib.export_openspiel(pol, g, args.openspiel)
  print(f"wrote {args.openspiel} ({sum(g.tree.num_infostates)} information states, "
        f"game {pol_lib.openspiel_game_string(g)})")
  return 0


COMMANDS = {"games": cmd_games, "info": cmd_info, "check": cmd_check, "solve": cmd_solve,
            "export": cmd_export}


def main(argv=None) -> int:
  args = _parser().parse_args(argv)
  try:
    return COMMANDS[args.command](args)
  except (ValueError, ImportError) as e:
    print(f"jaxgt: error: {e}", file=sys.stderr)
    return 2


if __name__ == "__main__":
  sys.exit(main())
