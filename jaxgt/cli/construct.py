"""``jaxgt construct GAME AGENT``: exact exploitability of an agent by policy construction
(Schmid et al. 2023)."""

from __future__ import annotations

import math
import sys

from jaxgt.cli import agents as agents_cli
from jaxgt.cli.common import (PAYOFF, add_max_histories, check_positive, check_writable,
                              load_game, plural, print_json)


def add_parser(sub) -> None:
  p = agents_cli.add_agent_command(
      sub, "construct", "exact exploitability of an agent by breadth-first policy construction",
      "Runs AGENT's search at every information state breadth-first (each search continues from "
      "the searches that led to it), composes the policies the searches return and computes the "
      "exact exploitability of the composition; repeats over seeds and prints min/avg/max "
      "(Student of Games, supplement).")
  p.add_argument("game")
  p.add_argument("agent", help="agent spec")
  p.add_argument("--seeds", type=int, default=1, help="number of seeds K (default 1)")
  p.add_argument("--seed", type=int, default=0, help="first seed; seeds are S..S+K-1 (default 0)")
  p.add_argument("--export-openspiel", metavar="OUT.json",
                 help="write the composed policy of the first seed in jaxgt export's JSON format")
  p.add_argument("--json", action="store_true",
                 help="print one JSON object: the exploitability of each seed, their min, avg, "
                      "max and the 95%% interval of the mean (docs/CLI.md)")
  add_max_histories(p)


def run(args) -> int:
  spec, = agents_cli.parse_agents(args.agent)
  if args.seeds < 1:
    raise ValueError(f"--seeds must be positive, got {args.seeds}")
  if args.seed < 0:
    raise ValueError(f"--seed must be >= 0, got {args.seed}")
  check_positive(args, "max_histories")
  check_writable({"--export-openspiel": args.export_openspiel})
  info = sys.stderr if args.json else sys.stdout
  g = load_game(args.game, args.max_histories)
  from jaxgt import policy as policy_lib
  if args.export_openspiel:
    policy_lib.openspiel_game_string(g)  # a game without an OpenSpiel equivalent fails here
  spec.build(g)  # bad agent arguments (e.g. a policy of another game) fail before any search
  print(f"{g.name}: constructing the policy of {spec} for {plural(args.seeds, 'seed')}",
        file=info, flush=True)

  from jaxgt.evaluation import construct
  from jaxgt.solving import mbb

  from jaxgt.cli.compiling import Compiling
  compiled = Compiling(f"the search of {spec} (with the first information state)", info)

  def progress(i, seed, exploitability):
    compiled.done()
    m = mbb(g, exploitability)
    print(f"  seed {seed}: exploitability {exploitability:.6g}"
          + (f" ({m:.3f} mbb/h)" if m is not None else ""), file=info, flush=True)

  def on_state(done, total):  # about ten reports per seed, on stderr
    compiled.done()
    if done == total or done % -(-total // 10) == 0:
      print(f"    {done}/{total} information states", file=sys.stderr, flush=True)

  res = construct.evaluate(lambda: spec.build(g), seeds=range(args.seed, args.seed + args.seeds),
                           progress=progress, on_state=on_state)
  ci95 = mean_interval(res.exploitability)
  if args.json:
    print_json({"game": g.name, "agent": str(spec), "seeds": len(res.seeds),
                "exploitability": {"min": res.min, "avg": res.avg, "max": res.max},
                "ci95": ci95, "mbb_per_hand": mbb(g, res.avg),
                "per_seed": [{"seed": s, "exploitability": float(x)}
                             for s, x in zip(res.seeds, res.exploitability)],
                "units": {"exploitability": PAYOFF, "mbb_per_hand": "milli-big-blinds per hand"}})
  else:
    shown = "" if ci95 is None else f"  95% CI of avg [{ci95[0]:.6g}, {ci95[1]:.6g}]"
    print(f"exploitability over {plural(len(res.seeds), 'seed')}: min {res.min:.6g}  "
          f"avg {res.avg:.6g}  max {res.max:.6g}{shown}")
  if args.export_openspiel:
    pol = policy_lib.Policy.from_arrays(g, res.policies[0])
    policy_lib.export_openspiel(pol, g, args.export_openspiel)
    print(f"wrote {args.export_openspiel} (the policy of seed {res.seeds[0]})", file=info)
  return 0


def mean_interval(values) -> list | None:
  """The normal 95% interval ``[lo, hi]`` of the mean of ``values [K]`` (exploitabilities),
  clipped below at 0; ``None`` for one value."""
  import numpy as np
  x = np.asarray(values, np.float64)
  if x.size < 2:
    return None
  half = 1.96 * float(np.std(x, ddof=1)) / math.sqrt(x.size)
  return [max(0.0, float(x.mean()) - half), float(x.mean()) + half]
