"""Solve Leduc poker with CFR+ and watch exploitability fall.

  python examples/solve_leduc.py --iterations 2000 --eval-every 100 --plot leduc.png

The same as ``jaxgt solve leduc_poker``, written against the Python API: the
game compiles once to arrays, CFR+ runs ``eval_every`` iterations per jitted
call, and the exact exploitability of the average policy is printed between
calls.
"""

import argparse

import jaxgt
from jaxgt.solving import plot_curve


def main():
  ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  ap.add_argument("--game", default="leduc_poker")
  ap.add_argument("--solver", default="cfr+", choices=["cfr", "cfr+", "lcfr", "dcfr"])
  ap.add_argument("--iterations", type=int, default=2000)
  ap.add_argument("--eval-every", type=int, default=100)
  ap.add_argument("--plot", metavar="PNG")
  args = ap.parse_args()

  game = jaxgt.load(args.game)
  print(game)
  result = jaxgt.solve(game, args.solver, iterations=args.iterations,
                       eval_every=args.eval_every, progress=True)
  print(f"value for player 0: {result.value:.5f}   exploitability: {result.exploitability:.3e}   "
        f"compile {result.compile_seconds:.2f}s, solve {result.solve_seconds:.2f}s")
  if args.plot:
    plot_curve(result.evaluations, args.plot, title=f"{game.name} {args.solver}")
    print(f"plot saved to {args.plot}")


if __name__ == "__main__":
  main()
