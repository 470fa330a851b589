"""CFR-family speed: jaxgt vs OpenSpiel C++ in the same run.

For each game prints the compile time, steady-state ms/iteration of every
jaxgt CFR-family solver (alternating updates; ``cfr+/plain``: CFR+ with plain
instead of compensated average sums; the pair is timed again interleaved,
best of ``4 x --repeats``, so a change of load cannot favour either), OpenSpiel's C++ ``CFRPlusSolver`` and
``CFRSolver`` ms/iteration through ``pyspiel`` with the ratio, and batched
throughput (game-iterations/s) of CFR+ over B root chance distributions. Where the game's
ranges factor (a device game with ``num_private``), CFR+ on the factored public tree
(:mod:`jaxgt.solvers.public_cfr`) against the sequence form, interleaved the same way; and
CFR+ on limit hold'em river subgames (1326 hands a player, the game's own terminal values),
which no enumerating solver can represent (no peer).

  python benchmarks/cfr_speed.py                       # all default games
  python benchmarks/cfr_speed.py --games "liars_dice(numdice=1)" --batch-sizes 1,16
"""

from __future__ import annotations

import argparse
import dataclasses
import time

import jax
import jax.numpy as jnp
import numpy as np

import jaxgt
from jaxgt.bench_report import PEER_INSTALL, figure, missing_peer
from jaxgt.solvers import cfr as cfr_lib
from jaxgt.core import sequence_form as sf
from jaxgt.core.factored import build_factored_tree
from jaxgt.games.device import DeviceGame
from jaxgt.solvers import public_cfr


DEFAULT_GAMES = ("kuhn_poker;leduc_poker;liars_dice(numdice=1);goofspiel(num_cards=4);"
                 "goofspiel(num_cards=5);generic_poker(T=4,C=1,R=2,B=1);generic_poker;"
                 "scotland_yard")
BENCH_QUICK = ["--games", "leduc_poker", "--iterations", "200", "--repeats", "1",
               "--openspiel-seconds", "0.5", "--batch-sizes", "64", "--batch-iterations", "20",
               "--holdem-river", ""]


def _time_jaxgt(tree, solver, iterations, repeats):
  """``(compile s, best ms/iteration, final state)`` of a solver's ``init``/``run`` on
  ``tree``."""
  state = solver.init(tree)
  t0 = time.perf_counter()
  jax.block_until_ready(solver.run(tree, state, 0).regrets)
  compile_s = time.perf_counter() - t0
  best = float("inf")
  for _ in range(repeats):
    t0 = time.perf_counter()
    out = solver.run(tree, state, iterations)
    jax.block_until_ready(out.regrets)
    best = min(best, time.perf_counter() - t0)
  return compile_s, 1e3 * best / iterations, out


def _time_paired(tree, solvers, iterations, repeats):
  """Best ms/iteration of each (compiled) solver, their runs interleaved ``repeats`` times so
  that a change of machine load hits them alike."""
  states = [s.init(tree) for s in solvers]
  best = [float("inf")] * len(solvers)
  for _ in range(repeats):
    for i, (solver, state) in enumerate(zip(solvers, states)):
      t0 = time.perf_counter()
      jax.block_until_ready(solver.run(tree, state, iterations).regrets)
      best[i] = min(best[i], time.perf_counter() - t0)
  return [1e3 * b / iterations for b in best]


def time_openspiel(game_string, cls_name, budget_s):
  try:
    import pyspiel
  except ImportError:
    return None
  game = pyspiel.load_game(game_string)
  solver = getattr(pyspiel, cls_name)(game)
  solver.evaluate_and_update_policy()  # first iteration builds tables
  n, t0 = 0, time.perf_counter()
  while True:
    solver.evaluate_and_update_policy()
    n += 1
    el = time.perf_counter() - t0
    if el > budget_s and n >= 3:
      return 1e3 * el / n


def _batched(g, tree, batch_sizes, iterations):
  solver = cfr_lib.cfr_plus()
  rows = []
  root_is_chance = int(np.asarray(tree.player)[0]) == -1
  C = tree.chance_probs.shape[1]
  rng = np.random.default_rng(0)
  for B in batch_sizes:
    if root_is_chance:
      support = np.asarray(tree.chance_probs)[0] > 0
      probs = rng.dirichlet(np.ones(C), size=B) * support
      probs /= probs.sum(-1, keepdims=True)
      w = jnp.stack([sf.root_chance_weights(tree, q) for q in probs])
    else:
      w = jnp.broadcast_to(tree.terminal_chance, (B, tree.num_terminals))
    state = solver.init_batch(tree, w)
    jax.block_until_ready(solver.run_batch(tree, state, 0).regrets)
    t0 = time.perf_counter()
    out = solver.run_batch(tree, state, iterations)
    jax.block_until_ready(out.regrets)
    el = time.perf_counter() - t0
    rows.append((B, B * iterations / el))
  return rows


