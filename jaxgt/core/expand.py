"""Enumeration of a :class:`~jaxgt.games.device.DeviceGame`: breadth first, a frontier at a time.

Each depth's frontier of states is one batch: one jitted, vmapped call reads
every state's player, children mask, chance probabilities, returns and keys,
and one more steps every (state, legal action or outcome) pair into the next
frontier. The host only numbers keys (a NumPy ``unique`` per depth) and
names the information states it has not seen (one ``info_string`` call per
new key, not per history). Histories come out in the breadth-first order of
:func:`jaxgt.core.compiler.compile_game` (children by ascending action id), so
a device game and its Python twin compile to equal arrays.
"""

from __future__ import annotations

import dataclasses
import time

import jax
import jax.numpy as jnp
import numpy as np

from jaxgt.core.checks import PROB_ATOL
from jaxgt.core.game_tree import first_seen_ids
from jaxgt.core.memory import available_memory, rss_bytes
from jaxgt.core.playout import knuth_log10
from jaxgt.core.tree_rules import TreeRules
from jaxgt.games.base import CHANCE, TERMINAL
from jaxgt.games.device import DeviceGame, children_mask, key_codes
from jaxgt.games.size import GameTooLargeError, SizeEstimate, format_count


@dataclasses.dataclass(frozen=True)
class EnumerationProgress:
  """One progress report of :func:`compile_game`'s enumeration."""

  histories: int  # histories enumerated (their game calls done)
  discovered: int  # histories found so far (enumerated + waiting in the queue)
  seconds: float  # since enumeration started
  rate: float  # histories enumerated per second
  rss_bytes: int  # resident memory of the process
  estimate: SizeEstimate | None  # the size estimate made before enumerating, if any
  limit: int  # max_histories

  def line(self) -> str:
    est = (f" of ~{format_count(self.estimate.log10_histories)} estimated"
           if self.estimate is not None else "")
    return (f"enumerating: {self.histories:,} histories{est} ({self.discovered:,} found, "
            f"limit {self.limit:,}), {self.rate:,.0f}/s, {self.seconds:.1f}s, "
            f"memory {self.rss_bytes / 2**20:,.0f} MiB")


def history_path(parent, action, h: int) -> tuple:
  """Actions from the root to history ``h`` (for error messages)."""
  acts = []
  while h > 0:
    acts.append(int(action[h]))
    h = int(parent[h])
  return tuple(reversed(acts))


CHUNK = 1 << 14
"""States per jitted call: frontiers are cut into chunks of this size, the last one padded,
so each of the two functions compiles once."""


def number_rows(rows: np.ndarray, valid: np.ndarray, name) -> tuple[np.ndarray, list]:
  """``(ids [N] int64, names)``: the valid rows of ``rows [N, W]`` numbered by first
  appearance (``-1`` elsewhere), and ``name(row)`` of each distinct row in id order."""
  ids = np.full(len(rows), -1, np.int64)
  idx = np.flatnonzero(valid)
  if not len(idx):
    return ids, []
  ids[idx], first = first_seen_ids(key_codes(rows[idx]))
  return ids, [name(rows[idx[f]]) for f in first]


_FUNCTIONS: dict = {}  # (game class, game string) -> the jitted (read, step)


def _functions(game: DeviceGame):
  """The jitted, vmapped ``(read, step)`` of ``game``, built once per game class and game string
  (rules are a function of both) so recompiling a game in one process skips XLA compilation
  (not for a compiled game's rules, whose arrays are its own)."""
  if isinstance(game, TreeRules):
    return _build_functions(game)
  key = (type(game), game.game_string())
  if key not in _FUNCTIONS:
    _FUNCTIONS[key] = _build_functions(game)
  return _FUNCTIONS[key]


def _build_functions(game: DeviceGame):
  n = game.num_distinct

  def read(s):
    probs = game.chance_probs(s) if game.num_outcomes else jnp.zeros(0)
    probs = jnp.zeros(n, probs.dtype if game.num_outcomes else jnp.float64).at[
        :game.num_outcomes].set(probs)
    return (game.current_player(s), children_mask(game, s), probs, game.returns(s),
            game.info_key(s, 0), game.info_key(s, 1), game.public_key(s))

  return jax.jit(jax.vmap(read)), jax.jit(jax.vmap(game.step))


def _take(states, idx):
  return jax.tree_util.tree_map(lambda x: x[idx], states)


def _chunked(fn, states, n: int, *extra):
  """``fn`` over the first ``n`` states (NumPy leaves) in padded chunks; NumPy outputs of
  length ``n`` (the frontier stays on the host between depths, where gathers are free)."""
  outs = []
  for lo in range(0, n, CHUNK):
    hi = min(n, lo + CHUNK)
    idx = np.minimum(np.arange(lo, lo + CHUNK), hi - 1)
    args = [_take(states, idx)] + [e[idx] for e in extra]
    out = jax.device_get(fn(*args))
    outs.append(jax.tree_util.tree_map(lambda x, m=hi - lo: np.asarray(x)[:m], out))
  if len(outs) == 1:
    return outs[0]
  return jax.tree_util.tree_map(lambda *xs: np.concatenate(xs), *outs)


