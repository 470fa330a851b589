"""Sampled trajectories per second of batched MCCFR against OpenSpiel's C++ MCCFR.

For each game and sampler (outcome ``os``, external ``es``) and each batch
size: compile time (``run(tree, state, 0)``), steady-state trajectories per
second (a step is ``2 * batch`` trajectories, one per player each; for
external sampling a trajectory is one traversal), and the ratio to
``pyspiel.OutcomeSamplingMCCFRSolver`` / ``ExternalSamplingMCCFRSolver``
(one ``run_iteration()`` = 2 trajectories) timed in the same process,
interleaved with ours: ``--repeats`` alternating timings of each, the median
of each and the median of the per-repeat ratios (the machine may be shared).
Then, at an equal number of trajectories (``--samples``), the exploitability
(NashConv / 2) of the average policy and the seconds it took, ours at each of
``--convergence-batches`` and OpenSpiel's: convergence per sample and per
second. A batch is one regret update, so at a fixed sample count very large
batches make few updates and converge less per sample; with thousands of
updates they match OpenSpiel.

Device games (``--device-games``, games too large to enumerate: limit
hold'em, Liar's Dice with two dice each, II-Goofspiel with 13 cards): outcome
sampling from the root through the game's rules
(``mccfr.outcome_sampling(batch=B).init(Rules(game), capacity=N)``, regrets
and averages in information-state tables of ``--capacity`` rows per player),
trajectories/s at each of ``--device-batches`` against
``pyspiel.OutcomeSamplingMCCFRSolver`` on the same game
(``game.openspiel_game_string()``; II-Goofspiel's point cards are worth
``0..N-1``, OpenSpiel's ``1..N``: the same tree with other payoffs), timed
interleaved as above; each timing continues the run of the one before it, its state's
buffers donated (no copy of the tables before a timing). OpenSpiel's solver keeps every information state it
meets in a hash map (about 2.7 KB an iteration on hold'em), so it is built
fresh for each row and times at most ``--peer-iterations`` iterations at a
time. Reported: the ratio at the fastest batch, the rows the tables filled
(and refused, once full), and the bytes of one table row (one information
state of one player: key, hash slots, regrets and averages;
``memory_bytes(rules, N) / 2N``).

  python benchmarks/sampling_speed.py [--games kuhn_poker,leduc_poker]
      [--batches 1,4,16,64,256,1024,4096] [--seconds 1.0] [--repeats 3]
      [--samples 2000000] [--convergence-batches 16,256,4096] [--no-liars-dice]
      [--device-games "limit_holdem;liars_dice(numdice=2);ii_goofspiel(num_cards=13)"]
      [--device-batches 1,256,4096,65536] [--capacity 1048576] [--peer-iterations 20000]
"""

from __future__ import annotations

import argparse
import inspect
import statistics
import time

import jax
import jax.numpy as jnp

import jaxgt
from jaxgt.bench_report import add_pin_option, figure, missing_peer, pin_from_args
from jaxgt.games.goofspiel import Goofspiel
from jaxgt.solvers import mccfr
from jaxgt.solvers.sources import Rules, table_stats
from jaxgt.core import sequence_form as sf

OS_NAMES = {"os": "OutcomeSamplingMCCFRSolver", "es": "ExternalSamplingMCCFRSolver"}
DEVICE_GAMES = "limit_holdem;liars_dice(numdice=2);ii_goofspiel(num_cards=13)"
BENCH_QUICK = ["--games", "leduc_poker", "--kinds", "os", "--batches", "16,1024",
               "--seconds", "0.3", "--no-liars-dice", "--samples", "20000",
               "--convergence-batches", "64", "--device-games", "limit_holdem",
               "--device-batches", "1024", "--capacity", "65536", "--peer-iterations", "5000"]


def _meter(run, state, per_step: int, warmup_steps: int = 1, donate: bool = False):
  """``(compile s, meter)``: ``meter(seconds)`` times one call of at least ``seconds`` (the step
  count grows on the first call and is kept) and returns units/s. ``donate``: each call hands
  its state's buffers to the next (``run`` is jitted with the state donated), so a timing
  does not copy the state first (a device game's tables: hundreds of MB on the CPU)."""
  if donate:  # its own buffers first (a fresh state may hold one array twice)
    run = jax.jit(run, donate_argnums=0)
    state = jax.tree_util.tree_map(jnp.copy, state)
  t0 = time.perf_counter()
  box = [jax.block_until_ready(run(state, warmup_steps)), 1]
  compile_s = time.perf_counter() - t0

  def meter(seconds: float) -> float:
    while True:
      t0 = time.perf_counter()
      box[0] = jax.block_until_ready(run(box[0], box[1]))
      dt = time.perf_counter() - t0
      if dt >= seconds or box[1] >= 1 << 24:
        return per_step * box[1] / dt
      box[1] *= 4 if dt < seconds / 8 else 2

  meter.state = lambda: box[0]  # the run's state after the latest timing
  return compile_s, meter


