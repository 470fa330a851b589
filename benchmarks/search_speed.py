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

Device games (``--device-games``, too large to enumerate: limit hold'em,
Liar's Dice with two dice each, II-Goofspiel with 13 cards; with ``ismcts``
among the solvers): ``ISMCTS(selection, batch).run(Rules(game), state, n, key,
path=path)`` at each of ``--device-batches``, statistics in information-state
tables of ``--capacity`` rows per player (the state's buffers donated from one timing to
the next), from a match position reached by a
few moves (:func:`match_position`: chance by its probabilities, players among
their lowest legal actions that do not end the game; fixed seed), each
simulation determinized by sampling a state of the searcher's information
state. Peer: ``pyspiel.ISMCTSBot`` (as above, ``--device-peer-simulations``
a step) at the same position, the same actions replayed in OpenSpiel's form of
the game; OpenSpiel resamples an information state in universal_poker only,
so Liar's Dice and Goofspiel have no peer (listed as missing). Reported with
each row: the rows the tables hold (and refused), the simulations with no
determinization (skipped), and the bytes of one table row (one information
state of one player: key, hash slots and statistics; ``memory_bytes(rules, N)
/ 2N``).

  python benchmarks/search_speed.py [--games kuhn_poker,leduc_poker]
      [--solvers oos-ist,oos-pst,ismcts,uct,smooth-uct] [--batches 1,16,256]
      [--seconds 0.25] [--repeats 3] [--peer-simulations 1000] [--no-liars-dice] [--pin CORE]
      [--device-games "limit_holdem;liars_dice(numdice=2);ii_goofspiel(num_cards=13)"]
      [--device-batches 1,256,4096,65536] [--device-selections uct,rm] [--capacity 1048576]
      [--device-peer-simulations 200]
