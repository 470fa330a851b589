"""The one trajectory walker of the sampled solvers: ``B`` trajectories down a compiled tree.

Outcome-sampling MCCFR, OOS, ISMCTS and (Smooth) UCT all sample trajectories
the same way: a batch of ``B`` histories walks down together, one depth
step per iteration of a ``lax.fori_loop`` over the tree's ``max_depth``;
at each step chance draws from ``tree.chance_probs`` and a decision draws
from the algorithm's *sampling* distribution, with one uniform per
trajectory and step (:func:`jaxgt.core.sampling.sample_cdf`). The
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
from flax import struct
from jax import lax

from jaxgt.core.game_tree import NO_INDEX, NO_PLAYER, GameTree
from jaxgt.core.sampling import sample_cdf
from jaxgt.core.tables import infostate_rows
from jaxgt.games.base import CHANCE


@struct.dataclass
class Node:
  """The current node of each of ``B`` trajectories."""

  history: jax.Array  # [B] int32 history index
  player: jax.Array  # [B] int32 acting player (0, 1, CHANCE, or a terminal's NO_PLAYER-like code)
  infostate: jax.Array  # [B] int32 acting player's information state (NO_INDEX off decisions)
  decision: jax.Array  # [B] bool player 0 or 1 acts
  legal: jax.Array  # [B, A] bool legal actions (all False off decisions)


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
  """``B`` sampled trajectories, one row per depth step ``[D, B]`` (``D = tree.max_depth``).

  Step ``t`` of column ``b`` is the ``t``-th node the trajectory passed
  through (chance and decisions alike); steps after it reached a terminal
  are padding.
  """

  history: jax.Array  # [D, B] int32 history at each step (NO_INDEX past the end)
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
  terminal: jax.Array  # [B] int32 terminal index reached (NO_INDEX if the walk ended elsewhere)
  last: jax.Array  # [B] int32 history where each trajectory ended
  record: Any  # the node policy's records stacked [D, B, ...]

  def payoff(self, tree: GameTree) -> jax.Array:
    """``[B]`` player 0's payoff at the terminal reached."""
    return tree.terminal_payoff[jnp.maximum(self.terminal, 0)]


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


def node_at(tree: GameTree, history) -> Node:
  """The :class:`Node` at ``history [B]`` (acting player, information state, legal mask)."""
  player = tree.player[history]
  infostate = tree.infostate[history]
  decision = player >= 0
  legal = infostate_rows(tuple(pt.legal for pt in tree.players), player, infostate)
  return Node(history=history, player=player, infostate=infostate, decision=decision,
              legal=legal & decision[:, None])


def with_chance(tree: GameTree, node: Node, sample) -> jax.Array:
  """``[B, C]`` weights over children: ``tree.chance_probs`` at chance, ``sample [B, A]`` elsewhere."""
  C, A = tree.children.shape[1], sample.shape[-1]
  return jnp.where((node.player == CHANCE)[:, None], tree.chance_probs[node.history].astype(
      sample.dtype), jnp.pad(sample, ((0, 0), (0, C - A))))


def _take(x, a):
  return jnp.take_along_axis(x, a[:, None], axis=-1)[:, 0]


@struct.dataclass
class PolicyTable:
  """A node policy that is a fixed table over histories (no carry, no targeting, no record)."""

  sample: jax.Array  # [H, A] sampling weights at every history (need not be normalised)
  target: jax.Array  # [H, A] target policy at every history