def main(argv=None):
  ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  ap.add_argument("--games", default=DEFAULT_GAMES,
                  help="semicolon- or comma-separated game strings")
  ap.add_argument("--iterations", type=int, default=1000)
  ap.add_argument("--repeats", type=int, default=3)
  ap.add_argument("--openspiel-seconds", type=float, default=3.0,
                  help="time budget for each OpenSpiel measurement")
  ap.add_argument("--batch-sizes", default="1,4,16,64,256,1024")
  ap.add_argument("--batch-iterations", type=int, default=50)
  ap.add_argument("--holdem-river", default="1",
                  help="comma-separated seeds of hold'em river subgames to solve on factored "
                       "ranges ('' for none)")
  args = ap.parse_args(argv)
  try:
    river_seeds = [int(x) for x in args.holdem_river.split(",") if x.strip()]
  except ValueError:
    ap.error(f"--holdem-river takes comma-separated integer seeds, got {args.holdem_river!r}")
  sep = ";" if ";" in args.games else ","
  games = [s.strip() for s in _split(args.games, sep) if s.strip()]
  batch_sizes = [int(b) for b in args.batch_sizes.split(",") if b]
  print(f"jax {jax.__version__} on {jax.devices()[0].platform} ({jax.devices()[0].device_kind}), "
        f"{len(jax.devices())} device(s)")
  for name in games:
    t0 = time.perf_counter()
    g = jaxgt.load(name)
    enum_s = time.perf_counter() - t0
    tree = g.device_tree("float32")
    s = g.sizes()
    print(f"\n== {g.name}: {s['histories']} histories, {s['terminals']} terminals, "
          f"infostates {s['infostates_p0']}/{s['infostates_p1']}; enumeration {enum_s:.2f}s")
    ours = {}
    for solver_name in list(cfr_lib.SOLVERS) + ["cfr+/plain"]:
      # cfr+/plain: CFR+ with plain float sums, the cost of the compensated averages
      solver = (dataclasses.replace(cfr_lib.cfr_plus(), compensated=False)
                if solver_name == "cfr+/plain" else cfr_lib.make_solver(solver_name))
      c, ms, out = _time_jaxgt(tree, solver, args.iterations, args.repeats)
      expl = float(sf.exploitability(tree, solver.average_policy(tree, out)))
      ours[solver_name] = ms
      figure("compile", c, "s", higher_is_better=False, game=g.name, solver=solver_name)
      if solver_name not in ("cfr+", "cfr"):
        figure("iteration", ms, "ms/iter", higher_is_better=False, game=g.name,
               solver=solver_name)
      print(f"  jaxgt {solver_name:<10} compile {c:6.2f}s   {ms:9.4f} ms/iter   "
            f"exploitability after {args.iterations}: {expl:.3e}")
    # the cost of compensation, measured with the two runs interleaved (4x the repeats)
    comp_ms, plain_ms = _time_paired(tree, [cfr_lib.cfr_plus(), dataclasses.replace(
        cfr_lib.cfr_plus(), compensated=False)], args.iterations, 4 * args.repeats)
    figure("compensation cost", comp_ms / plain_ms, "x", higher_is_better=False, game=g.name)
    print(f"  interleaved: cfr+ {comp_ms:.4f} ms/iter compensated, {plain_ms:.4f} plain "
          f"({comp_ms / plain_ms:.2f}x)")
    if isinstance(g.game, DeviceGame) and g.game.num_private is not None:
      _factored(g, tree, args)
    os_name = g.game.openspiel_game_string()
    if os_name is None:
      print("  OpenSpiel: no equivalent game")
      missing_peer("OpenSpiel C++", "no equivalent OpenSpiel game", game=g.name)
      for ours_name in ("cfr+", "cfr"):
        figure("iteration", ours[ours_name], "ms/iter", higher_is_better=False, game=g.name,
               solver=ours_name)
    else:
      for ours_name, cls in [("cfr+", "CFRPlusSolver"), ("cfr", "CFRSolver")]:
        ms = time_openspiel(os_name, cls, args.openspiel_seconds)
        if ms is None:
          print(f"  OpenSpiel: pyspiel not installed ({PEER_INSTALL['OpenSpiel C++']})")
          missing_peer("OpenSpiel C++", "pyspiel not installed", game=g.name)
          break
        figure("iteration", ours[ours_name], "ms/iter", higher_is_better=False, game=g.name,
               solver=ours_name, peer=f"OpenSpiel C++ {cls}", peer_value=ms)
        print(f"  OpenSpiel C++ {cls:<14} {ms:9.4f} ms/iter   jaxgt {ours_name} is "
              f"{ms / ours[ours_name]:7.1f}x faster")
    print("  batched CFR+ (root chance distributions): B, game-iterations/s")
    for B, rate in _batched(g, tree, batch_sizes, args.batch_iterations):
      figure("batched cfr+", rate, "game-iterations/s", game=g.name, batch=B)
      print(f"    B={B:<5d} {rate:12.0f} it/s   ({1e3 / rate * B:.4f} ms per batched iteration)")
  for seed in river_seeds:
    _holdem_river(seed, min(args.iterations, 300), args.repeats)


