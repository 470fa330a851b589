"""Sound self-play actors of Student of Games (``003``, Algorithm 2 "Actor", "Modified
Continual Re-solving"), ``G`` games advancing together as one batch axis.

:class:`SelfPlay` holds the static pieces (game, GT-CFR config, the network evaluator); its
:meth:`SelfPlay.step` is one jitted, vmapped program that advances every game by one
decision with the network parameters passed as data (no recompilation when they change):

* the decision's search is GT-CFR (:func:`jaxgt.search.gtcfr.search`, network evaluator,
  ``evaluator_state=params``): a game's first decision searches from the game's root, later
  ones re-solve with the ``alpha``-modified gadget from the previous search's summary (the
  same summary and arguments as :class:`jaxgt.agents.gtcfr.GTCFRAgent`, via its
  ``decision_args``; in self-play the previous search is the previous decision's, of either
  player);
* the move is drawn from ``(1 - epsilon) pi + epsilon uniform`` over the legal actions
  (``pi``'s argmax from decision ``greedy_after`` of a game on), then chance is sampled up to
  the next decision with :func:`jaxgt.evaluation.referee.through_chance`;
* outputs: the search's root training example (``search_targets``: value targets where the
  root's values are the network's leaf values, policy targets where a slot acts at the
  root) for the replay buffer, and the search's logged leaf queries, each kept with
  probability ``q_search``, for the query buffer;
* a game that ends restarts at the root (chance sampled with the step's keys).

Each decision runs one search: the re-solving player and whether the gadget is on (off at a
game's first decision) are data of one search program, so under ``jax.vmap`` no branch
computes a search it then discards.

TD(1) outcome targets (``p_td1``) are not implemented: main-line value targets are the
searches' own values (``p_td1 = 0``, the value Table S2 uses).

Shape letters: ``G`` games, ``N`` search-tree nodes, ``K`` slots, ``A`` actions, ``L`` logged
queries per search.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxgt.agents.gtcfr import GTCFRAgent, GTCFRAgentState
from jaxgt.core.compiler import CompiledGame
from jaxgt.evaluation import referee
from jaxgt.nets import gtcfr_evaluator
from jaxgt.nets.cvpn import CVPN
from jaxgt.nets.encoding import PBS
from jaxgt.search import device_tree
from jaxgt.search import gtcfr as gtcfr_search
from jaxgt.training import buffers
from jaxgt.training.config import TrainConfig

DTYPE = "float32"
"""Float dtype of the training searches (the network's)."""


@struct.dataclass
class Actors:
  """The ``G`` self-play games."""

  history: Any  # [G] int32 each game's current decision history
  summary: GTCFRAgentState  # [G] the previous search's summary (GTCFRAgent's state)
  moves: Any  # [G] int32 decisions made in the current game
  games: Any  # [] int32 games finished


@struct.dataclass
class Decision:
  """What one game's decision produced (add ``[G]`` in front)."""

  example: buffers.ReplayExample  # the search root's training example
  example_valid: Any  # [] bool
  queries: PBS  # [L] the search's logged leaf queries
  query_valid: Any  # [L] bool logged and kept (probability q_search)
  history_visits: Any  # [] int32 live tree histories summed over the search's CFR iterations


@dataclasses.dataclass(frozen=True, eq=False)
class SelfPlay:
  """Static pieces of the actors (one compilation per instance)."""

  game: CompiledGame
  model: CVPN
  config: TrainConfig

  def __post_init__(self):
    cfg = self.config
    source = device_tree.source_from_game(self.game, DTYPE)
    search_cfg = gtcfr_search.make_config(
        source, simulations=cfg.simulations, expansions_per_update=cfg.expansions_per_update,
        capacity=cfg.capacity or None, log_queries=cfg.log_queries, dtype=DTYPE)
    evaluator = gtcfr_evaluator.cvpn_evaluator(source, self.model)
    agent = GTCFRAgent(self.game, simulations=cfg.simulations,
                       expansions_per_update=cfg.expansions_per_update, evaluator=evaluator,
                       capacity=search_cfg.capacity, alpha=cfg.alpha, dtype=DTYPE)
    smap = gtcfr_evaluator.slot_map(source, self.model.encoding)
    set_ = object.__setattr__
    set_(self, "tree", self.game.device_tree(DTYPE))
    set_(self, "source", source)
    set_(self, "search_config", search_cfg)
    set_(self, "evaluator", evaluator)
    set_(self, "agent", agent)
    set_(self, "leaf_ok", jnp.asarray(smap.leaf_ok))
    set_(self, "acts", jnp.asarray(np.asarray(self.model.encoding.legal).reshape(self.model.encoding.num_public_states, -1).any(-1)))
    set_(self, "step", jax.jit(self._step))

  # ---------------------------------------------------------------- one game
  def examples(self, result: gtcfr_search.SearchResult, ranges, valid):
    """``(ReplayExample, valid)`` of a search's root (``search_targets``; value targets where
    the root public state's values are leaf values, policy targets where a slot acts)."""
    enc = self.model.encoding
    pbs, values, policy = gtcfr_evaluator.search_targets(enc, self.source, result, ranges)
    pbs = PBS(public=pbs.public, ranges=pbs.ranges.astype(DTYPE))
    ex = buffers.ReplayExample(pbs=pbs, values=values.astype(DTYPE),
                               policy=policy.astype(DTYPE),
                               value_mask=valid & self.leaf_ok[pbs.public],
                               policy_mask=valid & self.acts[pbs.public])
    return ex, valid

  def _search(self, params, summary, history, key):
    """The decision's search from ``summary``: ``(probs [A], new summary, example, valid,
    queries [L], logged [L], history visits)`` (fixed shapes in all three branches)."""
    tree = self.tree
    src, cfg = self.source, self.search_config
    agent = self.agent
    public = tree.history_public[history]
    player = tree.player[history]

    def outputs(res, ranges):
      probs = agent.read_policy(res, history)
      new = agent.after_search(summary, res, public)
      ex, valid = self.examples(res, ranges, jnp.ones((), bool))
      qpbs, qvalid = gtcfr_evaluator.query_pbs(self.model.encoding, src, res.state.queries)
      qpbs = PBS(public=qpbs.public, ranges=qpbs.ranges.astype(DTYPE))
      return probs, new, ex, valid, qpbs, qvalid, res.state.history_visits

    # one search for both players, the first decision included (the gadget off there)
    root, ranges, opp_values, path, on = agent.decision_args(summary, public, player)
    res = gtcfr_search.search(src, cfg, self.evaluator, root, ranges, key, player=player,
                              opp_values=opp_values, alpha=agent.alpha, path=path,
                              evaluator_state=params, gadget=on)
    return outputs(res, ranges)

  def _restart(self, key):
    """A fresh game: ``(first decision history, empty summary)``."""
    k_walk, k_agent = jax.random.split(key)
    h, _ = referee.through_chance(self.tree, 0, k_walk, jnp.dtype(DTYPE))
    return h, self.agent.init(k_agent)

  def _one(self, params, history, summary, moves, key):
    cfg = self.config
    tree = self.tree
    A = tree.num_actions
    k_search, k_move, k_chance, k_keep, k_restart = jax.random.split(key, 5)
    probs, summary, ex, ex_valid, qpbs, qvalid, visits = self._search(params, summary, history,
                                                                      k_search)
    legal = (tree.children[history, :A] >= 0).astype(probs.dtype)
    uniform = legal / jnp.maximum(jnp.sum(legal), 1.0)
    explore = (1.0 - cfg.epsilon) * probs + cfg.epsilon * uniform
    greedy = jax.nn.one_hot(jnp.argmax(jnp.where(legal > 0, probs, -1.0)), A, dtype=probs.dtype)
    move = jnp.where(moves < cfg.greedy_after, explore, greedy)
    C = tree.children.shape[1]
    child = referee.draw(tree, history, jnp.pad(move, (0, C - A)), k_move, jnp.dtype(DTYPE))
    nxt, _ = referee.through_chance(tree, child, k_chance, jnp.dtype(DTYPE))
    done = ~referee.live(tree, nxt)
    h0, fresh = self._restart(k_restart)
    nxt = jnp.where(done, h0, nxt)
    summary = jax.tree_util.tree_map(lambda a, b: jnp.where(done, a, b), fresh, summary)
    moves = jnp.where(done, 0, moves + 1)
    keep = qvalid & (jax.random.uniform(k_keep, qvalid.shape) < cfg.q_search)
    return nxt, summary, moves, done, Decision(example=ex, example_valid=ex_valid, queries=qpbs,
                                               query_valid=keep, history_visits=visits)

  # ---------------------------------------------------------------- the batch
  def init(self, key) -> Actors:
    """``G`` fresh games."""
    keys = jax.random.split(key, self.config.num_actors)
    h, summary = jax.vmap(self._restart)(keys)
    G = self.config.num_actors
    return Actors(history=h, summary=summary, moves=jnp.zeros(G, jnp.int32),
                  games=jnp.zeros((), jnp.int32))

  def _step(self, params, actors: Actors, replay: buffers.ReplayBuffer,
            queries: buffers.QueryBuffer, key):
    """Every game's next decision: ``(actors, replay, queries, metrics)`` with the main-line
    examples added to ``replay`` and the kept leaf queries to ``queries``."""
    G = self.config.num_actors
    keys = jax.random.split(key, G)
    h, summary, moves, done, dec = jax.vmap(self._one, in_axes=(None, 0, 0, 0, 0))(
        params, actors.history, actors.summary, actors.moves, keys)
    replay = buffers.add_replay(replay, dec.example, dec.example_valid)
    flat = jax.tree_util.tree_map(lambda x: x.reshape((-1,) + x.shape[2:]), dec.queries)
    queries = buffers.add_queries(queries, flat, dec.query_valid.reshape(-1))
    actors = Actors(history=h, summary=summary, moves=moves,
                    games=actors.games + jnp.sum(done, dtype=jnp.int32))
    metrics = {"searches": jnp.asarray(G, jnp.int32),
               "queries_added": jnp.sum(dec.query_valid, dtype=jnp.int32),
               "examples_added": jnp.sum(dec.example_valid, dtype=jnp.int32),
               "history_visits": jnp.sum(dec.history_visits, dtype=jnp.int32)}
    return actors, replay, queries, metrics
