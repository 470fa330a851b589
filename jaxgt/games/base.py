"""How to define a two-player zero-sum extensive-form game in plain Python.

A game subclasses :class:`Game`; its methods take an immutable *state* of the
game's choosing (a tuple is usual) and answer the compiler's questions.
``information_state`` is called for both players at every non-terminal
state; equal strings are one information state (OpenSpiel's strings for
games that mirror one, so policies export exactly). ``public_state`` must be
constant on every information state (:func:`jaxgt.games.check` verifies it).
Games are pure descriptions; compile one with :func:`jaxgt.compile_game`.
"""

from __future__ import annotations

import abc
import difflib
from typing import Any, Hashable, Mapping, Sequence

CHANCE = -1
"""``current_player`` of a chance node (OpenSpiel's ``kChancePlayerId``)."""
TERMINAL = -4
"""``current_player`` of a terminal history (OpenSpiel's ``kTerminalPlayerId``)."""
PROB_ATOL = 1e-6
"""The one tolerance on ``sum == 1`` of probability vectors (chance outcomes, ranges,
policies) and on ``u0 + u1 == 0`` of a game's returns; :mod:`jaxgt.core.checks` uses it."""


def did_you_mean(name: str, choices) -> str:
  """``" (did you mean 'x'?)"`` naming the choice closest to a misspelt ``name`` (``difflib``),
  or ``""`` when none is close."""
  close = difflib.get_close_matches(str(name), [str(c) for c in choices], n=1, cutoff=0.75)
  return f" (did you mean {close[0]!r}?)" if close else ""


class GameInfo:
  """What every game definition says of itself, whatever form its rules take.

  ``name`` is the registry name, ``params`` all parameters (defaults filled
  in; they name the game), ``num_actions`` the number of player action ids,
  ``big_blind`` chips in one big blind for mbb/h (``None``: no blinds),
  ``public_actions`` whether some player actions are seen by both players
  (without any, every history has the same sequence of public actions, so the
  game has no public subgame in the sense of Lisy, Lanctot, Bowling, "Online
  Monte Carlo Counterfactual Regret Minimization for Search in Imperfect
  Information Games", 2015, Sec. 4.2).
  A game that declares ``param_defaults`` gets its ``params`` filled and
  checked from them (:func:`check_params`); a ``players`` parameter must be 2.
  Rules come as Python methods (:class:`Game`) or as JAX functions
  (:class:`jaxgt.games.device.DeviceGame`).
  """

  name: str = "game"
  num_actions: int = 0
  big_blind: float | None = None
  public_actions: bool = True
  param_defaults: dict = {}

  def __init__(self, **params: Any):
    self.params: dict[str, Any] = (check_params(self.name, params, self.param_defaults)
                                   if self.param_defaults else dict(params))
    if self.params.get("players", 2) != 2:
      raise ValueError(f"{self.name}: jaxgt solves two-player games; players must be 2")

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


class Game(GameInfo, abc.ABC):
  """Rules as Python methods over host states, walked one state at a time.

  The form for user-written games and OpenSpiel imports; jaxgt's own games
  are :class:`~jaxgt.games.device.DeviceGame` s (their Python twins live in
  the tests as oracles).
  """

  @abc.abstractmethod
  def initial_state(self) -> Any:
    """The root state."""

  @abc.abstractmethod
  def current_player(self, state: Any) -> int:
    """``0``, ``1``, :data:`CHANCE` or :data:`TERMINAL`."""

  @abc.abstractmethod
  def legal_actions(self, state: Any) -> Sequence[int]:
    """Sorted action ids in ``[0, num_actions)``."""

  def chance_outcomes(self, state: Any) -> Sequence[tuple[int, float]]:
    """``[(outcome_id, probability), ...]`` at a chance node."""
    raise NotImplementedError(f"{self.name} has no chance nodes")

  @abc.abstractmethod
  def next_state(self, state: Any, action: int) -> Any:
    """The state after action/outcome ``action``."""

  @abc.abstractmethod
  def returns(self, state: Any) -> tuple[float, float]:
    """``(u0, u1)`` at a terminal, ``u0 + u1 == 0``."""

  @abc.abstractmethod
  def information_state(self, state: Any, player: int) -> str:
    """A string: everything ``player`` knows."""

  @abc.abstractmethod
  def public_state(self, state: Any) -> Hashable:
    """A hashable key: what *both* players observe."""


def _fmt(v: Any) -> str:
  if isinstance(v, bool):
    return "true" if v else "false"
  return str(v)


def check_params(name: str, given: Mapping[str, Any], spec: Mapping[str, Any]) -> dict:
  """Fills defaults from ``spec`` (name -> default, whose type is the parameter's; an int
  is accepted for a float) and rejects unknown names and wrong types."""
  unknown = sorted(set(given) - set(spec))
  if unknown:
    valid = ", ".join(f"{k}={_fmt(v)}" for k, v in spec.items()) or "none"
    hint = did_you_mean(unknown[0], spec) if len(unknown) == 1 else ""
    raise ValueError(
        f"game '{name}' has no parameter(s) {unknown}{hint}; valid parameters: {valid}")
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
