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
    python examples/oos_vs_ismcts.py --games gs13,ld22 --budgets 1024 --batch 64 \\
        --capacity 65536 --matches 200 --pairs --json out.json --log out.txt --plot out.png

Games (``--games``, comma-separated keys or game strings): ``gs`` = the
paper's II-GS(6) (``ii_goofspiel(num_cards=6)``, point cards 0..5), ``gs4`` =
II-GS(4), ``ld`` = LD(1,1), ``gp`` = GP(3,3,2,2), and the large variants
``gs13`` = II-GS(13) and ``ld22`` = LD(2,2). A game too large to enumerate is
played through its rules (:class:`~jaxgt.agents.device_search.DeviceSearchAgent`,
statistics in information-state tables of ``--capacity`` rows per player):
each move runs ``iterations`` solver steps of ``--batch`` samples, OOS
``max(budget // (2 batch), 1)`` iterations (``2 x batch`` trajectories each,
one batch per update player), ISMCTS ``max(budget // batch, 1)`` steps
(``batch`` simulations each); the exact budget is printed. The seconds one
move takes on this machine (one jitted ``act`` at a position a few moves in,
after compilation) are measured and printed per agent; ``--time-only`` prints just
those, to state a sample budget in seconds on the machine at hand. ``--seconds S``
gives every searcher the budget that takes about ``S`` seconds a move here instead
(calibrated from timed moves, the paper's way of budgeting); ``--seconds sog`` uses the
``sog`` agent's own time a move, so all agents meet at equal time.

Parameters (Sec. 5.1, 5.4): UCT ``C`` twice the largest payoff, the most
visited action played; RM exploration 0.2, moves sampled from the mean
strategy; OOS ``epsilon = 0.6``, ``gamma = 0.01``, ``delta = --delta``,
targeting its information state (``oos``, IST) or its public state (``pst``,
PST; the paper defines it where actions are public, e.g. Liar's Dice; II-GS
has no public actions), playing its average strategy (``oos``, the paper) or
its current one (``oos-cur``, the authors' implementation's default); OOS
keeps its tables between the moves of a match, ISMCTS starts fresh every move.

``sog`` is Student of Games (Schmid et al. 2023): ``SoG(--sog-simulations, 1)``, continually
re-solving, with the network of the ``jaxgt train`` run in ``--sog DIR`` at its leaves (on a
game too large to enumerate, grown from the rules); its budget is its simulations, not
``--budgets``, so ``--time-only`` states its seconds per move beside the sample budgets'
(equal time per move: pick the budgets that match it).

Matches run through :func:`jaxgt.evaluation.match.play` (all matches of a
cell as one jitted program; each agent searches only where it acts).
``--pairs`` plays each unordered pair of agents once (``--matches`` matches,
seats alternating) and fills the mirror cell from it (win rate ``100 - w``,
mean payoff negated); it needs the same agents in rows and columns.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import jax
import jax.numpy as jnp

from jaxgt.agents.base import Agent, PolicyAgent, RandomAgent
from jaxgt.agents.device_search import DeviceSearchAgent
from jaxgt.agents.ismcts_agent import ISMCTSAgent
from jaxgt.agents.oos_agent import OOSAgent
from jaxgt.cli.common import check_writable, load_playable
from jaxgt.core import sequence_form
from jaxgt.core.checks import check_real
from jaxgt.evaluation import referee
from jaxgt.evaluation.match import play
from jaxgt.games.device import DeviceGame
from jaxgt.solvers.ismcts import ISMCTS
from jaxgt.solvers.oos import OOS


GAMES = {"gs": "ii_goofspiel(num_cards=6)", "gs4": "ii_goofspiel(num_cards=4)",
         "ld": "liars_dice(numdice=1)", "gp": "generic_poker(T=3,C=3,R=2,B=2)",
         "gs13": "ii_goofspiel(num_cards=13)", "ld22": "liars_dice(numdice=2)"}
AGENTS = ("oos", "oos-cur", "pst", "uct", "rm", "rnd", "sog")


def _oos(kind: str, args) -> OOS:
  return OOS(delta=args.delta, targeting="pst" if kind == "pst" else args.targeting,
             epsilon=0.6, gamma=0.01, **({"batch": args.batch} if args.batch else {}))


def _ismcts(kind: str, args) -> ISMCTS:
  sel = {"selection": "uct"} if kind == "uct" else {"selection": "rm", "exploration": 0.2}
  return ISMCTS(**sel, **({"batch": args.batch} if args.batch else {}))


def iterations_of(kind: str, budget: int, batch: int) -> int:
  """Solver steps per move for ``budget`` trajectories (``batch`` samples per step)."""
  per_step = 2 * batch if kind in ("oos", "oos-cur", "pst") else batch
  return max(budget // per_step, 1)


def samples_per_move(kind: str, budget: int, batch: int) -> int:
  """The exact trajectories one move samples: iterations x batch (x 2 for OOS)."""
  if kind in ("rnd", "sog"):
    return 0
  per_step = 2 * batch if kind in ("oos", "oos-cur", "pst") else batch
  return iterations_of(kind, budget, batch) * per_step


def make_agent(kind: str, game, budget: int, args) -> Agent:
  if kind not in AGENTS:
    raise ValueError(f"unknown agent {kind!r}; choose {', '.join(AGENTS)}")
  if kind == "sog":  # SoG(s, 1) with the run's network (its budget is s, not ``budget``)
    from jaxgt.training.agent_kind import sog
    return sog(game, checkpoint=args.sog, simulations=args.sog_simulations, dtype="float32")
  if isinstance(game, DeviceGame):
    batch = args.batch or 1
    if kind == "rnd":
      return RandomAgent(game)
    solver = _oos(kind, args) if kind in ("oos", "oos-cur", "pst") else _ismcts(kind, args)
    return DeviceSearchAgent(game, solver, iterations=iterations_of(kind, budget, batch),
                             capacity=args.capacity,
                             play="current" if kind == "oos-cur" else "average")
  if kind in ("oos", "oos-cur", "pst"):  # OOS playing its average / its current strategy
    return OOSAgent(game, iterations=max(budget // 2, 1), solver=_oos(kind, args),
                    play="current" if kind == "oos-cur" else "average")
  if kind in ("uct", "rm"):
    return ISMCTSAgent(game, simulations=budget, solver=_ismcts(kind, args))
  return PolicyAgent(game, sequence_form.uniform_policy(game.tree))  # the random opponent


def _budget(kind: str, budget: int, args) -> int:
  """The trajectories per move asked of agent ``kind``: ``--ismcts-budget`` for UCT and RM."""
  return args.ismcts_budget if kind in ("uct", "rm") and args.ismcts_budget else budget


def typical_position(game: DeviceGame, key, moves: int = 4):
  """A position of ``game`` after chance and ``moves`` uniformly random decisions."""
  dtype = jnp.float32
  pos, key = referee.through_chance(game, referee.root(game), key, dtype)
  for _ in range(moves):
    if not bool(referee.live(game, pos)):
      break
    key, kd, kc = jax.random.split(key, 3)
    legal = jnp.asarray(game.legal_mask(pos.state), dtype)
    pos, key = referee.advance(game, pos, legal / jnp.sum(legal), kd, kc, dtype)
  return pos


def seconds_per_move(agent: Agent, game, key, repeats: int = 3) -> float:
  """Seconds of one jitted ``act`` of ``agent`` at a typical position, after compilation
  (device games; the median of ``repeats`` calls)."""
  pos = typical_position(game, key)
  state = agent.init(key)
  act = jax.jit(agent.act)
  jax.block_until_ready(act(key, state, pos))
  times = []
  for i in range(repeats):
    k = jax.random.fold_in(key, i + 1)
    t0 = time.perf_counter()
    jax.block_until_ready(act(k, state, pos))
    times.append(time.perf_counter() - t0)
  return sorted(times)[len(times) // 2]


def calibrated_budget(kind: str, game, seconds: float, args, key, probe: int = 8):
  """``(agent, trajectories per move, measured seconds)`` of searcher ``kind`` with the steps
  per move that take about ``seconds`` on this machine: a move is timed at ``probe`` and
  ``4 probe`` solver steps, the line through the two gives the step count, and the agent at
  that count is timed once more, corrected once if it is more than 10% off (the last
  figure is the one reported). At least one step."""
  batch = args.batch or 1
  per_step = 2 * batch if kind in ("oos", "oos-cur", "pst") else batch

  def timed(steps):
    agent = make_agent(kind, game, steps * per_step, args)
    return agent, seconds_per_move(agent, game, key)

  _, t1 = timed(probe)
  _, t4 = timed(4 * probe)
  slope = max((t4 - t1) / (3 * probe), 1e-9)
  fixed = max(t1 - slope * probe, 0.0)
  steps = max(int(round((seconds - fixed) / slope)), 1)
  agent, t = timed(steps)
  if abs(t - seconds) > 0.1 * seconds and t > fixed:  # one correction, scaled from this move
    better = max(int(round(steps * (seconds - fixed) / (t - fixed))), 1)
    if better != steps:
      steps = better
      agent, t = timed(steps)
  return agent, steps * per_step, t


def _cell(res, secs) -> dict:
  mem = None
  if res.memory is not None:
    mem = [None if m is None else {"rows": [int(x) for x in m["rows"]],
                                   "refused": [int(x) for x in m["refused"]]}
           for m in res.memory]
  return {"win_rate": 100 * res.win_rate, "win_ci95": 100 * res.win_ci95, "mean": res.mean,
          "ci95": res.ci95, "matches": res.num_matches, "seconds": secs, "memory": mem}


def _mirror(cell: dict) -> dict:
  mem = cell["memory"]
  return dict(cell, win_rate=100 - cell["win_rate"], mean=-cell["mean"], mirrored=True,
              memory=None if mem is None else mem[::-1])


def cell_order(rows: list, cols: list, pairs: bool) -> list:
  """The ``(row, col)`` cells to play: every cell in row order, or with ``pairs`` each
  unordered pair once, pairs against the random agent first, then the other pairs, then
  self-play (so the cells against random finish first in a long run)."""
  if not pairs:
    return [(r, c) for r in rows for c in cols]
  cells = [(r, c) for i, r in enumerate(rows) for c in rows[i:]]
  return sorted(cells, key=lambda rc: (0 if "rnd" in rc and rc[0] != rc[1] else
                                       2 if rc[0] == rc[1] else 1))


def _text(cell: dict) -> str:
  return (f"{cell['win_rate']:5.1f}({cell['win_ci95']:4.1f}) "
          f"[{cell['mean']:+.2f}({cell['ci95']:.2f})] {cell['seconds']:4.0f}s"
          + ("*" if cell.get("mirrored") else " "))


def _dump(report: dict, partial, path: str) -> None:
  """Writes ``report`` (with the table in progress, if any) to ``path``."""
  tables = report["tables"] + ([partial] if partial is not None else [])
  with open(path, "w") as f:
    json.dump(dict(report, tables=tables), f, indent=1)


def plot_matrices(tables: list, path: str) -> None:
  """Heatmaps of the win-rate matrices (one panel per game and budget; cells not played
  are left blank)."""
  import matplotlib
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt
  import numpy as np
  fig, axes = plt.subplots(1, len(tables), figsize=(4.6 * len(tables), 4.2), squeeze=False)
  for ax, t in zip(axes[0], tables):
    rows, cols = t["rows"], t["cols"]
    def grid(field):  # nan where a cell was not played
      return np.array([[t["cells"].get(r, {}).get(c, {}).get(field, np.nan) for c in cols]
                       for r in rows], float)

    w, h = grid("win_rate"), grid("win_ci95")
    ax.imshow(w, cmap="RdBu", vmin=0, vmax=100)
    for i in range(len(rows)):
      for j in range(len(cols)):
        if np.isfinite(w[i, j]):
          ax.text(j, i, f"{w[i, j]:.1f}\n({h[i, j]:.1f})", ha="center", va="center", fontsize=8)
    ax.set_xticks(range(len(cols)), [c.upper() for c in cols])
    ax.set_yticks(range(len(rows)), [r.upper() for r in rows])
    ismcts = t.get("ismcts_budget")
    if t.get("seconds") is not None:
      ax.set_title(f"{t['game']}\n{t['seconds']:.3f} s per move", fontsize=9)
    else:
      ax.set_title(f"{t['game']}\n{t['budget']} trajectories per move"
                   + (f" ({ismcts} for UCT, RM)" if ismcts and ismcts != t["budget"] else ""),
                   fontsize=9)
  fig.tight_layout()
  fig.savefig(path, dpi=120)
  plt.close(fig)


def main(argv=None):
  ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  ap.add_argument("--games", default="gs,ld,gp",
                  help=f"comma-separated keys of {sorted(GAMES)} or game strings")
  ap.add_argument("--budgets", default=None,
                  help="trajectories per move, comma-separated (default 1000)")
  ap.add_argument("--seconds", default=None, metavar="S|sog",
                  help="device games: budgets in seconds per move on this machine instead: each "
                       "searcher's solver steps are calibrated so that one move takes about S "
                       "seconds; 'sog': the sog agent's own seconds per move (equal time)")
  ap.add_argument("--matches", type=int, default=100, help="matches per cell (seats alternate)")
  ap.add_argument("--rows", default="oos,uct,rm,rnd", help=f"agents of {AGENTS}")
  ap.add_argument("--cols", default="oos,uct,rm,rnd")
  ap.add_argument("--quick", action="store_true",
                  help="II-GS(4) and LD(1,1), budget 1000, 20 matches, OOS against the others")
  ap.add_argument("--delta", type=float, default=0.9)
  ap.add_argument("--targeting", default="ist", choices=("ist", "pst"))
  ap.add_argument("--capacity", type=int, default=1 << 16,
                  help="device games: information-state table rows per player")
  ap.add_argument("--batch", type=int, default=None,
                  help="samples per solver step (OOS: per update player); device games default 1")
  ap.add_argument("--ismcts-budget", type=int, default=None,
                  help="trajectories per move of UCT and RM (default: the --budgets value)")
  ap.add_argument("--block", type=int, default=None,
                  help="play a cell's matches in blocks of this many (bounds memory; same matches)")
  ap.add_argument("--pairs", action="store_true",
                  help="play each unordered pair once; the mirror cell is 100 - win rate")
  ap.add_argument("--json", default=None, help="write every cell to this JSON file")
  ap.add_argument("--log", default=None, help="also write the printed text to this file")
  ap.add_argument("--plot", default=None, help="draw the win-rate matrices (matplotlib)")
  ap.add_argument("--duplicate", action="store_true",
                  help="duplicate matches: each pair deals the same chance outcomes, seats "
                       "swapped (intervals over the pairs)")
  ap.add_argument("--time-only", action="store_true",
                  help="device games: print each agent's seconds per move at each budget and "
                       "play no matches (the budget's cost in seconds on this machine)")
  ap.add_argument("--sog", metavar="DIR", default=None,
                  help="the jaxgt train run whose network the sog agent uses")
  ap.add_argument("--sog-simulations", type=int, default=10,
                  help="s of the sog agent's SoG(s, 1) (default 10)")
  ap.add_argument("--seed", type=int, default=0)
  args = ap.parse_args(argv)
  if args.quick:
    args.games, args.budgets, args.matches, args.rows = "gs4,ld", "1000", 20, "oos"
    args.cols = "uct,rm,rnd"
  if args.seconds is not None and (args.budgets is not None or args.ismcts_budget is not None):
    raise SystemExit("--seconds replaces --budgets and --ismcts-budget; give one or the other")
  budgets = [int(b) for b in (args.budgets or "1000").split(",")]
  if any(b < 1 for b in budgets) or args.matches < 2:
    raise SystemExit("budgets must be positive and --matches at least 2")
  seconds = None
  if args.seconds is not None:
    if args.seconds == "sog":
      if "sog" not in args.rows.split(",") + args.cols.split(","):
        raise SystemExit("--seconds sog needs the sog agent in --rows or --cols")
    else:
      try:
        seconds = float(args.seconds)
      except ValueError:
        raise SystemExit(f"--seconds must be a number of seconds or 'sog' (got {args.seconds!r})")
      try:
        check_real("--seconds", seconds, 0, lo_open=True)
      except ValueError:
        raise SystemExit(f"--seconds must be positive and finite (got {args.seconds})")
    budgets = [None]
  if args.capacity < 1 or any(x is not None and x < 1 for x in (args.batch, args.ismcts_budget,
                                                       args.block)):
    raise SystemExit("--capacity, --batch, --ismcts-budget and --block must be positive")
  rows, cols = args.rows.split(","), args.cols.split(",")
  for k in rows + cols:
    if k not in AGENTS:
      raise SystemExit(f"unknown agent {k!r}; choose {', '.join(AGENTS)}")
  if args.pairs and sorted(rows) != sorted(cols):
    raise SystemExit("--pairs needs the same agents in --rows and --cols")
  if "sog" in rows + cols:
    if args.sog is None or not os.path.isdir(args.sog):
      raise SystemExit(f"the sog agent needs --sog DIR, a jaxgt train run directory (got "
                       f"{args.sog!r})")
    if args.sog_simulations < 1:
      raise SystemExit("--sog-simulations must be positive")
  try:
    check_writable({"--json": args.json, "--log": args.log, "--plot": args.plot})
  except ValueError as e:
    raise SystemExit(str(e))
  log = open(args.log, "w") if args.log else None

  def out(text=""):
    print(text, flush=True)
    if log:
      log.write(text + "\n")
      log.flush()

  out(f"{args.matches} matches per cell; cells: row agent's win % "
      f"(draws half) (95% half-width) [mean payoff (95% half-width)]")
  report = {"config": {k: v for k, v in vars(args).items() if k not in ("json", "log", "plot")},
            "tables": []}
  key = jax.random.key(args.seed)
  for game_string in args.games.split(","):
    game = load_playable(GAMES.get(game_string, game_string))
    device = isinstance(game, DeviceGame)
    name = getattr(game, "name", GAMES.get(game_string, game_string))
    if args.seconds is not None and not device:
      raise SystemExit(f"--seconds needs a game played through its rules; {name} is enumerated "
                       "(its agents' budgets are samples)")
    for budget in budgets:
      kinds = list(dict.fromkeys(rows + cols))
      timed = {}  # kind -> seconds per move measured while calibrating
      if budget is None:  # --seconds: every searcher's budget calibrated to the target time
        agents, budget_of = {}, {}
        target = seconds
        if "sog" in kinds:
          agents["sog"] = make_agent("sog", game, 0, args)
          key, kt = jax.random.split(key)
          timed["sog"] = seconds_per_move(agents["sog"], game, kt)
          target = timed["sog"] if args.seconds == "sog" else target
        for k in kinds:
          if k in ("sog", "rnd"):
            if k not in agents:  # the sog agent was built above, its network loaded once
              agents[k] = make_agent(k, game, 0, args)
            budget_of[k] = 0
          else:
            key, kt = jax.random.split(key)
            agents[k], budget_of[k], timed[k] = calibrated_budget(k, game, target, args, kt)
        out(f"\n{name}, {target:.3f} s per move (each searcher's budget calibrated to it on "
            f"this machine; played through its rules, capacity {args.capacity} rows per player)")
      else:
        target = None
        budget_of = {k: _budget(k, budget, args) for k in kinds}
        agents = {k: make_agent(k, game, budget_of[k], args) for k in kinds}
        out(f"\n{name}, {budget} trajectories per move"
            + (f" ({args.ismcts_budget} for UCT and RM)" if args.ismcts_budget else "")
            + (f" (played through its rules, capacity {args.capacity} rows per player)"
               if device else ""))
      table = {"game": name, "key": game_string, "budget": budget, "seconds": target,
               "device": device, "ismcts_budget": budget_of.get("uct", _budget("uct", budget,
                                                                                 args)),
               "rows": rows, "cols": cols, "agents": {}, "cells": {r: {} for r in rows}}
      for k in kinds:
        info = {}
        if device and k == "sog":
          a = agents[k]
          key, kt = jax.random.split(key)
          info = {"simulations": args.sog_simulations, "memory_bytes": a.memory_bytes(),
                  "seconds_per_move": timed.get(k) or seconds_per_move(a, game, kt)}
          out(f"  {k.upper():>7}: {a.name} with the network of {args.sog}, "
              f"{info['seconds_per_move']:.3f} s per move on this machine "
              f"(search state {info['memory_bytes'] / 2**20:.1f} MiB)")
        elif device and k != "rnd":
          a = agents[k]
          info = {"iterations": a.iterations, "batch": a.solver.batch,
                  "samples_per_move": samples_per_move(k, budget_of[k], a.solver.batch),
                  "memory_bytes": a.memory_bytes()}
          key, kt = jax.random.split(key)
          info["seconds_per_move"] = timed.get(k) or seconds_per_move(a, game, kt)
          out(f"  {k.upper():>7}: {info['iterations']} iterations x batch {info['batch']}"
              + (" x 2 update players" if k in ("oos", "oos-cur", "pst") else "")
              + f" = {info['samples_per_move']} trajectories per move, "
              f"{info['seconds_per_move']:.3f} s per move on this machine "
              f"(tables {info['memory_bytes'] / 2**20:.1f} MiB)")
        table["agents"][k] = info
      if args.time_only:
        report["tables"].append(table)
        if args.json:
          _dump(report, None, args.json)
        continue
      for r, c in cell_order(rows, cols, args.pairs):
        key, k = jax.random.split(key)
        t0 = time.perf_counter()
        res = play(game, agents[r], agents[c], args.matches, k, swap_seats=True,
                   block=args.block, duplicate=args.duplicate)
        cell = _cell(res, time.perf_counter() - t0)
        table["cells"][r][c] = cell
        if args.pairs and r != c:
          table["cells"].setdefault(c, {})[r] = _mirror(cell)
        out(f"  {r.upper()} vs {c.upper()}: " + _text(cell).strip())
        if cell["memory"] is not None:
          refused = [m["refused"] for m in cell["memory"] if m is not None]
          if any(sum(f) for f in refused):
            out(f"  {r.upper()} vs {c.upper()}: full table, refused inserts {refused}")
        if args.json:
          _dump(report, table, args.json)
      out(f"{'':>6}" + "".join(f"{c.upper():>33}" for c in cols))
      for r in rows:
        out(f"{r.upper():>6}" + "".join(f"{_text(table['cells'][r][c]):>33}" for c in cols))
      if args.pairs:
        out("  * the mirror of the played cell (100 - win rate)")
      report["tables"].append(table)
      if args.json:
        _dump(report, None, args.json)
  if args.plot:
    try:
      plot_matrices(report["tables"], args.plot)
    except ImportError:
      print("--plot needs matplotlib", file=sys.stderr)
  if log:
    log.close()
  return report


if __name__ == "__main__":
  main()
