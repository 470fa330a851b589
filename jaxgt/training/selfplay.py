"""Sound self-play actors of Student of Games (Schmid et al., "Student of Games: A unified
learning algorithm for both perfect and imperfect information games", 2023, Algorithm 2
"Actor", "Modified Continual Re-solving"), ``G`` games advancing together as one batch axis.

:class:`SelfPlay` holds the static pieces (game, GT-CFR config, the network evaluator); its
:meth:`SelfPlay.step` is one jitted, vmapped program that advances every game by one
decision with the network parameters passed as data (no recompilation when they change):

* the decision's search is GT-CFR (:func:`jaxgt.search.gtcfr.search`, network evaluator,
  ``evaluator_state=params``): a game's first decision searches from the game's root, later
  ones re-solve with the ``alpha``-modified gadget from the previous search's summary (the
  same summary and arguments as :class:`jaxgt.agents.gtcfr_agent.GTCFRAgent`, via its
  ``decision_args``; in self-play the previous search is the previous decision's, of either
  player);
* the move is drawn from ``(1 - epsilon) pi + epsilon uniform`` over the legal actions
  (``pi``'s argmax from decision ``greedy_after`` of a game on; the rule of the agent wrapper
  :class:`jaxgt.agents.explore.Explore`), then chance is sampled up to the next decision: the
  referee's step :func:`jaxgt.evaluation.referee.advance`;
* outputs: the search's root training example (``search_targets``: value targets where the
  root's values are the network's leaf values, policy targets where a slot acts at the
  root; its PBS the ranges those values were computed under, the opponent's being the
  average range of the re-solving gadget, :attr:`jaxgt.search.gtcfr.SearchResult.root_ranges`)
  for the replay buffer (with probability ``p_td1`` held back for a TD(1) outcome
  target, below), and on average ``q_search`` of the search's leaf queries for the query
  buffer (:func:`pick_queries` from the search's uniform sample of all its queries, so every
  query of the search is equally likely to be picked, whichever CFR iteration made it);
* a game that ends restarts at the root (chance sampled with the step's keys).

Each decision runs one search: the re-solving player and whether the gadget is on (off at a
game's first decision) are data of one search program, so under ``jax.vmap`` no branch
computes a search it then discards.

**TD(1) outcome targets** (``p_td1``; Schmid et al. 2023, "Training Process" and Algorithm 2's
"Sampling states with TD(1) targets"). Each main-line decision draws a coin (its own stream,
``fold_in(key, 5)`` of the game's step key, so with the same network the games played do not
depend on ``p_td1``): with probability ``1 - p_td1`` its example goes to the replay buffer
at once, as above; with probability ``p_td1`` its value targets are replaced by the game's
eventual outcome and the example waits in the game's pending record (``Actors.pending``, one
row per decision of the game, ``T`` rows: :func:`max_decisions`, the most decisions a game
of the tree can have; part of the actors' state, so checkpoints carry it) until the game
ends, when every pending row is written to the replay buffer with the realised payoff (after
the step's other examples, game by game in decision order) and the record is emptied. The
policy target stays the search's (the paper's "policy used in beta"); the PBS holds the
ranges the re-solve started from, the beliefs of the policy played (which the outcome
samples), where a search example holds the gadget's average range. Where the
paper's pseudocode writes main-line states *only* with TD(1) targets, jaxgt keeps its
main-line search examples and swaps their value targets, so ``p_td1 = 0`` is
search-targets-only training (no coin drawn, no pending record: the program of a run without
TD(1) targets) and ``p_td1 = 1`` the outcome-targets-only one.

*Which slots.* An example's PBS is its search's root public state ``s`` (the re-solve
root, the decision's public state or an ancestor of it); the realised history ``h*`` there
is the decision history's ancestor in ``s``. The outcome gives a value only to the two
information states actually held, ``I_0(h*)`` and ``I_1(h*)``: those two slots are masked
in (``value_mask``, per slot), every other slot is masked out (no value target), and so is
the whole row where ``s`` has internal histories (``SlotMap.leaf_ok``, as for the search's
own targets).

*Value convention.* The search's value targets are network-scale counterfactual values
(:func:`jaxgt.nets.gtcfr_evaluator.search_targets`, :mod:`jaxgt.nets.encoding`):
``v_p(I) = sum_{h in I} q(h) r_o(I_o(h)) u_p(h)`` with the PBS's normalised ranges ``r``
and ``q(h) = pi_c(h) / C(s)`` -- values weighted by the opponent's range and chance, not
expected values (the expected value of ``I`` is ``v_p(I) / c_p(I)``, ``c_p(I) = sum_{h in
I} q(h) r_o(I_o(h))``, the division the leaf evaluator makes). The TD(1) target uses the
same convention: ``c_p(I_p(h*)) u_p(z)`` for player ``p``'s held slot, ``u_p(z)`` the
realised terminal's payoff to ``p`` (``u_1 = -u_0``) and ``c_p`` computed from the example's
own PBS ranges. When the ranges are the beliefs of the policy played, ``h*`` is drawn within
``I`` with probability ``q(h) r_o(I_o(h)) / c_p(I)`` and ``u_p(z)`` is a sample of ``h*``'s
value, so the target's expectation given ``I`` is ``v_p(I)``: the network is fitted to one
scale whichever target a row got. (The ranges follow the searches' policies, the moves
``(1 - epsilon) pi + epsilon uniform``: with ``epsilon > 0`` the sample is of a slightly
more exploratory continuation, as in the paper.) (A held
information state the opponent's range gives no weight, ``c_p = 0``, gets the target 0,
its counterfactual value under that PBS.)

Shape letters: ``G`` games, ``N`` search-tree nodes, ``K`` slots, ``A`` actions, ``L`` logged
queries per search, ``T`` pending rows per game (TD(1); 1 when ``p_td1 = 0``).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxgt import struct
from jaxgt.agents.explore import Explore
from jaxgt.agents.gtcfr_agent import GTCFRAgent, GTCFRAgentState
from jaxgt.core import rng
from jaxgt.core.game_tree import NO_INDEX, CompiledGame, GameTree
from jaxgt.evaluation import referee
from jaxgt.nets import gtcfr_evaluator
from jaxgt.nets.cvpn import CVPN
from jaxgt.nets.encoding import PBS, slot_sums
from jaxgt.search import device_tree
from jaxgt.search import gtcfr as gtcfr_search
from jaxgt.training import buffers
from jaxgt.training.config import TrainConfig

DTYPE = "float32"
"""Float dtype of the training searches (the network's)."""

TD1_STREAM = 5
"""``fold_in`` data of a game's step key that draws its TD(1) coin (the step key's ``split``
into five serves the search, move, chance, query and restart draws)."""


def max_decisions(tree: GameTree) -> int:
  """The most player decisions on one root-to-terminal path of ``tree`` (host side)."""
  player = np.asarray(tree.player)
  parent = np.asarray(tree.parent)
  acts = (player == 0) | (player == 1)
  before = np.zeros(player.shape[0], np.int64)  # decisions strictly above each history
  for lo, hi in tree.depth_levels[1:]:
    par = parent[lo:hi]
    before[lo:hi] = before[par] + acts[par]
  return int(np.max(np.where(acts, before + 1, 0), initial=0))


def pick_queries(valid, expected, key):
  """``[..., L]`` bool: on average ``min(expected, m)`` of the ``m`` valid entries of each row
  of ``valid [..., L]``, each kept independently with probability ``min(1, expected / m)``
  (Schmid et al. 2023, Algorithm 2: "pick on average q_search neural net queries"). With
  the search's uniform query sample (:class:`jaxgt.search.query_log.QueryLog`) every one of a
  search's ``n`` queries is picked with probability ``min(expected, L, n) / n``."""
  m = jnp.sum(valid, axis=-1, keepdims=True)
  prob = jnp.minimum(1.0, expected / jnp.maximum(m, 1))
  return valid & (rng.uniform(key, valid.shape) < prob)


@struct.dataclass
class Actors:
  """The ``G`` self-play games."""

  history: Any  # [G] int32 each game's current decision history
  summary: GTCFRAgentState  # [G] the previous search's summary (GTCFRAgent's state)
  moves: Any  # [G] int32 decisions made in the current game
  games: Any  # [] int32 games finished
  # The current games' decisions drawn for TD(1) targets, row = decision index in the game
  # (module docstring): values [G, T, 2, K] the held slots' weights c_p(I) (the payoff's
  # factor), value_mask [G, T, 2, K] the held slots, PBS and policy the search's.
  pending: buffers.ReplayExample
  pending_valid: Any  # [G, T] bool the row holds a decision of the current game


@struct.dataclass
class Decision:
  """What one game's decision produced (add ``[G]`` in front)."""

  example: buffers.ReplayExample  # the search root's training example
  example_valid: Any  # [] bool written to the replay buffer now (not held back for TD(1))
  td1: Any  # [] bool held back for a TD(1) outcome target
  terminal: Any  # [] int32 the terminal history the decision ended the game at (-1: goes on)
  queries: PBS  # [L] the search's logged leaf queries
  query_valid: Any  # [L] bool logged and picked (on average q_search of them)
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
        capacity=cfg.capacity or None, log_queries=cfg.log_queries,
        value_average=cfg.value_average, dtype=DTYPE)
    evaluator = gtcfr_evaluator.cvpn_evaluator(source, self.model)
    agent = GTCFRAgent(self.game, simulations=cfg.simulations,
                       expansions_per_update=cfg.expansions_per_update, evaluator=evaluator,
                       capacity=search_cfg.capacity, alpha=cfg.alpha,
                       value_average=cfg.value_average, dtype=DTYPE)
    smap = gtcfr_evaluator.slot_map(source, self.model.encoding)
    enc = self.model.encoding
    held = np.stack([np.where(enc.public_tree.aug[p] >= 0, enc.slot_of[p][np.maximum(enc.public_tree.aug[p], 0)],
                              NO_INDEX) for p in (0, 1)]).astype(np.int32)
    set_ = object.__setattr__
    set_(self, "held_slot", jnp.asarray(held))  # [2, H] encoding slot of each history's I_p(h)
    set_(self, "td1_rows", max_decisions(self.game.tree) if cfg.p_td1 > 0 else 1)  # T
    set_(self, "tree", self.game.device_tree(DTYPE))
    set_(self, "rules", self.game.rules(DTYPE))  # the referee's step reads the game through them
    set_(self, "source", source)
    set_(self, "search_config", search_cfg)
    set_(self, "evaluator", evaluator)
    set_(self, "agent", agent)
    set_(self, "explore", Explore(agent, cfg.epsilon, cfg.greedy_after))
    set_(self, "leaf_ok", jnp.asarray(smap.leaf_ok))
    set_(self, "acts", jnp.asarray(np.asarray(self.model.encoding.legal).reshape(self.model.encoding.num_public_states, -1).any(-1)))
    set_(self, "step", jax.jit(self._step))

  # ---------------------------------------------------------------- one game
  def examples(self, result: gtcfr_search.SearchResult, ranges) -> buffers.ReplayExample:
    """The ReplayExample of a search's root (``search_targets``; value targets where the root
    public state's values are leaf values, policy targets where a slot acts)."""
    enc = self.model.encoding
    pbs, values, policy = gtcfr_evaluator.search_targets(enc, self.source, result, ranges)
    pbs = PBS(public=pbs.public, ranges=pbs.ranges.astype(DTYPE))
    return buffers.ReplayExample(pbs=pbs, values=values.astype(DTYPE),
                                 policy=policy.astype(DTYPE),
                                 value_mask=self.leaf_ok[pbs.public]
                                 & jnp.asarray(enc.mask)[pbs.public],
                                 policy_mask=self.acts[pbs.public])

  def _search(self, params, summary, history, key):
    """The decision's search from ``summary`` (one search for both players, the first
    decision included, the gadget off there): ``(probs [A], new summary, example, queries
    [L], logged [L], search result, played PBS)``. The example's PBS holds the ranges its
    values were computed under (:attr:`jaxgt.search.gtcfr.SearchResult.root_ranges`: the
    re-solving player's given range and the opponent's average gadget range), not the ranges
    the re-solve started from; those, the beliefs of the policy played, are the played PBS's
    (a TD(1) row's PBS: module docstring)."""
    tree, src, agent = self.tree, self.source, self.agent
    public, player = tree.history_public[history], tree.player[history]
    root, ranges, opp_values, path, on = agent.decision_args(summary, public, player)
    res = gtcfr_search.search(src, self.search_config, self.evaluator, root, ranges, key,
                              player=player, opp_values=opp_values, alpha=agent.alpha, path=path,
                              evaluator_state=params, gadget=on)
    qpbs, qvalid = gtcfr_evaluator.query_pbs(self.model.encoding, src, res.state.queries)
    qpbs = PBS(public=qpbs.public, ranges=qpbs.ranges.astype(DTYPE))
    return (agent.read_policy(res, history), agent.after_search(summary, res, public),
            self.examples(res, res.root_ranges), qpbs, qvalid, res,
            self.examples(res, ranges).pbs)

  def _restart(self, key):
    """A fresh game: ``(first decision history, empty summary)``."""
    k_walk, k_agent = rng.split(key)
    pos, _ = referee.through_chance(self.rules, referee.root(self.rules), k_walk,
                                    jnp.dtype(DTYPE))
    return pos.state, self.agent.init(k_agent)

  def td1_example(self, ex: buffers.ReplayExample, history, pbs=None) -> buffers.ReplayExample:
    """``ex`` (a main-line example of the decision at ``history``) as a TD(1) row waiting for
    the outcome (module docstring): ``values [2, K]`` hold ``c_p(I_p(h*))`` at player ``p``'s
    held slot and 0 elsewhere, ``value_mask [2, K]`` only the held slots (none where the
    example has no value targets); the realised outcome ``u_p`` multiplies row ``p`` later.
    ``pbs``: the example's public state with the beliefs of the policy played, which replace
    its PBS (default: ``ex``'s kept)."""
    tree, enc = self.tree, self.model.encoding
    if pbs is not None:
      ex = ex.replace(pbs=pbs)
    s = ex.pbs.public
    # h*: the deepest ancestor of the decision history in the example's public state s.
    h = jax.lax.while_loop(lambda x: (x >= 0) & (tree.history_public[jnp.maximum(x, 0)] != s),
                           lambda x: tree.parent[x], jnp.asarray(history, jnp.int32))
    slots = self.held_slot[:, jnp.maximum(h, 0)]  # [2]
    K = enc.k_max
    held = (jnp.arange(K) == slots[:, None]) & (slots[:, None] >= 0) & (h >= 0)  # [2, K]
    weight = slot_sums(jnp.asarray(enc.hist_slot)[s], jnp.asarray(enc.hist_q)[s],
                       jnp.asarray(enc.mask)[s], ex.pbs.ranges)  # [2, K] c_p(I)
    mask = held & ex.value_mask
    return ex.replace(values=jnp.where(mask, weight, 0.0).astype(ex.values.dtype),
                      value_mask=mask)

  def _one(self, params, history, summary, moves, pending, pending_valid, key):
    cfg = self.config
    tree = self.tree
    A = tree.num_actions
    k_search, k_move, k_chance, k_keep, k_restart = rng.split(key, 5)
    probs, summary, ex, qpbs, qvalid, res, played = self._search(params, summary, history,
                                                                  k_search)
    visits = res.state.history_visits
    move = self.explore.mix(probs, tree.children[history, :A] >= 0, moves)
    pos = referee.at(self.rules, jnp.asarray(history, jnp.int32))
    pos, _ = referee.advance(self.rules, pos, move, k_move, k_chance, jnp.dtype(DTYPE))
    done = ~referee.live(self.rules, pos)
    nxt = jnp.where(pos.ok, pos.state, NO_INDEX)
    terminal = jnp.where(done, nxt, NO_INDEX)
    if cfg.p_td1 > 0:  # static: p_td1 = 0 draws no coin and leaves the record empty
      td1 = rng.uniform(rng.fold_in(key, TD1_STREAM), (), jnp.dtype(DTYPE)) < cfg.p_td1
      row = jnp.where(td1, moves, self.td1_rows)  # T: dropped
      pending = jax.tree_util.tree_map(lambda x, r: x.at[row].set(r, mode="drop"), pending,
                                       self.td1_example(ex, history, played))
      pending_valid = pending_valid.at[row].set(True, mode="drop")
      u0 = referee.terminal_payoff(self.rules, pos, 0).astype(DTYPE)  # player 0's payoff if done
      outcome = jnp.stack([u0, -u0])[:, None]  # [2, 1]
      flush = pending.replace(values=pending.values * outcome)  # [T]
      flush_valid = pending_valid & done
      pending_valid = pending_valid & ~done
    else:
      td1 = jnp.zeros((), bool)
      flush, flush_valid = pending, jnp.zeros_like(pending_valid)
    h0, fresh = self._restart(k_restart)
    nxt = jnp.where(done, h0, nxt)
    summary = jax.tree_util.tree_map(lambda a, b: jnp.where(done, a, b), fresh, summary)
    moves = jnp.where(done, 0, moves + 1)
    keep = pick_queries(qvalid, cfg.q_search, k_keep)
    dec = Decision(example=ex, example_valid=~td1, td1=td1, terminal=terminal, queries=qpbs,
                   query_valid=keep, history_visits=visits)
    return nxt, summary, moves, done, dec, pending, pending_valid, flush, flush_valid

  # ---------------------------------------------------------------- the batch
  def init(self, key) -> Actors:
    """``G`` fresh games."""
    keys = rng.split(key, self.config.num_actors)
    h, summary = jax.vmap(self._restart)(keys)
    G, T = self.config.num_actors, self.td1_rows
    empty = buffers.replay_buffer(self.model.encoding, G * T, DTYPE).data  # [G * T]
    pending = jax.tree_util.tree_map(lambda x: x.reshape((G, T) + x.shape[1:]), empty)
    return Actors(history=h, summary=summary, moves=jnp.zeros(G, jnp.int32),
                  games=jnp.zeros((), jnp.int32), pending=pending,
                  pending_valid=jnp.zeros((G, T), bool))

  def _step(self, params, actors: Actors, replay: buffers.ReplayBuffer,
            queries: buffers.QueryBuffer, key):
    """Every game's next decision: ``(actors, replay, queries, metrics)`` with the main-line
    examples added to ``replay`` (those drawn for TD(1) targets when their game ends, after
    this step's others, game by game in decision order) and the kept leaf queries to
    ``queries``. ``metrics``: ``searches``, ``queries_added``, ``examples_added`` (all
    written rows), ``td1_sampled`` (decisions held back for TD(1) targets), ``td1_added``
    (TD(1) rows written), ``history_visits`` and ``terminal`` ``[G]`` int32 (the terminal
    history each game ended at in this step, -1 where it goes on)."""
    G = self.config.num_actors
    keys = rng.split(key, G)
    h, summary, moves, done, dec, pending, pending_valid, flush, flush_valid = jax.vmap(
        self._one, in_axes=(None, 0, 0, 0, 0, 0, 0))(
            params, actors.history, actors.summary, actors.moves, actors.pending,
            actors.pending_valid, keys)
    replay = buffers.add_replay(replay, dec.example, dec.example_valid)
    if self.config.p_td1 > 0:  # static: p_td1 = 0 writes exactly what it always did
      rows = jax.tree_util.tree_map(lambda x: x.reshape((-1,) + x.shape[2:]), flush)
      replay = buffers.add_replay(replay, rows, flush_valid.reshape(-1))
    flat = jax.tree_util.tree_map(lambda x: x.reshape((-1,) + x.shape[2:]), dec.queries)
    queries = buffers.add_queries(queries, flat, dec.query_valid.reshape(-1))
    actors = Actors(history=h, summary=summary, moves=moves,
                    games=actors.games + jnp.sum(done, dtype=jnp.int32), pending=pending,
                    pending_valid=pending_valid)
    td1_added = jnp.sum(flush_valid, dtype=jnp.int32)
    metrics = {"searches": jnp.asarray(G, jnp.int32),
               "queries_added": jnp.sum(dec.query_valid, dtype=jnp.int32),
               "examples_added": jnp.sum(dec.example_valid, dtype=jnp.int32) + td1_added,
               "td1_sampled": jnp.sum(dec.td1, dtype=jnp.int32),
               "td1_added": td1_added,
               "history_visits": jnp.sum(dec.history_visits, dtype=jnp.int32),
               "terminal": dec.terminal}
    return actors, replay, queries, metrics
