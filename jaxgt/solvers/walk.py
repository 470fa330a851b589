"""The one trajectory walker of the sampled solvers: ``B`` trajectories down a game.

Outcome-sampling MCCFR, OOS, ISMCTS and (Smooth) UCT all sample trajectories
the same way: a batch of ``B`` positions walks down together, one depth
step per iteration of a ``lax.fori_loop`` over the game's ``max_depth``;
at each step chance draws from its probabilities (a device game with its own
sampler, :meth:`~jaxgt.games.device.DeviceGame.sample_chance`, draws with it:
hold'em deals one of the cards left without 52-wide weights; outside targeted
walks) and a decision draws from the algorithm's *sampling* distribution, with
one uniform per trajectory and step (:func:`jaxgt.core.sampling.sample_cdf`). The
algorithms differ only in the distribution at a decision (their *node
policy*) and in what they do with the finished trajectories (their update).
:func:`walk` is that loop; it returns a :class:`Trajectory`.

A node policy is ``node_policy(t, node, carry) -> (Draw, carry)``: at step
``t`` it sees the current :class:`Node` of every trajectory (history,
acting player, information state, legal mask) and a per-trajectory
``carry`` of its own (e.g. "still inside the search tree"), and returns the
sampling and target distributions over the ``A`` actions and a pytree of
``[B, ...]`` values to record at this step (:class:`Draw`).

**Targeting** (OOS, Lisy et al. 2015, Sec. 4.1-4.2): a ``Draw`` may also
carry an ``on_target [B, C]`` mask of the children inside the targeted part
of the game. Trajectories flagged ``targeted`` then draw from the sampling
distribution restricted to those children (when it leaves any mass), and the
walk records the probability of the action under both scenarios.

**Reading a trajectory** (e.g. for importance-sampling evaluation): with
``q`` the sampling and ``pi`` the target probability of each step, the
trajectory of column ``b`` was drawn with probability ``prod_t
sample_prob[t, b]`` (untargeted) and has probability ``prod_t
target_prob[t, b]`` under the target profile and chance (chance steps
contribute their chance probability to both). Padding steps past the end
of a trajectory have ``player == NO_PLAYER`` and probability ``1``. With
targeting, a trajectory is drawn from the mixture ``delta prod targeted_prob
+ (1 - delta) prod sample_prob``.

**Positions** come from a source (:mod:`jaxgt.solvers.sources`): history
indices of a compiled tree, or the states of a device game whose information
states are rows of fixed-capacity tables. A node policy sees the same
:class:`Node` either way (for a device game, ``history`` holds the states and
``key`` the acting player's information-state keys); the trajectory records
the positions (``history``), and for a device game the keys of every step
(``key``), so that a solver can insert the states it updates after the walk.

**External sampling** (Lanctot et al. 2009) explores every action of the
traverser, so it is a traversal over a frontier, not ``B`` single
trajectories; it reads per-history table rows instead of nodes and
draws with the same sampler (see :mod:`jaxgt.solvers.mccfr_external`).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxgt import struct
from jaxgt.core.game_tree import NO_INDEX, NO_PLAYER, GameTree
from jaxgt.core.sampling import sample_cdf
from jaxgt.games.base import CHANCE
from jaxgt.solvers.sources import Node, TreeSource, node_at, source_of


@struct.dataclass
class Draw:
  """What a node policy returns at one step."""

  # [B, A] sampling weights at decisions (need not be normalised; ignored at chance and past the
  # end)
  sample: jax.Array
  target: jax.Array  # [B, A] target policy at decisions (the strategy being evaluated or updated)
  # pytree of [B, ...] values stacked into :attr:`Trajectory.record` (None: nothing)
  record: Any = None
  on_target: Any = None  # [B, C] bool children inside the targeted set, or None (no targeting)


@struct.dataclass
class Trajectory:
  """``B`` sampled trajectories, one row per depth step ``[D, B]`` (``D = max_depth``).

  Step ``t`` of column ``b`` is the ``t``-th node the trajectory passed
  through (chance and decisions alike); steps after it reached a terminal
  are padding.
  """

  # [D, B] int32 history at each step (NO_INDEX past the end); for a device game the states
  # [D, B, ...] (past the end: the terminal state)
  history: Any
  player: jax.Array  # [D, B] int32 acting player: 0, 1, CHANCE, or NO_PLAYER past the end
  # [D, B] int32 acting player's information state (NO_INDEX at chance and past the end)
  infostate: jax.Array
  # [D, B] int32 the child index taken (an action index at decisions; 0 past the end)
  action: jax.Array
  # [D, B] probability of the action under the (untargeted) sampling distribution: the node policy's
  # sample at decisions, chance probability at chance; 1 past the end
  sample_prob: jax.Array
  # [D, B] probability of the action under the target policy (Draw.target) at decisions, chance
  # probability at chance; 1 past the end
  target_prob: jax.Array
  # [D, B] probability of the action under the sampling distribution restricted to on_target (0
  # where the restriction has no mass; 1 past the end), or None without targeting
  targeted_prob: Any
  # [B] int32 terminal index reached (NO_INDEX if the walk ended elsewhere; 0 for any terminal
  # state of a device game)
  terminal: jax.Array
  last: Any  # [B] int32 history (or the states) where each trajectory ended
  record: Any  # the node policy's records stacked [D, B, ...]
  utility: jax.Array = None  # [B] player 0's payoff at the terminal reached
  key: Any = None  # [D, B, W] int32 acting player's key at each step (device games; else None)

  def payoff(self, tree=None) -> jax.Array:
    """``[B]`` player 0's payoff at the terminal reached."""
    del tree
    return self.utility


