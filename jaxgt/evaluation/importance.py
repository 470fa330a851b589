"""Low-variance evaluation of a known strategy from logged episodes (Bowling et al. 2008; AIVAT).

Setting (Bowling, Johanson, Burch, Szafron, ICML 2008, Sec. 2.2): player
``i`` (``player``) plays a *known* strategy; the opponent's is unknown. Episodes
were played by the logging profile ``(sigma-hat_i, sigma_-i)``; we estimate
``E[u_i(z)]`` under the *evaluated* profile ``(sigma_i, sigma_-i)``. On-policy
is ``sigma-hat_i = sigma_i``. Every estimator here is the general estimator of
Sec. 3, Eq. 3,

    V_U(z) = sum over z' in U^-1(z) of  V(z') pi^sigma(z') / pi^sigma-hat(U(z')),

for one choice of the sets ``U(z)`` (the *synthetic* terminals an observed ``z``
stands for). Because its weights only involve chance and player ``i``'s two
strategies, ``V_U`` is a fixed function of the terminal reached, and this
module computes it **once per terminal** on the compiled tree (a few passes
over the breadth-first depth levels); estimating a log is then locating each
episode's terminal through the tree's transition arrays (``children``) and a
gather, jitted over all episodes at once.

The sets, defined for every compiled game (not only poker):

* ``basic`` (Sec. 3, Example 1): ``U(z) = {z}``; weight ``pi_i(z) / pi-hat_i(z)``
  (on-policy: the Monte Carlo mean).
* ``early-folds`` (Example 2, "game-ending actions"): ``S_-i(z)`` is the shortest
  prefix of ``z`` after which only player ``i`` and chance act; ``z'`` is
  considered whenever ``S_-i(z')`` is a prefix of ``z``. Those are the terminals
  player ``i`` (and chance) could have ended the game in without the opponent
  acting again: in poker the folds along the observed betting, and in the
  full-information setting the calls that end the last round (footnote 2).
* ``all-cards`` (Example 3, "private information"): ``z'`` is considered when
  the opponent cannot tell it from ``z``. Read off the compiled game: two
  terminals are indistinguishable to the opponent when their parents have the
  same opponent *augmented* information state (``CompiledGame.aug``), the same
  depth and the same last action. That covers chance outcomes observed by
  player ``i`` only (poker's private cards) and, in games with hidden moves,
  player ``i``'s unobserved actions. Perfect recall makes the opponent's
  contribution to the reach equal across such terminals, so the weight
  ``pi_c(z') pi_i(z') / sum_{z'' ~ z} pi_c(z'') pi-hat_i(z'')`` is known
  (Eq. 16-20, with chance kept for games whose private outcomes are not
  uniform).
* ``combined`` (Example 4): histories ``Q(z)`` at the depth of ``S_-i(z)`` that
  the opponent cannot tell from it, and every terminal reachable from one of
  them through player ``i`` and chance only (Eq. 21-25).
* ``aivat`` (Burch, Schmid, Moravcik, Morrill, Bowling, AAAI 2018): ``u_i``
  minus control variates at *every chance event and every decision of player
  i*, ``v(h a) - sum_a' p(a'|h) v(h a')`` with ``p`` chance's or ``sigma_i``,
  from any value function ``v``; summed over AIVAT's "imaginary observations"
  of player ``i``'s private information (the all-cards sets) and, beyond the
  AIVAT paper, over the game-ending alternatives too (the combined sets: on
  Leduc this cuts the standard deviation further, up to half, see
  ``examples/importance_sampling.py``). Unbiased for any ``v``: each control
  variate has mean zero under the evaluated profile.

**Baselines** (Sec. 3, last paragraph: "replace V with any unbiased estimate of
V"): ``V(z) = u_i(z) - sum over the chance events on z of [v(h a) - E_a' v(h a')]``
(the DIVAT form of Zinkevich et al. 2006; zero-mean for any ``v``), with
``v`` the exact values of a reference profile on jaxgt's tree: ``bc`` the
bet-call profile (BC-DIVAT, :func:`bet_call_profile`), ``exact`` a given
profile (e.g. a CFR+ solution), or any callable/array of history values (a
network). All estimators stay unbiased with any baseline (Theorem 1) as long as
``sigma-hat_i`` puts positive probability wherever ``sigma_i`` does.

**Partial information** (Sec. 3.1): a log may hold ``null`` for chance outcomes
the logging side did not see (the opponent's cards after a fold). The
partial-information variant averages the full-information estimate over the
completions consistent with the log (its actions and its returns), weighted by
their chance probability. That is exact for ``basic`` without a baseline (every
completion has the same ``u_i`` and ``pi_i``) and, on-policy, for
``all-cards`` without one when the hidden outcomes do not change the payoff
(folds). Everything else is biased, as in the paper (Table 3): control
variates (baselines, AIVAT) and the showdown calls of ``early-folds`` depend on
the unseen outcome, and the completion weights cannot follow the opponent's
actions, which depend on it too (its strategy is unknown). The Leduc example
measures these biases. Beyond the paper, AIVAT has an unbiased
partial-information variant built from player ``i``'s view only
(``estimator_table(..., partial_information=True)``, used by
:func:`estimate_episodes` on logs with hidden outcomes); on Leduc it keeps
only a small part of AIVAT's variance reduction.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import math
from typing import Any, Callable, Optional, Sequence, Union

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxgt.core import rng
from jaxgt.core.checks import check_choice
from jaxgt.core.compiler import NO_INDEX, CompiledGame, GameTree
from jaxgt.core.dtypes import default_dtype
from jaxgt.core.tables import infostate_rows
from jaxgt.games.base import CHANCE
from jaxgt.policy import validate as validate_policy
from jaxgt.solvers.walk import walk_tables

ESTIMATORS = ("basic", "early-folds", "all-cards", "combined", "aivat")
"""Estimator names (``--estimator`` of ``jaxgt evaluate``)."""
BASELINES = ("none", "bc", "exact")
"""Named baselines; a callable or a ``[H]`` array of values is accepted as well."""

UNOBSERVED = -1
"""Encoded episode step: a chance outcome the log does not show (``null``)."""
PADDING = -2
"""Encoded episode step past the end of a shorter episode."""
MAX_COMPLETIONS = 4096
"""Largest number of completions of one partially observed episode that is enumerated."""
LOCATE_CHUNK = 1 << 16
"""Episodes located per jitted call (longer logs go in chunks of this size)."""
Z95 = 1.959963984540054
"""Two-sided 95% normal quantile."""

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


@dataclasses.dataclass(frozen=True)
class Estimate:
  """Result of :func:`estimate_episodes` (game units, player ``player``'s view)."""

  estimate: float  # mean of the per-episode values
  stderr: float  # sample standard deviation / sqrt(episodes)
  ci95: tuple  # (lo, hi) normal 95% interval
  episodes: int
  estimator: str
  baseline: str
  values: np.ndarray  # [B] per-episode values (their mean is ``estimate``)

  def as_dict(self) -> dict:
    """``{"estimate", "stderr", "ci95", "episodes", "estimator"}`` (the ``--json`` object)."""
    return {"estimate": self.estimate, "stderr": self.stderr, "ci95": list(self.ci95),
            "episodes": self.episodes, "estimator": self.estimator}


# ------------------------------------------------------------------------ tree passes
def _forward(tree: GameTree, edge: jax.Array, *, product: bool) -> jax.Array:
  """``[H]`` product (or sum) of ``edge`` over the path from the root to each history."""
  acc = jnp.ones_like(edge) if product else jnp.zeros_like(edge)
  acc = acc.at[0].set(edge[0])
  for lo, hi in tree.depth_levels[1:]:
    above = acc[tree.parent[lo:hi]]
    acc = acc.at[lo:hi].set(above * edge[lo:hi] if product else above + edge[lo:hi])
  return acc


def _backward(tree: GameTree, leaf: jax.Array, edge: jax.Array, open_: jax.Array) -> jax.Array:
  """``[H]``: ``leaf`` at terminals, ``sum_children edge(c) W(c)`` where ``open_``, else 0."""
  terminal = tree.history_terminal >= 0
  w = jnp.where(terminal, leaf, 0.0)
  levels = tree.depth_levels
  for d in range(len(levels) - 2, -1, -1):
    lo, hi = levels[d]
    clo, chi = levels[d + 1]
    up = jax.ops.segment_sum(edge[clo:chi] * w[clo:chi], tree.parent[clo:chi] - lo,
                             num_segments=hi - lo)
    w = w.at[lo:hi].set(jnp.where(terminal[lo:hi], w[lo:hi], jnp.where(open_[lo:hi], up, 0.0)))
  return w


def _edge_probs(tree: GameTree, player: int, sigma: jax.Array) -> jax.Array:
  """``[H]`` probability of the action into each history when ``player``'s moves follow
  ``sigma [I, A]`` (1 at the root and where another player or chance moved)."""
  par = jnp.maximum(tree.parent, 0)
  info = jnp.maximum(tree.infostate[par], 0)
  act = jnp.clip(tree.action, 0, sigma.shape[1] - 1)
  mine = (tree.parent >= 0) & (tree.player[par] == player)
  return jnp.where(mine, sigma[info, act], 1.0)


def _chance_edge(tree: GameTree) -> jax.Array:
  """``[H]`` chance probability of the outcome into each history (1 elsewhere)."""
  par = jnp.maximum(tree.parent, 0)
  act = jnp.maximum(tree.action, 0)
  chance = (tree.parent >= 0) & (tree.player[par] == CHANCE)
  return jnp.where(chance, tree.chance_probs[par, act], 1.0)


def history_payoff(tree: GameTree, player: int) -> jax.Array:
  """``[H]`` player ``player``'s payoff at terminal histories (0 elsewhere)."""
  t = tree.history_terminal
  u = jnp.where(t >= 0, tree.terminal_payoff[jnp.maximum(t, 0)], 0.0)
  return u if player == 0 else -u


@jax.jit
def profile_values(tree: GameTree, profile, player) -> jax.Array:
  """``[H]`` exact expected payoff to ``player`` at every history when both follow ``profile``.

  ``profile = (sigma0 [I0, A], sigma1 [I1, A])``, ``player`` a (traced) seat;
  one backward pass over the depth levels (jitted).
  """
  edge = _chance_edge(tree) * _edge_probs(tree, 0, profile[0]) * _edge_probs(tree, 1, profile[1])
  u = history_payoff(tree, 0)
  return _backward(tree, jnp.where(player == 0, u, -u), edge, jnp.ones(tree.num_histories, bool))


def bet_call_profile(compiled: CompiledGame) -> tuple:
  """The bet-call reference profile of BC-DIVAT (Zinkevich et al. 2006), one row per infostate.

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


# ------------------------------------------------------------------------ classes
def opponent_classes(compiled: CompiledGame, player: int) -> np.ndarray:
  """``[H]`` int32 class of every history under "the opponent of ``player`` cannot tell them apart".

  Non-terminal histories: same depth and the opponent's augmented information
  state; terminals: same depth, the parent's class and the last action.
  Cached on the compiled game.
  """
  def build():
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
  return compiled.cached(("importance.opponent_classes", player), build)


# ------------------------------------------------------------------------ per-terminal estimates
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
      with full information; :func:`view_known_chance` for partial-information AIVAT).
  """
  H = tree.num_histories
  opp = 1 - player
  u = history_payoff(tree, 0)
  u = jnp.where(player == 0, u, -u)
  edge_c = _chance_edge(tree)
  edge_i = _edge_probs(tree, player, target)
  edge_hat = _edge_probs(tree, player, logged)
  par = jnp.maximum(tree.parent, 0)
  parent_player = jnp.where(tree.parent >= 0, tree.player[par], opp)
  terminal = tree.history_terminal >= 0

  # V(z): u_i(z) minus zero-mean control variates at chance (and, for AIVAT, at player i).
  v = jnp.asarray(values, u.dtype)
  corrected = (((parent_player == CHANCE) & chance_corrected[par])
               | (correct_player & (parent_player == player)))
  expected = _backward_one(tree, v, edge_c * edge_i)  # [H] E over the children of h of v
  delta = jnp.where(corrected & (tree.parent >= 0), v - expected[par], 0.0)
  v_tilde = u - _forward(tree, delta, product=False)

  reach_c = tree.chance_reach.astype(u.dtype)
  reach_i = _forward(tree, edge_i, product=True)
  reach_hat = _forward(tree, edge_hat, product=True)
  # W(h): sum over terminals below h reached through player i and chance only.
  own = (tree.player == player) | (tree.player == CHANCE)
  w = _backward(tree, v_tilde, edge_c * edge_i, own)
  s_point = (tree.parent < 0) | (parent_player == opp)  # h = S_-i(z') for some z'
  x = jnp.where(game_ending, w, v_tilde)
  member = jnp.where(game_ending, s_point, terminal)
  cls = jnp.where(private, classes, jnp.arange(H, dtype=jnp.int32))
  num = jax.ops.segment_sum(jnp.where(member, reach_c * reach_i * x, 0.0), cls, H)
  den = jax.ops.segment_sum(jnp.where(member, reach_c * reach_hat, 0.0), cls, H)
  ratio = jnp.where(member & (den[cls] > 0), num[cls] / jnp.where(den[cls] > 0, den[cls], 1.0),
                    0.0)
  total = _forward(tree, ratio, product=False)
  th = tree.terminal_history
  return TerminalEstimates(value=total[th], logged_reach=reach_hat[th], payoff=u[th])


def _backward_one(tree: GameTree, v: jax.Array, edge: jax.Array) -> jax.Array:
  """``[H]`` one-step expectation ``sum_children edge(c) v(c)`` at chance and player-i nodes."""
  par = jnp.maximum(tree.parent, 0)
  return jax.ops.segment_sum(jnp.where(tree.parent >= 0, edge * v, 0.0), par,
                             tree.num_histories)


# ------------------------------------------------------------------------ locating episodes
def encode_histories(histories: Sequence[Sequence[Optional[int]]], max_depth: int):
  """``[B, L]`` int32 actions (``UNOBSERVED`` for null, ``PADDING`` past the end) and
  ``[B]`` lengths (``L`` the longest history; callers compare it with ``max_depth``)."""
  B = len(histories)
  lengths = np.fromiter((len(h) for h in histories), np.int64, B)
  L = max(int(lengths.max(initial=0)), 1)
  total = int(lengths.sum())
  flat = np.array(list(itertools.chain.from_iterable(histories)), np.float64)  # None -> nan
  flat = np.where(np.isnan(flat), UNOBSERVED, flat).astype(np.int64)
  out = np.full((B, L), PADDING, np.int32)
  starts = np.repeat(np.cumsum(lengths) - lengths, lengths)
  out[np.repeat(np.arange(B), lengths), np.arange(total) - starts] = flat
  return out, lengths


def _locate_chunked(tree: GameTree, actions: np.ndarray, completions: int):
  """:func:`locate` over fixed-size chunks (one compilation per ``(L, K)``, bounded memory)."""
  B = actions.shape[0]
  chunk = min(LOCATE_CHUNK, 1 << max(B - 1, 255).bit_length())  # power-of-two buckets
  parts = []
  for lo in range(0, B, chunk):
    block = actions[lo:lo + chunk]
    pad = chunk - block.shape[0]
    if pad:
      block = np.concatenate([block, np.full((pad, block.shape[1]), PADDING, np.int32)])
    out = locate(tree, jnp.asarray(block), completions=completions)
    parts.append([np.asarray(x)[:chunk - pad] for x in out])
  return [np.concatenate(xs) for xs in zip(*parts)]


@functools.partial(jax.jit, static_argnames=("completions",))
def locate(tree: GameTree, actions, *, completions: int):
  """Maps encoded episodes ``[B, L]`` to terminals through ``tree.children``.

  An unobserved chance step branches into every outcome (weighted by its
  chance probability); completions that an observed later action rules out
  drop. Returns ``terminal [B, K]`` (``NO_INDEX`` unused), ``weight [B, K]``
  (chance probability of the completed outcomes), ``fail [B]`` the first step
  at which no completion is legal (``NO_INDEX``: none) and ``open [B]`` whether
  a completion ends before a terminal.
  """
  B, L = actions.shape
  K = completions
  C = tree.children.shape[1]
  hist = jnp.full((B, K), NO_INDEX, jnp.int32).at[:, 0].set(0)
  weight = jnp.zeros((B, K), tree.chance_probs.dtype).at[:, 0].set(1.0)
  fail = jnp.full((B,), NO_INDEX, jnp.int32)

  def body_observed(t, loop):  # K = 1, every outcome observed: one child per step
    hist, weight, fail = loop
    a = actions[:, t]
    h = jnp.maximum(hist[:, 0], 0)
    child = jnp.where((a >= 0) & (hist[:, 0] >= 0), tree.children[h, jnp.clip(a, 0, C - 1)],
                      NO_INDEX)
    step = a != PADDING
    fail = jnp.where(step & (child < 0) & (fail < 0), t, fail)
    keep = ~step | (fail >= 0)
    return jnp.where(keep, hist[:, 0], child)[:, None], weight, fail

  def body(t, loop):
    hist, weight, fail = loop
    a = actions[:, t]
    live = hist >= 0
    h = jnp.maximum(hist, 0)
    kids = tree.children[h]  # [B, K, C]
    everything = ((a == UNOBSERVED)[:, None] & (tree.player[h] == CHANCE))[..., None]
    pick = (jnp.arange(C) == a[:, None, None]) | everything
    sel = live[..., None] & (kids >= 0) & pick
    w = weight[..., None] * jnp.where(everything, tree.chance_probs[h], 1.0)
    sel = sel.reshape(B, K * C)
    order = jnp.argsort(~sel, axis=1, stable=True)[:, :K]
    new_hist = jnp.where(jnp.take_along_axis(sel, order, 1),
                         jnp.take_along_axis(kids.reshape(B, K * C), order, 1), NO_INDEX)
    new_w = jnp.where(new_hist >= 0, jnp.take_along_axis(w.reshape(B, K * C), order, 1), 0.0)
    step = a != PADDING
    bad = step & ~jnp.any(sel, axis=1) & (fail < 0)
    fail = jnp.where(bad, t, fail)
    keep = (~step | (fail >= 0))[:, None]
    return jnp.where(keep, hist, new_hist), jnp.where(keep, weight, new_w), fail

  hist, weight, fail = jax.lax.fori_loop(0, L, body_observed if K == 1 else body,
                                         (hist, weight, fail))
  term = jnp.where(hist >= 0, tree.history_terminal[jnp.maximum(hist, 0)], NO_INDEX)
  open_ = jnp.any((hist >= 0) & (term < 0), axis=1) & (fail < 0)
  return term, weight, fail, open_


# ------------------------------------------------------------------------ host entry points
def _strategy(compiled: CompiledGame, player: int, policy, what: str) -> np.ndarray:
  """Player ``player``'s table from a Policy or a ``(sigma0, sigma1)`` pair, checked."""
  if hasattr(policy, "check_game"):
    policy.check_game(compiled)
  probs = getattr(policy, "probs", policy)
  if not isinstance(probs, (tuple, list)) or len(probs) != 2:
    raise ValueError(f"{what} must be a Policy or a pair (sigma0 [I0, A], sigma1 [I1, A])")
  validate_policy(compiled, tuple(np.asarray(p, np.float64) for p in probs))
  return np.asarray(probs[player], np.float64)


def _line(episode, b: int) -> str:
  line = getattr(episode, "line", 0)
  return f"line {line}" if line else f"episode {b}"


def baseline_values(compiled: CompiledGame, baseline, player: int, *, policy=None):
  """``[H]`` values for player ``player`` of a named baseline, a callable or an array (or None).

  ``"bc"``: the bet-call profile's exact values; ``"exact"``: ``policy``'s
  (a full profile, e.g. a CFR+ solution); a callable receives ``[H] int32``
  history ids and returns ``[H]`` values for ``player``.
  """
  tree = compiled.device_tree(default_dtype())
  if baseline is None or (isinstance(baseline, str) and baseline == "none"):
    return None
  if isinstance(baseline, str):
    check_choice("baseline", baseline, BASELINES)
    if baseline == "bc":
      profile = bet_call_profile(compiled)
    else:
      if policy is None:
        raise ValueError("the exact baseline needs a profile (policy=...)")
      profile = tuple(_strategy(compiled, p, policy, "baseline profile") for p in (0, 1))
    return profile_values(tree, tuple(jnp.asarray(p, tree.terminal_payoff.dtype)
                                      for p in profile), jnp.int32(player))
  if callable(baseline):
    values = baseline(jnp.arange(tree.num_histories, dtype=jnp.int32))
  else:
    values = baseline
  values = jnp.asarray(values, tree.terminal_payoff.dtype)
  if values.shape != (tree.num_histories,):
    raise ValueError(f"a value function gives one value per history: shape "
                     f"({tree.num_histories},), got {values.shape}")
  if not bool(jnp.all(jnp.isfinite(values))):
    raise ValueError("the value function returned non-finite values")
  return values


def view_known_chance(compiled: CompiledGame, player: int) -> np.ndarray:
  """``[H]`` bool: chance nodes whose outcome probabilities player ``player`` knows from its own
  view (equal at every history it cannot tell apart), e.g. Leduc's deal of player 0's card but
  not the public card, whose probabilities depend on the opponent's hidden card."""
  def build():
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
  return compiled.cached(("importance.view_known_chance", player), build)


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
  return jnp.where(den[view] > 0, num[view] / jnp.where(den[view] > 0, den[view], 1.0),
                   mean[view])


def estimator_table(compiled: CompiledGame, policy, *, player: int, logged_policy=None,
                    estimator: str = "basic", baseline=None, baseline_policy=None,
                    partial_information: bool = False) -> TerminalEstimates:
  """:func:`terminal_estimates` from host arguments, checked before anything is traced.

  ``partial_information=True`` with ``aivat``: the partial-information variant,
  unbiased on logs that hide outcomes of which the evaluated player saw nothing
  (the opponent's cards after a fold). Every term is a function of player
  ``i``'s own view, so all completions of a hidden outcome get the same value:
  basic importance weights (Sec. 3, Example 1; the all-cards and early-folds
  weights involve the hidden card's chance probability), control variates at
  ``i``'s decisions and at the chance events whose probabilities ``i`` knows
  (:func:`view_known_chance`), with the value function averaged over what ``i``
  cannot tell apart (:func:`view_values`, weighted by the baseline profile's
  reach). Each control variate still has mean zero under the evaluated profile.
  """
  if player not in (0, 1):
    raise ValueError(f"player must be 0 or 1, got {player!r}")
  check_choice("estimator", estimator, ESTIMATORS)
  target = _strategy(compiled, player, policy, "policy")
  logged = target if logged_policy is None else _strategy(compiled, player, logged_policy,
                                                          "logged policy")
  if estimator == "aivat" and (baseline is None or (isinstance(baseline, str)
                                                     and baseline == "none")):
    raise ValueError("aivat needs a value function: baseline 'bc', 'exact', a callable or values")
  reference = policy if baseline_policy is None else baseline_policy
  values = baseline_values(compiled, baseline, player, policy=reference)
  tree = compiled.device_tree(default_dtype())
  classes = opponent_classes(compiled, player)
  dtype = tree.terminal_payoff.dtype
  if values is None:
    values = jnp.zeros(tree.num_histories, dtype)  # zero control variates
  flags = ESTIMATOR_FLAGS[estimator]
  known = np.ones(tree.num_histories, bool)
  if partial_information and estimator == "aivat":
    flags = (False, False, True)
    known = view_known_chance(compiled, player)
    profile = (bet_call_profile(compiled) if isinstance(baseline, str) and baseline == "bc"
               else reference if isinstance(baseline, str) else None)
    weights = None
    if profile is not None:
      p0, p1 = (jnp.asarray(_strategy(compiled, p, profile, "baseline profile"), dtype)
                for p in (0, 1))
      weights = _reach(tree, p0, p1)
    values = view_values(compiled, values, player, weights)
  return terminal_estimates(tree, jnp.asarray(classes), jnp.asarray(target, dtype),
                            jnp.asarray(logged, dtype), values, jnp.int32(player),
                            *(jnp.bool_(f) for f in flags), jnp.asarray(known))


def _failing_step(compiled: CompiledGame, history) -> tuple[int, str]:
  """(step, reason) of the first illegal step of ``history`` (host; error messages only)."""
  tree = compiled.tree
  frontier = {0}
  for t, a in enumerate(history):
    nxt = set()
    for h in frontier:
      if a is None:
        if tree.player[h] != CHANCE:
          continue
        nxt |= {int(c) for c in tree.children[h] if c >= 0}
      elif 0 <= a < tree.children.shape[1] and tree.children[h, a] >= 0:
        nxt.add(int(tree.children[h, a]))
    if not nxt:
      h = min(frontier)
      if tree.history_terminal[h] >= 0:
        return t, "the game is already over"
      if a is None:
        return t, "null (unobserved) stands only for chance outcomes, not a player's action"
      kind = "chance outcome" if tree.player[h] == CHANCE else f"action of player {tree.player[h]}"
      return t, f"{kind} {a} is illegal there"
    frontier = nxt
  return len(history), "ok"


def _logged_zero_step(compiled: CompiledGame, history, player, logged) -> str:
  tree = compiled.tree
  h = 0
  for t, a in enumerate(history):
    if a is None:
      return f"step {t}"
    if tree.player[h] == player and logged[tree.infostate[h], a] <= 0:
      key = compiled.infostate_keys[player][tree.infostate[h]]
      return f"step {t} (action {a} at information state {key!r})"
    h = int(tree.children[h, a])
  return "a step of it"


@dataclasses.dataclass(frozen=True)
class Located:
  """Logged episodes mapped onto the compiled tree (:func:`locate_episodes`)."""

  terminal: np.ndarray  # [B, K] int terminal of each completion (NO_INDEX: unused slot)
  # [B, K] chance probability of each completion's unobserved outcomes (0: unused, or ruled out
  # by the logged returns)
  weight: np.ndarray
  histories: Any  # what was located (for error messages)
  episodes: Any  # the Episode records, or None


def locate_episodes(compiled: CompiledGame, histories, returns=None, *, episodes=None) -> Located:
  """Maps episodes to terminals (with every completion of unobserved chance outcomes).

  ``histories``: action-id sequences (``None`` = unobserved chance outcome),
  or an encoded ``[B, L]`` int array (:func:`encode_histories`,
  :func:`sample_episodes`); ``returns [B, 2]`` the logged returns
  (completions whose payoff differs are dropped; ``None``: not checked).
  Illegal or truncated histories and returns that no completion matches raise
  ``ValueError`` naming the line (``episodes[b].line``) or the episode.
  """
  tree = compiled.device_tree(default_dtype())
  name = (lambda b: _line(episodes[b], b)) if episodes is not None else (lambda b: f"episode {b}")
  if isinstance(histories, np.ndarray):
    actions = np.asarray(histories, np.int32)
    lengths = (actions != PADDING).sum(axis=1)
  else:
    actions, lengths = encode_histories(histories, tree.max_depth)
  show = (lambda b: [None if a == UNOBSERVED else int(a) for a in actions[b]
                     if a != PADDING])
  if actions.shape[1] > tree.max_depth:
    b = int(np.argmax(lengths))
    raise ValueError(f"{name(b)}: history has {lengths[b]} steps, longer than any history of "
                     f"{compiled.name} ({tree.max_depth}): a log for another game?")
  C = tree.children.shape[1]
  if np.any(actions >= C):
    b = int(np.argwhere(actions >= C)[0, 0])
    t, why = _failing_step(compiled, show(b))
    raise ValueError(f"{name(b)}: step {t}: {why} (history {show(b)})")
  nulls = (actions == UNOBSERVED).sum(axis=1)
  most = int(nulls.max(initial=0))
  if C ** most > MAX_COMPLETIONS:
    b = int(np.argmax(nulls))
    raise ValueError(f"{name(b)}: {most} unobserved outcomes have up to {C ** most} "
                     f"completions, more than {MAX_COMPLETIONS}")
  Kmax = C ** most
  terminal = np.full((len(actions), Kmax), NO_INDEX, np.int64)
  weight = np.zeros((len(actions), Kmax))
  payoff0 = np.asarray(compiled.tree.terminal_payoff, np.float64)
  for idx, K in [(np.flatnonzero(nulls == 0), 1), (np.flatnonzero(nulls > 0), Kmax)]:
    if idx.size == 0:
      continue
    term, w, fail, open_ = _locate_chunked(tree, actions[idx], K)
    if np.any(fail >= 0):
      b = int(idx[np.argmax(fail >= 0)])
      t, why = _failing_step(compiled, show(b))
      raise ValueError(f"{name(b)}: step {t}: {why} (history {show(b)})")
    if np.any(open_):
      b = int(idx[np.argmax(open_)])
      raise ValueError(f"{name(b)}: history {show(b)} ends before the game does (truncated)")
    used = term >= 0
    if returns is not None:
      got = np.asarray(returns, np.float64)[idx, 0][:, None]
      match = np.abs(payoff0[np.maximum(term, 0)] - got) <= 1e-6 * np.maximum(1.0, np.abs(got))
      no_match = ~np.any(used & match, axis=1)
      if np.any(no_match):
        b = int(idx[np.argmax(no_match)])
        raise ValueError(f"{name(b)}: logged returns {list(np.asarray(returns[b]).tolist())} are "
                         f"not the payoff of history {show(b)} in {compiled.name}: a log for "
                         f"another game?")
      used = used & match
    terminal[idx, :K] = np.where(used, term, NO_INDEX)
    weight[idx, :K] = np.where(used, w, 0.0)
  return Located(terminal=terminal, weight=weight, histories=actions, episodes=episodes)


def episode_values(compiled: CompiledGame, table: TerminalEstimates, histories, returns=None, *,
                   player: int, logged=None, episodes=None) -> np.ndarray:
  """``[B]`` per-episode estimates: the table at each episode's terminal, averaged over the
  completions of unobserved outcomes by their chance probability (partial information).

  ``histories`` as :func:`locate_episodes` takes them, or a :class:`Located`
  (locate once, estimate many). An episode the logging strategy could not have
  played (``logged [I_i, A]`` names the step) raises ``ValueError``.
  """
  loc = histories if isinstance(histories, Located) else locate_episodes(
      compiled, histories, returns, episodes=episodes)
  name = ((lambda b: _line(loc.episodes[b], b)) if loc.episodes is not None
          else (lambda b: f"episode {b}"))
  tz = np.maximum(loc.terminal, 0)
  reach = np.asarray(table.logged_reach)[tz]
  q = np.where((loc.terminal >= 0) & (reach > 0), loc.weight, 0.0)
  zero = ~np.any(q > 0, axis=1)
  if np.any(zero):
    b = int(np.argmax(zero))
    hist = [None if a == UNOBSERVED else int(a) for a in loc.histories[b] if a != PADDING]
    where = (_logged_zero_step(compiled, hist, player, logged) if logged is not None
             else "a step of it")
    raise ValueError(f"{name(b)}: the logging strategy gives probability 0 to {where}: this "
                     f"episode cannot have been played by it (wrong --logged-policy?)")
  return (q * np.asarray(table.value)[tz]).sum(1) / q.sum(1)


def summarize(values: np.ndarray, estimator: str, baseline: str = "none") -> Estimate:
  """Mean, standard error and normal 95% interval of per-episode values."""
  values = np.asarray(values, np.float64)
  n = values.size
  if n < 2:
    raise ValueError(f"a standard error needs at least 2 episodes, got {n}")
  mean = float(values.mean())
  stderr = float(values.std(ddof=1) / math.sqrt(n))
  return Estimate(estimate=mean, stderr=stderr, ci95=(mean - Z95 * stderr, mean + Z95 * stderr),
                  episodes=n, estimator=estimator, baseline=baseline, values=values)


def partial_information_unbiased(estimator: str, baseline, on_policy: bool) -> bool:
  """Whether the partial-information variant of ``estimator`` keeps the unbiased guarantee.

  Bowling et al. 2008, Sec. 3.1 and Table 3: ``basic`` without a baseline
  (every completion of a hidden outcome has the same ``u_i`` and ``pi_i``) and,
  on-policy, ``all-cards`` without one when the hidden outcomes do not change
  the payoff (poker folds: its value there is ``u_i`` for every completion);
  ``aivat``, whose partial-information variant uses player ``i``'s view only
  (:func:`estimator_table`). The rest is biased: baselines and ``early-folds``'
  showdown calls depend on the unseen outcome.
  """
  if estimator == "aivat":
    return True
  none = baseline is None or (isinstance(baseline, str) and baseline == "none")
  return none and (estimator == "basic" or (estimator == "all-cards" and on_policy))


def estimate_episodes(compiled: CompiledGame, episodes, policy, *, player,
                      logged_policy=None, estimator: str = "basic",
                      baseline: Union[None, str, Callable, Any] = None, baseline_policy=None,
                      partial_information: Optional[bool] = None) -> Estimate:
  """Estimates the value of ``policy`` from logged ``episodes``, seat by seat.

  ``episodes``: :class:`~jaxgt.evaluation.episode_log.Episode` records (their
  ``game`` must be ``compiled``'s) or plain action-id histories.
  ``player``: the seat ``policy`` is evaluated in, one for all episodes or one
  per episode (``[B]``, e.g. a match agent's seat read from the log's
  ``"seats"`` field): each episode is estimated in its own seat and the
  estimate is the mean over all of them (for a log whose seats alternate, the
  value of a match played half in each seat).
  ``logged_policy``: who played that seat in the log (default ``policy``,
  on-policy). ``baseline``: ``None``/``"none"``, ``"bc"``, ``"exact"`` (values
  of ``baseline_policy``, default ``policy``), a callable on ``[H]`` history ids
  or a ``[H]`` array.

  ``partial_information`` (AIVAT only): use the partial-information variant of
  :func:`estimator_table` on every episode. Default: when some episode hides
  a chance outcome (``null``); the full-information AIVAT averaged over the
  completions of hidden outcomes is biased (its control variates depend on
  them), so ``False`` on such a log is only for measuring that bias.
  """
  if len(episodes) == 0:
    raise ValueError("no episodes to estimate from")
  seats = np.asarray(player)
  if seats.ndim == 0:
    seats = np.full(len(episodes), seats)
  if seats.shape != (len(episodes),) or not np.isin(seats, (0, 1)).all():
    raise ValueError(f"player must be 0 or 1, or one seat (0 or 1) per episode "
                     f"({len(episodes)}), got {player!r}")
  recorded = hasattr(episodes[0], "history")
  if recorded:
    check_log_game(compiled, episodes)
  histories = [e.history for e in episodes] if recorded else [tuple(h) for h in episodes]
  returns = [e.returns for e in episodes] if recorded else None
  if partial_information is None:
    partial_information = any(None in h for h in histories)
  values = np.zeros(len(episodes))
  for seat in np.unique(seats):
    rows = np.flatnonzero(seats == seat)
    seat = int(seat)
    table = estimator_table(compiled, policy, player=seat, logged_policy=logged_policy,
                            estimator=estimator, baseline=baseline,
                            baseline_policy=baseline_policy,
                            partial_information=partial_information)
    logged = _strategy(compiled, seat, logged_policy if logged_policy is not None else policy,
                       "logged policy")
    values[rows] = episode_values(
        compiled, table, [histories[b] for b in rows],
        None if returns is None else [returns[b] for b in rows], player=seat, logged=logged,
        episodes=[episodes[b] for b in rows] if recorded else None)
  name = baseline if isinstance(baseline, str) else ("none" if baseline is None else "custom")
  return summarize(values, estimator, name)


def check_log_game(compiled: CompiledGame, episodes) -> None:
  """Raises ``ValueError`` unless the log's game string names ``compiled``'s game."""
  game = episodes[0].game
  if game == compiled.name:
    return
  from jaxgt.core.compiler import load
  try:
    other = load(game)
  except Exception as e:  # an unknown or malformed game string
    raise ValueError(f"log is for game {game!r}, which jaxgt cannot load ({e})") from None
  if other.fingerprint != compiled.fingerprint:
    raise ValueError(f"log is for game {other.name}, the policy for {compiled.name}")


# ------------------------------------------------------------------------ exact moments
def terminal_reach(compiled: CompiledGame, profile) -> np.ndarray:
  """``[T]`` probability of reaching each terminal when both players follow ``profile``
  ``(sigma0 [I0, A], sigma1 [I1, A])`` (chance included): the distribution of a log's
  terminals, for experiments in which every strategy is known."""
  tree = compiled.device_tree(default_dtype())
  dtype = tree.terminal_payoff.dtype
  p0, p1 = (jnp.asarray(_strategy(compiled, p, profile, "profile"), dtype) for p in (0, 1))
  return np.asarray(_reach(tree, p0, p1)[tree.terminal_history])


@jax.jit
def _reach(tree: GameTree, sigma0: jax.Array, sigma1: jax.Array) -> jax.Array:
  """``[H]`` reach of each history under ``(sigma0 [I0, A], sigma1 [I1, A])`` and chance."""
  edge = _chance_edge(tree) * _edge_probs(tree, 0, sigma0) * _edge_probs(tree, 1, sigma1)
  return _forward(tree, edge, product=True)


def terminal_episodes(compiled: CompiledGame) -> np.ndarray:
  """``[T, D]`` encoded episodes (:data:`PADDING` past the end), one ending in each terminal."""
  from jaxgt.evaluation.referee import action_paths
  paths = action_paths(compiled.tree, np.asarray(compiled.tree.terminal_history))
  return encode_histories(paths, compiled.tree.max_depth)[0]


def exact_moments(values, reach) -> tuple[float, float]:
  """``(mean, std)`` of a per-episode estimate that is a function of the terminal reached.

  ``values [T]``: the estimate an episode ending in each terminal contributes
  (``TerminalEstimates.value``; with partial information :func:`episode_values`
  of :func:`partial_view` of :func:`terminal_episodes`, which is a function of
  the terminal too); ``reach [T]``: the logging profile's terminal distribution
  (:func:`terminal_reach`). Exact: no sampling noise, which with heavy-tailed
  importance weights can put a sample standard deviation far from the true one.
  """
  values, reach = np.asarray(values, np.float64), np.asarray(reach, np.float64)
  mean = float(reach @ values)
  return mean, math.sqrt(max(float(reach @ (values - mean) ** 2), 0.0))


# ------------------------------------------------------------------------ producing logs
def sample_episodes(compiled: CompiledGame, profile, num: int, key) -> tuple[np.ndarray, np.ndarray]:
  """``num`` episodes of ``profile`` (``(sigma0, sigma1)``) through the trajectory walker.

  Returns encoded histories ``[num, D]`` (:data:`PADDING` past the end) and
  returns ``[num, 2]``; ``key`` a JAX key (explicit randomness).
  """
  tree = compiled.device_tree(default_dtype())
  dtype = tree.terminal_payoff.dtype
  table = infostate_rows(tuple(jnp.asarray(p, dtype) for p in profile), tree.player,
                         tree.infostate)
  uniforms = rng.uniform(key, (tree.max_depth, num), dtype)
  traj = walk_tables(tree, table, table, uniforms)
  actions = jnp.where(traj.history >= 0, traj.action, PADDING).T
  u0 = traj.payoff(tree)
  return np.asarray(actions, np.int32), np.asarray(jnp.stack([u0, -u0], axis=1))


def random_profile(compiled: CompiledGame, seed: int, floor: float = 0.05) -> tuple:
  """A random full-support profile ``(sigma0, sigma1)``: every legal action gets at least
  ``floor / (A + A * floor)`` (logging strategies of experiments need full support, Theorem 1)."""
  rng = np.random.default_rng(seed)
  out = []
  for pt in compiled.tree.players:
    legal = np.asarray(pt.legal)
    x = (rng.gamma(1.0, size=legal.shape) + floor) * legal
    out.append(x / x.sum(1, keepdims=True))
  return tuple(out)


def partial_view(compiled: CompiledGame, actions: np.ndarray, player: int) -> np.ndarray:
  """What ``player`` sees of encoded episodes: a chance outcome ``player`` does not observe
  becomes :data:`UNOBSERVED` when the episode ends without revealing it.

  "Does not observe": every outcome of that chance node leads to the same
  augmented information state of ``player`` (poker: the opponent's cards).
  "Ends without revealing": every terminal of the final public state has the
  same payoff, so nothing private decided it (poker: a fold, not a showdown).
  The partial-information setting of Bowling et al. 2008, Sec. 2.2 and 5.2;
  it satisfies the conditions put on the observation map there (equal ``V``
  and ``pi_i`` across what it merges).
  """
  tree = compiled.tree
  aug = compiled.aug[player]
  children = np.asarray(tree.children)
  chance = np.asarray(tree.player) == CHANCE
  kids = np.where(children >= 0, aug[np.maximum(children, 0)], -1)
  valid = children >= 0
  first = np.where(valid.any(1), kids[np.arange(len(kids)), np.argmax(valid, 1)], -1)
  unseen = chance & np.all(~valid | (kids == first[:, None]), axis=1)  # [H]
  public = np.asarray(tree.history_public)[np.asarray(tree.terminal_history)]
  payoff = np.asarray(tree.terminal_payoff, np.float64)
  hi = np.full(tree.num_public_states, -np.inf)
  lo = np.full(tree.num_public_states, np.inf)
  np.maximum.at(hi, public, payoff)
  np.minimum.at(lo, public, payoff)
  quiet = hi[public] - lo[public] <= 1e-9  # [T] payoff fixed by the public state alone
  out = np.asarray(actions, np.int32).copy()
  B, L = out.shape
  h = np.zeros(B, np.int64)
  hide = np.zeros((B, L), bool)
  for t in range(L):
    step = out[:, t] != PADDING
    hide[:, t] = step & unseen[h]
    h = np.where(step, children[h, np.maximum(out[:, t], 0)], h)
  end = np.asarray(tree.history_terminal)[h]
  hide &= (quiet[np.maximum(end, 0)] & (end >= 0))[:, None]
  return np.where(hide, UNOBSERVED, out)
