"""The regret phase of Growing-Tree CFR on the device tree: the tree's history form.

:func:`tree_forest` reads the current device tree as a :class:`~jaxgt.search.history_cfr.Forest`
(history slots of expanded nodes and the entry histories of frontier nodes), and
:class:`RegretPhase` is that form as a :class:`~jaxgt.solvers.cfr_iteration.TreeView`, so the
package's one CFR iteration runs on it: each iteration mixes the gadget's range, runs the
forward pass, queries the evaluator once for every frontier leaf and records the search's
values, priors and counts (Schmid et al., "Student of Games", 2023, supplement Algorithm 1).
Shape letters: ``N`` nodes, ``M`` history slots per node, ``K`` information-state slots per
node, ``A`` actions.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp

from jaxgt.core import sequence_form
from jaxgt.core.game_tree import NO_INDEX
from jaxgt.games.base import CHANCE
from jaxgt.search import device_tree
from jaxgt.search import history_cfr
from jaxgt.search.evaluator import LeafInput


def tree_forest(source: device_tree.Source, tree: device_tree.DeviceTree) -> history_cfr.Forest:
  """The history-form view of ``tree``: live slots are the histories of expanded nodes
  and the entry histories of frontier nodes (leaves unless terminal)."""
  N, M, K = tree.capacity, source.num_histories, source.num_infostates
  node = jnp.arange(N * M) // M
  player = tree.player.reshape(-1)
  valid = tree.history.reshape(-1) >= 0
  expanded = tree.expanded[node]
  live = valid & (expanded | tree.entry.reshape(-1))
  nonterminal = (player == 0) | (player == 1) | (player == CHANCE)
  leaf = live & ~expanded & nonterminal
  parent = tree.parent_slot.reshape(-1)
  info = tree.info.reshape(2, -1)
  rows = jnp.stack([jnp.where((player == p) & (info[p] >= 0), node * K + info[p], NO_INDEX)
                    for p in (0, 1)])
  chance = jnp.where(parent >= 0, tree.chance.reshape(-1), tree.chance_reach.reshape(-1))
  # Every live slot lies at most (its depth - the shallowest live root's) below its root.
  depth = tree.history_depth.reshape(-1)
  root = live & (parent < 0)
  lo = jnp.min(jnp.where(root, depth, jnp.iinfo(jnp.int32).max))
  passes = jnp.clip(jnp.max(jnp.where(live, depth, 0)) - lo, 0, source.max_depth + 1)
  return history_cfr.Forest(parent=parent, player=player, action=tree.action.reshape(-1),
                            chance=chance, info=rows, payoff=tree.payoff.reshape(-1), live=live,
                            leaf=leaf, passes=passes, depth=source.max_depth + 1)


def legal_rows(tree):
  return tuple(tree.legal[p].reshape(-1, tree.legal.shape[-1]) for p in (0, 1))


def root_own(tree, ranges, K):
  """``[2, N * M]`` root ranges at the root node's entry slots."""
  info = tree.info.reshape(2, -1)
  return jnp.stack([ranges[p][jnp.clip(info[p], 0, K - 1)] for p in (0, 1)])


def evaluator_prior(tree, prior, temperature):
  """Evaluator prior at temperature ``temperature``, uniform where absent."""
  legal = jnp.stack(legal_rows(tree))
  uniform = sequence_form.uniform(legal, tree.chance.dtype)
  if prior is None:
    return uniform
  p = jnp.asarray(prior, tree.chance.dtype).reshape(legal.shape) * legal
  p = p ** (1.0 / temperature)
  return sequence_form.safe_div(p, p.sum(-1, keepdims=True), uniform)


