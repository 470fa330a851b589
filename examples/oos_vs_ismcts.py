"""Head-to-head: OOS, ISMCTS-UCT, ISMCTS-RM and random in the games of Lisy, Lanctot, Bowling (2015).

Reproduces the shape of the paper's match tables (Sec. 5.5, Fig. "matches"):
every row agent plays ``--matches`` matches against every column agent, half
of them in each seat; a cell is the row agent's win rate in percent (a match
won when its payoff is positive, draws count half) with its 95% half-width,
and its mean payoff (the paper's measure for Generic Poker, whose payoffs are
chips; for the win/loss games the two say the same). Budgets are
trajectories per move: OOS runs ``budget / 2`` iterations (one trajectory per
update player each), ISMCTS ``budget`` simulations. The paper's budgets are
seconds per move (0.1 s for II-GS(6), LD(1,1), GP(3,3,2,2); 1 s / 5 s for the
larger variants); here they are sample counts, so agents meet at equal
samples, not equal time.

    python examples/oos_vs_ismcts.py --quick               # II-GS(4), LD(1,1); minutes
    python examples/oos_vs_ismcts.py --games gs,ld,gp --budgets 1000,10000 --matches 200 \\
        --rows oos,uct,rm,rnd --cols oos,uct,rm,rnd

Games (``--games``, comma-separated keys or game strings): ``gs`` = the
paper's II-GS(6) (``ii_goofspiel(num_cards=6)``, point cards 0..5), ``gs4`` =
II-GS(4), ``ld`` = LD(1,1), ``gp`` = GP(3,3,2,2). Parameters (Sec. 5.1, 5.4):
UCT ``C`` twice the largest payoff, the most visited action played; RM
exploration 0.2, moves sampled from the mean strategy; OOS ``epsilon =
0.6``, ``gamma = 0.01``, ``delta = --delta`` with ``--targeting``, playing
its average strategy (``oos``, the paper) or its current one (``oos-cur``, the
authors' implementation's default); OOS keeps its tables between the moves of
a match, ISMCTS starts fresh every move.

Matches run through :func:`jaxgt.evaluation.match.play` (all matches of a
cell as one jitted program; each agent searches only where it acts).
"""

from __future__ import annotations

import argparse
import time

import jax

import jaxgt
from jaxgt.agents.base import Agent, PolicyAgent
from jaxgt.core import sequence_form
from jaxgt.core.game_tree import CompiledGame
from jaxgt.evaluation.match import play
from jaxgt.agents.ismcts_agent import ISMCTSAgent
from jaxgt.solvers.ismcts import ISMCTS
from jaxgt.agents.oos_agent import OOSAgent
from jaxgt.solvers.oos import OOS


GAMES = {"gs": "ii_goofspiel(num_cards=6)", "gs4": "ii_goofspiel(num_cards=4)",
         "ld": "liars_dice(numdice=1)", "gp": "generic_poker(T=3,C=3,R=2,B=2)"}


def make_agent(kind: str, game: CompiledGame, budget: int, args) -> Agent:
  if kind in ("oos", "oos-cur"):  # OOS playing its average / its current strategy
    solver = OOS(delta=args.delta, targeting=args.targeting, epsilon=0.6, gamma=0.01)
    return OOSAgent(game, iterations=max(budget // 2, 1), solver=solver,
                    play="current" if kind == "oos-cur" else "average")
  if kind == "uct":
    return ISMCTSAgent(game, simulations=budget, solver=ISMCTS(selection="uct"))
  if kind == "rm":
    return ISMCTSAgent(game, simulations=budget, solver=ISMCTS(selection="rm", exploration=0.2))
  if kind == "rnd":
    return PolicyAgent(game, sequence_form.uniform_policy(game.tree))  # the random opponent
  raise ValueError(f"unknown agent {kind!r}; choose oos, oos-cur, uct, rm or rnd")


def main(argv=None):
  ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  ap.add_argument("--games", default="gs,ld,gp",
                  help=f"comma-separated keys of {sorted(GAMES)} or game strings")
  ap.add_argument("--budgets", default="1000", help="trajectories per move, comma-separated")
  ap.add_argument("--matches", type=int, default=100, help="matches per cell (seats alternate)")
  ap.add_argument("--rows", default="oos,uct,rm,rnd")
  ap.add_argument("--cols", default="oos,uct,rm,rnd")
  ap.add_argument("--quick", action="store_true",
                  help="II-GS(4) and LD(1,1), budget 1000, 20 matches, OOS against the others")
  ap.add_argument("--delta", type=float, default=0.9)
  ap.add_argument("--targeting", default="ist", choices=("ist", "pst"))
  ap.add_argument("--seed", type=int, default=0)
  args = ap.parse_args(argv)
  if args.quick:
    args.games, args.budgets, args.matches, args.rows = "gs4,ld", "1000", 20, "oos"
    args.cols = "uct,rm,rnd"
  budgets = [int(b) for b in args.budgets.split(",")]
  if any(b < 1 for b in budgets) or args.matches < 2:
    raise SystemExit("budgets must be positive and --matches at least 2")
  rows, cols = args.rows.split(","), args.cols.split(",")
  print(f"{args.matches} matches per cell; cells: row agent's win % "
        f"(draws half) (95% half-width) [mean payoff (95% half-width)]")
  key = jax.random.key(args.seed)
  for game_string in args.games.split(","):
    game = jaxgt.load(GAMES.get(game_string, game_string))
    for budget in budgets:
      print(f"\n{game.name}, {budget} trajectories per move")
      print(f"{'':>6}" + "".join(f"{c.upper():>32}" for c in cols))
      for r in rows:
        cells = []
        for c in cols:
          key, k = jax.random.split(key)
          t0 = time.perf_counter()
          res = play(game, make_agent(r, game, budget, args), make_agent(c, game, budget, args),
                     args.matches, k, swap_seats=True)
          secs = time.perf_counter() - t0
          cells.append(f"{100 * res.win_rate:5.1f}({100 * res.win_ci95:4.1f}) "
                       f"[{res.mean:+.2f}({res.ci95:.2f})] {secs:4.0f}s")
        print(f"{r.upper():>6}" + "".join(f"{cell:>32}" for cell in cells))


if __name__ == "__main__":
  main()
