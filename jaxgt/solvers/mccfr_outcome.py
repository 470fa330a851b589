"""Outcome-sampling Monte Carlo CFR over batches of sampled trajectories.

Lanctot, Waugh, Zinkevich, Bowling, "Monte Carlo Sampling for Regret
Minimization in Extensive Games" (2009); Lisy, Lanctot, Bowling, "Online
Monte Carlo Counterfactual Regret Minimization for Search in Imperfect
Information Games" (2015), Sec. 3.1, the ``delta = 0`` case of Algorithm 1.
``cfg`` below is the :class:`~jaxgt.solvers.mccfr.OutcomeSampling` solver; a
step is ``2 * batch`` trajectories.

One terminal per trajectory, walked by :func:`jaxgt.solvers.walk.walk`: the
updated player samples from ``epsilon * uniform + (1 - epsilon) * sigma``,
the opponent and chance on-policy. Regrets at the updated player's states
get ``W (1[a = a*] pi(z|ha) / q(a*) - pi(z|h))`` with ``W = u(z) / q_i(z[:h])``
(importance weight of the updated player's sampled prefix); the opponent's
average strategy gets ``sigma / q_i(h)`` (stochastically weighted averaging,
as OpenSpiel's ``OutcomeSamplingSolver``).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxgt.core import rng
from jaxgt.core.game_tree import GameTree
from jaxgt.core.sampling import mix_uniform
from jaxgt.core.tables import infostate_rows
from jaxgt.solvers.walk import Draw, PolicyTable, node_at, walk


def strategy_at(cfg, tree: GameTree, regrets, tabulate: bool):
  """``sigma(node) -> [B, A]``: the current strategy (``cfg``'s regret rule) of ``regrets`` at
  the nodes' information states.

  ``tabulate`` computes it at every information state once (large batches);
  otherwise only at the visited rows (same numbers). Zero off decisions.
  """
  if tabulate:
    sigma = cfg.strategies(tree, regrets)
    return lambda node: jnp.where(node.decision[:, None],
                                  infostate_rows(sigma, node.player, node.infostate), 0.0)
  return lambda node: cfg.strategy(infostate_rows(regrets, node.player, node.infostate),
                                   node.legal)


def outcome_walk(cfg, tree: GameTree, regrets, p: int, uniforms, *,
                 tabulate: bool):
  """Outcome-sampling trajectories for updated player ``p`` (:func:`walk`).

  Target: the current strategy ``sigma``; sampling: ``epsilon``-on-policy at
  ``p``'s states, ``sigma`` at the opponent's. Returns the
  :class:`Trajectory` and ``sigma, legal [D, B, A]`` of each step.
  ``tabulate`` (large batches) computes both distributions of every
  history once and the walk only gathers rows; otherwise only the visited
  rows are regret-matched (same numbers).
  """
  sigma_at = strategy_at(cfg, tree, regrets, tabulate)

  def distributions(node):
    sig = sigma_at(node)
    q = jnp.where((node.player == p)[:, None], mix_uniform(sig, node.legal, cfg.epsilon), sig)
    return sig, q

  if not tabulate:
    def node_policy(t, node, carry):
      del t
      sig, q = distributions(node)
      return Draw(sample=q, target=sig, record=(sig, node.legal)), carry

    traj = walk(tree, node_policy, uniforms)[0]
    return (traj,) + traj.record
  every = node_at(tree, jnp.arange(tree.num_histories, dtype=jnp.int32))
  sig_h, q_h = distributions(every)
  traj = walk(tree, PolicyTable(sample=q_h, target=sig_h), uniforms)[0]
  h = jnp.maximum(traj.history, 0)
  return traj, jnp.where((traj.history >= 0)[..., None], sig_h[h], 0.0), every.legal[h]


def half_step(cfg, tree: GameTree, regrets, cum, p: int, step, key):
  """Outcome sampling for player ``p`` from ``batch`` trajectories (one scatter-add each).

  The whole batch walks down together (:func:`outcome_walk`), with the
  ``[D, B]`` uniforms drawn in one call. Per depth ``t``
  with ``V_t = u(z) prod_{k >= t} sigma/q`` over ``p``'s sampled actions and
  ``Q_t = prod_{k < t} q`` (``p``'s sampling reach), the regret increment is
  ``(1[a = a_t] V_{t+1} / q_t - V_t) / Q_t`` and the opponent's average
  increment ``sigma / Q_t`` (chance and opponent reach cancel: both are
  sampled on-policy). Both go through ``cfg``'s rules at step ``step`` (1-based).
  """
  A = tree.num_actions
  dtype = regrets[0].dtype
  B = cfg.batch
  uni = rng.uniform(key, (tree.max_depth, B), dtype)
  # Large batches regret-match every information state once; small ones
  # only the visited rows (same numbers either way).
  traj, sig_t, legal_t = outcome_walk(cfg, tree, regrets, p, uni,
                                      tabulate=B * tree.max_depth >= tree.num_histories)
  s_a, q_a = traj.target_prob, traj.sample_prob
  u = traj.payoff(tree) * (1.0 if p == 0 else -1.0)  # [B]
  mine = traj.player == p
  ratio = jnp.where(mine, s_a / q_a, 1.0)
  V = u * jnp.cumprod(ratio[::-1], axis=0)[::-1]  # [D, B]
  V_next = jnp.concatenate([V[1:], u[None]])
  qp = jnp.where(mine, q_a, 1.0)
  prefix = jnp.concatenate([jnp.ones((1, B), dtype), jnp.cumprod(qp, axis=0)[:-1]])
  onehot = jax.nn.one_hot(traj.action, A, dtype=dtype)
  regret = (onehot * (V_next / q_a)[..., None] - V[..., None]) / prefix[..., None]
  regret = jnp.where(mine[..., None] & legal_t, regret, 0.0)
  theirs = traj.player == 1 - p
  avg = jnp.where(theirs[..., None], sig_t / prefix[..., None], 0.0)
  info = traj.infostate
  regrets, cum = list(regrets), list(cum)
  regrets[p] = cfg.add_regrets(regrets[p], regret.reshape(-1, A), step,
                               at=jnp.where(mine, info, 0).reshape(-1))
  cum[1 - p] = cfg.add_average(cum[1 - p], avg.reshape(-1, A), step,
                               at=jnp.where(theirs, info, 0).reshape(-1))
  return tuple(regrets), tuple(cum)

