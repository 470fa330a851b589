"""Run by tests/test_training_sharding.py in a subprocess with emulated devices: one training
iteration (self-play actors, query solver, learner) with the actors' games split over 8
devices and the learner data-parallel, against the same iteration on one device; prints
``RESULT {json}``."""

import dataclasses
import json

import jax
import numpy as np

import jaxgt
from jaxgt import sharding
from jaxgt.training import config as config_lib
from jaxgt.training import loop


def _diff(a, b):
  return max(float(np.max(np.abs(np.asarray(x, np.float64) - np.asarray(y, np.float64))))
             for x, y in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b))
             if np.size(x))


def main():
  game = jaxgt.load("kuhn_poker")
  cfg = dataclasses.replace(config_lib.preset("tiny"), num_actors=8, batch_size=8)
  trainer = loop.Trainer(game, cfg)
  mesh = sharding.mesh()
  state = trainer.init(0)
  one, m1 = trainer.iterate(trainer.iterate(state)[0])
  placed = trainer.place(state, mesh)
  actor_shards = len(placed.actors.history.sharding.device_set)
  two, m2 = trainer.iterate(trainer.iterate(placed, mesh)[0], mesh)
  refused = False
  try:
    trainer.place(state, sharding.mesh(jax.devices()[:3]))
  except ValueError:
    refused = True
  print("RESULT " + json.dumps({
      "devices": len(jax.devices()), "actor_shards": actor_shards,
      "params": _diff(one.learner.params, two.learner.params),
      "actors": _diff(one.actors, two.actors), "replay": _diff(one.replay, two.replay),
      "loss": abs(m1["loss"] - m2["loss"]), "examples": int(m2["examples"]),
      "refused_uneven": refused}))


if __name__ == "__main__":
  main()
