"""The regret phase of Growing-Tree CFR on the device tree, on the tree's history or factored form.

:func:`tree_forest` reads the current device tree as a :class:`~jaxgt.search.history_cfr.Forest`
(history slots of expanded nodes and the entry histories of frontier nodes), wrapped as
:class:`HistoryForm`; a tree grown by a rules source is also read per node on factored ranges
(:class:`~jaxgt.search.factored_form.FactoredForm`, ``O(K)`` instead of ``O(K0 K1)`` per node),
the default there (:func:`tree_form`). :class:`RegretPhase` is either form as a
:class:`~jaxgt.solvers.cfr_iteration.TreeView`, so the package's one CFR iteration runs on it: each iteration mixes the gadget's range, runs the
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
from jaxgt.core.checks import check_choice
from jaxgt.core.game_tree import NO_INDEX
from jaxgt.games.base import CHANCE
from jaxgt.search import device_tree
from jaxgt.search import factored_form, history_cfr
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


@dataclasses.dataclass(frozen=True)
class HistoryForm:
  """The regret phase's passes on the history form (:func:`tree_forest`) of ``tree``, with
  the methods of :class:`jaxgt.search.factored_form.FactoredForm`: reaches down, values up,
  and what the search records, per history slot."""

  tree: device_tree.DeviceTree
  forest: history_cfr.Forest
  num_infostates: int  # K

  def forward(self, sigma, ranges) -> history_cfr.Forward:
    return history_cfr.forward(self.forest, sigma, root_own(self.tree, ranges,
                                                            self.num_infostates))

  def values(self, fw, sigma, leaf_values):
    """``[2, N * M]`` player 0's value below each slot (row ``p``: for ``p``'s update)."""
    del sigma
    return history_cfr.values(self.forest, fw.edge, leaf_values)

  def action_values(self, fw, v, player: int, num_rows: int, num_actions: int):
    return history_cfr.action_values(self.forest, fw, v[player], player, num_rows, num_actions)

  def own_reach(self, fw, player: int, num_rows: int):
    return history_cfr.own_reach(self.forest, fw, player, num_rows)

  def _rows(self, x, player, reduce=jax.ops.segment_sum, slots=None):
    """``[N * K]``: ``x [N * M]`` summed (or ``reduce``d) over each node's entry histories (or
    the ``slots [N * M]`` given) by ``player``'s information-state slot."""
    tree, K = self.tree, self.num_infostates
    N, M = tree.history.shape
    node = jnp.arange(N * M) // M
    info = tree.info[player].reshape(-1)
    if slots is None:
      slots = self.forest.live & tree.entry.reshape(-1)
    ok = slots & (info >= 0)
    return reduce(jnp.where(ok, x, 0.0), jnp.where(ok, node * K + info, N * K), N * K + 1)[:-1]

  def root_values(self, fw, v):
    """``[2, K]`` counterfactual values at the root's information states."""
    K = self.num_infostates
    root_info = self.tree.info.reshape(2, -1)
    rv = []
    for p in (0, 1):
      contrib = history_cfr.root_values(self.forest, fw, v[p], p)
      rv.append(jax.ops.segment_sum(contrib, jnp.where(root_info[p] >= 0, root_info[p], K),
                                    K + 1)[:K])
    return jnp.stack(rv)

  def node_values(self, fw, v):
    """``[2, N * K]`` counterfactual values of every node's information states."""
    return jnp.stack([self._rows((1.0 if p == 0 else -1.0) * fw.chance * fw.own[1 - p] * v[p], p)
                      for p in (0, 1)])

  def node_reach(self, fw):
    """``[2, N * K]`` own reach of every node's information states."""
    return jnp.stack([jnp.maximum(self._rows(fw.own[p], p, jax.ops.segment_max), 0.0)
                      for p in (0, 1)])

  def joint_reach(self, fw):
    """``[N, M]`` chance times both reaches of each slot."""
    return (fw.chance * fw.own[0] * fw.own[1]).reshape(self.tree.history.shape)

  def leaf_input(self, tree, fw, ranges) -> LeafInput:
    N, M = tree.history.shape
    return LeafInput(tree=tree, leaf=self.forest.leaf.reshape(N, M),
                     reach=fw.own.reshape(2, N, M), chance=fw.chance.reshape(N, M),
                     root_ranges=ranges)

  def query(self, fw):
    """``(queried [N], ranges [N, 2, K])``: the frontier nodes and their normalised ranges."""
    N, M = self.tree.history.shape
    leaf = self.forest.leaf
    ranges = []
    for p in (0, 1):
      r = jnp.maximum(self._rows(fw.own[p], p, jax.ops.segment_max, leaf), 0.0).reshape(N, -1)
      ranges.append(sequence_form.safe_div(r, r.sum(-1, keepdims=True)))
    return jnp.any(leaf.reshape(N, M), axis=1), jnp.stack(ranges, 1)

  @property
  def in_tree(self):
    """``[N]`` bool nodes with a live entry history."""
    N, M = self.tree.history.shape
    return jnp.any((self.forest.live & self.tree.entry.reshape(-1)).reshape(N, M), axis=1)

  @property
  def num_leaf_slots(self):
    return jnp.sum(self.forest.leaf, dtype=jnp.int32)

  @property
  def num_live_slots(self):
    return jnp.sum(self.forest.live, dtype=jnp.int32)


