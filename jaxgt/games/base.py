"""How to define a two-player zero-sum extensive-form game in plain Python.

A game is a subclass of :class:`Game` whose methods take an immutable,
hashable-or-not *state* object of the game's own choosing (a tuple is usual)
and answer the questions the compiler asks while it enumerates the tree once:

=====================================  ========================================
method                                  returns
=====================================  ========================================
``initial_state()``                     the root state
``current_player(s)``                   ``0``, ``1``, :data:`CHANCE` or :data:`TERMINAL`
``legal_actions(s)``                    sorted action ids in ``[0, num_actions)``
``chance_outcomes(s)``                  ``[(outcome_id, probability), ...]``
``next_state(s, a)``                    the state after action/outcome ``a``
``returns(s)``                          ``(u0, u1)`` at a terminal, ``u0 + u1 == 0``
``information_state(s, player)``        a string: everything ``player`` knows
``public_state(s)``                     a hashable key: what *both* players observe
=====================================  ========================================

``information_state`` is called for the acting player at decision nodes (and
for either player at any non-terminal state by the public-tree layer). Two
histories share an information state iff the strings are equal; for games
that mirror an OpenSpiel game the string equals OpenSpiel's
``information_state_string`` so policies export exactly. ``public_state``
must be constant on every information state (the conformance check verifies
it) and must be a refinement-compatible description of the public
observation sequence.

Games are pure descriptions: no randomness, no mutable state. Compile one
with :func:`jaxgt.compile_game`.
"""

from __future__ import annotations

import abc
from typing import Any, Hashable, Mapping, Sequence

CHANCE = -1
"""``current_player`` of a chance node (OpenSpiel's ``kChancePlayerId``)."""
TERMINAL = -4
"""``current_player`` of a terminal history (OpenSpiel's ``kTerminalPlayerId``)."""


class Game(abc.ABC):
  """A two-player zero-sum extensive-form game with chance (see module doc).

  Attributes:
    name: registry name, e.g. ``"leduc_poker"``.
    params: the parameters the game was made with (all of them, defaults
      filled in), used for the game string and the policy fingerprint.
    num_actions: number of distinct player action ids.
    big_blind: chips in one big blind, for mbb/h; ``None`` if the game has
      no blind structure.
  """

  name: str = "game"
  num_actions: int = 0
  big_blind: float | None = None
  param_defaults: dict = {}

  def __init__(self, **params: Any):
    self.params: dict[str, Any] = dict(params)

  # --- rules -------------------------------------------------------------
  @abc.abstractmethod
  def initial_state(self) -> Any:
    ...

  @abc.abstractmethod
  def current_player(self, state: Any) -> int:
    ...

  @abc.abstractmethod
  def legal_actions(self, state: Any) -> Sequence[int]:
    ...

  def chance_outcomes(self, state: Any) -> Sequence[tuple[int, float]]:
    raise NotImplementedError(f"{self.name} has no chance nodes")

  @abc.abstractmethod
  def next_state(self, state: Any, action: int) -> Any:
    ...

  @abc.abstractmethod
  def returns(self, state: Any) -> tuple[float, float]:
    ...

  @abc.abstractmethod
  def information_state(self, state: Any, player: int) -> str:
    ...

  @abc.abstractmethod
  def public_state(self, state: Any) -> Hashable:
    ...

  # --- presentation --------------------------------------------------------
  def action_string(self, action: int) -> str:
    return str(action)

  def game_string(self) -> str:
    """``name(k=v,...)`` in OpenSpiel's syntax (defaults left out); ``jaxgt.load`` parses it."""
    shown = {k: v for k, v in self.params.items()
             if k not in self.param_defaults or self.param_defaults[k] != v}
    if not shown:
      return self.name
    inner = ",".join(f"{k}={_fmt(v)}" for k, v in sorted(shown.items()))
    return f"{self.name}({inner})"

  def openspiel_game_string(self) -> str | None:
    """A string ``pyspiel.load_game`` accepts for the same game, or ``None``."""
    return None

  def __repr__(self) -> str:
    return f"<jaxgt game {self.game_string()}>"


def _fmt(v: Any) -> str:
  if isinstance(v, bool):
    return "true" if v else "false"
  return str(v)


def check_params(name: str, given: Mapping[str, Any], spec: Mapping[str, Any]) -> dict:
  """Fills defaults from ``spec`` and rejects unknown names / wrong types.

  ``spec`` maps parameter name to its default; the default's type is the
  parameter's type (``int`` also accepts integral floats is *not* done: a
  wrong type is an error).
  """
  unknown = sorted(set(given) - set(spec))
  if unknown:
    valid = ", ".join(f"{k}={_fmt(v)}" for k, v in spec.items()) or "none"
    raise ValueError(
        f"game '{name}' has no parameter(s) {unknown}; valid parameters: {valid}")
  out = dict(spec)
  for k, v in given.items():
    want = type(spec[k])
    if want is float and isinstance(v, int) and not isinstance(v, bool):
      v = float(v)
    if want is int and isinstance(v, bool) or not isinstance(v, want):
      raise ValueError(
          f"game '{name}': parameter {k}={v!r} must be of type {want.__name__}")
    out[k] = v
  return out
