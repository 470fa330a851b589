"""The factored form of a growing public tree: ranges and counterfactual values per node.

Where a device game's hidden information is one private state per player
(:mod:`jaxgt.search.rules_source`), a node of the device tree is a public
state whose histories are the private pairs ``(k0, k1)``. Public-tree CFR
then needs per node only each player's reach and counterfactual values over
its private states, ``[K]`` vectors (Moravcik et al., "DeepStack", 2017;
Brown et al., "ReBeL", 2020; Schmid et al., "Student of Games", 2023, Sec. 3):

* reaches flow down the nodes: a decision of player ``p`` multiplies ``p``'s
  vector by the action's column of its strategy; chance keeps both (the
  chance probabilities of the pairs stay in the pairs' chance reach
  ``W [K0, K1]`` of each node, ``Z(s) private_chance(s)``);
* counterfactual values start at terminals and frontier leaves as one
  ``[K0, K1]`` product with the opponent's reach (``c0 = (W * u) r1``,
  ``c1 = -(W * u)^T r0``, ``u`` the payoffs or the evaluator's values), and
  flow up the nodes: at a decision of ``p``, ``p``'s vector is the strategy's
  mixture of its children's, every other vector their sum.

So an iteration costs ``O(N K)`` per pass instead of the history form's
``O(N K0 K1)`` (:mod:`jaxgt.search.history_cfr`), and the same numbers come out
(to rounding): :class:`FactoredForm` has the methods of
:class:`jaxgt.search.history_cfr.HistoryForm`, so GT-CFR's regret phase
(:mod:`jaxgt.search.regret_phase`) runs on either. Shape letters: ``N`` nodes,
``M = K0 K1`` history slots per node, ``K = max(K0, K1)`` information-state
slots, ``Q`` children per node, ``A`` actions.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from jax import lax

from jaxgt import struct
from jaxgt.core import sequence_form
from jaxgt.core.game_tree import NO_PLAYER
from jaxgt.games.base import CHANCE, TERMINAL
from jaxgt.search import device_tree
from jaxgt.search.evaluator import LeafInput


@struct.dataclass
class FactoredForward:
  """Reaches of one iteration's strategies."""

  own: Any  # [N, 2, K] each player's own reach of each private state (root ranges included)


