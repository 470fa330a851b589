"""The interface shared by every online agent (search or re-solving).

A match position is a state of the game's rules (:mod:`jaxgt.games.device`) at
which the agent's player acts; for a compiled game it is a history index ``h``
of its :class:`~jaxgt.core.game_tree.GameTree` (the state of
:meth:`~jaxgt.core.game_tree.CompiledGame.rules`). The agent
may use only what its player knows there: its information state
(``tree.infostate[h]`` of the acting player), the public state and the public
history. It must not read hidden information (the opponent's private cards)
off ``h``; search algorithms sample the histories of the information state
from their own beliefs instead.

``act`` returns a probability vector over the ``A`` actions (zeros at illegal
actions) and the agent's new state, so agents that carry beliefs between
decisions of one match (continual re-solving) stay pure.

**Traceable agents.** :func:`jaxgt.evaluation.match.play` runs many matches
as one jitted program (:mod:`jaxgt.evaluation.referee`): ``act`` is vmapped
over the matches waiting on the agent, and only ever called at the agent's
own decisions. For that, ``init`` and ``act`` must be
traceable JAX functions: ``history`` arrives as a traced ``int32`` scalar (no
``int(history)``, no Python branching on it), the key is a traced key, and
the state is a pytree of arrays whose shapes and dtypes do not depend on the
history (the same structure before and after every ``act``; ``None`` is
fine). Agents that cannot meet this still play, through a slower Python loop. A dataclass
agent may name fields in a class attribute ``array_fields`` (:class:`PolicyAgent`'s and
:class:`DevicePolicyAgent`'s ``policy``): when such a field is a pytree of arrays, the jitted
program takes it as an argument (rebuilding the agent with :func:`dataclasses.replace`)
instead of compiling it in as a constant.
"""

from __future__ import annotations

import abc
import dataclasses
from typing import Any

import jax
import jax.numpy as jnp

from jaxgt.core.checks import check_decision_history
from jaxgt.core.game_tree import CompiledGame
from jaxgt.core.tables import acting_row
from jaxgt.core.tree_rules import rules_of


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
  def act(self, key: jax.Array, state: Any, history) -> tuple[jax.Array, Any]:
    """Policy ``[A]`` at the acting player's information state of ``history``."""

  def statistics(self, state: Any, player: int) -> jax.Array | None:
    """Optional: ``player``'s accumulated strategy weights ``[I_player, A]`` in ``state``.

    Unnormalised (e.g. visit counts for MCTS, average-strategy sums for
    CFR-based search) over all of that player's information states, read after an
    ``act`` as ``player`` (a static Python int); used by the aggregate
    evaluation method (:mod:`jaxgt.evaluation.aggregate`). ``None``: not
    supported.
    """
    del state, player
    return None


@dataclasses.dataclass
class PolicyAgent(Agent):
  """Plays a fixed tabular policy ``(sigma0 [I0, A], sigma1 [I1, A])`` (traceable)."""

  game: CompiledGame
  policy: tuple

  array_fields = ("policy",)  # the traced match program takes the tables as an argument

  def act(self, key, state, history):
    del key
    check_decision_history(self.game.tree, history)
    return acting_row(self.game.tree, self.policy, history), state

  def statistics(self, state, player):
    """``player``'s whole policy table (aggregating it gives back the policy)."""
    del state
    return jnp.asarray(self.policy[player])


@dataclasses.dataclass
class RandomAgent(Agent):
  """Uniform over the legal actions, read from the game's rules (traceable): plays any device
  game (:mod:`jaxgt.games.device`), enumerable or not, and compiled games through
  :meth:`~jaxgt.core.game_tree.CompiledGame.rules`."""

  game: Any  # a DeviceGame or a CompiledGame

  def act(self, key, state, position):
    del key
    legal = rules_of(self.game).legal_mask(position).astype(jnp.float32)
    return legal / jnp.sum(legal), state


@dataclasses.dataclass
class DevicePolicyAgent(Agent):
  """Plays a device policy (:mod:`jaxgt.evaluation.device_policy`: ``policy(states, player) ->
  [B, A]``) of a device game (traceable): a trained network, a search's exported table, a
  scripted baseline."""

  game: Any  # a DeviceGame
  policy: Any  # policy(states, player) -> [B, A]

  array_fields = ("policy",)  # a pytree of arrays (a table) is an argument of the match program

  def act(self, key, state, position):
    del key
    one = jax.tree_util.tree_map(lambda x: jnp.asarray(x)[None], position)
    player = self.game.current_player(position)
    probs = jnp.where(player == 1, self.policy(one, 1)[0], self.policy(one, 0)[0])
    legal = self.game.legal_mask(position)
    probs = jnp.where(legal & jnp.isfinite(probs) & (probs > 0), probs, 0.0)
    return probs, state