def _ours(game: str, kind: str, batch: int):
  """``(compile s, meter)`` of our sampler (:func:`_meter`)."""
  tree = jaxgt.load(game).device_tree("float32")
  solver = mccfr.make_sampling_solver(f"mccfr-{kind}", batch=batch)
  key = jax.random.key(0)
  return _meter(lambda st, n: solver.run(tree, st, n, key), solver.init(tree), 2 * batch,
                warmup_steps=0)


def call_meter(call, units: float, start: int = 1, cap: int | None = None):
  """``meter(seconds) -> units/s`` of ``call()`` repeated (``units`` each): the repeat count
  doubles until one timing lasts ``seconds`` (or reaches ``cap`` calls), and is kept for the
  next timing."""
  box = [start if cap is None else min(start, cap)]

  def meter(seconds: float) -> float:
    while True:
      n = box[0]
      t0 = time.perf_counter()
      for _ in range(n):
        call()
      dt = time.perf_counter() - t0
      if dt >= seconds or (cap is not None and n >= cap):
        return units * n / dt
      box[0] = 2 * n if cap is None else min(2 * n, cap)

  return meter


def _openspiel_meter(pyspiel, game, kind: str, cap: int | None = None):
  """``meter(seconds) -> traj/s`` of one OpenSpiel solver (kept warm between calls) on
  ``game`` (a game string or a loaded game); ``cap``: most iterations a timing runs."""
  if isinstance(game, str):
    game = pyspiel.load_game(game)
  solver = getattr(pyspiel, OS_NAMES[kind])(game)
  meter = call_meter(solver.run_iteration, 2, start=16, cap=cap)
  meter(seconds=0.05)  # warm: the solver's tables fill during the first iterations
  return meter


def openspiel_peer(pyspiel, game):
  """``(pyspiel game, note)``: OpenSpiel's form of device game ``game`` and how it differs
  (``""``: the same game), or ``(None, why there is none)``."""
  text, note = game.openspiel_game_string(), ""
  if text is None and isinstance(game, Goofspiel) and game.points_base != 1:
    same_tree = jaxgt.games.make("goofspiel", num_cards=game.num_cards, points_base=1,
                                 returns_type=game.params["returns_type"],
                                 points_order=game.params["points_order"])
    text = same_tree.openspiel_game_string()
    note = (f"point cards worth 1..{game.num_cards} for 0..{game.num_cards - 1}: the same "
            "tree, other payoffs")
  if text is None:
    return None, f"OpenSpiel has no equivalent of {game.game_string()}"
  if pyspiel is None:
    return None, "pyspiel is not installed"
  try:
    return pyspiel.load_game(text), note
  except pyspiel.SpielError as e:
    return None, f"OpenSpiel cannot load {text}: {str(e).splitlines()[0]}"


