"""Scaling curves: CFR+ cost against game size, batch size and device count.

For each game (default: Leduc, GP variants, II-GS(5..7), LD(1,1) and larger
Liar's Dice variants; a game over ``--max-histories`` is reported as
refused): enumeration time and the growth of resident memory while
enumerating (in a forked child, sampled at every progress report), the
compiled arrays' bytes, CFR+ compile time, time per iteration (with OpenSpiel
C++ and LiteEFG CFR+ timed in the same run where the game exists in
OpenSpiel) and the memory XLA plans for one iteration (arguments + outputs +
temporaries, from ``memory_analysis``), each also per history, so one sees
where a cost grows faster than the game. From the largest game's bytes per
history it extrapolates how many histories fit in ``--memory-gib`` (24 by
default) for one CFR+ iteration, and
for enumeration. Then batched CFR+ throughput against batch size, and against
device count (``jaxgt.sharding.run_batch`` in subprocesses with
``--xla_force_host_platform_device_count=d``: emulated devices share the host's
cores, so this measures sharding overhead here and scaling on real devices).

  python benchmarks/scaling.py [--games "leduc_poker;liars_dice(numdice=1)"]
      [--iterations 50] [--batches 1,4,16,64,256] [--devices 1,2,4,8]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

import jax
import numpy as np

import jaxgt
from jaxgt.bench_report import PEER_INSTALL, figure, missing_peer
from jaxgt.core import compiler
from jaxgt.games import make_from_string
from jaxgt.solvers import cfr as cfr_lib

DEFAULT_GAMES = ("leduc_poker;generic_poker(T=4,C=1,R=2,B=1);generic_poker;"
                 "goofspiel(num_cards=5);goofspiel(num_cards=6);goofspiel(num_cards=7);"
                 "liars_dice(numdice=1);liars_dice(numdice=2,numdice2=1,dice_sides=4);"
                 "liars_dice(numdice=1,dice_sides=8)")
BENCH_QUICK = ["--games", "kuhn_poker;leduc_poker", "--iterations", "20",
               "--batches", "1,64", "--batch-game", "kuhn_poker", "--devices", "1,2",
               "--peer-seconds", "0.2"]


def _rss() -> int:
  """Resident bytes of this process now (Linux); the peak so far elsewhere."""
  try:
    with open("/proc/self/statm") as f:
      return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
  except OSError:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _split(text: str) -> list:
  out, depth, cur = [], 0, ""
  for ch in text:
    depth += (ch == "(") - (ch == ")")
    if ch == ";" and depth == 0:
      out.append(cur)
      cur = ""
    else:
      cur += ch
  return [s.strip() for s in out + [cur] if s.strip()]


def _memory_bytes(fn, *args) -> int | None:
  """Arguments + outputs + temporaries XLA plans for ``jax.jit(fn)(*args)``."""
  try:
    m = jax.jit(fn).lower(*args).compile().memory_analysis()
  except Exception:  # a backend without memory analysis
    return None
  if m is None:
    return None
  return int(m.argument_size_in_bytes + m.output_size_in_bytes + m.temp_size_in_bytes
             - m.alias_size_in_bytes)


def enumeration_cost(name: str, max_histories: int) -> tuple:
  """``(seconds, bytes)`` of enumerating ``name`` in a forked child of this process.

  The child starts from this process's memory, so the growth of its resident
  memory (sampled at every progress report and at the end) is the
  enumeration's, not blurred by memory earlier games freed into the
  allocator. Call it before any JAX computation (fork after JAX has started
  threads is unsafe). Errors come back as the exception's text.
  """
  read, write = os.pipe()
  pid = os.fork()
  if pid == 0:  # child: enumerate, report, exit without cleanup
    os.close(read)
    try:
      rss0 = _rss()
      samples = [rss0]
      t0 = time.perf_counter()
      compiler.compile_game(make_from_string(name, max_histories), max_histories=max_histories,
                            progress_seconds=0.0,
                            progress=lambda report: samples.append(report.rss_bytes))
      msg = {"seconds": time.perf_counter() - t0,
             "bytes": max(max(samples + [_rss()]) - rss0, 0)}
    except Exception as e:  # reported to the parent
      msg = {"error": f"{type(e).__name__}: {e}"}
    os.write(write, json.dumps(msg).encode())
    os._exit(0)
  os.close(write)
  with os.fdopen(read) as f:
    msg = json.loads(f.read() or '{"error": "the enumeration child died"}')
  os.waitpid(pid, 0)
  if "error" in msg:
    raise ValueError(msg["error"])
  return msg["seconds"], msg["bytes"]


def game_row(name: str, iterations: int, max_histories: int, enumeration: tuple) -> dict:
  """Enumeration (``enumeration_cost``'s) and CFR+ costs of one game (module doc)."""
  enum_s, enum_peak = enumeration
  g = jaxgt.load(name, max_histories)
  tree = jax.device_put(g.device_tree("float32"))
  solver = cfr_lib.cfr_plus()
  state = solver.init(tree)
  t0 = time.perf_counter()
  jax.block_until_ready(solver.run(tree, state, 0).regrets)
  compile_s = time.perf_counter() - t0
  t0 = time.perf_counter()
  jax.block_until_ready(solver.run(tree, state, iterations).regrets)
  ms = 1e3 * (time.perf_counter() - t0) / iterations
  mem = _memory_bytes(lambda t, s: solver.run(t, s, 1), tree, state)
  return {"game": g.name, "histories": g.tree.num_histories, "terminals": g.tree.num_terminals,
          "infostates": sum(g.tree.num_infostates), "enumeration_s": enum_s,
          "enumeration_peak_bytes": enum_peak, "array_bytes": g.nbytes, "compile_s": compile_s,
          "ms_per_iteration": ms, "iteration_bytes": mem}


def _timed_loop(step, seconds: float) -> float:
  """Milliseconds per call of ``step()``, called until ``seconds`` have passed (at least twice)."""
  step()  # first call builds tables
  n, t0 = 0, time.perf_counter()
  while n < 2 or time.perf_counter() - t0 < seconds:
    step()
    n += 1
  return 1e3 * (time.perf_counter() - t0) / n


def peer_ms(peer: str, os_name: str, seconds: float) -> float:
  """CFR+ ms/iteration of a peer on the OpenSpiel game ``os_name`` in this process.

  ``OpenSpiel C++``: ``pyspiel.CFRPlusSolver``; ``LiteEFG``: its CFR+ baseline
  graph on ``OpenSpielEnv`` (enumerated traversal). Raises ImportError when
  the peer is not installed.
  """
  import pyspiel
  game = pyspiel.load_game(os_name)
  if peer == "OpenSpiel C++":
    solver = pyspiel.CFRPlusSolver(game)
    return _timed_loop(solver.evaluate_and_update_policy, seconds)
  import contextlib
  import io
  import LiteEFG
  from LiteEFG.baselines.CFRplus import graph
  with contextlib.redirect_stdout(io.StringIO()):  # the baseline prints a banner
    g = graph()
  env = LiteEFG.OpenSpielEnv(game, traverse_type="Enumerate", regenerate=False)
  env.set_graph(g)

  def step():
    g.update_graph(env)
    env.update_strategy(g.current_strategy(), update_best=False)
  return _timed_loop(step, seconds)


def batch_rates(name: str, batches, iterations: int) -> list:
  tree = jaxgt.load(name).device_tree("float32")
  solver = cfr_lib.cfr_plus()
  out = []
  for B in batches:
    state = solver.init_batch(tree, np.broadcast_to(np.asarray(tree.terminal_chance),
                                                    (B, tree.num_terminals)))
    jax.block_until_ready(solver.run_batch(tree, state, 0).regrets)
    t0 = time.perf_counter()
    jax.block_until_ready(solver.run_batch(tree, state, iterations).regrets)
    out.append((B, B * iterations / (time.perf_counter() - t0)))
  return out


def device_worker(name: str, batch: int, iterations: int) -> dict:
  """Batched CFR+ split over every device of this process (run with XLA_FLAGS set)."""
  from jaxgt import sharding
  tree = jaxgt.load(name).device_tree("float32")
  solver = cfr_lib.cfr_plus()
  state = solver.init_batch(tree, np.broadcast_to(np.asarray(tree.terminal_chance),
                                                  (batch, tree.num_terminals)))
  m = sharding.mesh()
  jax.block_until_ready(sharding.run_batch(solver, tree, state, 0, m).regrets)
  t0 = time.perf_counter()
  jax.block_until_ready(sharding.run_batch(solver, tree, state, iterations, m).regrets)
  return {"devices": len(jax.devices()), "rate": batch * iterations / (time.perf_counter() - t0)}


def device_rates(name: str, devices, batch: int, iterations: int) -> list:
  out = []
  for d in devices:
    env = dict(os.environ, XLA_FLAGS=f"--xla_force_host_platform_device_count={d}",
               JAXGT_BENCH_FIGURES="")
    r = subprocess.run([sys.executable, os.path.abspath(__file__), "--device-worker", name,
                        "--batch-size", str(batch), "--iterations", str(iterations)],
                       capture_output=True, text=True, env=env)
    lines = [l for l in r.stdout.splitlines() if l.startswith("WORKER ")]
    if r.returncode or not lines:
      raise RuntimeError(f"device worker ({d} devices) failed:\n"
                         f"{r.stdout[-2000:]}{r.stderr[-2000:]}")
    out.append(json.loads(lines[-1][len("WORKER "):]))
  return out


def main(argv=None):
  ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  ap.add_argument("--games", default=DEFAULT_GAMES, help="semicolon-separated game strings")
  ap.add_argument("--iterations", type=int, default=50)
  ap.add_argument("--max-histories", type=int, default=20_000_000)
  ap.add_argument("--memory-gib", type=float, default=24.0)
  ap.add_argument("--batches", default="1,4,16,64,256")
  ap.add_argument("--batch-game", default="leduc_poker")
  ap.add_argument("--devices", default="1,2,4,8")
  ap.add_argument("--batch-size", type=int, default=64, help="batch of the device-count curve")
  ap.add_argument("--peer-seconds", type=float, default=1.0,
                  help="time budget of each peer measurement (OpenSpiel C++, LiteEFG CFR+)")
  ap.add_argument("--device-worker", metavar="GAME", help=argparse.SUPPRESS)
  args = ap.parse_args(argv)
  if args.device_worker:
    print("WORKER " + json.dumps(device_worker(args.device_worker, args.batch_size,
                                               args.iterations)), flush=True)
    return
  enumeration = {}  # before any JAX computation: enumeration children are forked
  for name in _split(args.games):
    try:
      enumeration[name] = enumeration_cost(name, args.max_histories)
    except ValueError as e:
      enumeration[name] = str(e)
  print(f"jax {jax.__version__} on {jax.devices()[0].platform} ({jax.devices()[0].device_kind}); "
        "memory = XLA's planned bytes for one CFR+ iteration (arguments + outputs + temporaries)")
  print(f"{'game':<40} {'histories':>10} {'enum s':>7} {'enum MiB':>8} {'arrays MiB':>10} "
        f"{'compile s':>9} {'ms/iter':>8} {'iter MiB':>8} {'us/iter/kH':>10} {'iter B/H':>8}")
  rows = []
  for name in _split(args.games):
    if isinstance(enumeration[name], str):
      print(f"{name:<40} refused: {enumeration[name]}")
      continue
    r = game_row(name, args.iterations, args.max_histories, enumeration[name])
    rows.append(r)
    H = r["histories"]
    mem = r["iteration_bytes"]
    print(f"{r['game']:<40} {H:>10,} {r['enumeration_s']:>7.2f} "
          f"{r['enumeration_peak_bytes'] / 2**20:>8.0f} {r['array_bytes'] / 2**20:>10.1f} "
          f"{r['compile_s']:>9.2f} {r['ms_per_iteration']:>8.3f} "
          f"{(mem or 0) / 2**20:>8.1f} {1e6 * r['ms_per_iteration'] / H:>10.3f} "
          f"{(mem or 0) / H:>8.0f}", flush=True)
    for key, unit, better_high in (("enumeration_s", "s", False), ("compile_s", "s", False),
                                   ("ms_per_iteration", "ms/iter", False),
                                   ("iteration_bytes", "bytes", False),
                                   ("array_bytes", "bytes", False),
                                   ("enumeration_peak_bytes", "bytes", False)):
      if r[key] is not None and key != "ms_per_iteration":
        figure(key, r[key], unit, higher_is_better=better_high, game=r["game"], histories=H)
    os_name = jaxgt.load(name, args.max_histories).game.openspiel_game_string()
    for peer, label in (("OpenSpiel C++", "ms_per_iteration"),
                        ("LiteEFG", "ms_per_iteration vs LiteEFG")):
      ms = None
      if os_name is None:
        missing_peer(peer, "no equivalent OpenSpiel game", game=r["game"])
      else:
        try:
          ms = peer_ms(peer, os_name, args.peer_seconds)
          print(f"  {peer} CFR+ {ms:.3f} ms/iter: jaxgt {ms / r['ms_per_iteration']:.1f}x")
        except ImportError as e:
          missing_peer(peer, f"not installed ({e}; {PEER_INSTALL[peer]})", game=r["game"])
      figure(label, r["ms_per_iteration"], "ms/iter", higher_is_better=False, game=r["game"],
             histories=H, peer=peer if ms is not None else None, peer_value=ms)
  if rows:
    big = max(rows, key=lambda r: r["histories"])
    budget = args.memory_gib * 2**30
    per_h = ((big["iteration_bytes"] or big["array_bytes"]) / big["histories"],
             max(big["enumeration_peak_bytes"], big["array_bytes"]) / big["histories"])
    for what, b in zip(("one CFR+ iteration", "enumeration"), per_h):
      fit = budget / b
      print(f"{args.memory_gib:g} GiB holds about {fit:,.0f} histories for {what} "
            f"({b:,.0f} bytes/history at {big['game']})")
      figure(f"histories in {args.memory_gib:g} GiB ({what})", fit, "histories", game=big["game"])
  batches = [int(b) for b in args.batches.split(",") if b]
  if batches:
    print(f"\nbatched CFR+ on {args.batch_game}: B, game-iterations/s")
    for B, rate in batch_rates(args.batch_game, batches, args.iterations):
      print(f"  B={B:<5} {rate:12,.0f}")
      figure("batched cfr+", rate, "game-iterations/s", game=args.batch_game, batch=B)
  devices = [int(d) for d in args.devices.split(",") if d]
  if devices:
    print(f"\nsharded batched CFR+ on {args.batch_game}, B={args.batch_size}, emulated CPU devices "
          f"on {os.cpu_count()} cores: devices, game-iterations/s")
    for r in device_rates(args.batch_game, devices, args.batch_size, args.iterations):
      print(f"  devices={r['devices']:<3} {r['rate']:12,.0f}")
      figure("sharded batched cfr+", r["rate"], "game-iterations/s", game=args.batch_game,
             batch=args.batch_size, devices=r["devices"])


if __name__ == "__main__":
  main()
