"""Batched depth-limited solving: subgame-iterations/s of all Leduc public states of one depth.

Every public state at ``--depth`` is the root of a subgame cut ``--limit``
public levels below (leaf values from a fixed continuation profile, so
each solve is plain CFR+ on the compiled subgame). For each subgame shape,
``B`` root ranges (random, valid) are solved in one vmapped jitted call;
compared with solving them one by one. Compile and steady-state times are
reported separately. Runs unchanged on CPU or GPU.

  python benchmarks/subgame_speed.py --depth 3 --limit 2 --iterations 100
"""

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np

import jaxgt
from jaxgt import leaf as lf
from jaxgt import public_tree as ptm
from jaxgt import subgame as sgm
from jaxgt.solvers import sequence_form as sf


def main():
  ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  ap.add_argument("--game", default="leduc_poker")
  ap.add_argument("--depth", type=int, default=3)
  ap.add_argument("--limit", type=int, default=2)
  ap.add_argument("--iterations", type=int, default=100)
  ap.add_argument("--batches", default="1,16,256,4096")
  ap.add_argument("--one-by-one", type=int, default=8, help="solves timed one by one")
  args = ap.parse_args()
  g = jaxgt.load(args.game)
  pt = ptm.build_public_tree(g)
  solver = jaxgt.cfr_plus(dtype="float32")
  blueprint = sf.uniform_policy(g.device_tree("float32"), jnp.float32)
  roots = [int(ps) for ps in pt.at_depth(args.depth) if not pt.terminal_public[ps]]
  print(f"{args.game}: {len(roots)} public states at depth {args.depth}, limit {args.limit}, "
        f"{args.iterations} CFR+ iterations per solve, device {jax.devices()[0].platform}")
  rng = np.random.default_rng(0)
  for ps in roots:
    sub = sgm.extract(pt, ps, depth_limit=args.limit)
    ev = lf.continuation(sub, blueprint) if sub.num_leaves else None
    k0, k1 = sub.range_sizes()
    tree = sub.compiled.device_tree("float32")
    if ev is not None:
      tree = sub.with_payoff(tree, ev.apply((), None)[0])
    line = [f"public state {ps}: {sub.tree.num_histories} histories"]
    for B in [int(b) for b in args.batches.split(",")]:
      w = sub.root_weights(rng.dirichlet(np.ones(k0), B), rng.dirichlet(np.ones(k1), B),
                           jnp.float32)
      t0 = time.perf_counter()
      st = solver.run_batch(tree, solver.init_batch(tree, w), args.iterations)
      jax.block_until_ready(st.regrets)
      first = time.perf_counter() - t0
      t0 = time.perf_counter()
      st = solver.run_batch(tree, solver.init_batch(tree, w), args.iterations)
      jax.block_until_ready(st.regrets)
      dt = time.perf_counter() - t0
      line.append(f"B={B}: {B * args.iterations / dt:,.0f} it/s (compile+first {first:.2f}s)")
    n = args.one_by_one
    w = sub.root_weights(rng.dirichlet(np.ones(k0), n), rng.dirichlet(np.ones(k1), n), jnp.float32)
    jax.block_until_ready(solver.run(tree, solver.init(tree, w[0]), args.iterations).regrets)
    t0 = time.perf_counter()
    for b in range(n):
      jax.block_until_ready(solver.run(tree, solver.init(tree, w[b]), args.iterations).regrets)
    dt = time.perf_counter() - t0
    line.append(f"one by one: {n * args.iterations / dt:,.0f} it/s")
    print("  " + "; ".join(line))


if __name__ == "__main__":
  main()
