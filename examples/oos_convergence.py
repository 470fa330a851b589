"""Lisy, Lanctot, Bowling (2015) Fig. "fig:small": exploitability of root search and of the
aggregated strategy for ISMCTS-UCT/RM and OOS-IST/PST.

  python examples/oos_convergence.py --quick                 # minutes on 2 loaded cores
  python examples/oos_convergence.py --games ld,gs,gp --samples 1000000 --seeds 2 \\
      --budgets 100,1000,10000 --matches 100 --plot fig_small.png

**Root** (Fig. small a, d, h): each algorithm runs from the root (empty match
history) for a growing number of sampled trajectories; the strategy it would
play is evaluated exactly: OOS's average strategy, UCT's visit frequencies
(the paper's choice for convergence), RM's mean strategy. Information states
not yet in memory play one fixed random action, the same for every algorithm
(Sec. 5.4). OOS from the root is OOS-IST = OOS-PST (nothing to target), so
one OOS curve is drawn. II-GS has no public actions, hence no public subgame
(the paper's Fig. small says so): OOS-PST is not run there.

**Aggregated** (Fig. small b, e, i): Lisy et al.'s aggregate method
(:func:`jaxgt.evaluation.aggregate.aggregate_policy`, Sec. 5.2) at a per-move
budget: ``--matches`` matches against a random opponent (the paper: 500), the
agent's search statistics (OOS ``s_I``, ISMCTS visit counts / RM mean
sums) added at every reached information state and its successors.

Budgets are trajectories: an OOS iteration is 2 (one per update player), an
ISMCTS simulation 1. The paper's x-axis is seconds (its 0.1 s to 5 s per move
on a 2015 CPU); this reproduction counts samples, so algorithms are compared
at equal samples, not equal time. Exploitability is NashConv, the paper's
``epsilon_sigma`` (both players' best-response gains summed).

Parameters (Sec. 5.1, 5.4): UCT ``C`` = twice the largest payoff; RM
exploration 0.2; OOS ``epsilon = 0.6``, ``gamma = 0.01``, ``delta =
--delta`` (0.9 by default; the paper's parameter panels vary it). Games:
``ld`` = LD(1,1) (``liars_dice(numdice=1)``), ``gs`` = the paper's II-GS(6)
with point cards 0..5 (``ii_goofspiel(num_cards=6)``), ``gp`` = GP(3,3,2,2)
(``generic_poker``); ``--quick`` uses II-GS(4) and GP(3,3,1,1) (``gs4``,
``gp1``), which compile in seconds.
"""

from __future__ import annotations

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np

import jaxgt
from jaxgt.agents.ismcts_agent import ISMCTSAgent
from jaxgt.agents.oos_agent import OOSAgent
from jaxgt.core import sequence_form
from jaxgt.core.sampling import sample_index
from jaxgt.evaluation.aggregate import aggregate_policy
from jaxgt.solvers.ismcts import ISMCTS
from jaxgt.solvers.oos import OOS

GAMES = {"ld": "liars_dice(numdice=1)", "gs": "ii_goofspiel(num_cards=6)",
         "gp": "generic_poker(T=3,C=3,R=2,B=2)", "gs4": "ii_goofspiel(num_cards=4)",
         "gp1": "generic_poker(T=3,C=3,R=1,B=1)"}
ALGORITHMS = ("uct", "rm", "oos-ist", "oos-pst")


def solver_for(name: str, delta: float, dtype="float32"):
  """The solver of one of :data:`ALGORITHMS` with the paper's parameters."""
  if name == "uct":
    return ISMCTS(selection="uct", final="frequency", dtype=dtype)
  if name == "rm":
    return ISMCTS(selection="rm", exploration=0.2, final="mean", dtype=dtype)
  return OOS(delta=delta, targeting=name[4:], epsilon=0.6, gamma=0.01, dtype=dtype)


def fixed_random_actions(tree, key):
  """``([I0, A], [I1, A])`` one-hot fixed random legal actions (the same for every algorithm)."""
  out = []
  for p, pt in enumerate(tree.players):
    legal = jnp.asarray(pt.legal, jnp.float32)
    u = jax.random.uniform(jax.random.fold_in(key, p), (legal.shape[0],), jnp.float32)
    out.append(jax.nn.one_hot(sample_index(legal, u), legal.shape[1], dtype=jnp.float64))
  return tuple(out)


