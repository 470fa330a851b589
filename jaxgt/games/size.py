"""How large a game is, told before enumerating it.

Enumeration is the one host stage whose cost grows with the game; a game far
over the history limit should be refused in seconds, not after minutes of
counting. Two sources of size information are used:

* the game's own **bounds** where it states them (OpenSpiel:
  ``max_game_length``, ``num_distinct_actions``, ``max_chance_outcomes``,
  ``max_chance_nodes_in_history``), which give an *upper* bound
  ``sum_d b^d`` on the number of histories; a game whose upper bound is within
  the limit is never estimated;
* **Knuth's random-path estimator** (Knuth 1975, "Estimating the efficiency
  of backtrack programs"): along a path that picks a uniformly random child at
  every history, ``sum_d prod_{i<d} b_i`` (``b_i`` the branching factor at
  depth ``i``) is an unbiased estimate of the number of histories. Its
  distribution is right-skewed, so the median of group means of many paths
  tends to *under*-estimate, which is the safe side for a refusal; a game is
  refused only when that estimate exceeds the limit by :data:`REFUSE_FACTOR`,
  otherwise the exact count (with its own limit) decides.

Only the :class:`~jaxgt.games.base.Game` interface is used, so the estimate
applies to native and imported games alike.
"""

from __future__ import annotations

import dataclasses
import math
import random
import time
from typing import Any

from jaxgt.games.base import CHANCE, TERMINAL

REFUSE_FACTOR = 3.0
"""A game is refused early when its estimate exceeds the limit by this factor."""
EARLY_MIN_LIMIT = 200_000
"""Below this limit the exact count is quick (seconds) and decides alone."""


class GameTooLargeError(ValueError):
  """A game has (or is estimated to have) more histories than the limit allows.

  Besides the message, the fields say why, for callers that word their own advice (the
  command line names its ``--max-histories`` flag): ``game`` (its string), ``limit`` (the
  ``max_histories`` it was held to), ``counted`` (histories counted before enumeration
  stopped, or ``None``), ``log10_histories`` (the random-path estimate that refused it, or
  ``None``) with ``detail`` (how it was estimated, and the bounds the game states), and
  ``memory_bytes``/``available_bytes`` when memory, not the count, was over (the estimate's,
  or, with ``counted``, the histories counted before enumeration stopped).
  """

  def __init__(self, message: str, *, game: str | None = None, limit: int | None = None,
               counted: int | None = None, log10_histories: float | None = None,
               detail: str | None = None, memory_bytes: float | None = None,
               available_bytes: float | None = None):
    super().__init__(message)
    self.game, self.limit, self.counted = game, limit, counted
    self.log10_histories, self.detail = log10_histories, detail
    self.memory_bytes, self.available_bytes = memory_bytes, available_bytes


@dataclasses.dataclass(frozen=True)
class SizeEstimate:
  """A random-path estimate of a game's number of histories."""

  log10_histories: float  # log10 of the median-of-means estimate
  paths: int  # random root-to-terminal paths walked
  longest_path: int  # most actions on one path
  truncated: bool  # a path stopped at max_depth or the time budget (the estimate is then low)
  seconds: float  # time spent walking

  @property
  def histories(self) -> float:
    return 10.0 ** min(self.log10_histories, 300.0)


def format_count(log10_n: float) -> str:
  """A count given as its log10: ``"12,345"`` below a billion, ``"10^312.4"`` above."""
  if log10_n < 9:
    return f"{10 ** log10_n:,.0f}"
  return f"10^{log10_n:.1f}"


def _log10_sum(logs) -> float:
  m = max(logs)
  return m + math.log10(sum(10.0 ** (x - m) for x in logs))


