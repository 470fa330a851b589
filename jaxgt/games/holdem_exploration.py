"""Heinrich and Silver's UCT exploration schedule for heads-up limit hold'em.

Heinrich and Silver, "Smooth UCT Search in Computer Poker" (IJCAI 2015), Eq. 3,
set the exploration constant of UCT at a state from the pot and the betting
that can still come: ``c = min(C, pot + k * remaining_potential)``, in big blinds,
updated once per betting round. :func:`pot` and :func:`remaining_potential` are
those two amounts of a :class:`~jaxgt.games.holdem.HoldemState`,
:func:`round_start` the same betting at its round's start, and
:func:`exploration_constant` the schedule (pure device functions: they jit and
vmap over batches of states).
"""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np

from jaxgt.games.base import CHANCE, TERMINAL
from jaxgt.games.holdem import BLINDS, MAX_RAISES, RAISE, ROUNDS, HoldemState, LimitHoldem

_CAP = tuple(m * r for m, r in zip(MAX_RAISES, RAISE))  # chips one player adds at most per round
_LATER = tuple(2 * sum(_CAP[r + 1:]) for r in range(ROUNDS))  # both players, the later rounds
MAX_POT = 2 * (BLINDS[0] + sum(_CAP))  # 480 chips = 48 big blinds
"""The largest pot of heads-up limit hold'em in chips (both players capped every round)."""


def pot(state: HoldemState):
  """int32 ``[]``: the chips in the pot (both players' contributions, blinds included)."""
  return jnp.sum(state.spent).astype(jnp.int32)


def remaining_potential(state: HoldemState):
  """int32 ``[]``: the most chips both players together can still add to the pot in the rest
  of the episode: each player raised to the current round's cap (the round's bet plus its
  raises left), then every later round capped; 0 at a terminal state. At any live state
  ``pot + remaining_potential`` is :data:`MAX_POT` less the raises the finished rounds left
  unused."""
  r = state.round
  left = jnp.array(MAX_RAISES, jnp.int32)[r] - state.raises
  top = jnp.max(state.spent) + left * jnp.array(RAISE, jnp.int32)[r]
  now = jnp.sum(top - state.spent)
  out = now + jnp.array(_LATER, jnp.int32)[r]
  return jnp.where(state.player == TERMINAL, 0, out).astype(jnp.int32)


def round_start(state: HoldemState) -> HoldemState:
  """The same betting at the start of ``state``'s round (before its first bet): the blinds
  preflop, else both players level at what the round began with."""
  r = state.round
  level = jnp.max(state.spent) - state.raises * jnp.array(RAISE, jnp.int32)[r]
  spent = jnp.where(r == 0, jnp.array(BLINDS, jnp.int32), jnp.stack([level, level]))
  return state.replace(spent=spent.astype(jnp.int32), raises=jnp.zeros_like(state.raises),
                       num_acts=jnp.zeros_like(state.num_acts),
                       player=jnp.where(state.player == TERMINAL, CHANCE, state.player)
                       .astype(jnp.int32))


def exploration_constant(state: HoldemState, C: float = 24.0, k: float = 0.5, *,
                         at_round_start: bool = True, in_chips: bool = False):
  """float ``[]``: Heinrich and Silver's (2015) UCT exploration constant for hold'em, their
  Eq. 3, ``c = min(C, pot + k * remaining_potential)``, in big blinds (the paper's unit: in
  heads-up limit hold'em the small bet is the big blind, 10 chips here, and its ``C = 24`` is
  half the largest pot, 48 big blinds = 480 chips; this gives ``c`` in ``[10, 24]`` at the
  rounds' starts, as the paper says). ``at_round_start``: the pot and potential at the start
  of the state's betting round (:func:`round_start`), as the paper updates ``c`` once a
  round; else at the state itself. ``in_chips``: times the big blind (for values in chips,
  as :class:`~jaxgt.games.holdem.LimitHoldem`'s returns are). ``C`` and ``k`` may be arrays
  (traced under jit)."""
  for name, v in (("C", C), ("k", k)):  # concrete numbers checked; arrays (traced) pass
    if isinstance(v, bool) or isinstance(v, (int, float, np.integer, np.floating)) and \
       not (math.isfinite(v) and v >= 0):
      raise ValueError(f"{name} must be a non-negative finite number, got {v!r}")
  s = round_start(state) if at_round_start else state
  bb = LimitHoldem.big_blind
  f = jnp.zeros(()).dtype
  c = jnp.minimum(C, (pot(s).astype(f) + k * remaining_potential(s).astype(f)) / bb)
  return (c * bb if in_chips else c).astype(f)