def _estimate(game: DeviceGame, read, step, rng: np.random.Generator) -> SizeEstimate:
  """Knuth's random-path estimate over :data:`CHUNK` uniform paths, through the enumeration's
  own compiled functions (no second compilation), summarised as
  :func:`jaxgt.core.playout.knuth_log10`."""
  t0 = time.perf_counter()
  states = jax.tree_util.tree_map(lambda x: np.broadcast_to(np.asarray(x), (CHUNK,) + x.shape),
                                  jax.device_get(game.init()))
  log_prod = np.zeros(CHUNK)
  log_total = np.zeros(CHUNK)
  live = np.ones(CHUNK, bool)
  depth = 0
  while live.any() and depth < game.max_length + 1:
    p, mask = (np.asarray(x) for x in jax.device_get(read(states)[:2]))
    live &= p != TERMINAL
    b = mask.sum(axis=1)
    live &= b > 0
    log_prod = np.where(live, log_prod + np.log(np.maximum(b, 1)), log_prod)
    log_total = np.where(live, np.logaddexp(log_total, log_prod), log_total)
    u = rng.random(CHUNK)[:, None] * np.maximum(b, 1)[:, None]
    pick = np.argmax(np.cumsum(mask, axis=1) > u, axis=1).astype(np.int32)
    states = step(states, pick)
    depth += int(live.any())
  return SizeEstimate(log10_histories=knuth_log10(log_total), paths=CHUNK,
                      longest_path=depth, truncated=bool(live.any()),
                      seconds=time.perf_counter() - t0)


def bytes_per_history(game: DeviceGame) -> int:
  """Approximate memory of one history while compiling and in the compiled arrays (children
  and chance probabilities per action or outcome, about twenty int32/float64 fields, the
  enumeration's key records)."""
  n = game.num_distinct
  return 12 * n + 8 * 20 + 4 * (2 * game.info_key_width + game.public_key_width)


def memory_stop(game, counted: int, need: float, avail: float, limit: int,
                tail: str = "") -> GameTooLargeError:
  """The error that stops an enumeration whose ``counted`` histories would need ``need``
  bytes against ``avail`` available when it started (``tail``: a sentence after it)."""
  return GameTooLargeError(
      f"{game.game_string()}: at least {counted:,} histories would need more than "
      f"{need / 2**30:,.1f} GiB against {avail / 2**30:,.1f} GiB available when enumeration "
      f"started; stopped before running out of memory.{tail}", game=game.game_string(),
      limit=int(limit), counted=int(counted), memory_bytes=float(need),
      available_bytes=float(avail))


def check_size(game: DeviceGame, estimate: SizeEstimate, max_histories: int,
               factor: float) -> None:
  """Raises :class:`GameTooLargeError` when the estimate is over ``factor * max_histories`` or
  its memory (:func:`bytes_per_history`) over the available memory."""
  over_limit = estimate.histories > factor * max_histories
  need = estimate.histories * bytes_per_history(game)
  avail = available_memory()
  over_memory = avail is not None and need > factor * avail
  if over_limit or over_memory:
    over = estimate.log10_histories - np.log10(max(max_histories, 1))
    times = f"{10 ** over:,.1f}" if over < 6 else format_count(over)
    why = (f"{times} times the limit max_histories={max_histories}" if over_limit else
           f"about {need / 2**30:,.1f} GiB against {avail / 2**30:,.1f} GiB available")
    raise GameTooLargeError(
        f"{game.game_string()}: about {format_count(estimate.log10_histories)} histories "
        f"(random-path estimate over {estimate.paths:,} paths, {estimate.seconds:.1f}s), {why}; "
        "refused before enumerating. It is played, sampled and searched through its rules; "
        "pass max_histories=... to raise the limit", game=game.game_string(),
        limit=int(max_histories), log10_histories=float(estimate.log10_histories),
        detail=f"random-path estimate over {estimate.paths:,} paths, {estimate.seconds:.1f}s",
        memory_bytes=None if over_limit else float(need),
        available_bytes=None if over_limit else float(avail))


