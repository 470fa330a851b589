"""Compile a :class:`~jaxgt.games.base.Game` once into a :class:`GameTree` of static arrays.

:func:`compile_game` is the only code that calls the game (one breadth-first
enumeration on the host); :func:`assemble` builds every array from per-history
arrays, so a subgame of a compiled game is assembled without re-enumerating.

Shape letters: ``H`` histories (breadth-first, root ``0``), ``T`` terminals,
``A`` player actions, ``C`` history branching (``max(A, chance outcomes)``),
``I`` information states of one player, ``S = I * A + 1`` its sequences
(``i * A + a`` is action ``a`` at ``i``; ``I * A`` is the empty sequence),
``P`` public states. The sequence form (``PlayerTree``, ``terminal_*``) orders
information states by *level* (own earlier decisions), one slice each. A root
belief enters the solvers as per-terminal weights replacing ``terminal_chance``.
"""

from __future__ import annotations

import array
import collections
import hashlib
import sys
import time
from typing import Any, Callable

import jax
import numpy as np

from jaxgt.core.checks import PROB_ATOL
from jaxgt.core.expand import EnumerationProgress, enumerate_device, history_path, memory_stop
from jaxgt.core.game_tree import NO_INDEX, CompiledGame, GameTree, PlayerTree, first_seen_ids
from jaxgt.core.memory import available_memory, rss_bytes
from jaxgt.games import make_from_string
from jaxgt.games.base import CHANCE, TERMINAL, Game
from jaxgt.games.device import DeviceGame
from jaxgt.games.size import (EARLY_MIN_LIMIT, REFUSE_FACTOR, GameTooLargeError, SizeEstimate,
                              refuse_if_too_large)


def _print_progress(report: EnumerationProgress) -> None:
  print(report.line(), file=sys.stderr, flush=True)


def _early_size_check(game: Game, max_histories: int) -> SizeEstimate | None:
  """The random-path size estimate, raising :class:`GameTooLargeError` when clearly over.

  A game that counted its histories already gets that count. A game whose
  rules fail on a random path is not refused here: the
  enumeration then reports the defect with the offending history.
  """
  known = getattr(game, "num_histories", None)  # counted already (e.g. imported games)
  if isinstance(known, int) and 0 < known <= max_histories:
    return SizeEstimate(log10_histories=float(np.log10(known)), paths=0, longest_path=0,
                        truncated=False, seconds=0.0)
  try:
    return refuse_if_too_large(game, max_histories, bounds=getattr(game, "size_bounds", None))
  except GameTooLargeError:
    raise
  except Exception:  # malformed rules: enumeration names the history
    return None


# reduction; past this, sequence sums scatter)
MAX_TERMINAL_GROUPS = 32


MEMORY_SHARE = 0.8
"""Of the memory available when a Python game's enumeration starts, the share it may take
before it stops (the rest: the arrays assembled after it)."""


def _check_memory(game: Game, counted: int, used: int, avail: int, limit: int) -> None:
  """Stops a Python game's enumeration with :class:`GameTooLargeError` once it has taken
  more than :data:`MEMORY_SHARE` of the memory available at its start (``used`` bytes over
  the resident memory then), before the process is killed for memory."""
  if used > MEMORY_SHARE * avail:
    raise memory_stop(game, counted, used, avail, limit)


def terminal_groups(terminal_seq, num_sequences: int) -> tuple:
  """``(order, row, blocks)``: the terminals ``[T]`` grouped by the sequence ``terminal_seq [T]``
  that reaches them, for :class:`PlayerTree`'s ``terminal_order``, ``terminal_group_row`` and
  ``terminal_blocks``.

  ``order [T]`` lists, for each count ``c`` (ascending) of terminals per sequence, the
  terminals (ascending) of the ``n_c`` sequences (ascending) reached by exactly ``c``; reshaped
  block by block, ``blocks = ((n_c, c), ...)``, each row holds one sequence's terminals.
  ``row [S]`` is a sequence's row among the blocks' rows (``sum(n_c)`` for a sequence no
  terminal follows). ``(None, None, ())`` past :data:`MAX_TERMINAL_GROUPS` counts.
  """
  seq = np.asarray(terminal_seq, np.int64)
  count = np.bincount(seq, minlength=num_sequences)
  sizes = np.unique(count[count > 0])
  if len(sizes) > MAX_TERMINAL_GROUPS:
    return None, None, ()
  by_seq = np.argsort(seq, kind="stable")  # terminals by sequence, ascending within one
  start = np.concatenate([[0], np.cumsum(count)])
  order, blocks, row, n = [], [], np.zeros(num_sequences, np.int32), 0
  for c in sizes:
    rows = np.flatnonzero(count == c)
    order.append(by_seq[start[rows][:, None] + np.arange(c)].reshape(-1))
    blocks.append((len(rows), int(c)))
    row[rows] = n + np.arange(len(rows))
    n += len(rows)
  row[count == 0] = n
  return np.concatenate(order).astype(np.int32), row, tuple(blocks)


