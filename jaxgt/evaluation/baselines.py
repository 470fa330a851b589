"""Value functions for the control variates of the importance-sampling estimators: named
baselines (bet-call, a given profile's exact values), user values, and the views of them that
partial-information AIVAT needs (:mod:`jaxgt.evaluation.importance`)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxgt.core.checks import check_choice, check_shape
from jaxgt.core.game_tree import CompiledGame
from jaxgt.core.dtypes import default_dtype
from jaxgt.core.public_tree import history_values
from jaxgt.core.sequence_form import safe_div
from jaxgt.evaluation.estimators import opponent_classes
from jaxgt.games.base import CHANCE
from jaxgt.policy import validate as validate_policy

BASELINES = ("none", "bc", "exact")
"""Named baselines; a callable or a ``[H]`` array of values is accepted as well."""


def is_none(baseline) -> bool:
  """Whether ``baseline`` means no baseline (``None`` or ``"none"``)."""
  return baseline is None or (isinstance(baseline, str) and baseline == "none")


def player_strategy(compiled: CompiledGame, player: int, policy, what: str) -> np.ndarray:
  """Player ``player``'s table ``[I, A]`` (float64) from a Policy or a ``(sigma0, sigma1)``
  pair, checked against ``compiled`` (``what`` names it in errors)."""
  if hasattr(policy, "check_game"):
    policy.check_game(compiled)
  probs = getattr(policy, "probs", policy)
  if not isinstance(probs, (tuple, list)) or len(probs) != 2:
    raise ValueError(f"{what} must be a Policy or a pair (sigma0 [I0, A], sigma1 [I1, A])")
  validate_policy(compiled, tuple(np.asarray(p, np.float64) for p in probs))
  return np.asarray(probs[player], np.float64)


def bet_call_profile(compiled: CompiledGame) -> tuple:
  """The bet-call reference profile of BC-DIVAT (Zinkevich, Bowling, Bard, Kan, Billings,
  *Optimal Unbiased Estimators for Evaluating Agent Performance*, AAAI 2006), one row per
  infostate.

  In OpenSpiel's poker numbering (0 fold, 1 check/call, 2 bet/raise): facing a
  bet (fold legal) call, otherwise bet when legal, otherwise check. In a game
  with another numbering this is still a fixed deterministic profile (action 1
  where legal, else 2, else the lowest legal one) and a valid, unbiased baseline.
  """
  out = []
  for pt in compiled.tree.players:
    legal = np.asarray(pt.legal)
    n, A = legal.shape
    pick = np.argmax(legal, axis=1)  # lowest legal action
    for a in (2, 1):  # later assignments win: prefer 1, then 2 ...
      if A > a:
        pick = np.where(legal[:, a], a, pick)
    if A > 2:  # ... but bet when not facing a bet
      pick = np.where(~legal[:, 0] & legal[:, 2], 2, pick)
    sig = np.zeros((n, A))
    sig[np.arange(n), pick] = 1.0
    out.append(sig)
  return tuple(out)


def baseline_profile(compiled: CompiledGame, baseline, policy) -> tuple | None:
  """The full profile whose exact values a named baseline uses (``None`` for other
  baselines): the bet-call profile for ``"bc"``, ``policy`` for ``"exact"``."""
  if not isinstance(baseline, str) or is_none(baseline):
    return None
  check_choice("baseline", baseline, BASELINES)
  if baseline == "bc":
    return bet_call_profile(compiled)
  if policy is None:
    raise ValueError("the exact baseline needs a profile (policy=...)")
  return tuple(player_strategy(compiled, p, policy, "baseline profile") for p in (0, 1))


def baseline_values(compiled: CompiledGame, baseline, player: int, *, policy=None):
  """``[H]`` values for player ``player`` of a named baseline, a callable or an array (or None).

  ``"bc"``: the bet-call profile's exact values; ``"exact"``: ``policy``'s
  (a full profile, e.g. a CFR+ solution); a callable receives ``[H] int32``
  history ids and returns ``[H]`` values for ``player``.
  """
  tree = compiled.device_tree(default_dtype())
  dtype = tree.terminal_payoff.dtype
  if is_none(baseline):
    return None
  profile = baseline_profile(compiled, baseline, policy)
  if profile is not None:
    values = history_values(tree, tuple(jnp.asarray(p, dtype) for p in profile))
    return values if player == 0 else -values
  if callable(baseline):
    values = baseline(jnp.arange(tree.num_histories, dtype=jnp.int32))
  else:
    values = baseline
  values = jnp.asarray(values, dtype)
  check_shape("a value function's output (one value per history)", values,
              (tree.num_histories,))
  if not bool(jnp.all(jnp.isfinite(values))):
    raise ValueError("the value function returned non-finite values")
  return values


def view_known_chance(compiled: CompiledGame, player: int) -> np.ndarray:
  """``[H]`` bool: chance nodes whose outcome probabilities player ``player`` knows from its own
  view (equal at every history it cannot tell apart), e.g. Leduc's deal of player 0's card but
  not the public card, whose probabilities depend on the opponent's hidden card."""
  return compiled.derived(_view_known_chance, player)


def _view_known_chance(compiled: CompiledGame, player: int) -> np.ndarray:
  tree = compiled.tree
  view = opponent_classes(compiled, 1 - player)  # classes of player's own view
  probs = np.asarray(tree.chance_probs, np.float64)
  chance = np.asarray(tree.player) == CHANCE
  n = int(view.max()) + 1
  hi = np.full((n, probs.shape[1]), -np.inf)
  lo = np.full((n, probs.shape[1]), np.inf)
  np.maximum.at(hi, view[chance], probs[chance])
  np.minimum.at(lo, view[chance], probs[chance])
  return chance & np.all(hi[view] - lo[view] <= 1e-12, axis=1)


def view_values(compiled: CompiledGame, values, player: int, weights=None) -> jax.Array:
  """``[H]`` ``values`` averaged over the histories player ``player`` cannot tell apart
  (weighted by ``weights [H]``, e.g. a reference profile's reach; default chance reach):
  a value function of the player's own view, the input of partial-information AIVAT."""
  tree = compiled.device_tree(default_dtype())
  view = jnp.asarray(opponent_classes(compiled, 1 - player))
  H = tree.num_histories
  w = tree.chance_reach.astype(values.dtype) if weights is None else jnp.asarray(weights)
  num = jax.ops.segment_sum(w * values, view, H)
  den = jax.ops.segment_sum(w, view, H)
  mean = jax.ops.segment_sum(values, view, H) / jax.ops.segment_sum(jnp.ones_like(values), view, H)
  return safe_div(num[view], den[view], mean[view])
