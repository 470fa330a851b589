"""The traced program of one Growing-Tree CFR search: its state, its result and both phases.

:class:`SearchProgram` holds the pieces traced once per (source, :class:`GTCFRConfig`,
evaluator, re-solving mode): the regret update (the package's one CFR iteration on the tree's
history or factored form, :mod:`jaxgt.search.regret_phase`), the expansion simulation (``pi_select = 1/2
pi_PUCT + 1/2 pi_CFR``, :func:`puct_scores`), and the search and fixed-tree solve built from
them (Schmid et al. 2023, "Student of Games: A unified learning algorithm for both perfect and
imperfect information games": "Search via Growing-Tree CFR" and supplement Algorithm 1).
:class:`SearchState` is the state they carry, :class:`SearchResult` what they return; the entry
points are :func:`jaxgt.search.gtcfr.search` and :func:`jaxgt.search.gtcfr.solve_tree`.

Shape letters: those of :mod:`jaxgt.search.device_tree` (``N``, ``M``, ``K``, ``A``).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
from jax import lax

from jaxgt import struct
from jaxgt.core import rng, sequence_form
from jaxgt.core.game_tree import NO_INDEX
from jaxgt.core.sampling import sample_index
from jaxgt.games.base import CHANCE
from jaxgt.search import device_tree
from jaxgt.search.evaluator import Evaluator
from jaxgt.search import history_cfr, query_log
from jaxgt.search.gtcfr_config import GTCFRConfig
from jaxgt.search.regret_phase import RegretPhase, legal_rows, tree_form
from jaxgt.search.gadget import Gadget
from jaxgt.solvers import cfr_iteration


# ------------------------------------------------------------------ state and result
@struct.dataclass
class SearchState:
  """State of one GT-CFR search (add ``B`` in front when batched)."""

  tree: device_tree.DeviceTree
  # the CFR tables (CFRState, terminal weights [0]) of rows N * K (node n's slot k is row n * K + k)
  cfr: Any
  visits: Any  # [2, N * K, A] simulation visits per information state and action
  virtual: Any  # [2, N * K, A] visits of the current expansion phase (virtual losses)
  q: Any  # [2, N * K, A] last counterfactual action values normalised by opponent reach
  prior: Any  # [2, N * K, A] PUCT prior (evaluator's policy at temperature T_prior)
  joint_reach: Any  # [N, M] chance times both reaches of each slot under the last iterate
  root_values: Any  # [2, K] averaging-weighted sum of root counterfactual values
  # [2, N * K] averaging-weighted sum of every node's counterfactual values (entry histories;
  # player p's utility, chance and the other player's reach included): the self-play values of
  # Student of Games
  node_values: Any
  value_weight: Any  # [] sum of the averaging weights of root_values (and of node_values with
  # config.value_average "search")
  # [N] sum of the averaging weights of the iterations in which each node was in the tree
  # (node_values' normaliser with config.value_average "node"; stays zero with "search")
  node_weight: Any
  gadget: Any  # GadgetState, or () without re-solving
  evaluator: Any  # the evaluator's state
  num_queries: Any  # [] int32 leaf histories valued by the evaluator
  history_visits: Any  # [] int32 live tree histories summed over the CFR iterations
  focus: Any  # [] int32 node under which simulations start
  queries: Any  # QueryLog: a uniform sample of the leaf PBSs queried (config.log_queries)


@struct.dataclass
class SearchResult:
  """What a search returns (Student of Games, Algorithm 1: values, policy, queries)."""

  state: SearchState
  policy: tuple  # ([N * K, A], [N * K, A]) average policy at every node's information states
  root_values: Any  # [2, K] average counterfactual values at the root (player p's utility)
  # [2, N * K] average self-play counterfactual values of every node's information states
  # (entry histories; re-solving constraints of a later search)
  node_values: Any = None
  # [2, N * K] each player's own reach of every node's information states under the average
  # policy (root ranges included; the opponent's average gadget range when re-solving)
  node_reach: Any = None
  # [2, K] the root ranges the root values were computed under: the ranges given, the
  # opponent's replaced by its average gadget range when re-solving (the iterations' gadget
  # ranges averaged with root_values' weights)
  root_ranges: Any = None


# ------------------------------------------------------------------ the regret phase
def puct_scores(config: GTCFRConfig, scale, q, visits, virtual, prior, legal):
  """``[A]`` PUCT scores at one information state (``-inf`` at illegal actions; formula in
  :func:`make_config`): ``q``, ``visits``, ``virtual`` (this phase's visits), ``prior`` ``[A]``
  (all zero: uniform over ``legal [A]``), ``scale`` the game's largest ``|payoff|``."""
  pr = jnp.where(jnp.sum(prior) > 0, prior, sequence_form.uniform(legal))
  qv = q - config.virtual_loss * scale * virtual / (visits + 1.0)
  u = (config.puct_constant * scale * pr * jnp.sqrt(jnp.sum(visits) + config.puct_visit_offset)
       / (1.0 + visits))
  return jnp.where(legal, qv + u, -jnp.inf)


@dataclasses.dataclass(frozen=True)
class SearchProgram:
  """The traced pieces of one (source, config, evaluator, re-solving mode)."""

  source: device_tree.Source
  config: GTCFRConfig
  evaluator: Evaluator
  # re-solving with the gadget (its player and whether it is on are data: one program for
  # both players and for gadget-free searches) or fixed ranges for both players
  resolving: bool
  alpha: float | None

  def regret_update(self, st: SearchState, ranges, opp_values, player, on,
                    form=None) -> SearchState:
    """One public-tree CFR iteration over the current tree: the package's CFR iteration
    (:func:`jaxgt.solvers.cfr_iteration.iteration`) on the tree's history or factored form
    (:class:`RegretPhase`), simultaneous (as in Student of Games) or, with an alternating
    solver, player 0's update then player 1's, each with its own forward pass. The evaluator is
    queried once per iteration, with the iteration's first strategies; both alternating
    half-updates read those leaf values (as the CFR engine's depth-limited solve does:
    :func:`jaxgt.search.leaf.solve` sets the leaf values once per iteration). ``player`` ([]
    int32) is the re-solving player and ``on`` ([] bool) turns its gadget on (off: both
    ranges fixed); ``form``: the tree's form when already built."""
    form = self.form(st.tree) if form is None else form
    view = RegretPhase(self, st.tree, form, legal_rows(st.tree), ranges, opp_values, player, on)
    carry = cfr_iteration.iteration(self.config.solver, view,
                                    cfr_iteration.start(view, st.cfr, (st, None)))
    return carry.root_state[0].replace(cfr=carry.state)

  def form(self, tree):
    """The regret phase's form of ``tree`` (:func:`jaxgt.search.regret_phase.tree_form`)."""
    return tree_form(self.source, tree, self.config.tree_form)

  def root_gadget(self, tree, ranges, opp_values, player):
    K = self.source.num_infostates
    o = 1 - player
    return Gadget(self.config.solver, o, jnp.arange(K), opp_values, ranges[o],
                  None if self.alpha is None else jnp.asarray(self.alpha, ranges.dtype),
                  tree.info_id[o, 0] >= 0)

  def record_queries(self, log, tree, form, fw, t):
    """``log`` with this iteration's leaf public belief states offered to its sample
    (:func:`jaxgt.search.query_log.offer`)."""
    queried, ranges = form.query(fw)
    if not self.config.log_queries:
      return log.replace(count=log.count + jnp.sum(queried, dtype=jnp.int32))
    return query_log.offer(log, queried, tree.public, ranges, t)

  # ---------------------------------------------------------------- the expansion phase
  def simulate(self, st: SearchState, key) -> SearchState:
    """One expansion simulation from the focus node (Student of Games, "Search via Growing-Tree
    CFR")."""
    src, cfg = self.source, self.config
    tree = st.tree
    N, M, K, A = tree.capacity, src.num_histories, src.num_infostates, src.num_actions
    dtype = tree.chance.dtype
    keys = rng.split(key, src.max_depth + 3)
    focus = st.focus
    in_focus = tree.entry[focus] & (tree.history[focus] >= 0)
    w = jnp.where(in_focus, st.joint_reach[focus], 0.0)
    w = jnp.where(jnp.sum(w) > 0, w, in_focus.astype(dtype))
    start = focus * M + sample_index(w, rng.uniform(keys[0], dtype=dtype))
    legal = legal_rows(tree)
    if cfg.select_policy == "current":
      pol_cfr = history_cfr.strategy(cfg.solver, legal, st.cfr)
    else:  # the average policy of the rows a step visits, not of the whole table
      pol_cfr = None
    player_flat = tree.player.reshape(-1)
    info_flat = tree.info.reshape(2, -1)
    chance_flat = tree.chance.reshape(-1)
    kids_flat = tree.slot_children.reshape(N * M, -1)
    scale = jnp.asarray(src.value_scale, dtype)

    def step(i, carry):
      slot, done, expand_node, visits, virtual = carry
      n = slot // M
      pl = player_flat[slot]
      nonterminal = (pl == 0) | (pl == 1) | (pl == CHANCE)
      at_frontier = ~done & ~tree.expanded[n] & nonterminal
      expand_node = jnp.where(at_frontier, n, expand_node)
      done = done | at_frontier | ~nonterminal
      kids = kids_flat[slot]
      # chance: by the chance probabilities, or uniformly among the outcomes
      cw = jnp.where(kids >= 0, chance_flat[jnp.maximum(kids, 0)], 0.0)
      if cfg.chance == "uniform":
        cw = (cw > 0).astype(dtype)
      a_chance = sample_index(cw, rng.uniform(keys[i + 1], dtype=dtype))
      # decision: pi_select = 1/2 PUCT (argmax) + 1/2 average CFR policy
      p = jnp.clip(pl, 0, 1)
      row = n * K + jnp.maximum(info_flat[p, slot], 0)
      lg = jnp.where(p == 0, legal[0][row], legal[1][row])
      nv = visits[p, row]
      vv = virtual[p, row]
      score = puct_scores(cfg, scale, st.q[p, row], nv, vv, st.prior[p, row], lg)
      puct = jax.nn.one_hot(jnp.argmax(score), A, dtype=dtype)
      if pol_cfr is None:
        cum = jnp.where(p == 0, st.cfr.cum_policy[0][row], st.cfr.cum_policy[1][row])
        pcfr = sequence_form.normalize(cum, lg)
      else:
        pcfr = jnp.where(p == 0, pol_cfr[0][row], pol_cfr[1][row])
      a_dec = sample_index(jnp.where(lg, 0.5 * puct + 0.5 * pcfr, 0.0),
                           rng.uniform(rng.fold_in(keys[i + 1], 1), dtype=dtype))
      is_dec = ~done & ((pl == 0) | (pl == 1))
      a = jnp.where(pl == CHANCE, a_chance, a_dec)
      bump = jnp.where(is_dec, 1.0, 0.0)
      visits = visits.at[p, row, a].add(bump)
      virtual = virtual.at[p, row, a].add(bump)
      nxt = kids[a]
      slot = jnp.where(done | (nxt < 0), slot, nxt)
      done = done | (nxt < 0)
      return slot, done, expand_node, visits, virtual

    init = (start, jnp.zeros((), bool), jnp.asarray(NO_INDEX, jnp.int32), st.visits, st.virtual)
    _, _, node, visits, virtual = lax.fori_loop(0, src.max_depth + 1, step, init)
    return st.replace(tree=device_tree.expand(src, tree, node), visits=visits, virtual=virtual)

  # ---------------------------------------------------------------- the search
  def init(self, root, ranges, player, path=None, evaluator_state=None,
           key=None) -> SearchState:
    src, cfg = self.source, self.config
    if evaluator_state is None:
      evaluator_state = self.evaluator.init()
    tree = device_tree.init_tree(src, cfg.capacity, root)
    if path is None:
      tree = device_tree.expand(src, tree, 0)
      focus = jnp.zeros((), jnp.int32)
    else:
      tree, focus = device_tree.grow_branch(src, tree, path)
    N, K, A = cfg.capacity, src.num_infostates, src.num_actions
    dtype = ranges.dtype
    zeros = jnp.zeros((2, N * K, A), dtype)
    gs = ()
    if self.resolving:
      gs = Gadget(cfg.solver, 1 - player, jnp.arange(K), jnp.zeros(K, dtype), ranges[1 - player],
                  None).init()
    return SearchState(
        tree=tree, cfr=cfg.solver.init_tables((N * K, N * K), A, jnp.zeros((0,), dtype)),
        visits=zeros,
        virtual=zeros, q=zeros, prior=zeros, joint_reach=jnp.zeros((N, src.num_histories), dtype),
        root_values=jnp.zeros((2, K), dtype), node_values=jnp.zeros((2, N * K), dtype),
        value_weight=jnp.zeros((), dtype), node_weight=jnp.zeros(N, dtype), gadget=gs,
        evaluator=evaluator_state, num_queries=jnp.zeros((), jnp.int32),
        history_visits=jnp.zeros((), jnp.int32), focus=focus,
        queries=query_log.empty(cfg.log_queries, K, dtype,
                                query_log.search_key(cfg.log_queries, key)))

  def state_for(self, tree, ranges, player, evaluator_state=None, key=None) -> SearchState:
    """A fresh search state over a given ``tree`` (no expansion)."""
    st = self.init(device_tree.node_key(tree, 0), ranges, player,
                   evaluator_state=evaluator_state, key=key)
    return st.replace(tree=tree)

  def finish(self, st: SearchState, ranges, player, on) -> SearchResult:
    tree = st.tree
    pol = history_cfr.average_policy(legal_rows(tree), st.cfr)
    w = jnp.where(st.value_weight > 0, st.value_weight, 1.0)
    rv = jnp.where(st.value_weight > 0, st.root_values / w, 0.0)
    K = self.source.num_infostates
    if self.config.value_average == "node":
      nw = jnp.repeat(st.node_weight, K)
      nv = jnp.where(nw > 0, st.node_values / jnp.where(nw > 0, nw, 1.0), 0.0)
    else:
      nv = jnp.where(st.value_weight > 0, st.node_values / w, 0.0)
    if self.resolving:  # the opponent's average gadget range
      o = 1 - player
      gadget = self.root_gadget(tree, ranges, jnp.zeros(K, ranges.dtype), player)
      ranges = ranges.at[o].set(jnp.where(on, gadget.average_range(st.gadget), ranges[o]))
    form = self.form(tree)
    reach = form.node_reach(form.forward(pol, ranges))
    return SearchResult(state=st, policy=pol, root_values=rv, node_values=nv, node_reach=reach,
                        root_ranges=ranges)

  def solve(self, tree, ranges, opp_values, iterations, evaluator_state, player,
            on, key=None) -> SearchResult:
    form = self.form(tree)  # the tree does not grow: its form is built once
    st = lax.fori_loop(0, iterations,
                       lambda _, s: self.regret_update(s, ranges, opp_values, player, on, form),
                       self.state_for(tree, ranges, player, evaluator_state, key))
    return self.finish(st, ranges, player, on)

  def run(self, root, ranges, opp_values, key, path, evaluator_state, player,
          on) -> SearchResult:
    cfg = self.config
    st = self.init(root, ranges, player, path, evaluator_state, key)

    def phase(i, st):
      st = lax.fori_loop(0, cfg.updates_per_phase,
                         lambda _, s: self.regret_update(s, ranges, opp_values, player, on), st)
      kp = rng.fold_in(key, i)
      st = lax.fori_loop(0, cfg.sims_per_phase,
                         lambda j, s: self.simulate(s, rng.fold_in(kp, j)), st)
      return st.replace(virtual=jnp.zeros_like(st.virtual))

    return self.finish(lax.fori_loop(0, cfg.num_phases, phase, st), ranges, player, on)