# Walks of at most this many rows (batch x depth) replay their draws in a loop (see walk).
REPLAY_LOOP_ROWS = 64


def _packing(shapes):
  """``(pack, unpack)``: a pytree of ``[B, ...]`` rows as one ``[B, k]`` array per dtype kind
  (bools and integers as int32, each float dtype apart) and back, with a leading axis added.

  A loop that records many small arrays step by step pays for each of its buffers outside
  the loop (a copy each); packed, it has one buffer per kind.
  """
  leaves, treedef = jax.tree_util.tree_flatten(shapes)
  kind = [jnp.int32 if not jnp.issubdtype(x.dtype, jnp.floating) else x.dtype for x in leaves]
  kinds = list(dict.fromkeys(jnp.dtype(k) for k in kind))
  sizes = [int(np.prod(x.shape[1:], dtype=np.int64)) for x in leaves]

  def pack(tree, abstract=False):
    xs = jax.tree_util.tree_leaves(tree)
    out = []
    for k in kinds:
      part = [(x, n) for x, n, kk in zip(xs, sizes, kind) if jnp.dtype(kk) == k]
      if abstract:
        out.append(jax.ShapeDtypeStruct((xs[0].shape[0], sum(n for _, n in part)), k))
      else:
        out.append(jnp.concatenate([x.reshape(x.shape[0], n).astype(k) for x, n in part], axis=1))
    return tuple(out)

  def unpack(packed):
    offsets = {k: 0 for k in kinds}
    xs = []
    for x, n, kk in zip(leaves, sizes, kind):
      p = packed[kinds.index(jnp.dtype(kk))]
      o = offsets[jnp.dtype(kk)]
      offsets[jnp.dtype(kk)] = o + n
      xs.append(p[..., o:o + n].reshape(p.shape[:-2] + x.shape).astype(x.dtype))
    return jax.tree_util.tree_unflatten(treedef, xs)

  return pack, unpack


def with_chance(tree, node: Node, sample) -> jax.Array:
  """``[B, C]`` weights over children: chance probabilities at chance, ``sample [B, A]``
  elsewhere (``tree`` a compiled tree or a source)."""
  src = source_of(tree)
  C, A = src.num_children, sample.shape[-1]
  return jnp.where((node.player == CHANCE)[:, None], src.chance(node.history).astype(
      sample.dtype), jnp.pad(sample, ((0, 0), (0, C - A))))


