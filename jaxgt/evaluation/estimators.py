"""The estimators of :mod:`jaxgt.evaluation.importance` as functions of the terminal reached:
``V_U(z)`` (Bowling, Johanson, Burch, Szafron, *Strategy Evaluation in Extensive Games with
Importance Sampling*, ICML 2008, Eq. 3; AIVAT: Burch et al., AAAI 2018) once per terminal, with
a few passes over the breadth-first depth levels of the compiled tree."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxgt import struct
from jaxgt.core.game_tree import CompiledGame, GameTree
from jaxgt.core.public_tree import (chance_edge_probabilities, edge_probabilities,
                                    player_edge_probabilities, subtree_values)
from jaxgt.core.sequence_form import safe_div
from jaxgt.games.base import CHANCE

ESTIMATORS = ("basic", "early-folds", "all-cards", "combined", "aivat")
"""Estimator names (``--estimator`` of ``jaxgt evaluate``)."""

ESTIMATOR_FLAGS = {  # (game_ending, private, correct_player) of :func:`terminal_estimates`
    "basic": (False, False, False), "early-folds": (True, False, False),
    "all-cards": (False, True, False), "combined": (True, True, False),
    "aivat": (True, True, True)}


@struct.dataclass
class TerminalEstimates:
  """The estimator as a function of the terminal reached (one compiled game, one configuration)."""

  value: jax.Array  # [T] V_U(z): the estimate an episode ending in terminal z contributes
  logged_reach: jax.Array  # [T] pi-hat_i(z): the logging strategy's contribution to reaching z
  payoff: jax.Array  # [T] u_i(z), player i's payoff


def path_fold(tree: GameTree, edge: jax.Array, *, product: bool) -> jax.Array:
  """``[H]`` product (a reach) or sum of ``edge [H]`` over the path from the root to each
  history."""
  acc = jnp.ones_like(edge) if product else jnp.zeros_like(edge)
  acc = acc.at[0].set(edge[0])
  for lo, hi in tree.depth_levels[1:]:
    above = acc[tree.parent[lo:hi]]
    acc = acc.at[lo:hi].set(above * edge[lo:hi] if product else above + edge[lo:hi])
  return acc


@jax.jit
def history_reach(tree: GameTree, sigma0: jax.Array, sigma1: jax.Array) -> jax.Array:
  """``[H]`` reach of each history under ``(sigma0 [I0, A], sigma1 [I1, A])`` and chance."""
  return path_fold(tree, edge_probabilities(tree, (sigma0, sigma1)), product=True)


def opponent_classes(compiled: CompiledGame, player: int) -> np.ndarray:
  """``[H]`` int32 class of every history under "the opponent of ``player`` cannot tell them apart".

  Non-terminal histories: same depth and the opponent's augmented information
  state; terminals: same depth, the parent's class and the last action.
  Cached on the compiled game.
  """
  return compiled.derived(_opponent_classes, player)


def _opponent_classes(compiled: CompiledGame, player: int) -> np.ndarray:
  tree = compiled.tree
  opp = 1 - player
  depth = np.asarray(tree.depth, np.int64)
  terminal = np.asarray(tree.history_terminal) >= 0
  par = np.maximum(np.asarray(tree.parent), 0)
  aug = np.asarray(compiled.aug[opp], np.int64)
  K = int(aug.max()) + 2
  A = int(np.asarray(tree.children).shape[1]) + 1
  keys = np.where(terminal,
                  -1 - ((depth * K + aug[par]) * A + np.asarray(tree.action)),
                  depth * K + aug)
  _, cls = np.unique(keys, return_inverse=True)
  return cls.astype(np.int32)


@jax.jit
def terminal_estimates(tree: GameTree, classes, target, logged, values, player, game_ending,
                       private, correct_player, chance_corrected) -> TerminalEstimates:
  """:math:`V_U(z)` for every terminal ``z`` (Bowling et al. 2008, Eq. 3 and Examples 1-4; AIVAT).

  Every argument after ``tree`` is traced, so one compilation per game serves
  every estimator, seat and baseline (:data:`ESTIMATOR_FLAGS` gives the flags).

  Args:
    tree: the compiled tree (device arrays).
    classes: ``[H] int32`` opponent-indistinguishability classes (:func:`opponent_classes`).
    target: ``[I_i, A]`` the evaluated strategy ``sigma_i``.
    logged: ``[I_i, A]`` the logging strategy ``sigma-hat_i``.
    values: ``[H]`` value function for player ``i`` (the baseline; zeros: none).
    player: ``[]`` int32, the evaluated seat ``i``.
    game_ending: ``[]`` bool, sum over the game-ending synthetic terminals (Examples 2, 4).
    private: ``[]`` bool, sum over the opponent-indistinguishable ones (Examples 3, 4).
    correct_player: ``[]`` bool, control variates at player ``i``'s decisions too (AIVAT).
    chance_corrected: ``[H]`` bool, the chance nodes that get control variates (all of them
      with full information; :func:`~jaxgt.evaluation.baselines.view_known_chance` for
      partial-information AIVAT).
  """
  H = tree.num_histories
  opp = 1 - player
  t = tree.history_terminal
  u = jnp.where(t >= 0, tree.terminal_payoff[jnp.maximum(t, 0)], 0.0)
  u = jnp.where(player == 0, u, -u)  # [H] u_i at terminals
  edge_c = chance_edge_probabilities(tree)
  edge_i = player_edge_probabilities(tree, player, target)
  edge_hat = player_edge_probabilities(tree, player, logged)
  par = jnp.maximum(tree.parent, 0)
  parent_player = jnp.where(tree.parent >= 0, tree.player[par], opp)
  terminal = tree.history_terminal >= 0

  # V(z): u_i(z) minus zero-mean control variates at chance (and, for AIVAT, at player i).
  v = jnp.asarray(values, u.dtype)
  corrected = (((parent_player == CHANCE) & chance_corrected[par])
               | (correct_player & (parent_player == player)))
  # [H] E over the children of h of v (one step below chance and player-i nodes)
  expected = jax.ops.segment_sum(jnp.where(tree.parent >= 0, edge_c * edge_i * v, 0.0), par, H)
  delta = jnp.where(corrected & (tree.parent >= 0), v - expected[par], 0.0)
  v_tilde = u - path_fold(tree, delta, product=False)

  reach_c = tree.chance_reach.astype(u.dtype)
  reach_i = path_fold(tree, edge_i, product=True)
  reach_hat = path_fold(tree, edge_hat, product=True)
  # W(h): sum over terminals below h reached through player i and chance only.
  own = (tree.player == player) | (tree.player == CHANCE)
  w = subtree_values(tree, jnp.where(terminal, v_tilde, 0.0), edge_c * edge_i, own)
  s_point = (tree.parent < 0) | (parent_player == opp)  # h = S_-i(z') for some z'
  x = jnp.where(game_ending, w, v_tilde)
  member = jnp.where(game_ending, s_point, terminal)
  cls = jnp.where(private, classes, jnp.arange(H, dtype=jnp.int32))
  num = jax.ops.segment_sum(jnp.where(member, reach_c * reach_i * x, 0.0), cls, H)
  den = jax.ops.segment_sum(jnp.where(member, reach_c * reach_hat, 0.0), cls, H)
  ratio = jnp.where(member, safe_div(num[cls], den[cls]), 0.0)
  total = path_fold(tree, ratio, product=False)
  th = tree.terminal_history
  return TerminalEstimates(value=total[th], logged_reach=reach_hat[th], payoff=u[th])
