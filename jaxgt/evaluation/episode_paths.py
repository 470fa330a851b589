"""Logged episodes mapped onto the compiled tree: encoding action histories, locating each
episode's terminal (with every completion of the chance outcomes a log hides) through the
tree's transition arrays, and producing the partial view a player has of an episode."""

from __future__ import annotations

import dataclasses
import functools
import itertools
from typing import Any, Optional, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxgt.core.game_tree import NO_INDEX, CompiledGame, GameTree
from jaxgt.core.dtypes import default_dtype
from jaxgt.games.base import CHANCE

UNOBSERVED = -1
"""Encoded episode step: a chance outcome the log does not show (``null``)."""
PADDING = -2
"""Encoded episode step past the end of a shorter episode."""
MAX_COMPLETIONS = 4096
"""Largest number of completions of one partially observed episode that is enumerated."""
LOCATE_CHUNK = 1 << 16
"""Episodes located per jitted call (longer logs go in chunks of this size)."""


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



def episode_name(episode, b: int) -> str:
  """``"line N"`` of a logged :class:`~jaxgt.evaluation.episode_log.Episode`, else
  ``"episode b"`` (error messages)."""
  line = getattr(episode, "line", 0)
  return f"line {line}" if line else f"episode {b}"


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


def logged_zero_step(compiled: CompiledGame, history, player, logged) -> str:
  """The first step of ``history`` to which ``logged [I, A]`` (player ``player``'s logging
  strategy) gives probability 0, spelled for an error message."""
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
  name = (lambda b: episode_name(episodes[b], b)) if episodes is not None else (lambda b: f"episode {b}")
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



def terminal_episodes(compiled: CompiledGame) -> np.ndarray:
  """``[T, D]`` encoded episodes (:data:`PADDING` past the end), one ending in each terminal."""
  from jaxgt.evaluation.referee import action_paths
  paths = action_paths(compiled.tree, np.asarray(compiled.tree.terminal_history))
  return encode_histories(paths, compiled.tree.max_depth)[0]



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
