"""Head-to-head matches between online agents, many at once (Lisý, Lanctot and Bowling,
"Online Monte Carlo Counterfactual Regret Minimization for Search in Imperfect Information
Games", 2015, Sec. 5).

``play(game, agent0, agent1, num_matches, key)`` runs ``num_matches``
independent matches as one jitted program through the referee
(:mod:`jaxgt.evaluation.referee`): chance outcomes are sampled from
``chance_probs`` (or the game's chance sampler) and each agent's ``act`` chooses at its
player's histories
(actions sampled from the returned probabilities); only the acting agent's
``act`` runs, batched over the matches waiting on it. With
``swap_seats`` agent0 plays player 1 in every odd-numbered match, so half the
matches are played from each seat. Payoffs are reported from agent0's view.

Agents must be traceable (see :mod:`jaxgt.agents.base`): ``history`` is a
traced ``int32`` scalar and the state keeps fixed shapes. This is checked
with ``jax.eval_shape`` before compiling; an agent that cannot be traced
plays through a Python loop over matches instead (same keys, same draws,
slower), with a warning.

``round_robin`` plays every pair (and each agent against itself) and
tabulates mean ± 95% confidence half-width like that paper's head-to-head tables
(row agent's payoff against the column agent).

Keys: match ``m`` uses ``split(key, num_matches)[m]``, split into the two
agents' ``init`` keys and the match key; each node splits the match key into
the acting agent's ``act`` key and the uniform that samples the outcome. With
``duplicate=True`` the chance outcomes of pair ``j`` (matches ``2j``, ``2j + 1``) come from
``split(fold_in(key, DEALS), num_matches // 2)[j]`` instead.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from jaxgt.agents.base import Agent
from jaxgt.core.checks import check_key, check_positive_int
from jaxgt.core.game_tree import CompiledGame
from jaxgt.core.dtypes import resolve_dtype
from jaxgt.core.memory import available_device_memory, gib
from jaxgt.evaluation import referee


@dataclasses.dataclass(frozen=True)
class MatchResult:
  """Outcome of :func:`play`."""

  payoffs: np.ndarray  # [M] float64 agent0's payoff in each match
  seats: np.ndarray  # [M] int32 the player (0 or 1) agent0 played in each match
  mean: float  # sample mean
  stderr: float  # its standard error, std(ddof=1) / sqrt(M)
  ci95: float  # half-width of the normal 95% confidence interval (1.96 * stderr)
  num_matches: int  # M
  traced: bool = True  # whether the matches ran as one jitted program (else a Python loop)
  # the final state of each match: for a compiled game [M] int its terminal history
  # (referee.action_paths gives its actions), for a device game its state pytree [M, ...]
  histories: np.ndarray | None = None
  # [M, L] int32 each match's actions and chance outcomes from the root, -1 after the last
  actions: np.ndarray | None = None
  # per agent, for agents searching over information-state tables: {"rows": [r0, r1],
  # "refused": [f0, f1]}, the most rows in use and refused inserts of each player's table seen
  # after any of its decisions in any match (None for other agents; None when neither has any)
  memory: tuple | None = None
  # duplicate matches: matches 2j and 2j + 1 had the same deals from opposite seats; the
  # intervals are then over the M / 2 pairs' means (the pairs are independent, the matches not)
  paired: bool = False

  @classmethod
  def from_payoffs(cls, payoffs, seats, traced=True, histories=None,
                   actions=None, paired: bool = False) -> "MatchResult":
    x = np.asarray(payoffs, np.float64)
    n = len(x)
    if paired and n % 2:
      raise ValueError(f"duplicate matches come in pairs: got {n} payoffs")
    se = _stderr(_pair_means(x) if paired else x)
    return cls(x, np.asarray(seats, np.int32), float(np.mean(x)), se, 1.96 * se, n, traced,
               histories, actions, paired=paired)

  def episodes(self) -> list[list[int]]:
    """Each match's actions and chance outcomes from the root (the game's action ids)."""
    return [[int(a) for a in row[row >= 0]] for row in np.asarray(self.actions)]

  @property
  def scores(self) -> np.ndarray:
    """``[M]`` agent0's score per match: 1 for a win, 1/2 for a draw (payoff 0), 0 for a loss."""
    return (self.payoffs > 0) + 0.5 * (self.payoffs == 0)

  @property
  def win_rate(self) -> float:
    """Mean score: the fraction of matches agent0 won, a draw counting half."""
    return float(np.mean(self.scores))

  @property
  def win_ci95(self) -> float:
    """Half-width of the normal 95% confidence interval of :attr:`win_rate` (over the pairs'
    mean scores for duplicate matches)."""
    return 1.96 * _stderr(_pair_means(self.scores) if self.paired else self.scores)

  def running(self):
    """``(mean [M], ci95 [M])``: the running mean payoff after each match and its 95% half-width
    (duplicate matches: ``[M / 2]``, after each pair)."""
    x = _pair_means(self.payoffs) if self.paired else self.payoffs
    k = np.arange(1, len(x) + 1)
    mean = np.cumsum(x) / k
    var = np.maximum(np.cumsum(x * x) / k - mean * mean, 0.0) * k / np.maximum(k - 1, 1)
    return mean, np.where(k > 1, 1.96 * np.sqrt(var / k), np.nan)

  def __str__(self) -> str:
    return f"{self.mean:+.4f} ± {self.ci95:.4f} (95% CI, {self.num_matches} matches)"


