"""Throughput of the online search solvers (OOS, ISMCTS, UCT / Smooth UCT) against OpenSpiel C++.

For each game, solver and batch size: compile time (the first call, one
step) and steady-state work per second, with the ratio to an OpenSpiel C++
peer timed in the same process, interleaved with ours (``--repeats``
alternating timings of each, the medians of each and of the per-repeat ratios:
the machine may be shared). ``--pin CORE`` runs both on one core, the
like-for-like comparison with a single-threaded peer
(:func:`jaxgt.bench_report.pin_to_core`). Peers:

* ``oos-ist`` / ``oos-pst``: ``OOS(targeting=...).run`` from the search
  position below; trajectories/s (an iteration is ``2 * batch``
  trajectories, one batch per update player). Peer:
  ``pyspiel.OutcomeSamplingMCCFRSolver`` trajectories/s (one
  ``run_iteration()`` = 2), the nearest peer: OpenSpiel has no OOS, and OOS is
  outcome sampling plus targeting and incremental tree building.
* ``ismcts``: ``ISMCTS(selection="uct").run`` from the search position;
  simulations/s (a step is ``batch`` simulations). Peer: ``pyspiel.ISMCTSBot``
  (random-rollout evaluator, same ``uct_c``, max-visit final policy),
  ``bot.step(state)`` at the same position, simulations/s. A like-for-like peer
  (the bot rebuilds its tree every step; ours carries its fixed-shape tables
  over, a simulation costs the same either way). OpenSpiel's liars_dice has no
  ``ResampleFromInfostate``, so ISMCTSBot is ``n/a`` there.
* ``uct`` / ``smooth-uct``: self-play ``run`` from the root (paper constants
  where known); episodes/s (a step is ``batch`` episodes). OpenSpiel's
  ``MCTSBot`` is perfect-information only, so the ratio is to outcome-sampling
  MCCFR trajectories/s, the nearest sampled peer (one root-to-leaf walk each).

The search position of OOS / ISMCTS is the first decision of player 0 after
the leftmost chance outcomes (the first card / die outcomes), in both
libraries. Without OpenSpiel the peer columns read ``n/a``.

  python benchmarks/search_speed.py [--games kuhn_poker,leduc_poker]
      [--solvers oos-ist,oos-pst,ismcts,uct,smooth-uct] [--batches 1,16,256]
      [--seconds 0.25] [--repeats 3] [--peer-simulations 1000] [--no-liars-dice] [--pin CORE]
"""

from __future__ import annotations

import argparse
import os
import sys

import jax
import numpy as np

import jaxgt
from jaxgt.bench_report import add_pin_option, figure, missing_peer, pin_from_args
from jaxgt.games.base import CHANCE
from jaxgt.solvers import uct as uct_lib
from jaxgt.solvers.ismcts import ISMCTS
from jaxgt.core.targets import target_members
from jaxgt.solvers.oos import OOS

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sampling_speed import _meter, call_meter, interleaved  # noqa: E402
from sampling_speed import _openspiel_meter as _openspiel_mccfr_meter  # noqa: E402  (OS-MCCFR)

SOLVERS = ("oos-ist", "oos-pst", "ismcts", "uct", "smooth-uct")
BENCH_QUICK = ["--games", "kuhn_poker", "--batches", "16", "--seconds", "0.2",
               "--peer-simulations", "200", "--no-liars-dice"]
UNIT = {"oos-ist": "traj", "oos-pst": "traj", "ismcts": "sims", "uct": "episodes",
        "smooth-uct": "episodes"}


def _first_decision(tree) -> int:
  """Index of the first player-0 decision below the leftmost chance outcomes."""
  pl, ch = np.asarray(tree.player), np.asarray(tree.children)
  h = 0
  while pl[h] == CHANCE:
    h = int(ch[h][ch[h] >= 0][0])
  assert pl[h] == 0, (h, pl[h])
  return h


def _ours(game: str, solver: str, batch: int):
  """``(compile s, meter)`` of one of our solvers (``sampling_speed._meter``: ``meter(seconds)``
  times one call of at least ``seconds`` and returns units/s)."""
  tree = jaxgt.load(game).device_tree("float32")
  key = jax.random.key(0)
  if solver.startswith("oos"):
    s = OOS(targeting=solver[4:], batch=batch)
    h, members = _first_decision(tree), target_members(tree, s.targeting)
    run = lambda st, n: s.run(tree, st, n, key, history=h, members=members)
    return _meter(run, s.init(tree), 2 * batch)
  if solver == "ismcts":
    s = ISMCTS(selection="uct", batch=batch)
    h, members = _first_decision(tree), target_members(tree, "ist")
    run = lambda st, n: s.run(tree, st, n, key, history=h, members=members)
    return _meter(run, s.init(tree), batch)
  consts = uct_lib.PAPER_CONSTANTS[solver].get(game, {})
  s = (uct_lib.uct if solver == "uct" else uct_lib.smooth_uct)(**consts, batch=batch)
  return _meter(lambda st, n: s.run(tree, st, n, key), s.init(tree), batch)


