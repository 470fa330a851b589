"""UCT vs Smooth UCT self-play in the measures of Heinrich & Silver (2015), Figures 1 and 2.

  python examples/smooth_uct_kuhn.py --quick                       # a minute on 2 cores
  python examples/smooth_uct_kuhn.py --episodes 1000000 --plot kuhn_uct.png
  python examples/smooth_uct_kuhn.py --leduc --episodes 2000000 --plot leduc_uct.png

Kuhn poker (Sec. 4.1, Fig. 1): mean squared error of the average policy to
the closest Nash equilibrium of Kuhn's one-parameter family
(:func:`kuhn_mse`). Leduc hold'em (Sec. 4.2, Fig. 2): the paper's
exploitability ``delta = R_1(b_1(pi_2), pi_2) + R_2(pi_1, b_2(pi_1))``, i.e.
NashConv (jaxgt's ``exploitability`` is NashConv / 2). Both solvers use the
paper's constants (:data:`jaxgt.solvers.uct.PAPER_CONSTANTS`).

Episodes run one at a time by default (``--batch 1``): each episode reads the
statistics the previous one wrote, which is Algorithm 1 exactly. With
``--batch B > 1`` a step runs B episodes against the statistics at its start
(stale within the step) and sums their updates: faster, but not the paper's
algorithm. ``--seeds`` runs are vmapped (each one sequential) and averaged;
the paper averages 50 runs of 20M episodes (Kuhn) and 5 of 500M (Leduc).
"""

import argparse
import time

import jax
import numpy as np

import jaxgt
from jaxgt.core import sequence_form
from jaxgt.solvers import uct as uct_lib

# Kuhn's equilibria (OpenSpiel's card order J, Q, K = 0, 1, 2; action 1 = bet / call): the
# first player bets J with alpha, K with 3 alpha, calls with Q with alpha + 1/3, alpha in
# [0, 1/3]; the second player's strategy is unique.
KUHN_FIXED = {"1": 0.0, "0pb": 0.0, "2pb": 1.0, "0p": 1 / 3, "0b": 0.0, "1p": 0.0, "1b": 1 / 3,
              "2p": 1.0, "2b": 1.0}
KUHN_ALPHA = {"0": 1.0, "2": 3.0, "1pb": 1.0}  # p*(alpha) = slope * alpha + offset
KUHN_OFFSET = {"0": 0.0, "2": 0.0, "1pb": 1 / 3}


def kuhn_mse(policy, infostate_keys) -> float:
  """Mean over Kuhn's 12 information states of the squared error of the bet/call probability
  to the closest equilibrium (the alpha minimising it, in closed form, clipped to [0, 1/3])."""
  bet = {k: float(np.asarray(policy[p])[i, 1]) for p in (0, 1)
         for i, k in enumerate(infostate_keys[p])}
  slope = np.array([KUHN_ALPHA[k] for k in KUHN_ALPHA])
  resid = np.array([bet[k] - KUHN_OFFSET[k] for k in KUHN_ALPHA])
  alpha = float(np.clip((slope * resid).sum() / (slope ** 2).sum(), 0.0, 1 / 3))
  err = [(bet[k] - v) ** 2 for k, v in KUHN_FIXED.items()]
  err += [(bet[k] - KUHN_OFFSET[k] - KUHN_ALPHA[k] * alpha) ** 2 for k in KUHN_ALPHA]
  return float(np.mean(err))


def curves(game, name: str, kind: str, checkpoints, seeds: int, batch: int, key):
  """``[len(checkpoints), seeds]`` of the paper's measure for ``seeds`` vmapped runs."""
  tree = game.device_tree("float32")
  tree64 = game.device_tree("float64")
  solver = uct_lib.for_game(kind, name, batch=batch)
  keys = jax.random.split(key, seeds)

  @jax.jit
  def advance(states, n):
    states = jax.vmap(lambda s, k: solver.run(tree, s, n, k))(states, keys)
    return states, jax.vmap(lambda s: solver.policy(tree, s))(states)

  state = solver.init(tree)
  states = jax.tree_util.tree_map(lambda x: np.broadcast_to(x, (seeds,) + x.shape), state)
  done, out = 0, []
  for c in checkpoints:
    states, pols = advance(states, (c - done) // batch)
    done = c
    row = []
    for s in range(seeds):
      pol = tuple(np.asarray(p[s]) for p in pols)
      if name == "kuhn_poker":
        row.append(kuhn_mse(pol, game.infostate_keys))
      else:
        row.append(float(sequence_form.nash_conv(tree64, pol)))
    out.append(row)
    print(f"  {kind:>10} {c:>10d} episodes: {np.mean(row):.5f}", flush=True)
  return np.asarray(out)


def main(argv=None):
  ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  ap.add_argument("--leduc", action="store_true", help="Leduc hold'em instead of Kuhn poker")
  ap.add_argument("--episodes", type=int, default=1_000_000)
  ap.add_argument("--batch", type=int, default=1,
                  help="episodes per step (1 = Algorithm 1 exactly; >1 reads stale statistics)")
  ap.add_argument("--seeds", type=int, default=4)
  ap.add_argument("--seed", type=int, default=0)
  ap.add_argument("--points", type=int, default=12, help="log-spaced evaluation points")
  ap.add_argument("--quick", action="store_true", help="20k episodes, 2 seeds, 6 points")
  ap.add_argument("--plot", metavar="PNG")
  args = ap.parse_args(argv)
  jax.config.update("jax_enable_x64", True)  # float64 measures; the runs stay float32
  if args.quick:
    args.episodes, args.seeds, args.points = 20_000, 2, 6
  if args.episodes < 100 * args.batch or args.seeds < 1 or args.batch < 1:
    ap.error("need --episodes >= 100 * --batch, --seeds >= 1 and --batch >= 1")

  name = "leduc_poker" if args.leduc else "kuhn_poker"
  measure = "NashConv" if args.leduc else "MSE to the closest equilibrium"
  game = jaxgt.load(name)
  print(f"{game}: {measure} of the average policy, mean over {args.seeds} runs, batch "
        f"{args.batch}{' (Algorithm 1)' if args.batch == 1 else ' (stale within a step)'}")
  cps = np.unique(np.round(np.logspace(np.log10(100 * args.batch), np.log10(args.episodes),
                                       args.points) / args.batch).astype(int) * args.batch)
  res = {}
  for kind in ("uct", "smooth-uct"):
    t0 = time.perf_counter()
    res[kind] = curves(game, name, kind, cps, args.seeds, args.batch,
                       jax.random.key(args.seed))
    print(f"  {kind}: {uct_lib.for_game(kind, name)} ({time.perf_counter() - t0:.1f}s)")
  print(f"\n{'episodes':>10} {'UCT':>12} {'Smooth UCT':>12}")
  for i, c in enumerate(cps):
    print(f"{c:>10d} {res['uct'][i].mean():>12.5f} {res['smooth-uct'][i].mean():>12.5f}")
  if args.plot:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6, 4))
    for kind, label in (("uct", "UCT"), ("smooth-uct", "Smooth UCT")):
      ax.loglog(cps, res[kind].mean(1), marker="o", ms=3, label=label)
      if args.seeds > 1:
        ax.fill_between(cps, res[kind].min(1), res[kind].max(1), alpha=0.2)
    ax.set_xlabel("simulated episodes")
    ax.set_ylabel(measure)
    ax.set_title(f"{name}: self-play MCTS, {args.seeds} runs (min-max band)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(args.plot, dpi=120)
    plt.close(fig)
    print(f"plot saved to {args.plot}")


if __name__ == "__main__":
  main()
