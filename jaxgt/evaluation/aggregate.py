"""The aggregate method of Lisy, Lanctot & Bowling (2015, Sec. 5): an exactly evaluable policy
of an agent.

An online agent has no fixed policy: what it plays at an information state
depends on the searches it ran earlier in the match. Lisy et al. estimate its
exploitability by aggregation: keep a global accumulating strategy
``G_p [I_p, A]`` per player; play ``num_matches`` matches of the agent
against a uniform random opponent (half of them as each player); at every
information state ``I`` the agent reaches, add the information its search
computed (``agent.statistics(state, p)``: Lisy et al.'s "visit counts in ISMCTS,
``s_I`` in OOS": the last search's visit counts for
:class:`~jaxgt.agents.ismcts_agent.ISMCTSAgent` (mean-strategy sums for its RM
variant), the match's average-strategy sums ``s_I`` for
:class:`~jaxgt.agents.oos_agent.OOSAgent`, visit counts for
:class:`~jaxgt.agents.uct_agent.UCTAgent`) at ``I`` *and at every successor information
state of ``I``* in ``p``'s tree, raw, so each successor weighs in
proportionally to its visits. Information states never added get a fixed
random action (``unvisited="random_action"``, Lisy et al.'s choice) or the uniform
strategy. The exploitability of the normalised global strategy is then
computed exactly (sequence-form best responses).

Agents without ``statistics`` (it returns ``None``) contribute the
probabilities ``act`` returned, at the reached information state only.

Conventions: Lisy et al.'s tables report ``epsilon_sigma = max u_1(., sigma_2) +
max u_2(sigma_1, .)``, i.e. **NashConv** (the sum of both players' terms);
jaxgt's :func:`~jaxgt.core.sequence_form.exploitability` is NashConv / 2
(OpenSpiel's). :class:`AggregateResult` carries both: compare ``nash_conv``
with Lisy et al.'s figures and ``exploitability`` with the rest of jaxgt.

Agents must be traceable (see :mod:`jaxgt.agents.base`); untraceable ones
run through a Python loop (slow, for small match counts).
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from jaxgt.agents.base import Agent, PolicyAgent
from jaxgt.core import sequence_form
from jaxgt.core.checks import check_choice, check_key
from jaxgt.core.game_tree import CompiledGame, GameTree
from jaxgt.core.dtypes import default_dtype, resolve_dtype
from jaxgt.core.evaluate import evaluate
from jaxgt.core.sampling import sample_index
from jaxgt.evaluation import referee


@dataclasses.dataclass(frozen=True)
class AggregateResult:
  """Result of :func:`aggregate_policy`."""

  policy: tuple  # ([I0, A], [I1, A]) the normalised global strategy
  weights: tuple  # ([I0, A], [I1, A]) the accumulated (unnormalised) strategy G
  # per player, the fraction of information states that received information (the rest play the
  # fallback)
  coverage: tuple
  nash_conv: float  # NashConv of policy (Lisy et al.'s "exploitability", both players summed)
  exploitability: float  # NashConv / 2 (jaxgt's default convention)
  num_matches: int  # matches played (half as each player, player 0 gets the odd one)


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


def accumulate_hook(game: CompiledGame, agent: Agent, p: int, dtype) -> referee.Hook:
  """Referee hook adding ``agent``'s statistics (agent index 0, player ``p``) to ``G_p [I_p, A]``.

  At each of the agent's decisions, at information state ``I``, it adds
  ``agent.statistics`` (or the returned probabilities at ``I`` when the agent
  exposes none) at ``I`` and every successor of ``I`` in ``p``'s tree.
  """
  n, A = game.tree.num_infostates[p], game.tree.num_actions
  anc = jnp.asarray(successor_masks(game.tree, p))
  infostate = game.device_tree(dtype).infostate

  def hook(acc, i, history, probs, state):
    if i != 0:  # the opponent's decisions add nothing
      return acc
    info = jnp.clip(infostate[history], 0, max(n - 1, 0))
    stats = agent.statistics(state, p)
    if stats is None:  # only the returned policy, at the reached information state
      stats = jnp.zeros((n, A), dtype).at[info].set(probs)
    return acc + jnp.where(jnp.any(anc == info, axis=1)[:, None], jnp.asarray(stats, dtype), 0.0)

  return hook


def aggregate_policy(game: CompiledGame, agent: Agent, num_matches: int, key: jax.Array, *,
                     opponent: Agent | None = None, unvisited: str = "random_action",
                     dtype=None) -> AggregateResult:
  """Lisy et al.'s aggregate method for ``agent``; see the module docstring.

  Lisy et al. play 500 matches; ``opponent`` defaults to the uniform random policy
  (Lisy et al. 2015). Match ``m`` of seat ``p`` uses ``split(fold_in(key, p), n_p)[m]``;
  the fallback random actions use ``fold_in(key, 2)``. ``dtype`` of the
  accumulators defaults to float64 when x64 is enabled.
  """
  check_choice("unvisited", unvisited, ("random_action", "uniform"))
  dtype = default_dtype() if dtype is None else resolve_dtype(dtype)
  if opponent is None and isinstance(game, CompiledGame):
    opponent = PolicyAgent(game, tuple(np.asarray(x) for x in sequence_form.uniform_policy(game.tree)))
  num_matches = referee.check_match_args(game, (("agent", agent), ("opponent", opponent)),
                                         num_matches)
  if num_matches < 2:
    raise ValueError("num_matches must be at least 2 (half are played as each player)")
  key = check_key(key)
  traced = referee.play_mode(game, (agent, opponent), "auto", key)
  legal = [np.asarray(pt.legal) for pt in game.tree.players]
  weights = []
  for p in (0, 1):
    n_p = (num_matches + 1 - p) // 2
    keys = jax.random.split(jax.random.fold_in(key, p), n_p)
    _, acc, _ = referee.play_matches(
        game, (agent, opponent), keys, np.full(n_p, p), traced=traced, dtype=dtype,
        hook=accumulate_hook(game, agent, p, dtype),
        carry=jnp.zeros((game.tree.num_infostates[p], game.tree.num_actions), dtype))
    weights.append(np.asarray(acc, np.float64).sum(0))
  policy, coverage = [], []
  for p in (0, 1):
    w = np.where(legal[p], np.maximum(weights[p], 0.0), 0.0)
    tot = w.sum(-1, keepdims=True)
    seen = tot[:, 0] > 0
    if unvisited == "uniform":
      fallback = sequence_form.uniform(legal[p])
    else:
      u = np.asarray(jax.random.uniform(jax.random.fold_in(jax.random.fold_in(key, 2), p),
                                        (len(w),), jnp.float32), np.float64)
      pick = np.asarray(sample_index(jnp.asarray(legal[p], u.dtype), jnp.asarray(u)))
      fallback = np.eye(w.shape[1])[pick] * legal[p] if len(w) else w
    policy.append(sequence_form.safe_div(w, tot, fallback))
    coverage.append(float(seen.mean()) if len(seen) else 1.0)
  ev = evaluate(game, tuple(policy))
  return AggregateResult(tuple(policy), tuple(weights), tuple(coverage), ev.nash_conv,
                         ev.exploitability, num_matches)

