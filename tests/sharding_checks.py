"""Sharded results against single-device ones, run in a process with several devices.

``tests/test_sharding.py`` runs this file in a subprocess (the test process
has one device): ``XLA_FLAGS=--xla_force_host_platform_device_count=8 python
tests/sharding_checks.py`` prints one JSON object of maximum differences.
With ``--process-id K --num-processes N --coordinator HOST:PORT`` it runs as
one process of a ``jax.distributed`` job instead (see ``distributed_main``).
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _diff(a, b):
  import jax
  import numpy as np
  return max(float(np.max(np.abs(np.asarray(x, np.float64) - np.asarray(y, np.float64))))
             if np.size(x) else 0.0
             for x, y in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)))


def _weights(tree, B, seed=0):
  import jax.numpy as jnp
  import numpy as np
  from jaxgt.core import sequence_form
  C = np.asarray(tree.chance_probs).shape[1]
  support = np.asarray(tree.chance_probs)[0] > 0
  probs = np.random.default_rng(seed).dirichlet(np.ones(C), size=B) * support
  probs /= probs.sum(-1, keepdims=True)
  return jnp.stack([sequence_form.root_chance_weights(tree, q) for q in probs])


def single_host_checks():
  import jax
  jax.config.update("jax_enable_x64", True)
  import jax.numpy as jnp
  import numpy as np
  import jaxgt
  from jaxgt import sharding
  from jaxgt.core import public_tree, sequence_form
  from jaxgt.search import device_tree, evaluator, gtcfr, subgame
  from jaxgt.solvers import cfr, mccfr

  out = {"devices": len(jax.devices())}
  m = sharding.mesh()
  g = jaxgt.load("leduc_poker")
  tree = g.device_tree("float64")
  solver = cfr.cfr_plus(dtype="float64")

  # Batched CFR+ over 13 root beliefs (not a multiple of 8: padded and trimmed).
  w = _weights(tree, 13)
  state = solver.init_batch(tree, w)
  ref = solver.run_batch(tree, state, 20)
  got = sharding.run_batch(solver, tree, state, 20, m)
  out["run_batch"] = _diff(ref, got)
  out["run_batch_sharded_over"] = len(got.regrets[0].sharding.device_set)

  # Batched depth-limited solves on the device tree with a continuation leaf evaluator.
  pt = public_tree.build_public_tree(g)
  root = [int(ps) for ps in pt.at_depth(3) if not pt.terminal_public[ps]][0]
  src = device_tree.source_from_game(g)
  sub_tree = subgame.subgame_tree(src, root, depth_limit=2)
  cfg = gtcfr.make_config(src, simulations=1, capacity=sub_tree.capacity, solver=solver)
  ev = evaluator.continuation(src, sequence_form.uniform_policy(tree, jnp.float64))
  rng = np.random.default_rng(1)
  sizes = [len(pt.infostates[p][root]) for p in (0, 1)]
  ranges = np.stack([gtcfr.root_ranges(src, root, [rng.dirichlet(np.ones(k)) for k in sizes])
                     for _ in range(10)])
  trees = jax.tree_util.tree_map(lambda x: jnp.stack([x] * 10), sub_tree)

  def solve(t, r):
    return gtcfr.solve_tree(src, cfg, ev, t, r, 12)
  ref = solve(trees, ranges)
  got = sharding.map_batch(solve, m, trees, ranges)
  out["solve_batch"] = _diff((ref.policy, ref.root_values), (got.policy, got.root_values))

  # Sampled MCCFR: increments of 8 devices summed == the same 8 runs on one device.
  os_solver = mccfr.outcome_sampling(batch=4, dtype="float64")
  key = jax.random.key(3)
  s0 = os_solver.init(tree)
  got = sharding.sampled_run(os_solver, tree, s0, 5, key, m)
  s = s0
  for _ in range(5):
    news = [os_solver.run(tree, s, 1, jax.random.fold_in(key, d)) for d in range(len(m.devices))]
    s = s.replace(
        regrets=tuple(r + sum(n.regrets[p] - r for n in news) for p, r in enumerate(s.regrets)),
        cum_policy=tuple(c + sum(n.cum_policy[p] - c for n in news)
                         for p, c in enumerate(s.cum_policy)),
        iteration=news[0].iteration)
  out["sampled_run"] = _diff((s.regrets, s.cum_policy), (got.regrets, got.cum_policy))
  out["sampled_iteration"] = int(got.iteration)
  out["sampled_nonzero"] = float(np.abs(np.asarray(got.regrets[0])).sum())

  # One game over the devices: CFR+ iterates equal the unsharded ones. Kuhn's
  # 30 terminals and Leduc's over 7 devices are padded; Leduc's 5520 over 8 are not.
  for name, devices in (("kuhn_poker", 8), ("leduc_poker", 8), ("leduc_poker", 7)):
    gt = jaxgt.load(name).device_tree("float64")
    ref = solver.run(gt, solver.init(gt), 10)
    mg = sharding.mesh(jax.devices()[:devices])
    sh = sharding.shard_game(gt, mg)
    got = solver.run(sh, sharding.shard_state(solver.init(gt), sh, mg), 10)
    label = f"shard_game {name} {devices}"
    out[label] = _diff((ref.regrets, ref.cum_policy), (got.regrets, got.cum_policy))
    out[label + " terminals"] = [gt.num_terminals, sh.num_terminals,
                                 len(sh.terminal_payoff.sharding.device_set)]

  # Data-parallel gradient: mean over devices == the full batch's.
  def loss(params, batch):
    x, y = batch
    return jnp.mean((x @ params - y) ** 2)
  rng = np.random.default_rng(2)
  x, y = rng.normal(size=(32, 5)), rng.normal(size=32)
  params = rng.normal(size=5)
  ref = jax.value_and_grad(loss)(params, (x, y))
  got = sharding.data_parallel(jax.value_and_grad(loss), m)(params, (x, y))
  out["data_parallel"] = _diff(ref, got)
  return out


def distributed_main(args):
  """One process of a two-process job: a sharded batched CFR+ over every process's devices."""
  from jaxgt import sharding
  sharding.initialize(args.coordinator, args.num_processes, args.process_id)
  import jax
  jax.config.update("jax_enable_x64", True)
  import jaxgt
  from jaxgt.solvers import cfr
  tree = jaxgt.load("kuhn_poker").device_tree("float64")
  solver = cfr.cfr_plus(dtype="float64")
  w = _weights(tree, 5)
  state = solver.init_batch(tree, w)
  m = sharding.mesh()
  got = sharding.to_host(sharding.run_batch(solver, tree, state, 30, m))
  ref = solver.run_batch(tree, state, 30)
  return {"process": jax.process_index(), "processes": jax.process_count(),
          "global_devices": len(jax.devices()), "local_devices": len(jax.local_devices()),
          "run_batch": _diff(ref, got)}


if __name__ == "__main__":
  ap = argparse.ArgumentParser()
  ap.add_argument("--process-id", type=int)
  ap.add_argument("--num-processes", type=int, default=2)
  ap.add_argument("--coordinator", default="localhost:12355")
  a = ap.parse_args()
  res = single_host_checks() if a.process_id is None else distributed_main(a)
  print("RESULT " + json.dumps(res), flush=True)