def enumerate_device(game: DeviceGame, *, max_histories: int, report=None,
                     started: float | None = None, progress_seconds: float = 2.0,
                     refuse_factor: float = 3.0, min_limit: int = 200_000) -> dict:
  """The per-history records of ``game`` for :func:`jaxgt.core.compiler.number_keys`.

  Raises ``ValueError`` naming the history for an unknown player id, a decision without legal
  actions, chance probabilities that do not sum to one, non-zero-sum returns, and
  :class:`GameTooLargeError` past ``max_histories`` or, before enumerating, when a random-path
  estimate is over ``refuse_factor`` times the limit or the available memory (limits of at
  least ``min_limit``). The estimate can be low by several times (LD(2,1): about 26 million
  against 113 million), so each depth also checks the histories counted so far against the
  memory available when enumeration started (:func:`bytes_per_history` each) and stops with
  :class:`GameTooLargeError` before the next frontier would not fit, not when the process is
  killed for memory.
  """
  t0 = time.perf_counter() if started is None else started
  next_report = t0 + progress_seconds
  A = int(game.num_actions)
  parent, action, prob, player, payoff, k0s, k1s, pks = ([] for _ in range(8))
  used_outcomes = 0
  per_history, avail = bytes_per_history(game), available_memory()
  with jax.enable_x64(True):
    read, step = _functions(game)
    estimate = None
    if max_histories >= min_limit:
      estimate = _estimate(game, read, step, np.random.default_rng(0))
      check_size(game, estimate, max_histories, refuse_factor)
    frontier = jax.tree_util.tree_map(lambda x: np.asarray(x)[None], game.init())
    n, offset = 1, 0
    lvl_parent, lvl_action, lvl_prob = (np.array([-1]), np.array([-1]), np.array([1.0]))
    while n:
      if offset + n > max_histories:
        raise GameTooLargeError(
            f"{game.game_string()}: more than {max_histories} histories (counted "
            f"{offset + n} so far); pass max_histories=... to raise the limit",
            game=game.game_string(), limit=int(max_histories), counted=int(offset + n))
      need = (offset + n) * per_history
      if avail is not None and need > avail:
        raise memory_stop(game, offset + n, need, avail, max_histories,
                          " It is played, sampled and searched through its rules")
      p, mask, probs, ret, k0, k1, pk = (np.asarray(x) for x in _chunked(read, frontier, n))
      parent.append(lvl_parent), action.append(lvl_action), prob.append(lvl_prob)

      def where(rows, what, check):
        h = offset + int(rows[0])
        par = np.concatenate(parent)
        act = np.concatenate(action)
        raise ValueError(f"{game.name}: {what} at history {history_path(par, act, h)} (check "
                         f"'{check}')")

      bad = np.flatnonzero(~np.isin(p, (0, 1, CHANCE, TERMINAL)))
      if len(bad):
        where(bad, f"current_player {p[bad[0]]} is not 0, 1, CHANCE or TERMINAL", "players")
      term = p == TERMINAL
      chance = p == CHANCE
      bad = np.flatnonzero(~term & ~mask.any(axis=1))
      if len(bad):
        where(bad, "no legal actions or chance outcomes", "legal_actions")
      if chance.any():
        total = probs[chance].sum(axis=1)
        bad = np.flatnonzero(chance)[np.abs(total - 1.0) > PROB_ATOL]
        if len(bad):
          where(bad, f"chance probabilities sum to {probs[bad[0]].sum()}, not 1",
                "chance_probabilities")
        used_outcomes = max(used_outcomes,
                            int(np.flatnonzero(mask[chance].any(axis=0)).max()) + 1)
      bad = np.flatnonzero(term & (np.abs(ret[:, 0] + ret[:, 1]) > PROB_ATOL))
      if len(bad):
        where(bad, f"returns {tuple(ret[bad[0]])} are not zero-sum", "zero_sum")
      player.append(p.astype(np.int32))
      payoff.append(np.where(term, ret[:, 0], 0.0))
      k0s.append(k0), k1s.append(k1), pks.append(pk)
      # the next frontier: every (history, action or outcome) with a child, by action id
      rows, acts = np.nonzero(mask & ~term[:, None])
      lvl_parent = (offset + rows).astype(np.int64)
      lvl_action = acts.astype(np.int64)
      lvl_prob = np.where(chance[rows], probs[rows, acts], 1.0)
      offset += n
      n = len(rows)
      if n:
        frontier = _chunked(lambda s, a: step(s, a), _take(frontier, rows), n,
                            acts.astype(np.int32))
      if report is not None and time.perf_counter() >= next_report:
        now = time.perf_counter()
        next_report = now + progress_seconds
        report(EnumerationProgress(histories=offset, discovered=offset + n, seconds=now - t0,
                                   rate=offset / max(now - t0, 1e-9), rss_bytes=rss_bytes(),
                                   estimate=estimate, limit=max_histories))
  player = np.concatenate(player)
  live = player != TERMINAL
  kid, names = zip(*(number_rows(np.concatenate(k), live,
                                 lambda row, q=q: game.info_string(row, q))
                     for q, k in enumerate((k0s, k1s))))
  pub, public_names = number_rows(np.concatenate(pks), np.ones(len(player), bool),
                                  game.public_name)
  return dict(
      parent=np.concatenate(parent), action=np.concatenate(action),
      edge_prob=np.concatenate(prob), player=player, key_of_hist=list(kid),
      key_names=list(names), public=pub, public_keys=tuple(public_names),
      payoff=np.concatenate(payoff), num_actions=A, num_outcomes=max(A, used_outcomes),
      started=t0)
