"""Known quotient maps: a game, its quotient by a symmetry, and the map from the full game's
information states to the quotient's.

A policy of the quotient, played at every information state of the full game through the map
(:func:`jaxgt.policy.lift`), is a policy of the full game with the same exploitability. A game
with a quotient registers it here with :func:`register_quotient`; :func:`quotient_map` finds the
map of a pair of game strings, and :func:`quotients` lists them all.
"""

from __future__ import annotations

import dataclasses
from typing import Callable


@dataclasses.dataclass(frozen=True)
class QuotientMap:
  """The quotient ``source`` of game ``target`` (both canonical game strings) and ``key_map``,
  which takes an information-state string of ``target`` to the one of ``source`` that stands
  for it."""

  source: str
  target: str
  key_map: Callable[[str], str]
  description: str


_QUOTIENTS: dict[tuple[str, str], QuotientMap] = {}


def canonical_game_string(text: str) -> str:
  """The game string of ``text`` with default parameters left out (``leduc_poker(players=2)``
  -> ``leduc_poker``); an ``openspiel:`` string as given. ``ValueError`` for an unknown game or
  parameter; nothing is enumerated."""
  text = text.strip()
  if text.startswith("openspiel:"):
    return text
  from jaxgt.games import make, parse_game_string
  name, params = parse_game_string(text)
  return make(name, **params).game_string()


def register_quotient(source: str, target: str, key_map: Callable[[str], str],
                      description: str) -> None:
  """Records that ``source`` (a game string) is the quotient of ``target`` under ``key_map``."""
  q = QuotientMap(canonical_game_string(source), canonical_game_string(target), key_map,
                  description)
  _QUOTIENTS[(q.source, q.target)] = q


def quotients() -> list[QuotientMap]:
  """Every registered quotient map."""
  return list(_QUOTIENTS.values())


def quotient_map(source: str, target: str) -> QuotientMap:
  """The registered map that lifts policies of game ``source`` to game ``target`` (game
  strings); ``ValueError`` naming the known pairs where there is none."""
  key = (canonical_game_string(source), canonical_game_string(target))
  q = _QUOTIENTS.get(key)
  if q is None:
    known = "; ".join(f"{k.source} -> {k.target}" for k in _QUOTIENTS.values()) or "none"
    raise ValueError(f"no known map lifts a policy of {key[0]} to {key[1]}; known quotient "
                     f"maps (quotient -> game): {known}")
  return q