def _openspiel_ismcts_meter(pyspiel, game: str, uct_c: float, sims: int):
  """``meter(seconds) -> sims/s`` of ``pyspiel.ISMCTSBot``: ``bot.step`` at the first decision
  after the deal (kept warm between calls)."""
  g = pyspiel.load_game(game)
  state = g.new_initial_state()
  while state.is_chance_node():
    state.apply_action(state.legal_actions()[0])
  bot = pyspiel.ISMCTSBot(0, pyspiel.RandomRolloutEvaluator(1, 0), uct_c, sims,
                          final_policy_type=pyspiel.ISMCTSFinalPolicyType.MAX_VISIT_COUNT)
  bot.step(state)  # warm-up
  return call_meter(lambda: bot.step(state), sims)


def main(argv=None):
  ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  ap.add_argument("--games", default="kuhn_poker,leduc_poker")
  ap.add_argument("--solvers", default=",".join(SOLVERS), help=f"subset of {','.join(SOLVERS)}")
  ap.add_argument("--batches", default="1,16,256")
  ap.add_argument("--seconds", type=float, default=0.25, help="minimum timed interval")
  ap.add_argument("--repeats", type=int, default=3,
                  help="alternating timings of ours and the peer per row (medians reported)")
  ap.add_argument("--peer-simulations", type=int, default=1000,
                  help="simulations per ISMCTSBot.step")
  ap.add_argument("--no-liars-dice", dest="liars_dice", action="store_false",
                  help="skip liars_dice(numdice=1) even when it is registered")
  add_pin_option(ap)
  args = ap.parse_args(argv)
  pinned = pin_from_args(ap, args)  # before JAX starts its CPU runtime; a figure's parameters
  solvers = [s for s in args.solvers.split(",") if s]
  if bad := set(solvers) - set(SOLVERS):
    ap.error(f"unknown solvers {sorted(bad)}; choose from {','.join(SOLVERS)}")
  try:
    import pyspiel
  except ImportError:
    pyspiel = None
  games = [g for g in args.games.split(",") if g]
  if args.liars_dice and "liars_dice" in jaxgt.games.registry():
    games.append("liars_dice(numdice=1)")  # OpenSpiel's liars_dice defaults to one die each
  batches = [int(b) for b in args.batches.split(",")]
  where = "" if args.pin is None else f" (pinned to core {args.pin})"
  print(f"jax {jax.__version__} on {jax.devices()[0].platform}{where}; "
        f"OpenSpiel {'present' if pyspiel else 'absent (peer columns n/a)'}")
  print("units: traj = sampled trajectories (OOS: 2 x batch per iteration), sims = ISMCTS "
        "simulations, episodes = UCT self-play episodes.\npeers: ISMCTSBot = OpenSpiel C++ "
        "ISMCTS (like for like); OS-MCCFR = OpenSpiel C++ OutcomeSamplingMCCFRSolver "
        "traj/s, the nearest peer\n(OpenSpiel has no OOS; OOS is outcome sampling with "
        "targeting; its MCTSBot is perfect-information only, so no UCT peer).")
  for game in games:
    os_game = "liars_dice" if game.startswith("liars_dice") else game
    peers = {}  # a warm OpenSpiel meter, or why there is none; one of each per game
    for solver in solvers:
      peer = "ISMCTSBot" if solver == "ismcts" else "OS-MCCFR"
      if peer not in peers:
        peers[peer] = "n/a (no pyspiel)"
        try:
          if pyspiel and peer == "ISMCTSBot":
            c = float(ISMCTS().exploration_constant(jaxgt.load(game).tree))  # ours' uct_c
            peers[peer] = _openspiel_ismcts_meter(pyspiel, os_game, c, args.peer_simulations)
          elif pyspiel:
            peers[peer] = _openspiel_mccfr_meter(pyspiel, os_game, "os")
        except pyspiel.SpielError as e:
          peers[peer] = f"n/a ({e})"
      peer_meter, unit = peers[peer], UNIT[solver]
      missing = isinstance(peer_meter, str)
      print(f"\n{game} {solver} ({unit}/s; OpenSpiel C++ {peer}"
            + (f" {peer_meter})" if missing else f" timed between ours, {args.repeats} "
               "alternating timings, medians)"))
      ratio_h = f"ours/{peer}" + ("" if solver == "ismcts" else " (nearest peer)")
      w = len(ratio_h) + 2
      print(f"{'batch':>6} {'compile s':>10} {'jaxgt':>14} {'OpenSpiel':>12} {ratio_h:>{w}}")
      for b in batches:
        c, ours = _ours(game, solver, b)
        if missing:
          rate, ref, ratio = ours(args.seconds), None, None
          missing_peer(f"OpenSpiel C++ {peer}", peer_meter, game=game, solver=solver)
        else:
          rate, ref, ratio = interleaved(ours, peer_meter, args.seconds, args.repeats)
        ref_s, ratio_s = ("n/a", "n/a") if missing else (f"{ref:,.0f}", f"{ratio:.2f}x")
        print(f"{b:>6} {c:>10.2f} {rate:>14,.0f} {ref_s:>12} {ratio_s:>{w}}", flush=True)
        figure(solver, rate, f"{unit}/s", game=game, batch=b, **pinned,
               peer=None if missing else f"OpenSpiel C++ {peer}",
               peer_value=None if missing else rate / ratio)


if __name__ == "__main__":
  main()