def _holdem_river(seed, iterations, repeats):
  """CFR+ on a limit hold'em river subgame (both players checked or called to the river,
  random deal by ``seed``; root ranges uniform) on factored ranges."""
  from jaxgt.games import make_from_string
  game = make_from_string("limit_holdem")
  rng = np.random.default_rng(seed)
  s = game.init()
  while not (int(s.round) == 3 and int(game.current_player(s)) >= 0):
    if int(game.current_player(s)) < 0:
      probs = np.asarray(game.chance_probs(s))
      s = game.step(s, jnp.int32(rng.choice(len(probs), p=probs / probs.sum())))
    else:
      s = game.step(s, jnp.int32(1))
  t0 = time.perf_counter()
  ft = build_factored_tree(game, root=s)
  build_s = time.perf_counter() - t0
  pcfr = public_cfr.PublicTreeCFR(cfr_lib.cfr_plus())
  compile_s, ms, out = _time_jaxgt(ft, pcfr, iterations, repeats)  # the same init/run interface
  expl = float(public_cfr.exploitability(ft, pcfr.policy(ft, out)))
  figure("iteration", ms, "ms/iter", higher_is_better=False, game="limit_holdem river",
         solver="cfr+ factored", seed=seed)
  missing_peer("OpenSpiel C++", "hold'em cannot be enumerated", game="limit_holdem river")
  print(f"\n== limit hold'em river subgame (seed {seed}, board "
        f"{[int(c) for c in np.asarray(s.cards[4:])]}): {ft.num_states} public states, "
        f"1326 hands a player; built in {build_s:.2f}s, compile {compile_s:.2f}s")
  print(f"  cfr+ factored {ms:.3f} ms/iter; exploitability after {iterations}: {expl:.3e} "
        f"chips (pot {int(np.sum(np.asarray(s.spent)))}); no peer: OpenSpiel cannot enumerate "
        "hold'em")


def _factored(g, tree, args):
  """CFR+ on the factored public tree against the sequence form, runs interleaved."""
  t0 = time.perf_counter()
  ft = build_factored_tree(g.game)
  build_s = time.perf_counter() - t0
  solver = cfr_lib.cfr_plus()
  pcfr = public_cfr.PublicTreeCFR(solver)
  fstate, sstate = pcfr.init(ft), solver.init(tree)
  t0 = time.perf_counter()
  jax.block_until_ready(pcfr.run(ft, fstate, 0).regrets)
  compile_s = time.perf_counter() - t0
  best = [float("inf")] * 2
  for _ in range(4 * args.repeats):
    for i, run in enumerate((lambda: pcfr.run(ft, fstate, args.iterations),
                             lambda: solver.run(tree, sstate, args.iterations))):
      t0 = time.perf_counter()
      out = run()
      jax.block_until_ready(out.regrets)
      best[i] = min(best[i], time.perf_counter() - t0)
      if i == 0:
        fout = out
  f_ms, s_ms = (1e3 * b / args.iterations for b in best)
  expl = float(public_cfr.exploitability(ft, pcfr.policy(ft, fout)))
  figure("iteration", f_ms, "ms/iter", higher_is_better=False, game=g.name,
         solver="cfr+ factored", peer="jaxgt cfr+ sequence form", peer_value=s_ms)
  print(f"  factored public tree: {ft.num_states} public states, rows "
        f"{ft.num_infostates[0]}/{ft.num_infostates[1]}; built in {build_s:.2f}s, "
        f"compile {compile_s:.2f}s")
  print(f"  interleaved: cfr+ factored {f_ms:.4f} ms/iter, sequence form {s_ms:.4f} "
        f"({s_ms / f_ms:.2f}x the sequence form's speed); exploitability after "
        f"{args.iterations}: {expl:.3e}")


def _split(text, sep):
  # split on sep outside parentheses
  out, depth, cur = [], 0, ""
  for ch in text:
    depth += ch == "("
    depth -= ch == ")"
    if ch == sep and depth == 0:
      out.append(cur)
      cur = ""
    else:
      cur += ch
  out.append(cur)
  return out


if __name__ == "__main__":
  main()