def compile_game(game: Game, *, max_histories: int = 5_000_000,
                 progress: bool | Callable[[EnumerationProgress], Any] = False,
                 progress_seconds: float = 2.0) -> CompiledGame:
  """Enumerates ``game`` breadth-first and builds its :class:`CompiledGame`.

  The enumeration (the only stage that calls ``game``) records per history
  its parent, action, edge probability, player, acting information state,
  public state, payoff and both players' augmented information states;
  :func:`assemble` turns those into arrays.

  Raises ``ValueError`` naming the offending history for: an unknown player
  id, an empty legal set, an action id out of range, chance probabilities that
  are not positive or do not sum to one, non-zero-sum returns, imperfect
  recall (one information state reached by two different own sequences, or
  with different legal actions), and a tree over ``max_histories``. A game
  clearly over the limit is refused before enumerating, from a random-path
  estimate of its size (:mod:`jaxgt.games.size`; ``GameTooLargeError``, a
  ``ValueError``, saying how far over it is).

  ``progress``: ``True`` prints an :class:`EnumerationProgress` line to
  stderr every ``progress_seconds`` (histories, rate, memory); a callable
  receives each report instead.
  """
  t0 = time.perf_counter()
  report = _print_progress if progress is True else (progress or None)
  if isinstance(game, DeviceGame):
    return number_keys(game, **enumerate_device(
        game, max_histories=max_histories, report=report, started=t0,
        progress_seconds=progress_seconds, refuse_factor=REFUSE_FACTOR,
        min_limit=EARLY_MIN_LIMIT))
  estimate = _early_size_check(game, max_histories)
  next_report = t0 + progress_seconds
  A = int(game.num_actions)
  if A <= 0:
    raise ValueError(f"{game.name}: num_actions must be positive, got {A}")

  rss0, avail = rss_bytes(), available_memory()
  states = [game.initial_state()]
  parent = [NO_INDEX]
  action = [NO_INDEX]
  child_prob = [1.0]             # probability of the edge into each history
  players: list[int] = []
  payoff: list[float] = []
  key_ids = [dict(), dict()]       # any player's key -> first-seen index
  key_of_hist = (array.array("q"), array.array("q"))  # 8 bytes per history, not a list
  public_ids: dict = {}
  public_of_hist: list[int] = []
  C = A

  # Breadth-first enumeration: parents precede children, depths are contiguous.
  h = 0
  while h < len(states):
    s = states[h]
    states[h] = None  # free memory as we go
    if len(states) > max_histories:
      raise GameTooLargeError(
          f"{game.game_string()}: more than {max_histories} histories "
          f"(counted {len(states)} so far); pass max_histories=... to raise the limit",
          game=game.game_string(), limit=int(max_histories), counted=len(states))
    if avail is not None and h and not h % 4096:
      _check_memory(game, len(states), rss_bytes() - rss0, avail, max_histories)
    if report is not None and h and not h % 4096 and time.perf_counter() >= next_report:
      now = time.perf_counter()
      next_report = now + progress_seconds
      report(EnumerationProgress(histories=h, discovered=len(states), seconds=now - t0,
                                 rate=h / max(now - t0, 1e-9), rss_bytes=rss_bytes(),
                                 estimate=estimate, limit=max_histories))
    p = game.current_player(s)
    pk = game.public_state(s)
    public_of_hist.append(public_ids.setdefault(pk, len(public_ids)))
    players.append(p)
    if p == TERMINAL:
      r = game.returns(s)
      if len(r) != 2 or abs(float(r[0]) + float(r[1])) > PROB_ATOL:
        raise ValueError(
            f"{game.name}: returns {tuple(r)} at history {history_path(parent, action, h)} "
            "are not zero-sum")
      payoff.append(float(r[0]))
      key_of_hist[0].append(NO_INDEX)
      key_of_hist[1].append(NO_INDEX)
      h += 1
      continue
    payoff.append(0.0)
    if p != CHANCE and p != 0 and p != 1:
      where = history_path(parent, action, h)
      raise ValueError(f"{game.name}: current_player {p} at history {where} "
                       f"is not 0, 1, CHANCE or TERMINAL")
    for q in (0, 1):  # information-state keys of both players (acting or not)
      key_of_hist[q].append(key_ids[q].setdefault(game.information_state(s, q), len(key_ids[q])))
    if p == CHANCE:
      outcomes = list(game.chance_outcomes(s))
      if not outcomes:
        where = history_path(parent, action, h)
        raise ValueError(f"{game.name}: chance node {where} has no outcomes")
      total = 0.0
      for a, q in outcomes:
        if not (q > 0):
          raise ValueError(
              f"{game.name}: chance outcome {a} at history {history_path(parent, action, h)} "
              f"has probability {q}")
        if a < 0:
          raise ValueError(f"{game.name}: chance outcome id {a} at history "
                           f"{history_path(parent, action, h)} is negative")
        total += q
        C = max(C, a + 1)
        states.append(game.next_state(s, a))
        parent.append(h)
        action.append(a)
        child_prob.append(q)
      if abs(total - 1.0) > PROB_ATOL:
        raise ValueError(
            f"{game.name}: chance probabilities at history {history_path(parent, action, h)} "
            f"sum to {total}, not 1")
    else:
      legal = game.legal_actions(s)
      if not len(legal):
        where = history_path(parent, action, h)
        raise ValueError(f"{game.name}: no legal actions at history {where}")
      for a in legal:
        if not 0 <= a < A:
          where = history_path(parent, action, h)
          raise ValueError(f"{game.name}: action {a} at history {where} outside [0, {A})")
        states.append(game.next_state(s, a))
        parent.append(h)
        action.append(a)
        child_prob.append(1.0)
    h += 1
  del states

  return number_keys(
      game, parent=parent, action=action, edge_prob=child_prob, player=players,
      key_of_hist=[np.frombuffer(k, np.int64) for k in key_of_hist],
      key_names=[list(k) for k in key_ids], public=public_of_hist,
      public_keys=tuple(public_ids), payoff=payoff, num_actions=A, num_outcomes=C, started=t0)


