"""Head-to-head matches between online agents, many at once (001, Sec. 5).

``play(game, agent0, agent1, num_matches, key)`` runs ``num_matches``
independent matches as one jitted, vmapped program: each match is a
``lax.while_loop`` over the game from the root, a referee sampling chance
outcomes from ``chance_probs`` and each agent's ``act`` choosing at its
player's histories (actions sampled from the returned probabilities). With
``swap_seats`` agent0 plays player 1 in every odd-numbered match, so half the
matches are played from each seat. Payoffs are reported from agent0's view.

Agents must be traceable (see :mod:`jaxgt.agents.base`): ``history`` is a
traced ``int32`` scalar and the state keeps fixed shapes. This is checked
with ``jax.eval_shape`` before compiling; an agent that cannot be traced
plays through a Python loop over matches instead (same keys, same draws,
slower), with a warning.

``round_robin`` plays every pair (and each agent against itself) and
tabulates mean ± 95% confidence half-width like 001's head-to-head tables
(row agent's payoff against the column agent).

Keys: match ``m`` uses ``split(key, num_matches)[m]``, split into the two
agents' ``init`` keys and the match key; each turn splits the match key into
the acting agent's ``act`` key and the uniform that samples the action.
"""

from __future__ import annotations

import dataclasses
import warnings

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxgt.agents.base import Agent
from jaxgt.core.compiler import CompiledGame
from jaxgt.games.base import CHANCE, TERMINAL
from jaxgt.core.checks import check_key

_TRACE_ERRORS = (jax.errors.ConcretizationTypeError, jax.errors.TracerBoolConversionError,
                 jax.errors.TracerIntegerConversionError, jax.errors.TracerArrayConversionError)


@dataclasses.dataclass(frozen=True)
class MatchResult:
  """Outcome of :func:`play`.

  Attributes:
    payoffs: ``[M] float64`` agent0's payoff in each match.
    seats: ``[M] int32`` the player (0 or 1) agent0 played in each match.
    mean, stderr: sample mean and its standard error (``std(ddof=1) / sqrt(M)``).
    ci95: half-width of the normal 95% confidence interval (``1.96 * stderr``).
    num_matches: ``M``.
    traced: whether the matches ran as one jitted program (else a Python loop).
  """

  payoffs: np.ndarray
  seats: np.ndarray
  mean: float
  stderr: float
  ci95: float
  num_matches: int
  traced: bool = True

  @classmethod
  def from_payoffs(cls, payoffs, seats, traced=True) -> "MatchResult":
    x = np.asarray(payoffs, np.float64)
    n = len(x)
    se = float(np.std(x, ddof=1) / np.sqrt(n)) if n > 1 else float("nan")
    return cls(x, np.asarray(seats, np.int32), float(np.mean(x)), se, 1.96 * se, n, traced)

  def __str__(self) -> str:
    return f"{self.mean:+.4f} ± {self.ci95:.4f} (95% CI, {self.num_matches} matches)"


def _pick(probs, u):
  """Index drawn from non-negative ``probs [K]`` with one uniform ``u``."""
  cdf = jnp.cumsum(probs)
  return jnp.minimum(jnp.sum(cdf <= u * cdf[-1]), probs.shape[0] - 1).astype(jnp.int32)


def _check_args(game, agents, num_matches):
  if not isinstance(game, CompiledGame):
    raise ValueError(f"game must be a CompiledGame (jaxgt.load(...)), got {type(game).__name__}")
  for name, a in agents:
    if not isinstance(a, Agent):
      raise ValueError(f"{name} must be a jaxgt Agent, got {type(a).__name__}")
    g = getattr(a, "game", None)
    if not isinstance(g, CompiledGame) or g.fingerprint != game.fingerprint:
      raise ValueError(f"{name} plays {getattr(g, 'name', g)!r}, not {game.name}")
  if isinstance(num_matches, bool) or not isinstance(num_matches, (int, np.integer)) \
      or num_matches < 1:
    raise ValueError(f"num_matches must be a positive integer, got {num_matches!r}")


