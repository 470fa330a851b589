"""Batched re-solving: subgame-iterations/s over all Leduc public states of one depth.

Every non-terminal public state at ``--depth`` is the root of a subgame grown on the device
tree ``--limit`` public levels below (:func:`jaxgt.search.subgame.subgame_tree`), with leaf
values from a fixed continuation profile (the uniform blueprint:
:func:`jaxgt.search.evaluator.continuation`), solved by the regret phase of GT-CFR
(:func:`jaxgt.search.gtcfr.solve_tree`, simultaneous CFR+). ``--mode resolve`` (default)
re-solves with the safe-re-solving gadget mixed with the previous opponent range (Student
of Games, alpha = 0.5) from ``B`` random summaries (our range, opponent counterfactual values
and range) in one vmapped jitted call on the subgame's one tree; ``--mode fixed`` solves ``B``
random root-range pairs. Both are compared with the same solves one by one (one jitted call
each, compiled once).
Compile and steady-state times are reported separately; runs unchanged on CPU or GPU.

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
from jaxgt.core import public_tree as ptm
from jaxgt.core import sequence_form as sf
from jaxgt.search import device_tree as dt
from jaxgt.search import evaluator as evaluators
from jaxgt.search import gtcfr as gt
from jaxgt.search import subgame

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cfr_speed import time_openspiel  # noqa: E402  (OpenSpiel C++ ms/iteration)


BENCH_QUICK = ["--iterations", "20", "--batches", "1,64", "--one-by-one", "2", "--openspiel"]


def _timed(fn):
  t0 = time.perf_counter()
  jax.block_until_ready(fn())
  return time.perf_counter() - t0


def _capacity(pt, root, limit):
  """Public states at most ``limit`` levels below ``root`` (the subgame's nodes)."""
  level, n = [root], 1
  for _ in range(limit):
    level = [c for v in level for c in pt.children[v]]
    n += len(level)
  return n


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
  src = dt.source_from_game(g, dt_name)
  K = src.num_infostates
  ev = evaluators.continuation(src, sf.uniform_policy(g.device_tree(dt_name), jnp.dtype(dt_name)))
  roots = [int(ps) for ps in pt.at_depth(args.depth) if not pt.terminal_public[ps]]
  T = args.iterations
  print(f"{args.game}: {len(roots)} public states at depth {args.depth}, limit {args.limit}, "
        f"{T} CFR+ iterations per solve, mode {args.mode}, {dt_name}, "
        f"device {jax.devices()[0].platform}")
  rng = np.random.default_rng(0)
  ours_visits = []
  for ps in roots:
    tree = subgame.subgame_tree(src, ps, depth_limit=args.limit,
                                capacity=max(_capacity(pt, ps, args.limit),
                                             1 + src.num_children))
    cfg = gt.make_config(src, simulations=1, capacity=tree.capacity, value_average="search",
                         dtype=dt_name)
    player = int(g.tree.player[pt.histories[ps][0]])
    if player not in (0, 1):
      player = 0
    k = [len(pt.infostates[p][ps]) for p in (0, 1)]
    H = int(np.sum(np.asarray(tree.history) >= 0))
    leaves = int(np.sum(~np.asarray(tree.expanded) & (np.asarray(tree.public) >= 0)))
    line = [f"public state {ps} (player {player}): {H} histories, {leaves} leaf public states"]

    def draw(n):
      """``n`` random root ranges ``[n, 2, K]`` and opponent values ``[n, K]``."""
      ranges = np.stack([gt.root_ranges(src, ps, [rng.dirichlet(np.ones(x)) for x in k])
                         for _ in range(n)]).astype(dt_name)
      values = np.zeros((n, K), dt_name)
      values[:, :k[1 - player]] = rng.normal(0.0, 0.5, (n, k[1 - player]))
      return ranges, values

    gadget = args.mode == "resolve"

    def batch(B):
      ranges, values = draw(B)
      kw = dict(alpha=0.5, player=np.full(B, player), opp_values=values) if gadget else {}
      return lambda: gt.solve_tree(src, cfg, ev, tree, ranges, T, **kw).policy

    def single(n):
      ranges, values = draw(n)
      kw = [dict(alpha=0.5, player=player, opp_values=values[b]) if gadget else {}
            for b in range(n)]
      return [lambda b=b: gt.solve_tree(src, cfg, ev, tree, ranges[b], T, **kw[b]).policy
              for b in range(n)]

    for B in [int(b) for b in args.batches.split(",")]:
      fn = batch(B)
      first = _timed(fn)
      sec = _timed(fn)
      ours_visits.append(B * T * H / sec)
      line.append(f"B={B}: {B * T / sec:,.0f} it/s (compile+first {first:.2f}s)")
      figure("subgame solves", B * T / sec, "iterations/s", game=args.game, public_state=ps,
             batch=B, mode=args.mode)
    fns = single(args.one_by_one)
    _timed(fns[0])  # compile
    sec = sum(_timed(f) for f in fns)
    line.append(f"one by one: {len(fns) * T / sec:,.0f} it/s")
    figure("subgame solves", len(fns) * T / sec, "iterations/s", game=args.game,
           public_state=ps, batch="one by one", mode=args.mode)
    print("  " + "; ".join(line))
  print(f"ours: up to {max(ours_visits):,.0f} history visits/s "
        "(subgame histories x iterations x B)")
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