@struct.dataclass
class FactoredForm:
  """A rules source's device tree read per node (module docstring)."""

  parent: Any  # [N] int32 parent node (NO_INDEX at the root and unused nodes)
  player: Any  # [N] int32 acting player, CHANCE, TERMINAL (anything else: not created)
  action: Any  # [N] int32 action or chance outcome into the node
  children: Any  # [N, Q] int32 child node per action or outcome (UNEXPANDED: none)
  live: Any  # [N] bool the node is in the tree
  leaf: Any  # [N] bool live, not expanded and not terminal (valued by the evaluator)
  weight: Any  # [N, M] chance reach of each pair (zero where the pair cannot be)
  payoff: Any  # [N, M] player 0's utility of each pair at terminals
  held: Any  # [2, N, K] bool the private state is some present pair's (a row of the tables)
  slots: Any  # [N] int32 present pairs of each node
  passes: Any  # [] int32 passes that settle every live node: the deepest node's depth
  num_private: tuple = struct.field(pytree_node=False)  # (K0, K1)

  @property
  def shape(self) -> tuple:
    N = self.parent.shape[0]
    return N, self.held.shape[-1]

  # ---------------------------------------------------------------- passes
  def edges(self, sigma) -> jax.Array:
    """``[N, 2, K]`` each player's factor on the edge into each node: the strategy's
    probability of the node's action at the parent's row where that player acts there,
    else one."""
    N, K = self.shape
    par = jnp.maximum(self.parent, 0)
    pp = self.player[par]
    act = jnp.maximum(self.action, 0)
    ks = jnp.arange(K)
    out = []
    for p in (0, 1):
      A = sigma[p].shape[-1]
      prob = sigma[p].reshape(-1)[((par * K)[:, None] + ks[None]) * A + act[:, None]]
      out.append(jnp.where(((pp == p) & (self.parent >= 0))[:, None], prob, 1.0))
    return jnp.stack(out, 1)

  def forward(self, sigma, ranges) -> FactoredForward:
    """Reaches under ``sigma`` (``([N K, A], [N K, A])``) from root ``ranges [2, K]``."""
    e = self.edges(sigma)
    root = (self.parent < 0)[:, None, None]
    start = jnp.where(root & self.live[:, None, None], ranges[None], 0.0)
    par = jnp.maximum(self.parent, 0)
    live = self.live[:, None, None]
    x = lax.fori_loop(0, self.passes, lambda _, y: jnp.where(root, start, y[par] * e) * live,
                      start)
    return FactoredForward(own=x)

  def _pair(self, x):
    """``[N, M]`` as ``[N, K0, K1]``."""
    K0, K1 = self.num_private
    return x.reshape(x.shape[:-1] + (K0, K1))

  def _against(self, matrix, fw: FactoredForward, player: int):
    """``[N, K]``: ``player``'s counterfactual sums ``sum_o matrix[k, o] r_o`` of ``matrix [N, M]``
    (player 0's orientation) against the opponent's reach."""
    K0, K1 = self.num_private
    K = self.shape[1]
    m = self._pair(matrix)
    if player == 0:
      out = jnp.einsum("nab,nb->na", m, fw.own[:, 1, :K1])
    else:
      out = jnp.einsum("nab,na->nb", m, fw.own[:, 0, :K0])
    return jnp.pad(out, ((0, 0), (0, K - out.shape[1])))

  def values(self, fw: FactoredForward, sigma, leaf_values) -> jax.Array:
    """``[N, 2, K]`` counterfactual values of each node (player ``p``'s utility, the opponent's
    reach and chance included) with ``leaf_values [2, N M]`` (row ``p``: player 0's value of
    each pair, used in ``p``'s update) at leaves and the payoffs at terminals."""
    N, K = self.shape
    term = self.live & (self.player == TERMINAL)
    base = []
    for p in (0, 1):
      u = jnp.where(self.leaf[:, None], leaf_values[p].reshape(N, -1),
                    jnp.where(term[:, None], self.payoff, 0.0))
      sign = 1.0 if p == 0 else -1.0
      base.append(sign * self._against(self.weight * u, fw, p))
    base = jnp.stack(base, 1)
    e = self.edges(sigma)
    send = self.live & (self.parent >= 0)
    ids = jnp.where(send, self.parent, N)

    def step(c):  # each node's weighted values scattered to its parent as one [2, K] row
      return base + jax.ops.segment_sum(e * c, ids, N + 1)[:N]

    return lax.fori_loop(0, self.passes, lambda _, c: step(c), base)

  # ---------------------------------------------------------------- per row
  def _acting(self, player: int):
    """``[N, K]`` rows where ``player`` acts."""
    return (self.live & (self.player == player))[:, None] & self.held[player]

  def action_values(self, fw: FactoredForward, c, player: int, num_rows: int, num_actions: int):
    """Counterfactual action values ``[N K, A]`` of ``player`` and the opponent-and-chance reach
    ``[N K]`` of each row (:func:`jaxgt.search.history_cfr.action_values`)."""
    N, K = self.shape
    kids = self.children[:, :num_actions]  # [N, A]
    q = jnp.where((kids >= 0)[:, :, None], c[jnp.maximum(kids, 0), player], 0.0)  # [N, A, K]
    acting = self._acting(player)
    q = jnp.where(acting[:, None, :], q, 0.0)
    norm = self._against(self.weight, fw, player)
    norm = jnp.where(acting, norm, 0.0)
    return jnp.swapaxes(q, 1, 2).reshape(num_rows, num_actions), norm.reshape(num_rows)

  def own_reach(self, fw: FactoredForward, player: int, num_rows: int):
    """``[N K]`` own reach of each row of ``player``'s table."""
    return jnp.where(self._acting(player), fw.own[:, player], 0.0).reshape(num_rows)

  def root_values(self, fw: FactoredForward, c):
    """``[2, K]`` counterfactual values at the root node."""
    return jnp.stack([jnp.where(self.held[p, 0], c[0, p], 0.0) for p in (0, 1)])

  def node_values(self, fw: FactoredForward, c):
    """``[2, N K]`` counterfactual values of every node's information states."""
    ok = self.live[None, :, None] & self.held
    return jnp.where(ok, jnp.moveaxis(c, 1, 0), 0.0).reshape(2, -1)

  def node_reach(self, fw: FactoredForward):
    """``[2, N K]`` own reach of every node's information states."""
    ok = self.live[None, :, None] & self.held
    return jnp.where(ok, jnp.maximum(jnp.moveaxis(fw.own, 1, 0), 0.0), 0.0).reshape(2, -1)

  # ---------------------------------------------------------------- per pair
  def pair_reach(self, fw: FactoredForward):
    """``[2, N, M]`` each player's own reach of each present pair."""
    K0, K1 = self.num_private
    present = self.weight > 0
    r0 = jnp.repeat(fw.own[:, 0, :K0], K1, axis=1)
    r1 = jnp.tile(fw.own[:, 1, :K1], (1, K0))
    return jnp.stack([jnp.where(present, r0, 0.0), jnp.where(present, r1, 0.0)])

  def joint_reach(self, fw: FactoredForward):
    """``[N, M]`` chance times both reaches of each pair."""
    r = self.pair_reach(fw)
    return self.weight * r[0] * r[1]

  def leaf_input(self, tree, fw: FactoredForward, ranges) -> LeafInput:
    """The evaluator's input: the frontier's pairs, their reaches and chance reach."""
    leaf = self.leaf[:, None] & (self.weight > 0)
    return LeafInput(tree=tree, leaf=leaf, reach=self.pair_reach(fw), chance=self.weight,
                     root_ranges=ranges)

  def query(self, fw: FactoredForward):
    """``(queried [N], ranges [N, 2, K])``: the frontier nodes and their normalised ranges."""
    r = jnp.where(self.leaf[:, None, None] & jnp.moveaxis(self.held, 0, 1),
                  jnp.maximum(fw.own, 0.0), 0.0)
    return self.leaf, sequence_form.safe_div(r, r.sum(-1, keepdims=True))

  @property
  def in_tree(self):
    """``[N]`` bool nodes in the tree."""
    return self.live

  @property
  def num_leaf_slots(self):
    """``[]`` int32 pairs valued by the evaluator."""
    return jnp.sum(jnp.where(self.leaf, self.slots, 0), dtype=jnp.int32)

  @property
  def num_live_slots(self):
    """``[]`` int32 pairs of the tree."""
    return jnp.sum(jnp.where(self.live, self.slots, 0), dtype=jnp.int32)


