"""Student of Games' self-play actors and query solver on a device game played through its rules
(Schmid et al. 2023, Algorithm 2), for games too large to enumerate whose public states factor
(Liar's Dice with two dice each).

Nothing about the whole game is tabulated: every search grows its tree from the rules
(:func:`jaxgt.search.rules_source.rules_source`, the regret phase on factored ranges) and a
public belief state is a state of the game (any deal: its public part counts) with both players'
ranges over their private states, ``[2, K]`` (:class:`~jaxgt.nets.factored_encoding.
FactoredEncoding`), so the replay and query buffers hold game states.

* :class:`DeviceSelfPlay` (the actors): ``G`` games advance together through the rules. Each
  decision is a GT-CFR search with the current network at the leaves, continually re-solving
  as the compiled actors do (:class:`~jaxgt.agents.device_gtcfr.DeviceGTCFRAgent` with
  ``resolve=True``: a game's first decision from the post-deal root with uniform ranges, later
  ones re-solved with the ``alpha``-modified gadget from the previous decision's search, of
  either player), the move drawn from the search's average policy at the acting player's
  private state mixed with the config's exploration (``epsilon``-uniform, greedy after
  ``greedy_after`` decisions of a game). Each search writes its root's training example to
  the replay buffer (the re-solve root's state, the ranges its values were computed under:
  :attr:`~jaxgt.search.gtcfr.SearchResult.root_ranges`, the opponent's average gadget range;
  its root counterfactual values and average policy, as the query solver's examples), and on
  average ``q_search`` of its logged leaf queries (the PBS of a queried node: its
  representative state and its normalised leaf ranges) go to the query buffer. (TD(1) outcome
  targets, ``p_td1 > 0``, are refused here: :class:`jaxgt.training.loop.DeviceTrainer`.)
* :class:`DeviceQuerySolver`: a query's targets are the root counterfactual values and average
  policy of a GT-CFR solve rooted at the query's state with its ranges fixed for both players
  (no gadget; ``SoG(solver_simulations, c)`` with the network at the leaves). Its root holds
  the pairs' chance probability given the public chance events (``private_chance``), so the
  solve's root values are the network's value scale (:mod:`jaxgt.nets.factored_encoding`)
  without a change of scale. Each solve's own leaf queries go back to the query buffer, on
  average ``q_recursive`` of them.

Shape letters: ``G`` games, ``B`` solves, ``L`` logged queries per search, ``K`` private states
per player (padded), ``A`` actions.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp

from jaxgt import struct
from jaxgt.agents.device_gtcfr import DeviceGTCFRAgent, ResolveSummary
from jaxgt.agents.explore import Explore
from jaxgt.core import rng
from jaxgt.core.factored import check_factored
from jaxgt.evaluation import referee
from jaxgt.games.device import DeviceGame
from jaxgt.nets import gtcfr_evaluator
from jaxgt.nets.cvpn import CVPN
from jaxgt.nets.encoding import PBS
from jaxgt.nets.factored_encoding import FactoredEncoding
from jaxgt.search import gtcfr as gtcfr_search
from jaxgt.search import rules_source
from jaxgt.training import buffers
from jaxgt.training.config import TrainConfig
from jaxgt.training.selfplay import DTYPE, pick_queries


@struct.dataclass
class DeviceActors:
  """The ``G`` self-play games played through the rules."""

  position: referee.Position  # [G] each game's position (its state and the actions so far)
  summary: ResolveSummary  # [G] the previous decision's search (the next re-solve's start)
  moves: Any  # [G] int32 decisions made in the current game
  games: Any  # [] int32 games finished


def logged_queries(result: gtcfr_search.SearchResult) -> tuple:
  """``(PBS [L], valid [L])``: a search's logged leaf queries as PBSs of the game (the queried
  node's representative state, its normalised leaf ranges); one search (vmap for a batch).
  A query where a player's leaf reach is zero everywhere (no belief to solve for) is not
  valid."""
  log = result.state.queries
  node = jnp.asarray(log.node)
  states = jax.tree_util.tree_map(lambda x: x[jnp.maximum(node, 0)],
                                  result.state.tree.keys.state)
  ranges = jnp.asarray(log.ranges, DTYPE)
  valid = (node >= 0) & jnp.all(jnp.sum(ranges, axis=-1) > 0, axis=-1)
  return PBS(public=states, ranges=ranges), valid


def search_example(model: CVPN, state, ranges, result) -> buffers.ReplayExample:
  """The :class:`~jaxgt.training.buffers.ReplayExample` of one search rooted at ``state`` (a
  state after the private deals, its pairs' chance given the public chance events at the root:
  the network's value scale) whose root values were computed under ``ranges [2, K]``: value
  targets (root counterfactual values) at the private states chance can have dealt, policy
  targets (root average policy) where one acts."""
  enc = model.encoding
  K, A = enc.k_max, enc.num_actions
  mask, legal = enc.masks(state)
  values = jnp.where(mask, jnp.asarray(result.root_values, DTYPE)[:, :K], 0.0)
  policy = jnp.stack([result.policy[p][:K, :A] for p in (0, 1)]).astype(DTYPE)
  policy = jnp.where(legal, policy, 0.0)
  return buffers.ReplayExample(pbs=PBS(public=state, ranges=jnp.asarray(ranges, DTYPE)),
                               values=values, policy=policy, value_mask=mask,
                               policy_mask=jnp.any(legal))


@dataclasses.dataclass(frozen=True, eq=False)
class DeviceSelfPlay:
  """Static pieces of the actors on a device game (module docstring; one compilation per
  instance). ``TypeError``/``ValueError`` before anything is compiled for a game whose public
  states do not factor or a ``capacity`` that cannot hold a decision's branch."""

  game: DeviceGame
  model: CVPN
  config: TrainConfig

  def __post_init__(self):
    check_factored(self.game, "training through a game's rules")
    enc = self.model.encoding
    if not isinstance(enc, FactoredEncoding) or enc.game is not self.game:
      raise ValueError(f"the network must read {self.game.game_string()}'s public belief states "
                       "(its FactoredEncoding)")
    cfg = self.config
    source = rules_source.rules_source(self.game, dtype=DTYPE)
    evaluator = gtcfr_evaluator.cvpn_evaluator(source, self.model)
    agent = DeviceGTCFRAgent(self.game, simulations=cfg.simulations,
                             expansions_per_update=cfg.expansions_per_update,
                             evaluator=evaluator, evaluator_source=source,
                             capacity=cfg.capacity or None, value_average=cfg.value_average,
                             resolve=True, alpha=cfg.alpha, dtype=DTYPE)
    search_cfg = gtcfr_search.make_config(
        source, simulations=cfg.simulations, expansions_per_update=cfg.expansions_per_update,
        capacity=agent.config.capacity, log_queries=cfg.log_queries,
        value_average=cfg.value_average, tree_form="factored", dtype=DTYPE)
    set_ = object.__setattr__
    set_(self, "source", source)
    set_(self, "evaluator", evaluator)
    set_(self, "agent", agent)
    set_(self, "search_config", search_cfg)
    set_(self, "explore", Explore(agent, cfg.epsilon, cfg.greedy_after))
    set_(self, "step", jax.jit(self._step))

  def search(self, params, summary: ResolveSummary, position: referee.Position, player,
             key) -> tuple:
    """``(search result, next summary)``: the decision's search re-solved from ``summary`` for
    the acting ``player`` (one game; logs its leaf queries)."""
    return self.agent.search_decision(key, summary, position.actions, position.length, player,
                                      evaluator_state=params, config=self.search_config)

  def _restart(self, key) -> referee.Position:
    """A fresh game's first decision (the deals drawn)."""
    pos, _ = referee.through_chance(self.game, referee.root(self.game), key, jnp.dtype(DTYPE))
    return pos

  def _one(self, params, position, summary, moves, key):
    cfg = self.config
    k_search, k_move, k_chance, k_keep, k_restart = rng.split(key, 5)
    player, private, legal = self.agent.decision(position.state)
    res, summary = self.search(params, summary, position, player, k_search)
    root = jax.tree_util.tree_map(lambda x: x[0], res.state.tree.keys.state)
    example = search_example(self.model, root, res.root_ranges, res)
    move = self.explore.mix(self.agent.read_policy(res, player, private, legal), legal, moves)
    nxt, _ = referee.advance(self.game, position, move, k_move, k_chance, jnp.dtype(DTYPE))
    done = ~referee.live(self.game, nxt)
    fresh = self._restart(k_restart)
    nxt = jax.tree_util.tree_map(lambda a, b: jnp.where(done, a, b), fresh, nxt)
    summary = jax.tree_util.tree_map(lambda a, b: jnp.where(done, a, b),
                                     self.agent.empty_summary(), summary)
    moves = jnp.where(done, 0, moves + 1)
    qpbs, qvalid = logged_queries(res)
    keep = pick_queries(qvalid, cfg.q_search, k_keep)
    return nxt, summary, moves, done, example, qpbs, keep, res.state.tree.num_nodes

  def init(self, key) -> DeviceActors:
    """``G`` fresh games."""
    G = self.config.num_actors
    pos = jax.vmap(self._restart)(rng.split(key, G))
    summary = jax.tree_util.tree_map(lambda x: jnp.broadcast_to(x, (G,) + x.shape),
                                     self.agent.empty_summary())
    return DeviceActors(position=pos, summary=summary, moves=jnp.zeros(G, jnp.int32),
                        games=jnp.zeros((), jnp.int32))

  def _step(self, params, actors: DeviceActors, replay: buffers.ReplayBuffer,
            queries: buffers.QueryBuffer, key):
    """Every game's next decision: ``(actors, replay, queries, metrics)`` with the searches'
    root examples added to ``replay`` and the kept leaf queries to ``queries``. ``metrics``:
    ``searches``, ``queries_added``, ``examples_added``, ``nodes`` (the most tree nodes a
    search used), ``td1_sampled`` and ``td1_added`` (0: no TD(1) targets here)."""
    G = self.config.num_actors
    pos, summary, moves, done, examples, qpbs, keep, nodes = jax.vmap(
        self._one, in_axes=(None, 0, 0, 0, 0))(params, actors.position, actors.summary,
                                               actors.moves, rng.split(key, G))
    replay = buffers.add_replay(replay, examples, jnp.ones(G, bool))
    flat = jax.tree_util.tree_map(lambda x: x.reshape((-1,) + x.shape[2:]), qpbs)
    queries = buffers.add_queries(queries, flat, keep.reshape(-1))
    actors = DeviceActors(position=pos, summary=summary, moves=moves,
                          games=actors.games + jnp.sum(done, dtype=jnp.int32))
    zero = jnp.zeros((), jnp.int32)
    metrics = {"searches": jnp.asarray(G, jnp.int32),
               "queries_added": jnp.sum(keep, dtype=jnp.int32),
               "examples_added": jnp.asarray(G, jnp.int32),
               "nodes": jnp.max(nodes).astype(jnp.int32), "td1_sampled": zero,
               "td1_added": zero}
    return actors, replay, queries, metrics


@dataclasses.dataclass(frozen=True, eq=False)
class DeviceQuerySolver:
  """The query solver on a device game (module docstring); shares the actors' source,
  evaluator and network."""

  actors: DeviceSelfPlay

  def __post_init__(self):
    cfg = self.actors.config
    search_cfg = gtcfr_search.make_config(
        self.actors.source, simulations=cfg.solver_simulations,
        expansions_per_update=cfg.solver_expansions_per_update or cfg.expansions_per_update,
        capacity=cfg.capacity or None, log_queries=cfg.log_queries,
        value_average=cfg.value_average, tree_form="factored", dtype=DTYPE)
    object.__setattr__(self, "search_config", search_cfg)
    object.__setattr__(self, "step", jax.jit(self._step))

  def solve(self, params, pbs: PBS, key) -> tuple:
    """``(examples [B], search results [B])``: the solves of the PBSs ``pbs [B]`` (states of the
    game after the private deals, not terminal, with normalised ranges ``[B, 2, K]``) and
    their training examples: PBS, root counterfactual values ``[B, 2, K]`` (network scale),
    root average policy ``[B, 2, K, A]`` (zero rows where a private state does not act)."""
    sp = self.actors
    ranges = jnp.asarray(pbs.ranges, DTYPE)
    B = ranges.shape[0]
    res = gtcfr_search.search(sp.source, self.search_config, sp.evaluator, pbs.public, ranges,
                              rng.split(key, B), evaluator_state=params)
    model = self.actors.model
    return jax.vmap(lambda s, r, x: search_example(model, s, r, x))(pbs.public, ranges,
                                                                      res), res

  def _step(self, params, replay: buffers.ReplayBuffer, queries: buffers.QueryBuffer, key):
    """``(replay, queries, metrics)`` after solving one batch of ``solver_batch`` queries; with
    fewer waiting, the missing entries are solved from the post-deal root as padding and
    dropped. ``metrics``: ``solved``, ``recursive_queries``."""
    sp = self.actors
    cfg = sp.config
    B = cfg.solver_batch
    k_take, k_search, k_keep = rng.split(key, 3)
    queries, pbs, valid = buffers.sample_queries(queries, k_take, B)
    root = sp.agent.root
    states = jax.tree_util.tree_map(
        lambda q, r: jnp.where(valid.reshape((B,) + (1,) * (q.ndim - 1)), q, r),
        pbs.public, root)
    ranges = jnp.where(valid[:, None, None], jnp.asarray(pbs.ranges, DTYPE),
                       sp.agent.ranges.astype(DTYPE))
    examples, res = self.solve(params, PBS(public=states, ranges=ranges), k_search)
    replay = buffers.add_replay(replay, examples, valid)
    qpbs, qvalid = jax.vmap(logged_queries)(res)
    keep = pick_queries(qvalid & valid[:, None], cfg.q_recursive, k_keep)
    flat = jax.tree_util.tree_map(lambda x: x.reshape((-1,) + x.shape[2:]), qpbs)
    queries = buffers.add_queries(queries, flat, keep.reshape(-1))
    metrics = {"solved": jnp.sum(valid, dtype=jnp.int32),
               "recursive_queries": jnp.sum(keep, dtype=jnp.int32)}
    return replay, queries, metrics