"""

from __future__ import annotations

import argparse
import os
import sys

import jax
import jax.numpy as jnp
import numpy as np

import jaxgt
from jaxgt.bench_report import add_pin_option, figure, missing_peer, pin_from_args
from jaxgt.games.base import CHANCE
from jaxgt.solvers import consistent
from jaxgt.solvers import uct as uct_lib
from jaxgt.solvers.ismcts import ISMCTS, SELECTION
from jaxgt.solvers.sources import Rules, table_stats
from jaxgt.core.targets import target_members
from jaxgt.solvers.oos import OOS

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sampling_speed import DEVICE_GAMES, _meter, call_meter, interleaved  # noqa: E402
from sampling_speed import check_device_options, openspiel_peer  # noqa: E402
from sampling_speed import _openspiel_meter as _openspiel_mccfr_meter  # noqa: E402  (OS-MCCFR)

SOLVERS = ("oos-ist", "oos-pst", "ismcts", "uct", "smooth-uct")
BENCH_QUICK = ["--games", "kuhn_poker", "--batches", "16", "--seconds", "0.2",
               "--peer-simulations", "200", "--no-liars-dice", "--device-games", "limit_holdem",
               "--device-batches", "256", "--capacity", "65536",
               "--device-peer-simulations", "100"]
DECISIONS = {"liars_dice": 2, "ii_goofspiel": 4, "limit_holdem": 3}  # moves before the search
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


def _openspiel_ismcts_meter(pyspiel, game, uct_c: float, sims: int, actions=None,
                            player=None):
  """``meter(seconds) -> sims/s`` of ``pyspiel.ISMCTSBot`` on ``game`` (a game string or a
  loaded game): ``bot.step`` at the first decision after the deal, or after ``actions``, where
  ``player`` (if given) must act (kept warm between calls)."""
  g = pyspiel.load_game(game) if isinstance(game, str) else game
  state = g.new_initial_state()
  if actions is None:
    while state.is_chance_node():
      state.apply_action(state.legal_actions()[0])
  for a in actions or ():
    state.apply_action(a)
  if state.is_chance_node() or state.is_terminal() or \
     player is not None and state.current_player() != player:
    raise ValueError(f"{g} after {actions}: player {state.current_player()} acts, not {player}")
  bot = pyspiel.ISMCTSBot(0, pyspiel.RandomRolloutEvaluator(1, 0), uct_c, sims,
                          final_policy_type=pyspiel.ISMCTSFinalPolicyType.MAX_VISIT_COUNT)
  bot.step(state)  # warm-up
  return call_meter(lambda: bot.step(state), sims)


def match_position(game, decisions: int, seed: int = 0):
  """``(SearchPath, actions)``: the position after ``decisions`` player moves from the root
  (chance by its probabilities, players among their three lowest legal actions that do not
  end the game) and the actions that reach it, chance outcomes included."""
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
  return consistent.search_path(game, jnp.asarray(padded), len(actions)), actions


def _device_rows(pyspiel, args, pinned: dict) -> None:
  """ISMCTS on device games through their rules against OpenSpiel's ISMCTSBot (module doc)."""
  games = [jaxgt.games.make_from_string(g) for g in args.device_games.split(";") if g.strip()]
  batches = [int(b) for b in args.device_batches.split(",") if b.strip()]
  selections = [s for s in args.device_selections.split(",") if s.strip()]
  key, peer_label = jax.random.key(0), "OpenSpiel C++ ISMCTSBot"
  for game in games:
    rules, name = Rules(game), game.game_string()
    path, actions = match_position(game, DECISIONS.get(game.name, 2))
    os_game, why = openspiel_peer(pyspiel, game)
    peer = why
    if os_game is not None:
      try:  # ours' UCT constant
        c = float(ISMCTS(selection="uct").exploration_constant(rules))
        peer = _openspiel_ismcts_meter(pyspiel, os_game, c, args.device_peer_simulations,
                                       actions, int(path.player))
      except (pyspiel.SpielError, ValueError) as e:
        peer = f"ISMCTSBot cannot search {os_game}: {str(e).splitlines()[0]}"
    missing = isinstance(peer, str)
    for selection in selections:
      solver = ISMCTS(selection=selection)
      per_row = solver.memory_bytes(rules, args.capacity) / (2 * args.capacity)
      note = ("" if missing or selection == "uct" else
              "; the peer selects by UCT, ours by regret matching")
      print(f"\n{name} ismcts-{selection} through the rules (sims/s at the position after "
            f"{len(actions)} moves {actions}; tables of {args.capacity:,} rows per player, "
            f"{per_row:.0f} bytes a row; {peer_label}" +
            (f" n/a: {peer})" if missing else f" at the same position, "
             f"{args.device_peer_simulations} simulations a step, timed between ours, "
             f"{args.repeats} alternating timings, medians{note})"))
      if missing:
        missing_peer(peer_label, peer, game=name, solver=f"ismcts-{selection}")
      print(f"{'batch':>6} {'compile s':>10} {'jaxgt':>14} {'OpenSpiel':>12} {'ratio':>8}  "
            f"table rows (refused), skipped")
      best = None
      for b in batches:
        cfg = ISMCTS(selection=selection, batch=b)
        state = cfg.init(rules, capacity=args.capacity)
        c, ours = _meter(lambda st, n, s=cfg: s.run(rules, st, n, key, path=path), state, b,
                         donate=True)
        if missing:
          rate, ref, ratio = ours(args.seconds), None, None
        else:
          rate, ref, ratio = interleaved(ours, peer, args.seconds, args.repeats)
        out = ours.state()
        stats = table_stats(out.tables)
        if best is None or rate > best[0]:
          best = (rate, b, ratio)
        ref_s, ratio_s = ("n/a", "n/a") if missing else (f"{ref:,.0f}", f"{ratio:.2f}x")
        print(f"{b:>6} {c:>10.2f} {rate:>14,.0f} {ref_s:>12} {ratio_s:>8}  "
              f"{stats['rows'][0]:,} + {stats['rows'][1]:,} ({sum(stats['refused']):,}), "
              f"{int(out.skipped):,}", flush=True)
        figure("ismcts", rate, "sims/s", game=name, batch=b, selection=selection,
               capacity=args.capacity, **pinned, peer=None if missing else peer_label,
               peer_value=None if missing else rate / ratio)
      print(f"fastest: batch {best[1]}, {best[0]:,.0f} sims/s" +
            ("" if best[2] is None else f", {best[2]:.2f}x OpenSpiel C++") +
            f"; {per_row:.0f} bytes per information state (table row)")
      figure("ismcts table bytes per information state", per_row, "bytes",
             higher_is_better=False, game=name, selection=selection)


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
  ap.add_argument("--device-games", default=DEVICE_GAMES,
                  help="';'-separated device games ISMCTS searches through their rules "
                       "('' for none)")
  ap.add_argument("--device-batches", default="1,256,4096,65536",
                  help="ISMCTS batch sizes on the device games")
  ap.add_argument("--device-selections", default="uct", help=f"subset of {','.join(SELECTION)}")
  ap.add_argument("--capacity", type=int, default=1 << 20,
                  help="table rows per player on the device games")
  ap.add_argument("--device-peer-simulations", type=int, default=200,
                  help="simulations per ISMCTSBot.step on the device games")
  add_pin_option(ap)
  args = ap.parse_args(argv)
  solvers = [s for s in args.solvers.split(",") if s]
  if bad := set(solvers) - set(SOLVERS):
    ap.error(f"unknown solvers {sorted(bad)}; choose from {','.join(SOLVERS)}")
  try:
    check_device_options(args)
    if set(args.device_selections.split(",")) - set(SELECTION):
      raise ValueError(f"--device-selections must be among {','.join(SELECTION)}, got "
                       f"{args.device_selections!r}")
    if args.capacity < 1 or args.device_peer_simulations < 1:
      raise ValueError("--capacity and --device-peer-simulations must be positive")
  except ValueError as e:
    ap.error(str(e))
  pinned = pin_from_args(ap, args)  # before JAX starts its CPU runtime; a figure's parameters
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
  if "ismcts" in solvers:
    _device_rows(pyspiel, args, pinned)


if __name__ == "__main__":
  main()
