"""The histories a search targets from a match position (OOS, ISMCTS): those of the acting
player's information state (``"ist"``) or public state (``"pst"``), tabulated once on the host
(:func:`target_members`), picked inside a trace (:func:`member_row`) and walked up to the root
(:func:`ancestor_chains`, :func:`chain_reach`): ``O(K depth)`` work, no sweep over the tree.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxgt.core.checks import check_decision_history
from jaxgt.core.game_tree import NO_INDEX, GameTree
from jaxgt.games.base import CHANCE


def target_members(tree: GameTree, targeting: str) -> np.ndarray:
  """Host-side ``[R, K] int32`` decision histories of every targetable set (``-1`` padded).

  Rows are information states (``infostate``, plus ``I0`` for player 1) for
  ``"ist"``, public states for ``"pst"``; ``K`` is the largest set.
  """
  pl = np.asarray(tree.player)
  dec = np.flatnonzero(pl >= 0)
  if targeting == "ist":
    info = np.asarray(tree.infostate)[dec]
    key = np.where(pl[dec] == 0, info, tree.num_infostates[0] + info)
    rows = sum(tree.num_infostates)
  else:
    key = np.asarray(tree.history_public)[dec]
    rows = tree.num_public_states
  order = np.argsort(key, kind="stable")
  key, hist = key[order], dec[order]
  counts = np.bincount(key, minlength=rows)
  start = np.concatenate([[0], np.cumsum(counts)[:-1]])
  table = np.full((rows, max(int(counts.max(initial=0)), 1)), -1, np.int32)
  table[key, np.arange(len(key)) - start[key]] = hist
  return table


def search_position(tree: GameTree, targeting: str, history, members):
  """``(history, members)`` as arrays for a search run: ``history`` checked to be a decision
  (``None``: ``NO_INDEX``, no match history), ``members`` the :func:`target_members` table of
  ``tree`` (computed when ``None``)."""
  if history is None:
    history = NO_INDEX
  else:
    check_decision_history(tree, history)
  if members is None:
    members = target_members(tree, targeting)
  return jnp.asarray(history, jnp.int32), jnp.asarray(members)


def member_row(tree: GameTree, targeting: str, members, history):
  """``[K]`` histories targeted from ``history`` (``-1``: none): those of its acting player's
  information state (IST) or of its public state (PST); reads nothing else off ``history``."""
  m = jnp.maximum(history, 0)
  if targeting == "ist":
    r = jnp.where(tree.player[m] == 0, tree.infostate[m],
                  tree.players[0].num_infostates + tree.infostate[m])
  else:
    r = tree.history_public[m]
  return jnp.where(history >= 0, members[r], -1)


def ancestor_chains(tree: GameTree, depth: int, row):
  """``[depth + 1, K]``: ``row`` and its ancestors level by level (``-1`` above the root)."""
  def up(x, _):
    return jnp.where(x >= 0, tree.parent[jnp.maximum(x, 0)], -1), x
  return lax.scan(up, row, None, length=depth + 1)[1]


def chain_reach(tree: GameTree, chain, decision_prob=None):
  """``[K]`` reach of the chains' bottom histories: chance times ``decision_prob(pl, info, a)``
  at decisions (``None``: chance reach only)."""
  x = jnp.maximum(chain, 0)
  par = tree.parent[x]
  pp = jnp.maximum(par, 0)
  act = tree.action[x]
  pl = tree.player[pp]
  edge = tree.chance_probs[pp, act]
  if decision_prob is not None:
    dec = decision_prob(pl, tree.infostate[pp], jnp.minimum(act, tree.num_actions - 1))
    edge = jnp.where(pl == CHANCE, edge, dec)
  else:
    edge = jnp.where(pl == CHANCE, edge, 1.0)
  return jnp.prod(jnp.where((chain >= 0) & (par >= 0), edge, 1.0), axis=0)


def ancestor_mask(tree: GameTree, chain):
  """``[H] bool``: the histories in ``chain [..., K]`` (e.g. the targeted set and its ancestors)."""
  H = tree.num_histories
  return jnp.zeros(H, bool).at[jnp.where(chain >= 0, chain, H).reshape(-1)].set(True, mode="drop")
