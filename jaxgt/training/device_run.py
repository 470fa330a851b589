"""The trained network of a device game's run directory, and the Student of Games agent that
plays that game through its rules with it (Schmid et al., *Student of Games*, 2023).

A run of a device game (a game too large to enumerate, whose public states factor) keeps the
layout of every run (:mod:`jaxgt.training.loop`): ``config.json`` naming the game by its game
string and the :class:`~jaxgt.training.config.TrainConfig`, and orbax checkpoints whose state
holds ``learner.params`` and whose metadata names the network
(:func:`~jaxgt.training.checkpoint.network_metadata`; ``jaxgt train`` writes such runs,
:class:`~jaxgt.training.loop.DeviceTrainer`). :func:`load_network` reads only the
network: the CVPN on the game's :class:`~jaxgt.nets.factored_encoding.FactoredEncoding` with
the run's architecture, and the parameters of the newest checkpoint, checked against that
network's shapes. A run of another game (or a network of another layout) is refused with a
``ValueError`` before anything is compiled.
"""

from __future__ import annotations

import pathlib

import jax
import numpy as np

from jaxgt.agents.device_gtcfr import DeviceGTCFRAgent
from jaxgt.games.device import DeviceGame
from jaxgt.nets import cvpn as cvpn_lib
from jaxgt.nets.cvpn import CVPN
from jaxgt.nets.factored_encoding import FactoredEncoding
from jaxgt.search import rules_source
from jaxgt.training import checkpoint
from jaxgt.training.agent import ParamsHolder, params_evaluator

CHECKPOINTS = "checkpoints"  # the run directory's checkpoint folder (jaxgt.training.loop)
NETWORK_KEYS = ("network", "hidden", "embed_dim", "k_max", "num_actions", "feature_size")
"""Checkpoint metadata entries that must agree with the network built for the game."""


def network_for(game: DeviceGame, config) -> CVPN:
  """The CVPN of a run of ``game`` with ``config``'s architecture (hidden widths, embedding)."""
  return CVPN(FactoredEncoding(game), hidden=tuple(config.hidden), embed_dim=config.embed_dim,
              value_space=config.value_space)


def load_network(out, game: DeviceGame) -> tuple:
  """``(model, params, config)``: the network of the newest checkpoint of the run in ``out``,
  a run of ``game`` (module docstring); ``ValueError`` for a run of another game or network."""
  from jaxgt.training.loop import read_config  # the loop owns the run layout
  out = pathlib.Path(out)
  name, config = read_config(out)
  if name != game.game_string():
    raise ValueError(f"{out} holds a run of {name}, not {game.game_string()}")
  model = network_for(game, config)
  want = {"game": game.game_string(), "network": "cvpn",
          "hidden": [int(h) for h in model.hidden], "embed_dim": int(model.embed_dim),
          "k_max": int(model.encoding.k_max), "num_actions": int(model.encoding.num_actions),
          "feature_size": int(model.encoding.feature_size)}
  meta = checkpoint.read_metadata(out / CHECKPOINTS)
  for k in ("game",) + NETWORK_KEYS:
    if k in meta and meta[k] != want[k]:
      what = "game" if k == "game" else "network"
      raise ValueError(f"{out}: its checkpoint is for another {what} ({k} = {meta[k]!r}, "
                       f"{want[k]!r} for {game.game_string()})")
  template = cvpn_lib.init(model, jax.random.PRNGKey(0))  # the shapes a fitting network has
  params = _restore_params(out / CHECKPOINTS, template)
  return model, params, config


def _restore_params(directory, template):
  """``learner.params`` of the newest checkpoint under ``directory`` with ``template``'s
  structure, shapes and dtypes (``ValueError`` otherwise)."""
  raw, where = checkpoint.restore_stored(directory)
  try:
    stored = raw["learner"]["params"]
  except (KeyError, TypeError) as e:
    raise checkpoint.CheckpointError(f"checkpoint {where} holds no learner.params") from e
  leaves, treedef = jax.tree_util.tree_flatten(template)
  got = jax.tree_util.tree_leaves(stored)
  paths_t = [jax.tree_util.keystr(p) for p, _ in jax.tree_util.tree_flatten_with_path(template)[0]]
  paths_s = [jax.tree_util.keystr(p) for p, _ in jax.tree_util.tree_flatten_with_path(stored)[0]]
  if paths_t != paths_s or any(np.shape(s) != np.shape(t) for s, t in zip(got, leaves)):
    raise checkpoint.CheckpointError(f"checkpoint {where}: its network's parameters do not fit "
                                     "this game's network (a network trained for another game?)")
  return jax.tree_util.tree_unflatten(treedef, [np.asarray(s, np.asarray(t).dtype)
                                                for s, t in zip(got, leaves)])


def device_sog_agent(game: DeviceGame, model: CVPN, params, *, simulations: int,
                     dtype="float32", **kwargs) -> DeviceGTCFRAgent:
  """``SoG(simulations, c)`` on device game ``game`` with the network ``model`` at ``params`` as
  the leaf evaluator on the tree grown from the rules (:class:`DeviceGTCFRAgent`, continually
  re-solving unless ``resolve=False``); ``kwargs`` are that agent's (``expansions_per_update``,
  ``capacity``, ``value_average``, ``resolve``, ``alpha``, ...)."""
  if not isinstance(model.encoding, FactoredEncoding) or model.encoding.game is not game:
    raise ValueError(f"the network reads another game's public belief states, not "
                     f"{game.game_string()}'s (FactoredEncoding of this game)")
  source = rules_source.rules_source(game, dtype=dtype)
  evaluator = params_evaluator(source, model, ParamsHolder(params))
  return DeviceGTCFRAgent(game, simulations=simulations, evaluator=evaluator,
                          evaluator_source=source, dtype=dtype, **kwargs)
