"""Logs of played games: JSON Lines, one episode per line (the contract).

Each line is ``{"game": GAME, "history": [a0, a1, ...], "returns": [r0, r1]}``:
GAME is a string :func:`jaxgt.load` accepts, ``history`` every action id from
the root in OpenSpiel's numbering (chance outcomes included) and ``null`` a
chance outcome the logging side did not observe. Anyone with OpenSpiel can
write one; ``jaxgt match --log`` writes one from jaxgt's match runner and
``jaxgt evaluate`` reads it.

Optional field ``"seats": [s0, s1]``: the player (seat) that agent 0 and agent 1
of a match played in this episode (``jaxgt match --log`` writes it; agent 0 is
AGENT0 of the command and plays player 1 in every odd-numbered line). With two
players the map agent -> seat is its own inverse, so ``seats[p]`` is also the
agent that sat as player ``p``. Readers accept lines without it (logs written
by anyone with OpenSpiel); ``jaxgt evaluate --agent K`` needs it.

Optional field ``"agents": [spec0, spec1]``: the agent spec (:mod:`jaxgt.agents.specs`) of
agent 0 and agent 1, e.g. ``"policy(path=p.npz)"`` (``jaxgt match --log`` writes it), so a
reader can tell which policy played each seat; ``jaxgt evaluate`` refuses a ``--policy``
that is not the logged agent's. Readers accept lines without it (older logs).
"""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Iterable, Optional, Sequence


@dataclasses.dataclass(frozen=True)
class Episode:
  """One logged episode: ``history`` (``None`` = unobserved chance outcome), ``returns`` (r0, r1).

  ``line`` is its line number in the file it was read from (0: not read from a
  file); it does not take part in comparisons. ``seats``: the optional field,
  ``(seat of agent 0, seat of agent 1)`` (``None``: the line has none); ``agents``: the
  optional field, ``(spec of agent 0, spec of agent 1)`` (``None``: the line has none).
  """
  game: str
  history: tuple[Optional[int], ...]
  returns: tuple[float, float]
  line: int = dataclasses.field(default=0, compare=False)
  seats: Optional[tuple[int, int]] = None
  agents: Optional[tuple[str, str]] = None


SEAT_ORDERS = ((0, 1), (1, 0))
"""The values a ``"seats"`` field may take (two players)."""


def write_episodes(path, game: str, histories: Iterable[Sequence[Optional[int]]],
                   returns: Iterable[Sequence[float]],
                   seats: Optional[Iterable[Sequence[int]]] = None,
                   agents: Optional[Sequence[str]] = None) -> int:
  """Writes one line per (history, returns) pair to ``path``; returns the number of lines.

  ``seats``: per line ``(seat of agent 0, seat of agent 1)``, written as the
  optional ``"seats"`` field (``None``: no such field). ``agents``: the two agents'
  specs, written on every line as the optional ``"agents"`` field.
  """
  if agents is not None:
    agents = _check_agents(agents, "agents")
  n = 0
  histories, returns = list(histories), list(returns)
  seats = [None] * len(histories) if seats is None else list(seats)
  with open(path, "w") as f:
    for history, ret, seat in zip(histories, returns, seats, strict=True):
      record = {"game": game,
                "history": [None if a is None else int(a) for a in history],
                "returns": [float(ret[0]), float(ret[1])]}
      if seat is not None:
        seat = tuple(int(x) for x in seat)
        if seat not in SEAT_ORDERS:
          raise ValueError(f"seats must be (0, 1) or (1, 0), got {seat}")
        record["seats"] = list(seat)
      if agents is not None:
        record["agents"] = list(agents)
      f.write(json.dumps(record) + "\n")
      n += 1
  return n


def _check_agents(agents, where: str) -> tuple[str, str]:
  """``agents`` as a pair of non-empty spec strings; ``ValueError`` naming ``where`` else."""
  if (not isinstance(agents, (list, tuple)) or len(agents) != 2
      or not all(isinstance(a, str) and a.strip() for a in agents)):
    raise ValueError(f"{where}: 'agents' (the spec of each agent) must be two non-empty "
                     f"strings, got {agents!r}")
  return tuple(agents)


def _episode(line: str, lineno: int, path) -> Episode:
  where = f"{path}:{lineno}"
  try:
    record = json.loads(line)
  except json.JSONDecodeError as e:
    raise ValueError(f"{where}: not a JSON object ({e.msg}); is the line truncated?") from None
  if not isinstance(record, dict):
    raise ValueError(f"{where}: expected a JSON object, got {type(record).__name__}")
  missing = {"game", "history", "returns"} - set(record)
  if missing:
    raise ValueError(f"{where}: missing field(s) {sorted(missing)}")
  game, history, ret = record["game"], record["history"], record["returns"]
  if not isinstance(game, str) or not game:
    raise ValueError(f"{where}: 'game' must be a non-empty string, got {game!r}")
  if not isinstance(history, list) or not all(
      a is None or (isinstance(a, int) and not isinstance(a, bool) and a >= 0) for a in history):
    raise ValueError(f"{where}: 'history' must be a list of action ids (>= 0) or null, got {history!r}")
  if (not isinstance(ret, list) or len(ret) != 2
      or not all(isinstance(r, (int, float)) and not isinstance(r, bool) and math.isfinite(r) for r in ret)):
    raise ValueError(f"{where}: 'returns' must be two finite numbers, got {ret!r}")
  seats = record.get("seats")
  if seats is not None:
    if not isinstance(seats, list) or tuple(seats) not in SEAT_ORDERS or not all(
        type(x) is int for x in seats):
      raise ValueError(f"{where}: 'seats' (the player each agent played) must be [0, 1] or "
                       f"[1, 0], got {seats!r}")
    seats = tuple(seats)
  agents = record.get("agents")
  if agents is not None:
    agents = _check_agents(agents, where)
  return Episode(game, tuple(history), (float(ret[0]), float(ret[1])), lineno, seats, agents)


def read_episodes(path) -> list[Episode]:
  """Parses a log; malformed lines and mixed games are errors naming the line number.

  Blank lines are skipped. Whether each history is legal in its game is checked
  by the consumer, which holds the compiled game.
  """
  episodes: list[Episode] = []
  try:
    f = open(path)
  except OSError as e:
    raise ValueError(f"cannot read log {path}: {e.strerror}") from None
  with f:
    for lineno, line in enumerate(f, start=1):
      if not line.strip():
        continue
      ep = _episode(line, lineno, path)
      if episodes and ep.game != episodes[0].game:
        raise ValueError(f"{path}:{lineno}: game {ep.game!r} differs from the log's first game "
                         f"{episodes[0].game!r}")
      episodes.append(ep)
  if not episodes:
    raise ValueError(f"log {path} holds no episodes")
  return episodes