def factored_form(source, tree: device_tree.DeviceTree) -> FactoredForm:
  """The factored view of ``tree`` grown by a rules source ``source``
  (:func:`jaxgt.search.rules_source.rules_source`)."""
  K0, K1 = source.rules.num_private
  valid = tree.history >= 0  # [N, M]
  first = jnp.argmax(valid, axis=1)
  player = jnp.take_along_axis(tree.player, first[:, None], 1)[:, 0]
  action = jnp.take_along_axis(tree.action, first[:, None], 1)[:, 0]
  live = jnp.any(valid, axis=1)
  nonterminal = (player == 0) | (player == 1) | (player == CHANCE)
  leaf = live & ~tree.expanded & nonterminal
  held = tree.info_id >= 0  # [2, N, K]
  passes = jnp.max(jnp.where(live, tree.depth, 0))
  return FactoredForm(parent=tree.parent, player=jnp.where(live, player, NO_PLAYER), action=action,
                      children=tree.children, live=live, leaf=leaf,
                      weight=jnp.where(valid, tree.chance_reach, 0.0),
                      payoff=jnp.where(valid, tree.payoff, 0.0), held=held,
                      slots=jnp.sum(valid, axis=1, dtype=jnp.int32), passes=passes,
                      num_private=(int(K0), int(K1)))