def root_curve(game, name, delta, checkpoints, seeds, key):
  """``[len(checkpoints), seeds]`` NashConv of root search after ``checkpoints`` trajectories."""
  tree = game.device_tree("float32")
  tree64 = game.device_tree("float64")
  solver = solver_for(name, delta)
  fallback = fixed_random_actions(tree, jax.random.key(12345))
  keys = jax.random.split(key, seeds)

  @jax.jit
  def advance(states, n):
    def one(s, k):
      s = solver.run(tree, s, n, k)
      pol = tuple(jnp.where(m[:, None], p.astype(jnp.float64), f)
                  for p, m, f in zip(solver.policy(tree, s), s.in_tree, fallback))
      return s, sequence_form.nash_conv(tree64, pol)
    return jax.vmap(one)(states, keys)

  state = solver.init(tree)
  states = jax.tree_util.tree_map(lambda x: jnp.broadcast_to(x, (seeds,) + x.shape), state)
  per = solver.samples_per_step
  done, out = 0, []
  for c in checkpoints:
    steps = max(c // per - done, 0)
    states, e = advance(states, steps)
    done += steps
    out.append(np.asarray(e))
  return np.asarray(out)


def make_agent(game, name, delta, budget):
  solver = solver_for(name, delta)
  if name.startswith("oos"):
    return OOSAgent(game, iterations=max(budget // 2, 1), solver=solver)
  return ISMCTSAgent(game, simulations=budget, solver=solver)


def main(argv=None):
  ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  ap.add_argument("--games", default="ld,gs,gp", help=f"comma-separated keys of {sorted(GAMES)}")
  ap.add_argument("--algorithms", default=",".join(ALGORITHMS))
  ap.add_argument("--samples", type=int, default=1_000_000, help="root search: most trajectories")
  ap.add_argument("--points", type=int, default=8, help="root search: log-spaced checkpoints")
  ap.add_argument("--seeds", type=int, default=2, help="root search: vmapped runs averaged")
  ap.add_argument("--budgets", default="100,1000,10000",
                  help="aggregated: trajectories per move (empty: skip)")
  ap.add_argument("--matches", type=int, default=100, help="aggregated: matches (paper: 500)")
  ap.add_argument("--delta", type=float, default=0.9)
  ap.add_argument("--seed", type=int, default=0)
  ap.add_argument("--quick", action="store_true",
                  help="II-GS(4), GP(3,3,1,1) and LD(1,1); 20k samples; budgets 100,1000; 20 matches")
  ap.add_argument("--plot", metavar="PNG")
  args = ap.parse_args(argv)
  jax.config.update("jax_enable_x64", True)  # float64 evaluation; the searches stay float32
  if args.quick:
    args.games, args.samples, args.points, args.seeds = "gs4,gp1,ld", 20_000, 5, 2
    args.budgets, args.matches = "100,1000", 20
  algorithms = [a for a in args.algorithms.split(",") if a]
  if bad := set(algorithms) - set(ALGORITHMS):
    ap.error(f"unknown algorithms {sorted(bad)}; choose from {','.join(ALGORITHMS)}")
  games = [g for g in args.games.split(",") if g]
  if bad := set(games) - set(GAMES):
    ap.error(f"unknown games {sorted(bad)}; choose from {','.join(sorted(GAMES))}")
  budgets = [int(b) for b in args.budgets.split(",") if b]
  checkpoints = np.unique(np.logspace(2, np.log10(args.samples), args.points).astype(int))
  key = jax.random.key(args.seed)
  results = {}
  for g in games:
    t0 = time.perf_counter()
    game = jaxgt.load(GAMES[g])
    print(f"\n{GAMES[g]}: {game.sizes()} (compiled in {time.perf_counter() - t0:.1f}s)")
    print("root search, NashConv (mean over seeds) at trajectories " +
          " ".join(f"{c:>8d}" for c in checkpoints))
    for name in [a for a in algorithms if a != "oos-pst"]:  # from the root IST = PST
      t0 = time.perf_counter()
      e = root_curve(game, name, args.delta, checkpoints, args.seeds, key)
      results[(g, "root", name)] = (checkpoints, e.mean(1))
      label = "oos" if name == "oos-ist" else name
      print(f"  {label:>8}: " + " ".join(f"{v:8.4f}" for v in e.mean(1)) +
            f"   ({time.perf_counter() - t0:.0f}s)", flush=True)
    if budgets:
      print(f"aggregated ({args.matches} matches vs random), NashConv at budgets " +
            " ".join(f"{b:>8d}" for b in budgets))
      for name in algorithms:
        if name == "oos-pst" and not game.game.public_actions:
          print(f"  {name:>8}: n/a (every action is private: no public subgame)")
          continue
        t0 = time.perf_counter()
        vals = []
        for b in budgets:
          res = aggregate_policy(game, make_agent(game, name, args.delta, b), args.matches,
                                 jax.random.fold_in(key, b))
          vals.append(res.nash_conv)
        results[(g, "aggregated", name)] = (np.asarray(budgets), np.asarray(vals))
        print(f"  {name:>8}: " + " ".join(f"{v:8.4f}" for v in vals) +
              f"   ({time.perf_counter() - t0:.0f}s)", flush=True)
  if args.plot:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    kinds = ["root"] + (["aggregated"] if budgets else [])
    fig, axes = plt.subplots(len(games), len(kinds), figsize=(5 * len(kinds), 3.2 * len(games)),
                             squeeze=False)
    for r, g in enumerate(games):
      for c, kind in enumerate(kinds):
        ax = axes[r][c]
        for (gg, kk, name), (x, y) in results.items():
          if gg == g and kk == kind:
            ax.semilogx(x, y, marker="o", ms=3, label=name if kind == "aggregated" or
                        name != "oos-ist" else "oos")
        ax.set_title(f"{GAMES[g]}: {kind}", fontsize=9)
        ax.set_xlabel("trajectories" + (" per move" if kind == "aggregated" else ""))
        ax.set_ylabel("NashConv")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(args.plot, dpi=110)
    plt.close(fig)
    print(f"plot saved to {args.plot}")


if __name__ == "__main__":
  main()