def _traceable(agent: Agent, game: CompiledGame, key) -> bool:
  """Whether ``agent`` traces with a traced history; ``ValueError`` for a bad signature."""
  try:
    state = jax.eval_shape(agent.init, key)
    probs, new = jax.eval_shape(agent.act, key, state, jax.ShapeDtypeStruct((), jnp.int32))
  except _TRACE_ERRORS as e:
    warnings.warn(f"{type(agent).__name__}.act is not traceable ({type(e).__name__}); "
                  "playing its matches in a Python loop", stacklevel=3)
    return False
  A = game.tree.num_actions
  if tuple(probs.shape) != (A,):
    raise ValueError(f"{type(agent).__name__}.act returned probabilities of shape "
                     f"{tuple(probs.shape)}; this game needs ({A},)")
  if jax.tree_util.tree_structure(new) != jax.tree_util.tree_structure(state) or any(
      (a.shape, a.dtype) != (b.shape, b.dtype)
      for a, b in zip(jax.tree_util.tree_leaves(new), jax.tree_util.tree_leaves(state))):
    raise ValueError(f"{type(agent).__name__}.act must return a state with the same structure, "
                     "shapes and dtypes as init's (fixed-shape state, see jaxgt.agents.base)")
  return True


def _match_fn(game: CompiledGame, agents, dtype):
  """One match ``(key, seat0) -> (agent0's payoff, invalid-probabilities flag)``."""
  tree = game.device_tree(dtype)
  A = tree.num_actions
  C = tree.children.shape[1]
  max_turns = int(np.asarray(game.tree.depth).max())

  def turn(carry):
    h, states, key, bad, t, seat0 = carry
    key, ka, ku = jax.random.split(key, 3)
    pl = tree.player[h]

    def chance(states):
      return tree.chance_probs[h], states

    def by(i):
      def f(states):
        probs, s = agents[i].act(ka, states[i], h)
        probs = jnp.pad(jnp.asarray(probs, dtype), (0, C - A))
        return probs, tuple(s if j == i else states[j] for j in range(2))
      return f

    branch = jnp.where(pl == CHANCE, 0, jnp.where(pl == seat0, 1, 2))
    probs, states = lax.switch(branch, [chance, by(0), by(1)], states)
    legal = tree.children[h] >= 0
    probs = jnp.where(legal, probs, 0.0)
    total = jnp.sum(probs)
    bad = bad | ~(jnp.isfinite(total) & (total > 0))
    a = _pick(probs, jax.random.uniform(ku, (), dtype))
    return tree.children[h, a], states, key, bad, t + 1, seat0

  def one(key, seat0):
    k0, k1, km = jax.random.split(key, 3)
    states = (agents[0].init(k0), agents[1].init(k1))
    carry = (jnp.zeros((), jnp.int32), states, km, jnp.zeros((), bool),
             jnp.zeros((), jnp.int32), seat0)
    carry = lax.while_loop(
        lambda c: (tree.player[jnp.maximum(c[0], 0)] != TERMINAL) & (c[0] >= 0)
        & (c[4] < max_turns), turn, carry)
    h, bad = carry[0], carry[3]
    u = tree.terminal_payoff[jnp.maximum(tree.history_terminal[jnp.maximum(h, 0)], 0)]
    return jnp.where(seat0 == 0, u, -u), bad | (h < 0)

  return one


def _python_matches(game, agents, keys, seats, dtype):
  """The same matches, one Python step at a time (for agents that cannot be traced)."""
  tree = game.device_tree(dtype)
  A = tree.num_actions
  C = tree.children.shape[1]
  player = np.asarray(game.tree.player)
  children = np.asarray(game.tree.children)
  pay, bad = [], []
  for key, seat0 in zip(keys, seats):
    k0, k1, km = jax.random.split(key, 3)
    states = [agents[0].init(k0), agents[1].init(k1)]
    h, invalid = 0, False
    while player[h] != TERMINAL:
      km, ka, ku = jax.random.split(km, 3)
      if player[h] == CHANCE:
        probs = tree.chance_probs[h]
      else:
        i = 0 if player[h] == seat0 else 1
        probs, states[i] = agents[i].act(ka, states[i], int(h))
        probs = jnp.pad(jnp.asarray(probs, dtype), (0, C - A))
      probs = jnp.where(children[h] >= 0, probs, 0.0)
      total = float(jnp.sum(probs))
      if not (np.isfinite(total) and total > 0):
        invalid = True
        break
      h = int(children[h, int(_pick(probs, jax.random.uniform(ku, (), dtype)))])
    u = float(game.tree.terminal_payoff[game.tree.history_terminal[h]]) if not invalid else 0.0
    pay.append(u if seat0 == 0 else -u)
    bad.append(invalid)
  return np.asarray(pay), np.asarray(bad)


