"""GT-CFR on the device tree: searches/s and leaf queries/s for B concurrent searches.

``SoG(s, c)`` searches (Schmid et al. 2023, Algorithm 1; exact leaf values, the remaining
game solved for the current ranges) at ``B`` decision public states of the
game with random root ranges, run as one vmapped jitted call
(:func:`jaxgt.search.gtcfr.search`; one compilation serves every ``B``-sized
batch, roots, ranges and tree shapes). Compile and steady-state times are
reported separately. Peer, timed in the same run: OpenSpiel's C++
``CFRPlusSolver`` on the full game (``--openspiel``): history visits per
second, against ours (live tree histories x CFR iterations per second, the
evaluator's continuation not counted).

With ``--rules`` the tree grows from a device game's rules instead
(:func:`jaxgt.search.rules_source.rules_source`: games too large to enumerate, e.g. Liar's
Dice with two dice each), every search at the first public state after the deals with its own
random ranges and key, leaves valued zero (the tree's and the expansions' cost alone); the
regret phase on factored ranges (``tree_form="factored"``, the default there) and on the
history form are timed in the same run (``--tree-forms``), with their ratio.

  python benchmarks/gtcfr_speed.py --quick            # small, for a loaded machine
  python benchmarks/gtcfr_speed.py --batches 1,4,16,64,256,1024 --openspiel
  python benchmarks/gtcfr_speed.py --rules --game 'liars_dice(numdice=2)' --batches 1,4,16
  python benchmarks/gtcfr_speed.py --rules --game 'liars_dice(numdice=2)' --simulations 30 \
      --batches 1,4 --tree-forms factored,history
"""

import argparse
import os
import sys
import time

import jax
import numpy as np

import jaxgt
from jaxgt.bench_report import figure
from jaxgt.core.public_tree import build_public_tree
from jaxgt.search import device_tree as dt
from jaxgt.search import evaluator as evaluators
from jaxgt.search import gtcfr as gt
from jaxgt.search import rules_source

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from subgame_speed import report_openspiel  # noqa: E402  (OpenSpiel C++ CFR+ history visits/s)


def _timed(fn):
  t0 = time.perf_counter()
  out = jax.block_until_ready(fn())
  return time.perf_counter() - t0, out


BENCH_QUICK = ["--game", "kuhn_poker", "--batches", "1,8", "--simulations", "20", "--openspiel"]


def main(argv=None):
  ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  ap.add_argument("--game", default="leduc_poker")
  ap.add_argument("--simulations", type=int, default=100)
  ap.add_argument("--expansions-per-update", type=float, default=1.0)
  ap.add_argument("--batches", default="1,4,16,64,256,1024")
  ap.add_argument("--dtype", default="float32", choices=["float32", "float64"])
  ap.add_argument("--openspiel", action="store_true", help="also time OpenSpiel CFR+")
  ap.add_argument("--quick", action="store_true", help="B = 1, 8 and s = 20 (loaded machines)")
  ap.add_argument("--rules", action="store_true",
                  help="grow the tree from the device game's rules (zero leaf values)")
  ap.add_argument("--tree-forms", default="factored,history",
                  help="with --rules: the regret phase's forms timed (factored, history)")
  args = ap.parse_args(argv)
  forms = args.tree_forms.split(",")
  bad = [f for f in forms if f not in ("factored", "history")]
  if bad:
    ap.error(f"--tree-forms takes factored and/or history, got {bad}")
  if args.quick:
    args.batches, args.simulations = "1,8", 20
  if args.dtype == "float64":
    jax.config.update("jax_enable_x64", True)
  if args.rules:
    return _rules(args)
  g = jaxgt.load(args.game)
  pt = build_public_tree(g)
  src = dt.source_from_game(g, args.dtype)
  cfg = gt.make_config(src, simulations=args.simulations,
                       expansions_per_update=args.expansions_per_update, dtype=args.dtype)
  ev = evaluators.exact(src)
  player = np.asarray(g.tree.player)
  roots = [s for s in range(pt.num_public_states)
           if not pt.terminal_public[s] and set(player[pt.histories[s]].tolist()) & {0, 1}]
  rng = np.random.default_rng(0)
  print(f"{args.game}: SoG({cfg.simulations}, {cfg.expansions_per_update:g}), capacity "
        f"{cfg.capacity} nodes, exact leaves, {args.dtype}, device {jax.devices()[0].platform}; "
        f"{len(roots)} decision public states")
  best = 0.0
  for B in [int(b) for b in args.batches.split(",")]:
    rs_ = [roots[i % len(roots)] for i in range(B)]
    ranges = np.stack([gt.root_ranges(src, s, [rng.dirichlet(np.ones(len(pt.infostates[p][s])))
                                               for p in (0, 1)]) for s in rs_])
    keys = jax.random.split(jax.random.PRNGKey(B), B)
    fn = lambda: gt.search(src, cfg, ev, np.asarray(rs_), ranges, keys)  # noqa: E731
    first, _ = _timed(fn)
    sec, out = _timed(fn)
    q = float(np.sum(np.asarray(out.state.num_queries)))
    visits = float(np.sum(np.asarray(out.state.history_visits)))
    best = max(best, visits / sec)
    figure("searches", B / sec, "searches/s", game=args.game, simulations=cfg.simulations, batch=B)
    figure("leaf queries", q / sec, "queries/s", game=args.game, simulations=cfg.simulations, batch=B)
    print(f"  B={B:5d}: {B / sec:9.2f} searches/s, {q / sec:12,.0f} leaf queries/s, "
          f"{visits / sec:14,.0f} tree history visits/s (compile+first {first:.1f}s, "
          f"steady {sec:.2f}s)")
  print(f"ours: up to {best:,.0f} tree history visits/s")
  if args.openspiel:
    report_openspiel(g, best, game=args.game)


