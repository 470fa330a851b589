"""Game definitions, the registry and name parsing (this package imports nothing else of jaxgt).

``make(name, **params)`` builds a :class:`Game` definition; ``make_from_string``
parses a game string in OpenSpiel's syntax (``"openspiel:<game string>"``
imports a pyspiel game); ``check(game)`` runs the conformance checks (a Python game
enumerated, a device game on sampled trajectories:
:func:`jaxgt.games.rules_check.check_rules`); ``quotient_map(source, target)`` is the registered
map that lifts a quotient game's policies to the full game (:func:`jaxgt.policy.lift`).
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any, Callable

from jaxgt.games.base import CHANCE, TERMINAL, Game, check_params, did_you_mean
from jaxgt.games.conformance import check
from jaxgt.games.generic_poker import GenericPoker
from jaxgt.games.goofspiel import Goofspiel, IIGoofspiel
from jaxgt.games.holdem import LimitHoldem
from jaxgt.games.kuhn import KuhnPoker
from jaxgt.games.leduc import LeducPoker, suit_isomorphic_key
from jaxgt.games.liars_dice import LiarsDice
from jaxgt.games.nonlocality import NonLocality
from jaxgt.games.openspiel_import import from_openspiel
from jaxgt.games.rps_plus import RockPaperScissorsPlus
from jaxgt.games.scotland_yard import ScotlandYard

__all__ = ["CHANCE", "TERMINAL", "Game", "GameSpec", "make", "load", "registry",
           "register", "parse_game_string", "make_from_string", "check_params", "check",
           "from_openspiel", "QuotientMap", "canonical_game_string", "quotient_map", "quotients",
           "register_quotient"]


@dataclasses.dataclass(frozen=True)
class GameSpec:
  name: str
  factory: Callable[..., Game]
  params: dict
  description: str


_REGISTRY: dict[str, GameSpec] = {}


def register(factory: type[Game], description: str):
  """Adds a game class to the registry under its ``name``, with its ``param_defaults``
  (parameter name to default)."""
  _REGISTRY[factory.name] = GameSpec(factory.name, factory, dict(factory.param_defaults),
                                     description)


def registry() -> dict[str, GameSpec]:
  """All registered games by name."""
  return dict(_REGISTRY)


def make(name: str, **params: Any) -> Game:
  """Builds the definition of registered game ``name`` (``ValueError`` naming the valid games
  or parameters for an unknown name or parameter)."""
  spec = _REGISTRY.get(name)
  if spec is None:
    raise ValueError(f"unknown game {name!r}{did_you_mean(name, _REGISTRY)}; registered games: "
                     f"{', '.join(sorted(_REGISTRY))}")
  return spec.factory(**params)


_NAME_RE = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?:\((.*)\))?\s*$", re.S)


def _parse_value(v: str):
  v = v.strip()
  if v.lower() in ("true", "false"):
    return v.lower() == "true"
  for cast in (int, float):
    try:
      return cast(v)
    except ValueError:
      pass
  return v


def parse_game_string(text: str) -> tuple[str, dict]:
  """``"liars_dice(numdice=1)"`` -> ``("liars_dice", {"numdice": 1})``."""
  m = _NAME_RE.match(text)
  if not m:
    raise ValueError(f"cannot parse game string {text!r}; expected name or name(k=v,...)")
  name, inner = m.group(1), m.group(2)
  params = {}
  if inner and inner.strip():
    for part in inner.split(","):
      if "=" not in part:
        raise ValueError(f"cannot parse parameter {part!r} in {text!r}; expected k=v")
      k, v = part.split("=", 1)
      params[k.strip()] = _parse_value(v)
  return name, params


def make_from_string(text: str, max_histories: int = 5_000_000) -> Game:
  """A game definition from a game string; ``openspiel:<string>`` imports a pyspiel game."""
  if text.strip().startswith("openspiel:"):
    return from_openspiel(text.strip(), max_histories=max_histories)
  name, params = parse_game_string(text)
  return make(name, **params)


@dataclasses.dataclass(frozen=True)
class QuotientMap:
  """Game ``source`` is the quotient of game ``target`` by a symmetry (both canonical game
  strings); ``key_map`` takes an information-state string of ``target`` to the one of
  ``source`` that stands for it. A policy of ``source`` played through ``key_map``
  (:func:`jaxgt.policy.lift`) is a policy of ``target`` with the same exploitability."""

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
  name, params = parse_game_string(text)
  return make(name, **params).game_string()


def register_quotient(source: str, target: str, key_map: Callable[[str], str],
                      description: str) -> None:
  """Records that game ``source`` is the quotient of game ``target`` (game strings) under
  ``key_map``, for :func:`quotient_map` and ``jaxgt lift``."""
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


register(KuhnPoker, "Kuhn poker (OpenSpiel rules): 3 cards, one betting round")
register(LeducPoker, "Leduc hold'em (OpenSpiel rules): 6 cards, two betting rounds")
register(RockPaperScissorsPlus, "Rock-Paper-Scissors+ played sequentially, P2 unaware of P1's move")
register(NonLocality, "the non-locality game of Lisy et al. 2015, Figure 1")
register(LiarsDice,
         "Liar's Dice LD(D1,D2) of Lisy et al. 2015 (OpenSpiel liars_dice for equal counts)")
register(Goofspiel,
         "II-Goofspiel II-GS(N) of Lisy et al. 2015, turn-based bids, either point order")
register(IIGoofspiel,
         "II-GS(N) with the paper's point cards 0..N-1 (goofspiel(points_base=0)); N=6 default")
register(GenericPoker, "Generic Poker GP(T,C,R,B) of Lisy et al. 2015 (Leduc is GP(3,2,1,1))")
register(ScotlandYard,
         "Scotland Yard on the glasses map of Schmid et al. 2023 (jaxgt reconstruction)")
register(LimitHoldem,
         "heads-up Limit Texas Hold'em (OpenSpiel universal_poker, ACPC limit rules)")

register_quotient("leduc_poker(suit_isomorphism=true)", "leduc_poker", suit_isomorphic_key,
                  "Leduc's suit isomorphism: cards replaced by their ranks")