def play(game: CompiledGame, agent0: Agent, agent1: Agent, num_matches: int, key: jax.Array,
         *, swap_seats: bool = True, mode: str = "auto", dtype=None) -> MatchResult:
  """Plays ``num_matches`` matches of ``agent0`` against ``agent1``; payoffs from agent0's view.

  ``mode``: ``"auto"`` (jitted when both agents trace, else a Python loop),
  ``"jit"`` (raise if an agent does not trace) or ``"python"``. Raises
  ``ValueError`` for mismatched games, bad arguments, or an agent that puts
  no (finite) probability on any legal action. Each call compiles its own
  program (agents are closed over); the match count is the batch size.
  """
  from jaxgt.core.dtypes import resolve_dtype
  _check_args(game, (("agent0", agent0), ("agent1", agent1)), num_matches)
  if mode not in ("auto", "jit", "python"):
    raise ValueError(f"mode must be 'auto', 'jit' or 'python', got {mode!r}")
  dtype = resolve_dtype(dtype)
  key = check_key(key)
  agents = (agent0, agent1)
  keys = jax.random.split(key, num_matches)
  seats = (np.arange(num_matches) % 2 if swap_seats else np.zeros(num_matches)).astype(np.int32)
  traced = mode != "python"
  if traced:
    ok = all([_traceable(a, game, keys[0]) for a in agents])
    if not ok and mode == "jit":
      raise ValueError("an agent's act is not traceable with a traced history; use mode='python' "
                       "or make it traceable (see jaxgt.agents.base)")
    traced = ok
  if traced:
    run = jax.jit(jax.vmap(_match_fn(game, agents, dtype)))
    pay, bad = run(keys, jnp.asarray(seats))
    pay, bad = np.asarray(pay), np.asarray(bad)
  else:
    pay, bad = _python_matches(game, agents, keys, seats, dtype)
  if bad.any():
    m = int(np.flatnonzero(bad)[0])
    raise ValueError(f"match {m}: an agent returned probabilities with no finite positive mass "
                     "on the legal actions")
  return MatchResult.from_payoffs(pay, seats, traced)


@dataclasses.dataclass(frozen=True)
class RoundRobinResult:
  """Every pairing of :func:`round_robin`.

  Attributes:
    names: agent names in table order.
    mean, ci95: ``[n, n]`` row agent's mean payoff against the column agent
      and its 95% half-width (antisymmetric off the diagonal).
    results: ``{(row, col): MatchResult}`` for the pairs actually played
      (``row <= col``; the mirrored entry is the negation).
  """

  names: tuple
  mean: np.ndarray
  ci95: np.ndarray
  results: dict

  def table(self, digits: int = 3) -> str:
    """Text table of ``mean ± ci95`` (row agent's payoff), like 001's head-to-head tables."""
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
    import matplotlib
    matplotlib.use("Agg")
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
                include_self: bool = True, **play_kwargs) -> RoundRobinResult:
  """Plays every pair of ``agents`` (``{name: Agent}``) ``num_matches`` times, seats swapped.

  Pair ``(i, j)``, ``i <= j`` in insertion order, uses ``fold_in(key, i * n + j)``.
  """
  if not isinstance(agents, dict) or not agents:
    raise ValueError("agents must be a non-empty dict {name: Agent}")
  _check_args(game, [(f"agent {k!r}", a) for k, a in agents.items()], num_matches)
  names = tuple(str(k) for k in agents)
  items = list(agents.values())
  n = len(items)
  mean = np.full((n, n), np.nan)
  ci = np.full((n, n), np.nan)
  results = {}
  for i in range(n):
    for j in range(i if include_self else i + 1, n):
      r = play(game, items[i], items[j], num_matches, jax.random.fold_in(key, i * n + j),
               **play_kwargs)
      results[(names[i], names[j])] = r
      mean[j, i], ci[j, i] = -r.mean, r.ci95
      mean[i, j], ci[i, j] = r.mean, r.ci95
  return RoundRobinResult(names, mean, ci, results)
