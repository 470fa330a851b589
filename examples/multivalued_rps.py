"""Multi-valued leaves in RPS+ (Brown, Sandholm & Amos 2018, Sec. 4).

Depth-limited solve after player 0's move, on the device tree
(:func:`jaxgt.search.subgame.solve`): at the leaf player 1 chooses among the
first K of (blueprint, bias to Rock, bias to Paper, bias to Scissors)
(:func:`jaxgt.search.evaluator.continuation`). Prints and plots player 0's
exploitability against K.

  python examples/multivalued_rps.py --iterations 2000 --out rps_plus_k.png
"""

import argparse

import jax

jax.config.update("jax_enable_x64", True)

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import jaxgt  # noqa: E402
from jaxgt.core import sequence_form as sf  # noqa: E402
from jaxgt.search import device_tree  # noqa: E402
from jaxgt.search import evaluator  # noqa: E402
from jaxgt.search import subgame  # noqa: E402


def main():
  ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  ap.add_argument("--iterations", type=int, default=2000)
  ap.add_argument("--factor", type=float, default=10.0, help="bias factor")
  ap.add_argument("--out", default="rps_plus_multivalued.png")
  args = ap.parse_args()
  g = jaxgt.load("rps_plus")
  tree = g.device_tree("float64")
  solver = jaxgt.cfr_plus(dtype="float64")
  blueprint = solver.average_policy(tree, solver.run(tree, solver.init(tree), 3000))
  candidates = evaluator.biased_policies(tree, blueprint, 1, args.factor)
  source = device_tree.source_from_game(g)
  ks, expl = [], []
  for K in range(1, len(candidates) + 1):
    res = subgame.solve(g, 0, iterations=args.iterations, depth_limit=1,
                        evaluator=evaluator.continuation(source, candidates[:K]))
    pol = subgame.to_full_policy(res, blueprint)
    e = float(sf.exploitability(tree, (pol[0], blueprint[1])))
    ks.append(K)
    expl.append(e)
    print(f"K={K}: player 0 plays {[round(float(x), 3) for x in pol[0][0]]}, "
          f"exploitability {e:.5f}")
  plt.figure(figsize=(4, 3))
  plt.plot(ks, expl, "o-")
  plt.xlabel("K (continuation strategies at the leaf)")
  plt.ylabel("exploitability of player 0")
  plt.title("RPS+: multi-valued leaves")
  plt.tight_layout()
  plt.savefig(args.out)
  print(f"wrote {args.out}")


if __name__ == "__main__":
  main()
