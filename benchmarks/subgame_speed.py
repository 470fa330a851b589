"""Batched re-solving: subgame-iterations/s over all Leduc public states of one depth.

Every non-terminal public state at ``--depth`` is the root of a subgame cut
``--limit`` public levels below, with leaf values from a fixed continuation
profile (the uniform blueprint: exact values for it, so each iteration is one
CFR+ iteration of the subgame). ``--mode resolve`` (default) re-solves with the
safe-re-solving gadget mixed with the previous opponent range (``003``,
alpha = 0.5; :func:`jaxgt.search.resolving.resolve_batch`) from ``B`` random
summaries (our range, opponent counterfactual values and range) in one
vmapped jitted call (without the self-play values only continual
re-solving reads); ``--mode fixed`` solves ``B`` random root-range pairs
(:meth:`CFRSolver.run_batch`). Both are compared with the same solves one by
one (one jitted call each, compiled once). Compile and steady-state times are
reported separately; runs unchanged on CPU or GPU.

OpenSpiel has no depth-limited subgame solver, so the closest equal work is a
CFR+ iteration over a game tree: ``--openspiel`` times OpenSpiel's C++
``CFRPlusSolver`` on the full game and reports history visits per second next
to ours (subgame histories x iterations x B per second).

  python benchmarks/subgame_speed.py --depth 3 --limit 2 --iterations 100 --openspiel
"""

import argparse
import os
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

import jaxgt
from jaxgt.bench_report import figure, missing_peer
from jaxgt.search import leaf as lf
from jaxgt.core import public_tree as ptm
from jaxgt.search import resolving as rs
from jaxgt.search import subgame as sgm
from jaxgt.core import sequence_form as sf

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cfr_speed import time_openspiel  # noqa: E402  (OpenSpiel C++ ms/iteration)


BENCH_QUICK = ["--iterations", "20", "--batches", "1,64", "--one-by-one", "2", "--openspiel"]


def _summaries(rng, k_us, k_opp, B):
  """``B`` random valid summaries: our range, opponent values, opponent range."""
  return (rng.dirichlet(np.ones(k_us), B), rng.normal(0.0, 0.5, (B, k_opp)),
          rng.dirichlet(np.ones(k_opp), B))


def _timed(fn):
  t0 = time.perf_counter()
  jax.block_until_ready(fn())
  return time.perf_counter() - t0


def main(argv=None):
  ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  ap.add_argument("--game", default="leduc_poker")
  ap.add_argument("--depth", type=int, default=3)
  ap.add_argument("--limit", type=int, default=2)
  ap.add_argument("--iterations", type=int, default=100)
  ap.add_argument("--batches", default="1,16,256,4096")
  ap.add_argument("--mode", choices=["resolve", "fixed"], default="resolve")
  ap.add_argument("--dtype", default="float32", choices=["float32", "float64"])
  ap.add_argument("--one-by-one", type=int, default=8, help="solves timed one by one")
  ap.add_argument("--openspiel", action="store_true", help="also time OpenSpiel CFR+")
  args = ap.parse_args(argv)
  if args.dtype == "float64":
    jax.config.update("jax_enable_x64", True)
  g = jaxgt.load(args.game)
  pt = ptm.build_public_tree(g)
  dt_name = args.dtype
  solver = jaxgt.cfr_plus(dtype=dt_name)
  blueprint = sf.uniform_policy(g.device_tree(dt_name), jnp.dtype(dt_name))
  roots = [int(ps) for ps in pt.at_depth(args.depth) if not pt.terminal_public[ps]]
  T = args.iterations
  print(f"{args.game}: {len(roots)} public states at depth {args.depth}, limit {args.limit}, "
        f"{T} CFR+ iterations per solve, mode {args.mode}, {dt_name}, "
        f"device {jax.devices()[0].platform}")
  rng = np.random.default_rng(0)
  ours_visits = []
  for ps in roots:
    sub = sgm.extract(pt, ps, depth_limit=args.limit)
    player = int(g.tree.player[pt.histories[ps][0]])
    if player not in (0, 1):
      player = 0
    k = sub.range_sizes()
    ev = lf.continuation(sub, blueprint)
    tree = sub.with_payoff(sub.compiled.device_tree(dt_name), ev.apply((), None)[0])
    H = sub.tree.num_histories
    line = [f"public state {ps} (player {player}): {H} histories, {sub.num_leaves} leaves"]

    if args.mode == "resolve":
      def batch(B):
        r, v, o = _summaries(rng, k[player], k[1 - player], B)
        return lambda: rs.resolve_batch(sub, solver, player, r, v, o, evaluator=ev,
                                        iterations=T, alpha=0.5,
                                        self_play_values=False).policy

      def single(n):
        r, v, o = _summaries(rng, k[player], k[1 - player], n)
        return [lambda b=b: rs.resolve(sub, solver, player, r[b], v[b], o[b], evaluator=ev,
                                       iterations=T, alpha=0.5, self_play_values=False).policy
                for b in range(n)]
    else:
      def batch(B):
        w = sub.root_weights(rng.dirichlet(np.ones(k[0]), B), rng.dirichlet(np.ones(k[1]), B),
                             jnp.dtype(dt_name))
        return lambda: solver.run_batch(tree, solver.init_batch(tree, w), T).regrets

      def single(n):
        w = sub.root_weights(rng.dirichlet(np.ones(k[0]), n), rng.dirichlet(np.ones(k[1]), n),
                             jnp.dtype(dt_name))
        return [lambda b=b: solver.run(tree, solver.init(tree, weights=w[b]), T).regrets
                for b in range(n)]

    for B in [int(b) for b in args.batches.split(",")]:
      fn = batch(B)
      first = _timed(fn)
      dt = _timed(fn)
      ours_visits.append(B * T * H / dt)
      line.append(f"B={B}: {B * T / dt:,.0f} it/s (compile+first {first:.2f}s)")
      figure("subgame solves", B * T / dt, "iterations/s", game=args.game, public_state=ps,
             batch=B, mode=args.mode)
    fns = single(args.one_by_one)
    _timed(fns[0])  # compile
    dt = sum(_timed(f) for f in fns)
    line.append(f"one by one: {len(fns) * T / dt:,.0f} it/s")
    figure("subgame solves", len(fns) * T / dt, "iterations/s", game=args.game,
           public_state=ps, batch="one by one", mode=args.mode)
    print("  " + "; ".join(line))
  print(f"ours: up to {max(ours_visits):,.0f} history visits/s (subgame histories x iterations x B)")
  if args.openspiel:
    report_openspiel(g, max(ours_visits), game=args.game)


def report_openspiel(g, ours_visits: float, **params):
  """Prints (and records) OpenSpiel C++ CFR+'s history visits/s on the full game against ``ours_visits``."""
  ms = time_openspiel(g.game.openspiel_game_string(), "CFRPlusSolver", 2.0)
  if ms is None:
    print("OpenSpiel not installed: skipped")
    missing_peer("OpenSpiel C++", "pyspiel not installed", **params)
    return
  os_visits = g.tree.num_histories / (ms / 1e3)
  print(f"OpenSpiel C++ CFRPlusSolver on the full game ({g.tree.num_histories} histories): "
        f"{1e3 / ms:.1f} it/s = {os_visits:,.0f} history visits/s; ours "
        f"{ours_visits / os_visits:,.2f}x")
  figure("history visits", ours_visits, "visits/s", peer="OpenSpiel C++ CFRPlusSolver (full game)",
         peer_value=os_visits, **params)


if __name__ == "__main__":
  main()