def _device_rows(pyspiel, args, pinned: dict) -> None:
  """Outcome sampling on device games through their rules against OpenSpiel (module doc)."""
  games = [jaxgt.games.make_from_string(g) for g in args.device_games.split(";") if g.strip()]
  if not games:
    return
  if "capacity" not in inspect.signature(mccfr.OutcomeSampling.init).parameters:
    print("\ndevice games: skipped; this jaxgt's MCCFR runs on compiled trees only "
          "(OutcomeSampling.init takes no capacity, so no Rules(game))")
    return
  batches = [int(b) for b in args.device_batches.split(",") if b.strip()]
  key = jax.random.key(0)
  for game in games:
    rules, name = Rules(game), game.game_string()
    solver = mccfr.outcome_sampling()
    per_row = solver.memory_bytes(rules, args.capacity) / (2 * args.capacity)
    os_game, note = openspiel_peer(pyspiel, game)
    peer_label = "OpenSpiel C++ OutcomeSamplingMCCFRSolver"
    print(f"\n{name} mccfr-os through the rules (traj/s from the root; tables of "
          f"{args.capacity:,} rows per player, {per_row:.0f} bytes a row; " +
          (f"{peer_label} on {os_game}" + (f" ({note})" if note else "") +
           f", fresh for each row, at most {args.peer_iterations:,} iterations a timing, "
           f"{args.repeats} alternating timings, medians)" if os_game else
           f"no peer: {note})"))
    if os_game is None:
      missing_peer(peer_label, note, game=name, solver="mccfr-os")
    print(f"{'batch':>6} {'compile s':>10} {'jaxgt':>14} {'OpenSpiel':>12} {'ratio':>8}  "
          f"table rows (refused)")
    best = None
    for b in batches:
      solver = mccfr.outcome_sampling(batch=b)
      state = solver.init(rules, capacity=args.capacity)
      c, ours = _meter(lambda st, n, s=solver: s.run(rules, st, n, key), state, 2 * b,
                       warmup_steps=0, donate=True)
      if os_game is None:
        rate, ref, ratio = ours(args.seconds), None, None
      else:
        peer = _openspiel_meter(pyspiel, os_game, "os", cap=args.peer_iterations)
        rate, ref, ratio = interleaved(ours, peer, args.seconds, args.repeats)
      stats = table_stats(ours.state().tables)
      if best is None or rate > best[0]:
        best = (rate, b, ratio)
      ref_s, ratio_s = ("n/a", "n/a") if ref is None else (f"{ref:,.0f}", f"{ratio:.2f}x")
      print(f"{b:>6} {c:>10.2f} {rate:>14,.0f} {ref_s:>12} {ratio_s:>8}  "
            f"{stats['rows'][0]:,} + {stats['rows'][1]:,} ({sum(stats['refused']):,})",
            flush=True)
      figure("mccfr-os", rate, "traj/s", game=name, batch=b, capacity=args.capacity, **pinned,
             peer=None if ref is None else peer_label,
             peer_value=None if ref is None else rate / ratio)
    print(f"fastest: batch {best[1]}, {best[0]:,.0f} traj/s" +
          ("" if best[2] is None else f", {best[2]:.2f}x OpenSpiel C++") +
          f"; {per_row:.0f} bytes per information state (table row)")
    figure("mccfr-os table bytes per information state", per_row, "bytes",
           higher_is_better=False, game=name)


def interleaved(ours, peer, seconds: float, repeats: int):
  """``(ours, peer, ratio)``: medians of ``repeats`` alternating timings and of their ratios."""
  pairs = [(peer(seconds), ours(seconds)) for _ in range(repeats)]
  return (statistics.median(o for _, o in pairs), statistics.median(p for p, _ in pairs),
          statistics.median(o / p for p, o in pairs))


