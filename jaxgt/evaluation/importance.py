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
strategies, ``V_U`` is a fixed function of the terminal reached, computed
**once per terminal** on the compiled tree (:mod:`~jaxgt.evaluation.estimators`);
estimating a log is then locating each episode's terminal through the tree's
transition arrays (:mod:`~jaxgt.evaluation.episode_paths`) and a gather, jitted
over all episodes at once. This module holds the host entry points.

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

**Baselines** (:mod:`~jaxgt.evaluation.baselines`; Sec. 3, last paragraph: "replace V
with any unbiased estimate of V"):
``V(z) = u_i(z) - sum over the chance events on z of [v(h a) - E_a' v(h a')]``
(the DIVAT form of Zinkevich et al. 2006; zero-mean for any ``v``), with
``v`` the exact values of a reference profile on jaxgt's tree: ``bc`` the
bet-call profile (BC-DIVAT, :func:`bet_call_profile`), ``exact`` a given
profile (e.g. a CFR+ solution), or any callable/array of history values (a
network). All estimators stay unbiased with any baseline (Theorem 1) as long as
``sigma-hat_i`` puts positive probability wherever ``sigma_i`` does.

**Partial information**: a log may hold ``null`` for chance outcomes the
logging side did not see (the opponent's cards after a fold), the off-policy
partial-information setting of Sec. 2.2 (samples of a many-to-one view ``K(z)``
that keeps ``V`` and ``pi_i``). The recipe used here is jaxgt's own: an
episode's estimate is the full-information one averaged over the completions
consistent with the log (its actions and its returns), weighted by their
chance probability. The paper gives other adaptations: Sec. 3.1 counts a
synthetic ``z'`` whenever the hidden terminal could lie in ``U(z')``, with the
weight term unchanged, and Sec. 5.2 runs (BC-)DIVAT only on hands whose
outcome is known, using the winnings otherwise; it proves no guarantee for
them and measures their bias (Table 3). Ours is exact for ``basic`` without a
baseline (every completion has the same ``u_i`` and ``pi_i``) and, on-policy,
for ``all-cards`` without one when the hidden outcomes do not change the
payoff (folds). Everything else is biased: control variates (baselines,
AIVAT) and the showdown calls of ``early-folds`` depend on the unseen outcome,
and the completion weights cannot follow the opponent's actions, which depend
on it too (its strategy is unknown). The Leduc example measures these biases.
AIVAT also has an unbiased partial-information variant built from player
``i``'s view only (``estimator_table(..., partial_information=True)``, used by
:func:`estimate_episodes` on logs with hidden outcomes); on Leduc it keeps
only a small part of AIVAT's variance reduction.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Callable, Optional, Union

import jax.numpy as jnp
import numpy as np

from jaxgt.core import rng
from jaxgt.core.checks import check_choice, check_key
from jaxgt.core.game_tree import CompiledGame
from jaxgt.core.dtypes import default_dtype
from jaxgt.core.tables import infostate_rows
from jaxgt.evaluation.baselines import (BASELINES, baseline_profile, baseline_values,  # noqa: F401
                                        bet_call_profile, is_none, player_strategy,
                                        view_known_chance, view_values)
from jaxgt.evaluation.episode_paths import (PADDING, UNOBSERVED, Located,  # noqa: F401
                                            check_log_game, episode_name, locate_episodes,
                                            logged_zero_step, partial_view, terminal_episodes)
from jaxgt.evaluation.estimators import (ESTIMATOR_FLAGS, ESTIMATORS,  # noqa: F401
                                         TerminalEstimates, history_reach, opponent_classes,
                                         terminal_estimates)
from jaxgt.solvers.walk import walk_tables

Z95 = 1.959963984540054
"""Two-sided 95% normal quantile."""


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
  target = player_strategy(compiled, player, policy, "policy")
  logged = target if logged_policy is None else player_strategy(compiled, player, logged_policy,
                                                                "logged policy")
  if estimator == "aivat" and is_none(baseline):
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
    profile = baseline_profile(compiled, baseline, reference)
    weights = None if profile is None else history_reach(
        tree, *(jnp.asarray(p, dtype) for p in profile))
    values = view_values(compiled, values, player, weights)
  return terminal_estimates(tree, jnp.asarray(classes), jnp.asarray(target, dtype),
                            jnp.asarray(logged, dtype), values, jnp.int32(player),
                            *(jnp.bool_(f) for f in flags), jnp.asarray(known))



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
  name = ((lambda b: episode_name(loc.episodes[b], b)) if loc.episodes is not None
          else (lambda b: f"episode {b}"))
  tz = np.maximum(loc.terminal, 0)
  reach = np.asarray(table.logged_reach)[tz]
  q = np.where((loc.terminal >= 0) & (reach > 0), loc.weight, 0.0)
  zero = ~np.any(q > 0, axis=1)
  if np.any(zero):
    b = int(np.argmax(zero))
    hist = [None if a == UNOBSERVED else int(a) for a in loc.histories[b] if a != PADDING]
    where = (logged_zero_step(compiled, hist, player, logged) if logged is not None
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

  For jaxgt's recipe (completions averaged by chance probability, module docstring; the
  paper's own adaptations, Sec. 3.1 and 5.2, are biased, Table 3): ``basic`` without a baseline
  (every completion of a hidden outcome has the same ``u_i`` and ``pi_i``) and,
  on-policy, ``all-cards`` without one when the hidden outcomes do not change
  the payoff (poker folds: its value there is ``u_i`` for every completion);
  ``aivat``, whose partial-information variant uses player ``i``'s view only
  (:func:`estimator_table`). The rest is biased: baselines and ``early-folds``'
  showdown calls depend on the unseen outcome.
  """
  if estimator == "aivat":
    return True
  return is_none(baseline) and (estimator == "basic" or (estimator == "all-cards" and on_policy))


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
    logged = player_strategy(compiled, seat, logged_policy if logged_policy is not None else policy,
                       "logged policy")
    values[rows] = episode_values(
        compiled, table, [histories[b] for b in rows],
        None if returns is None else [returns[b] for b in rows], player=seat, logged=logged,
        episodes=[episodes[b] for b in rows] if recorded else None)
  name = baseline if isinstance(baseline, str) else ("none" if baseline is None else "custom")
  return summarize(values, estimator, name)



def terminal_reach(compiled: CompiledGame, profile) -> np.ndarray:
  """``[T]`` probability of reaching each terminal when both players follow ``profile``
  ``(sigma0 [I0, A], sigma1 [I1, A])`` (chance included): the distribution of a log's
  terminals, for experiments in which every strategy is known."""
  tree = compiled.device_tree(default_dtype())
  dtype = tree.terminal_payoff.dtype
  p0, p1 = (jnp.asarray(player_strategy(compiled, p, profile, "profile"), dtype) for p in (0, 1))
  return np.asarray(history_reach(tree, p0, p1)[tree.terminal_history])



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



def sample_episodes(compiled: CompiledGame, profile, num: int,
                    key) -> tuple[np.ndarray, np.ndarray]:
  """``num`` episodes of ``profile`` (``(sigma0, sigma1)``) through the trajectory walker.

  Returns encoded histories ``[num, D]`` (:data:`PADDING` past the end) and
  returns ``[num, 2]``; ``key`` a JAX key (explicit randomness).
  """
  tree = compiled.device_tree(default_dtype())
  dtype = tree.terminal_payoff.dtype
  table = infostate_rows(tuple(jnp.asarray(p, dtype) for p in profile), tree.player,
                         tree.infostate)
  uniforms = rng.uniform(check_key(key), (tree.max_depth, num), dtype)
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