def _pair_means(x) -> np.ndarray:
  """``[M / 2]`` the means of matches ``2j`` and ``2j + 1``."""
  return np.asarray(x, np.float64).reshape(-1, 2).mean(axis=1)


def _stderr(x) -> float:
  """``std(x, ddof=1) / sqrt(n)`` (NaN for fewer than two samples)."""
  return float(np.std(x, ddof=1) / np.sqrt(len(x))) if len(x) > 1 else float("nan")


def play(game: CompiledGame, agent0: Agent, agent1: Agent, num_matches: int, key: jax.Array,
         *, swap_seats: bool = True, duplicate: bool = False, mode: str = "auto", dtype=None,
         chunk: int | None = None, block: int | None = None, progress=None) -> MatchResult:
  """Plays ``num_matches`` matches of ``agent0`` against ``agent1``; payoffs from agent0's view.

  ``duplicate``: matches ``2j`` and ``2j + 1`` deal the same chance outcomes (the k-th chance
  event of both draws with one uniform, :func:`jaxgt.evaluation.referee.with_deals`) with the
  seats swapped, so the luck of the deal cancels in each pair's mean (duplicate poker); the
  agents' own draws stay independent, the mean is unbiased as before, and its interval is
  computed over the pairs. Needs ``swap_seats`` and an even ``num_matches``.

  ``mode``: ``"auto"`` (jitted when both agents trace, else a Python loop),
  ``"jit"`` (raise if an agent does not trace) or ``"python"``. Raises
  ``ValueError`` for mismatched games, bad arguments, or an agent that puts
  no (finite) probability on any legal action. Each call compiles its own
  program (agents are closed over, save the tables they name in ``array_fields``: see
  :func:`jaxgt.evaluation.referee.array_fields`). ``chunk``: how many waiting matches an
  agent serves per batched decision (default all; see
  :mod:`jaxgt.evaluation.referee`). ``block`` and ``progress(done, total)``:
  run the matches in blocks of ``block`` (one compiled program) and report after each
  (:func:`jaxgt.evaluation.referee.play_matches`; the matches are the same).
  """
  num_matches = referee.check_match_args(game, (("agent0", agent0), ("agent1", agent1)),
                                         num_matches)
  _check_duplicate(duplicate, swap_seats, num_matches)
  key = check_key(key)
  traced = referee.play_mode(game, (agent0, agent1), mode, key)
  chunk = num_matches if chunk is None else check_positive_int("chunk", chunk)
  if traced:
    block = fit_block((agent0, agent1), num_matches, block)
  return _play(game, (agent0, agent1), num_matches, key, swap_seats, traced, resolve_dtype(dtype),
               chunk, block, progress, duplicate)


MEMORY_HEADROOM = 2.0
"""Device memory a compiled match takes, over its agents' search state (``memory_bytes``):
the state, its update and the program's temporaries. II-GS(13) ISMCTS-RM against itself
(360 MiB of tables a match) asked a GPU for 1.54 times its tables."""


def match_memory(agents) -> int:
  """Bytes of search state one match holds: the agents' ``memory_bytes()`` summed (agents
  without it hold none)."""
  return sum(int(a.memory_bytes()) for a in agents if hasattr(a, "memory_bytes"))