def _convergence(pyspiel, game: str, kind: str, batches, samples: int, seed: int = 0):
  """Exploitability after ``samples`` trajectories and the seconds it took:
  ours (float64) at each batch size, then OpenSpiel's (its own wall clock)."""
  tree = jaxgt.load(game).device_tree("float64")
  rows = []
  for batch in batches:
    solver = mccfr.make_sampling_solver(f"mccfr-{kind}", batch=batch, dtype="float64")
    steps = max(1, samples // (2 * batch))
    state, key = solver.init(tree), jax.random.key(seed)
    jax.block_until_ready(solver.run(tree, state, 0, key))  # compile outside the timing
    t0 = time.perf_counter()
    state = jax.block_until_ready(solver.run(tree, state, steps, key))
    dt = time.perf_counter() - t0
    rows.append((f"jaxgt batch {batch}", 2 * steps * batch,
                 float(sf.exploitability(tree, solver.average_policy(tree, state))), dt))
  os_game = pyspiel.load_game(game)
  ref = getattr(pyspiel, OS_NAMES[kind])(os_game, seed=seed)
  t0 = time.perf_counter()
  for _ in range(max(1, samples // 2)):
    ref.run_iteration()
  dt = time.perf_counter() - t0
  rows.append(("OpenSpiel C++", 2 * max(1, samples // 2),
               pyspiel.exploitability(os_game, ref.average_policy()), dt))
  return rows


def check_device_options(args) -> None:
  """``ValueError`` unless ``--device-games`` parse as games and ``--device-batches`` are
  positive integers (checked before any work; ``search_speed`` shares it)."""
  for g in args.device_games.split(";"):
    if g.strip():
      jaxgt.games.make_from_string(g)
  if min([int(b) for b in args.device_batches.split(",") if b.strip()] or [0]) < 1:
    raise ValueError(f"--device-batches must be positive integers, got {args.device_batches!r}")


def main(argv=None):
  ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  ap.add_argument("--games", default="kuhn_poker,leduc_poker")
  ap.add_argument("--kinds", default="os,es")
  ap.add_argument("--batches", default="1,4,16,64,256,1024,4096")
  ap.add_argument("--seconds", type=float, default=1.0, help="minimum timed interval")
  ap.add_argument("--repeats", type=int, default=3,
                  help="alternating timings of ours and the peer per batch (medians reported)")
  ap.add_argument("--no-liars-dice", dest="liars_dice", action="store_false",
                  help="skip liars_dice(numdice=1) even when it is registered")
  ap.add_argument("--samples", type=int, default=2_000_000,
                  help="trajectories for the equal-sample exploitability comparison")
  ap.add_argument("--convergence-batches", default="16,256,4096",
                  help="our batch sizes in the equal-sample comparison")
  ap.add_argument("--device-games", default=DEVICE_GAMES,
                  help="';'-separated device games run through their rules ('' for none)")
  ap.add_argument("--device-batches", default="1,256,4096,65536",
                  help="batch sizes on the device games")
  ap.add_argument("--capacity", type=int, default=1 << 20,
                  help="table rows per player on the device games")
  ap.add_argument("--peer-iterations", type=int, default=20000,
                  help="most OpenSpiel iterations a timing runs on a device game")
  add_pin_option(ap)
  args = ap.parse_args(argv)
  try:
    check_device_options(args)
    if args.capacity < 1 or args.peer_iterations < 1:
      raise ValueError("--capacity and --peer-iterations must be positive")
  except ValueError as e:
    ap.error(str(e))
  pinned = pin_from_args(ap, args)  # before JAX starts its CPU runtime; a figure's parameters
  import pyspiel
  games = [g for g in args.games.split(",") if g]
  if args.liars_dice and "liars_dice" in jaxgt.games.registry():
    games.append("liars_dice(numdice=1)")  # OpenSpiel's liars_dice defaults to one die each
  batches = [int(b) for b in args.batches.split(",")]
  where = "" if args.pin is None else f" (pinned to core {args.pin})"
  print(f"jax {jax.__version__} on {jax.devices()[0].platform}{where}; trajectories/s "
        f"(a step is 2 x batch trajectories; an OpenSpiel iteration is 2)")
  _device_rows(pyspiel, args, pinned)  # float32 and int32, before 64-bit is switched on
  jax.config.update("jax_enable_x64", True)  # float64 exploitability; timings stay float32
  for game in games:
    os_game = "liars_dice" if game.startswith("liars_dice") else game
    for kind in args.kinds.split(","):
      unit = "traversals/s" if kind == "es" else "traj/s"
      peer = _openspiel_meter(pyspiel, os_game, kind)
      print(f"\n{game} mccfr-{kind} ({unit}; OpenSpiel C++ {OS_NAMES[kind]} timed between "
            f"ours, {args.repeats} alternating timings, medians)")
      print(f"{'batch':>6} {'compile s':>10} {'jaxgt':>14} {'OpenSpiel':>12} {'ratio':>8}")
      best = (0.0, batches[0])
      for b in batches:
        c, ours = _ours(game, kind, b)
        rate, ref, ratio = interleaved(ours, peer, args.seconds, args.repeats)
        best = max(best, (rate, b))
        print(f"{b:>6} {c:>10.2f} {rate:>14,.0f} {ref:>12,.0f} {ratio:>8.1f}x")
        figure(f"mccfr-{kind}", rate, "traj/s", game=game, batch=b, **pinned,
               peer=f"OpenSpiel C++ {OS_NAMES[kind]}", peer_value=rate / ratio)
      print(f"fastest: batch {best[1]}; equal samples (exploitability, seconds; larger "
            f"batches make fewer regret updates per sample):")
      conv = [int(b) for b in args.convergence_batches.split(",") if b]
      for name, n, expl, dt in _convergence(pyspiel, os_game, kind, conv, args.samples):
        print(f"  {name:<18} {n:>12,} traj  exploitability {expl:.4f}  {dt:7.2f} s")
        figure(f"mccfr-{kind} exploitability at equal samples", expl, "NashConv/2",
               higher_is_better=False, game=game, run=name, samples=n)


if __name__ == "__main__":
  main()