def number_keys(game, *, parent, action, edge_prob, player, key_of_hist, key_names, public,
                public_keys, payoff, num_actions: int, num_outcomes: int,
                started: float) -> CompiledGame:
  """The step between enumeration and :func:`assemble`: acting information states (keys
  numbered by first appearance where the player acts) and augmented ones ((public state,
  key) pairs numbered by first appearance), each one vectorised pass over ``key_of_hist``
  (``[2][H]`` int64 key ids, ``-1`` at terminals; ``key_names[q][id]`` the string)."""
  pub = np.asarray(public, np.int64)
  player_arr = np.asarray(player, np.int64)
  info_of_hist = np.full(len(player_arr), NO_INDEX, np.int32)
  aug = np.full((2, len(player_arr)), NO_INDEX, np.int32)
  info_keys, aug_keys = [], []
  for q in (0, 1):
    kid = np.asarray(key_of_hist[q], np.int64)
    names = key_names[q]
    m = np.flatnonzero(player_arr == q)
    info_of_hist[m], first = first_seen_ids(kid[m])
    info_keys.append([names[k] for k in kid[m[first]]])
    m = np.flatnonzero(kid >= 0)
    aug[q, m], first = first_seen_ids(pub[m] * max(len(names), 1) + kid[m])
    aug_keys.append([names[k] for k in kid[m[first]]])

  return assemble(
      game, parent=parent, action=action, edge_prob=edge_prob, player=player,
      infostate=info_of_hist, infostate_keys=info_keys,
      public=public, public_keys=public_keys, payoff=payoff,
      aug=aug, aug_keys=aug_keys,
      num_actions=num_actions, num_outcomes=num_outcomes, started=started)