def fit_block(agents, num_matches: int, block: int | None = None, *, default: int | None = None,
              available: int | None = None) -> int | None:
  """Matches per run of a compiled match program that fit the device's free memory.

  ``block`` given: returned as it is, or ``ValueError`` where its matches' search state
  (:func:`match_memory`) is more than the free memory. ``block`` None: ``default`` (all
  ``num_matches`` when None), lowered where the matches' state times :data:`MEMORY_HEADROOM`
  does not fit: to as few runs as fit, of even blocks. ``ValueError`` where one match's state
  alone does not fit. ``available``: free bytes (default
  :func:`jaxgt.core.memory.available_device_memory`); where neither it nor the agents' memory
  is known, nothing is lowered.
  """
  num_matches = check_positive_int("num_matches", num_matches)
  if block is not None:
    block = check_positive_int("block", block)
  want = block if block is not None else (num_matches if default is None
                                          else check_positive_int("default", default))
  want = min(want, num_matches)
  per = match_memory(agents)
  free = available_device_memory() if available is None else int(available)
  if per == 0 or free is None:
    return block if block is not None else want
  where = f"the {gib(free)} free on {jax.devices()[0].platform}"
  if per > free:
    raise ValueError(f"one match holds {gib(per)} of search state, more than {where}: "
                     "lower the agents' capacity")
  fit = max(1, int(free // (per * MEMORY_HEADROOM)))
  if block is not None:
    if min(block, num_matches) * per > free:
      raise ValueError(f"a block of {block} matches holds {gib(min(block, num_matches) * per)} "
                       f"of search state ({gib(per)} a match), more than {where}: "
                       f"a block of at most {fit} fits")
    return block
  if want <= fit:
    return want
  runs = -(-num_matches // fit)  # as few runs as fit, their blocks even (the last is padded)
  return -(-num_matches // runs)


def _check_duplicate(duplicate: bool, swap_seats: bool, num_matches: int) -> None:
  if duplicate and (not swap_seats or num_matches % 2):
    raise ValueError("duplicate matches swap the seats within each pair: they need "
                     f"swap_seats=True and an even number of matches (got {num_matches})")


DEALS = 0x6465616C
"""Folded into the key of :func:`play` for the deal keys of duplicate matches."""


def _play(game, agents, num_matches, key, swap_seats, traced, dtype, chunk, block=None,
          progress=None, duplicate: bool = False) -> MatchResult:
  """:func:`play` after its checks."""
  keys = jax.random.split(key, num_matches)
  seats = (np.arange(num_matches) % 2 if swap_seats else np.zeros(num_matches)).astype(np.int32)
  deals = None
  if duplicate:
    pairs = jax.random.split(jax.random.fold_in(key, DEALS), num_matches // 2)
    deals = pairs[np.arange(num_matches) // 2]
  hook, carry = _memory_hook(agents)
  h, mem, ends = referee.play_matches(game, agents, keys, seats, traced=traced, dtype=dtype,
                                      hook=hook, carry=carry, chunk=min(chunk, num_matches),
                                      block=block, progress=progress, deal_keys=deals)
  pay = referee.payoffs(game, h, seats, dtype)
  res = MatchResult.from_payoffs(np.asarray(pay, np.float64), seats, traced, h, ends.actions,
                                 paired=duplicate)
  if hook is None:
    return res
  mem = np.max(np.asarray(mem).reshape(-1, 2, 2, 2), axis=0)  # [agent, player, (rows, refused)]
  return dataclasses.replace(res, memory=tuple(
      {"rows": mem[i, :, 0].tolist(), "refused": mem[i, :, 1].tolist()}
      if hasattr(a, "memory_array") else None for i, a in enumerate(agents)))


def _memory_hook(agents):
  """A referee hook keeping, per agent with tables (``memory_array``), the largest rows in use
  and refused inserts of each player's table over the match's decisions; ``(None, None)``
  when no agent has tables."""
  if not any(hasattr(a, "memory_array") for a in agents):
    return None, None

  def hook(carry, i, pos_state, probs, state):
    del pos_state, probs
    if not hasattr(agents[i], "memory_array"):
      return carry
    return carry.at[i].max(agents[i].memory_array(state))

  return hook, jnp.zeros((2, 2, 2), jnp.int32)


@dataclasses.dataclass(frozen=True)
class RoundRobinResult:
  """Every pairing of :func:`round_robin`."""

  names: tuple  # agent names in table order
  # [n, n] row agent's mean payoff against the column agent (antisymmetric off the diagonal)
  mean: np.ndarray
  ci95: np.ndarray  # [n, n] its 95% half-width
  # {(row, col): MatchResult} for the pairs actually played (row <= col; the mirror is the negation)
  results: dict

  def table(self, digits: int = 3) -> str:
    """Text table of ``mean ± ci95`` (row agent's payoff), like Lisý et al. 2015's head-to-head tables."""
    cells = [[("" if np.isnan(m) else f"{m:+.{digits}f} ± {c:.{digits}f}")
              for m, c in zip(mr, cr)] for mr, cr in zip(self.mean, self.ci95)]
    w0 = max(len(n) for n in self.names)
    w = max([len(n) for n in self.names] + [len(x) for r in cells for x in r])
    lines = [" " * w0 + " | " + " | ".join(n.rjust(w) for n in self.names)]
    lines.append("-" * len(lines[0]))
    for n, r in zip(self.names, cells):
      lines.append(n.ljust(w0) + " | " + " | ".join(x.rjust(w) for x in r))
    return "\n".join(lines)

  def plot(self, path, title: str | None = None) -> None:
    """Heat map of the mean payoffs with ``mean ± ci95`` annotations, saved to ``path``."""
    from jaxgt.extras import require
    require("plot", "plotting").use("Agg")
    import matplotlib.pyplot as plt
    n = len(self.names)
    lim = float(np.nanmax(np.abs(self.mean))) or 1.0
    fig, ax = plt.subplots(figsize=(1.6 * n + 2, 1.2 * n + 1.5))
    im = ax.imshow(np.nan_to_num(self.mean), cmap="RdBu", vmin=-lim, vmax=lim)
    ax.set_xticks(range(n), self.names)
    ax.set_yticks(range(n), self.names)
    ax.set_xlabel("column agent")
    ax.set_ylabel("row agent (payoff shown)")
    for i in range(n):
      for j in range(n):
        if not np.isnan(self.mean[i, j]):
          ax.text(j, i, f"{self.mean[i, j]:+.3f}\n±{self.ci95[i, j]:.3f}", ha="center",
                  va="center", fontsize=8)
    fig.colorbar(im, ax=ax)
    if title:
      ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def round_robin(game: CompiledGame, agents: dict, num_matches: int, key: jax.Array, *,
                include_self: bool = True, swap_seats: bool = True, duplicate: bool = False,
                mode: str = "auto", dtype=None, chunk: int | None = None) -> RoundRobinResult:
  """Plays every pair of ``agents`` (``{name: Agent}``) ``num_matches`` times, seats swapped.

  Pair ``(i, j)``, ``i <= j`` in insertion order, uses ``fold_in(key, i * n + j)``;
  ``swap_seats``, ``duplicate``, ``mode``, ``dtype`` and ``chunk`` as in :func:`play`.
  Arguments, each agent's traceability and each pair's memory (:func:`fit_block`) are checked
  once, before any pair is played.
  """
  if not isinstance(agents, dict) or not agents:
    raise ValueError("agents must be a non-empty dict {name: Agent}")
  num_matches = referee.check_match_args(
      game, [(f"agent {k!r}", a) for k, a in agents.items()], num_matches)
  key = check_key(key)
  dtype = resolve_dtype(dtype)
  chunk = num_matches if chunk is None else check_positive_int("chunk", chunk)
  _check_duplicate(duplicate, swap_seats, num_matches)
  names = tuple(str(k) for k in agents)
  items = list(agents.values())
  traced = [referee.play_mode(game, (a,), mode, key) for a in items]
  n = len(items)
  mean = np.full((n, n), np.nan)
  ci = np.full((n, n), np.nan)
  results = {}
  pairs = [(i, j) for i in range(n) for j in range(i if include_self else i + 1, n)]
  blocks = {(i, j): fit_block((items[i], items[j]), num_matches) if traced[i] and traced[j]
            else None for i, j in pairs}
  for i, j in pairs:
    r = _play(game, (items[i], items[j]), num_matches, jax.random.fold_in(key, i * n + j),
              swap_seats, traced[i] and traced[j], dtype, chunk, block=blocks[i, j],
              duplicate=duplicate)
    results[(names[i], names[j])] = r
    mean[j, i], ci[j, i] = -r.mean, r.ci95
    mean[i, j], ci[i, j] = r.mean, r.ci95
  return RoundRobinResult(names, mean, ci, results)