@dataclasses.dataclass(frozen=True)
class RegretPhase:
  """GT-CFR's regret phase on one tree: the history (forest) form as a
  :class:`~jaxgt.solvers.cfr_iteration.TreeView`. Its state is ``(SearchState, leaf values
  [2, N * M] of this iteration or None before the query)``; :meth:`begin` runs the gadget's
  mixing, the forward pass and the leaf query, :meth:`end` records the search's values,
  action values, priors and counts."""

  # the search program (gtcfr_program.SearchProgram): source, config, evaluator, re-solving
  program: Any
  tree: device_tree.DeviceTree  # the current tree
  forest: history_cfr.Forest  # its history form (tree_forest)
  legal_masks: tuple  # ([N * K, A], [N * K, A]) legal actions of every node's rows
  ranges: Any  # [2, K] root ranges
  opp_values: Any  # [K] the opponent's terminate values (re-solving)
  player: Any  # [] int32 the re-solving player
  on: Any  # [] bool the gadget is on
  axis: int = -1  # the actions' axis

  def legal(self, p):
    return self.legal_masks[p]

  def strategy(self, p, regrets, extra):
    return self.program.config.solver.regret_rule.strategy(regrets, self.legal_masks[p], extra), ()

  def begin(self, aux, players, sigma, x, t):
    st, leaf_values = aux
    prog, tree, forest = self.program, self.tree, self.forest
    K = prog.source.num_infostates
    N, M = tree.capacity, prog.source.num_histories
    gs, ranges_t, gadget = st.gadget, self.ranges, None
    if prog.resolving:
      o = 1 - self.player
      gadget = prog.root_gadget(tree, self.ranges, self.opp_values, self.player)
      # The opponent's range of the gadget's current strategy, in either half-update (its own
      # counterfactual values do not see it; the leaf query and its averaging weights do), as
      # search.resolving.resolve queries; recorded for averaging in our update only. (An
      # opponent updated first used to see the range recorded at the previous iteration,
      # r_prev at the first: the query of iteration 1 then saw another range than our update.)
      r_o, gs_new = gadget.mix(gs, t)
      gs = select(among(self.player, players), gs_new, gs)
      ranges_t = self.ranges.at[o].set(jnp.where(self.on, r_o, self.ranges[o]))
    fw = history_cfr.forward(forest, sigma, root_own(tree, ranges_t, K))
    query = leaf_values is None
    prior, es = None, st.evaluator
    if query:
      leaves = LeafInput(tree=tree, leaf=forest.leaf.reshape(N, M), reach=fw.own.reshape(2, N, M),
                         chance=fw.chance.reshape(N, M), root_ranges=ranges_t)
      (leaf_values, prior), es = prog.evaluator.apply(st.evaluator, leaves)
    leaf_values = jnp.broadcast_to(jnp.asarray(leaf_values, fw.chance.dtype).reshape(-1, N * M),
                                   (2, N * M))
    v = history_cfr.values(forest, fw.edge, leaf_values)
    return dict(st=st.replace(gadget=gs, evaluator=es), gadget=gadget, fw=fw, v=v,
                leaf_values=leaf_values, query=query, prior=prior, qs={})

  def values(self, ctx, p, sigma, x):
    n, A = sigma[p].shape
    q, norm = history_cfr.action_values(self.forest, ctx["fw"], ctx["v"][p], p, n, A)
    reach = jnp.maximum(history_cfr.own_reach(self.forest, ctx["fw"], p, n), 0.0)
    return q, reach, {**ctx, "qs": {**ctx["qs"], p: (q, norm)}}

  def end(self, ctx, players, t):
    prog, tree, forest = self.program, self.tree, self.forest
    fw, v, st = ctx["fw"], ctx["v"], ctx["st"]
    K = prog.source.num_infostates
    N, M = tree.capacity, prog.source.num_histories
    last = players[-1] == 1  # static: the iteration's final update
    # Root counterfactual values of this iterate, per root information-state slot.
    root_info = tree.info.reshape(2, -1)
    rv = []
    for p in (0, 1):
      contrib = history_cfr.root_values(forest, fw, v[p], p)
      rv.append(jax.ops.segment_sum(contrib, jnp.where(root_info[p] >= 0, root_info[p], K),
                                    K + 1)[:K])
    rv = jnp.stack(rv)
    node_v = jnp.stack([prog.entry_rows(tree, forest, (1.0 if p == 0 else -1.0) * fw.chance
                                         * fw.own[1 - p] * v[p], p) for p in (0, 1)])
    gs = st.gadget
    if prog.resolving:
      o = 1 - self.player
      gs = select(among(o, players),
                   ctx["gadget"].regret_step(gs, rv[o], jnp.ones(K, rv.dtype), t), gs)
    averaging = prog.config.solver.averaging
    q = st.q
    for p, (qp, norm) in ctx["qs"].items():
      q = q.at[p].set(jnp.where((norm > 0)[:, None], qp / jnp.where(norm > 0, norm, 1.0)[:, None],
                                0.0))
    prior_out = st.prior
    if ctx["query"]:
      new_prior = evaluator_prior(tree, ctx["prior"], prog.config.prior_temperature)
      frontier = jnp.repeat(~tree.expanded, K)
      prior_out = jnp.where(frontier[None, :, None], new_prior, st.prior)
    rows = jnp.asarray([p in players for p in (0, 1)])[:, None]
    node_weight = st.node_weight
    if last and prog.config.value_average == "node":  # static: only "node" reads it
      in_tree = jnp.any((forest.live & tree.entry.reshape(-1)).reshape(N, M), axis=1)  # [N]
      node_weight = averaging.accumulate(node_weight, in_tree.astype(rv.dtype), t)
    st = st.replace(
        q=q, prior=prior_out, gadget=gs,
        queries=prog.record_queries(st.queries, tree, forest, fw, t) if ctx["query"] else st.queries,
        joint_reach=(fw.chance * fw.own[0] * fw.own[1]).reshape(N, M),
        root_values=jnp.where(rows, averaging.accumulate(st.root_values, rv, t), st.root_values),
        node_values=jnp.where(rows, averaging.accumulate(st.node_values, node_v, t),
                              st.node_values),
        value_weight=(averaging.accumulate(st.value_weight, jnp.ones((), rv.dtype), t) if last
                      else st.value_weight),
        node_weight=node_weight,
        num_queries=st.num_queries + (jnp.sum(forest.leaf, dtype=jnp.int32) if ctx["query"]
                                      else 0),
        history_visits=st.history_visits + jnp.sum(forest.live, dtype=jnp.int32))
    return st, ctx["leaf_values"]


def among(player, players: tuple):
  """Whether the (traced) ``player`` is one of the (static) ``players`` updated now."""
  if len(players) == 2:
    return jnp.ones((), bool)
  return player == players[0]


def select(pred, a, b):
  """The pytree ``a`` where ``pred`` else ``b``."""
  return jax.tree_util.tree_map(lambda x, y: jnp.where(pred, x, y), a, b)
