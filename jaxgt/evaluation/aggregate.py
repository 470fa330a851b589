"""001's aggregate method (Lisy et al. 2015, Sec. 5): an exactly evaluable policy of an agent.

An online agent has no fixed policy: what it plays at an information state
depends on the searches it ran earlier in the match. 001 estimates its
exploitability by aggregation: keep a global accumulating strategy
``G_p [I_p, A]`` per player; play ``num_matches`` matches of the agent
against a uniform random opponent (half of them as each player); at every
information state ``I`` the agent reaches, add the information its search
computed (``agent.statistics(state, p)``: visit counts for
:class:`~jaxgt.solvers.uct.UCTAgent`; ``OOSAgent`` and ``ISMCTSAgent`` do not
expose theirs yet) at ``I`` *and at every successor information
state of ``I``* in ``p``'s tree, raw, so each successor weighs in
proportionally to its visits. Information states never added get a fixed
random action (``unvisited="random_action"``, 001's choice) or the uniform
strategy. The exploitability of the normalised global strategy is then
computed exactly (sequence-form best responses).

Agents without ``statistics`` (it returns ``None``) contribute the
probabilities ``act`` returned, at the reached information state only.

Conventions: 001's tables report ``epsilon_sigma = max u_1(., sigma_2) +
max u_2(sigma_1, .)``, i.e. **NashConv** (the sum of both players' terms);
jaxgt's :func:`~jaxgt.core.sequence_form.exploitability` is NashConv / 2
(OpenSpiel's). :class:`AggregateResult` carries both: compare ``nash_conv``
with 001's figures and ``exploitability`` with the rest of jaxgt.

Agents must be traceable (see :mod:`jaxgt.agents.base`); untraceable ones
run through a Python loop (slow, for small match counts).
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxgt.core.dtypes import resolve_dtype
from jaxgt.agents.base import Agent, PolicyAgent
from jaxgt.core.compiler import CompiledGame, GameTree
from jaxgt.evaluation.match import _check_args, _pick, _traceable
from jaxgt.games.base import CHANCE, TERMINAL
from jaxgt.core.checks import check_key
from jaxgt.core import sequence_form


@dataclasses.dataclass(frozen=True)
class AggregateResult:
  """Result of :func:`aggregate_policy`.

  Attributes:
    policy: ``([I0, A], [I1, A])`` the normalised global strategy.
    weights: ``([I0, A], [I1, A])`` the accumulated (unnormalised) strategy ``G``.
    coverage: per player, the fraction of information states that received
      information (the rest play the fallback).
    nash_conv: NashConv of ``policy`` (001's "exploitability", both players summed).
    exploitability: NashConv / 2 (jaxgt's default convention).
    num_matches: matches played (half as each player, player 0 gets the odd one).
  """

  policy: tuple
  weights: tuple
  coverage: tuple
  nash_conv: float
  exploitability: float
  num_matches: int


def successor_masks(tree: GameTree, player: int) -> np.ndarray:
  """``[I_p, L] int32`` ancestors: entry ``l`` is ``I``'s own ancestor at level ``l``, or ``-1``.

  ``J`` is ``I`` or a successor of ``I`` in ``p``'s tree iff ``I`` appears in
  row ``J``; :func:`aggregate_policy` tests that per reached ``I``.
  """
  pt = tree.players[player]
  n, A = pt.num_infostates, tree.num_actions
  parent_seq = np.asarray(pt.parent_seq)
  level = np.asarray(pt.level)
  L = max(len(pt.levels), 1)
  anc = np.full((n, L), -1, np.int32)
  for j in range(n):  # parents precede children in the level order
    anc[j, level[j]] = j
    ps = parent_seq[j]
    if ps < n * A:
      par = ps // A
      anc[j, :level[j]] = anc[par, :level[j]]
  return anc


def _accumulate_fn(game: CompiledGame, agent: Agent, opponent: Agent, p: int, dtype):
  """One match with ``agent`` as player ``p``: ``key -> (G_p [I_p, A], bad flag)``."""
  tree = game.device_tree(dtype)
  A = tree.num_actions
  C = tree.children.shape[1]
  n = tree.num_infostates[p]
  anc = jnp.asarray(successor_masks(game.tree, p))
  max_turns = int(np.asarray(game.tree.depth).max())
  actors = (agent, opponent) if p == 0 else (opponent, agent)

  def turn(carry):
    h, states, key, acc, bad, t = carry
    key, ka, ku = jax.random.split(key, 3)
    pl = tree.player[h]
    info = jnp.clip(tree.infostate[h], 0, max(n - 1, 0))

    def chance(states, acc):
      return tree.chance_probs[h], states, acc

    def searcher(states, acc):
      probs, s = agent.act(ka, states[p], h)
      stats = agent.statistics(s, p)
      mask = jnp.any(anc == info, axis=1)
      if stats is None:  # only the returned policy, at the reached information state
        stats = jnp.zeros((n, A), dtype).at[info].set(jnp.asarray(probs, dtype))
      acc = acc + jnp.where(mask[:, None], jnp.asarray(stats, dtype), 0.0)
      probs = jnp.pad(jnp.asarray(probs, dtype), (0, C - A))
      return probs, tuple(s if j == p else states[j] for j in range(2)), acc

    def other(states, acc):
      probs, s = opponent.act(ka, states[1 - p], h)
      probs = jnp.pad(jnp.asarray(probs, dtype), (0, C - A))
      return probs, tuple(s if j == 1 - p else states[j] for j in range(2)), acc

    branch = jnp.where(pl == CHANCE, 0, jnp.where(pl == p, 1, 2))
    probs, states, acc = lax.switch(branch, [chance, searcher, other], states, acc)
    probs = jnp.where(tree.children[h] >= 0, probs, 0.0)
    total = jnp.sum(probs)
    bad = bad | ~(jnp.isfinite(total) & (total > 0))
    a = _pick(probs, jax.random.uniform(ku, (), dtype))
    return tree.children[h, a], states, key, acc, bad, t + 1

  def one(key):
    k0, k1, km = jax.random.split(key, 3)
    states = (actors[0].init(k0), actors[1].init(k1))
    carry = (jnp.zeros((), jnp.int32), states, km, jnp.zeros((n, A), dtype),
             jnp.zeros((), bool), jnp.zeros((), jnp.int32))
    carry = lax.while_loop(
        lambda c: (c[0] >= 0) & (tree.player[jnp.maximum(c[0], 0)] != TERMINAL)
        & (c[5] < max_turns), turn, carry)
    return carry[3], carry[4] | (carry[0] < 0)

  return one


def _accumulate_python(game, agent, opponent, p, keys, dtype):
  """The same matches one Python step at a time (for agents that cannot be traced)."""
  tree = game.device_tree(dtype)
  A, n = tree.num_actions, tree.num_infostates[p]
  C = tree.children.shape[1]
  anc = successor_masks(game.tree, p)
  player, children, infostate = (np.asarray(x) for x in (game.tree.player, game.tree.children,
                                                        game.tree.infostate))
  actors = (agent, opponent) if p == 0 else (opponent, agent)
  acc = np.zeros((n, A))
  for key in keys:
    k0, k1, km = jax.random.split(key, 3)
    states = [actors[0].init(k0), actors[1].init(k1)]
    h = 0
    while player[h] != TERMINAL:
      km, ka, ku = jax.random.split(km, 3)
      if player[h] == CHANCE:
        probs = tree.chance_probs[h]
      else:
        q = int(player[h])
        probs, states[q] = actors[q].act(ka, states[q], int(h))
        probs = np.asarray(probs, np.float64)
        if q == p:
          i = int(infostate[h])
          stats = agent.statistics(states[q], p)
          if stats is None:
            stats = np.zeros((n, A))
            stats[i] = probs
          acc += np.where(np.any(anc == i, axis=1)[:, None], np.asarray(stats, np.float64), 0.0)
        probs = jnp.pad(jnp.asarray(probs, dtype), (0, C - A))
      probs = jnp.where(children[h] >= 0, probs, 0.0)
      total = float(jnp.sum(probs))
      if not (np.isfinite(total) and total > 0):
        raise ValueError("an agent returned probabilities with no finite positive mass on the "
                         "legal actions")
      h = int(children[h, int(_pick(probs, jax.random.uniform(ku, (), dtype)))])
  return acc


def aggregate_policy(game: CompiledGame, agent: Agent, num_matches: int, key: jax.Array, *,
                     opponent: Agent | None = None, unvisited: str = "random_action",
                     dtype=None) -> AggregateResult:
  """001's aggregate method for ``agent``; see the module docstring.

  001 plays 500 matches; ``opponent`` defaults to the uniform random policy
  (001). Match ``m`` of seat ``p`` uses ``split(fold_in(key, p), n_p)[m]``;
  the fallback random actions use ``fold_in(key, 2)``. ``dtype`` of the
  accumulators defaults to float64 when x64 is enabled.
  """
  if unvisited not in ("random_action", "uniform"):
    raise ValueError(f"unvisited must be 'random_action' or 'uniform', got {unvisited!r}")
  if dtype is None:  # accumulate in float64 where JAX allows it
    dtype = "float64" if jax.config.read("jax_enable_x64") else "float32"
  dtype = resolve_dtype(dtype)
  if opponent is None and isinstance(game, CompiledGame):
    opponent = PolicyAgent(game, tuple(np.asarray(x) for x in sequence_form.uniform_policy(game.tree)))
  _check_args(game, (("agent", agent), ("opponent", opponent)), num_matches)
  if num_matches < 2:
    raise ValueError("num_matches must be at least 2 (half are played as each player)")
  key = check_key(key)
  traced = all([_traceable(a, game, key) for a in (agent, opponent)])
  legal = [np.asarray(pt.legal) for pt in game.tree.players]
  weights = []
  for p in (0, 1):
    n_p = (num_matches + 1 - p) // 2
    keys = jax.random.split(jax.random.fold_in(key, p), n_p)
    if traced:
      acc, bad = jax.jit(jax.vmap(_accumulate_fn(game, agent, opponent, p, dtype)))(keys)
      if bool(jnp.any(bad)):
        raise ValueError("an agent returned probabilities with no finite positive mass on the "
                         "legal actions")
      weights.append(np.asarray(jnp.sum(acc, axis=0), np.float64))
    else:
      weights.append(_accumulate_python(game, agent, opponent, p, keys, dtype))
  policy, coverage = [], []
  for p in (0, 1):
    w = np.where(legal[p], np.maximum(weights[p], 0.0), 0.0)
    tot = w.sum(-1, keepdims=True)
    seen = tot[:, 0] > 0
    if unvisited == "uniform":
      fallback = legal[p] / np.maximum(legal[p].sum(-1, keepdims=True), 1)
    else:
      u = np.asarray(jax.random.uniform(jax.random.fold_in(jax.random.fold_in(key, 2), p),
                                        (len(w),), jnp.float32), np.float64)
      cdf = np.cumsum(legal[p], axis=-1)
      pick = np.minimum(np.sum(cdf <= (u * cdf[:, -1])[:, None], axis=-1), w.shape[1] - 1)
      fallback = np.eye(w.shape[1])[pick] * legal[p] if len(w) else w
    policy.append(np.where(seen[:, None], w / np.where(tot > 0, tot, 1.0), fallback))
    coverage.append(float(seen.mean()) if len(seen) else 1.0)
  nc = _nash_conv(game, tuple(policy))
  return AggregateResult(tuple(policy), tuple(weights), tuple(coverage), nc, 0.5 * nc,
                         int(num_matches))


def _nash_conv(game: CompiledGame, policy) -> float:
  dtype = jnp.float64 if jax.config.read("jax_enable_x64") else jnp.float32
  tree = game.device_tree(dtype)
  return float(_nash_conv_jit(tree, tuple(jnp.asarray(p, dtype) for p in policy)))


@functools.partial(jax.jit)
def _nash_conv_jit(tree, policy):
  return sequence_form.nash_conv(tree, policy)
