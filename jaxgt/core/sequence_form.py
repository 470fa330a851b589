"""Sequence-form primitives shared by the CFR family and best response (pure, jit/vmap-able).

``tree`` is a :class:`~jaxgt.core.game_tree.GameTree` with floats in the
working dtype (shape letters there). A *policy* is ``(sigma0 [I0, A], sigma1
[I1, A])`` with zeros at illegal actions; *terminal weights* ``w [T]`` are the
chance (or root-belief) reach of each terminal (default ``tree.terminal_chance``).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from jax import custom_batching

import numpy as np

from jaxgt.core.checks import check_distribution, check_shape
from jaxgt.core.game_tree import GameTree, PlayerTree, ancestor_at_depth
from jaxgt.games.base import CHANCE


def segment_sum(data: jax.Array, ids: jax.Array, num_segments: int) -> jax.Array:
  """``jax.ops.segment_sum`` whose ``vmap`` over ``data`` only (shared ``ids``) scatters whole
  rows of ``B`` values (batch axis last; XLA's default batching is several times slower on CPU)."""
  return _row_segment_sum(int(num_segments))(data, ids)


@functools.lru_cache(maxsize=None)
def _row_segment_sum(n: int):
  @custom_batching.custom_vmap
  def f(data, ids):
    return jax.ops.segment_sum(data, ids, num_segments=n)

  @f.def_vmap
  def rule(axis_size, in_batched, data, ids):
    data_b, ids_b = in_batched
    if ids_b:
      data = data if data_b else jnp.broadcast_to(data, (axis_size,) + data.shape)
      return jax.vmap(lambda d, i: jax.ops.segment_sum(d, i, num_segments=n))(data, ids), True
    if not data_b:
      return f(data, ids), False
    out = jax.ops.segment_sum(jnp.moveaxis(data, 0, -1), ids, num_segments=n)
    return jnp.moveaxis(out, -1, 0), True

  return f


def action_major(seq: jax.Array, num_infostates: int, A: int) -> jax.Array:
  """Sequence ids ``i*A + a`` renumbered action-major, ``a*I + i`` (the empty sequence
  ``I*A`` stays): the numbering of an action-major layout (``actions_first``), where a
  strategy is ``[A, I]`` and the ``A``-term sums over actions run along a long axis."""
  n = num_infostates * A
  return jnp.where(seq >= n, seq, (seq % A) * num_infostates + seq // A)


def realization(pt: PlayerTree, sigma: jax.Array, actions_first: bool = False) -> jax.Array:
  """Own reach of every sequence ``[S]``: ``x[i*A + a] = x[parent_seq[i]] * sigma[i, a]``,
  ``x[I*A] = 1``; level ``k`` reads only level ``k - 1``'s block. With ``actions_first``,
  ``sigma`` is ``[A, I]`` and ``x`` is numbered action-major (:func:`action_major`), the
  same products."""
  if actions_first:
    return _realization_action_major(pt, sigma)
  n, A = sigma.shape
  blocks = []
  prev, prev_lo = None, 0
  for lo, hi in pt.levels:
    if prev is None:
      xk = sigma[lo:hi]
    else:
      xk = prev.reshape(-1)[pt.parent_seq[lo:hi] - prev_lo * A][:, None] * sigma[lo:hi]
    blocks.append(xk.reshape(-1))
    prev, prev_lo = xk, lo
  blocks.append(jnp.ones(1, sigma.dtype))
  return jnp.concatenate(blocks)


def _realization_action_major(pt: PlayerTree, sigma: jax.Array) -> jax.Array:
  """:func:`realization` of ``sigma [A, I]``, numbered action-major: level ``k``'s block
  ``[A, n_k]`` is its parent sequences' reach (gathered from level ``k - 1``'s block) times
  its strategies, the products of :func:`realization`."""
  A, n = sigma.shape
  blocks = []
  prev, prev_lo = None, 0
  for lo, hi in pt.levels:
    if prev is None:
      xk = sigma[:, lo:hi]
    else:
      ps = pt.parent_seq[lo:hi]  # parent sequences (i, a) in level k - 1's [A, n_prev] block
      xk = prev.reshape(-1)[(ps % A) * prev.shape[1] + ps // A - prev_lo][None, :] * sigma[:, lo:hi]
    blocks.append(xk)
    prev, prev_lo = xk, lo
  return jnp.concatenate([jnp.concatenate(blocks, axis=1).reshape(-1), jnp.ones(1, sigma.dtype)])


def infostate_reach(pt: PlayerTree, x: jax.Array, actions_first: bool = False) -> jax.Array:
  """Own reach of each information state ``[I]`` from a realization plan (numbered
  action-major with ``actions_first``)."""
  if actions_first:
    n = pt.num_infostates
    return x[action_major(pt.parent_seq, n, (x.shape[-1] - 1) // n)]
  return x[pt.parent_seq]


# terminal_sums adds rows of at most this many terminals one by one (a reduction's order of
# additions may differ from the scatter's, used when batched)
_FOLD_MAX = 32


def grouped_order(tree: GameTree, player: int):
  """``tree.players[player].terminal_order [T]`` where the tree's terminals are grouped by
  that player's sequences (:func:`terminal_sums`), else ``None`` (decided statically)."""
  pt = tree.players[player]
  if pt.terminal_blocks and sum(n * c for n, c in pt.terminal_blocks) == tree.num_terminals:
    return pt.terminal_order
  return None


def terminal_sums(pt: PlayerTree, leaf: jax.Array, leaf_seq: jax.Array | None,
                  A: int, actions_first: bool = False) -> jax.Array:
  """``leaf [T]`` summed per sequence ``[S]``.

  ``leaf_seq [T]`` is each leaf's sequence, the tree's ``terminal_seq[p]`` for ``pt =
  tree.players[p]``; ``None`` says ``leaf`` is in ``pt.terminal_order`` (:func:`grouped_order`,
  :func:`terminal_leaf_values` with ``order``), the fastest: a sum per row of each block
  (terminal by terminal) and one gather into sequence order. In terminal order, one more
  gather first. On a CPU the scatter of ``segment_sum`` costs more (Leduc CFR: 2x the whole
  iteration). The scatter stays where it is faster or the only way: vmapped over ``leaf``
  (whole rows of ``B`` values, as :func:`segment_sum`; a single run sums by rows in another
  order, so batched and single runs may differ in the last bit) and for a tree without groups
  or other ``leaf`` sizes (a padded, sharded tree). With ``actions_first`` the sums are numbered
  action-major (:func:`action_major`; ``leaf_seq`` stays in the tree's numbering).
  """
  blocks, S = tuple(pt.terminal_blocks), pt.num_infostates * A + 1
  row = pt.terminal_group_row
  if actions_first:  # the sums numbered action-major (loop-invariant index arithmetic)
    if leaf_seq is not None:
      leaf_seq = action_major(leaf_seq, pt.num_infostates, A)
    if blocks:
      n = pt.num_infostates
      s = jnp.arange(S)
      row = row[jnp.where(s >= n * A, s, (s % n) * A + s // n)]
  if leaf_seq is None:
    return _grouped_sums(blocks, S)(leaf, row)
  if not blocks or leaf.shape[-1] != sum(n * c for n, c in blocks):
    return segment_sum(leaf, leaf_seq, S)
  return _ordered_sums(blocks, S)(leaf, leaf_seq, pt.terminal_order, row)


def _row_sums(blocks, leaf, row):
  """``leaf [T]`` in the blocks' order summed per row, then gathered by ``row [S]``."""
  rows, lo = [], 0
  for n, c in blocks:
    block = leaf[lo:lo + n * c].reshape(n, c)
    if c <= _FOLD_MAX:  # terminal by terminal, ascending: the scatter's order of additions
      rows.append(functools.reduce(jnp.add, [block[:, k] for k in range(c)]))
    else:
      rows.append(jnp.sum(block, axis=1))
    lo += n * c
  return jnp.concatenate(rows + [jnp.zeros(1, leaf.dtype)])[row]


@functools.lru_cache(maxsize=None)
def _grouped_sums(blocks: tuple, num_sequences: int):
  """:func:`terminal_sums` of leaves in the blocks' order: ``f(leaf [T], row [S])``."""
  num_rows = sum(n for n, _ in blocks)
  row_of = np.repeat(np.arange(num_rows, dtype=np.int32), [c for n, c in blocks for _ in range(n)])

  @custom_batching.custom_vmap
  def f(leaf, row):
    return _row_sums(blocks, leaf, row)

  @f.def_vmap
  def rule(axis_size, in_batched, leaf, row):
    if in_batched[1]:
      axes = tuple(0 if b else None for b in in_batched)
      return jax.vmap(functools.partial(_row_sums, blocks), in_axes=axes,
                      axis_size=axis_size)(leaf, row), True
    if not in_batched[0]:
      return f(leaf, row), False
    return jax.vmap(lambda x: segment_sum(x, row_of, num_rows + 1)[row])(leaf), True

  return f


@functools.lru_cache(maxsize=None)
def _ordered_sums(blocks: tuple, num_sequences: int):
  """:func:`terminal_sums` of leaves in terminal order: ``f(leaf [T], leaf_seq [T], order [T],
  row [S])``."""
  def sums(leaf, leaf_seq, order, row):
    del leaf_seq
    return _row_sums(blocks, leaf[order], row)

  @custom_batching.custom_vmap
  def f(leaf, leaf_seq, order, row):
    return sums(leaf, leaf_seq, order, row)

  @f.def_vmap
  def rule(axis_size, in_batched, leaf, leaf_seq, order, row):
    if any(in_batched[1:]):
      axes = tuple(0 if b else None for b in in_batched)
      return jax.vmap(sums, in_axes=axes, axis_size=axis_size)(leaf, leaf_seq, order, row), True
    if not in_batched[0]:
      return f(leaf, leaf_seq, order, row), False
    return jax.vmap(lambda x: segment_sum(x, leaf_seq, num_sequences))(leaf), True

  return f


def sequence_values(pt: PlayerTree, leaf: jax.Array, leaf_seq: jax.Array,
                    sigma: jax.Array | None, A: int,
                    actions_first: bool = False) -> tuple[jax.Array, jax.Array]:
  """Counterfactual action values ``q [I, A]`` and the root value from ``leaf [T]`` (utility
  times counterfactual reach) at sequences ``leaf_seq [T]`` (the tree's terminals, or
  ``None`` for leaves in ``pt.terminal_order``: :func:`terminal_sums`); an information
  state is worth ``sum_a sigma q``, or with ``sigma=None`` the legal ``max_a q`` (best
  response). Level by level from the deepest, the information states' values are added into
  their parent sequences' values in place. With ``actions_first``, ``sigma`` and ``q`` are
  ``[A, I]`` (the same sums, numbered action-major: :func:`realization`)."""
  n = pt.num_infostates
  # [S], complete for level k once k + 1 is added
  v = terminal_sums(pt, leaf, leaf_seq, A, actions_first)
  neg = jnp.asarray(-jnp.inf, leaf.dtype)
  root = v[n * A]
  for k in reversed(range(len(pt.levels))):
    lo, hi = pt.levels[k]
    if actions_first:
      q = v[:n * A].reshape(A, n)[:, lo:hi]
      legal, s, axis = pt.legal[lo:hi].T, None if sigma is None else sigma[:, lo:hi], 0
    else:
      q = v[lo * A:hi * A].reshape(hi - lo, A)
      legal, s, axis = pt.legal[lo:hi], None if sigma is None else sigma[lo:hi], -1
    if sigma is None:
      node = jnp.max(jnp.where(legal, q, neg), axis=axis)
    else:
      node = jnp.sum(s * q, axis=axis)
    if k == 0:
      root = root + jnp.sum(node)
    else:
      parent = pt.parent_seq[lo:hi]
      v = add_at(v, action_major(parent, n, A) if actions_first else parent, node)
  if actions_first:
    return v[:n * A].reshape(A, n), root
  return v[:n * A].reshape(n, A), root


@custom_batching.custom_vmap
def add_at(total, ids, data):
  """``total [S]`` plus ``data [N]`` added at ``ids [N]`` (a scatter-add into ``total``'s
  buffer); vmapped over ``total`` and ``data`` only, rows of ``B`` values (batch axis last)."""
  return total.at[ids].add(data)


@add_at.def_vmap
def _add_at_rule(axis_size, in_batched, total, ids, data):
  total_b, ids_b, data_b = in_batched
  if ids_b:
    axes = tuple(0 if b else None for b in in_batched)
    return jax.vmap(lambda t, i, d: t.at[i].add(d), in_axes=axes)(total, ids, data), True
  total = total if total_b else jnp.broadcast_to(total, (axis_size,) + total.shape)
  data = data if data_b else jnp.broadcast_to(data, (axis_size,) + data.shape)
  out = jnp.moveaxis(total, 0, -1).at[ids].add(jnp.moveaxis(data, 0, -1))
  return jnp.moveaxis(out, -1, 0), True


def check_policy(tree: GameTree, policy) -> None:
  """Raises ``ValueError`` unless ``policy`` is ``([I0, A], [I1, A])`` floats (static shapes)."""
  if not isinstance(policy, (tuple, list)) or len(policy) != 2:
    raise ValueError("a policy is a pair (sigma0 [I0, A], sigma1 [I1, A]); got "
                     f"{type(policy).__name__}")
  for p, sig in enumerate(policy):
    want = (tree.num_infostates[p], tree.num_actions)
    shape = tuple(getattr(sig, "shape", ()))
    if shape[-2:] != want:
      raise ValueError(f"policy of player {p} has shape {shape}; this game needs {want} "
                       "(information states x actions): is it a policy for another game?")
    if not jnp.issubdtype(sig.dtype, jnp.floating):
      raise ValueError(f"policy of player {p} has dtype {sig.dtype}; expected floating point")


def check_weights(tree: GameTree, weights) -> tuple:
  """Raises ``ValueError`` unless ``weights`` (or ``None``) has shape ``[..., T]``; returns
  its batch shape ``[...]``."""
  if weights is None:
    return ()
  return check_shape("terminal weights (one per terminal history)", weights,
                     (..., tree.num_terminals))


def terminal_leaf_values(tree: GameTree, player: int, opponent_x, weights=None, order=None,
                         actions_first: bool = False):
  """``[T]`` utility to ``player`` times chance/external and opponent reach; with ``order [T]``
  (:func:`grouped_order`) at the terminals in that order, for :func:`terminal_sums` (the
  gathers of the tree's arrays are loop-invariant: XLA hoists them out of a solver's loop);
  ``actions_first``: ``opponent_x`` is numbered action-major (:func:`realization`)."""
  w = tree.terminal_chance if weights is None else weights
  sign = 1.0 if player == 0 else -1.0
  payoff, seq = tree.terminal_payoff, tree.terminal_seq[1 - player]
  if actions_first:
    seq = action_major(seq, tree.num_infostates[1 - player], tree.num_actions)
  if order is not None:
    payoff, w, seq = payoff[order], w[order], seq[order]
  return sign * payoff * w * opponent_x[seq]


def player_leaf_values(tree: GameTree, player: int, opponent_x, weights=None, *,
                       grouped: bool = True, actions_first: bool = False):
  """``(leaf [T], leaf_seq)`` for :func:`sequence_values`: :func:`terminal_leaf_values` in
  ``player``'s grouped terminal order with ``leaf_seq = None`` where the tree groups its
  terminals (:func:`grouped_order`), else (or with ``grouped=False``) in terminal order with
  ``leaf_seq = tree.terminal_seq[player]``."""
  order = grouped_order(tree, player) if grouped else None
  leaf = terminal_leaf_values(tree, player, opponent_x, weights, order, actions_first)
  return leaf, (tree.terminal_seq[player] if order is None else None)


def counterfactual_values(tree: GameTree, policy, player: int, weights=None, *,
                          best_response: bool = False):
  """Counterfactual action values ``[I_p, A]`` of ``player`` under ``policy``, and the root value
  (with ``best_response``, ``player``'s own strategy is replaced by a best response)."""
  check_policy(tree, policy)
  check_weights(tree, weights)
  xo = realization(tree.players[1 - player], policy[1 - player])
  leaf, leaf_seq = player_leaf_values(tree, player, xo, weights)
  return sequence_values(tree.players[player], leaf, leaf_seq,
                         None if best_response else policy[player], tree.num_actions)


def best_response_value(tree: GameTree, policy, player: int, weights=None):
  """Value to ``player`` of a best response against ``policy[1 - player]``."""
  return counterfactual_values(tree, policy, player, weights, best_response=True)[1]


def best_response(tree: GameTree, policy, player: int, weights=None) -> jax.Array:
  """A pure best response ``[I_p, A]`` of ``player`` to ``policy[1 - player]`` (the first legal
  maximiser, also where the opponent never reaches)."""
  q, _ = counterfactual_values(tree, policy, player, weights, best_response=True)
  q = jnp.where(tree.players[player].legal, q, -jnp.inf)
  return jax.nn.one_hot(jnp.argmax(q, axis=-1), tree.num_actions, dtype=q.dtype)


def expected_value(tree: GameTree, policy, weights=None):
  """Player 0's expected utility when both follow ``policy``."""
  check_policy(tree, policy)
  check_weights(tree, weights)
  w = tree.terminal_chance if weights is None else weights
  x0, x1 = (realization(tree.players[p], policy[p]) for p in (0, 1))
  return jnp.sum(tree.terminal_payoff * w * x0[tree.terminal_seq[0]] * x1[tree.terminal_seq[1]])


def nash_conv(tree: GameTree, policy, weights=None):
  """``sum_p (BR_p - u_p)``; zero exactly at a Nash equilibrium."""
  return sum(best_response_value(tree, policy, p, weights) for p in (0, 1))


def exploitability(tree: GameTree, policy, weights=None):
  """``NashConv / 2`` (OpenSpiel's ``exploitability`` convention)."""
  return 0.5 * nash_conv(tree, policy, weights)


def regret_matching(regrets: jax.Array, legal: jax.Array, axis: int = -1) -> jax.Array:
  """Positive-part regret matching; uniform over legal actions when none positive
  (``axis``: the actions' axis)."""
  return normalize(jnp.maximum(regrets, 0.0), legal, axis)


def normalize(cum: jax.Array, legal: jax.Array, axis: int = -1) -> jax.Array:
  """Normalises accumulated strategy weights along ``axis`` (the actions); uniform where
  they sum to zero."""
  cum = jnp.where(legal, cum, 0.0)
  return safe_div(cum, jnp.sum(cum, axis=axis, keepdims=True), uniform(legal, cum.dtype, axis))


def uniform(legal, dtype=None, axis: int = -1) -> jax.Array:
  """The uniform distribution over the ``True`` entries of ``legal`` along ``axis`` (zeros
  where none is), in ``dtype`` (default: the default float type). NumPy in, NumPy out."""
  xp = np if isinstance(legal, np.ndarray) else jnp
  legal = xp.asarray(legal)
  u = legal / xp.maximum(xp.sum(legal, axis=axis, keepdims=True), 1)
  return u if dtype is None else u.astype(dtype)


def safe_div(num, den, default=0.0) -> jax.Array:
  """``num / den`` where ``den > 0``, else ``default`` (no division by zero is evaluated).
  NumPy in, NumPy out."""
  xp = np if all(isinstance(x, (np.ndarray, float, int)) for x in (num, den, default)) else jnp
  return xp.where(den > 0, num / xp.where(den > 0, den, 1.0), default)


def uniform_policy(tree: GameTree, dtype=jnp.float32):
  """The uniform random policy over legal actions."""
  return tuple(uniform(jnp.asarray(pt.legal), dtype) for pt in tree.players)


def root_chance_weights(tree: GameTree, probs) -> jax.Array:
  """Terminal weights ``[T]`` with the root chance distribution replaced by ``probs [C]`` (a
  distribution over the root's outcome ids; for ``solver.init(tree, weights=...)``)."""
  if np.asarray(tree.player)[0] != CHANCE:
    raise ValueError("root_chance_weights: the root of this game is not a chance node")
  orig = np.asarray(tree.chance_probs)[0]
  check_shape("root_chance_weights: probs", probs, orig.shape)
  probs = check_distribution("root_chance_weights: probs", probs)
  if np.any((orig == 0) & (probs > 0)):
    raise ValueError("root_chance_weights: probability on an outcome the root does not have")
  h = ancestor_at_depth(tree.parent, tree.depth, np.asarray(tree.terminal_history), 1)
  outcome = np.asarray(tree.action)[h]
  w = np.asarray(tree.terminal_chance, np.float64) / orig[outcome] * probs[outcome]
  return jnp.asarray(w, jnp.asarray(tree.terminal_chance).dtype)
