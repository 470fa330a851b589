"""Sampled trajectories per second of batched MCCFR against OpenSpiel's C++ MCCFR.

For each game and sampler (outcome ``os``, external ``es``) and each batch
size: compile time (``run(tree, state, 0)``), steady-state trajectories per
second (a step is ``2 * batch`` trajectories, one per player each), and the
ratio to ``pyspiel.OutcomeSamplingMCCFRSolver`` /
``ExternalSamplingMCCFRSolver`` (one ``run_iteration()`` = 2 trajectories)
timed in the same run. Then, at an equal number of trajectories
(``--samples``), the exploitability (NashConv / 2) of the average policy and
the seconds it took, ours at each of ``--convergence-batches`` and
OpenSpiel's: convergence per sample and per second. A batch is one regret
update, so at a fixed sample count very large batches make few updates and
converge less per sample; with thousands of updates they match OpenSpiel.

  python benchmarks/sampling_speed.py [--games kuhn_poker,leduc_poker]
      [--batches 1,4,16,64,256,1024,4096] [--seconds 1.0] [--samples 2000000]
      [--convergence-batches 16,256,4096] [--no-liars-dice]
"""

from __future__ import annotations

import argparse
import time

import jax

import jaxgt
from jaxgt.bench_report import figure
from jaxgt.solvers import mccfr
from jaxgt.core import sequence_form as sf

OS_NAMES = {"os": "OutcomeSamplingMCCFRSolver", "es": "ExternalSamplingMCCFRSolver"}
BENCH_QUICK = ["--games", "leduc_poker", "--kinds", "os", "--batches", "16,1024",
               "--seconds", "0.3", "--no-liars-dice", "--samples", "20000",
               "--convergence-batches", "64"]


def throughput(run, state, per_step: int, seconds: float, warmup_steps: int = 1):
  """``(compile s, units/s)`` of ``run(state, steps) -> state``, ``per_step`` units a step.

  The first call (``warmup_steps`` steps) compiles; the number of steps then
  grows until one timed call lasts ``seconds``.
  """
  t0 = time.perf_counter()
  state = jax.block_until_ready(run(state, warmup_steps))
  compile_s = time.perf_counter() - t0
  steps = 1
  while True:
    t0 = time.perf_counter()
    state = jax.block_until_ready(run(state, steps))
    dt = time.perf_counter() - t0
    if dt >= seconds or steps >= 1 << 24:
      return compile_s, per_step * steps / dt
    steps *= 4 if dt < seconds / 8 else 2


def _ours(game: str, kind: str, batch: int, seconds: float):
  tree = jaxgt.load(game).device_tree("float32")
  solver = mccfr.make_sampling_solver(f"mccfr-{kind}", batch=batch)
  key = jax.random.key(0)
  return throughput(lambda st, n: solver.run(tree, st, n, key), solver.init(tree),
                    2 * batch, seconds, warmup_steps=0)


def _openspiel(pyspiel, game: str, kind: str, seconds: float) -> float:
  solver = getattr(pyspiel, OS_NAMES[kind])(pyspiel.load_game(game))
  n = 16
  while True:
    t0 = time.perf_counter()
    for _ in range(n):
      solver.run_iteration()
    dt = time.perf_counter() - t0
    if dt >= seconds:
      return 2 * n / dt
    n *= 2


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


def main(argv=None):
  ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  ap.add_argument("--games", default="kuhn_poker,leduc_poker")
  ap.add_argument("--kinds", default="os,es")
  ap.add_argument("--batches", default="1,4,16,64,256,1024,4096")
  ap.add_argument("--seconds", type=float, default=1.0, help="minimum timed interval")
  ap.add_argument("--no-liars-dice", dest="liars_dice", action="store_false",
                  help="skip liars_dice(numdice=1) even when it is registered")
  ap.add_argument("--samples", type=int, default=2_000_000,
                  help="trajectories for the equal-sample exploitability comparison")
  ap.add_argument("--convergence-batches", default="16,256,4096",
                  help="our batch sizes in the equal-sample comparison")
  args = ap.parse_args(argv)
  import pyspiel
  jax.config.update("jax_enable_x64", True)  # float64 exploitability; timings stay float32
  games = [g for g in args.games.split(",") if g]
  if args.liars_dice and "liars_dice" in jaxgt.games.registry():
    games.append("liars_dice(numdice=1)")  # OpenSpiel's liars_dice defaults to one die each
  batches = [int(b) for b in args.batches.split(",")]
  print(f"jax {jax.__version__} on {jax.devices()[0].platform}; trajectories/s "
        f"(a step is 2 x batch trajectories; an OpenSpiel iteration is 2)")
  for game in games:
    os_game = "liars_dice" if game.startswith("liars_dice") else game
    for kind in args.kinds.split(","):
      ref = _openspiel(pyspiel, os_game, kind, args.seconds)
      print(f"\n{game} mccfr-{kind}: OpenSpiel C++ {ref:,.0f} traj/s")
      print(f"{'batch':>6} {'compile s':>10} {'traj/s':>14} {'ratio':>8}")
      best = (0.0, batches[0])
      for b in batches:
        c, rate = _ours(game, kind, b, args.seconds)
        best = max(best, (rate, b))
        print(f"{b:>6} {c:>10.2f} {rate:>14,.0f} {rate / ref:>8.1f}x")
        figure(f"mccfr-{kind}", rate, "traj/s", game=game, batch=b,
               peer=f"OpenSpiel C++ {OS_NAMES[kind]}", peer_value=ref)
      print(f"fastest: batch {best[1]}; equal samples (exploitability, seconds; larger "
            f"batches make fewer regret updates per sample):")
      conv = [int(b) for b in args.convergence_batches.split(",") if b]
      for name, n, expl, dt in _convergence(pyspiel, os_game, kind, conv, args.samples):
        print(f"  {name:<18} {n:>12,} traj  exploitability {expl:.4f}  {dt:7.2f} s")
        figure(f"mccfr-{kind} exploitability at equal samples", expl, "NashConv/2",
               higher_is_better=False, game=game, run=name, samples=n)


if __name__ == "__main__":
  main()
