"""UCT vs Smooth UCT self-play: exploitability against simulated episodes (Heinrich & Silver 2015).

  python examples/smooth_uct_kuhn.py --episodes 1000000 --plot kuhn_uct.png
  python examples/smooth_uct_kuhn.py --leduc --episodes 2000000 --plot leduc_uct.png

Both solvers use the paper's constants for the game (Sec. 4.1 Kuhn, 4.2
Leduc; :data:`jaxgt.solvers.uct.PAPER_CONSTANTS`). ``--seeds`` runs are
vmapped and averaged; each jitted call runs the episodes up to the next
log-spaced checkpoint, where the exact exploitability (NashConv / 2; the
paper's Leduc figure plots NashConv) of the average strategy is evaluated.
"""

import argparse
import time

import jax
import numpy as np

import jaxgt
from jaxgt.solvers import uct as uct_lib
from jaxgt.solvers.base import exploitability_curve


def main():
  ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  ap.add_argument("--leduc", action="store_true", help="Leduc hold'em instead of Kuhn poker")
  ap.add_argument("--episodes", type=int, default=1_000_000)
  ap.add_argument("--batch", type=int, default=16,
                  help="episodes per step (1 = Algorithm 1 exactly)")
  ap.add_argument("--seeds", type=int, default=4)
  ap.add_argument("--seed", type=int, default=0)
  ap.add_argument("--points", type=int, default=12, help="log-spaced evaluation points")
  ap.add_argument("--plot", metavar="PNG")
  args = ap.parse_args()
  if args.episodes < 100 * args.batch or args.seeds < 1 or args.batch < 1:
    ap.error("need --episodes >= 100 * --batch, --seeds >= 1 and --batch >= 1")

  name = "leduc_poker" if args.leduc else "kuhn_poker"
  game = jaxgt.load(name)
  tree = game.device_tree("float32")
  print(game)
  lo = np.log10(10 * args.batch)
  cps = np.unique(np.round(np.logspace(lo, np.log10(args.episodes), args.points)
                           / args.batch).astype(int) * args.batch)
  curves = {}
  for kind in ("uct", "smooth-uct"):
    solver = uct_lib.for_game(kind, name, batch=args.batch)
    t0 = time.perf_counter()
    e = exploitability_curve(solver, tree, cps // args.batch, jax.random.key(args.seed), args.seeds)
    curves[kind] = e
    print(f"{kind:>10}: {solver}  ({time.perf_counter() - t0:.1f}s)")
  runs = f"{args.seeds} seed{'s' if args.seeds > 1 else ''}"
  print(f"\nexploitability (NashConv / 2) of the average strategy, mean over {runs}")
  print(f"{'episodes':>10} {'UCT':>10} {'Smooth UCT':>11}")
  for i, c in enumerate(cps):
    print(f"{c:>10d} {curves['uct'][i].mean():>10.5f} {curves['smooth-uct'][i].mean():>11.5f}")
  if args.plot:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6, 4))
    for kind, label in (("uct", "UCT"), ("smooth-uct", "Smooth UCT")):
      m = curves[kind].mean(1)
      ax.loglog(cps, m, marker="o", ms=3, label=label)
      if args.seeds > 1:
        ax.fill_between(cps, curves[kind].min(1), curves[kind].max(1), alpha=0.2)
    ax.set_xlabel("simulated episodes")
    ax.set_ylabel("exploitability (NashConv / 2)")
    ax.set_title(f"{name}: self-play MCTS, {runs}" + (" (min-max band)" if args.seeds > 1 else ""))
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(args.plot, dpi=120)
    plt.close(fig)
    print(f"plot saved to {args.plot}")


if __name__ == "__main__":
  main()