def cumulative(weights):
  """``[..., K]`` cumulative sums of ``weights [..., K]`` over the last axis. Wide axes (``K >=
  8``, e.g. chance outcomes) multiply by a triangular matrix of ones at full precision: XLA's
  CPU cumsum is a windowed reduction that costs far more than the product."""
  K = weights.shape[-1]
  if K < 8:
    return jnp.cumsum(weights, axis=-1)
  return jnp.matmul(weights, jnp.triu(jnp.ones((K, K), weights.dtype)),
                    precision=lax.Precision.HIGHEST)


def _take(x, a):
  return jnp.take_along_axis(x, a[:, None], axis=-1)[:, 0]


@struct.dataclass
class PolicyTable:
  """A node policy that is a fixed table over histories (no carry, no targeting, no record)."""

  sample: jax.Array  # [H, A] sampling weights at every history (need not be normalised)
  target: jax.Array  # [H, A] target policy at every history


def walk(tree, policy, uniforms, *, start=None, carry=None,
         targeted=None) -> tuple[Trajectory, Any]:
  """Walks ``B`` trajectories down ``tree`` for ``D`` steps; returns ``(Trajectory, carry)``.

  The loop only samples: each step draws the action from the cumulative
  weights of its node (:func:`~jaxgt.core.sampling.sample_cdf`, one uniform
  each) and keeps the history, the action and the carry the step saw (and,
  with targeting, the action's targeted probability, where the restricted
  weights are at hand). Everything else of the :class:`Trajectory`
  (probabilities, records) is computed after it by calling the node policy
  again on the recorded nodes and carries (the same function of the same
  inputs, so the same numbers): for small walks (``B * D <=
  REPLAY_LOOP_ROWS``) in a second loop over the steps, else once on all ``D x
  B`` rows. On the CPU, XLA compiles a loop whose body reads and writes
  under 1 kB into a single kernel and runs anything else operation by
  operation at a fixed cost each, so at batch 1 both loops are kept that
  small (few operations per step, what one trajectory at a time is bound
  by). A node policy must therefore be a function of ``(node, carry)`` row by
  row (``t`` is passed as an int32 array broadcastable to the rows: the
  scalar step in the loops, ``[D * B]`` on all rows).

  A :class:`PolicyTable` is the node policy ``Draw(sample[h], target[h])``
  whose per-history cumulative weights are computed once, so each step of
  the loop is one row gather and a comparison (what large batches need:
  ``B * D`` visited rows outnumber the ``H`` rows of the table).

  Args:
    tree: the compiled tree, or a source (:mod:`jaxgt.solvers.sources`; a device game's
      positions are its states and ``start`` a batch of states).
    policy: a node policy ``(t, Node, carry) -> (Draw, carry)`` (see module docstring) or a
      :class:`PolicyTable`.
    uniforms: ``[D, B]`` uniforms in ``[0, 1)``, one per step and trajectory.
    start: ``[B] int32`` first histories (default: the root).
    carry: initial per-trajectory carry of the node policy (any pytree of ``[B, ...]`` arrays).
    targeted: ``[B] bool`` trajectories drawn from the targeted distribution
      (requires ``Draw.on_target``); ``None``: no targeting.
  """
  D, B = uniforms.shape
  dtype = uniforms.dtype
  src = source_of(tree)
  on_tree = isinstance(src, TreeSource)
  if start is None:
    hs = src.root(B)
  else:
    hs = jnp.asarray(start, jnp.int32) if on_tree else start
  table = isinstance(policy, PolicyTable)
  if table and not on_tree:
    raise ValueError("a PolicyTable walks a compiled tree only")
  if table:
    tree = src.tree
    every = node_at(tree, jnp.arange(tree.num_histories, dtype=jnp.int32))
    table_live = every.decision | (every.player == CHANCE)  # [H]
    table_weights = with_chance(tree, every, policy.sample.astype(dtype))  # [H, C]
    table_cdf = cumulative(table_weights)
    targeting, A = False, policy.target.shape[-1]
  else:
    probe = jax.eval_shape(lambda h, c: policy(jnp.int32(0), src.node(h), c)[0], hs, carry)
    targeting, A = probe.on_target is not None, probe.target.shape[-1]
  if targeting != (targeted is not None):
    raise ValueError("targeted trajectories need a node policy with on_target, and vice versa")
  # A device game with its own chance sampler draws chance outcomes with it: decisions sample
  # from their [B, A] weights and no [B, C] chance weights are built (hold'em deals from 52).
  sampled_chance = not on_tree and not targeting and src.chance_sampler

  # What each step keeps, packed (see _packing): (history, action, the carry it saw) and, with
  # targeting, the action's targeted probability. On a device game the carry it saw comes
  # with the node's key and table row, so the replay does not compute them again (a key can
  # be costly: an abstraction's hand strength).
  if on_tree:
    seen_shape = carry
  else:
    probe_node = jax.eval_shape(src.node, hs)
    seen_shape = (carry, (probe_node.key, probe_node.infostate))
  kept = jax.eval_shape(lambda: (hs, jnp.zeros(B, jnp.int32), seen_shape) + (
      (jnp.zeros(B, dtype),) if targeting else ()))
  pack_kept, unpack_kept = _packing(kept)

  def body(t, loop):
    hs, carry, out = loop
    seen = carry
    if table:
      cdf, live = table_cdf[hs], table_live[hs]
    else:
      node = src.node(hs)
      if not on_tree:
        seen = (carry, (node.key, node.infostate))
      draw, carry = policy(t, node, carry)
      live = node.decision | (node.player == CHANCE)
      if sampled_chance:
        a = jnp.where(node.player == CHANCE, src.sample_chance(hs, uniforms[t]),
                      sample_cdf(cumulative(draw.sample.astype(dtype)), uniforms[t]))
      else:
        weights = with_chance(src, node, draw.sample.astype(dtype))
      if targeting:
        base = weights
        restricted = jnp.where(draw.on_target, weights, 0.0)
        on_total = jnp.sum(restricted, axis=-1)
        weights = jnp.where((targeted & (on_total > 0))[:, None], restricted, weights)
      if not sampled_chance:
        cdf = cumulative(weights)
    if table or not sampled_chance:
      a = sample_cdf(cdf, uniforms[t])
    row = (hs, jnp.where(live, a, 0), seen)
    if targeting:
      # The targeted probability of the action here, where the restricted weights are at hand.
      # Where the restriction leaves no mass the targeted scenario goes on unrestricted (a
      # trajectory that left the targeted set already has probability 0 under it; a device
      # game's consistent children can run out where card removal rules a branch out).
      base_total = jnp.sum(base, axis=-1)
      tp = jnp.where(on_total > 0, _take(restricted, a) / jnp.where(on_total > 0, on_total, 1.0),
                     _take(base, a) / jnp.where(base_total > 0, base_total, 1.0))
      row = row + (jnp.where(live, tp, 1.0).astype(dtype),)
    out = tuple(x.at[t].set(r) for x, r in zip(out, pack_kept(row)))
    nxt = src.child(hs, a)
    return jax.tree_util.tree_map(
        lambda n, o: jnp.where(live.reshape(live.shape + (1,) * (n.ndim - 1)), n, o), nxt,
        hs), carry, out

  hs, carry, kept_out = lax.fori_loop(0, D, body, (hs, carry, tuple(
      jnp.zeros((D,) + x.shape, x.dtype) for x in pack_kept(kept, abstract=True))))

  def replay(step, h, a, carry_rows):
    """The draw of rows ``h [N]`` again: ``(on, player, infostate, sample_p, target_p,
    record, key)`` of the recorded actions ``a [N]``."""
    key = None
    if table:
      on, player, infostate = table_live[h], tree.player[h], tree.infostate[h]
      weights, target, record = table_weights[h], policy.target[h], None
      total = table_cdf[h, -1]
    else:
      if on_tree:
        node = src.node(h)
      else:
        carry_rows, known = carry_rows
        node = src.node(h, known)
      draw, _ = policy(step, node, carry_rows)
      on, player, infostate = node.decision | (node.player == CHANCE), node.player, node.infostate
      target, record, key = draw.target, draw.record, node.key
      if sampled_chance:
        weights = draw.sample.astype(dtype)
        total = jnp.sum(weights, axis=-1)
        decided = _take(weights, jnp.minimum(a, A - 1)) / jnp.where(total > 0, total, 1.0)
        sample_p = jnp.where(player == CHANCE, src.chance_prob(h, a), decided)
      else:
        weights = with_chance(src, node, draw.sample.astype(dtype))
        total = jnp.sum(weights, axis=-1)
    if not sampled_chance:
      sample_p = _take(weights, a) / jnp.where(total > 0, total, 1.0)
    target_p = jnp.where(player == CHANCE, sample_p,
                         _take(target.astype(dtype), jnp.minimum(a, A - 1)))
    return (on, jnp.where(on, player, NO_PLAYER), jnp.where(on, infostate, NO_INDEX),
            jnp.where(on, sample_p, 1.0).astype(dtype), jnp.where(on, target_p, 1.0).astype(dtype),
            record, key)

  at, acts, carries, *targeted_p = unpack_kept(kept_out)
  targeted_p = targeted_p[0] if targeting else None
  if B * D <= REPLAY_LOOP_ROWS:
    # Few rows: replay step by step in a second loop (a small loop compiles to one kernel on
    # the CPU, where the same gathers on all D x B rows at once cost one dispatch each).
    first = unpack_kept(tuple(x[0] for x in kept_out))[:3]
    shapes = jax.eval_shape(lambda: replay(jnp.int32(0), *first))
    pack, unpack = _packing(shapes)

    def replay_body(t, out):
      h, a, seen, *_ = unpack_kept(tuple(x[t] for x in kept_out))
      row = pack(replay(t, h, a, seen))
      return tuple(lax.dynamic_update_index_in_dim(x, r, t, 0) for x, r in zip(out, row))

    out = lax.fori_loop(0, D, replay_body, tuple(jnp.zeros((D,) + x.shape, x.dtype)
                                                 for x in pack(shapes, abstract=True)))
    on, player, infostate, sample_p, target_p, record, key = unpack(out)
  else:
    # Every step's draw again, all D x B at once (the same function of the same inputs; past
    # the end of a trajectory the node is the history where it ended, as in the loop).
    step = jnp.repeat(jnp.arange(D, dtype=jnp.int32), B)
    flat = lambda c: c.reshape((D * B,) + c.shape[2:])
    rows = replay(step, jax.tree_util.tree_map(flat, at), acts.reshape(-1),
                  jax.tree_util.tree_map(flat, carries))
    on, player, infostate, sample_p, target_p, record, key = jax.tree_util.tree_map(
        lambda x: x.reshape((D, B) + x.shape[1:]), rows)
  return Trajectory(history=jnp.where(on, at, NO_INDEX) if on_tree else at, player=player,
                    infostate=infostate, action=acts, sample_prob=sample_p,
                    targeted_prob=targeted_p, target_prob=target_p, terminal=src.terminal(hs),
                    last=hs, record=record, utility=src.payoff(hs).astype(dtype),
                    key=key), carry


def walk_tables(tree: GameTree, sample, target, uniforms) -> Trajectory:
  """:func:`walk` of the :class:`PolicyTable` ``(sample [H, A], target [H, A])``."""
  return walk(tree, PolicyTable(sample=sample, target=target), uniforms)[0]