def walk(tree: GameTree, policy, uniforms, *, start=None, carry=None,
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
    tree: the compiled tree.
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
  hs = jnp.zeros(B, jnp.int32) if start is None else jnp.asarray(start, jnp.int32)
  table = isinstance(policy, PolicyTable)
  if table:
    every = node_at(tree, jnp.arange(tree.num_histories, dtype=jnp.int32))
    table_live = every.decision | (every.player == CHANCE)  # [H]
    table_weights = with_chance(tree, every, policy.sample.astype(dtype))  # [H, C]
    table_cdf = jnp.cumsum(table_weights, axis=-1)
    targeting, A = False, policy.target.shape[-1]
  else:
    probe = jax.eval_shape(lambda h, c: policy(jnp.int32(0), node_at(tree, h), c)[0], hs, carry)
    targeting, A = probe.on_target is not None, probe.target.shape[-1]
  if targeting != (targeted is not None):
    raise ValueError("targeted trajectories need a node policy with on_target, and vice versa")

  # What each step keeps, packed (see _packing): (history, action, the carry it saw) and, with
  # targeting, the action's targeted probability.
  kept = jax.eval_shape(lambda: (hs, hs, carry) + ((jnp.zeros(B, dtype),) if targeting else ()))
  pack_kept, unpack_kept = _packing(kept)

  def body(t, loop):
    hs, carry, out = loop
    seen = carry
    if table:
      cdf, live = table_cdf[hs], table_live[hs]
    else:
      node = node_at(tree, hs)
      draw, carry = policy(t, node, carry)
      weights = with_chance(tree, node, draw.sample.astype(dtype))
      live = node.decision | (node.player == CHANCE)
      if targeting:
        restricted = jnp.where(draw.on_target, weights, 0.0)
        on_total = jnp.sum(restricted, axis=-1)
        weights = jnp.where((targeted & (on_total > 0))[:, None], restricted, weights)
      cdf = jnp.cumsum(weights, axis=-1)
    a = sample_cdf(cdf, uniforms[t])
    row = (hs, jnp.where(live, a, 0), seen)
    if targeting:
      # The targeted probability of the action here, where the restricted weights are at hand.
      tp = jnp.where(on_total > 0, _take(restricted, a) / jnp.where(on_total > 0, on_total, 1.0),
                     0.0)
      row = row + (jnp.where(live, tp, 1.0).astype(dtype),)
    out = tuple(x.at[t].set(r) for x, r in zip(out, pack_kept(row)))
    return jnp.where(live, tree.children[hs, a], hs), carry, out

  hs, carry, kept_out = lax.fori_loop(0, D, body, (hs, carry, tuple(
      jnp.zeros((D,) + x.shape, x.dtype) for x in pack_kept(kept, abstract=True))))

  def replay(step, h, a, carry_rows):
    """The draw of rows ``h [N]`` again: ``(on, player, infostate, sample_p, target_p,
    record)`` of the recorded actions ``a [N]``."""
    if table:
      on, player, infostate = table_live[h], tree.player[h], tree.infostate[h]
      weights, target, record = table_weights[h], policy.target[h], None
      total = table_cdf[h, -1]
    else:
      node = node_at(tree, h)
      draw, _ = policy(step, node, carry_rows)
      on, player, infostate = node.decision | (node.player == CHANCE), node.player, node.infostate
      weights = with_chance(tree, node, draw.sample.astype(dtype))
      target, record = draw.target, draw.record
      total = jnp.sum(weights, axis=-1)
    sample_p = _take(weights, a) / jnp.where(total > 0, total, 1.0)
    target_p = jnp.where(player == CHANCE, sample_p,
                         _take(target.astype(dtype), jnp.minimum(a, A - 1)))
    return (on, jnp.where(on, player, NO_PLAYER), jnp.where(on, infostate, NO_INDEX),
            jnp.where(on, sample_p, 1.0).astype(dtype), jnp.where(on, target_p, 1.0).astype(dtype),
            record)

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
    on, player, infostate, sample_p, target_p, record = unpack(out)
  else:
    # Every step's draw again, all D x B at once (the same function of the same inputs; past
    # the end of a trajectory the node is the history where it ended, as in the loop).
    step = jnp.repeat(jnp.arange(D, dtype=jnp.int32), B)
    rows = replay(step, at.reshape(-1), acts.reshape(-1), jax.tree_util.tree_map(
        lambda c: c.reshape((D * B,) + c.shape[2:]), carries))
    on, player, infostate, sample_p, target_p, record = jax.tree_util.tree_map(
        lambda x: x.reshape((D, B) + x.shape[1:]), rows)
  return Trajectory(history=jnp.where(on, at, NO_INDEX), player=player, infostate=infostate,
                    action=acts, sample_prob=sample_p, target_prob=target_p,
                    targeted_prob=targeted_p, terminal=tree.history_terminal[hs], last=hs,
                    record=record), carry


def walk_tables(tree: GameTree, sample, target, uniforms) -> Trajectory:
  """:func:`walk` of the :class:`PolicyTable` ``(sample [H, A], target [H, A])``."""
  return walk(tree, PolicyTable(sample=sample, target=target), uniforms)[0]
