"""Run by tests/test_gtcfr_sharding.py in a subprocess with emulated devices: B GT-CFR
searches (different roots, ranges and keys) sharded over the devices by
``jaxgt.sharding.map_batch`` against the same batch on one device; prints ``RESULT {json}``."""

import json

import jax

jax.config.update("jax_enable_x64", True)

import numpy as np  # noqa: E402

import jaxgt  # noqa: E402
from jaxgt import sharding  # noqa: E402
from jaxgt.core.public_tree import build_public_tree  # noqa: E402
from jaxgt.search import device_tree  # noqa: E402
from jaxgt.search import evaluator as evaluators  # noqa: E402
from jaxgt.search import gtcfr  # noqa: E402


def main():
  game = jaxgt.load("kuhn_poker")
  pt = build_public_tree(game)
  source = device_tree.source_from_game(game)
  config = gtcfr.make_config(source, simulations=4, capacity=pt.num_public_states)
  evaluator = evaluators.exact(source)
  decision = [int(s) for s in np.flatnonzero(~pt.terminal_public)]
  batch = 8
  roots = np.asarray([decision[b % len(decision)] for b in range(batch)], np.int32)
  rng = np.random.default_rng(0)
  ranges = []
  for s in roots:
    r = [rng.random(len(pt.infostates[p][s])) + 0.1 for p in (0, 1)]
    ranges.append(gtcfr.root_ranges(source, int(s), [x / x.sum() for x in r]))
  ranges = np.stack(ranges)
  keys = jax.random.split(jax.random.PRNGKey(5), batch)

  def run(roots, ranges, keys):
    return gtcfr.search(source, config, evaluator, roots, ranges, keys)

  one = run(roots, ranges, keys)
  mesh = sharding.mesh()
  sharded = sharding.map_batch(run, mesh, roots, ranges, keys)
  diff = max(float(np.max(np.abs(np.asarray(x, np.float64) - np.asarray(y, np.float64))))
             for x, y in zip(jax.tree_util.tree_leaves(one), jax.tree_util.tree_leaves(sharded))
             if np.size(x))
  print("RESULT " + json.dumps({"devices": len(jax.devices()), "max_diff": diff,
                                "nodes": np.asarray(one.state.tree.num_nodes).tolist()}))


if __name__ == "__main__":
  main()
