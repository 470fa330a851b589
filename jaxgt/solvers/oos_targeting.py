"""Search targeting of Online Outcome Sampling: the targeted set and the weighting factor.

OOS samples, with probability ``delta``, only trajectories through the targeted
part of the game, the searcher's information state (IST) or its public state
(PST), and weighs every update of a search by ``w_T = (1 - delta) + delta /
pi_bar(sub)``, ``pi_bar(sub)`` the mean profile's reach of the targeted set (Lisy,
Lanctot, Bowling, "Online Monte Carlo Counterfactual Regret Minimization for
Search in Imperfect Information Games", 2015, Sec. 4.1-4.3; the reading of
``w_T`` is :mod:`jaxgt.solvers.oos`'s). On a compiled tree :func:`tree_targets`
computes the targeted set's masks and ``w_T`` exactly from the tree's ancestor
chains (:mod:`jaxgt.core.targets`); on a device game
:func:`estimate_weighting_factor` estimates ``pi_bar(sub)`` from prefixes drawn
through the children consistent with the search path
(:func:`target_reach_samples`). ``cfg`` is the :class:`~jaxgt.solvers.oos.OOS`
solver (``delta``, ``targeting``, ``reach_samples``), ``state`` its
:class:`~jaxgt.solvers.oos.OOSState` (``cum_policy``, on a device game
``tables``).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from jax import lax

from jaxgt.core import rng, sequence_form
from jaxgt.core.game_tree import GameTree
from jaxgt.core.sampling import sample_cdf
from jaxgt.core.tables import infostate_rows
from jaxgt.core.targets import ancestor_chains, ancestor_mask, chain_reach, member_row
from jaxgt.games.base import CHANCE
from jaxgt.solvers.base import step_key
from jaxgt.solvers.consistent import SearchPath, consistent_children
from jaxgt.solvers.sources import Rules, source_of


# ------------------------------------------------------------------ compiled trees
def table_prob(tables, legal, pl, info, a):
  """Probability of action ``a`` under the normalised rows of ``tables`` (uniform where zero)."""
  row = sequence_form.normalize(infostate_rows(tables, pl, info), infostate_rows(legal, pl, info))
  return jnp.take_along_axis(row, a[..., None], axis=-1)[..., 0]


def tree_targets(cfg, tree: GameTree, state, members, history):
  """Masks ``[H]`` of the targeted set and of it with its ancestors, and ``w_T >= 1`` (Sec. 4.3),
  at match position ``history`` ([] int32, ``-1``: none; ``w_T = 1``) with ``members`` the
  :func:`~jaxgt.core.targets.target_members` table of ``tree``."""
  row = member_row(tree, cfg.targeting, members, history)
  chain = ancestor_chains(tree, tree.max_depth, row)
  legal = tuple(pt.legal for pt in tree.players)
  reach = chain_reach(tree, chain, functools.partial(table_prob, state.cum_policy, legal))
  mass = jnp.sum(jnp.where(row >= 0, reach, 0.0))
  w_t = (1.0 - cfg.delta) + cfg.delta / jnp.maximum(mass, jnp.finfo(reach.dtype).tiny)
  w_t = jnp.where(history >= 0, w_t, 1.0).astype(reach.dtype)
  return ancestor_mask(tree, row), ancestor_mask(tree, chain), w_t


def ancestor_children(tree: GameTree, anc):
  """``[H, C] bool``: the children of each history that are in ``anc [H]`` (computed once per
  search, so that a walk step reads one row instead of gathering ``anc`` at its children)."""
  return (tree.children >= 0) & anc[jnp.maximum(tree.children, 0)]


# ------------------------------------------------------------------ device games
_REACH_KEY = 0x7EAC4


def reach_key(key, iteration):
  """The key of the reach estimate (:func:`estimate_weighting_factor`) of a run driven by
  ``key`` from a state at ``iteration``: its first step's key with a constant folded in."""
  return rng.fold_in(step_key(key, iteration), _REACH_KEY)


def _mean_profile_rows(state, node):
  """``[B, A]``: the mean profile ``pi_bar`` at ``node`` (normalised sums, uniform over the
  legal actions where a state has no row or a zero row)."""
  row = infostate_rows(state.cum_policy, node.player, node.infostate)
  row = jnp.where((node.infostate >= 0)[:, None], row, 0.0)
  return sequence_form.normalize(row, node.legal)


def target_reach_samples(cfg, rules: Rules, state, path: SearchPath, key, num: int):
  """``[num]`` importance weights ``pi_bar(h) / q(h)`` of prefixes ``h`` drawn to the position.

  Each lane walks ``path.length`` steps from the root through the children
  consistent with ``path`` (:func:`~jaxgt.solvers.consistent.consistent_children`,
  IST or PST as ``cfg.targeting``): chance by its probabilities and players
  uniformly, restricted to those children; ``q(h)`` is the probability of
  the prefix so drawn, ``pi_bar(h)`` its chance reach times both players'
  mean profile (:func:`_mean_profile_rows`). A lane that meets a state
  with no consistent child (card removal) weighs 0. Every history of the
  targeted set is drawn with ``q > 0``, and lanes land only there or at a
  dead end, so the mean weight is an unbiased estimate of ``pi_bar(sub)``,
  the mean-profile reach of the targeted set. ``1`` everywhere without a
  position.
  """
  game = rules.game
  src = source_of(rules, state.tables, state.regrets[0].dtype)
  C, A = src.num_children, src.num_actions
  uni = rng.uniform(key, (src.max_depth, num), src.dtype)

  def body(t, c):
    s, w = c
    node = src.node(s)
    chance = (node.player == CHANCE)[:, None]
    mean = jnp.pad(_mean_profile_rows(state, node), ((0, 0), (0, C - A)))
    pi = jnp.where(chance, src.chance(s), mean)
    q = jnp.where(chance, src.chance(s), 1.0) * consistent_children(game, s, t, path,
                                                                      cfg.targeting)
    total = jnp.sum(q, axis=-1)
    a = sample_cdf(jnp.cumsum(q, axis=-1), uni[t])
    take = lambda x: jnp.take_along_axis(x, a[:, None], axis=-1)[:, 0]
    alive = total > 0  # else a dead end: the lane stays put with weight 0
    w = jnp.where(alive, w * take(pi) * total / jnp.where(alive, take(q), 1.0), 0.0)
    nxt = src.child(s, a)
    s = jax.tree_util.tree_map(
        lambda n, o: jnp.where(alive.reshape(alive.shape + (1,) * (n.ndim - 1)), n, o), nxt, s)
    return s, w

  _, w = lax.fori_loop(0, jnp.maximum(path.length, 0), body,
                       (src.root(num), jnp.ones(num, src.dtype)))
  return w


def estimate_weighting_factor(cfg, rules: Rules, state, path: SearchPath, key):
  """``w_T = (1 - delta) + delta / pi_bar(sub)`` (Sec. 4.3, as :func:`tree_targets` on a tree) with
  ``pi_bar(sub)`` the mean of ``cfg.reach_samples`` importance weights
  (:func:`target_reach_samples`): a ratio estimate (its denominator unbiased); ``1`` without
  a position."""
  mass = jnp.mean(target_reach_samples(cfg, rules, state, path, key, cfg.reach_samples))
  w_t = (1.0 - cfg.delta) + cfg.delta / jnp.maximum(mass, jnp.finfo(mass.dtype).tiny)
  return jnp.where(path.length >= 0, w_t, 1.0).astype(mass.dtype)
