"""Continual re-solving, evaluated exactly by policy construction (Schmid et al. 2023).

  python examples/continual_resolving.py --game leduc_poker --depth-limit 2 \\
      --iterations 1000 --seeds 1 --export-openspiel leduc_cr.json

For each seed the continual re-solving agent (modified gadget, alpha = 0.5,
exact leaf values, alternating CFR+; ``--simultaneous`` for simultaneous
updates) runs at every public state breadth-first, each search conditioned
on the searches at its predecessors (:mod:`jaxgt.evaluation.construct`);
the composed policy's exact exploitability is printed as min/avg/max over
seeds, in game units and mbb/h (thousandths of a game unit: of a chip in
Kuhn and Leduc). Every re-solve runs on the device public tree
(:class:`jaxgt.agents.resolving.ContinualResolvingAgent`), its leaves valued
by the continuation solved on the CFR engine; by default the re-solves run
through ``ContinualResolvingAgent.policy_table`` one at a time (``--batch 1``),
all in one compiled program (first decisions and the gadget for either
player), the fastest way on a CPU (Leduc, 2 cores, user CPU: 59 s at batch 1,
92 s one act at a time, 428 s at batch 64); ``--batch B`` vmaps B re-solves of
one public depth per call (for accelerators); ``--batch 0`` acts one public
state at a time through :mod:`jaxgt.evaluation.construct` (two programs:
fixed ranges, gadget), printing progress every 10% of the information states.
The agent is deterministic (exact leaf values, full-width CFR), so the seeds
agree. ``--export-openspiel`` writes the first
seed's policy in the JSON format of ``jaxgt export --openspiel`` and, with
OpenSpiel installed, prints OpenSpiel's exploitability of it.
"""

import argparse
import time

import jax
import numpy as np

jax.config.update("jax_enable_x64", True)

import jaxgt  # noqa: E402
from jaxgt import policy as pol_lib  # noqa: E402
from jaxgt.agents.resolving import ContinualResolvingAgent  # noqa: E402
from jaxgt.search.gadget import DEFAULT_ALPHA  # noqa: E402
from jaxgt.evaluation import construct as cs  # noqa: E402
from jaxgt.core.evaluate import evaluate  # noqa: E402
from jaxgt.solvers import cfr as cfr_lib  # noqa: E402


def main():
  ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  ap.add_argument("--game", default="leduc_poker")
  ap.add_argument("--depth-limit", type=int, default=2)
  ap.add_argument("--iterations", type=int, default=1000, help="CFR+ iterations per re-solve")
  ap.add_argument("--alpha", type=float, default=DEFAULT_ALPHA,
                  help="opponent-range mixing of the modified gadget (1 = no mixing)")
  ap.add_argument("--seeds", type=int, default=1)
  ap.add_argument("--batch", type=int, default=1,
                  help="re-solves of one public depth per vmapped call (1, the default, is the "
                       "fastest on a CPU; 0: one act at a time through jaxgt.evaluation.construct)")
  ap.add_argument("--simultaneous", action="store_true",
                  help="simultaneous CFR+ updates (default alternating)")
  ap.add_argument("--export-openspiel", metavar="OUT.json")
  args = ap.parse_args()

  game = jaxgt.load(args.game)
  print(game)
  t0 = time.perf_counter()
  agents = []

  def make():
    solver = cfr_lib.cfr_plus(alternating=not args.simultaneous, dtype="float64")
    agents.append(ContinualResolvingAgent(game, depth_limit=args.depth_limit,
                                          iterations=args.iterations, alpha=args.alpha,
                                          solver=solver))
    return agents[-1]

  step = [0]

  def on_state(done, total):
    if done * 10 // total > step[0] or done == total:
      step[0] = done * 10 // total
      print(f"  {done}/{total} information states, {agents[-1].num_searches} re-solves, "
            f"{time.perf_counter() - t0:.0f}s", flush=True)

  if args.batch > 0:
    pols, expl = [], []
    for seed in range(args.seeds):
      agent = make()
      pols.append(agent.policy_table(jax.random.PRNGKey(seed), batch=args.batch))
      expl.append(evaluate(game, pols[-1]).exploitability)
      print(f"  seed {seed}: {agent.num_searches} re-solves, {time.perf_counter() - t0:.0f}s",
            flush=True)
    result = cs.ConstructionResult(seeds=tuple(range(args.seeds)), exploitability=np.asarray(expl),
                                   policies=tuple(pols))
  else:
    result = cs.evaluate(make, seeds=range(args.seeds), on_state=on_state)
  dt = time.perf_counter() - t0
  print(f"{args.seeds} seed(s), {agents[0].num_searches} re-solves per construction, {dt:.0f}s")
  print(f"exploitability min/avg/max: {result.min:.6f} / {result.avg:.6f} / {result.max:.6f} "
        f"(game units) = {1000 * result.min:.3f} / {1000 * result.avg:.3f} / "
        f"{1000 * result.max:.3f} mbb/h")
  if args.export_openspiel:
    policy = pol_lib.Policy.from_arrays(game, result.policies[0])
    pol_lib.export_openspiel(policy, game, args.export_openspiel)
    print(f"composed policy (seed 0) written to {args.export_openspiel}")
    try:
      import pyspiel
      from open_spiel.python.algorithms import exploitability
    except ImportError:
      return
    os_game = pyspiel.load_game(pol_lib.openspiel_game_string(game))
    ref = exploitability.exploitability(os_game, pol_lib.to_openspiel(policy, game, os_game))
    print(f"OpenSpiel exploitability of the exported policy: {ref:.6f} "
          f"({1000 * ref:.3f} mbb/h)")


if __name__ == "__main__":
  main()
