"""Exact evaluation of a tabular policy: the one place exploitability is computed.

:func:`policy_evaluation` is traceable; :func:`evaluate` is the host entry point.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

from jaxgt import struct
from jaxgt.core import sequence_form
from jaxgt.core.game_tree import CompiledGame, GameTree
from jaxgt.core.dtypes import default_dtype


@struct.dataclass
class PolicyEvaluation:
  """Exact evaluation of a policy profile (fields are ``[]`` arrays, ``[B]`` under vmap)."""

  value: jax.Array  # player 0's expected utility when both players follow the policy
  best_response: jax.Array  # [2] each player's best-response value against the other
  nash_conv: jax.Array  # best_response[0] + best_response[1] (zero at a Nash equilibrium)
  exploitability: jax.Array  # nash_conv / 2 (OpenSpiel's convention)


def policy_evaluation(tree: GameTree, policy, weights=None) -> PolicyEvaluation:
  """Value, best responses, NashConv and exploitability of ``policy`` under root belief
  ``weights [T]`` (default: chance reach); traceable."""
  br = jnp.stack([sequence_form.best_response_value(tree, policy, p, weights) for p in (0, 1)])
  nash_conv = br[0] + br[1]
  return PolicyEvaluation(value=sequence_form.expected_value(tree, policy, weights),
                          best_response=br, nash_conv=nash_conv,
                          exploitability=0.5 * nash_conv)


policy_evaluation_jit = jax.jit(policy_evaluation)
""":func:`policy_evaluation` jitted (host callers: :func:`evaluate`, :func:`jaxgt.solving.solve`)."""


@dataclasses.dataclass(frozen=True)
class Evaluation:
  """Host result of :func:`evaluate` (Python floats, game units)."""

  value: float
  best_response: tuple
  nash_conv: float
  exploitability: float


def evaluate(game: CompiledGame, policy, *, weights=None, dtype=None) -> Evaluation:
  """Exact evaluation of ``policy`` (``([I0, A], [I1, A])`` or a :class:`~jaxgt.policy.Policy`)
  in ``game``, in float64 when 64-bit JAX is enabled (else float32) unless ``dtype``."""
  if not isinstance(game, CompiledGame):
    raise ValueError(f"evaluate needs a CompiledGame (jaxgt.load(...)), got {type(game).__name__}")
  if hasattr(policy, "check_game"):  # a saved Policy knows its game
    policy.check_game(game)
  probs = getattr(policy, "probs", policy)
  dtype = default_dtype() if dtype is None else dtype
  tree = game.device_tree(dtype)
  probs = tuple(jnp.asarray(p, tree.terminal_payoff.dtype) for p in probs) \
      if isinstance(probs, (tuple, list)) else probs
  sequence_form.check_policy(tree, probs)
  if weights is not None:
    sequence_form.check_weights(tree, weights)
    weights = jnp.asarray(weights, tree.terminal_payoff.dtype)
  out = policy_evaluation_jit(tree, probs, weights)
  return Evaluation(value=float(out.value),
                    best_response=tuple(float(v) for v in out.best_response),
                    nash_conv=float(out.nash_conv), exploitability=float(out.exploitability))