def _rules(args):
  """The ``--rules`` run: the tree grown from the device game's rules, each regret-phase form
  on the same batches."""
  game = jaxgt.games.make_from_string(args.game)
  src = rules_source.rules_source(game, dtype=args.dtype)
  forms = args.tree_forms.split(",")
  cfgs = {f: gt.make_config(src, simulations=args.simulations,
                            expansions_per_update=args.expansions_per_update, dtype=args.dtype,
                            tree_form=f) for f in forms}
  cfg = cfgs[forms[0]]
  ev = evaluators.from_callable(lambda leaves: 0.0 * leaves.chance, name="zero")
  root = rules_source.post_deal_root(game)
  valid = np.asarray(src.rows(src.root_key(root)).info_id) >= 0  # [2, K]
  rng = np.random.default_rng(0)
  print(f"{args.game}: SoG({cfg.simulations}, {cfg.expansions_per_update:g}) grown from the "
        f"rules, capacity {cfg.capacity} nodes of {src.num_histories} history slots, zero "
        f"leaves, {args.dtype}, device {jax.devices()[0].platform}")
  for B in [int(b) for b in args.batches.split(",")]:
    ranges = np.zeros((B, 2, src.num_infostates))
    for p in (0, 1):
      ranges[:, p, valid[p]] = rng.dirichlet(np.ones(int(valid[p].sum())), size=B)
    roots = jax.tree_util.tree_map(lambda x: np.repeat(np.asarray(x)[None], B, 0), root)
    keys = jax.random.split(jax.random.PRNGKey(B), B)
    rate = {}
    for form in forms:
      fn = lambda c=cfgs[form]: gt.search(src, c, ev, roots, ranges, keys)  # noqa: E731
      first, _ = _timed(fn)
      sec, out = _timed(fn)
      rate[form] = B / sec
      q = float(np.sum(np.asarray(out.state.num_queries)))
      nodes = float(np.mean(np.asarray(out.state.tree.num_nodes)))
      figure(f"searches (rules, {form})", B / sec, "searches/s", game=args.game,
             simulations=cfg.simulations, batch=B)
      figure(f"leaf queries (rules, {form})", q / sec, "queries/s", game=args.game,
             simulations=cfg.simulations, batch=B)
      print(f"  B={B:5d} {form:9s}: {B / sec:9.3f} searches/s, {q / sec:12,.0f} leaf history "
            f"queries/s, {nodes:.0f} nodes per tree (compile+first {first:.1f}s, steady "
            f"{sec:.2f}s)")
    if len(rate) == 2:
      print(f"  B={B:5d} factored / history: {rate['factored'] / rate['history']:.2f}x")


if __name__ == "__main__":
  main()
