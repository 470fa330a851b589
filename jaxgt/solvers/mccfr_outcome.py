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

On a device game (a :class:`~jaxgt.solvers.sources.RulesSource`) the walk
reads each visited information state's row of the acting player's table
(a state not yet in a table has zero regrets, as it would on the compiled
tree) and regret-matches only the visited rows. After the walk the updated
player's visited states and the opponent's are inserted
(:func:`~jaxgt.solvers.sources.insert_rows`) and the increments added at the
returned rows; a state its full table refuses loses that step's increment
(the table counts it) and keeps being played from zero regrets.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxgt.core import rng
from jaxgt.core.game_tree import GameTree
from jaxgt.core.sampling import mix_uniform
from jaxgt.core.tables import infostate_rows
from jaxgt.solvers.sources import TreeSource, insert_rows, source_of
from jaxgt.solvers.walk import Draw, PolicyTable, node_at, walk


def strategy_at(cfg, tree: GameTree, regrets, tabulate: bool):
  """``sigma(node) -> [B, A]``: the current strategy (``cfg``'s regret rule) of ``regrets`` at
  the nodes' information states.

  ``tabulate`` computes it at every information state once (large batches);
  otherwise only at the visited rows (same numbers). Zero off decisions; a node outside memory
  (``infostate`` negative: a device game's state not in its table) reads zero regrets.
  """
  if tabulate:
    sigma = cfg.strategies(tree, regrets)
    return lambda node: jnp.where(node.decision[:, None],
                                  infostate_rows(sigma, node.player, node.infostate), 0.0)

  def sigma(node):
    rows = infostate_rows(regrets, node.player, node.infostate)
    return cfg.strategy(jnp.where((node.infostate >= 0)[:, None], rows, 0.0), node.legal)

  return sigma


def outcome_walk(cfg, tree, regrets, p: int, uniforms, *, tabulate: bool):
  """Outcome-sampling trajectories for updated player ``p`` (:func:`walk`) on a compiled tree
  or a source (a device game's, with ``tabulate`` off).

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


def half_step(cfg, tree, regrets, cum, p: int, step, key, tables=None):
  """Outcome sampling for player ``p`` from ``batch`` trajectories (one scatter-add each);
  returns ``(regrets, cum, tables)``.

  ``tree``: a compiled tree, or a device game's :class:`~jaxgt.solvers.sources.Rules` with the
  players' ``tables`` (returned with the visited states inserted; ``None`` on a tree).

  The whole batch walks down together (:func:`outcome_walk`), with the
  ``[D, B]`` uniforms drawn in one call. Per depth ``t``
  with ``V_t = u(z) prod_{k >= t} sigma/q`` over ``p``'s sampled actions and
  ``Q_t = prod_{k < t} q`` (``p``'s sampling reach), the regret increment is
  ``(1[a = a_t] V_{t+1} / q_t - V_t) / Q_t`` and the opponent's average
  increment ``sigma / Q_t`` (chance and opponent reach cancel: both are
  sampled on-policy). Both go through ``cfg``'s rules at step ``step`` (1-based).
  """
  dtype = regrets[0].dtype
  src = source_of(tree, tables, dtype)
  on_tree = isinstance(src, TreeSource)
  A = src.num_actions
  B = cfg.batch
  uni = rng.uniform(key, (src.max_depth, B), dtype)
  # Large batches regret-match every information state once; small ones (and device games)
  # only the visited rows (same numbers either way).
  tabulate = on_tree and B * src.max_depth >= src.tree.num_histories
  traj, sig_t, legal_t = outcome_walk(cfg, src.tree if on_tree else src, regrets, p, uni,
                                      tabulate=tabulate)
  s_a, q_a = traj.target_prob, traj.sample_prob
  u = traj.payoff() * (1.0 if p == 0 else -1.0)  # [B]
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
  if not on_tree:  # the updated states enter their tables; refused ones (NO_INDEX) drop out
    # The walk looked every state up in these tables: only the ones it did not find are new.
    tables, new_rows = insert_rows(src.tables, traj.player, traj.key, (mine | theirs) & (info < 0))
    info = jnp.where(info >= 0, info, new_rows)
    mine, theirs = mine & (info >= 0), theirs & (info >= 0)
    regret = jnp.where(mine[..., None], regret, 0.0)
    avg = jnp.where(theirs[..., None], avg, 0.0)
  regrets, cum = list(regrets), list(cum)
  # Steps that update no row scatter out of range (dropped), not zeros into row 0: a device's
  # atomic adds to one row serialise.
  regrets[p] = cfg.add_regrets(regrets[p], regret.reshape(-1, A), step,
                               at=jnp.where(mine, info, regrets[p].shape[0]).reshape(-1))
  cum[1 - p] = cfg.add_average(cum[1 - p], avg.reshape(-1, A), step,
                               at=jnp.where(theirs, info, cum[1 - p].shape[0]).reshape(-1))
  return tuple(regrets), tuple(cum), tables

