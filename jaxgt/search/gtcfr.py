"""Growing-Tree CFR on the fixed-capacity device public tree (``003``, Algorithm 1).

GT-CFR (``003``, "Search via Growing-Tree CFR" and supplement Algorithm 1)
alternates two phases on a public tree that starts as the root public state
and its children (:mod:`jaxgt.search.device_tree`):

* **regret update**: ``ceil(1/c)`` iterations of public-tree CFR over the
  current tree, by default with simultaneous updates, regret matching+ and
  linear averaging (``GTCFRConfig.solver``: any rule of the CFR family, run by
  the package's one CFR iteration, :mod:`jaxgt.solvers.cfr_iteration`, on the
  tree's history form, :mod:`jaxgt.search.history_cfr`); every
  frontier leaf is valued by the evaluator in one batched call per
  iteration, terminals exactly;
* **expansion**: ``ceil(c)`` simulations, each sampling a world state of the
  focus public state from the current beliefs and descending with
  ``pi_select = 1/2 pi_PUCT + 1/2 pi_CFR(average)`` until it reaches a frontier
  node, whose child public states are then all added (``k = infinity``);
  visit counts per information state accumulate over the search and
  virtual losses separate the simulations of one phase.

``SoG(s, c)``: ``s`` simulations in total, so ``s / ceil(c)`` GT-CFR
iterations. One compiled program per (source, capacity, evaluator,
:class:`GTCFRConfig`) serves every root public state, root range and tree
shape; ``jax.vmap`` runs a batch of searches.

Re-solving (``003``, "Modified Continual Re-solving"): with opponent
counterfactual values the root carries the safe re-solving gadget
(:class:`jaxgt.search.gadget.Gadget`), optionally the ``alpha``-modified one.

Shape letters: those of :mod:`jaxgt.search.device_tree` (``N``, ``M``, ``K``,
``A``), ``B`` a batch of searches.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from jax import lax

from jaxgt.core.checks import (check_choice, check_distribution, check_key,
                               check_nonnegative_int, check_positive_int, check_real)
from jaxgt.core import rng, sequence_form
from jaxgt.core.game_tree import NO_INDEX
from jaxgt.core.sampling import sample_index
from jaxgt.games.base import CHANCE
from jaxgt.search import device_tree
from jaxgt.search.evaluator import Evaluator
from jaxgt.search import history_cfr, query_log
from jaxgt.search.query_log import QUERY_STREAM, QueryLog  # noqa: F401  (the search's log)
from jaxgt.search.regret_phase import TREE_FORMS, RegretPhase, legal_rows, tree_form
from jaxgt.search.gadget import Gadget, check_alpha
from jaxgt.solvers import cfr as cfr_lib
from jaxgt.solvers import cfr_iteration


# ------------------------------------------------------------------ configuration and state
@dataclasses.dataclass(frozen=True)
class GTCFRConfig:
  """Static configuration of a GT-CFR search (``SoG(simulations, expansions_per_update)``).

  The choices ``003`` leaves open (see :func:`make_config`): ``puct_constant``
  (``c`` of PUCT, in units of the game's largest payoff), ``puct_visit_offset``
  (added to an information state's visit count under PUCT's square root),
  ``prior_temperature`` (``T_prior`` of ``003`` Table S2), ``virtual_loss``
  (each visit of the current phase counts as a loss of ``virtual_loss *
  value_scale``), ``chance`` (how a simulation crosses chance), ``select_policy``
  (which CFR policy ``pi_CFR`` of ``pi_select`` is) and ``value_average`` (the normaliser
  of the averaged node values).

  The defaults (``c = 1``, offset 0, ``T_prior = 1``, virtual loss 1, ``"sample"``,
  ``"average"``) were kept by measurement (``value_average`` then ``"search"``): Leduc,
  ``SoG(100, 1)``, exact leaves, continual re-solving, policy construction, seeds 0-4 paired
  (README, "Growing-Tree CFR on a fixed-capacity device tree"): today's defaults 60.5 / 81.6 / 126
  mbb/h (min / avg / max);
  ``puct_constant`` 0.25: 55.5 / 79.3 / 100, 4: 54.6 / 76.7 / 128; ``puct_visit_offset`` 1:
  58.5 / 72.0 / 87.7 (seeds 0-9: 58.5 / 87.5 / 116, defaults 60.5 / 90.4 / 131);
  ``prior_temperature`` 2: 52.5 / 73.3 / 89.4; ``select_policy="current"``: 56.2 / 82.9 / 131.
  No variant moved the mean by more than the paired seed-to-seed spread (standard deviation
  of the per-seed differences 6-41 mbb/h). ``virtual_loss`` is inert at ``ceil(c) = 1`` (one
  simulation per phase); ``chance="uniform"`` was not measured. ``value_average`` is
  ``"node"`` by default (``"search"`` before git 9900324): the unbiased average of a node's
  own iterates, it removed the one outlier of ``SoG(1000, 1)`` (seed 4: 9.40 against 38.6
  mbb/h) and is better at ``s = 100`` (seeds 0-9: 53.1 / 68.6 / 139 against 60.5 / 90.4 /
  131, 9 of 10 paired seeds better), worse at ``s = 10`` (548 / 596 / 680 against 477 / 544 /
  587, 8 of 10 worse: a late node's values then come from its first few iterates).
  """

  capacity: int
  simulations: int = 100
  expansions_per_update: float = 1.0
  puct_constant: float = 1.0
  prior_temperature: float = 1.0
  virtual_loss: float = 1.0
  puct_visit_offset: float = 0.0
  chance: str = "sample"  # "sample": by the chance probabilities; "uniform": uniformly
  select_policy: str = "average"  # pi_CFR of pi_select: CFR's "average" or "current" policy
  value_average: str = "node"  # node_values: over the "node"'s or the "search"'s iterations
  # the CFRSolver of the regret phase: its rules, update order, tie rule and averaging sums
  # (default simultaneous CFR+, 003, plain sums, no tie rule; alternating: player 0's update,
  # then 1's)
  solver: Any = None
  # leaf queries kept in SearchState.queries, a uniform sample of all of them (0: none)
  log_queries: int = 0
  # the regret phase's form (regret_phase.TREE_FORMS): "auto" the factored form on a rules
  # source's tree, the history form elsewhere
  tree_form: str = "auto"

  @property
  def sims_per_phase(self) -> int:
    return int(math.ceil(self.expansions_per_update))

  @property
  def updates_per_phase(self) -> int:
    return int(math.ceil(1.0 / self.expansions_per_update))

  @property
  def num_phases(self) -> int:
    """GT-CFR iterations: ``s / ceil(c)`` (rounded up)."""
    return int(math.ceil(self.simulations / self.sims_per_phase))


CHANCE_MODES = ("sample", "uniform")
SELECT_POLICIES = ("average", "current")
VALUE_AVERAGES = ("search", "node")


def make_config(source: device_tree.Source, *, simulations: int, expansions_per_update: float = 1.0,
                capacity: int | None = None, puct_constant: float = 1.0,
                prior_temperature: float = 1.0, virtual_loss: float = 1.0,
                puct_visit_offset: float = 0.0, chance: str = "sample",
                select_policy: str = "average", value_average: str = "node", solver=None,
                log_queries: int = 0, tree_form: str = "auto",
                dtype="float64") -> GTCFRConfig:
  """A checked :class:`GTCFRConfig`; ``capacity`` defaults to what ``simulations`` can add
  (capped at the source's public states).

  The expansion phase's choices that ``003`` leaves open. At a decision the simulation
  takes ``pi_select = 1/2 one_hot(argmax_a PUCT(a)) + 1/2 pi_CFR`` with ``PUCT(a) = q(a) -
  virtual_loss * value_scale * v(a) / (n(a) + 1) + puct_constant * value_scale * prior(a) *
  sqrt(sum_b n(b) + puct_visit_offset) / (1 + n(a))``: ``q`` the last iterate's
  counterfactual action values normalised by the opponent's (and chance's) reach, ``n`` the
  visits of the search, ``v`` those of the current expansion phase, ``prior`` the evaluator's
  policy at temperature ``prior_temperature`` (uniform without one).

  Args:
    puct_constant: ``c`` of PUCT (``>= 0``), in units of ``value_scale`` (the largest
      ``|payoff|``).
    puct_visit_offset: ``>= 0`` added to the visit count under the square root (0:
      AlphaZero's form, whose exploration term is zero at an information state's first
      visit, so that visit takes the largest ``q``).
    prior_temperature: ``T_prior > 0`` (``003`` Table S2): the prior is ``p ** (1 / T)``
      renormalised (a softmax of the logits at temperature ``T``).
    virtual_loss: ``>= 0``, in units of ``value_scale`` per visit of the current phase.
    chance: ``"sample"`` (a chance node's outcome by its probabilities given the sampled
      history) or ``"uniform"`` (uniformly among its outcomes).
    select_policy: ``pi_CFR`` of ``pi_select``: CFR's ``"average"`` policy (``003``,
      "Search via Growing-Tree CFR") or its ``"current"`` one (regret matching's iterate).
    value_average: the normaliser of the averaged self-play values of a node
      (:attr:`SearchResult.node_values`, the next re-solve's constraints): ``"node"``
      (default) the weight of the iterations it was in the tree, or ``"search"`` the whole
      search's averaging weight (the iterations before the node was added count as zero
      values; on a tree that does not grow both agree).
    solver: the regret phase's CFR rule: a :class:`~jaxgt.solvers.cfr.CFRSolver` (any
      rule of the family, e.g. ``jaxgt.discounted_cfr(dtype="float64")``, with its update
      order, tie rule and averaging sums), or the name of one
      (:func:`jaxgt.solvers.cfr.make_solver`) with the search's defaults: simultaneous
      updates, plain sums and no tie rule, in ``dtype`` (the searches were measured so;
      the tie rule changes which trees grow); default ``"cfr+"``.
    tree_form: the regret phase's form of the tree: ``"auto"`` (default) the factored form
      (per node ``[K]`` ranges and values, :mod:`jaxgt.search.factored_form`) where the
      source's nodes are private pairs (a rules source), else the history form;
      ``"history"`` or ``"factored"`` to choose (the same iterates, to rounding).
  """
  simulations = check_positive_int("simulations", simulations)
  c = check_real("expansions_per_update", expansions_per_update, 0, math.inf, lo_open=True)
  if capacity is None:
    capacity = min(1 + source.num_children * (simulations + 1 + source.max_public_depth),
                   max(source.num_public_states, 1 + source.num_children))
  capacity = device_tree.check_capacity(source, capacity)
  check_choice("chance", chance, CHANCE_MODES)
  check_choice("select_policy", select_policy, SELECT_POLICIES)
  check_choice("value_average", value_average, VALUE_AVERAGES)
  check_choice("tree_form", tree_form, TREE_FORMS)
  if tree_form == "factored" and not getattr(source, "factored", False):
    raise ValueError("tree_form='factored' needs a source whose nodes are private pairs (a "
                     "rules source, jaxgt.search.rules_source)")
  if solver is None or isinstance(solver, str):
    solver = cfr_lib.make_solver(solver or "cfr+", alternating=False, dtype=dtype,
                                 compensated=False, exact_ties=False)
  if not isinstance(solver, cfr_lib.CFRSolver):
    raise ValueError(f"solver must be a CFRSolver or the name of one, got {solver!r}")
  return GTCFRConfig(capacity=capacity, simulations=simulations, expansions_per_update=c,
                     puct_constant=check_real("puct_constant", puct_constant, 0),
                     prior_temperature=check_real("prior_temperature", prior_temperature, 0,
                                                  lo_open=True),
                     virtual_loss=check_real("virtual_loss", virtual_loss, 0),
                     puct_visit_offset=check_real("puct_visit_offset", puct_visit_offset, 0),
                     chance=chance, select_policy=select_policy,
                     value_average=value_average, solver=solver,
                     log_queries=check_nonnegative_int("log_queries", log_queries),
                     tree_form=tree_form)


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
  # player p's utility, chance and the other player's reach included): 003's self-play values
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
  """What a search returns (``003``, Algorithm 1: values, policy, queries)."""

  state: SearchState
  policy: tuple  # ([N * K, A], [N * K, A]) average policy at every node's information states
  root_values: Any  # [2, K] average counterfactual values at the root (player p's utility)
  # [2, N * K] average self-play counterfactual values of every node's information states
  # (entry histories; re-solving constraints of a later search, 003)
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
class _Program:
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
    (:class:`RegretPhase`), simultaneous (``003``) or, with an alternating solver, player 0's
    update then player 1's, each with its own forward pass. The evaluator is queried once
    per iteration, with the iteration's first strategies; both alternating half-updates read
    those leaf values (as the CFR engine's depth-limited solve does:
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
    """One expansion simulation from the focus node (``003``, "Search via Growing-Tree CFR")."""
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


def _check_ranges(source: device_tree.Source, ranges):
  """``[..., 2, K]`` padded root ranges, checked (traced ranges: their shape only)."""
  if isinstance(ranges, jax.core.Tracer):
    if ranges.shape[-2:] != (2, source.num_infostates):
      raise ValueError(f"root ranges must have shape [..., 2, {source.num_infostates}], got "
                       f"{ranges.shape}")
    return ranges
  ranges = np.asarray(ranges, np.float64)
  K = source.num_infostates
  if ranges.shape[-2:] != (2, K):
    raise ValueError(f"root ranges must have shape [..., 2, {K}] (padded information-state "
                     f"slots of the root public state), got {ranges.shape}")
  for p in (0, 1):
    check_distribution(f"root range of player {p}", ranges[..., p, :], K)
  return ranges


def root_ranges(source: device_tree.Source, public: int, ranges=None) -> np.ndarray:
  """``[2, K]`` padded ranges at root public state ``public`` (a rules source's root state;
  ``ranges``: per player the unpadded ``[K_p]`` range; default the chance-only beliefs of the
  game's root)."""
  K = source.num_infostates
  info = np.asarray(source.rows(source.root_key(public)).info_id)  # [2, K]
  out = np.zeros((2, K))
  for p in (0, 1):
    k = int(np.sum(info[p] >= 0))
    if ranges is None:
      out[p, :k] = 1.0 / max(k, 1)
    else:
      r = np.asarray(ranges[p], np.float64)
      if r.shape != (k,):
        raise ValueError(f"range of player {p} at public state {public} must have shape ({k},), "
                         f"got {r.shape}")
      out[p, :k] = check_distribution(f"range of player {p} at public state {public}", r, k)
  return out


@functools.lru_cache(maxsize=64)
def _compiled(program: _Program, batched: bool, with_path: bool):
  def one(root, ranges, opp_values, key, path, evaluator_state, player, on):
    return program.run(root, ranges, opp_values, key, path if with_path else None,
                       evaluator_state, player, on)
  if batched:  # the evaluator's state (e.g. network parameters) is shared by the batch
    return jax.jit(jax.vmap(one, in_axes=(0, 0, 0, 0, 0, None, 0, 0)))
  return jax.jit(one)


def search(source: device_tree.Source, config: GTCFRConfig, evaluator: Evaluator, root, ranges,
           key, *, player=None, opp_values=None, alpha: float | None = None,
           path=None, evaluator_state=None, gadget=True) -> SearchResult:
  """GT-CFR search at public state ``root`` with padded root ``ranges [2, K]``.

  Args:
    source, config, evaluator: static (one compilation per combination).
    root: root public state (``int32``; ``[B]`` with batched arguments); with a rules source
      (:func:`jaxgt.search.rules_source.rules_source`) a state of its game after the private
      deals (``[B]`` in front of every leaf when batched).
    ranges: ``[2, K]`` (or ``[B, 2, K]``) root ranges (:func:`root_ranges`).
    key: a ``jax.random`` key (``[B]`` keys when batched).
    player: re-solve for this player with the gadget: ``opp_values [K]`` are the
      opponent's terminate values, ``alpha`` the modified gadget's mixing
      (``None``: exact gadget); ``None`` searches with both ranges fixed. The
      player is data (an int or a traced ``int32`` scalar, ``[B]`` when batched):
      one compilation serves both players.
    gadget: with ``player`` given, whether the gadget is on (``bool``, may be traced,
      ``[B]`` when batched); off, the search equals the one with ``player=None``
      (both ranges fixed), in the same program.
    path: ``[D + 1]`` public states from ``root`` to the public state of the
      decision (:func:`jaxgt.search.device_tree.public_path`): the tree starts
      as that single branch and simulations start there.
  """
  ranges = jnp.asarray(ranges, config.solver.dtype)
  batched = ranges.ndim == 3
  opp, alpha, player, on = _check_resolving(source, ranges, player, opp_values, alpha, gadget)
  shape = ranges.shape[:-2]
  key = check_key(key) if not batched else jnp.asarray(key)
  root = source.root_key(root, shape)
  if path is None:
    path_arr = jnp.full(shape + (source.max_public_depth + 1,), NO_INDEX, jnp.int32)
  else:
    path_arr = jnp.asarray(path, jnp.int32)
  program = _Program(source, config, evaluator, player is not None, alpha)
  fn = _compiled(program, batched, path is not None)
  es = evaluator.init() if evaluator_state is None else evaluator_state
  return fn(root, ranges, opp, key, path_arr, es, player, on)


def _check_resolving(source, ranges, player, opp_values, alpha, gadget=True):
  """``(opp_values, alpha, player, on)`` checked, the last two as arrays of the batch shape
  (``player`` 0 and ``on`` False without re-solving)."""
  _check_ranges(source, ranges)
  ranges = jnp.asarray(ranges)
  alpha = check_alpha(alpha)
  shape = ranges.shape[:-2]
  if player is not None:
    if opp_values is None:
      raise ValueError("re-solving needs the opponent's counterfactual values (opp_values)")
    if not isinstance(player, jax.core.Tracer):
      values = np.asarray(player)
      if values.dtype.kind not in "iu" or not np.all((values == 0) | (values == 1)):
        raise ValueError(f"player must be 0, 1 or None, got {player!r}")
    if jnp.shape(player) not in ((), shape):
      raise ValueError(f"player must be a scalar or have the batch shape {shape}, got shape "
                       f"{jnp.shape(player)}")
    if jnp.shape(gadget) not in ((), shape):
      raise ValueError(f"gadget must be a bool or have the batch shape {shape}, got shape "
                       f"{jnp.shape(gadget)}")
    if not isinstance(gadget, jax.core.Tracer) and np.asarray(gadget).dtype != bool:
      raise ValueError(f"gadget must be a bool, got {gadget!r}")
  K = source.num_infostates
  opp = jnp.zeros(shape + (K,), ranges.dtype) if opp_values is None else \
      jnp.asarray(opp_values, ranges.dtype)
  if opp.shape != shape + (K,):
    raise ValueError(f"opp_values must have shape {shape + (K,)}, got {opp.shape}")
  if player is None:
    player, gadget = 0, False
  player = jnp.broadcast_to(jnp.asarray(player, jnp.int32), shape)
  on = jnp.broadcast_to(jnp.asarray(gadget, bool), shape)
  return opp, alpha, player, on


@functools.lru_cache(maxsize=64)
def _compiled_solve(program: _Program, batched: bool = False, shared_tree: bool = False):
  if batched:  # a batch of ranges on a batch of trees or on one tree; iterations and the
    # evaluator's state shared
    return jax.jit(jax.vmap(program.solve, in_axes=(None if shared_tree else 0, 0, 0, None, None,
                                                    0, 0, 0)))
  return jax.jit(program.solve)


def solve_tree(source: device_tree.Source, config: GTCFRConfig, evaluator: Evaluator,
               tree: device_tree.DeviceTree, ranges, iterations, *, player=None,
               opp_values=None, alpha: float | None = None, evaluator_state=None,
               gadget=True, key=None) -> SearchResult:
  """``iterations`` public-tree CFR iterations on a given (not growing) ``tree``: depth-limited
  solving and re-solving on the device tree (the regret phase of GT-CFR alone).

  ``iterations`` may be traced; arguments (``evaluator_state`` included) as in :func:`search`;
  ``ranges [B, 2, K]`` runs ``B`` solves in one vmapped call, on a batch of trees (leading
  ``B`` on every field) or on one tree shared by the batch (its indices then are the same
  for every solve, which runs several times faster on CPU). ``key``: a ``jax.random`` key
  (``[B]`` keys when batched) drawing the query log's sample (:class:`QueryLog`), required
  where ``config.log_queries > 0``.
  """
  ranges = jnp.asarray(ranges, config.solver.dtype)
  batched = ranges.ndim == 3
  opp, alpha, player, on = _check_resolving(source, ranges, player, opp_values, alpha, gadget)
  if tree.capacity != config.capacity:
    raise ValueError(f"tree capacity {tree.capacity} differs from config.capacity "
                     f"{config.capacity}")
  shared = tree.public.ndim == 1
  if not batched and not shared:
    raise ValueError(f"a batch of trees (public {tree.public.shape}) needs a batch of ranges "
                     f"[B, 2, K], got ranges {ranges.shape}")
  program = _Program(source, config, evaluator, player is not None, alpha)
  es = evaluator.init() if evaluator_state is None else evaluator_state
  if key is None:
    key = query_log.required_key(config.log_queries, None)
    if batched:
      key = jnp.broadcast_to(key, ranges.shape[:1] + key.shape)
  key = check_key(key, ranges.shape[:1] if batched else ())
  return _compiled_solve(program, batched, batched and shared)(
      tree, ranges, opp, jnp.asarray(iterations, jnp.int32), es, player, on, key)
