"""The CVPN as GT-CFR's leaf evaluator: leaf queries/s of network-valued searches.

``SoG(s, c)`` searches (Schmid et al. 2023, Algorithm 1) at ``B`` decision public states with random
root ranges, as one vmapped jitted call, valued by the network
(:func:`jaxgt.nets.gtcfr_evaluator.cvpn_evaluator`, parameters passed as data) and, in the
same run, by the exact evaluator (:func:`jaxgt.search.evaluator.exact`: the remaining game
solved for the current ranges), the peer. Also the network alone: PBSs valued per second
by one batched call. Compile and steady-state times are separate.

  python benchmarks/gtcfr_evaluator_speed.py --quick      # small, for a loaded machine
  python benchmarks/gtcfr_evaluator_speed.py --batches 1,16,64 --hidden 256,256 --chunk 32
"""

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np

import jaxgt
from jaxgt.bench_report import figure
from jaxgt.core.public_tree import build_public_tree
from jaxgt.nets import cvpn
from jaxgt.nets.encoding import PBS, build_encoding
from jaxgt.nets import gtcfr_evaluator as ge
from jaxgt.search import device_tree as dt
from jaxgt.search import evaluator as evaluators
from jaxgt.search import gtcfr as gt


def _timed(fn):
  t0 = time.perf_counter()
  out = jax.block_until_ready(fn())
  return time.perf_counter() - t0, out


BENCH_QUICK = ["--game", "kuhn_poker", "--batches", "1,8", "--simulations", "10", "--hidden", "64"]


def _random_ranges(enc, ids, rng):
  """``[B, 2, K]`` random normalised ranges (encoding order) at public states ``ids [B]``."""
  r = rng.random((len(ids), 2, enc.k_max)) * enc.mask[ids]
  return jnp.asarray(r / np.maximum(r.sum(-1, keepdims=True), 1e-9), jnp.float32)


def _search_rate(src, cfg, ev, roots, ranges, keys, state):
  fn = lambda: gt.search(src, cfg, ev, roots, ranges, keys, evaluator_state=state)  # noqa: E731
  first, _ = _timed(fn)
  sec, out = _timed(fn)
  return first, sec, float(np.sum(np.asarray(out.state.num_queries)))


def main(argv=None):
  ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  ap.add_argument("--game", default="leduc_poker")
  ap.add_argument("--simulations", type=int, default=100)
  ap.add_argument("--expansions-per-update", type=float, default=1.0)
  ap.add_argument("--batches", default="1,16,64")
  ap.add_argument("--hidden", default="256,256")
  ap.add_argument("--chunk", type=int, default=0,
                  help="also time the evaluator that values only leaf nodes, this many per call")
  ap.add_argument("--no-exact", action="store_true", help="skip the exact-evaluator peer")
  ap.add_argument("--quick", action="store_true", help="B = 1, 8 and s = 20 (loaded machines)")
  args = ap.parse_args(argv)
  if args.quick:
    args.batches, args.simulations = "1,8", 20
  dtype = "float32"
  g = jaxgt.load(args.game)
  pt = build_public_tree(g)
  enc = build_encoding(g)
  src = dt.source_from_game(g, dtype)
  cfg = gt.make_config(src, simulations=args.simulations,
                       expansions_per_update=args.expansions_per_update, dtype=dtype)
  hidden = tuple(int(h) for h in args.hidden.split(","))
  model = cvpn.CVPN(enc, hidden=hidden)
  params = cvpn.init(model, jax.random.PRNGKey(0))
  net = ge.cvpn_evaluator(src, model, params)
  roots = np.flatnonzero(enc.actor[:, 0] + enc.actor[:, 1] > 0)  # decision public states
  rng = np.random.default_rng(0)
  print(f"{args.game}: SoG({cfg.simulations}, {cfg.expansions_per_update:g}), capacity "
        f"{cfg.capacity} nodes, CVPN hidden={hidden}, {dtype}, device "
        f"{jax.devices()[0].platform}")
  # The network alone: one batched call on N = capacity PBSs.
  ids = rng.choice(np.flatnonzero(~pt.terminal_public), size=cfg.capacity)
  pbs = PBS(public=jnp.asarray(ids, jnp.int32), ranges=_random_ranges(enc, ids, rng))
  call = jax.jit(model.apply)
  _timed(lambda: call(params, pbs))
  reps = 50
  sec, _ = _timed(lambda: [call(params, pbs) for _ in range(reps)])
  figure("network PBS values", reps * cfg.capacity / sec, "PBS/s", game=args.game,
         hidden=list(hidden), batch=cfg.capacity)
  print(f"  network alone: {reps * cfg.capacity / sec:,.0f} PBS/s (batches of {cfg.capacity})")
  for B in [int(b) for b in args.batches.split(",")]:
    rs_ = roots[np.arange(B) % len(roots)]
    smap = ge.slot_map(src, enc)
    ranges = ge.to_device_order(smap, rs_, _random_ranges(enc, rs_, rng))
    keys = jax.random.split(jax.random.PRNGKey(B), B)
    first, sec, q = _search_rate(src, cfg, net, rs_, ranges, keys, params)
    peer = None
    if not args.no_exact:
      ex = evaluators.exact(src)
      pf, psec, pq = _search_rate(src, cfg, ex, rs_, ranges, keys, ex.init())
      peer = pq / psec
      print(f"  B={B:4d} exact evaluator: {B / psec:8.2f} searches/s, {pq / psec:11,.0f} leaf "
            f"queries/s (compile+first {pf:.1f}s)")
    if args.chunk:
      ch = ge.cvpn_evaluator(src, model, chunk=args.chunk)
      cf, csec, cq = _search_rate(src, cfg, ch, rs_, ranges, keys, params)
      figure("network leaf queries, chunked", cq / csec, "queries/s", game=args.game,
             simulations=cfg.simulations, batch=B, hidden=list(hidden), chunk=args.chunk,
             peer="all nodes per call", peer_value=q / sec)
      print(f"  B={B:4d} CVPN, chunk {args.chunk}: {B / csec:8.2f} searches/s, {cq / csec:11,.0f} "
            f"leaf queries/s (compile+first {cf:.1f}s)")
    figure("network leaf queries", q / sec, "queries/s", game=args.game,
           simulations=cfg.simulations, batch=B, hidden=list(hidden),
           peer=None if peer is None else "jaxgt exact evaluator", peer_value=peer)
    figure("network searches", B / sec, "searches/s", game=args.game,
           simulations=cfg.simulations, batch=B, hidden=list(hidden))
    print(f"  B={B:4d} CVPN evaluator:  {B / sec:8.2f} searches/s, {q / sec:11,.0f} leaf "
          f"queries/s (compile+first {first:.1f}s, steady {sec:.2f}s)")


if __name__ == "__main__":
  main()