def estimate_histories(game, *, paths: int = 256, seed: int = 0, max_depth: int = 100_000,
                       seconds: float = 10.0) -> SizeEstimate:
  """Knuth's estimate of the number of histories of ``game`` (module doc).

  Walks ``paths`` random paths (uniform over legal actions and chance
  outcomes alike: the estimate counts histories, it does not weigh them).
  A history with no legal actions or outcomes ends its path (enumeration
  reports the defect). Stops early after ``seconds``; the estimate then
  covers the paths walked.
  """
  rng = random.Random(seed)
  t0 = time.perf_counter()
  per_path, longest, truncated = [], 0, False
  for _ in range(paths):
    s = game.initial_state()
    log_prod, terms, depth = 0.0, [0.0], 0
    while True:
      p = game.current_player(s)
      if p == TERMINAL:
        break
      moves = ([a for a, _ in game.chance_outcomes(s)] if p == CHANCE
               else list(game.legal_actions(s)))
      if not moves:
        break
      if depth >= max_depth:
        truncated = True
        break
      log_prod += math.log10(len(moves))
      terms.append(log_prod)
      s = game.next_state(s, moves[rng.randrange(len(moves))])
      depth += 1
    per_path.append(_log10_sum(terms))
    longest = max(longest, depth)
    if time.perf_counter() - t0 > seconds:
      truncated = truncated or len(per_path) < paths
      break
  group = max(1, len(per_path) // 8)
  means = sorted(_log10_sum(per_path[i:i + group]) - math.log10(len(per_path[i:i + group]))
                 for i in range(0, len(per_path), group))
  return SizeEstimate(log10_histories=means[len(means) // 2], paths=len(per_path),
                      longest_path=longest, truncated=truncated,
                      seconds=time.perf_counter() - t0)


def openspiel_bounds(os_game: Any) -> dict:
  """The size bounds an OpenSpiel game states, and the history upper bound they give.

  Returns ``{}`` when the game states none. ``log10_max_histories`` bounds
  ``sum_d b^d`` over ``D = moves + chance nodes`` levels (moves count twice
  for a simultaneous game, played in turn) with ``b`` the larger of the
  action count and the chance outcome count.
  """
  try:
    moves = int(os_game.max_game_length())
    actions = int(os_game.num_distinct_actions())
    outcomes = int(os_game.max_chance_outcomes())
    chance_nodes = int(os_game.max_chance_nodes_in_history())
    simultaneous = str(os_game.get_type().dynamics).endswith("SIMULTANEOUS")
  except Exception:  # a game that states no bounds (or cannot compute them)
    return {}
  depth = moves * (2 if simultaneous else 1) + chance_nodes
  b = max(actions, outcomes, 1)
  log10_max = (depth + 1) * math.log10(b) if b > 1 else math.log10(depth + 1)
  return {"max_game_length": moves, "num_distinct_actions": actions,
          "max_chance_outcomes": outcomes, "max_chance_nodes_in_history": chance_nodes,
          "log10_max_histories": log10_max}


def refuse_if_too_large(game, max_histories: int, *, bounds: dict | None = None,
                        factor: float = REFUSE_FACTOR, **estimate_kw) -> SizeEstimate | None:
  """Raises :class:`GameTooLargeError` when ``game`` is clearly over ``max_histories``.

  ``bounds`` (e.g. :func:`openspiel_bounds`) may show the game is within the
  limit, and then nothing is walked (returns ``None``); so is a limit under
  :data:`EARLY_MIN_LIMIT`, where counting is quick. Otherwise the
  estimate is returned when it is not more than ``factor`` times the limit;
  the message of a refusal gives the estimate, the bounds and how far over
  the limit the game is.
  """
  bounds = bounds or {}
  if max_histories < EARLY_MIN_LIMIT:
    return None
  log_limit = math.log10(max(int(max_histories), 1))
  if "log10_max_histories" in bounds and bounds["log10_max_histories"] <= log_limit:
    return None
  est = estimate_histories(game, **estimate_kw)
  if est.log10_histories <= log_limit + math.log10(factor):
    return est
  stated = ""
  if bounds:
    stated = (f"; its bounds: at most {bounds['max_game_length']} moves, "
              f"{bounds['num_distinct_actions']} distinct actions, "
              f"{bounds['max_chance_outcomes']} chance outcomes, "
              f"at most {format_count(bounds['log10_max_histories'])} histories")
  over = est.log10_histories - log_limit
  times = f"{10 ** over:,.1f}" if over < 6 else format_count(over)
  name = game.game_string() if hasattr(game, "game_string") else getattr(game, "name", "game")
  detail = (f"estimated from {est.paths} random paths of up to {est.longest_path} actions in "
            f"{est.seconds:.1f}s{stated}")
  raise GameTooLargeError(
      f"{name}: about {format_count(est.log10_histories)} histories ({detail}), {times} times "
      f"the limit max_histories={max_histories}; refused before enumerating. Pass "
      "max_histories=... to raise the limit",
      game=name, limit=int(max_histories), log10_histories=est.log10_histories, detail=detail)
