"""The interface shared by every online agent (search or re-solving).

A match position is a history index ``h`` of a compiled game's
:class:`~jaxgt.compiler.GameTree` at which the agent's player acts. The agent
may use only what its player knows there: its information state
(``tree.infostate[h]`` of the acting player), the public state and the public
history. It must not read hidden information (the opponent's private cards)
off ``h``; search algorithms sample the histories of the information state
from their own beliefs instead.

``act`` returns a probability vector over the ``A`` actions (zeros at illegal
actions) and the agent's new state, so agents that carry beliefs between
decisions of one match (continual re-solving) stay pure.
"""

from __future__ import annotations

import abc
import dataclasses
from typing import Any

import jax
import jax.numpy as jnp

from jaxgt.compiler import CompiledGame


class Agent(abc.ABC):
  """An online agent for one compiled game.

  Subclasses set ``game`` (a :class:`CompiledGame`) and ``player`` is given
  per call. ``budget`` (iterations, simulations or seconds, as the agent
  documents) is fixed at construction.
  """

  game: CompiledGame

  def init(self, key: jax.Array) -> Any:
    """State at the start of a match (default: none)."""
    del key
    return None

  @abc.abstractmethod
  def act(self, key: jax.Array, state: Any, history: int) -> tuple[jax.Array, Any]:
    """Policy ``[A]`` at the acting player's information state of ``history``."""


@dataclasses.dataclass
class PolicyAgent(Agent):
  """Plays a fixed tabular policy ``(sigma0 [I0, A], sigma1 [I1, A])``."""

  game: CompiledGame
  policy: tuple

  def act(self, key, state, history):
    tree = self.game.tree
    p = int(tree.player[history])
    if p not in (0, 1):
      raise ValueError(f"history {history} is not a decision node (player {p})")
    return jnp.asarray(self.policy[p][int(tree.infostate[history])]), state
