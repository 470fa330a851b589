"""The jaxgt command line (also python -m jaxgt).

  jaxgt games                          list registered games and parameters
  jaxgt info GAME [--json]             enumerable here? exact sizes, else a size estimate;
                                       the OpenSpiel game it mirrors
  jaxgt check GAME [--openspiel G]     conformance checks on sampled trajectories; with
                                       --openspiel, the same in lockstep with OpenSpiel
  jaxgt solve GAME [options]           solve, print exploitability as it falls
  jaxgt export POLICY --openspiel OUT  write the policy for OpenSpiel
  jaxgt exploitability P.npz           exact exploitability, NashConv and value of a policy
  jaxgt show P.npz [--infostates RE]   the strategy table of a saved policy
  jaxgt lift P.npz GAME --save OUT     a quotient game's policy lifted to the full game
  jaxgt agents                         list agent kinds (AGENT specs) and parameters
  jaxgt match GAME AGENT0 AGENT1       head-to-head matches, half in each seat
  jaxgt construct GAME AGENT           exact exploitability of an agent (policy construction)
  jaxgt evaluate LOG --policy P.npz    estimate a policy's value from logged episodes
  jaxgt bench [--quick] [--out DIR]    run the benchmark suite (--compare A B: merge runs)
  jaxgt train GAME --out DIR [...]     train a network by sound self-play (Student of Games)

GAME is a registered name with optional parameters in OpenSpiel's syntax,
e.g. ``leduc_poker`` or ``liars_dice(numdice=1)``; AGENT a spec in the same
syntax, e.g. ``oos(iterations=1000,targeting=pst)`` (:mod:`jaxgt.agents.specs`).
Each command lives in its own module of this package, which exposes
``add_parser(subparsers)`` and ``run(args) -> int``; ``COMMANDS`` lists them
in the order ``--help`` shows.
"""

from __future__ import annotations

import argparse
import os
import sys

from jaxgt.cli import (agents, bench, compiling, construct, evaluate, exploitability, export,
                       games, lift, match, show, solve, train)
from jaxgt.cli.common import size_message

COMMANDS = {
    "games": games.cmd_games, "info": games.cmd_info, "check": games.cmd_check,
    "solve": solve.run, "export": export.run, "exploitability": exploitability.run,
    "show": show.run, "lift": lift.run, "agents": agents.run, "match": match.run,
    "construct": construct.run, "evaluate": evaluate.run, "bench": bench.run,
    "train": train.run,
}
_MODULES = (games, solve, export, exploitability, show, lift, agents, match, construct, evaluate,
            bench, train)


def _parser() -> argparse.ArgumentParser:
  import jaxgt
  ap = argparse.ArgumentParser(prog="jaxgt", description=__doc__.split("\n\n")[0])
  ap.add_argument("--version", action="version", version=f"jaxgt {jaxgt.__version__}")
  ap.add_argument("--no-compilation-cache", action="store_true", help=NO_CACHE_HELP)
  sub = ap.add_subparsers(dest="command", required=True)
  for module in _MODULES:
    module.add_parser(sub)
  for p in sub.choices.values():  # also after the command; SUPPRESS keeps a value given before
    p.add_argument("--no-compilation-cache", action="store_true", default=argparse.SUPPRESS,
                   help=NO_CACHE_HELP)
  return ap


NO_CACHE_HELP = (f"do not read or write JAX's persistent compilation cache (on by default, in "
                 f"$XDG_CACHE_HOME/jaxgt/xla or ~/.cache/jaxgt/xla; environment: "
                 f"{compiling.CACHE_ENV}=0 or a folder)")


def main(argv=None) -> int:
  """Runs one command; the exit status: 0 done, 1 a failed check, 2 bad input (one line
  ``jaxgt: error: ...`` on stderr), 130 interrupted (Ctrl-C), 141 output pipe closed."""
  args = _parser().parse_args(argv)
  compiling.setup_cache(getattr(args, "no_compilation_cache", False))
  from jaxgt.games.size import GameTooLargeError
  try:
    return COMMANDS[args.command](args)
  except GameTooLargeError as e:  # the advice names the flag, not the library's argument
    print(f"jaxgt: error: {size_message(e)}", file=sys.stderr)
    return 2
  except (ValueError, ImportError) as e:
    print(f"jaxgt: error: {e}", file=sys.stderr)
    return 2
  except KeyboardInterrupt:
    print("jaxgt: interrupted", file=sys.stderr)
    return 130
  except BrokenPipeError:  # the reader left (``jaxgt agents | head -3``): nothing more to say
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())  # the interpreter's last flush writes nowhere
    return 141


if __name__ == "__main__":
  sys.exit(main())
