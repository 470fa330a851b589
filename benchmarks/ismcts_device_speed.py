"""Throughput of ISMCTS on device games (Rules), from a match position.

For each game, selection rule and batch size: compile time (the first call)
and simulations per second of ``ISMCTS(selection, batch).run(Rules(game),
state, steps, key, path=path)`` (``steps x batch`` simulations, each
determinized by sampling a state of the searcher's information state, then
walked with the statistics held in information-state tables of
``--capacity`` rows per player). The position is reached by a few moves from
the root (chance by its probabilities, players among their lowest legal
actions that do not end the game; fixed seed); the tables and skipped
determinizations are printed with each figure. No peer: OpenSpiel's
ISMCTSBot needs a game it can resample, and none of these is.

  python benchmarks/ismcts_device_speed.py [--games liars_dice(numdice=2),...]
      [--batches 1,64,4096] [--selections uct,rm] [--simulations 20000] [--capacity 65536]
"""

from __future__ import annotations

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np

import jaxgt
from jaxgt.bench_report import figure
from jaxgt.games.base import CHANCE
from jaxgt.solvers import consistent
from jaxgt.solvers.ismcts import ISMCTS, SELECTION
from jaxgt.solvers.sources import Rules, table_stats

GAMES = "liars_dice(numdice=2);ii_goofspiel(num_cards=13);limit_holdem"
DECISIONS = {"liars_dice": 2, "ii_goofspiel": 4, "limit_holdem": 3}  # moves before the search
BENCH_QUICK = ["--games", "liars_dice", "--batches", "64", "--simulations", "1280"]


def match_position(game, decisions: int, seed: int = 0):
  """``(SearchPath, steps)``: the position after ``decisions`` player moves."""
  rs = np.random.default_rng(seed)
  s, actions, seen = game.init(), [], 0
  while True:
    p = int(game.current_player(s))
    if p in (0, 1):
      if seen == decisions:
        break
      seen += 1
      going = [int(a) for a in np.flatnonzero(np.asarray(game.legal_mask(s)))
               if int(game.current_player(game.step(s, int(a)))) in (0, 1, CHANCE)]
      a = int(rs.choice(going[:3]))
    else:
      probs = np.asarray(game.chance_probs(s), np.float64)
      a = int(rs.choice(len(probs), p=probs / probs.sum()))
    actions.append(a)
    s = game.step(s, a)
  padded = np.full(game.max_length, -1, np.int32)
  padded[:len(actions)] = actions
  return consistent.search_path(game, jnp.asarray(padded), len(actions)), len(actions)


def main(argv=None):
  ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  ap.add_argument("--games", default=GAMES, help="';'-separated game strings")
  ap.add_argument("--batches", default="1,64,4096")
  ap.add_argument("--selections", default="uct,rm")
  ap.add_argument("--simulations", type=int, default=20000,
                  help="simulations timed per configuration (at least two steps)")
  ap.add_argument("--capacity", type=int, default=1 << 16, help="table rows per player")
  args = ap.parse_args(argv)
  try:
    games = [jaxgt.games.make_from_string(g) for g in args.games.split(";") if g.strip()]
    batches = [int(b) for b in args.batches.split(",") if b.strip()]
    selections = [s for s in args.selections.split(",") if s.strip()]
    if not batches or min(batches) < 1:
      raise ValueError(f"--batches must be positive integers, got {args.batches!r}")
    if set(selections) - set(SELECTION) or not selections:
      raise ValueError(f"--selections must be among {SELECTION}, got {args.selections!r}")
    if args.simulations < 1 or args.capacity < 1:
      raise ValueError("--simulations and --capacity must be positive")
  except ValueError as e:
    ap.error(str(e))
  for game in games:
    path, depth = match_position(game, DECISIONS.get(game.name, 2))
    rules = Rules(game)
    for batch in batches:
      steps = max(2, args.simulations // batch)
      for selection in selections:
        cfg = ISMCTS(selection=selection, batch=batch)
        state = cfg.init(rules, capacity=args.capacity)
        t0 = time.perf_counter()
        jax.block_until_ready(cfg.run(rules, state, steps, jax.random.key(0), path=path))
        compile_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        out = jax.block_until_ready(cfg.run(rules, state, steps, jax.random.key(1), path=path))
        rate = steps * batch / (time.perf_counter() - t0)
        stats = table_stats(out.tables)
        print(f"{game.game_string():32s} {selection:3s} batch {batch:5d}: {rate:10,.0f} sims/s "
              f"(first call {compile_s:.1f} s; position at step {depth}; rows {stats['rows']}, "
              f"refused {stats['refused']}, skipped {int(out.skipped)})", flush=True)
        figure("ismcts simulations", rate, "sims/s", game=game.game_string(),
               selection=selection, batch=batch)
        figure("ismcts first call", compile_s, "s", higher_is_better=False,
               game=game.game_string(), selection=selection, batch=batch)


if __name__ == "__main__":
  main()