TREE_FORMS = ("auto", "history", "factored")
"""The regret phase's forms: ``"factored"`` where the source's nodes are private pairs (a
rules source), ``"history"`` on any source; ``"auto"`` the factored form where it applies."""


def check_tree_form(source, form: str) -> str:
  """``form`` (one of :data:`TREE_FORMS`), checked against ``source``: ``ValueError`` for an
  unknown form, or for ``"factored"`` on a source whose nodes are not private pairs."""
  check_choice("tree_form", form, TREE_FORMS)
  if form == "factored" and not source.factored:
    raise ValueError("tree_form='factored' needs a source whose nodes are private pairs (a "
                     "rules source, jaxgt.search.rules_source)")
  return form


def tree_form(source, tree, form: str = "auto"):
  """The regret phase's form of ``tree``: :class:`HistoryForm` or
  :class:`~jaxgt.search.factored_form.FactoredForm` (:data:`TREE_FORMS`)."""
  if check_tree_form(source, form) != "history" and source.factored:
    return factored_form.factored_form(source, tree)
  return HistoryForm(tree, tree_forest(source, tree), source.num_infostates)


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
  """GT-CFR's regret phase on one tree as a :class:`~jaxgt.solvers.cfr_iteration.TreeView`,
  on the tree's history form or, where the nodes are private pairs, its factored form
  (:func:`tree_form`). Its state is ``(SearchState, leaf values [2, N * M] of this iteration
  or None before the query)``; :meth:`begin` runs the gadget's mixing, the forward pass and
  the leaf query, :meth:`end` records the search's values, action values, priors and
  counts."""

  # the search program (gtcfr_program.SearchProgram): source, config, evaluator, re-solving
  program: Any
  tree: device_tree.DeviceTree  # the current tree
  form: Any  # its HistoryForm or FactoredForm (tree_form)
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
    prog, tree, form = self.program, self.tree, self.form
    N, M = tree.history.shape
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
    fw = form.forward(sigma, ranges_t)
    query = leaf_values is None
    prior, es = None, st.evaluator
    if query:
      (leaf_values, prior), es = prog.evaluator.apply(st.evaluator,
                                                      form.leaf_input(tree, fw, ranges_t))
    dtype = tree.chance.dtype
    leaf_values = jnp.broadcast_to(jnp.asarray(leaf_values, dtype).reshape(-1, N * M),
                                   (2, N * M))
    v = form.values(fw, sigma, leaf_values)
    return dict(st=st.replace(gadget=gs, evaluator=es), gadget=gadget, fw=fw, v=v,
                leaf_values=leaf_values, query=query, prior=prior, qs={})

  def values(self, ctx, p, sigma, x):
    n, A = sigma[p].shape
    q, norm = self.form.action_values(ctx["fw"], ctx["v"], p, n, A)
    reach = jnp.maximum(self.form.own_reach(ctx["fw"], p, n), 0.0)
    return q, reach, {**ctx, "qs": {**ctx["qs"], p: (q, norm)}}

  def end(self, ctx, players, t):
    prog, tree, form = self.program, self.tree, self.form
    fw, v, st = ctx["fw"], ctx["v"], ctx["st"]
    K = prog.source.num_infostates
    last = players[-1] == 1  # static: the iteration's final update
    rv = form.root_values(fw, v)  # root counterfactual values of this iterate
    node_v = form.node_values(fw, v)
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
      node_weight = averaging.accumulate(node_weight, form.in_tree.astype(rv.dtype), t)
    st = st.replace(
        q=q, prior=prior_out, gadget=gs,
        queries=prog.record_queries(st.queries, tree, form, fw, t) if ctx["query"] else st.queries,
        joint_reach=form.joint_reach(fw),
        root_values=jnp.where(rows, averaging.accumulate(st.root_values, rv, t), st.root_values),
        node_values=jnp.where(rows, averaging.accumulate(st.node_values, node_v, t),
                              st.node_values),
        value_weight=(averaging.accumulate(st.value_weight, jnp.ones((), rv.dtype), t) if last
                      else st.value_weight),
        node_weight=node_weight,
        num_queries=st.num_queries + (form.num_leaf_slots if ctx["query"] else 0),
        history_visits=st.history_visits + form.num_live_slots)
    return st, ctx["leaf_values"]


def among(player, players: tuple):
  """Whether the (traced) ``player`` is one of the (static) ``players`` updated now."""
  if len(players) == 2:
    return jnp.ones((), bool)
  return player == players[0]


def select(pred, a, b):
  """The pytree ``a`` where ``pred`` else ``b``."""
  return jax.tree_util.tree_map(lambda x, y: jnp.where(pred, x, y), a, b)
