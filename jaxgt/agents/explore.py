"""Exploration as an agent wrapper: ``Explore(agent, epsilon, greedy_after)`` plays the
wrapped agent's policy mixed with the uniform policy over the legal actions,
``(1 - epsilon) pi + epsilon uniform``, and ``pi``'s argmax from its ``greedy_after``-th
decision of a match on (the actors' move rule of Schmid et al., "Student of Games: A
unified learning algorithm for both perfect and imperfect information games", 2023,
Algorithm 2). Self-play (:mod:`jaxgt.training.selfplay`) draws its moves with
:meth:`Explore.mix`, the rule :meth:`Explore.act` applies.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp

from jaxgt import struct
from jaxgt.agents.base import Agent
from jaxgt.core.checks import check_nonnegative_int, check_real
from jaxgt.core.sampling import mix_uniform


@struct.dataclass
class ExploreState:
  """The wrapped agent's state and the wrapper's decision count."""

  inner: Any  # the wrapped agent's state
  moves: Any  # [] int32 decisions this agent made in the match so far


@dataclasses.dataclass(frozen=True, eq=False)
class Explore(Agent):
  """``agent`` with epsilon-uniform exploration, greedy from decision ``greedy_after`` on
  (``None``: never greedy). Traceable when ``agent`` is."""

  agent: Agent
  epsilon: float
  greedy_after: int | None = None

  def __post_init__(self):
    if not isinstance(self.agent, Agent):
      raise ValueError(f"agent must be a jaxgt Agent, got {type(self.agent).__name__}")
    check_real("epsilon", self.epsilon, 0.0, 1.0)
    if self.greedy_after is not None:
      check_nonnegative_int("greedy_after", self.greedy_after)

  @property
  def game(self):
    return self.agent.game

  def mix(self, probs, legal, moves):
    """The move probabilities ``[A]`` for the policy ``probs [A]`` with legal mask
    ``legal [A]`` at the agent's decision number ``moves`` (0 first) of a match."""
    explore = mix_uniform(probs, legal, self.epsilon)
    if self.greedy_after is None:
      return explore
    greedy = jax.nn.one_hot(jnp.argmax(jnp.where(legal, probs, -1.0)), probs.shape[-1],
                            dtype=probs.dtype)
    return jnp.where(moves < self.greedy_after, explore, greedy)

  def init(self, key):
    return ExploreState(inner=self.agent.init(key), moves=jnp.zeros((), jnp.int32))

  def act(self, key, state, history):
    probs, inner = self.agent.act(key, state.inner, history)
    probs = jnp.asarray(probs)
    tree = self.game.tree
    legal = jnp.asarray(tree.children)[history, :tree.num_actions] >= 0
    return self.mix(probs, legal, state.moves), ExploreState(inner=inner, moves=state.moves + 1)

  def statistics(self, state, player):
    """The wrapped agent's statistics (exploration does not change what it accumulated)."""
    return self.agent.statistics(state.inner, player)