def assemble(game: Game, *, parent, action, edge_prob, player, infostate, infostate_keys,
             public, public_keys, payoff, aug, aug_keys, num_actions: int,
             num_outcomes: int | None = None, started: float | None = None) -> CompiledGame:
  """The array stage of compilation: a :class:`CompiledGame` from per-history ``[H]`` arrays.

  Histories are breadth-first (root ``0``). ``parent``/``action`` are ``-1``
  at the root; ``edge_prob`` is read on chance edges; ``infostate`` is the
  acting player's, numbered per player by first appearance (``-1`` at chance
  and terminals; ``infostate_keys`` per player); ``payoff`` is player 0's,
  read at terminals; ``aug [2, H]``/``aug_keys`` as :attr:`CompiledGame.aug`;
  ``started`` is ``time.perf_counter()`` at the start of compilation.
  Raises ``ValueError`` for a repeated action at one history and for
  imperfect recall (an information state reached by different own
  sequences, with different legal actions, or spanning two public states).
  """
  t0 = time.perf_counter() if started is None else started
  A = int(num_actions)
  C = max(A, int(num_outcomes or A))
  player_arr, parent_arr, action_arr, info_first, public_of_hist_arr = (
      np.asarray(x, np.int32) for x in (player, parent, action, infostate, public))
  H = len(player_arr)
  edge_prob = np.asarray(edge_prob, np.float64)
  children = np.full((H, C), NO_INDEX, np.int32)
  children[parent_arr[1:], action_arr[1:]] = np.arange(1, H, dtype=np.int32)
  if np.count_nonzero(children >= 0) != H - 1:
    raise ValueError(f"{game.name}: an action/outcome id repeats at one history")
  chance_probs = np.zeros((H, C), np.float64)
  is_chance_edge = np.zeros(H, bool)
  is_chance_edge[1:] = player_arr[parent_arr[1:]] == CHANCE
  chance_probs[parent_arr[is_chance_edge], action_arr[is_chance_edge]] = edge_prob[is_chance_edge]

  # Depth levels, chance reach and last own sequences (first-seen numbering, -1 = empty).
  reach = np.ones(H, np.float64)
  last = np.full((2, H), -1, np.int64)
  levels = [(0, 1)]
  while levels[-1][1] < H:
    lo, hi = levels[-1]
    nhi = int(np.searchsorted(parent_arr[hi:], hi, side="left")) + hi
    if nhi == hi:
      raise ValueError(f"{game.name}: histories are not in breadth-first order")
    levels.append((hi, nhi))
  depth_levels = tuple(levels)
  depth_arr = np.repeat(np.arange(len(levels), dtype=np.int32), [hi - lo for lo, hi in levels])
  for lo, hi in depth_levels[1:]:
    idx = np.arange(lo, hi)
    par = parent_arr[idx]
    reach[idx] = reach[par] * edge_prob[idx]
    last[:, idx] = last[:, par]
    pp = player_arr[par]
    for q in (0, 1):
      m = pp == q
      last[q, idx[m]] = info_first[par[m]].astype(np.int64) * A + action_arr[idx[m]]

  player_trees, keys = [], []
  infostate_arr = np.full(H, NO_INDEX, np.int32)
  last_seq = np.zeros((2, H), np.int32)
  for p in (0, 1):
    n = len(infostate_keys[p])
    hs = np.flatnonzero(player_arr == p)
    iids = info_first[hs]
    _, first = np.unique(iids, return_index=True)  # first history of each infostate
    hist_legal = children[hs, :A] >= 0
    for arr, what in ((last[p, hs], "is reached by different own sequences (imperfect recall)"),
                      (hist_legal, "has different legal actions"),
                      (public_of_hist_arr[hs], "spans two public states")):
      bad = np.flatnonzero(np.any(arr[first][iids] != arr, axis=tuple(range(1, arr.ndim))))
      if len(bad):
        k = int(bad[0])
        raise ValueError(
            f"{game.name}: information state {infostate_keys[p][iids[k]]!r} of player {p} "
            f"{what} (history {history_path(parent_arr, action_arr, int(hs[k]))})")
    par_seq_old = last[p, hs[first]]
    level = np.zeros(n, np.int64)  # number of own earlier decisions; parents are seen first
    for i in range(n):
      ps = par_seq_old[i]
      level[i] = 0 if ps < 0 else level[ps // A] + 1
    perm = np.argsort(level, kind="stable")  # new -> old
    inv = np.argsort(perm)  # old -> new

    def remap(seq, n=n, inv=inv):
      if n == 0:  # a player who never acts has only the empty sequence
        return np.zeros(seq.shape, np.int32)
      safe = np.maximum(seq, 0)
      return np.where(seq < 0, n * A, inv[safe // A] * A + safe % A).astype(np.int32)

    lv = level[perm]
    cuts = [0] + [int(c) for c in np.flatnonzero(np.diff(lv)) + 1] + [n] if n else [0]
    player_trees.append(PlayerTree(
        legal=hist_legal[first][perm], parent_seq=remap(par_seq_old[perm]),
        public_state=public_of_hist_arr[hs[first]][perm], level=lv.astype(np.int32),
        levels=tuple(zip(cuts[:-1], cuts[1:])), num_infostates=n))
    keys.append(tuple(infostate_keys[p][j] for j in perm))
    infostate_arr[hs] = inv[iids]
    last_seq[p] = remap(last[p])

  term = np.flatnonzero(player_arr == TERMINAL).astype(np.int32)
  history_terminal = np.full(H, NO_INDEX, np.int32)
  history_terminal[term] = np.arange(len(term), dtype=np.int32)
  terminal_payoff = np.asarray(payoff, np.float64)[term]

  P = len(public_keys)
  _, first_h = np.unique(public_of_hist_arr, return_index=True)
  par_pub = np.where(first_h > 0, public_of_hist_arr[parent_arr[first_h]], -1)
  public_parent = np.where(par_pub == np.arange(P), -1, par_pub).astype(np.int32)
  public_depth = np.zeros(P, np.int32)
  for ps in np.argsort(first_h, kind="stable"):  # parents are seen first
    if public_parent[ps] >= 0:
      public_depth[ps] = public_depth[public_parent[ps]] + 1

  terminal_seq = last_seq[:, term]
  for p, pt in enumerate(player_trees):
    order, row, blocks = terminal_groups(terminal_seq[p], pt.num_infostates * A + 1)
    player_trees[p] = pt.replace(terminal_order=order, terminal_group_row=row,
                                 terminal_blocks=blocks)
  tree = GameTree(
      player=player_arr, parent=parent_arr, action=action_arr, depth=depth_arr,
      children=children, chance_probs=chance_probs, infostate=infostate_arr,
      history_public=public_of_hist_arr, history_terminal=history_terminal, last_seq=last_seq,
      chance_reach=reach, terminal_history=term, terminal_payoff=terminal_payoff,
      terminal_chance=reach[term], terminal_seq=terminal_seq, public_parent=public_parent,
      public_depth=public_depth, players=tuple(player_trees), depth_levels=depth_levels,
      num_actions=A, num_histories=H, num_terminals=len(term), num_public_states=P)
  nbytes = sum(np.asarray(x).nbytes for x in jax.tree_util.tree_leaves(tree))
  return CompiledGame(game=game, tree=tree, infostate_keys=tuple(keys),
                      public_keys=tuple(public_keys), aug=np.asarray(aug, np.int32).reshape(2, H),
                      aug_keys=tuple(tuple(k) for k in aug_keys),
                      fingerprint=_fingerprint(game, tree, keys),
                      enumeration_seconds=time.perf_counter() - t0, nbytes=nbytes)


def _fingerprint(game: Game, tree: GameTree, keys) -> str:
  h = hashlib.sha256()
  h.update(game.game_string().encode())
  for p in (0, 1):
    pt = tree.players[p]
    h.update(np.ascontiguousarray(pt.legal).tobytes())
    h.update(np.ascontiguousarray(pt.parent_seq).tobytes())
    h.update("\x00".join(keys[p]).encode())
  h.update(np.ascontiguousarray(tree.terminal_seq).tobytes())
  h.update(np.round(tree.terminal_payoff, 9).tobytes())
  return h.hexdigest()[:16]


_LOADED: collections.OrderedDict = collections.OrderedDict()  # (text, max_histories) -> game
_LOADED_MAX = 32


def load(text: str, max_histories: int = 5_000_000, *, progress=False):
  """Parses, builds and compiles a game string; returns a ``CompiledGame``.

  The 32 most recent games are cached by ``(text, max_histories)``;
  ``progress`` is :func:`compile_game`'s (it does not enter the cache key).
  """
  key = (text, max_histories)
  if key in _LOADED:
    _LOADED.move_to_end(key)
    return _LOADED[key]
  game = compile_game(make_from_string(text, max_histories), max_histories=max_histories,
                      progress=progress)
  _LOADED[key] = game
  while len(_LOADED) > _LOADED_MAX:
    _LOADED.popitem(last=False)
  return game
